"""Query-embedding latency of the local model with torch's default threads and with
one thread, each without and with a competing CPU load (issue 25, item 3).

    HF_HUB_OFFLINE=1 python bench/embed_threads.py [--queries 200] [--load N]

The competing load is N busy processes (default: one per core), the situation of a
server whose other workers, or other programs, keep the cores busy. Each line
gives p50 and p95 over ``--queries`` single-question embeddings (after 10
warm-up ones), the settings measured in turn, in one run.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUESTIONS = [
    "What did I say about the trip to Lisbon last spring?",
    "Which database does the billing service use in production?",
    "How long do you usually hold the yoga pose?",
    "When is my sister's birthday?",
    "What port does the staging API listen on?",
]


def _burn(stop: mp.synchronize.Event) -> None:  # type: ignore[name-defined]
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


def _times(embedder, n: int) -> tuple[float, float]:
    for q in QUESTIONS * 2:
        embedder.embed(q)
    took = []
    for i in range(n):
        start = time.perf_counter()
        embedder.embed(QUESTIONS[i % len(QUESTIONS)] + f" ({i})")
        took.append(1000 * (time.perf_counter() - start))
    took.sort()
    return statistics.median(took), took[int(0.95 * (len(took) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--load",
        type=int,
        default=os.cpu_count() or 1,
        help="busy processes of the competing load (default: one per core)",
    )
    args = parser.parse_args(argv)

    import torch

    from memchentic.embed.local import LocalEmbedder, set_threads

    default = torch.get_num_threads()
    embedder = LocalEmbedder()
    print(
        f"{os.cpu_count()} cores; torch default {default} threads; "
        f"load = {args.load} busy processes; {args.queries} queries each"
    )
    print(f"{'load':<6}{'threads':>8}{'p50 ms':>10}{'p95 ms':>10}")
    for loaded in (False, True):
        stop = mp.Event()
        burners = [
            mp.Process(target=_burn, args=(stop,), daemon=True)
            for _ in range(args.load if loaded else 0)
        ]
        for p in burners:
            p.start()
        try:
            for threads in (default, 1):
                set_threads(threads)
                p50, p95 = _times(embedder, args.queries)
                print(
                    f"{'on' if loaded else 'off':<6}{threads:>8}{p50:>10.1f}{p95:>10.1f}",
                    flush=True,
                )
        finally:
            stop.set()
            for p in burners:
                p.join()
    set_threads(default)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
