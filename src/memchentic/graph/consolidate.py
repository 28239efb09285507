"""Consolidation: fold clusters of near-duplicate entries into one memory.

Each cluster (entries of one namespace linked by what the write path would refuse
as a duplicate: :func:`~memchentic.write.statements.relate`, so a changed value
or a negation never folds; records of speech and other speakers' entries never
link) keeps its strongest member (reinforcement, then
confidence, then recalls, then the newest); the kept memory takes the others'
tags, entities and reinforcement, ``derives_from`` each of them, and
``supersedes`` them, so they leave reads but stay in history.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..clock import utcnow
from ..record import MemoryRecord
from ..store.base import MemoryFilter
from ..write.resolve import EPISODIC, comparable, thresholds
from ..write.statements import Relation, relate

if TYPE_CHECKING:
    from ..settings import Settings
    from ..store.base import Store


def strength_order(record: MemoryRecord) -> tuple[Any, ...]:
    return (record.reinforcement, record.confidence, record.recall_count,
            record.updated_at, record.id)  # fmt: skip


def find_clusters(
    store: Store, settings: Settings, namespace: str, threshold: float
) -> list[tuple[list[MemoryRecord], dict[str, float]]]:
    """Clusters of one namespace: members, and each member's cosine to its link."""
    now = utcnow()
    flt = MemoryFilter(namespaces=[namespace], kinds=["entry"], now=now)
    limits = replace(thresholds(settings), near_duplicate=threshold)
    records = {r.id: r for r in store.iter_memories(flt) if r.type != EPISODIC}
    vectors = store.vectors(list(records))
    parent = {i: i for i in records}
    link: dict[str, float] = {}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for memory_id, record in records.items():
        found = store.vector_search(vectors[memory_id], settings.write_neighbours, flt)
        for other, cosine in found:
            if other == memory_id or other not in records or cosine < threshold:
                continue
            duplicate = relate(record.content, records[other].content, cosine, limits)
            if duplicate is not Relation.DUPLICATE or not comparable(records[other], record):
                continue  # an update, a contradiction or another statement: both stay
            a, b = root(memory_id), root(other)
            if a != b:
                parent[b] = a
            link[other] = max(link.get(other, 0.0), cosine)
            link[memory_id] = max(link.get(memory_id, 0.0), cosine)
    groups: dict[str, list[MemoryRecord]] = {}
    for memory_id in records:
        groups.setdefault(root(memory_id), []).append(records[memory_id])
    return [(members, link) for members in groups.values() if len(members) > 1]
