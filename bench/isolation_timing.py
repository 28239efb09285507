"""The keyword stage's time for an untrusted caller, with and without a word that is
frequent in another namespace (issue 20, item 17: the timing oracle).

Bob holds ``--bob`` memories; alice holds ``--alice``, each naming "orchard". Bob's
keyword stage (``store.keyword_search`` with his filter) is timed for a word only
alice uses ("orchard"), one both use ("lantern") and one only bob uses ("kettle"):
with the scan (bob sees at most ``SEARCH_ISOLATED_SCAN_ROWS`` memories) the three
take about the same time whatever alice holds; with the scan turned off
(``--no-scan``, the code before the fix) "orchard" costs time in proportion to
alice's matches.

Usage::

    python bench/isolation_timing.py                   # SQLite, alice 6,000, bob 50
    python bench/isolation_timing.py --no-scan         # the shared index, for comparison
    python bench/isolation_timing.py --postgres        # an embedded PostgreSQL 18
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memchentic import Memory, Settings
from memchentic.clock import utcnow


def _filler(rnd: random.Random, n: int) -> str:
    return " ".join("".join(rnd.choice("bcdfghjklmnpqrstvwz") for _ in range(7)) for _ in range(n))


def run(location: str, alice: int, bob: int, scan: bool, repeat: int) -> dict[str, float]:
    settings = Settings(search_isolated_scan_rows=500 if scan else 0)
    rnd = random.Random(1)
    with Memory(store=location, embedder="hash", settings=settings) as mem:
        writer = mem.as_identity("alice")
        for start in range(0, alice, 1000):
            count = min(1000, alice - start)
            writer.add_many([f"{_filler(rnd, 25)} orchard lantern" for _ in range(count)])
        mem.as_identity("bob").add_many(
            [_filler(rnd, 25) + (" lantern" if i % 5 == 0 else " kettle") for i in range(bob)]
        )
        view = mem.for_identity("bob")
        flt = view._read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
        store: Any = mem.store
        out = {}
        for word in ("orchard", "lantern", "kettle"):
            store.keyword_search(word, 30, flt)  # warm the caches
            times = []
            for _ in range(repeat):
                start_at = time.perf_counter()
                store.keyword_search(word, 30, flt)
                times.append(time.perf_counter() - start_at)
            out[word] = statistics.median(times) * 1000
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alice", type=int, default=6000)
    parser.add_argument("--bob", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--no-scan", action="store_true")
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memchentic-iso-") as folder:
        server = None
        if args.postgres:
            from memchentic.store.postgres_embedded import EmbeddedPostgres

            server = EmbeddedPostgres(Path(folder))
            location = server.url(schema="isolation")
        else:
            location = str(Path(folder) / "memory.db")
        try:
            found = run(location, args.alice, args.bob, not args.no_scan, args.repeat)
        finally:
            if server is not None:
                server.stop()
    mode = "shared index" if args.no_scan else "scan of the visible rows"
    print(f"bob's keyword stage, median ms ({mode}; alice {args.alice}, bob {args.bob}):")
    for word, ms in found.items():
        print(f"  {word:8s} {ms:7.2f}")


if __name__ == "__main__":
    main()
