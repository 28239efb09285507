"""The store's engine-facing API: what the engine, the server, backup and
``store_copy`` call on a store.

A backend does not implement all of it: :class:`~.sql_store.SqlStore` answers most
of it once, from parts composed from the backend, and leaves a narrow contract
(docs/backends.md). A store keeps rows, vectors, the keyword index, edges,
versions, entities, the directory, events and turns, API keys and console sessions.
It never decides access: callers pass a :class:`MemoryFilter` whose
``namespaces`` the access module computed. Write paths that check and then
write run inside :meth:`Store.write`, which serialises writers of one store
(across threads and processes), so two writers of the same fact never both
insert.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import numpy as np

from ..identity import Grant, Identity, Invitation, Membership, Team
from ..lifetime import DecayScan
from ..record import Edge, Event, MemoryRecord, Turn, Version
from .access_tables import KeyRow, SessionRow
from .filters import MemoryFilter
from .integrity import generic_check


class RankRow(NamedTuple):
    """The columns a ranking bound and conversation context need (see
    ``retrieval.pipeline``), read for every candidate before the few whole records
    that can rank are loaded."""

    session_id: str | None
    updated_at: datetime | None
    kind: str
    type: str
    reinforcement: int
    recall_count: int
    path_hint: str | None
    #: Where the memory lies in its session (what conversation context reads).
    namespace: str
    created_at: datetime | None
    #: The stored vector, when a stage read it with the row (keyword stages do:
    #: their hits' cosines with the query are needed, and this saves a lookup).
    vector: np.ndarray | None = None
    #: Or the stored vector's cosine with the query, when a stage computed it
    #: where the vector lies (PostgreSQL: the vector need not travel).
    cosine: float | None = None


class Similar(NamedTuple):
    """A stored memory close to a vector (:meth:`Store.similar_many`), with the
    columns the bulk write check reads of it: no whole record is loaded."""

    id: str
    cosine: float
    namespace: str
    kind: str
    polarity: int
    superseded_by: str | None
    expires_at: datetime | None

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def similar(record: MemoryRecord, cosine: float) -> Similar:
    """A loaded record as a :class:`Similar`."""
    return Similar(
        record.id, cosine, record.namespace, record.kind, record.polarity,
        record.superseded_by, record.expires_at,
    )  # fmt: skip


def stored_cosines(vectors: Sequence[np.ndarray], query: np.ndarray) -> list[float]:
    """Float32 cosine of each of ``vectors`` with ``query`` (0-norm rows give 0).
    Every cosine of a stored vector outside the vector stage is computed here."""
    matrix = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    norms[norms == 0] = 1.0
    return (np.einsum("ij,j->i", matrix, q) / norms).tolist()


#: Where a memory lies in its session: (namespace, session_id, created_at).
SessionPoint = tuple[str, str, datetime]
#: Rows of one session passing a filter, in order: (id, created_at).
SessionLine = list[tuple[str, datetime]]


def session_windows(
    points: Iterable[SessionPoint], reach: timedelta
) -> list[tuple[str, str, datetime, datetime]]:
    """For each namespace and session of ``points``: the times within ``reach`` of
    one of its points, as closed intervals that do not overlap (so a read of each
    reads no row twice), clamped to the times a ``datetime`` holds."""
    times: dict[tuple[str, str], list[datetime]] = {}
    for namespace, session, created in points:
        times.setdefault((namespace, session), []).append(created)
    windows = []
    for (namespace, session), found in times.items():
        found.sort()
        first = last = found[0]
        for when in found[1:]:
            if when - last > 2 * reach:
                windows.append((namespace, session, _shift(first, -reach), _shift(last, reach)))
                first = when
            last = when
        windows.append((namespace, session, _shift(first, -reach), _shift(last, reach)))
    return windows


def _shift(when: datetime, delta: timedelta) -> datetime:
    try:
        return when + delta
    except OverflowError:
        return (datetime.min if delta < timedelta(0) else datetime.max).replace(tzinfo=UTC)


#: Rows :meth:`Store.session_lines`' default reads a query.
_PAGE = 2000
_TICK = timedelta(microseconds=1)


@dataclass(slots=True)
class StoreStats:
    memories: int
    live: int
    expired: int
    superseded: int
    edges: int
    versions: int
    vectors: int
    by_namespace: dict[str, int]
    by_type: dict[str, int]
    by_kind: dict[str, int]
    size_bytes: int
    schema_version: int
    embedder: str | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]


class Store(ABC):
    """Storage for memories: the API callers type against. Backends subclass
    :class:`~.sql_store.SqlStore`, which implements it on top of their contract."""

    #: How the store was opened (a path or a URL).
    location: str

    # --- lifecycle and metadata ---------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None: ...

    @abstractmethod
    def schema_version(self) -> int: ...

    @abstractmethod
    def write(self) -> AbstractContextManager[None]:
        """A write transaction that excludes every other writer of this store."""

    def concurrent_reads(self) -> bool:
        """Whether reads may run on other threads at this moment, each on its own
        connection, and see what this thread would (a server database's pool,
        outside a transaction of this thread). The search then runs its keyword
        and vector stages at once. In-process stores say no: their stages share
        this process's CPU and gain nothing."""
        return False

    # --- memories -----------------------------------------------------------------
    def insert(self, record: MemoryRecord, vector: np.ndarray) -> None:
        self.insert_many([(record, vector)])

    @abstractmethod
    def insert_many(self, items: Sequence[tuple[MemoryRecord, np.ndarray]]) -> None:
        """Insert new rows with their vectors in one transaction (bulk writes: one
        statement per table)."""

    @abstractmethod
    def update(self, record: MemoryRecord, vector: np.ndarray | None = None) -> None:
        """Replace the stored row of ``record.id``; a new vector when given."""

    @abstractmethod
    def delete(self, memory_id: str) -> bool:
        """Remove the row, its vector, keyword entry, edges and entities."""

    @abstractmethod
    def get(self, memory_id: str) -> MemoryRecord | None: ...

    @abstractmethod
    def get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]: ...

    def rank_rows(self, ids: Sequence[str], *, vectors: bool = False) -> dict[str, RankRow]:
        """:class:`RankRow` of each id found (backends read just those columns); with
        ``vectors``, with its stored vector (``RankRow.vector``)."""
        stored = self.vectors(ids) if vectors else {}
        return {
            r.id: RankRow(r.session_id, r.updated_at, r.kind, r.type, r.reinforcement,
                          r.recall_count, r.path_hint, r.namespace, r.created_at,
                          stored.get(r.id))
            for r in self.get_many(ids).values()
        }  # fmt: skip

    @abstractmethod
    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def similarities(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Cosine of ``vector`` with each stored memory of ``ids`` (those found)."""
        found = self.vectors(ids)
        if not found:
            return {}
        return dict(zip(found, stored_cosines(list(found.values()), vector), strict=True))

    @abstractmethod
    def find_slot(self, namespace: str, slot_key: str) -> MemoryRecord | None: ...

    @abstractmethod
    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, newest_first: bool = True
    ) -> list[MemoryRecord]: ...

    @abstractmethod
    def count(self, flt: MemoryFilter) -> int: ...

    def session_lines(
        self, points: Sequence[SessionPoint], flt: MemoryFilter, reach: timedelta
    ) -> list[SessionLine]:
        """The rows around ``points`` in their sessions, one line a session: for each
        namespace and session of ``points`` (``session_id`` not empty), the
        ``(id, created_at)`` of rows of that namespace and session that pass
        ``flt``, in ``(created_at, id)`` order: every one created within ``reach`` of
        one of its points, and maybe others.

        The search's conversation context (``retrieval.context``) finds each
        candidate's previous and next memory in these lines. Backends read ids and
        times along an index on (namespace, session_id, created_at, id); this
        default reads the windows (:func:`session_windows`) with
        :meth:`list_memories`."""
        lines: dict[tuple[str, str], list[tuple[datetime, str]]] = {}
        for namespace, session, lo, hi in session_windows(points, reach):
            if not session or (flt.namespaces is not None and namespace not in flt.namespaces):
                continue
            after = lo if flt.created_after is None else max(lo, flt.created_after)
            before = hi + _TICK if hi < datetime.max.replace(tzinfo=UTC) else None
            if flt.created_before is not None:
                before = flt.created_before if before is None else min(before, flt.created_before)
            window = replace(flt, namespaces=[namespace], created_after=after,
                             created_before=before)  # fmt: skip
            line = lines.setdefault((namespace, session), [])
            offset = 0
            while True:
                page = self.list_memories(window, limit=_PAGE, offset=offset, newest_first=False)
                line += [(r.created_at, r.id) for r in page
                         if r.session_id == session and r.created_at is not None]  # fmt: skip
                offset += len(page)
                if len(page) < _PAGE:
                    break
        return [[(i, t) for t, i in sorted(line)] for line in lines.values() if line]

    @abstractmethod
    def touch(self, updates: Sequence[tuple[str, int, datetime, datetime | None]]) -> None:
        """Record recalls: (id, recall_count, last_recalled_at, expires_at) per row."""

    # --- candidates ---------------------------------------------------------------
    @abstractmethod
    def vector_search(
        self,
        vector: np.ndarray,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest rows passing ``flt``: (id, cosine), best first.

        ``rows``, when given, may receive the :class:`RankRow` of hits whose row
        the search read anyway (the search pipeline then asks :meth:`rank_rows`
        only for the others); a backend may leave it untouched."""

    def similar_many(
        self,
        vectors: np.ndarray,
        k: int,
        min_cosine: float,
    ) -> list[list[Similar]]:
        """For each row of ``vectors``: up to ``k`` stored memories (any namespace,
        kind or state) with cosine >= ``min_cosine``, best first, each with the
        columns of :class:`Similar`.

        The bulk write path asks this once per batch to find the new memories
        that need no resolution (nothing stored is close to them). Backends may
        answer from an approximate index (cosines within about 0.01), so callers
        pass a threshold with a margin.
        """
        flt = MemoryFilter.everything(include_expired=True, include_superseded=True)
        found = [
            [(i, c) for i, c in self.vector_search(v, k, flt) if c >= min_cosine]
            for v in np.asarray(vectors, dtype=np.float32)
        ]
        rows = self.get_many([i for hits in found for i, _ in hits])
        return [[similar(rows[i], c) for i, c in hits if i in rows] for hits in found]

    @abstractmethod
    def keyword_search(
        self,
        query: str,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
        *,
        query_vector: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` best keyword matches passing ``flt``: (id, relevance), best first.
        Query text is matched as plain words; it can never raise a syntax error.
        ``rows`` as for :meth:`vector_search`; with ``query_vector``, a backend may
        give each hit's cosine with it (``RankRow.cosine``) instead of its vector."""

    @abstractmethod
    def term_stats(self, query: str) -> tuple[list[tuple[str, str]], dict[str, int], int]:
        """Keyword statistics for the hybrid profile:
        ([(word, index term)], {index term: document frequency}, document count)."""

    @abstractmethod
    def index_terms(self, text: str) -> list[str]:
        """``text`` as the keyword index sees it (normalised, stemmed terms)."""

    # --- graph, versions, entities ------------------------------------------------
    @abstractmethod
    def add_edge(self, edge: Edge) -> None: ...

    @abstractmethod
    def edges(self, memory_id: str, *, kind: str | None = None) -> list[Edge]: ...

    @abstractmethod
    def delete_edge(self, edge_id: str) -> bool: ...

    def edges_among(
        self, memory_ids: Sequence[str], *, kind: str, limit: int | None = None
    ) -> list[Edge]:
        """Edges of ``kind`` with an end in ``memory_ids``, each once, newest first, at
        most ``limit`` (SQL backends answer in one statement)."""
        found: dict[str, Edge] = {}
        for memory_id in dict.fromkeys(memory_ids):
            for edge in self.edges(memory_id, kind=kind):
                found.setdefault(edge.id, edge)
        newest = sorted(found.values(), key=lambda e: (e.created_at, e.id), reverse=True)
        return newest if limit is None else newest[:limit]

    def get_edge(self, edge_id: str) -> Edge | None:
        """One edge by id (backends may answer faster than this scan)."""
        return next((e for e in self.iter_edges() if e.id == edge_id), None)

    def add_version(self, version: Version) -> None:
        self.add_versions([version])

    @abstractmethod
    def add_versions(self, versions: Sequence[Version]) -> None:
        """Append several versions in one transaction."""

    @abstractmethod
    def versions(self, memory_id: str) -> list[Version]: ...

    @abstractmethod
    def next_version(self, memory_id: str) -> int: ...

    @abstractmethod
    def purge_versions(self, memory_id: str) -> None:
        """Drop every version of a memory (their snapshots hold its content)."""

    @abstractmethod
    def by_entity(self, entity: str, flt: MemoryFilter, *, limit: int) -> list[MemoryRecord]:
        """Memories naming ``entity`` (case-insensitive), newest first."""

    @abstractmethod
    def entity_counts(self, flt: MemoryFilter) -> dict[str, int]: ...

    # --- directory: identities, teams, memberships, grants (access decides, not us) ---
    @abstractmethod
    def save_identity(self, identity: Identity) -> None:
        """Insert, or update the name of, an identity."""

    @abstractmethod
    def find_identity(self, key: str, kind: str | None = None) -> Identity | None:
        """By id first, then by name (of ``kind`` when given)."""

    @abstractmethod
    def list_identities(self, kind: str | None = None) -> list[Identity]: ...

    @abstractmethod
    def save_team(self, team: Team) -> None: ...

    @abstractmethod
    def find_team(self, kind: str, key: str) -> Team | None:
        """By id first, then by name."""

    @abstractmethod
    def list_teams(self, kind: str) -> list[Team]: ...

    @abstractmethod
    def save_membership(self, membership: Membership) -> None: ...

    @abstractmethod
    def delete_membership(self, team_kind: str, team_id: str, identity_id: str) -> bool: ...

    @abstractmethod
    def members(self, team_kind: str, team_id: str) -> list[Membership]: ...

    @abstractmethod
    def memberships_of(self, identity_id: str) -> list[tuple[Team, Membership]]: ...

    @abstractmethod
    def save_invitation(self, invitation: Invitation) -> None:
        """Insert, or replace the role and inviter of, a pending invitation."""

    @abstractmethod
    def delete_invitation(self, team_kind: str, team_id: str, identity_id: str) -> bool: ...

    @abstractmethod
    def invitations(
        self, *, identity_id: str | None = None, team: tuple[str, str] | None = None,
        team_kind: str | None = None, invited_by: str | None = None, limit: int | None = None,
        offset: int = 0,
    ) -> list[Invitation]:  # fmt: skip
        """Pending invitations (of one identity, to one ``(kind, id)`` team or teams of
        one kind, sent by one identity), with ``team_name`` filled in, oldest first;
        ``limit`` rows from ``offset`` (None: all)."""

    @abstractmethod
    def save_grant(self, grant: Grant) -> None: ...

    @abstractmethod
    def delete_grant(self, namespace: str, grantee: str) -> bool: ...

    @abstractmethod
    def grants(
        self, *, namespace: str | None = None, grantee: str | None = None
    ) -> list[Grant]: ...

    # --- API keys and console sessions (access.keys decides what they mean) -----------
    @abstractmethod
    def save_api_key(self, key: KeyRow) -> None:
        """Insert a key (its digest is new: the hash of a random key)."""

    @abstractmethod
    def api_keys(self) -> list[KeyRow]:
        """Every key, oldest first."""

    @abstractmethod
    def api_key(self, digest: str) -> KeyRow | None:
        """The key whose SHA-256 is ``digest``, or None."""

    @abstractmethod
    def delete_api_keys(self, key_id: str) -> int:
        """Delete the keys whose id is ``key_id``; how many there were."""

    @abstractmethod
    def save_console_session(self, session: SessionRow) -> None:
        """Insert a session, or replace the one of its digest."""

    @abstractmethod
    def console_sessions(self) -> list[SessionRow]:
        """Every console session, oldest first."""

    @abstractmethod
    def console_session(self, digest: str) -> SessionRow | None: ...

    @abstractmethod
    def delete_console_sessions(self, digests: Sequence[str]) -> int:
        """Delete the sessions of ``digests``; how many there were."""

    # --- graph neighbourhood ---------------------------------------------------------
    @abstractmethod
    def entity_neighbours(
        self, memory_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[tuple[str, list[str]]]:
        """Other memories passing ``flt`` that share an entity with ``memory_id``:
        (id, shared entity names), most shared first."""

    # --- events and short-term memory ------------------------------------------------
    def add_event(self, event: Event) -> None:
        self.add_events([event])

    @abstractmethod
    def add_events(self, events: Sequence[Event]) -> None:
        """Append several events, in order, in one transaction."""

    @abstractmethod
    def events(
        self,
        *,
        namespaces: Sequence[str] | None,
        since: str | None = None,
        types: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[Event]:
        """Events after the event id ``since``, oldest first. Events without a
        namespace are visible only when ``namespaces`` is None (trusted)."""

    @abstractmethod
    def prune_events(self, before: datetime) -> int: ...

    @abstractmethod
    def add_turn(self, turn: Turn) -> None: ...

    @abstractmethod
    def turns(self, session_id: str, *, namespace: str | None, limit: int) -> list[Turn]:
        """The last ``limit`` turns of a session, oldest first."""

    @abstractmethod
    def sessions(self, *, namespaces: Sequence[str] | None) -> list[tuple[str, int]]:
        """(session id, number of turns) of the visible sessions."""

    # --- maintenance ----------------------------------------------------------------
    @abstractmethod
    def stats(self, flt: MemoryFilter) -> StoreStats: ...

    @abstractmethod
    def iter_memories(self, flt: MemoryFilter, batch: int = 500) -> Iterator[MemoryRecord]: ...

    @abstractmethod
    def iter_edges(self) -> Iterator[Edge]: ...

    @abstractmethod
    def iter_versions(self) -> Iterator[Version]: ...

    @abstractmethod
    def replace_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        """Overwrite stored vectors (re-embedding)."""

    @abstractmethod
    def gc_candidates(
        self, expired_before: datetime, decay: DecayScan | None
    ) -> list[MemoryRecord]:
        """Rows expired before ``expired_before``, and non-permanent unpinned rows
        whose last use (update or recall) is at least ``decay.days_per_confidence x
        (confidence - decay.floor)`` days before ``decay.now`` (those that may have
        decayed under the floor; the caller checks each exactly)."""

    # --- integrity and backup (not abstract: every backend gets these defaults) -------
    def check(self) -> dict[str, Any]:
        """Verify the store: schema version, whole rows, one vector per memory, the
        keyword and vector indexes, orphan edges, versions and entity links.

        Returns :meth:`memchentic.store.integrity.IntegrityReport.to_dict` (the
        shape and check names are documented in that module): ``ok`` is False when
        any check failed, ``problems`` has one line per problem. This default runs
        the checks the interface allows (the rest are ``skipped``); backends
        override it to also check their indexes and database.
        """
        with self.snapshot():
            return generic_check(self).to_dict()

    @contextmanager
    def unbudgeted(self) -> Iterator[None]:
        """This thread's statements inside the block run without the time budget
        (``STATEMENT_TIMEOUT_SECONDS``): for maintenance (gc, reindex, imports,
        copies). This default does nothing; both backends override it."""
        yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads of this thread inside the block see one committed state of the
        store (for consistent exports and checks); no writes inside the block.
        This default holds :meth:`write`, so writers wait; backends may override it
        with a snapshot that does not block them."""
        with self.write():
            yield
