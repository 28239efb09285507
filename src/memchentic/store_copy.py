"""Copy one store into another, between backends (``memchentic migrate``).

Everything a store holds is copied through the :class:`~memchentic.store.base.Store`
interface, so any pair of backends works (SQLite to PostgreSQL and back):
memories with their vectors exactly as stored (no re-embedding), edges,
versions, identities, teams (groups and orgs), memberships, pending invitations,
grants, events and session turns, and the embedder recorded in the store.

Resumable: items are copied in batches, each batch one transaction, and items
whose id the target already holds are skipped, so an interrupted run is simply
started again. The embedder is recorded in the target last (on PostgreSQL that
builds the vector index once, over all rows). At the end every item of the
source is looked up in the target: :attr:`MigrationReport.missing` counts what
is not there (zero everywhere when the copy is complete).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import EmbedderMismatchError
from .identity import TEAM_KINDS
from .record import Event, Turn
from .store.base import MemoryFilter, Store
from .store.keywords import carry_language

#: What is copied, in order.
KINDS: tuple[str, ...] = (
    "memories", "vectors", "edges", "versions", "identities", "teams", "memberships",
    "invitations", "grants", "events", "turns",
)  # fmt: skip
#: Meta keys describing the data (others belong to the store that holds them).
COPIED_META: tuple[str, ...] = ("embedding_model", "embedding_dimension")
_EVERYTHING = MemoryFilter.everything(include_expired=True, include_superseded=True)
_ALL_TURNS = 2**31 - 1

#: ``progress(kind, done, total)`` after each batch.
Progress = Callable[[str, int, int], None]


@dataclass
class MigrationReport:
    """Per kind: items in the source, copied now, already in the target, missing after."""

    source: dict[str, int] = field(default_factory=dict)
    copied: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every item of the source is in the target."""
        return not any(self.missing.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "kinds": {
                kind: {
                    "source": self.source.get(kind, 0),
                    "copied": self.copied.get(kind, 0),
                    "skipped": self.skipped.get(kind, 0),
                    "missing": self.missing.get(kind, 0),
                }
                for kind in KINDS
            },
        }


def _events(store: Store, batch: int) -> Iterator[Event]:
    since: str | None = None
    while True:
        page = store.events(namespaces=None, since=since, limit=batch)
        yield from page
        if len(page) < batch:
            return
        since = page[-1].id


def _turns(store: Store) -> Iterator[Turn]:
    for session_id, _ in store.sessions(namespaces=None):
        yield from store.turns(session_id, namespace=None, limit=_ALL_TURNS)


def _memberships(store: Store) -> Iterator[Any]:
    for kind in TEAM_KINDS:
        for team in store.list_teams(kind):
            yield from store.members(kind, team.id)


def _keys(store: Store, batch: int) -> dict[str, set[Any]]:
    """The identity of every item a store holds, per kind (vectors: memory ids)."""
    memory_ids = {r.id for r in store.iter_memories(_EVERYTHING, batch)}
    ids = sorted(memory_ids)
    vector_ids: set[str] = set()
    for start in range(0, len(ids), batch):
        vector_ids.update(store.vectors(ids[start : start + batch]))
    return {
        "memories": memory_ids,
        "vectors": vector_ids,
        "edges": {e.id for e in store.iter_edges()},
        "versions": {(v.memory_id, v.version) for v in store.iter_versions()},
        "identities": {i.id for i in store.list_identities()},
        "teams": {(t.kind, t.id) for kind in TEAM_KINDS for t in store.list_teams(kind)},
        "memberships": {(m.team_kind, m.team_id, m.identity_id) for m in _memberships(store)},
        "invitations": {(i.team_kind, i.team_id, i.identity_id) for i in store.invitations()},
        "grants": {(g.namespace, g.grantee) for g in store.grants()},
        "events": {e.id for e in _events(store, batch)},
        "turns": {t.id for t in _turns(store)},
    }


def _check_embedders(source: Store, target: Store) -> None:
    theirs = [target.get_meta(k) for k in COPIED_META]
    ours = [source.get_meta(k) for k in COPIED_META]
    if theirs[0] is not None and ours[0] is not None and theirs != ours:
        raise EmbedderMismatchError(
            f"the target {target.location} holds vectors of {theirs[0]} (dimension "
            f"{theirs[1]}), the source {source.location} of {ours[0]} (dimension {ours[1]})"
        )


def migrate(
    source: Store, target: Store, *, batch: int = 500, progress: Progress | None = None
) -> MigrationReport:
    """Copy everything in ``source`` that ``target`` lacks; verify; report. A bulk
    copy: no statement budget on either store."""
    with source.unbudgeted(), target.unbudgeted():
        return _migrate(source, target, batch=batch, progress=progress)


def _migrate(
    source: Store, target: Store, *, batch: int, progress: Progress | None
) -> MigrationReport:
    _check_embedders(source, target)
    carry_language(source, target)  # before any memory is indexed (issue 34)
    report = MigrationReport()
    have = _keys(target, batch)
    report_progress = progress or (lambda kind, done, total: None)

    def tally(kind: str, fresh: bool) -> None:
        report.source[kind] = report.source.get(kind, 0) + 1
        bucket = report.copied if fresh else report.skipped
        bucket[kind] = bucket.get(kind, 0) + 1

    # memories and their vectors, in batches (one transaction each)
    total = source.count(_EVERYTHING)
    done = 0
    pending: list[Any] = []

    def flush() -> None:
        nonlocal done
        fresh = [r for r in pending if r.id not in have["memories"]]
        vectors = source.vectors([r.id for r in fresh])
        with target.write():
            for record in fresh:
                vector = vectors.get(record.id)
                if vector is not None:  # a row without its vector is reported missing
                    target.insert(record, vector)
                    have["memories"].add(record.id)
        copied = {r.id for r in fresh}
        for record in pending:
            tally("memories", record.id in copied)
            tally("vectors", record.id in copied)
        done += len(pending)
        pending.clear()
        report_progress("memories", done, total)

    for record in source.iter_memories(_EVERYTHING, batch):
        pending.append(record)
        if len(pending) >= batch:
            flush()
    flush()

    # the rest: small items, one transaction per batch of each kind
    steps: list[tuple[str, Iterator[Any], Callable[[Any], Any], Callable[[Any], None]]] = [
        ("edges", source.iter_edges(), lambda e: e.id, target.add_edge),
        ("versions", source.iter_versions(), lambda v: (v.memory_id, v.version),
         target.add_version),
        ("identities", iter(source.list_identities()), lambda i: i.id, target.save_identity),
        ("teams", (t for k in TEAM_KINDS for t in source.list_teams(k)),
         lambda t: (t.kind, t.id), target.save_team),
        ("memberships", _memberships(source),
         lambda m: (m.team_kind, m.team_id, m.identity_id), target.save_membership),
        ("invitations", iter(source.invitations()),
         lambda i: (i.team_kind, i.team_id, i.identity_id), target.save_invitation),
        ("grants", iter(source.grants()), lambda g: (g.namespace, g.grantee), target.save_grant),
        ("events", _events(source, batch), lambda e: e.id, target.add_event),
        ("turns", _turns(source), lambda t: t.id, target.add_turn),
    ]  # fmt: skip
    for kind, items, key_of, put in steps:
        count = 0
        chunk: list[Any] = []
        for item in items:
            chunk.append(item)
            if len(chunk) >= batch:
                count += _copy(kind, chunk, key_of, put, have, target, tally)
                report_progress(kind, count, count)
        count += _copy(kind, chunk, key_of, put, have, target, tally)
        report_progress(kind, count, count)

    with target.write():
        for key in COPIED_META:
            value = source.get_meta(key)
            if value is not None and target.get_meta(key) != value:
                target.set_meta(key, value)

    want, got = _keys(source, batch), _keys(target, batch)
    report.missing = {kind: len(want[kind] - got[kind]) for kind in KINDS}
    return report


def _copy(
    kind: str,
    chunk: list[Any],
    key_of: Callable[[Any], Any],
    put: Callable[[Any], None],
    have: dict[str, set[Any]],
    target: Store,
    tally: Callable[[str, bool], None],
) -> int:
    with target.write():
        for item in chunk:
            key = key_of(item)
            fresh = key not in have[kind]
            if fresh:
                put(item)
                have[kind].add(key)
            tally(kind, fresh)
    copied = len(chunk)
    chunk.clear()
    return copied
