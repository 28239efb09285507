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
from ..ids import new_id
from ..record import Edge, MemoryRecord
from ..store.base import MemoryFilter
from ..write.resolve import EPISODIC, comparable, diff, record_version, thresholds
from ..write.statements import Relation, relate

if TYPE_CHECKING:
    from ..memory import Memory


def _strength(record: MemoryRecord) -> tuple[Any, ...]:
    return (record.reinforcement, record.confidence, record.recall_count,
            record.updated_at, record.id)  # fmt: skip


def find_clusters(
    mem: Memory, namespace: str, threshold: float
) -> list[tuple[list[MemoryRecord], dict[str, float]]]:
    """Clusters of one namespace: members, and each member's cosine to its link."""
    now = utcnow()
    flt = MemoryFilter(namespaces=[namespace], kinds=["entry"], now=now)
    limits = replace(thresholds(mem.settings), near_duplicate=threshold)
    records = {r.id: r for r in mem.store.iter_memories(flt) if r.type != EPISODIC}
    vectors = mem.store.vectors(list(records))
    parent = {i: i for i in records}
    link: dict[str, float] = {}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for memory_id, record in records.items():
        found = mem.store.vector_search(vectors[memory_id], mem.settings.write_neighbours, flt)
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


def consolidate(mem: Memory, namespaces: list[str], *, dry_run: bool) -> list[dict[str, Any]]:
    threshold = mem.settings.near_dup_threshold
    clusters: list[dict[str, Any]] = []
    for namespace in namespaces:
        if not mem.access.can_write(mem.principal, namespace, "semantic"):
            continue
        for members, link in find_clusters(mem, namespace, threshold):
            kept = max(members, key=_strength)
            others = sorted((m for m in members if m.id != kept.id), key=lambda m: m.id)
            clusters.append({"namespace": namespace, "kept": kept.id,
                             "merged": [m.id for m in others]})  # fmt: skip
            if not dry_run:
                _merge(mem, kept, others, link)
    return clusters


def _merge(
    mem: Memory, kept: MemoryRecord, others: list[MemoryRecord], link: dict[str, float]
) -> None:
    now = utcnow()
    ctx = mem._ctx(now)
    with mem.store.write():
        merged = replace(
            kept,
            tags=list(dict.fromkeys([*kept.tags, *(t for o in others for t in o.tags)])),
            entities=list(
                dict.fromkeys([*kept.entities, *(e for o in others for e in o.entities)])
            ),
            reinforcement=kept.reinforcement + sum(o.reinforcement for o in others),
        )
        mem.store.update(merged)
        record_version(ctx, kept.namespace, kept.id, "consolidate", diff(kept, merged))
        for other in others:
            strength = round(min(1.0, link.get(other.id, 1.0)), 4)
            mem.store.add_edge(Edge(new_id(), kept.id, other.id, "derives_from", strength, now))
            mem.store.add_edge(Edge(new_id(), kept.id, other.id, "supersedes", 1.0, now))
            record_version(ctx, other.namespace, other.id, "consolidated",
                           {"superseded_by": [None, kept.id]})  # fmt: skip
    mem._flush(ctx, ("memory.consolidated", kept.namespace, kept.id,
                     {"merged": [o.id for o in others]}))  # fmt: skip
