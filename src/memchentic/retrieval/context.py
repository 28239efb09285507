"""Conversation context: the memories written just before and just after a memory
in the same session. A transcript turn often only makes sense with its neighbour
(an answer after its question), so each candidate stage can score a memory with
its neighbours' scores too (``SEARCH_CONTEXT_WEIGHT``).

Built on the store interface (:meth:`Store.session_lines`: the rows around the
candidates in their sessions, which backends read along an index, ids and times
only); memories without a ``session_id`` have no neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..store.base import MemoryFilter, Store


@dataclass(slots=True)
class Neighbourhood:
    """The candidates' adjacent memories and who is adjacent to whom."""

    #: Adjacent memories that are not candidates themselves (they join them).
    added: list[str]
    #: Each candidate and added memory -> its adjacent memories among them all.
    adjacent: dict[str, list[str]]


def neighbours(
    store: Store,
    flt: MemoryFilter,
    candidates: Sequence[str],
    in_session: Sequence[str],
    gap: timedelta,
) -> Neighbourhood:
    """The previous and next memory of each candidate (``in_session``: those with a
    session) in the same namespace and session (order: ``created_at``, then id),
    when they pass ``flt`` and lie within ``gap`` of it. Those that are not
    candidates join them, adjacent to the candidates and joined memories next to
    them.

    One read: the session rows within ``2 x gap`` of the candidates hold their
    neighbours and their neighbours' neighbours. In such a line, a memory's
    previous row is its previous memory when that one lies within the gap (the
    line holds every row that near), else a row as far or farther (so it is not
    adjacent either); the same for the next."""
    known = set(candidates)
    lines = store.session_lines(in_session, flt, 2 * gap) if in_session else []
    near: dict[str, list[str]] = {}
    added: list[str] = []
    for line in lines:
        at = {memory_id: i for i, (memory_id, _) in enumerate(line)}
        mine = [memory_id for memory_id in at if memory_id in known]
        for memory_id in mine:
            near[memory_id] = _around(line, at[memory_id], gap)
        for other in dict.fromkeys(o for memory_id in mine for o in near[memory_id]):
            if other not in known:
                near[other] = _around(line, at[other], gap)
                added.append(other)
    members = known.union(added)
    adjacent = {
        i: [o for o in near.get(i, ()) if o in members] for i in (*candidates, *added)
    }  # fmt: skip
    return Neighbourhood(added, adjacent)


def _around(line: Sequence[tuple[str, datetime]], i: int, gap: timedelta) -> list[str]:
    """The rows just before and after ``line[i]`` (in that order) created within
    ``gap`` of it."""
    created = line[i][1]
    return [
        line[j][0] for j in (i - 1, i + 1)
        if 0 <= j < len(line) and abs(line[j][1] - created) <= gap
    ]  # fmt: skip
