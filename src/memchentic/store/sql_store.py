"""The store every SQL backend is: the engine-facing API of :class:`~.base.Store`,
answered once by shared parts composed from the backend, on top of the narrow
contract a backend implements (docs/backends.md).

A backend is a dialect (:class:`~.dialect.Dialect`: parameter markers, date
arithmetic, JSON, lists of values), a connection host (connections, transactions
and :meth:`~.base.Store.write`, the statement budget, the four SQL primitives of
:class:`~.tables.SqlHost`) and its search stages (keyword and vector). It
subclasses :class:`SqlStore` and implements the abstract methods left here
(``SqlStore.__abstractmethods__``; a test keeps them at most 28). Everything else
the engine calls is a method of a part, built from the store as its host, in the
SQL both engines read alike: :class:`~.tables.MetaTable`,
:class:`~.memory_tables.MemoryTables` (memories, edges, versions, entities,
statistics, gc), :class:`~.tables.DirectoryTables`, :class:`~.tables.LogTables`
(events and turns) and :class:`~.access_tables.AccessTables` (API keys and console
sessions).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from functools import cached_property
from typing import Any, NamedTuple

from .access_tables import AccessTables
from .base import MemoryFilter, Store
from .dialect import Dialect
from .memory_tables import MemoryTables
from .tables import DirectoryTables, LogTables, MetaTable


class Parts(NamedTuple):
    """The shared parts of a :class:`SqlStore`."""

    meta: MetaTable
    memories: MemoryTables
    directory: DirectoryTables
    logs: LogTables
    keys: AccessTables


class _Answered:
    """A method of the store that one of its parts answers: ``name = _Answered("part")``
    gives ``store.name`` as the part's method of that name (bound to the part, so a
    call costs two attribute lookups more than a method of the store's own)."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, store: Any, owner: type | None = None) -> Any:
        if store is None:
            return self
        return getattr(getattr(store._parts, self.part), self.name)


def _answered(part: str, count: int) -> tuple[Any, ...]:
    """``count`` methods answered by ``part``, for a tuple assignment in a class body
    (each gets its own :class:`_Answered`, named by the class)."""
    return tuple(_Answered(part) for _ in range(count))


class SqlStore(Store):
    """A :class:`~.base.Store` over SQL: the shared parts, composed from this store
    (its dialect and primitives), answer the engine; the backend implements the
    abstract methods."""

    #: The backend's spelling of the shared SQL.
    dialect: Dialect

    @cached_property
    def _parts(self) -> Parts:
        """The parts, composed from this store as their host (on first use)."""
        return Parts(MetaTable(self), MemoryTables(self), DirectoryTables(self),
                     LogTables(self), AccessTables(self))  # fmt: skip

    # --- the contract: the SQL primitives of the connection host -----------------------
    @abstractmethod
    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of a query (in the dialect's own spelling)."""

    @abstractmethod
    def _row(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of a query, or None."""

    @abstractmethod
    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement inside a write; the number of rows it changed."""

    @abstractmethod
    def _write_alone(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` once per parameter row, as one write nobody reads the result of."""

    @abstractmethod
    def _stat_counts(
        self, flt: MemoryFilter, cond: str, params: Sequence[Any]
    ) -> tuple[int, int, int, int]:
        """(rows, expired at ``flt.now``, superseded, vectors) of the memories that
        pass ``cond`` (the dialect's SQL of ``flt`` with every state included)."""

    @abstractmethod
    def _size_bytes(self) -> int:
        """What the whole store takes on disk."""

    def _erased(self) -> None:
        """Note, inside a write, that it deleted content (a backend that keeps old
        pages, as SQLite's WAL does, empties them after the commit)."""

    # --- the contract: memory rows ------------------------------------------------------
    @abstractmethod
    def _delete_row(self, memory_id: str) -> bool:
        """Inside a write: remove the memory's row with its vector, keyword entry and
        entities; False when there is none."""

    def delete(self, memory_id: str) -> bool:
        with self.write():
            if not self._delete_row(memory_id):
                return False
            self._parts.memories.unlink(memory_id)
            self._erased()
        return True

    # --- answered by the parts (each name its own descriptor: see _answered) ----------
    get_meta, set_meta, schema_version = _answered("meta", 3)
    get, find_slot, list_memories, count, touch, gc_candidates = _answered("memories", 6)
    stats, iter_memories, iter_edges, iter_versions = _answered("memories", 4)
    add_edge, edges, get_edge, delete_edge = _answered("memories", 4)
    add_versions, versions, next_version, purge_versions = _answered("memories", 4)
    by_entity, entity_counts, edges_among = _answered("memories", 3)

    save_identity, find_identity, list_identities = _answered("directory", 3)
    save_team, find_team, list_teams = _answered("directory", 3)
    save_membership, delete_membership, members, memberships_of = _answered("directory", 4)
    save_invitation, delete_invitation, invitations = _answered("directory", 3)
    save_grant, delete_grant, grants = _answered("directory", 3)

    add_events, events, prune_events = _answered("logs", 3)
    add_turn, turns, sessions = _answered("logs", 3)

    save_api_key, api_keys, api_key, delete_api_keys = _answered("keys", 4)
    save_console_session, console_sessions, console_session = _answered("keys", 3)
    (delete_console_sessions,) = _answered("keys", 1)
