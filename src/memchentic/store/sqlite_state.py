"""The ranking columns of every memory of a SQLite store, kept in memory per
connection (issue 36, item 2): what the search's filter, its ranking rows
(:class:`~.base.RankRow`) and its conversation context read of each candidate,
without a statement or a timestamp parse per search.

What keeps it current, whatever writes the store:

* another connection's commit (another thread, process or ``Memory`` on the
  file) changes this connection's ``PRAGMA data_version``: the state is read
  again whole;
* this connection's own writes to ``memories`` (every write path: add, update,
  supersede, delete, expire, import, recall counting) are logged by temporary
  triggers, which only this connection has, into ``temp.memory_changes``; the
  rows logged are read again before the next use (a write's log entries and its
  rows commit or roll back together);
* inside a transaction the state is not used at all (what the transaction wrote
  may still roll back): the callers read SQL as before.

A store larger than :data:`MAX_ROWS` keeps no state (reading it whole again
after another process's write would cost more than it saves).
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from ..clock import to_text
from .base import RankRow
from .filters import MemoryFilter
from .sqlite_rows import RANK_COLUMNS, RANK_WIDTH, rank_row

#: Stores of more rows keep no state.
MAX_ROWS = 50_000

_COLUMNS = f"m.rowid, m.id, {RANK_COLUMNS}, m.expires_at, m.superseded_by"
_TRIGGERS = (
    "CREATE TEMP TABLE IF NOT EXISTS memory_changes (key INTEGER PRIMARY KEY)",
    "CREATE TEMP TRIGGER IF NOT EXISTS memory_changes_insert AFTER INSERT ON main.memories "
    "BEGIN INSERT OR IGNORE INTO memory_changes VALUES (new.rowid); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS memory_changes_update AFTER UPDATE ON main.memories "
    "BEGIN INSERT OR IGNORE INTO memory_changes VALUES (old.rowid); "
    "INSERT OR IGNORE INTO memory_changes VALUES (new.rowid); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS memory_changes_delete AFTER DELETE ON main.memories "
    "BEGIN INSERT OR IGNORE INTO memory_changes VALUES (old.rowid); END",
)


class Entry(NamedTuple):
    """One memory's columns as the search reads them."""

    key: int
    id: str
    rank: RankRow
    #: ``created_at`` as stored (text that sorts in time order).
    created: str | None
    expires: str | None
    superseded: bool


def _entry(row: Sequence[object]) -> Entry:
    rank = rank_row(row[: 2 + RANK_WIDTH], 2)  # then expiry, not a vector
    created = row[2 + RANK_WIDTH - 1]
    expires, superseded = row[2 + RANK_WIDTH], row[3 + RANK_WIDTH]
    return Entry(row[0], row[1], rank, created, expires, superseded is not None)  # type: ignore[arg-type]


Match = Callable[[Entry], bool]


def matcher(flt: MemoryFilter) -> Match | None:
    """``flt`` as a test of an :class:`Entry`, exactly as its SQL (``filters.clauses``)
    decides; None for a filter on other columns (the caller reads SQL)."""
    if (
        flt.tags or flt.path_hint is not None or flt.repo is not None
        or flt.user_id is not None or flt.agent_id is not None or flt.slot_prefix is not None
        or flt.as_of is not None or flt.pinned is not None or flt.created_after is not None
        or flt.created_before is not None or flt.exclude_ids or flt.by_agent is not None
        or flt.metadata is not None or flt.session_id is not None
        or flt.written_by is not None or flt.isolated
    ):  # fmt: skip
        return None
    namespaces = None if flt.namespaces is None else frozenset(flt.namespaces)
    types = frozenset(flt.types) if flt.types else None
    kinds = frozenset(flt.kinds) if flt.kinds else None
    now = to_text(flt.now) if not flt.include_expired and flt.now is not None else None
    live = not flt.include_superseded
    if namespaces is not None and types is None and kinds is None and now is not None and not live:

        def searched(e: Entry) -> bool:  # a search's filter: the namespaces, not expired
            return e.rank.namespace in namespaces and (e.expires is None or e.expires > now)

        return searched

    def match(e: Entry) -> bool:
        r = e.rank
        return (
            (namespaces is None or r.namespace in namespaces)
            and (types is None or r.type in types)
            and (kinds is None or r.kind in kinds)
            and (now is None or e.expires is None or e.expires > now)
            and not (live and e.superseded)
        )

    return match


class RankState:
    """Every row's :class:`Entry` (expired and superseded ones too), by rowid and
    by id, and each session's rows in time order."""

    def __init__(self) -> None:
        #: ``PRAGMA data_version`` when the state was read whole (None: not read).
        self.version: int | None = None
        self.entries: dict[int, Entry] = {}
        self.keys: dict[str, int] = {}
        #: (namespace, session) -> rowids; and its rows sorted, made when read.
        self._members: dict[tuple[str, str], set[int]] = {}
        self._lines: dict[tuple[str, str], tuple[list[str], list[Entry]]] = {}

    # --- keeping it current -------------------------------------------------------
    def sync(self, conn: sqlite3.Connection, rows: Callable[[], int]) -> bool:
        """Bring the state up to what ``conn`` sees; False when the store is too
        large to keep one (``rows``: about how many it holds)."""
        logged: list[int] = []
        if self.version is None:  # the change log may not exist yet on this connection
            version = conn.execute("PRAGMA data_version").fetchone()[0]
        else:  # one statement: the version and this connection's logged rows
            found = conn.execute(
                "SELECT 0, data_version FROM pragma_data_version() "
                "UNION ALL SELECT 1, key FROM temp.memory_changes"
            ).fetchall()
            version = next(value for logs, value in found if not logs)
            logged = [key for logs, key in found if logs]
        if version != self.version:
            if rows() > MAX_ROWS:
                self.version = None
                self.entries, self.keys = {}, {}
                self._members, self._lines = {}, {}
                return False
            for statement in _TRIGGERS:
                conn.execute(statement)
            conn.execute("DELETE FROM temp.memory_changes")
            self.entries, self.keys = {}, {}
            self._members, self._lines = {}, {}
            self._put(_entry(row) for row in conn.execute(f"SELECT {_COLUMNS} FROM memories m"))
            self.version = version
        elif logged:
            for key in logged:
                self._drop(key)
            for start in range(0, len(logged), 4096):
                chunk = logged[start : start + 4096]
                found = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories m NOT INDEXED "
                    f"WHERE m.rowid IN ({', '.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
                self._put(map(_entry, found))
            conn.execute("DELETE FROM temp.memory_changes")
            if len(self.entries) > MAX_ROWS:
                self.version = None
                return False
        return True

    def _put(self, entries: Iterable[Entry]) -> None:
        for e in entries:
            old = self.keys.get(e.id)
            if old is not None and old != e.key:  # its row replaced (REPLACE fires no delete)
                self._drop(old)
            self.entries[e.key] = e
            self.keys[e.id] = e.key
            if e.rank.session_id and e.created is not None:
                line = (e.rank.namespace, e.rank.session_id)
                self._members.setdefault(line, set()).add(e.key)
                self._lines.pop(line, None)

    def _drop(self, key: int) -> None:
        e = self.entries.pop(key, None)
        if e is None:
            return
        if self.keys.get(e.id) == key:
            del self.keys[e.id]
        line = (e.rank.namespace, e.rank.session_id or "")
        if (members := self._members.get(line)) is not None:
            members.discard(key)
            self._lines.pop(line, None)

    # --- reading it ---------------------------------------------------------------
    def line(self, namespace: str, session: str) -> tuple[list[str], list[Entry]]:
        """A session's rows in ``(created_at, id)`` order, and their times."""
        key = (namespace, session)
        found = self._lines.get(key)
        if found is None:
            entries = sorted(
                (self.entries[k] for k in self._members.get(key, ())),
                key=lambda e: (e.created, e.id),
            )
            found = ([e.created for e in entries], entries)  # type: ignore[misc]
            self._lines[key] = found
        return found

    def passing(
        self, keys: Iterable[int], match: Match, read: dict[int, object] | None = None
    ) -> dict[int, str]:
        """The keys of rows that pass ``match``, with their ids (``read``: their
        RankRows by key)."""
        out: dict[int, str] = {}
        for key in keys:
            e = self.entries.get(key)
            if e is not None and match(e):
                out[key] = e.id
                if read is not None:
                    read[key] = e.rank
        return out

    def window(self, namespace: str, session: str, lo: str, hi: str) -> list[Entry]:
        """A session's rows created from ``lo`` to ``hi`` (texts), in order."""
        times, entries = self.line(namespace, session)
        return entries[bisect.bisect_left(times, lo) : bisect.bisect_right(times, hi)]


def state_of(conn: sqlite3.Connection, rows: Callable[[], int]) -> RankState | None:
    """``conn``'s state, brought up to date; None inside a transaction and for a
    store of more than :data:`MAX_ROWS` (``rows``: about how many it holds)."""
    if conn.in_transaction:
        return None
    state: RankState | None = getattr(conn, "rank_state", None)
    if state is None:
        state = RankState()
        conn.rank_state = state  # type: ignore[attr-defined]
    return state if state.sync(conn, rows) else None
