"""How the SQLite store runs the shared SQL (:class:`~.tables.SqlHost`), single
edges, and session and entity neighbourhoods."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ..clock import to_text
from ..record import Edge
from .base import MemoryFilter, SessionLine, SessionPoint, session_windows
from .dialect import Dialect
from .sqlite_rows import SQLITE, row_to_edge, where

#: Windows a statement names (SQLite caps the parameters of one).
_CHUNK = 500


class SQLiteExtras:
    """Mixin for :class:`~memchentic.store.sqlite.SQLiteStore`."""

    dialect: Dialect = SQLITE

    @property
    def conn(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.conn.execute(sql, params).fetchall()

    def _row(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self.write():  # type: ignore[attr-defined]
            return self.conn.execute(sql, params).rowcount

    def _write_alone(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.write():  # type: ignore[attr-defined]
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

    def get_edge(self, edge_id: str) -> Edge | None:
        row = self.conn.execute(
            "SELECT id, source, target, kind, strength, created_at, metadata FROM edges "
            "WHERE id = ?",
            (edge_id,),
        ).fetchone()
        return row_to_edge(row) if row else None
