"""Write decisions and read-time answers on the truth set (issue 47, item 4).

The pairs of ``tests/data/truth/`` (``tests/data/truth_pairs.py``), written by people
who never read the write rules: ``--part tune`` (default) is the part a change may be
tuned on; ``--part held_out`` is scored only once a change is finished (it prints a
warning saying so) and nothing is fitted to what it shows.

Each pair is written as ``bench/write_decisions.py`` writes its pairs (that script's
machinery, imported): a namespace of its own (a new ``user_id`` per pair) in one store
per path, the old statement first, then the new one, through ``--path`` (``add``,
``add_many``, ``http``, ``mcp``, or ``all``), on ``--backend`` (``sqlite`` or
``postgres``). The second write's status is compared with the pair's label; printed
right/total per category and per style for memchentic and, on the same vectors, for
the two naive cosine rules of that script:

- A: cosine >= 0.92 refused, else added;
- B: cosine >= 0.9 refused, >= 0.8 with opposite polarity superseded, else added.

Read time, for every pair with a question, after both writes (the same store):

- search: ``search(question, limit=5)``; true when the top hit holds ``now`` (for a
  pair whose two values are both true, ``"both": true``: when the five hits hold both
  ``now`` and ``before``);
- context: ``context(question, budget_tokens=400)``; true when its text holds ``now``
  and, where a line holds ``before`` (and not ``now``), that line comes after the one
  holding ``now`` and is marked as earlier (the word ``earlier``); such a true answer,
  the old value shown and marked, is also counted as ``context-marked``. For a
  ``both`` pair: true when the text holds both values.

``--misses`` lists every wrong write decision and every false read.

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 python bench/truth_set.py --part tune --path all
    HF_HUB_OFFLINE=1 python bench/truth_set.py --part held_out --path add --backend sqlite

Vectors are cached on disk by text hash (``--cache``, default
``bench/results/embeddings.sqlite``; ``bench.harness.cache``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness.cache import DiskCachedEmbedder  # noqa: E402
from bench.write_decisions import _user as user_of  # noqa: E402
from bench.write_decisions import (  # noqa: E402
    add_write_options,
    applies,
    cosines,
    run_path,
    seed_a,
    seed_b,
    store_location,
)
from memchentic import Embedder, Memory, Settings  # noqa: E402
from memchentic.embed import get_embedder  # noqa: E402
from tests.data.truth_pairs import CATEGORIES, PARTS, TruthPair, load  # noqa: E402
from tests.data.write_pairs import WritePair  # noqa: E402

PATHS = ("add", "add_many", "http", "mcp")
#: The answers compared: memchentic and the two naive cosine rules.
SYSTEMS = ("memchentic", "seed_a", "seed_b")
#: A line of the context that says its statement is an earlier one of a thread.
EARLIER = re.compile(r"\bearlier\b", re.IGNORECASE)

HELD_OUT_WARNING = (
    "warning: the held-out part is to be scored only once a change is finished; "
    "tune nothing on what it shows (use --part tune while working)"
)


# --- read time -------------------------------------------------------------------------
def search_verdict(hits: Sequence[str], pair: TruthPair) -> bool:
    """Whether the search hits (memory texts, best first) answer the pair's question."""
    now, before = (pair.now or "").lower(), (pair.before or "").lower()
    texts = [h.lower() for h in hits]
    if pair.both:
        return any(now in t for t in texts) and any(before in t for t in texts)
    return bool(texts) and now in texts[0]


def context_verdict(text: str, pair: TruthPair) -> tuple[bool, bool]:
    """``(true, marked)`` for a context's text: ``true`` as the module docstring says;
    ``marked`` when it is true with the old value shown on a line marked earlier."""
    now, before = (pair.now or "").lower(), (pair.before or "").lower()
    lines = text.lower().splitlines()
    now_at = next((k for k, line in enumerate(lines) if now in line), None)
    if now_at is None:
        return False, False
    if pair.both:
        return any(before in line for line in lines), False
    stale = [k for k, line in enumerate(lines) if before in line and now not in line]
    if not stale:
        return True, False
    ok = all(k > now_at and EARLIER.search(lines[k]) for k in stale)
    return ok, ok


def read_checks(mem: Memory, pairs: Sequence[tuple[int, TruthPair]]) -> dict[int, dict[str, Any]]:
    """Search and context for every pair with a question (after both writes)."""
    out: dict[int, dict[str, Any]] = {}
    for i, p in pairs:
        if p.question is None:
            continue
        hits = mem.search(p.question, user_id=user_of(i), limit=5)
        ctx = mem.context(p.question, user_id=user_of(i), budget_tokens=400)
        found, marked = context_verdict(ctx.text, p)
        out[i] = {"search": search_verdict([h.memory.content for h in hits], p),
                  "context": found, "marked": marked,
                  "top": hits[0].memory.content if hits else None,
                  "context_text": ctx.text}  # fmt: skip
    return out


# --- the report ------------------------------------------------------------------------
def report(
    embedder: Embedder,
    pairs: Sequence[TruthPair],
    backend: str,
    paths: Sequence[str],
    postgres_url: str | None = None,
) -> dict[str, Any]:
    """Per path: right/total per category and per style for each system, the read-time
    figures per category, and the misses."""
    indexed = list(enumerate(pairs))
    cos = cosines(embedder, pairs)
    out: dict[str, Any] = {"backend": backend, "pairs": len(pairs), "paths": {}}
    with store_location(backend, postgres_url) as location:
        for path in paths:
            chosen = [(i, p) for i, p in indexed if applies(p, path)]
            mem = Memory(store=location(f"truth_{path}"), embedder=embedder, settings=Settings())
            try:
                got = run_path(mem, path, cast("list[tuple[int, WritePair]]", chosen))
                reads = read_checks(mem, chosen)
            finally:
                mem.close()
            out["paths"][path] = _tables(chosen, got, reads, cos)
    return out


def _tables(
    chosen: Sequence[tuple[int, TruthPair]],
    got: dict[int, str],
    reads: dict[int, dict[str, Any]],
    cos: Any,
) -> dict[str, Any]:
    by_category: dict[str, Counter[str]] = {}
    by_style: dict[str, Counter[str]] = {}
    by_read: dict[str, Counter[str]] = {}
    wrong, unread = [], []
    for i, p in chosen:
        answers = {"memchentic": got[i], "seed_a": seed_a(float(cos[i]), p),
                   "seed_b": seed_b(float(cos[i]), p)}  # fmt: skip
        for row in (by_category.setdefault(p.category, Counter()),
                    by_style.setdefault(p.style, Counter())):  # fmt: skip
            row["total"] += 1
            for system, answer in answers.items():
                row[system] += answer == p.expected
        if got[i] != p.expected:
            wrong.append({"id": p.id, "category": p.category, "style": p.style,
                          "old": p.old, "new": p.new, "expected": p.expected,
                          "got": got[i], "cosine": round(float(cos[i]), 3)})  # fmt: skip
        if i in reads:
            r, row = reads[i], by_read.setdefault(p.category, Counter())
            row["total"] += 1
            row["search"] += r["search"]
            row["context"] += r["context"]
            row["marked"] += r["marked"]
            if not (r["search"] and r["context"]):
                unread.append({"id": p.id, "category": p.category, "question": p.question,
                               "now": p.now, "before": p.before, "both": p.both,
                               "write": got[i], "search": r["search"],
                               "context": r["context"], "top": r["top"],
                               "context_text": r["context_text"]})  # fmt: skip
    return {
        "categories": {c: dict(by_category[c]) for c in CATEGORIES if c in by_category},
        "styles": {s: dict(by_style[s]) for s in sorted(by_style)},
        "reads": {c: dict(by_read[c]) for c in CATEGORIES if c in by_read},
        "wrong": wrong,
        "unread": unread,
    }


def _cells(row: dict[str, int], keys: Sequence[str]) -> list[str]:
    return [f"{row.get(k, 0)}/{row['total']}" for k in keys]


def print_report(found: dict[str, Any], part: str, misses: bool = False) -> None:
    print(f"part: {part}  backend: {found['backend']}  pairs: {found['pairs']}")
    for path, data in found["paths"].items():
        missing = [c for c in CATEGORIES if c not in data["categories"]]
        note = f"  (not applicable: {', '.join(missing)})" if missing else ""
        print(f"\npath: {path}{note}")
        for title, table in (("category", data["categories"]), ("style", data["styles"])):
            print(f"  {title:<13} {'memchentic':>11} {'seed A':>9} {'seed B':>9}")
            for name, row in table.items():
                a, b, c = _cells(row, SYSTEMS)
                print(f"  {name:<13} {a:>11} {b:>9} {c:>9}")
            total: Counter[str] = Counter()
            for row in table.values():
                total.update(row)
            if title == "category":
                a, b, c = _cells(total, SYSTEMS)
                print(f"  {'all':<13} {a:>11} {b:>9} {c:>9}")
            print()
        print(f"  read time     {'search':>9} {'context':>9} {'context-marked':>15}")
        for name, row in data["reads"].items():
            s, c, m = _cells(row, ("search", "context", "marked"))
            print(f"  {name:<13} {s:>9} {c:>9} {m:>15}")
        if misses:
            _print_misses(data)


def _print_misses(data: dict[str, Any]) -> None:
    for w in data["wrong"]:
        print(f"    wrong {w['id']} {w['category']}/{w['style']}: {w['old']!r} -> "
              f"{w['new']!r}: {w['got']}, expected {w['expected']} "
              f"(cosine {w['cosine']})")  # fmt: skip
    for u in data["unread"]:
        failed = [k for k in ("search", "context") if not u[k]]
        print(f"    unread {u['id']} {u['category']} ({', '.join(failed)}; write "
              f"{u['write']}): {u['question']!r} now={u['now']!r} before={u['before']!r}"
              f"{' both' if u['both'] else ''}; top hit {u['top']!r}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=tuple(PARTS), default="tune",
                        help="tune (default), or held_out once a change is finished")  # fmt: skip
    add_write_options(parser)
    parser.add_argument("--misses", action="store_true",
                        help="list every wrong write and every false read")  # fmt: skip
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    args = parser.parse_args(argv)
    if args.part == "held_out":
        print(HELD_OUT_WARNING, file=sys.stderr)
    paths = ["add"] if not args.path else list(PATHS) if "all" in args.path else args.path
    pairs = load(args.part)
    if not pairs:
        raise SystemExit(f"no pairs in the {args.part} part")
    embedder = DiskCachedEmbedder(get_embedder(args.embedder, Settings()), Path(args.cache))
    found = report(embedder, pairs, args.backend, paths, args.postgres_url)
    found["part"] = args.part
    print_report(found, args.part, misses=args.misses)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
