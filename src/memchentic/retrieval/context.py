"""Conversation context: the memories written just before and just after a memory
in the same session. A transcript turn often only makes sense with its neighbour
(an answer after its question), so each candidate stage can score a memory with
its neighbours' scores too (``SEARCH_CONTEXT_WEIGHT``).

Built on the store interface (:meth:`Store.session_lines`: the rows around the
candidates in their sessions, which backends read along an index, ids and times
only); memories without a ``session_id`` have no neighbours.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from ..store.base import MemoryFilter, SessionPoint, Store


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
    points: Sequence[SessionPoint],
    gap: timedelta,
) -> Neighbourhood:
    """The previous and next memory of each candidate in the same namespace and
    session (order: ``created_at``, then id), when they pass ``flt`` and lie within
    ``gap`` of it (``points``: where the candidates with a session lie). Those that
    are not candidates join them, adjacent to the candidates and joined memories
    next to them.

    One read: the session rows within ``2 x gap`` of the candidates hold their
    neighbours and their neighbours' neighbours. In such a line, a memory's
    previous row is its previous memory when that one lies within the gap (the
    line holds every row that near), else a row as far or farther (so it is not
    adjacent either); the same for the next."""
    known = set(candidates)
    lines = store.session_lines(points, flt, 2 * gap) if points else []
    adjacent: dict[str, list[str]] = dict.fromkeys(candidates, [])
    added: list[str] = []
    for line in lines:  # one session: the candidates' neighbours join from it alone
        ids = [memory_id for memory_id, _ in line]
        # close[i]: rows i and i + 1 lie within the gap (a line is in time order)
        close = [b - a <= gap for (_, a), (_, b) in itertools.pairwise(line)]
        joined: dict[int, None] = {}  # rows next to a candidate that are none
        for i, memory_id in enumerate(ids):
            if memory_id in known:
                near = _near(close, i)
                adjacent[memory_id] = [ids[j] for j in near]
                for j in near:
                    if ids[j] not in known:
                        joined[j] = None
        for j in joined:
            adjacent[ids[j]] = [ids[k] for k in _near(close, j) if k in joined or ids[k] in known]
            added.append(ids[j])
    return Neighbourhood(added, adjacent)


def _near(close: list[bool], i: int) -> list[int]:
    """The rows just before and after row ``i`` (in that order) within the gap."""
    near = []
    if i and close[i - 1]:
        near.append(i - 1)
    if i < len(close) and close[i]:
        near.append(i + 1)
    return near
