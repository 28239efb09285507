"""The gate: the one way from a service to the store (docs/design.md, section 2).

A :class:`Gate` holds the caller (its :class:`~memchentic.access.Principal`) and the
engine's :class:`~memchentic.engine.parts.Parts`. It owns every access decision a
service needs: what a read may see (:meth:`Gate.read_filter`), one memory the caller
may read or change (:meth:`Gate.visible`, :meth:`Gate.writable`), where a write goes
(:meth:`Gate.write_namespace`), a write's context and its events
(:meth:`Gate.write_context`, :meth:`Gate.flush`), and recall counting
(:meth:`Gate.touch`). Every store call a service makes is a named method here.

Why named methods and not a handle on the store: a handle, once handed out, can be
used for anything, so the check it came with proves nothing about the next call;
a named method states (and, where it is cheap, checks) what it needs. The checks:

- a read over a filter refuses a filter that means "every namespace"
  (``namespaces=None``, :meth:`MemoryFilter.everything`) unless the caller is the
  trusted local principal; :meth:`read_filter` builds every other filter, so a
  service cannot widen a read by forgetting a scope;
- one memory comes through :meth:`visible` / :meth:`writable` (NotFound for what
  the caller may not read, Forbidden for what it may not change), or
  :meth:`readable` / :meth:`readable_many` that drop what it may not read;
- changes of one memory (:meth:`update`, :meth:`delete`, edges) take what
  :meth:`writable` returned inside the same :meth:`write` transaction;
- whole-store jobs (:meth:`replace_vectors`, :meth:`set_meta`, :meth:`prune_events`,
  :meth:`adopt_language`, :meth:`adopt_rules`) are the trusted local principal's only.

A view for another identity (``Memory.for_identity``) is a new gate over the same
parts.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from .. import validation as check
from ..access import Principal, read_scope, scope_namespace
from ..access.directory import Directory
from ..access.namespaces import check_identifier
from ..choices import DUPLICATE_POLICIES
from ..clock import as_utc, utcnow
from ..errors import ForbiddenError, NamespaceError, NotFoundError, ValidationError
from ..graph import supersession, threads
from ..graph.consolidate import find_clusters
from ..identity import Identity
from ..lifetime import renewed_expiry, should_count_recall
from ..metadata_filter import parse as parse_filters
from ..record import Edge, MemoryRecord, Turn, Version
from ..retrieval import pipeline
from ..retrieval.profiles import Candidate
from ..store.base import MemoryFilter, StoreStats
from ..store.keywords import adopt_language, adopt_rules
from ..write.resolve import WriteContext
from .parts import Parts

T = TypeVar("T")

#: What ``on_duplicate`` (and ``DUPLICATE_POLICY``) may be.

#: A write's event: (type, namespace, memory id, payload).
PendingEvent = tuple[str, str, str, dict[str, object]]


def now_of(value: datetime | str | None) -> datetime:
    """The time a call runs at: ``now`` given (any timezone, or ISO text), else the clock."""
    return as_utc(value, "now") or utcnow()


class Gate:
    """The caller's way to the store: access decisions and the store calls services make."""

    def __init__(self, parts: Parts, principal: Principal) -> None:
        self.parts = parts
        self.principal = principal

    # --- who is calling -------------------------------------------------------------
    @property
    def actor(self) -> str:
        """The caller as versions and events name it."""
        return self.parts.access.actor(self.principal)

    @property
    def own_namespace(self) -> str | None:
        """The caller's private namespace (None for the trusted local principal)."""
        return self.parts.access.default_namespace(self.principal)

    def readable_namespaces(self, requested: Sequence[str] | None = None) -> list[str] | None:
        """The namespaces of ``requested`` the caller may read (None: every one, only
        for the trusted local principal naming none)."""
        return self.parts.access.readable(self.principal, requested)

    def can_read(self, namespace: str) -> bool:
        return self.parts.access.can_read(self.principal, namespace)

    def can_write(self, namespace: str, type_: str) -> bool:
        return self.parts.access.can_write(self.principal, namespace, type_)

    def directory(self) -> Directory:
        """Identities, groups, orgs and grants, as this principal may manage them."""
        p = self.parts
        return Directory(p.store, p.access, self.principal, p.settings)

    def find_identity(self, key: str, kind: str) -> Identity | None:
        return self.parts.store.find_identity(key, kind)

    # --- scope and access ---------------------------------------------------------------
    def read_filter(
        self,
        *,
        user_id: str | None,
        agent_id: str | None,
        namespace: str | None,
        now: datetime,
        filters: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> MemoryFilter:
        """What a read made with this scope may see. ``agent_id`` alone: that agent's
        memories in every namespace the caller may read (its own namespace, and the
        memories it wrote for users); with ``user_id``: that agent's memories and
        the user's shared ones (the same with ``namespace``). ``filters``: on metadata
        (:mod:`memchentic.metadata_filter`)."""
        if agent_id is not None and user_id is None and namespace is None:
            requested = None
            fields["by_agent"] = check_identifier("agent_id", agent_id)
        else:
            requested = read_scope(namespace=namespace, user_id=user_id, agent_id=agent_id)
        namespaces = self.readable_namespaces(requested)
        if agent_id is not None and (user_id is not None or namespace is not None):
            # that agent's memories and the agent-less (shared) ones of the namespace,
            # never another agent's: with ``namespace`` as with ``user_id`` (issue 32,
            # item 11; delete_all narrows further, to the agent's own)
            fields["agent_id"] = check_identifier("agent_id", agent_id)
        fields.setdefault("isolated", not self.principal.trusted)
        fields["metadata"] = parse_filters(filters, max_terms=self.parts.settings.filter_max_terms)
        return MemoryFilter(namespaces=namespaces, now=now, **fields)

    def _scoped(self, flt: MemoryFilter) -> MemoryFilter:
        """``flt``, unless it means every namespace and the caller is not trusted."""
        if flt.namespaces is None and not self.principal.trusted:
            raise ForbiddenError("a read of every namespace")
        return flt

    def visible(self, memory_id: str) -> MemoryRecord:
        """The memory, or NotFoundError: also when the caller may not read it."""
        record = self.parts.store.get(check.identifier(memory_id, "id"))
        if record is None or not self.can_read(record.namespace):
            raise NotFoundError(memory_id)
        return record

    def writable(self, memory_id: str) -> MemoryRecord:
        """The memory, if the caller may change it: NotFound, else ForbiddenError."""
        record = self.visible(memory_id)
        if not self.can_write(record.namespace, record.type):
            raise ForbiddenError(memory_id)
        return record

    def readable(self, memory_id: str) -> MemoryRecord | None:
        """The memory, or None when it is gone or the caller may not read it."""
        record = self.parts.store.get(memory_id)
        return record if record is not None and self.can_read(record.namespace) else None

    def readable_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """Those of ``ids`` the caller may read, by id."""
        found = self.parts.store.get_many(list(ids))
        return {i: r for i, r in found.items() if self.can_read(r.namespace)}

    def exists(self, memory_id: str) -> bool:
        """Whether a memory of that id is stored (readable or not: for ``history``)."""
        return self.parts.store.get(check.identifier(memory_id, "id")) is not None

    def write_namespace(
        self, namespace: str | None, user_id: str | None, agent_id: str | None
    ) -> str:
        """Canonical namespace of a write; an identity's default is its private one."""
        access = self.parts.access
        default = self.own_namespace
        if namespace is None and user_id is None and agent_id is None and default:
            return default
        ns = scope_namespace(
            namespace=namespace, user_id=user_id, agent_id=agent_id,
            default_user=self.parts.settings.default_user_id,
        )  # fmt: skip
        canonical = access.resolve(ns, strict=not self.principal.trusted)
        if canonical is None:  # unknown names answer like forbidden ones
            raise NamespaceError("namespace", "you cannot write to this namespace")
        return canonical

    # --- writes -----------------------------------------------------------------------
    def write(self) -> AbstractContextManager[Any]:
        """One store transaction (reads inside it see the write's own changes)."""
        return self.parts.store.write()

    def unbudgeted(self) -> AbstractContextManager[Any]:
        """Whole-store jobs are maintenance: no statement budget (STATEMENT_TIMEOUT_SECONDS)."""
        return self.parts.store.unbudgeted()

    def duplicate_policy(self, on_duplicate: Any) -> str:
        policy = on_duplicate or self.parts.settings.duplicate_policy
        if policy not in DUPLICATE_POLICIES:
            raise ValidationError("on_duplicate", "must be one of refuse, reinforce, keep")
        return policy

    def write_context(
        self,
        now: datetime,
        on_duplicate: str | None = None,
        *,
        link: bool = False,
        actor: str | None = None,
    ) -> WriteContext:
        """A write's context: the store, who writes, the duplicate policy, the resolver
        and, with ``link``, the edge classifier (``auto_edges``)."""
        p = self.parts
        return WriteContext(p.store, p.settings, actor or self.actor, now,
                            self.duplicate_policy(on_duplicate),
                            p.edge_classifier if link else None,
                            resolver=p.resolver)  # fmt: skip

    def flush(self, ctx: WriteContext, *extra: PendingEvent) -> None:
        """Emit the events of a committed write."""
        self.emit_many([*ctx.pending, *extra])
        ctx.pending.clear()

    def emit_many(self, events: Sequence[PendingEvent]) -> None:
        self.parts.bus.emit_many(self.actor, list(events))

    def emit(self, type_: str, /, *, namespace: str | None, **fields: Any) -> None:
        """One event as this caller (``memory_id``, ``along`` and the payload as for
        :meth:`memchentic.events.EventBus.emit`)."""
        self.parts.bus.emit(type_, actor=self.actor, namespace=namespace, **fields)

    def update(self, record: MemoryRecord, vector: np.ndarray | None = None) -> None:
        """Store a changed memory (one :meth:`writable` returned, in this transaction)."""
        self.parts.store.update(record, vector)

    def delete(self, record: MemoryRecord) -> None:
        """Delete a memory (one :meth:`writable` returned) and its versions."""
        self.parts.store.delete(record.id)
        self.parts.store.purge_versions(record.id)

    def insert(self, record: MemoryRecord, vector: np.ndarray) -> None:
        """A new memory with its vector (an import: the caller checked ``can_write``)."""
        if not self.can_write(record.namespace, record.type):
            raise ForbiddenError(record.id)
        self.parts.store.insert(record, vector)

    def add_edge(self, edge: Edge) -> None:
        """An edge between memories the caller may change (or imported with them)."""
        self.parts.store.add_edge(edge)

    def delete_edge(self, edge_id: str) -> bool:
        return self.parts.store.delete_edge(edge_id)

    def get_edge(self, edge_id: str) -> Edge | None:
        return self.parts.store.get_edge(edge_id)

    def add_version(self, version: Version) -> None:
        self.parts.store.add_version(version)

    def check_no_cycle(self, source: str, target: str) -> None:
        supersession.check_no_cycle(self.parts.store, source, target)

    def touch(self, records: Sequence[MemoryRecord], now: datetime) -> None:
        """Count a recall (debounced) and slide the expiry of each returned memory.

        An expired memory is left as it is: opening or listing it (``get``,
        ``include_expired=True``) neither revives it nor counts as a use; only
        ``revise`` brings it back (docs/design.md, section 6; issue 20, item 10)."""
        settings = self.parts.settings
        updates = []
        for r in records:
            if r.is_expired(now):
                continue
            if not should_count_recall(r.last_recalled_at, now, settings):
                continue
            expires = renewed_expiry(r.expires_at, r.created_at or now, now, settings)
            updates.append((r.id, r.recall_count + 1, now, expires))
        self.parts.store.touch(updates)

    # --- reads over a filter ----------------------------------------------------------------
    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, newest_first: bool = True
    ) -> builtins.list[MemoryRecord]:
        return self.parts.store.list_memories(
            self._scoped(flt), limit=limit, offset=offset, newest_first=newest_first
        )

    def iter_memories(self, flt: MemoryFilter) -> Iterator[MemoryRecord]:
        return iter(self.parts.store.iter_memories(self._scoped(flt)))

    def count(self, flt: MemoryFilter) -> int:
        return self.parts.store.count(self._scoped(flt))

    def stats(self, flt: MemoryFilter) -> StoreStats:
        return self.parts.store.stats(self._scoped(flt))

    def entity_counts(self, flt: MemoryFilter) -> dict[str, int]:
        return self.parts.store.entity_counts(self._scoped(flt))

    def by_entity(self, entity: str, flt: MemoryFilter, *, limit: int) -> list[MemoryRecord]:
        return self.parts.store.by_entity(entity, self._scoped(flt), limit=limit)

    def entity_neighbours(
        self, memory_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[tuple[str, list[str]]]:
        return self.parts.store.entity_neighbours(memory_id, self._scoped(flt), limit=limit)

    def rank(self, req: pipeline.SearchRequest) -> list[Candidate]:
        """The search pipeline's ranked candidates for ``req`` (docs/design.md, section 3)."""
        self._scoped(req.flt)
        p = self.parts
        return pipeline.run(p.store, req, p.settings, reranker=p.reranker)

    def follow(
        self,
        items: Sequence[T],
        get: Callable[[T], MemoryRecord],
        put: Callable[[T, MemoryRecord, int], T],
        flt: MemoryFilter,
        now: datetime,
    ) -> list[T]:
        """Each superseded item replaced by the tip of its chain that ``flt`` shows."""
        return supersession.follow(self.parts.store, items, get, put, self._scoped(flt), now)

    def threads(
        self,
        items: Sequence[T],
        get: Callable[[T], MemoryRecord],
        make: Callable[[T, MemoryRecord], T],
        flt: MemoryFilter,
        now: datetime,
    ) -> tuple[list[T], dict[str, threads.ThreadMark]]:
        """Each thread of ``items`` resolved, newest first (:mod:`memchentic.graph.threads`);
        members are brought in only where ``flt`` (scoped to the caller) shows them."""
        return threads.resolve(self.parts.store, items, get, make, self._scoped(flt), now)

    def replaced(self, record: MemoryRecord) -> int:
        return supersession.replaced(self.parts.store, record)

    def clusters(
        self, namespace: str, threshold: float
    ) -> list[tuple[list[MemoryRecord], dict[str, float]]]:
        """Near-duplicate clusters of a namespace the caller may change."""
        if not self.can_write(namespace, "semantic"):
            raise ForbiddenError(namespace)
        return find_clusters(self.parts.store, self.parts.settings, namespace, threshold)

    # --- one memory's neighbourhood -----------------------------------------------------
    def edges(self, memory_id: str, *, kind: str | None = None) -> list[Edge]:
        """Edges from or to a memory the caller has seen (the other ends unchecked)."""
        return self.parts.store.edges(memory_id, kind=kind)

    def find_slot(self, namespace: str, slot_key: str) -> MemoryRecord | None:
        return self.parts.store.find_slot(namespace, slot_key)

    def versions(self, memory_id: str) -> list[Version]:
        return self.parts.store.versions(memory_id)

    # --- turns ----------------------------------------------------------------------------
    def add_turn(self, turn: Turn) -> None:
        if not self.can_write(turn.namespace, "working"):
            raise NamespaceError("namespace", "you cannot write to this namespace")
        self.parts.store.add_turn(turn)

    def turns(self, session_id: str, *, namespace: str | None, limit: int) -> list[Turn]:
        """A session's last turns (``namespace`` None: of every namespace, for the
        trusted caller's reads and for ``maintain``, which checks each namespace)."""
        return self.parts.store.turns(session_id, namespace=namespace, limit=limit)

    def sessions(self, *, namespaces: Sequence[str] | None) -> list[tuple[str, int]]:
        if namespaces is None and not self.principal.trusted:
            raise ForbiddenError("the sessions of every namespace")
        return self.parts.store.sessions(namespaces=namespaces)

    # --- whole-store jobs ---------------------------------------------------------------
    def gc_candidates(self, expired_before: datetime, decay: Any) -> Iterable[MemoryRecord]:
        """Memories gc may delete; the caller checks ``can_write`` on each."""
        return self.parts.store.gc_candidates(expired_before, decay)

    def iter_edges(self) -> Iterator[Edge]:
        """Every edge (export keeps those whose ends it exported)."""
        return iter(self.parts.store.iter_edges())

    def iter_versions(self) -> Iterator[Version]:
        """Every version (export and reset keep those of memories they handled)."""
        return iter(self.parts.store.iter_versions())

    def purge_versions(self, memory_id: str) -> None:
        self.parts.store.purge_versions(memory_id)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self.parts.store.vectors(list(ids))

    @property
    def keyword_language(self) -> str:
        return getattr(self.parts.store, "keyword_language", "english")

    @property
    def keyword_rules(self) -> frozenset[str]:
        return frozenset(getattr(self.parts.store, "keyword_rules", frozenset()))

    def _trusted(self, what: str) -> None:
        if not self.principal.trusted:
            raise ValidationError("principal", f"only the trusted local principal can {what}")

    def replace_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        self._trusted("reindex")
        self.parts.store.replace_vectors(dict(vectors))

    def set_meta(self, key: str, value: str) -> None:
        self._trusted("change the store's settings")
        self.parts.store.set_meta(key, value)

    def prune_events(self, before: datetime) -> int:
        self._trusted("prune events")
        return self.parts.store.prune_events(before)

    def adopt_language(self, language: str) -> bool:
        self._trusted("choose the keyword language")
        return adopt_language(self.parts.store, language)

    def adopt_rules(self, rules: frozenset[str]) -> bool:
        self._trusted("choose the keyword rules")
        return adopt_rules(self.parts.store, rules)
