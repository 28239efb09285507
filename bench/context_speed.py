"""Search time with conversation context on and off, on LongMemEval haystacks
(issue 22, item 4).

Each of ``--questions`` haystacks (about 500 turns each) is logged into its own
store, and every loaded question is asked against every store: once with
``SEARCH_CONTEXT_WEIGHT`` as configured (0.5 by default: the adjacent turns of a
session lift each other) and once with 0 (no context), the two interleaved, each
``--repeat`` times. A search's time is its median over the repeats; the table
gives p50 and p95 over the searches, and the ratio of context on to off.

Usage::

    python bench/context_speed.py                         # SQLite, hash embedder
    python bench/context_speed.py --embedder local        # MiniLM (cached vectors)
    python bench/context_speed.py --postgres              # an embedded PostgreSQL 18
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cache, ingest, longmemeval  # noqa: E402
from memchentic import Embedder, Memory, Settings, get_embedder  # noqa: E402
from memchentic.settings import load_settings  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "dev.json.gz"


def _quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _time(mem: Memory, settings: Settings, query: str, **kwargs: Any) -> float:
    mem.settings = settings
    start = time.perf_counter()
    mem.search(query, **kwargs)
    return time.perf_counter() - start


def measure(
    mem: Memory, queries: list[str], on: Settings, off: Settings, *, repeat: int, **kwargs: Any
) -> dict[str, list[float]]:
    """Per query, the median seconds of a search with context on and off."""
    for query in queries:  # warm the caches; the first search counts the recalls
        _time(mem, on, query, **kwargs)
        _time(mem, off, query, **kwargs)
    times: dict[str, list[list[float]]] = {mode: [[] for _ in queries] for mode in ("on", "off")}
    for r in range(repeat):
        order = ("on", "off") if r % 2 == 0 else ("off", "on")
        for i, query in enumerate(queries):
            for mode in order:
                settings = on if mode == "on" else off
                times[mode][i].append(_time(mem, settings, query, **kwargs))
    return {mode: [statistics.median(t) for t in per_query] for mode, per_query in times.items()}


def run(
    data: Path, *, questions: int, repeat: int, limit: int, embedder: str, postgres: bool
) -> dict[str, Any]:
    base = load_settings()
    if base.max_content_bytes < longmemeval.CONTENT_BYTES:
        base = base.model_copy(update={"max_content_bytes": longmemeval.CONTENT_BYTES})
    on = base
    off = base.model_copy(update={"search_context_weight": 0.0})
    emb: Embedder = cache.DiskCachedEmbedder(get_embedder(embedder, base))
    loaded, _ = longmemeval.load(data, max_questions=questions)
    queries = [q.question for q in loaded]
    found: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory(prefix="memchentic-context-") as folder:
        server = None
        if postgres:
            from memchentic.store.postgres_embedded import EmbeddedPostgres

            server = EmbeddedPostgres(Path(folder))
        try:
            for n, q in enumerate(loaded):
                ingest.warm(emb, q.entries)
                location = (server.url(schema=f"haystack_{n}") if server
                            else str(Path(folder) / f"haystack-{n}.db"))  # fmt: skip
                with Memory(store=location, embedder=emb, settings=on) as mem:
                    ingest.ingest(mem, q.entries, user_id="u", mode="add_many")
                    got = measure(mem, queries, on, off, repeat=repeat, user_id="u",
                                  limit=limit, now=q.date)  # fmt: skip
                for mode in found:
                    found[mode] += got[mode]
                print(f"{n + 1}/{len(loaded)} {q.id}: {len(q.entries)} turns", file=sys.stderr)
        finally:
            if server is not None:
                server.stop()
    ms = {
        mode: {"p50": 1000 * _quantile(t, 0.5), "p95": 1000 * _quantile(t, 0.95)}
        for mode, t in found.items()
    }
    return {
        "backend": "postgres" if postgres else "sqlite",
        "embedder": emb.model,
        "haystacks": len(loaded),
        "searches": len(found["on"]),
        "repeat": repeat,
        "limit": limit,
        "ms": ms,
        "ratio": {k: ms["on"][k] / ms["off"][k] for k in ("p50", "p95")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="default: %(default)s")
    parser.add_argument("--questions", type=int, default=6, help="haystacks (and queries)")
    parser.add_argument("--repeat", type=int, default=7, help="times each search runs")
    parser.add_argument("--limit", type=int, default=longmemeval.LIMIT)
    parser.add_argument("--embedder", default="hash", help="hash (default) or local")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    args = parser.parse_args()
    report = run(args.data, questions=args.questions, repeat=args.repeat, limit=args.limit,
                 embedder=args.embedder, postgres=args.postgres)  # fmt: skip
    print(f"{report['backend']}, {report['embedder']}, {report['haystacks']} haystacks, "
          f"{report['searches']} searches of limit {report['limit']}, "
          f"median of {report['repeat']} each:")  # fmt: skip
    print(f"{'context':<10}{'p50 ms':>10}{'p95 ms':>10}")
    for mode in ("on", "off"):
        print(f"{mode:<10}{report['ms'][mode]['p50']:>10.1f}{report['ms'][mode]['p95']:>10.1f}")
    ratio = report["ratio"]
    print(f"{'on / off':<10}{ratio['p50']:>10.2f}{ratio['p95']:>10.2f}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
