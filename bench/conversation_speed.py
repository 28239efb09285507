"""Engine time of a search on an agent's own conversation store: LongMemEval haystacks
logged turn by turn (issue 36, item 2's measurement).

Each of ``--questions`` haystacks (about 500 turns, about 50 sessions) is logged
into its own store the way an agent logs a conversation (the README's agent
recipe, ``bench.harness.ingest``: one ``Memory.add`` per turn, with its session
id, episodic, kept permanently, ``on_duplicate="keep"``), and every loaded
question is then asked against every store (``Memory.search``, ``now`` = the
haystack's question date, ``--limit`` 10 by default), ``--repeat`` times; a
search's time is its median over the repeats, and the table gives p50 and p95
over the searches.

Engine time only: vectors come from the cache (``bench/results/embeddings.sqlite``,
``bench.harness.cache``; every turn and question is embedded before the clock
starts), and the time spent inside the embedder during a call (a cache lookup) is
subtracted from it. The first ask of each question (before the repeats) is timed
apart: the engine has not yet read the texts of its hits (the second stage
remembers a memory's words once read), and it counts their recalls (a write); the
store's first search, which also loads the vector index, is left out. The ingest
rate is turns a second through ``add``, the embedder's time also taken out. On
SQLite, the SQL statements a search runs are counted by a trace callback on the
store's connection (statements, triggers included, not rows fetched).
``--profile`` runs cProfile over one pass of the searches and prints the top
functions by own time and by cumulative time.

Usage::

    python bench/conversation_speed.py                       # MiniLM vectors (cached), SQLite
    python bench/conversation_speed.py --embedder hash --questions 2 --repeat 1
    python bench/conversation_speed.py --profile 15          # and where the time goes
"""

from __future__ import annotations

import argparse
import cProfile
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cache, ingest, longmemeval  # noqa: E402
from bench.harness.cache import Stopwatch  # noqa: E402
from bench.harness.profiling import profile_tables  # noqa: E402
from memchentic import Memory, get_embedder  # noqa: E402
from memchentic.settings import load_settings  # noqa: E402
from memchentic.write.statements import embedding_text  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "dev.json.gz"


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def engine_seconds(emb: Stopwatch, call: Any) -> float:
    """Seconds ``call()`` took, less those spent in the embedder."""
    before = emb.seconds
    began = time.perf_counter()
    call()
    return time.perf_counter() - began - (emb.seconds - before)


class StatementCounter:
    """Counts the SQL statements run on this thread's SQLite connection of ``mem``'s
    store: ``count`` those the engine ran, ``nested`` those SQLite ran for them
    (FTS5's reads of its index, triggers: their text starts with ``--``). Both are
    None where the store has no such connection."""

    def __init__(self, mem: Memory) -> None:
        self.conn = getattr(mem.store, "conn", None)
        traced = hasattr(self.conn, "set_trace_callback")
        self.count: int | None = 0 if traced else None
        self.nested: int | None = 0 if traced else None

    def _seen(self, sql: str) -> None:
        assert self.count is not None and self.nested is not None
        if sql.startswith("--"):
            self.nested += 1
        else:
            self.count += 1

    def __enter__(self) -> StatementCounter:
        if self.count is not None:
            self.conn.set_trace_callback(self._seen)  # type: ignore[union-attr]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.count is not None:
            self.conn.set_trace_callback(None)  # type: ignore[union-attr]


def run(
    data: Path, *, questions: int, repeat: int, limit: int, embedder: str,
    profile: int = 0, cache_path: Path | None = cache.DEFAULT_PATH,
) -> dict[str, Any]:  # fmt: skip
    settings = load_settings()
    if settings.max_content_bytes < longmemeval.CONTENT_BYTES:
        settings = settings.model_copy(update={"max_content_bytes": longmemeval.CONTENT_BYTES})
    cached = cache.DiskCachedEmbedder(get_embedder(embedder, settings), cache_path)
    emb = Stopwatch(cached)
    loaded, _ = longmemeval.load(data, max_questions=questions)
    queries = [(q.question, q.date) for q in loaded]
    cached.embed_batch([embedding_text(text) for text, _ in queries])
    times: list[float] = []
    first: list[float] = []  # a question's first ask on a store (its second search on)
    statements: list[int] = []
    nested: list[int] = []
    ingest_s = 0.0
    turns = 0
    profiler = cProfile.Profile() if profile else None
    with tempfile.TemporaryDirectory(prefix="memchentic-conversation-") as folder:
        for n, q in enumerate(loaded):
            ingest.warm(cached, q.entries)
            settings = settings.model_copy(update={"home": Path(folder) / f"home-{n}"})
            with Memory(str(Path(folder) / f"haystack-{n}.db"), embedder=emb,
                        settings=settings) as mem:  # fmt: skip
                ingest_s += engine_seconds(
                    emb, lambda m=mem, q=q: ingest.ingest(m, q.entries, user_id="u", mode="add")
                )
                turns += len(q.entries)

                def search(mem: Memory = mem, text: str = "", when: datetime = q.date) -> None:
                    mem.search(text, user_id="u", limit=limit, now=when)

                # The first ask of each question warms the caches (the first search
                # also loads the store's vector index and search state: not counted)
                # and counts recalls; its time is the "first ask" figure.
                for k, (text, _) in enumerate(queries):
                    took = engine_seconds(emb, lambda t=text: search(text=t))
                    if k:
                        first.append(took)
                per_query: list[list[float]] = [[] for _ in queries]
                for _ in range(repeat):
                    for i, (text, _) in enumerate(queries):
                        per_query[i].append(engine_seconds(emb, lambda t=text: search(text=t)))
                times += [statistics.median(t) for t in per_query]
                for text, _ in queries:
                    with StatementCounter(mem) as counter:
                        search(text=text)
                    if counter.count is not None and counter.nested is not None:
                        statements.append(counter.count)
                        nested.append(counter.nested)
                if profiler is not None:
                    profiler.enable()
                    for text, _ in queries:
                        search(text=text)
                    profiler.disable()
            print(f"{n + 1}/{len(loaded)} {q.id}: {len(q.entries)} turns", file=sys.stderr)
    report: dict[str, Any] = {
        "backend": "sqlite", "embedder": emb.model, "haystacks": len(loaded),
        "turns": turns, "searches": len(times), "repeat": repeat, "limit": limit,
        "search_ms": {"p50": round(1000 * quantile(times, 0.5), 2),
                      "p95": round(1000 * quantile(times, 0.95), 2),
                      "mean": round(1000 * statistics.fmean(times), 2)},
        "first_ask_ms": ({"p50": round(1000 * quantile(first, 0.5), 2),
                          "p95": round(1000 * quantile(first, 0.95), 2)} if first else None),
        "ingest_turns_per_s": round(turns / ingest_s, 1),
        "ingest_ms_per_turn": round(1000 * ingest_s / turns, 3),
        "statements_per_search": (round(statistics.fmean(statements), 1) if statements
                                  else None),
        "nested_statements_per_search": round(statistics.fmean(nested), 1) if nested else None,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }  # fmt: skip
    if profiler is not None:
        report["profile"] = profile_tables(profiler, profile)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="default: %(default)s")
    parser.add_argument("--questions", type=int, default=8, help="haystacks (and queries)")
    parser.add_argument("--repeat", type=int, default=5, help="times each search runs")
    parser.add_argument("--limit", type=int, default=10, help="hits a search asks for (10)")
    parser.add_argument("--embedder", default="local",
                        help="local (MiniLM, from the cache; default) or hash")  # fmt: skip
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile the searches; print the top N functions")  # fmt: skip
    parser.add_argument(
        "--cache",
        default=str(cache.DEFAULT_PATH),
        help="the vector cache (default: %(default)s; 'none': in memory)",
    )
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args(argv)
    r = run(args.data, questions=args.questions, repeat=args.repeat, limit=args.limit,
            embedder=args.embedder, profile=args.profile,
            cache_path=None if args.cache == "none" else Path(args.cache))  # fmt: skip
    print(f"{r['backend']}, {r['embedder']}, {r['haystacks']} haystacks ({r['turns']} turns, "
          f"one add per turn), {r['searches']} searches of limit {r['limit']}, "
          f"median of {r['repeat']} each; engine time (embedder excluded):")  # fmt: skip
    s = r["search_ms"]
    print(f"search p50 {s['p50']} ms, p95 {s['p95']} ms, mean {s['mean']} ms")
    if f := r["first_ask_ms"]:
        print(f"a question's first ask (its texts not yet read by a search): "
              f"p50 {f['p50']} ms, p95 {f['p95']} ms")  # fmt: skip
    print(f"ingest {r['ingest_turns_per_s']} turns/s ({r['ingest_ms_per_turn']} ms a turn)")
    print(
        f"SQL statements per search: {r['statements_per_search']} "
        f"(and {r['nested_statements_per_search']} run inside SQLite for them: FTS5, triggers)"
    )
    for key, text in (r.get("profile") or {}).items():
        print(f"\ncProfile, one pass of the searches, by {key}:\n{text}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
