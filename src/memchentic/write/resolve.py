"""Resolution of one write against what is stored (DESIGN section 4, steps 1-3).

Runs inside the store's write transaction, so the check and the write are one
atomic step for every thread and process writing the store:

1. ``slot_key`` set: the same key in the same namespace is updated in place and
   the old value moves to ``metadata["history"]``.
2. guides: nearly the same guide merges into it, ``reinforcement`` + 1.
3. entries: opposite polarity and cosine >= ``contradiction_threshold`` supersedes;
   same polarity and cosine >= ``NEAR_DUP_THRESHOLD`` is refused (or, with the
   ``reinforce`` policy, cosine >= ``dedup_threshold`` reinforces).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from ..graph.auto_edges import EdgeClassifier
from ..ids import new_id
from ..record import Edge, MemoryRecord, Version, WriteResult
from ..settings import Settings
from ..store.base import MemoryFilter, Neighbour, Store
from ..store.vectors import unit_rows
from .slot_history import bounded_history, metadata_changes

#: Fields a slot update takes from the new write.
_SLOT_FIELDS = (
    "content", "title", "tier_l0", "tier_l1", "type", "tags", "path_hint", "repo",
    "entities", "confidence", "importance", "polarity", "valid_from", "valid_to",
    "expires_at", "user_id", "agent_id", "session_id",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class WriteContext:
    store: Store
    settings: Settings
    actor: str
    now: datetime
    on_duplicate: str
    #: Classifies relations to neighbours when the write asked for ``auto_edges``.
    edge_classifier: EdgeClassifier | None = None
    #: Events to emit once the write has committed: (type, namespace, memory id, payload).
    pending: list[tuple[str, str, str, dict[str, object]]] = field(default_factory=list)

    def note(self, type_: str, namespace: str, memory_id: str, **payload: object) -> None:
        self.pending.append((type_, namespace, memory_id, payload))


def snapshot(record: MemoryRecord) -> dict[str, object]:
    """The whole record, for the first version (bounded by the input limits)."""
    return record.to_dict()


def diff(before: MemoryRecord, after: MemoryRecord) -> dict[str, list[object]]:
    """Changed fields as ``{field: [before, after]}`` (JSON-ready); of ``metadata`` only
    the keys that changed, and of its history only what joined and how many left
    (:func:`~memchentic.write.slot_history.metadata_changes`)."""
    old, new = before.to_dict(), after.to_dict()
    out: dict[str, list[object]] = {
        k: [old[k], new[k]] for k in new if k != "metadata" and old.get(k) != new[k]
    }
    out.update(metadata_changes(before.metadata, after.metadata))
    return out


def record_version(
    ctx: WriteContext, namespace: str, memory_id: str, op: str,
    changes: dict[str, list[object]], snap: dict[str, object] | None = None,
) -> None:  # fmt: skip
    number = ctx.store.next_version(memory_id)
    ctx.store.add_version(Version(memory_id, number, op, ctx.actor, ctx.now, changes, snap))
    ctx.note("history.appended", namespace, memory_id, version=number, op=op)


def update_with_version(
    ctx: WriteContext, before: MemoryRecord, after: MemoryRecord, op: str,
    vector: np.ndarray | None = None,
) -> None:  # fmt: skip
    ctx.store.update(after, vector)
    record_version(ctx, after.namespace, after.id, op, diff(before, after))


def resolve(ctx: WriteContext, record: MemoryRecord, vector: np.ndarray) -> WriteResult:
    """Decide and apply one write (and its auto-edges); the caller holds ``store.write()``."""
    result = _resolve(ctx, record, vector)
    if ctx.edge_classifier is not None and result.status in ("added", "superseded"):
        result.edges = _auto_edges(ctx, record, vector, skip=set(result.ids))
    return result


#: Margin under the resolution thresholds for the bulk pre-check: its lookup may
#: rank neighbours a little differently from the one-by-one search (PostgreSQL's
#: HNSW reads the graph, not the exact rows).
_BULK_MARGIN = 0.02
#: Writes checked together (the in-batch check is a window x window product).
_BULK_WINDOW = 1024


def resolve_many(
    items: Sequence[tuple[WriteContext, MemoryRecord, np.ndarray]],
) -> list[WriteResult]:
    """Resolve a batch of writes, in order, with the same outcome as :func:`resolve`
    on each in turn; the caller holds ``store.write()``.

    One batched lookup finds the writes that nothing stored comes close to
    (cosine under every threshold that could apply to them), and one matrix
    product the ones close to an earlier write of the batch in the same
    namespace. Those two checks are conservative: a write that passes both would
    be inserted by :func:`resolve` anyway, so it is, in bulk (one statement per
    table). Every other write (slot keys, guides, auto-edges, anything close)
    goes through :func:`resolve` after the bulk rows before it are written, so
    it sees them.
    """
    results: list[WriteResult] = []
    for start in range(0, len(items), _BULK_WINDOW):
        results.extend(_resolve_window(items[start : start + _BULK_WINDOW]))
    return results


def _resolve_window(
    items: Sequence[tuple[WriteContext, MemoryRecord, np.ndarray]],
) -> list[WriteResult]:
    if not items:
        return []
    store = items[0][0].store
    fast = _bulk_candidates(items)
    results: list[WriteResult] = []
    queued: list[tuple[WriteContext, MemoryRecord, np.ndarray]] = []

    def drain() -> None:
        if not queued:
            return
        store.insert_many([(record, vector) for _, record, vector in queued])
        store.add_versions([
            Version(record.id, 1, "add", ctx.actor, ctx.now, {}, snapshot(record))
            for ctx, record, _ in queued
        ])  # fmt: skip
        for ctx, record, _ in queued:
            ctx.note("history.appended", record.namespace, record.id, version=1, op="add")
        queued.clear()

    for (ctx, record, vector), bulk in zip(items, fast, strict=True):
        if bulk:
            queued.append((ctx, record, vector))
            results.append(WriteResult("added", record.id, [record.id], memory=record))
            continue
        drain()
        results.append(resolve(ctx, record, vector))
    drain()
    return results


def _thresholds(ctx: WriteContext) -> tuple[float, float]:
    """(opposite polarity, same polarity): the cosines from which
    :func:`_resolve_entry` acts on a neighbour, less the bulk margin."""
    s = ctx.settings
    same = np.inf
    if ctx.on_duplicate != "keep":
        same = s.dedup_threshold if ctx.on_duplicate == "reinforce" else s.near_dup_threshold
    return s.contradiction_threshold - _BULK_MARGIN, same - _BULK_MARGIN


def _bulk_candidates(items: Sequence[tuple[WriteContext, MemoryRecord, np.ndarray]]) -> list[bool]:
    """Which writes can be inserted without resolution (see :func:`resolve_many`).

    A neighbour (stored, or earlier in the batch) rules a write out when it is in
    the same namespace and close enough for :func:`_resolve_entry` to act on it:
    opposite polarity over the contradiction threshold, or the same polarity over
    the duplicate threshold of the write's policy. Stored neighbours are not
    checked for kind, expiry or supersession, and earlier ones not for kind, so
    some writes take the one-by-one path without need, never the reverse.
    """
    plain = np.array([
        ctx.edge_classifier is None and not record.slot_key and record.kind == "entry"
        for ctx, record, _ in items
    ])  # fmt: skip
    if plain.sum() < 2:  # nothing to gain over the one-by-one path
        return [False] * len(items)
    limits = np.array([_thresholds(ctx) for ctx, _, _ in items])  # (n, 2)
    opposite_at, same_at = limits[:, 0], limits[:, 1]
    floor = float(min(opposite_at.min(), same_at.min()))
    matrix = np.stack([np.asarray(v, dtype=np.float32) for _, _, v in items])
    unit = unit_rows(matrix, matrix.shape[1])
    codes: dict[str, int] = {}
    namespaces = np.array([codes.setdefault(r.namespace, len(codes)) for _, r, _ in items])
    polarity = np.array([record.polarity for _, record, _ in items])
    ruled_out = _close_to_earlier(unit, namespaces, polarity, opposite_at, same_at, floor)
    # Stored memories: one batched lookup; only the close ones are read.
    ctx0 = items[0][0]
    k = ctx0.settings.write_neighbours
    # A write that keeps duplicates is changed only by a contradiction: it needs
    # the stored memories of another polarity only.
    other_polarity = [r.polarity if c.on_duplicate == "keep" else None for c, r, _ in items]
    stored = ctx0.store.similar_many(  # with the columns compared below
        unit, k, floor, other_polarity=other_polarity
    )
    out: list[bool] = []
    for i, ((ctx, record, _), near) in enumerate(zip(items, stored, strict=True)):
        if not plain[i] or ruled_out[i]:
            out.append(False)
            continue
        if len(near) >= k and not all(_compared(ctx, record, old) for old in near):
            # The one-by-one path compares the k nearest that pass its filter;
            # some of these do not, so ones further away may count: look there.
            out.append(False)
            continue
        out.append(not any(
            old.namespace == record.namespace
            and old.cosine >= (opposite_at[i] if old.polarity != record.polarity else same_at[i])
            for old in near
        ))  # fmt: skip
    return out


#: Rows of the batch per product in the in-batch check (lower triangle, by blocks).
_PAIR_BLOCK = 256


def _close_to_earlier(
    unit: np.ndarray, namespaces: np.ndarray, polarity: np.ndarray,
    opposite_at: np.ndarray, same_at: np.ndarray, floor: float,
) -> np.ndarray:  # fmt: skip
    """For each write, whether an earlier write of the batch in its namespace is close
    enough to act on it: opposite polarity from ``opposite_at``, the same from
    ``same_at`` (its thresholds), ``floor`` the least of them.

    The products cover the lower triangle by blocks of rows, and only the pairs at
    or above ``floor`` are compared further (the whole square's comparisons took
    twice as long as its product)."""
    n = len(unit)
    if floor <= 0:  # a later write's cosine 0 would count too: the whole square
        sims = np.tril(unit @ unit.T, k=-1)
        opposite = polarity[:, None] != polarity[None, :]
        acts = np.where(opposite, sims >= opposite_at[:, None], sims >= same_at[:, None])
        return np.asarray((acts & (namespaces[:, None] == namespaces[None, :])).any(axis=1))
    ruled_out = np.zeros(n, dtype=bool)
    for start in range(0, n, _PAIR_BLOCK):
        stop = min(n, start + _PAIR_BLOCK)
        sims = unit[start:stop] @ unit[:stop].T
        at = np.flatnonzero(sims >= floor)
        row, j = np.divmod(at, stop)
        i = row + start
        earlier = j < i
        i, j, cosine = i[earlier], j[earlier], sims.ravel()[at[earlier]].astype(np.float64)
        limit = np.where(polarity[i] != polarity[j], opposite_at[i], same_at[i])
        ruled_out[i[(cosine >= limit) & (namespaces[i] == namespaces[j])]] = True
    return ruled_out


def _compared(ctx: WriteContext, record: MemoryRecord, old: Neighbour) -> bool:
    """Whether the one-by-one path's neighbour filter keeps ``old`` for ``record``."""
    return (
        old.namespace == record.namespace
        and old.kind == "entry"
        and old.superseded_by is None
        and not old.is_expired(ctx.now)
    )


def _auto_edges(
    ctx: WriteContext, record: MemoryRecord, vector: np.ndarray, skip: set[str]
) -> list[Edge]:
    assert ctx.edge_classifier is not None
    edges: list[Edge] = []
    for old, cosine in _neighbours(ctx, record, vector, record.kind):
        if old.id in skip or len(edges) >= ctx.settings.auto_edge_max:
            continue
        found = ctx.edge_classifier.classify(record, old, cosine)
        if found is None:
            continue
        kind, strength = found
        edge = Edge(new_id(), record.id, old.id, kind, strength, ctx.now, {"auto": True})
        ctx.store.add_edge(edge)
        edges.append(edge)
    return edges


def _resolve(ctx: WriteContext, record: MemoryRecord, vector: np.ndarray) -> WriteResult:
    if record.slot_key:
        existing = ctx.store.find_slot(record.namespace, record.slot_key)
        if existing is not None:
            return _update_slot(ctx, existing, record, vector)
    elif record.kind == "guide":
        merged = _merge_guide(ctx, record, vector)
        if merged is not None:
            return merged
    else:
        resolved = _resolve_entry(ctx, record, vector)
        if resolved is not None:
            return resolved
    return insert(ctx, record, vector)


def insert(ctx: WriteContext, record: MemoryRecord, vector: np.ndarray) -> WriteResult:
    ctx.store.insert(record, vector)
    record_version(ctx, record.namespace, record.id, "add", {}, snapshot(record))
    return WriteResult("added", record.id, [record.id], memory=record)


def _neighbours(
    ctx: WriteContext, record: MemoryRecord, vector: np.ndarray, kind: str
) -> list[tuple[MemoryRecord, float]]:
    flt = MemoryFilter(namespaces=[record.namespace], kinds=[kind], now=ctx.now)
    found = ctx.store.vector_search(vector, ctx.settings.write_neighbours, flt)
    records = ctx.store.get_many([memory_id for memory_id, _ in found])
    return [(records[i], cos) for i, cos in found if i in records]


def _update_slot(
    ctx: WriteContext, existing: MemoryRecord, new: MemoryRecord, vector: np.ndarray
) -> WriteResult:
    replaced = None
    if existing.content != new.content:
        replaced = {
            "content": existing.content,
            "updated_at": existing.updated_at.isoformat() if existing.updated_at else None,
            "replaced_at": ctx.now.isoformat(),
        }
    updated = replace(
        existing,
        **{f: getattr(new, f) for f in _SLOT_FIELDS},
        updated_at=ctx.now,  # the history is bounded; the versions keep every value
        metadata=bounded_history(existing.metadata, new.metadata, replaced, ctx.settings),
    )
    update_with_version(ctx, existing, updated, "slot_update", vector)
    return WriteResult("updated", existing.id, [existing.id], memory=updated)


def _merge_guide(ctx: WriteContext, record: MemoryRecord, vector: np.ndarray) -> WriteResult | None:
    for guide, cosine in _neighbours(ctx, record, vector, "guide"):
        if cosine < ctx.settings.guide_merge_threshold:
            break
        merged = replace(
            guide,
            reinforcement=guide.reinforcement + 1,
            expires_at=_later(guide.expires_at, record.expires_at),
            tags=list(dict.fromkeys([*guide.tags, *record.tags])),
        )
        update_with_version(ctx, guide, merged, "merge")
        return WriteResult("merged", guide.id, [guide.id], similarity=cosine, memory=merged)
    return None


def _resolve_entry(
    ctx: WriteContext, record: MemoryRecord, vector: np.ndarray
) -> WriteResult | None:
    s = ctx.settings
    neighbours = _neighbours(ctx, record, vector, "entry")
    for old, cosine in neighbours:  # contradictions first: negations look like duplicates
        if old.polarity != record.polarity and cosine >= s.contradiction_threshold:
            return _supersede(ctx, old, record, vector, cosine)
    if ctx.on_duplicate == "keep":
        return None
    threshold = s.dedup_threshold if ctx.on_duplicate == "reinforce" else s.near_dup_threshold
    for old, cosine in neighbours:
        if old.polarity != record.polarity or cosine < threshold:
            continue
        if ctx.on_duplicate == "reinforce":
            bumped = replace(
                old,
                reinforcement=old.reinforcement + 1,
                expires_at=_later(old.expires_at, record.expires_at),
            )
            update_with_version(ctx, old, bumped, "reinforce")
            return WriteResult("reinforced", old.id, [old.id], similarity=cosine, memory=bumped)
        return WriteResult(
            "refused", old.id, [old.id], reason="near_duplicate", similarity=cosine, memory=old
        )
    return None


def _supersede(
    ctx: WriteContext, old: MemoryRecord, new: MemoryRecord, vector: np.ndarray, cosine: float
) -> WriteResult:
    insert(ctx, new, vector)
    ctx.store.add_edge(Edge(new_id(), new.id, old.id, "supersedes", 1.0, ctx.now))
    record_version(ctx, old.namespace, old.id, "superseded", {"superseded_by": [None, new.id]})
    return WriteResult("superseded", new.id, [new.id, old.id], similarity=cosine, memory=new)


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later expiry; ``None`` (permanent) wins."""
    if a is None or b is None:
        return None
    return max(a, b)
