"""Resolution of one write against what is stored (docs/design.md, section 4, steps 1-3).

Runs inside the store's write transaction, so the check and the write are one
atomic step for every thread and process writing the store:

1. ``slot_key`` set: the same key in the same namespace is updated in place and
   the old value moves to ``metadata["history"]``.
2. guides: nearly the same guide merges into it, ``reinforcement`` + 1.
3. entries: a resolver (:mod:`memchentic.write.resolvers`; rules by default,
   :mod:`memchentic.write.statements`) compares the new entry with its nearest
   comparable neighbours. A duplicate is refused (or, with the ``reinforce``
   policy, reinforces the stored one); an update or a contradiction supersedes the
   stored one (a ``supersedes`` edge, the old value in the new one's history).
   Records of what was said are never resolved: a write with
   ``on_duplicate="keep"``, of type ``episodic`` or with a role or speaker in its
   metadata is inserted as it is, and no entry supersedes or refuses against one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from ..access.policy import CHARTER_TYPE
from ..ids import new_id
from ..record import Edge, MemoryRecord, Version, WriteResult
from ..settings import Settings
from ..store.base import MemoryFilter, Similar, Store
from ..store.vectors import unit_rows
from .auto_edges import EdgeClassifier
from .resolvers import Decision, Resolver, RuleResolver
from .slot_history import bounded_history, metadata_changes
from .statements import Relation, Thresholds, decisive_cosines

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
    #: Decides what a new entry is to its neighbours (the rules unless configured).
    resolver: Resolver = field(default_factory=RuleResolver)

    @property
    def thresholds(self) -> Thresholds:
        """The cosines of this write's decision (:func:`thresholds`)."""
        return thresholds(self.settings, self.on_duplicate)

    def note(self, type_: str, namespace: str, memory_id: str, **payload: object) -> None:
        self.pending.append((type_, namespace, memory_id, payload))


def thresholds(settings: Settings, policy: str = "refuse") -> Thresholds:
    """The cosines a write's decision uses; the duplicate policy picks the duplicate
    one (``DEDUP_THRESHOLD`` to reinforce, else ``NEAR_DUP_THRESHOLD``)."""
    s = settings
    near = s.dedup_threshold if policy == "reinforce" else s.near_dup_threshold
    return Thresholds(near, s.contradiction_threshold, s.update_threshold)


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
    fast, close = _bulk_candidates(items)
    results: list[WriteResult] = []
    queued: list[tuple[WriteContext, MemoryRecord, np.ndarray, str | None]] = []
    #: A write resolved one by one changed something besides adding itself: the
    #: neighbours read before the window no longer say what the store holds.
    changed = False

    def drain() -> None:
        if not queued:
            return
        store.insert_many([(record, vector) for _, record, vector, _ in queued])
        store.add_versions([
            Version(record.id, 1, "add", ctx.actor, ctx.now,
                    {"rule": [None, rule]} if rule else {}, snapshot(record))
            for ctx, record, _, rule in queued
        ])  # fmt: skip
        for ctx, record, _, _ in queued:
            ctx.note("history.appended", record.namespace, record.id, version=1, op="add")
        queued.clear()

    for n, ((ctx, record, vector), bulk) in enumerate(zip(items, fast, strict=True)):
        rule: str | None = None
        if not bulk and not changed and n in close:
            bulk, rule = _added_beside(ctx, record, close[n], items, results)
        if bulk:
            queued.append((ctx, record, vector, rule))
            results.append(WriteResult("added", record.id, [record.id], reason=rule,
                                       memory=record))  # fmt: skip
            continue
        drain()
        results.append(resolve(ctx, record, vector))
        changed = changed or results[-1].status != "added"
    drain()
    return results


def is_record_of_speech(ctx: WriteContext, record: MemoryRecord) -> bool:
    """Whether the write logs what was said (``on_duplicate="keep"``, an episodic
    memory, or metadata that names its speaker: a ``role`` or ``speaker``, as
    ``record_turn`` and mem0's ``infer=False`` write): inserted as it is, never
    refused or superseding (issue 31)."""
    return ctx.on_duplicate == "keep" or record.type == EPISODIC or names_speaker(record)


def names_speaker(record: MemoryRecord) -> bool:
    """Whether ``record``'s metadata names who said it (a non-empty role or speaker)."""
    return any(
        isinstance(record.metadata.get(k), str) and record.metadata[k].strip() for k in SPEAKER_KEYS
    )


def _floor(ctx: WriteContext) -> float:
    """The cosine from which a neighbour can change this write's outcome (under it
    the resolver does not compare), less the bulk margin (:func:`_bulk_candidates`)."""
    return ctx.thresholds.floor - _BULK_MARGIN


@dataclass(frozen=True, slots=True)
class _Close:
    """A write's neighbours close enough to be compared, as the one-by-one path would
    find them: stored (live entries of its namespace, with their records) and
    earlier in the batch (index, cosine; ``full``: as many as it looks at)."""

    stored: list[tuple[MemoryRecord, float]]
    earlier: list[tuple[int, float]]
    full: bool


def _bulk_candidates(
    items: Sequence[tuple[WriteContext, MemoryRecord, np.ndarray]],
) -> tuple[list[bool], dict[int, _Close]]:
    """Which writes can be inserted without resolution (see :func:`resolve_many`),
    and for the others that are entries, their close neighbours (:func:`_added_beside`).

    Records of speech always can. Another entry can when every neighbour that the
    one-by-one path could compare it with (stored, or earlier in the batch, in its
    namespace, at or above :func:`_floor`; the ``k`` nearest of each) is another
    statement by the rules, at its cosine plus the bulk margin (the decision only
    leans to "not distinct" as the cosine grows, so the margin errs on the safe
    side). Stored neighbours are those the one-by-one search keeps (namespace,
    kind, expiry, supersession); type and speaker are not checked here, so some
    writes are not inserted this way without need, never the reverse. The others
    with close neighbours are decided by :func:`_added_beside` on the same
    neighbours as the one-by-one path, or take that path.
    """
    plain = [
        ctx.edge_classifier is None and not record.slot_key and record.kind == "entry"
        for ctx, record, _ in items
    ]  # fmt: skip
    free = [p and is_record_of_speech(ctx, r) for p, (ctx, r, _) in zip(plain, items, strict=True)]
    checked = [p and not f for p, f in zip(plain, free, strict=True)]
    if sum(plain) < 2:  # nothing to gain over the one-by-one path
        return [False] * len(items), {}
    if not any(checked):
        return free, {}
    # every earlier write counts as a neighbour; only the checked ones can be ruled out
    limits = np.array(
        [_floor(ctx) if c else np.inf for (ctx, _, _), c in zip(items, checked, strict=True)]
    )
    floor = float(limits.min())
    matrix = np.stack([np.asarray(v, dtype=np.float32) for _, _, v in items])
    unit = unit_rows(matrix, matrix.shape[1])
    codes: dict[str, int] = {}
    namespaces = np.array([codes.setdefault(r.namespace, len(codes)) for _, r, _ in items])
    ctx0 = items[0][0]
    k = ctx0.settings.write_neighbours
    earlier = _earlier_neighbours(unit, namespaces, limits, floor, k)
    # Stored memories: one batched lookup of the checked writes; only the close ones are read.
    rows = [int(n) for n in np.flatnonzero(checked)]
    fetch = 2 * k  # room for neighbours its filter leaves out (expired, superseded)
    close: dict[int, list[tuple[str, float]]] = {}  # row -> stored (id, cosine) to compare
    for _ in range(_LOOKUPS):
        stored = ctx0.store.similar_many(unit[np.asarray(rows, dtype=np.intp)], fetch, floor)
        short: list[int] = []
        for n, near in zip(rows, stored, strict=True):
            ctx, record, _ = items[n]
            kept = sorted((old for old in near if _compared(ctx, record, old)),
                          key=lambda old: -old.cosine)  # fmt: skip
            if len(near) >= fetch and len(kept) < k:
                # The one-by-one path compares the k nearest that pass its filter;
                # fewer of these do, so ones further away may count: look further
                # (in a conversation older turns expire: MEMORY_DEFAULT_TTL_DAYS).
                short.append(n)
                continue
            close[n] = [(old.id, old.cosine) for old in kept[:k] if old.cosine >= limits[n]]
        if not short:
            break
        rows, fetch = short, fetch * _LOOK_FURTHER  # the last ones left take the one-by-one path
    texts = ctx0.store.get_many(sorted({i for pairs in close.values() for i, _ in pairs}))
    out = list(free)
    found: dict[int, _Close] = {}
    for n, pairs in close.items():
        ctx, record, _ = items[n]
        if any(i not in texts for i, _ in pairs):
            continue  # gone meanwhile: let the one-by-one path look
        in_batch = earlier.get(n, [])
        out[n] = not pairs and not in_batch  # nothing it could be compared with is close
        if not out[n]:
            found[n] = _Close([(texts[i], cos) for i, cos in pairs], in_batch, len(in_batch) >= k)
    return out, found


#: Batched lookups of stored neighbours at most, each ``_LOOK_FURTHER`` times as deep as
#: the one before, for the writes whose nearest were mostly left out by the filter.
_LOOKUPS = 3
_LOOK_FURTHER = 4


def _added_beside(
    ctx: WriteContext,
    record: MemoryRecord,
    close: _Close,
    items: Sequence[tuple[WriteContext, MemoryRecord, np.ndarray]],
    results: Sequence[WriteResult],
) -> tuple[bool, str | None]:
    """Whether the rules add ``record`` beside its close neighbours, and the rule that
    names it (issue 31, item 7), decided on the neighbours the one-by-one path would
    compare it with; ``(False, None)`` where that is not certain (it takes that path).

    Certain when the rules are the resolver, nothing but additions came before it
    in the window (the caller's ``changed``), every earlier write it is close to was
    added (or fewer than ``k`` are close), and no two neighbours' cosines, nor one
    and a threshold of the decision, are so near that another computation of the
    cosine could order or decide them otherwise."""
    if type(ctx.resolver) is not RuleResolver:
        return False, None
    earlier = [
        (items[j][1], cos) for j, cos in close.earlier
        if results[j].status == "added" and items[j][1].kind == "entry"
        and not items[j][1].is_expired(ctx.now)
    ]  # fmt: skip
    if close.full and len(earlier) < len(close.earlier):
        return False, None  # one further away may count: the one-by-one path looks
    k = ctx.settings.write_neighbours
    ranked = sorted([*close.stored, *earlier], key=lambda pair: -pair[1])
    neighbours = [(old, cos) for old, cos in ranked[:k] if comparable(old, record)]
    edges = decisive_cosines(ctx.thresholds)
    if (
        _tied(ranked, k - 1)  # which are the k nearest
        or _tied(neighbours, 0)  # which is the nearest (its rule names the write's)
        or any(abs(cos - edge) < _TIE for _, cos in neighbours for edge in edges)
    ):
        return False, None
    decision = ctx.resolver.decide(record, neighbours, ctx.thresholds)
    if decision.target is not None or decision.relation is not Relation.DISTINCT:
        return False, None
    if threads_with(decision):
        return False, None  # the one-by-one path keeps the thread's link
    return True, decision.rule


#: Cosines closer than this may compare either way when computed another way
#: (float32 sums in another order): such a write takes the one-by-one path.
_TIE = 1e-4


def _tied(ranked: Sequence[tuple[MemoryRecord, float]], at: int) -> bool:
    """Whether the ``at``-th and the next of ``ranked`` may rank the other way."""
    return at + 1 < len(ranked) and ranked[at][1] - ranked[at + 1][1] < _TIE


#: Rows of the batch per product in the in-batch check (lower triangle, by blocks).
_PAIR_BLOCK = 256


def _earlier_neighbours(
    unit: np.ndarray, namespaces: np.ndarray, limits: np.ndarray, floor: float, k: int
) -> dict[int, list[tuple[int, float]]]:
    """For each write, the ``k`` nearest earlier writes of the batch in its namespace
    at or above its limit (``limits``; ``floor`` the least of them), nearest first.

    The products cover the lower triangle by blocks of rows, and only the pairs at
    or above ``floor`` are compared further (the whole square's comparisons took
    twice as long as its product)."""
    n = len(unit)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for start in range(0, n, _PAIR_BLOCK):
        stop = min(n, start + _PAIR_BLOCK)
        sims = unit[start:stop] @ unit[:stop].T
        at = np.flatnonzero(sims >= floor)
        row, j = np.divmod(at, stop)
        i = row + start
        earlier = j < i
        i, j, cosine = i[earlier], j[earlier], sims.ravel()[at[earlier]].astype(np.float64)
        keep = (cosine >= limits[i]) & (namespaces[i] == namespaces[j])
        parts.append((i[keep], j[keep], cosine[keep]))
    i, j, cosine = (np.concatenate(p) for p in zip(*parts, strict=True))
    if not len(i):
        return {}
    order = np.lexsort((-cosine, i))  # by write, nearest first
    i, j, cosine = i[order], j[order], cosine[order]
    starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]])
    rank = np.arange(len(i)) - np.repeat(starts, np.diff(np.r_[starts, len(i)]))
    found: dict[int, list[tuple[int, float]]] = {}
    for a, b, c in zip(*(x[rank < k].tolist() for x in (i, j, cosine)), strict=True):
        found.setdefault(a, []).append((b, c))
    return found


def _compared(ctx: WriteContext, record: MemoryRecord, old: Similar) -> bool:
    """Whether the one-by-one path's neighbour search keeps ``old`` for ``record``
    (the search's filter; :func:`comparable` looks further, at the records)."""
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


def insert(
    ctx: WriteContext, record: MemoryRecord, vector: np.ndarray, rule: str | None = None
) -> WriteResult:
    """Store ``record``; ``rule`` is the rule that decided to add it beside a close
    neighbour (kept in the result's reason and in the first version)."""
    ctx.store.insert(record, vector)
    changes: dict[str, list[object]] = {"rule": [None, rule]} if rule else {}
    record_version(ctx, record.namespace, record.id, "add", changes, snapshot(record))
    return WriteResult("added", record.id, [record.id], reason=rule, memory=record)


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
        if (guide.type == CHARTER_TYPE) != (record.type == CHARTER_TYPE):
            continue  # a charter changes only through its slot (``comparable``)
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
    if is_record_of_speech(ctx, record):
        return None
    neighbours = [
        (old, cosine)
        for old, cosine in _neighbours(ctx, record, vector, "entry")
        if comparable(old, record)
    ]
    decision = ctx.resolver.decide(record, neighbours, ctx.thresholds)
    old, cosine = decision.target, decision.cosine
    if old is None or decision.relation is Relation.DISTINCT:
        if not decision.rule:
            return None
        result = insert(ctx, record, vector, decision.rule)
        _link_thread(ctx, record, decision)
        return result
    if decision.relation is not Relation.DUPLICATE:
        return _supersede(ctx, old, record, vector, decision)
    rule = decision.rule or "duplicate:paraphrase"
    if ctx.on_duplicate == "reinforce":
        bumped = replace(
            old,
            reinforcement=old.reinforcement + 1,
            expires_at=_later(old.expires_at, record.expires_at),
        )
        ctx.store.update(bumped, None)
        record_version(ctx, old.namespace, old.id, "reinforce",
                       {**diff(old, bumped), "rule": [None, rule]})  # fmt: skip
        return WriteResult(
            "reinforced", old.id, [old.id], reason=rule, similarity=cosine, memory=bumped
        )
    return WriteResult("refused", old.id, [old.id], reason=rule, similarity=cosine, memory=old)


#: Metadata keys that name who said something: entries of different speakers or
#: roles never supersede or refuse each other (a reply does not replace the turn
#: it answers).
SPEAKER_KEYS = ("role", "speaker")
EPISODIC = "episodic"


def comparable(old: MemoryRecord, new: MemoryRecord) -> bool:
    """Whether ``new`` may be refused against, or supersede, ``old``: not a record of
    speech, valid at a time when ``new`` is, said by the same speaker (role,
    speaker and agent, where both say), and both or neither a group's charter."""
    if old.type == EPISODIC or names_speaker(old):
        return False  # a logged turn: nothing refuses against it or supersedes it
    if (old.type == CHARTER_TYPE) != (new.type == CHARTER_TYPE):
        return False  # a charter changes only through its slot, by those who may write it
    if old.valid_to is not None and new.valid_from is not None and old.valid_to <= new.valid_from:
        return False  # it held until the new one begins: both stay true in their time
    if old.agent_id and new.agent_id and old.agent_id != new.agent_id:
        return False
    for key in SPEAKER_KEYS:
        a, b = old.metadata.get(key), new.metadata.get(key)
        if a is not None and b is not None and a != b:
            return False
    return True


#: How sure the rules must be that an added entry is a new value of a neighbour's
#: attribute for the write to keep the link (a ``contradicts`` edge, read as a
#: thread: :mod:`memchentic.graph.threads`).
THREAD_LINK_MIN = 0.5


def threads_with(decision: Decision) -> bool:
    """Whether an added entry is linked to ``decision.related`` as its newer value."""
    return decision.related is not None and decision.thread >= THREAD_LINK_MIN


def _link_thread(ctx: WriteContext, record: MemoryRecord, decision: Decision) -> None:
    """Keep the link between an added entry and the neighbour whose attribute it
    probably gives a new value of: a ``contradicts`` edge, new -> old, with the
    rule that found it; its strength is how sure the rule was."""
    old = decision.related
    if old is None or not threads_with(decision):
        return
    strength = round(min(1.0, max(0.0, decision.thread)), 4)
    ctx.store.add_edge(Edge(new_id(), record.id, old.id, "contradicts", strength, ctx.now,
                            {"thread": True, "rule": decision.thread_rule or decision.rule,
                             "by": decision.by}))  # fmt: skip


def _supersede(
    ctx: WriteContext, old: MemoryRecord, new: MemoryRecord, vector: np.ndarray,
    decision: Decision,
) -> WriteResult:  # fmt: skip
    """``new`` replaces ``old``: inserted with the old value in its history, a
    ``supersedes`` edge, and a version of the old one saying so."""
    replaced = {
        "content": old.content,
        "id": old.id,
        "updated_at": old.updated_at.isoformat() if old.updated_at else None,
        "replaced_at": ctx.now.isoformat(),
    }
    past = {"history": old.metadata.get("history", [])}
    new.metadata = bounded_history(past, new.metadata, replaced, ctx.settings)
    rule = decision.rule or decision.relation.value
    insert(ctx, new, vector, rule)
    ctx.store.add_edge(Edge(new_id(), new.id, old.id, "supersedes", 1.0, ctx.now,
                            {"reason": decision.relation.value, "rule": rule,
                             "by": decision.by}))  # fmt: skip
    record_version(ctx, old.namespace, old.id, "superseded",
                   {"superseded_by": [None, new.id], "rule": [None, rule]})  # fmt: skip
    return WriteResult("superseded", new.id, [new.id, old.id], reason=rule,
                       similarity=decision.cosine, memory=new)  # fmt: skip


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later expiry; ``None`` (permanent) wins."""
    if a is None or b is None:
        return None
    return max(a, b)
