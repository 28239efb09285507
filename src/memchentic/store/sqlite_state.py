"""The ranking columns of every memory of a SQLite store, kept in memory once per
store object and process (issue 36, item 2): what the search's filter, its
ranking rows (:class:`~.base.RankRow`) and its conversation context read of each
candidate, without a statement or a timestamp parse per search.

One state serves every thread's connection of a store: whichever connection
uses it next brings it up to date, under the state's lock, before it is read
(so eight server threads keep one copy, not eight, and read each write once).
Outside a transaction every statement sees the latest commit, and so does the
state after its sync: the two agree whichever connection synced it.

What keeps it current, whatever writes the store: the ``memory_log`` table
(migration 14), to which triggers add the rowid of every row of ``memories``
inserted, updated or deleted, in the writing transaction, by any connection,
thread or process, and every write path (add, update, supersede, delete,
expire, import, recall counting). Before each use the state reads the entries
after its position and reads those rows again; it reads every row again only
at first, when the store's ``index_epoch`` changed (a restore, a reindex), or
when the log no longer holds the entries after its position (it keeps its last
100,000). Inside a transaction the state is not used at all (what the
transaction wrote may still roll back): the callers read SQL as before.

A store larger than :data:`MAX_ROWS` keeps no state (its memory, and a read of
every row when a connection falls behind, would cost more than it saves).
"""

from __future__ import annotations

import bisect
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from ..clock import to_text
from .base import RankRow
from .filters import MemoryFilter
from .sqlite_rows import RANK_COLUMNS, RANK_WIDTH, rank_row

#: Stores of more rows keep no state. (At 100,000 rows it would hold about 78 MB
#: and read every row in 0.7 s, and a search took as long with it as without:
#: p50 5.5-8.5 against 5.8-6.2 ms, alternating, session 17.)
MAX_ROWS = 50_000

_COLUMNS = f"m.rowid, m.id, {RANK_COLUMNS}, m.expires_at, m.superseded_by"
#: The store's ``index_epoch`` (tag -2), the log's last number (tag -1), then
#: the entries after the first parameter (none when the second is true).
_CHANGES = (
    "SELECT -2, (SELECT value FROM meta WHERE key = 'index_epoch') "
    "UNION ALL SELECT -1, (SELECT seq FROM sqlite_sequence WHERE name = 'memory_log') "
    "UNION ALL SELECT seq, key FROM memory_log WHERE seq > ? AND NOT ?"
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


def _changes(
    conn: sqlite3.Connection, after: int | None
) -> tuple[str | None, int, list[tuple[int, int]]]:
    """The store's ``index_epoch``, the log's last number, and (``after`` given)
    the log's entries after it, in order."""
    found = conn.execute(_CHANGES, (-1 if after is None else after, after is None)).fetchall()
    marks = {tag: value for tag, value in found if tag < 0}
    logged = sorted((seq, key) for seq, key in found if seq >= 0)
    epoch = marks.get(-2)
    return None if epoch is None else str(epoch), int(marks.get(-1) or 0), logged


class RankState:
    """Every row's :class:`Entry` (expired and superseded ones too), by rowid and
    by id, and each session's rows in time order."""

    def __init__(self) -> None:
        #: Held while the state is brought up to date, and while a reader walks
        #: what a sync changes in place (a session's members).
        self.lock = threading.RLock()
        #: The last ``memory_log`` entry the state has read (None: not read yet),
        #: and the store's ``index_epoch`` then.
        self.seq: int | None = None
        self.epoch: str | None = None
        self.entries: dict[int, Entry] = {}
        self.keys: dict[str, int] = {}
        #: (namespace, session) -> rowids; and its rows sorted, made when read.
        self._members: dict[tuple[str, str], set[int]] = {}
        self._lines: dict[tuple[str, str], tuple[list[str], list[Entry]]] = {}

    # --- keeping it current -------------------------------------------------------
    def sync(self, conn: sqlite3.Connection, rows: Callable[[], int]) -> bool:
        """Bring the state up to what ``conn`` sees; False when the store is too
        large to keep one (``rows``: about how many it holds).

        One statement reads the store's ``index_epoch`` (a restore or reindex
        gives a new one), the log's last number, and the rows logged since the
        state's position; those rows are read again. The state is read whole
        at first, after an epoch change, when the log went backwards (another
        file now) or has dropped entries the state has not seen."""
        if self.seq is None:
            return self._read_whole(conn, rows)
        epoch, top, logged = _changes(conn, self.seq)
        if (
            epoch != self.epoch
            or top < self.seq
            or (top > self.seq and (not logged or logged[0][0] != self.seq + 1))
        ):
            return self._read_whole(conn, rows)
        if not logged:
            return True
        keys = list(dict.fromkeys(key for _, key in logged))
        for key in keys:
            self._drop(key)
        for start in range(0, len(keys), 4096):
            chunk = keys[start : start + 4096]
            self._put(map(_entry, conn.execute(
                f"SELECT {_COLUMNS} FROM memories m NOT INDEXED "
                f"WHERE m.rowid IN ({', '.join('?' * len(chunk))})",
                chunk,
            ).fetchall()))  # fmt: skip
        self.seq = logged[-1][0]
        if len(self.entries) > MAX_ROWS:
            self._forget()
            return False
        return True

    def _read_whole(self, conn: sqlite3.Connection, rows: Callable[[], int]) -> bool:
        """Every row again. The log's position is read first: a write committed
        between the two reads is then read again at the next sync (reading a row
        again is harmless), never missed."""
        self._forget()
        if rows() > MAX_ROWS:
            return False
        epoch, seq, _ = _changes(conn, None)
        self._put(_entry(row) for row in conn.execute(f"SELECT {_COLUMNS} FROM memories m"))
        self.epoch, self.seq = epoch, seq
        return True

    def _forget(self) -> None:
        self.seq = None
        self.entries, self.keys = {}, {}
        self._members, self._lines = {}, {}

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
            with self.lock:
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
        with self.lock:  # not while another thread's sync has a row half replaced
            entries = self.entries
            for key in keys:
                e = entries.get(key)
                if e is not None and match(e):
                    out[key] = e.id
                    if read is not None:
                        read[key] = e.rank
        return out

    def found(self, ids: Iterable[str]) -> list[Entry]:
        """The entries of these ids that the store holds (each once, in order)."""
        with self.lock:
            keys, entries = self.keys, self.entries
            return [e for i in dict.fromkeys(ids) if (key := keys.get(i)) is not None
                    and (e := entries.get(key)) is not None]  # fmt: skip

    def window(self, namespace: str, session: str, lo: str, hi: str) -> list[Entry]:
        """A session's rows created from ``lo`` to ``hi`` (texts), in order."""
        with self.lock:
            times, entries = self.line(namespace, session)
            return entries[bisect.bisect_left(times, lo) : bisect.bisect_right(times, hi)]


def state_of(
    conn: sqlite3.Connection, rows: Callable[[], int], holder: object | None = None
) -> RankState | None:
    """The state of ``holder`` (by default ``conn`` itself; a store passes itself,
    so its threads' connections share one), brought up to date through ``conn``;
    None while ``conn`` is inside a transaction and for a store of more than
    :data:`MAX_ROWS` (``rows``: about how many it holds)."""
    if conn.in_transaction:
        return None
    owner = conn if holder is None else holder
    state: RankState | None = getattr(owner, "rank_state", None)
    if state is None:
        with _MADE:
            state = getattr(owner, "rank_state", None)
            if state is None:
                state = RankState()
                owner.rank_state = state  # type: ignore[attr-defined]
    with state.lock:
        return state if state.sync(conn, rows) else None


#: Held while a holder's state is first made (two threads make one, not two).
_MADE = threading.Lock()
