"""What repeated slot updates cost (issue 20 item 1): store growth, version bytes, RSS.

Reproduces the attack of issue 20: one ``learn`` of N lines that each move the
same profile slot ("I live in City 1.", "I live in City 2.", ...), so one memory
is updated in place N times. Before the fix each update appended the old value
to ``metadata["history"]`` without bound and each version stored the whole
metadata twice (before and after): the store grew as N squared. Now the
history is bounded (``SLOT_HISTORY_MAX_ENTRIES``, ``SLOT_HISTORY_MAX_BYTES``) and
a version stores only what changed, so it grows as N.

Usage::

    python bench/slot_history.py                  # N = 250, 500 and 1000 (SQLite)
    python bench/slot_history.py --lines 100,200 --store postgresql://...

The learn call runs with ``LEARN_MAX_LINES`` and ``MAX_WRITES_PER_CALL`` raised to
N (the defaults refuse 1,000 lines outright). Each N runs in a fresh store; the
figures: wall time of the learn call, store growth on disk while open (SQLite:
the file plus its -wal), the store's size once closed (the -wal checkpointed
into it), the JSON bytes of the memory's versions, the length of its history,
and the process's peak RSS (of the whole run so far: run one N for its own).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from memchentic import Memory, Settings


def _disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*"))


def run(lines: int, store: str | None, folder: Path) -> dict[str, object]:
    path = folder / f"slots-{lines}.db"
    settings = Settings(learn_max_lines=max(lines, 1), max_writes_per_call=max(lines, 1),
                        learn_max_chars=max(lines * 40, 1))  # fmt: skip
    text = "\n".join(f"I live in City {i}." for i in range(lines))
    with Memory(store=store or str(path), embedder="hash", settings=settings) as mem:
        mem.add("warm-up", user_id="bench")
        before = _disk(path) if store is None else 0
        start = time.perf_counter()
        results = mem.learn(text, user_id=f"sam{lines}")  # a slot of its own
        took = time.perf_counter() - start
        slot = results[-1].id
        versions = mem.history(slot)
        version_bytes = sum(len(json.dumps(v.to_dict(), ensure_ascii=False)) for v in versions)
        history = mem.get(slot, touch=False).metadata.get("history", [])
        after = _disk(path) if store is None else 0
    closed = _disk(path) if store is None else 0  # checkpointed: the -wal folded in
    return {
        "lines": lines,
        "learn_s": round(took, 2),
        "store_growth_mb": round((after - before) / 1e6, 2) if store is None else None,
        "closed_store_mb": round(closed / 1e6, 2) if store is None else None,
        "versions": len(versions),
        "version_mb": round(version_bytes / 1e6, 3),
        "history_entries": len(history),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", default="250,500,1000", help="comma-separated N")
    parser.add_argument("--store", default=None, help="a PostgreSQL URL (default: SQLite)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.lines.split(",")):
            print(json.dumps(run(n, args.store, Path(tmp))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
