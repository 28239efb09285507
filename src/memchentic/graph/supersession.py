"""Supersession (docs/design.md, sections 1 and 3): reads follow ``supersedes`` edges to the
tip of each chain, and a new ``supersedes`` edge may not close a cycle.

A read ``as_of`` a time follows a chain only as far as its memories held then
(``valid_from <= as_of < valid_to``): "Dana works at Initech" superseded by "Dana
works at Globex" (valid from a later date) is still what a read as of the earlier
date shows (issue 20, item 12). Storage applies the same rule to one link: under
``as_of`` a superseded row stays when the memory superseding it did not hold then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from ..errors import ValidationError
from ..metadata_filter import matches
from ..record import MemoryRecord
from ..store.base import MemoryFilter, Store
from ..store.filters import by_agent

#: Longest chain a read follows (a guard: chains are acyclic by construction).
MAX_HOPS = 64

T = TypeVar("T")


def tip(
    store: Store, record: MemoryRecord, as_of: datetime | None = None
) -> tuple[MemoryRecord, int, bool]:
    """The newest memory of ``record``'s chain (with ``as_of``: the newest that held
    then), how many hops away it is, and whether it is the chain's end (False when
    the walk broke off: a missing link, a cycle, ``MAX_HOPS``)."""
    current, hops, seen = record, 0, {record.id}
    while current.superseded_by and hops < MAX_HOPS:
        nxt = store.get(current.superseded_by)
        if nxt is None or nxt.id in seen:
            return current, hops, False
        if as_of is not None and not nxt.held_at(as_of):
            return current, hops, True  # what held then ends the chain of that time
        seen.add(nxt.id)
        current, hops = nxt, hops + 1
    return current, hops, not current.superseded_by


def replaced(store: Store, record: MemoryRecord) -> int:
    """How many memories of its own namespace ``record`` superseded directly (what a
    search trace reports; other namespaces' memories are not counted: the caller
    may not see them)."""
    targets = [e.target for e in store.edges(record.id, kind="supersedes") if e.source == record.id]
    if not targets:
        return 0
    found = store.get_many(targets)
    return sum(1 for t in targets if t in found and found[t].namespace == record.namespace)


def passes(record: MemoryRecord, flt: MemoryFilter, now: datetime) -> bool:
    """Whether a chain's tip may stand in a read made with ``flt``."""
    if flt.namespaces is not None and record.namespace not in flt.namespaces:
        return False
    if not flt.include_expired and record.is_expired(now):
        return False
    if flt.types and record.type not in flt.types:
        return False
    if flt.kinds and record.kind not in flt.kinds:
        return False
    if flt.tags and not set(flt.tags) <= set(record.tags):
        return False
    if flt.by_agent is not None and not by_agent(record, flt.by_agent):
        return False
    if flt.metadata is not None and not matches(flt.metadata, record.metadata):
        return False
    return flt.as_of is None or record.held_at(flt.as_of)


def follow(
    store: Store,
    items: Sequence[T],
    get: Callable[[T], MemoryRecord],
    put: Callable[[T, MemoryRecord, int], T],
    flt: MemoryFilter,
    now: datetime,
) -> list[T]:
    """Replace superseded items by their chain's tip (first occurrence wins, order kept);
    items whose tip may not be shown are dropped."""
    out: list[T] = []
    shown: set[str] = set()
    for item in items:
        record = get(item)
        if record.superseded_by:
            newest, hops, end = tip(store, record, flt.as_of)
            if not end or not passes(newest, flt, now):
                continue
            item = put(item, newest, hops)
            record = newest
        if record.id not in shown:
            shown.add(record.id)
            out.append(item)
    return out


def check_no_cycle(store: Store, source: str, target: str) -> None:
    """Refuse ``source supersedes target`` when ``target`` already (transitively)
    supersedes ``source``, or when ``target`` is already superseded."""
    old = store.get(target)
    if old is not None and old.superseded_by and old.superseded_by != source:
        raise ValidationError("target", f"{target} is already superseded by {old.superseded_by}")
    current = store.get(source)
    hops = 0
    while current is not None and current.superseded_by and hops < MAX_HOPS:
        if current.superseded_by == target:
            raise ValidationError("target", "this supersedes edge would close a cycle")
        current = store.get(current.superseded_by)
        hops += 1
