"""Conversation context: the memories written just before and just after a memory
in the same session. A transcript turn often only makes sense with its neighbour
(an answer after its question), so each candidate stage can score a memory with
its neighbours' scores too (``SEARCH_CONTEXT_WEIGHT``).

Built on the store interface (``list_memories`` with a time window); memories
without a ``session_id`` have no neighbours.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import timedelta

from ..record import MemoryRecord
from ..store.base import MemoryFilter, Store

#: Most rows read per session window (a bound on the work one search does).
MAX_WINDOW_ROWS = 2000
_TICK = timedelta(microseconds=1)


@dataclass(slots=True)
class Neighbourhood:
    """Rows read around the candidates and who is adjacent to whom."""

    rows: dict[str, MemoryRecord]
    adjacent: dict[str, list[str]]


def neighbours(
    store: Store, flt: MemoryFilter, records: Iterable[MemoryRecord], gap: timedelta
) -> Neighbourhood:
    """For every memory of a session around ``records``: its previous and next memory
    of the same namespace and session (order: ``created_at``, then id), when they
    pass ``flt`` and lie within ``gap`` of it."""
    groups: dict[tuple[str, str], list[MemoryRecord]] = {}
    for rec in records:
        if rec.session_id and rec.created_at is not None:
            groups.setdefault((rec.namespace, rec.session_id), []).append(rec)
    rows: dict[str, MemoryRecord] = {}
    adjacent: dict[str, list[str]] = {}
    for (namespace, session), members in groups.items():
        times = [r.created_at for r in members if r.created_at is not None]
        lo, hi = min(times) - gap, max(times) + gap + _TICK
        if flt.created_after is not None:
            lo = max(lo, flt.created_after)
        if flt.created_before is not None:
            hi = min(hi, flt.created_before)
        window = replace(flt, created_after=lo, created_before=hi)
        found = store.list_memories(window, limit=MAX_WINDOW_ROWS, newest_first=False)
        line = [r for r in found if r.namespace == namespace and r.session_id == session]
        line.sort(key=lambda r: (r.created_at, r.id))
        for i, rec in enumerate(line):
            rows[rec.id] = rec
            near = []
            for j in (i - 1, i + 1):
                if 0 <= j < len(line):
                    other = line[j]
                    if abs(other.created_at - rec.created_at) <= gap:  # type: ignore[operator]
                        near.append(other.id)
            adjacent[rec.id] = near
    return Neighbourhood(rows, adjacent)
