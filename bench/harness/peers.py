"""Peer stores for ``bench/search_scale.py --peers``: Chroma and LanceDB, built on
the very texts and vectors memchentic ingested, and timed query by query with it.

* **Chroma** (``chromadb``): a ``PersistentClient`` in the size's temporary
  directory (telemetry off), one collection in HNSW cosine space with Chroma's
  default graph settings, added in batches of the client's maximum batch size
  with the embeddings passed explicitly (``embedding_function=None``: Chroma's
  default embedding function, which downloads an ONNX model, is never built or
  called); queried vector-only with the query vector, ``n_results=10``
  (documents and distances returned).
* **LanceDB** (``lancedb``): one table (``id``, ``text``, ``vector``) in the same
  directory, an ``IVF_HNSW_SQ`` vector index in cosine distance and LanceDB's
  own (non-tantivy) full-text index on ``text``, both with their defaults;
  queried as a hybrid query (vector + full text, limit 10, LanceDB's built-in
  ``RRFReranker``, which runs offline) and, apart, vector-only (limit 10).

Benchmark code, not library code, and dev-only dependencies: this module is
imported only in ``--peers`` mode, and a peer that cannot be imported (or built)
is skipped with a line saying why.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

LIMIT = 10
PEER_NAMES = ("chroma", "lancedb")

#: A system under test: (query text, query vector) -> the row positions it
#: returned (for recall), or None when its recall is not reported.
Call = Callable[[str, np.ndarray], list[int] | None]


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class ChromaPeer:
    name = "chroma"

    def __init__(self, path: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        self.path = path
        self.version = chromadb.__version__
        self.client = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
        self.collection: Any = None

    def build(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, float]:
        t0 = time.perf_counter()
        self.collection = self.client.create_collection(
            "bench", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
        batch = self.client.get_max_batch_size()
        for start in range(0, len(texts), batch):
            stop = min(len(texts), start + batch)
            self.collection.add(
                ids=[str(i) for i in range(start, stop)],
                embeddings=vectors[start:stop],
                documents=list(texts[start:stop]),
            )
        add_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.collection.query(query_embeddings=[vectors[0]], n_results=LIMIT)
        return {"add_s": add_s, "first_query_s": time.perf_counter() - t0}

    def calls(self) -> dict[str, Call]:
        def vector(text: str, vec: np.ndarray) -> list[int]:
            got = self.collection.query(
                query_embeddings=[vec], n_results=LIMIT, include=["documents", "distances"]
            )
            return [int(i) for i in got["ids"][0]]

        return {"chroma vector": vector}

    def describe(self) -> dict[str, Any]:
        hnsw = dict(self.collection.configuration.get("hnsw") or {})
        return {"version": self.version, "index": "HNSW", "hnsw": hnsw, "query": "vector"}

    def close(self) -> None:
        self.collection = None


class LancePeer:
    name = "lancedb"

    def __init__(self, path: Path) -> None:
        os.environ.setdefault("LANCEDB_LOG", "error")  # else a deprecation warning per query
        import lancedb

        self.version = lancedb.__version__
        self.path = path
        self.db = lancedb.connect(str(path))
        self.table: Any = None
        self.index_type = "IVF_HNSW_SQ"

    def build(self, texts: Sequence[str], vectors: np.ndarray) -> dict[str, float]:
        import pyarrow as pa
        from lancedb.index import FTS, IvfHnswSq
        from lancedb.rerankers import RRFReranker

        n, dim = vectors.shape
        t0 = time.perf_counter()
        data = pa.table(
            {
                "id": pa.array(np.arange(n), pa.int64()),
                "text": pa.array(list(texts), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.ascontiguousarray(vectors, np.float32).reshape(-1)), dim
                ),
            }
        )
        self.table = self.db.create_table("bench", data=data)
        table_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.table.create_index("vector", config=IvfHnswSq(distance_type="cosine"))
        vector_index_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.table.create_index("text", config=FTS())
        fts_index_s = time.perf_counter() - t0
        self.reranker = RRFReranker()
        t0 = time.perf_counter()
        self._hybrid(texts[0], vectors[0])
        return {
            "table_s": table_s,
            "vector_index_s": vector_index_s,
            "fts_index_s": fts_index_s,
            "first_query_s": time.perf_counter() - t0,
        }

    def _hybrid(self, text: str, vec: np.ndarray) -> list[int]:
        got = (
            self.table.search(query_type="hybrid")
            .vector(vec)
            .text(text)
            .distance_type("cosine")
            .rerank(self.reranker)
            .select(["id", "text"])
            .limit(LIMIT)
            .to_arrow()
        )
        return got["id"].to_pylist()

    def calls(self) -> dict[str, Call]:
        def hybrid(text: str, vec: np.ndarray) -> None:
            self._hybrid(text, vec)
            return None  # a fused list: no vector recall

        def vector(text: str, vec: np.ndarray) -> list[int]:
            got = (
                self.table.search(vec, vector_column_name="vector")
                .distance_type("cosine")
                .select(["id", "text", "_distance"])
                .limit(LIMIT)
                .to_arrow()
            )
            return got["id"].to_pylist()

        return {"lancedb hybrid": hybrid, "lancedb vector": vector}

    def describe(self) -> dict[str, Any]:
        indices = {}
        for config in self.table.list_indices():
            indices[str(config.name)] = str(config.index_type)
        return {
            "version": self.version,
            "index": self.index_type,
            "indices": indices,
            "vector_index": "IvfHnswSq(distance_type='cosine'), defaults: m 20, "
            "ef_construction 300, partitions chosen by LanceDB; queries: default "
            "nprobes and ef (1.5 x limit)",
            "fts_index": "FTS() (native, not tantivy): simple tokenizer, English "
            "stemming and stopwords",
            "reranker": "RRFReranker (built in)",
            "query": "hybrid (vector + full text), and vector alone",
        }

    def close(self) -> None:
        self.table = None


FACTORIES: dict[str, Callable[[Path], Any]] = {"chroma": ChromaPeer, "lancedb": LancePeer}


def build_peers(
    workdir: Path, texts: Sequence[str], vectors: np.ndarray, names: Sequence[str] = PEER_NAMES
) -> tuple[list[Any], dict[str, dict[str, float]], list[str]]:
    """Open and build each peer in ``workdir/<name>``: (the peers, their build times
    in seconds, a line per peer skipped and why). Never raises for a peer."""
    peers, builds, skipped = [], {}, []
    for name in names:
        try:
            peer = FACTORIES[name](workdir / name)
        except ImportError as exc:
            skipped.append(f"{name}: skipped, not importable ({exc})")
            continue
        try:
            timings = peer.build(texts, vectors)
        except Exception as exc:  # a peer's failure is reported, not fatal
            skipped.append(f"{name}: skipped, build failed ({type(exc).__name__}: {exc})")
            continue
        timings["build_s"] = sum(timings.values())
        builds[name] = {k: round(v, 2) for k, v in timings.items()}
        builds[name]["disk_mb"] = round(_dir_bytes(workdir / name) / 2**20, 1)
        peers.append(peer)
    return peers, builds, skipped


def interleave(
    systems: dict[str, Call],
    warm: Sequence[tuple[str, np.ndarray]],
    timed: Sequence[tuple[str, np.ndarray]],
) -> dict[str, dict[str, list[Any]]]:
    """Time every system on every query, query by query: for query i the systems
    run in their order rotated by i, so none always goes first. The warm-up
    queries go through every system first, untimed. Per system: the wall-clock
    seconds, the process CPU seconds (all threads) and the rows returned."""
    names = list(systems)
    for text, vec in warm:
        for name in names:
            systems[name](text, vec)
    out: dict[str, dict[str, list[Any]]] = {n: {"wall": [], "cpu": [], "rows": []} for n in names}
    for i, (text, vec) in enumerate(timed):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            rows = systems[name](text, vec)
            wall = time.perf_counter() - t0
            out[name]["cpu"].append(time.process_time() - cpu0)
            out[name]["wall"].append(wall)
            out[name]["rows"].append(rows)
    return out


def summarise(
    runs: dict[str, dict[str, list[Any]]], exact_top: Sequence[set[int]], reference: str
) -> dict[str, dict[str, Any]]:
    """p50 / p95 (ms), mean CPU (ms), the p95 ratio to ``reference`` and, for the
    systems that return their rows, recall@10 against the exact top 10."""
    ms = lambda xs, q: float(np.percentile(np.asarray(xs) * 1000.0, q))  # noqa: E731
    ref_p95 = ms(runs[reference]["wall"], 95)
    out: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        row: dict[str, Any] = {
            "p50_ms": round(ms(run["wall"], 50), 2),
            "p95_ms": round(ms(run["wall"], 95), 2),
            "cpu_mean_ms": round(float(np.mean(run["cpu"])) * 1000.0, 2),
            "p95_over_memchentic_p95": round(ms(run["wall"], 95) / ref_p95, 3),
            "recall_at_10": None,
            "min_recall_at_10": None,
        }
        if all(rows is not None for rows in run["rows"]):
            recalls = [
                len(set(rows) & truth) / LIMIT
                for rows, truth in zip(run["rows"], exact_top, strict=True)
            ]
            row["recall_at_10"] = round(float(np.mean(recalls)), 4)
            row["min_recall_at_10"] = round(float(np.min(recalls)), 2)
        out[name] = row
    return out
