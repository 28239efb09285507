"""How the SQLite store runs the shared SQL (the primitives of
:class:`~.tables.SqlHost`), its session and entity neighbourhoods, and the counts
and size behind its statistics (:class:`~.memory_tables.MemoryTables` reads the
rest)."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import to_text
from .base import MemoryFilter, SessionLine, SessionPoint, session_windows
from .dialect import Dialect
from .sqlite_rows import SQLITE, where
from .sqlite_state import Entry, RankState, matcher

#: Windows a statement names (SQLite caps the parameters of one).
_CHUNK = 500


def _point(e: Entry) -> tuple[str, datetime]:
    """A session row's (id, created_at): the rows of a line have their time."""
    assert e.rank.created_at is not None
    return e.id, e.rank.created_at


class SQLiteExtras:
    """The host half of :class:`~memchentic.store.sqlite.SQLiteStore`: how it runs SQL."""

    dialect: Dialect = SQLITE
    path: Path

    @property
    def conn(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

    if TYPE_CHECKING:  # provided by SQLiteStore

        def write(self) -> AbstractContextManager[None]: ...

        def _rank_state(self) -> RankState | None: ...

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.conn.execute(sql, params).fetchall()

    def _row(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self.write():
            return self.conn.execute(sql, params).rowcount

    def _write_alone(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.write():
            self.conn.executemany(sql, rows)

    def entity_neighbours(
        self, memory_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[tuple[str, list[str]]]:
        cond, params = where(flt)
        rows = self.conn.execute(
            "SELECT m.id, group_concat(e2.entity, char(31)) FROM memories src "
            "JOIN memory_entities e1 ON e1.key = src.rowid "
            "JOIN memory_entities e2 ON e2.entity = e1.entity AND e2.key != src.rowid "
            f"JOIN memories m ON m.rowid = e2.key WHERE src.id = ? AND {cond} "
            "GROUP BY m.id ORDER BY COUNT(*) DESC, m.created_at DESC LIMIT ?",
            (memory_id, *params, limit),
        )
        return [(mid, sorted(set(names.split("\x1f")))) for mid, names in rows]

    def session_lines(
        self, points: Sequence[SessionPoint], flt: MemoryFilter, reach: timedelta
    ) -> list[SessionLine]:
        cond, params = where(flt)
        # Times are text that sorts in time order (clock.to_text): windows in text
        # are exact.
        windows = [(namespace, session, to_text(lo), to_text(hi))
                   for namespace, session, lo, hi in session_windows(points, reach)
                   if session]  # fmt: skip
        state = self._rank_state()
        match = None if state is None else matcher(flt)
        if state is not None and match is not None:  # the same rows, from memory
            found: dict[tuple[str, str], list[Entry]] = {}
            for namespace, session, lo, hi in windows:
                found.setdefault((namespace, session), []).extend(
                    e for e in state.window(namespace, session, lo or "", hi or "") if match(e)
                )
            # A session's windows do not overlap and come in time order
            # (session_windows), so its rows are in (created_at, id) order already.
            return [[_point(e) for e in line] for _, line in sorted(found.items()) if line]
        rows: list[Any] = []
        for start in range(0, len(windows), _CHUNK):
            part = windows[start : start + _CHUNK]
            rows += self.conn.execute(
                "WITH w(namespace, session_id, lo, hi) AS (VALUES "
                f"{', '.join(['(?, ?, ?, ?)'] * len(part))}) "
                "SELECT m.namespace, m.session_id, m.id, m.created_at "
                "FROM w JOIN memories m INDEXED BY ix_memories_session "
                "ON m.namespace = w.namespace AND m.session_id = w.session_id "
                "AND m.session_id <> '' AND m.created_at >= w.lo AND m.created_at <= w.hi "
                f"WHERE {cond}",
                (*(value for window in part for value in window), *params),
            ).fetchall()
        rows.sort(key=lambda row: (row[0], row[1], row[3], row[2]))
        return [
            [(memory_id, datetime.fromisoformat(created)) for _, _, memory_id, created in line]
            for _, line in itertools.groupby(rows, key=lambda row: (row[0], row[1]))
        ]

    # --- maintenance ----------------------------------------------------------------
    def _stat_counts(
        self, flt: MemoryFilter, cond: str, params: Sequence[Any]
    ) -> tuple[int, int, int, int]:
        def scalar(sql: str, args: Sequence[Any]) -> int:
            return int(self.conn.execute(sql, args).fetchone()[0] or 0)

        total = scalar(f"SELECT COUNT(*) FROM memories m WHERE {cond}", params)
        expired = scalar(
            f"SELECT COUNT(*) FROM memories m WHERE {cond} AND m.expires_at <= ?",
            [*params, to_text(flt.now)],
        ) if flt.now else 0  # fmt: skip
        superseded = scalar(
            f"SELECT COUNT(*) FROM memories m WHERE {cond} AND m.superseded_by IS NOT NULL",
            params,
        )
        vectors = scalar(
            f"SELECT COUNT(*) FROM vectors WHERE rowid IN (SELECT m.rowid FROM memories m "
            f"WHERE {cond})",
            params,
        )
        return total, expired, superseded, vectors

    def _size_bytes(self) -> int:
        return sum(
            p.stat().st_size
            for p in (self.path, self.path.with_name(self.path.name + "-wal"))
            if p.exists()
        )
