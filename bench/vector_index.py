"""The in-process vector index alone: ingest, search latency, recall and memory.

Times :class:`memchentic.store.vectors.VectorIndex` (flat up to ``exact_below``
vectors, IVF-Flat above) without a store around it:

* **ingest**: ``upsert`` of N vectors from empty in batches of 1,000 (keys 0..N-1),
  wall time including every training on the way; also the slowest single batch
  (the one that retrains and re-buckets everything);
* **search**: ``search(q, 100)`` (what the store asks for: limit x overfetch) and
  ``search(q, 10)``, p50 and p95 over the timed queries, after a warm-up;
* **recall** of ``search(q, 10)`` and ``search(q, 100)`` against an exact numpy scan
  (``matrix @ q`` and ``argpartition``);
* **search_many** of 1,000 vectors with k = 5 (the write path's duplicate check),
  and how many of its rows equal ``search`` per row;
* **save** and **load** time and the file's size;
* **memory**: the process's RSS growth over the ingest (the index) and its peak
  during the ingest (the kernel's high-water mark is reset before it).

Datasets: ``corpus``, the vectors of bench/search_scale.py's synthetic corpus
(clustered like text embeddings) with its queries (a random row's vector plus
noise, cosine ~0.9); and ``uniform``, uniformly random unit vectors (no structure
at all: the worst case for any partitioned index) with queries made the same way.

Usage::

    python bench/vector_index.py                 # corpus at 100k, uniform at 100k
    python bench/vector_index.py --large         # adds corpus at 1M
    python bench/vector_index.py --sizes 20000,100000 --uniform 0 --queries 100

Each (dataset, N) runs in its own child process, so memory figures are per run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_scale import (  # noqa: E402
    DIM,
    QUERY_NOISE,
    Corpus,
    make_queries,
    run_children,
)

from memchentic.store.vectors import VectorIndex  # noqa: E402

BATCH = 1000
WARMUP = 20
MANY = 1000  # vectors in one search_many call
MANY_K = 5


def _rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # resets VmHWM (Linux >= 4.0)
        return True
    except OSError:
        return False


def _pct(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000.0, q))


def _perturbed(rows: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    picked = rows[rng.integers(len(rows), size=count)]
    noisy = picked + rng.standard_normal(picked.shape, dtype=np.float32) * (
        QUERY_NOISE / np.sqrt(DIM)
    )
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def _dataset(name: str, n: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if name == "corpus":
        corpus = Corpus(n, seed)
        qs = np.stack([vec for _, _, vec in make_queries(corpus, queries + WARMUP, seed)])
        return corpus.vectors, qs
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors, _perturbed(vectors, queries + WARMUP, rng)


def _exact(vectors: np.ndarray, queries: np.ndarray, k: int) -> list[set[int]]:
    out = []
    for start in range(0, len(queries), 16):
        sims = queries[start : start + 16] @ vectors.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        out.extend(set(row.tolist()) for row in top)
    return out


def run_one(name: str, n: int, queries: int, seed: int, exact_below: int) -> dict[str, Any]:
    vectors, qs = _dataset(name, n, queries, seed)
    warm, timed = qs[:WARMUP], qs[WARMUP:]
    rss_before = _rss_mb()
    peak_reset = _reset_peak_rss()

    index = VectorIndex(DIM, exact_below=exact_below)
    slowest = 0.0
    t0 = time.perf_counter()
    for start in range(0, n, BATCH):
        t_batch = time.perf_counter()
        index.upsert(range(start, min(n, start + BATCH)), vectors[start : start + BATCH])
        slowest = max(slowest, time.perf_counter() - t_batch)
    ingest_s = time.perf_counter() - t0
    rss_index = _rss_mb() - rss_before
    peak = _rss_mb("VmHWM") - rss_before if peak_reset else float("nan")

    for q in warm:
        index.search(q, 100)
    result: dict[str, Any] = {"dataset": name, "n": n, "queries": len(timed)}
    for k in (100, 10):
        times, hits = [], []
        for q in timed:
            t = time.perf_counter()
            hits.append(index.search(q, k))
            times.append(time.perf_counter() - t)
        truth = _exact(vectors, timed, k)
        got_keys = [{key for key, _ in got} for got in hits]
        found = [len(want & got) / k for want, got in zip(truth, got_keys, strict=True)]
        result[f"search{k}_p50_ms"] = _pct(times, 50)
        result[f"search{k}_p95_ms"] = _pct(times, 95)
        result[f"recall_at_{k}"] = float(np.mean(found))

    fresh = _perturbed(vectors, MANY, np.random.default_rng(seed + 2))
    index.search_many(fresh[:10], MANY_K)  # warm-up
    t = time.perf_counter()
    many = index.search_many(fresh, MANY_K)
    many_s = time.perf_counter() - t
    t = time.perf_counter()
    single = [index.search(v, MANY_K) for v in fresh]
    single_s = time.perf_counter() - t
    same = sum([a for a, _ in x] == [b for b, _ in y] for x, y in zip(many, single, strict=True))

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.vectors"
        t = time.perf_counter()
        index.save(path, "bench")
        save_s = time.perf_counter() - t
        size_mb = path.stat().st_size / 2**20
        t = time.perf_counter()
        loaded = VectorIndex.load(path, "bench", DIM, exact_below=exact_below)
        load_s = time.perf_counter() - t
        assert loaded is not None and len(loaded) == len(index)

    lists = index._lists  # private, for the report only
    result.update(
        ingest_per_s=n / ingest_s, ingest_s=ingest_s, slowest_batch_s=slowest,
        nlist=lists.nlist, nprobe10=lists.nprobe(10), nprobe100=lists.nprobe(100),
        many_ms=many_s * 1000, single_ms=single_s * 1000, many_same=same / MANY,
        save_s=save_s, load_s=load_s, file_mb=size_mb, index_rss_mb=rss_index,
        ingest_peak_rss_mb=peak, process_peak_rss_mb=resource.getrusage(
            resource.RUSAGE_SELF).ru_maxrss / 1024,
    )  # fmt: skip
    return result


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = [
        ("dataset", "dataset", "{}"), ("N", "n", "{:,}"),
        ("ingest/s", "ingest_per_s", "{:,.0f}"), ("worst batch s", "slowest_batch_s", "{:.2f}"),
        ("nlist", "nlist", "{}"), ("nprobe 10/100", None, ""),
        ("s(q,100) p50/p95 ms", None, ""), ("s(q,10) p50/p95 ms", None, ""),
        ("recall@10", "recall_at_10", "{:.4f}"), ("recall@100", "recall_at_100", "{:.4f}"),
        ("many(1000,k=5) ms", "many_ms", "{:.0f}"), ("1000 x search ms", "single_ms", "{:.0f}"),
        ("same", "many_same", "{:.3f}"), ("save/load s", None, ""),
        ("file MB", "file_mb", "{:.0f}"), ("index RSS MB", "index_rss_mb", "{:.0f}"),
        ("ingest peak MB", "ingest_peak_rss_mb", "{:.0f}"),
    ]  # fmt: skip
    lines = []
    for row in rows:
        cells = []
        for title, key, fmt in cols:
            if title.startswith("nprobe"):
                cells.append(f"{row['nprobe10']}/{row['nprobe100']}")
            elif title.startswith("s(q,"):
                k = title[4:].split(")")[0]
                cells.append(f"{row[f'search{k}_p50_ms']:.2f}/{row[f'search{k}_p95_ms']:.2f}")
            elif title.startswith("save"):
                cells.append(f"{row['save_s']:.2f}/{row['load_s']:.2f}")
            else:
                cells.append(fmt.format(row[key]))
        lines.append(cells)
    titles = [c[0] for c in cols]
    print("| " + " | ".join(titles) + " |")
    print("|" + "|".join("---" for _ in titles) + "|")
    for cells in lines:
        print("| " + " | ".join(cells) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated N (corpus)")
    parser.add_argument("--large", action="store_true", help="also N = 1,000,000")
    parser.add_argument("--uniform", default="100000", help="N values for uniform (0: none)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per run")
    parser.add_argument("--exact-below", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # child: DATASET N
    args = parser.parse_args(argv)

    if args.one:
        name, n = args.one[0], int(args.one[1])
        result = run_one(name, n, args.queries, args.seed, args.exact_below)
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    runs = [("corpus", int(s)) for s in args.sizes.split(",") if s.strip()]
    if args.large and ("corpus", 1_000_000) not in runs:
        runs.append(("corpus", 1_000_000))
    runs += [("uniform", int(s)) for s in args.uniform.split(",") if s.strip() and int(s)]
    jobs = [([sys.executable, os.path.abspath(__file__), "--one", name, str(n),
              "--queries", str(args.queries), "--seed", str(args.seed),
              "--exact-below", str(args.exact_below)], f"{name} N={n:,}")
            for name, n in runs]  # fmt: skip
    return run_children(jobs, print_table, args.json, args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
