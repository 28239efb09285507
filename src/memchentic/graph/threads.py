"""Truth when reading (docs/design.md, section 4, last paragraphs; docs/writes.md, "The
read-time thread").

A write supersedes only on strong evidence. When the rules found that a new entry
probably states the same attribute of the same subject as a stored one (a new
value) without being sure enough to supersede it, both stay live and the write
keeps the link: a ``contradicts`` edge from the new memory to the old one, with
the rule that found it and how sure it was (``strength``). A ``contradicts`` edge
a caller adds with ``relate`` means the same. Memories joined by such edges form a
*thread*.

A read resolves the thread: among its members that the read may show, the one
stated last (``valid_from``, else ``created_at``) is the *current* statement and
the others are *earlier* ones. :func:`resolve` reorders a ranked list so that in
each thread the current member takes the best place any member held, the earlier
ones the places after it, in order of time, newest first; a current member the
list missed (its newer value matched the query less well) is brought in, just
before the earlier one that linked to it, when the read's filter lets it show.
Every member gets a :class:`ThreadMark`: what it is and which members it outranks
or is outranked by. The context builder then dates the earlier ones and marks
them as earlier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from ..record import Edge, MemoryRecord
from ..store.base import MemoryFilter, Store
from .supersession import passes

#: The edge kind that joins two statements of one attribute.
THREAD_KIND = "contradicts"
#: Members a thread brings into a read at most (newer values the ranking missed),
#: so one read costs at most one more row read per hit, whatever the store holds.
MAX_PULLED = 8
#: Thread edges a read looks at, per hit (the newest): however many edges someone
#: piles on a memory, a search reads a bounded number of rows.
EDGES_PER_HIT = 8

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ThreadMark:
    """One read item's place in its thread.

    ``role`` is ``current`` (the last statement of the attribute) or ``earlier``;
    ``others``: for the current one, the earlier members it outranks, newest first;
    for an earlier one, the current member. ``rule``: the rule that linked them
    (``relate`` for an edge a caller added); ``sure``: its strength, 0..1. ``pulled``:
    the read brought the member in because a hit is an earlier value of it."""

    role: str
    others: tuple[str, ...]
    rule: str | None
    sure: float
    pulled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "others": list(self.others), "rule": self.rule,
                "sure": self.sure, "pulled": self.pulled}  # fmt: skip


def stated_at(record: MemoryRecord) -> datetime | None:
    """When a memory's statement was made: when it began to hold (``valid_from``),
    else when it was written."""
    return record.valid_from or record.created_at


def _order_key(record: MemoryRecord) -> tuple[str, str, str]:
    """Oldest first: statement time, then write time, then id (ids sort by creation)."""
    at = stated_at(record)
    written = record.created_at
    return (at.isoformat() if at else "", written.isoformat() if written else "", record.id)


def _is_thread(edge: Edge) -> bool:
    return edge.kind == THREAD_KIND and edge.source != edge.target


def resolve(
    store: Store,
    items: Sequence[T],
    get: Callable[[T], MemoryRecord],
    make: Callable[[T, MemoryRecord], T],
    flt: MemoryFilter,
    now: datetime,
) -> tuple[list[T], dict[str, ThreadMark]]:
    """``items`` (best first) with each thread resolved (module docstring), and the
    mark of every item that belongs to a thread of two or more shown members.

    ``make(item, record)`` builds the item of a member brought in from the item it
    stands before (its score is set by the caller's ``get``/order: the member takes
    the linked item's place). Members the read's filter ``flt`` would not show are
    never brought in, and never change an item's place."""
    if not items:
        return list(items), {}
    records = [get(item) for item in items]
    ids = [r.id for r in records]
    found = store.edges_among(ids, kind=THREAD_KIND, limit=EDGES_PER_HIT * len(ids))
    edges = [e for e in found if _is_thread(e)]
    if not edges:
        return list(items), {}
    shown = {r.id: r for r in records}
    pulled = _pull(store, edges, shown, flt, now)
    links: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        if {edge.source, edge.target} <= shown.keys() | pulled.keys():
            links.setdefault(edge.source, {})[edge.target] = edge
            links.setdefault(edge.target, {})[edge.source] = edge
    if not links:
        return list(items), {}
    # Places: each item's index; a member brought in sits just before the item it
    # stands for (half a place earlier), so it takes that place's rank.
    place: dict[str, float] = {memory_id: float(n) for n, memory_id in enumerate(ids)}
    for memory_id, (_, before) in pulled.items():
        place[memory_id] = place[before] - 0.5
    members = {**shown, **{i: r for i, (r, _) in pulled.items()}}
    marks: dict[str, ThreadMark] = {}
    order: dict[str, float] = dict(place)
    for group in _components(links):
        newest_first = sorted(group, key=lambda i: _order_key(members[i]), reverse=True)
        slots = sorted(place[i] for i in group)
        for memory_id, slot in zip(newest_first, slots, strict=True):
            order[memory_id] = slot
        current, earlier = newest_first[0], newest_first[1:]
        first = links[current].get(earlier[0]) or _strongest(links, earlier[0])
        marks[current] = ThreadMark("current", tuple(earlier), _rule(first), first.strength,
                                    current in pulled)  # fmt: skip
        for memory_id in earlier:
            edge = links[memory_id].get(current) or _strongest(links, memory_id)
            marks[memory_id] = ThreadMark("earlier", (current,), _rule(edge), edge.strength,
                                          memory_id in pulled)  # fmt: skip
    by_id = {get(item).id: item for item in items}
    for memory_id, (record, before) in pulled.items():
        if memory_id in marks:
            by_id[memory_id] = make(by_id[before], record)
    return [by_id[i] for i in sorted(by_id, key=order.__getitem__)], marks


def _pull(
    store: Store, edges: Sequence[Edge], shown: dict[str, MemoryRecord], flt: MemoryFilter,
    now: datetime,
) -> dict[str, tuple[MemoryRecord, str]]:  # fmt: skip
    """Members not in the list that are newer than the item linked to them and that
    ``flt`` shows: id -> (record, the id of the item it stands before)."""
    wanted: dict[str, str] = {}
    for edge in edges:
        for inside, outside in ((edge.source, edge.target), (edge.target, edge.source)):
            if inside in shown and outside not in shown:
                wanted.setdefault(outside, inside)
    if not wanted:
        return {}
    found = store.get_many(list(wanted)[: MAX_PULLED * 2])
    out: dict[str, tuple[MemoryRecord, str]] = {}
    for memory_id, before in wanted.items():
        record = found.get(memory_id)
        if record is None or record.superseded_by or not passes(record, flt, now):
            continue
        if _order_key(record) <= _order_key(shown[before]):
            continue  # an older value the read did not find: nothing to show
        out[memory_id] = (record, before)
        if len(out) >= MAX_PULLED:
            break
    return out


def _components(links: dict[str, dict[str, Edge]]) -> list[list[str]]:
    seen: set[str] = set()
    groups: list[list[str]] = []
    for start in links:
        if start in seen:
            continue
        group, stack = [], [start]
        seen.add(start)
        while stack:
            node = stack.pop()
            group.append(node)
            for other in links.get(node, {}):
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        if len(group) > 1:
            groups.append(group)
    return groups


def _strongest(links: dict[str, dict[str, Edge]], memory_id: str) -> Edge:
    return max(links[memory_id].values(), key=lambda e: (e.strength, e.id))


def _rule(edge: Edge) -> str:
    rule = edge.metadata.get("rule") if isinstance(edge.metadata, dict) else None
    return str(rule) if rule else "relate"


__all__ = ["MAX_PULLED", "THREAD_KIND", "ThreadMark", "resolve", "stated_at"]
