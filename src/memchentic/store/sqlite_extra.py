"""Events, session turns, session and entity neighbourhoods of the SQLite store."""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ..clock import from_text, to_text
from ..record import Edge, Event, Turn
from .base import MemoryFilter, SessionLine, SessionPoint, session_windows
from .sqlite_rows import row_to_edge, where

#: ``json.dumps(payload, ensure_ascii=False, default=str)``, one encoder for all.
_payload_json = json.JSONEncoder(ensure_ascii=False, default=str).encode

#: Windows a statement names (SQLite caps the parameters of one).
_CHUNK = 500


class SQLiteExtras:
    """Mixin for :class:`~memchentic.store.sqlite.SQLiteStore`."""

    @property
    def conn(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

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

    def add_event(self, event: Event) -> None:
        self.add_events([event])

    def add_events(self, events: Sequence[Event]) -> None:
        with self.write():  # type: ignore[attr-defined]
            self.conn.executemany(
                "INSERT INTO events(id, type, at, actor, namespace, memory_id, payload) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(e.id, e.type, to_text(e.at), e.actor, e.namespace, e.memory_id,
                  _payload_json(e.payload)) for e in events],
            )  # fmt: skip

    def events(
        self,
        *,
        namespaces: Sequence[str] | None,
        since: str | None = None,
        types: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[Event]:
        sql = "SELECT id, type, at, actor, namespace, memory_id, payload FROM events WHERE 1"
        args: list[Any] = []
        if since is not None:
            sql += " AND seq > COALESCE((SELECT seq FROM events WHERE id = ?), 0)"
            args.append(since)
        if namespaces is not None:
            sql += f" AND namespace IN ({', '.join('?' * len(namespaces))})"
            args.extend(namespaces)
        if types:
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            args.extend(types)
        rows = self.conn.execute(sql + " ORDER BY seq LIMIT ?", (*args, limit))
        return [
            Event(i, t, from_text(at), actor, ns, mid, json.loads(payload))  # type: ignore[arg-type]
            for i, t, at, actor, ns, mid, payload in rows
        ]

    def prune_events(self, before: datetime) -> int:
        with self.write():  # type: ignore[attr-defined]
            cur = self.conn.execute("DELETE FROM events WHERE at < ?", (to_text(before),))
        return cur.rowcount

    def add_turn(self, turn: Turn) -> None:
        with self.write():  # type: ignore[attr-defined]
            self.conn.execute(
                "INSERT INTO turns(id, session_id, namespace, role, content, at, metadata) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (turn.id, turn.session_id, turn.namespace, turn.role, turn.content,
                 to_text(turn.at), json.dumps(turn.metadata, ensure_ascii=False)),
            )  # fmt: skip

    def turns(self, session_id: str, *, namespace: str | None, limit: int) -> list[Turn]:
        sql = (
            "SELECT id, session_id, namespace, role, content, at, metadata FROM turns "
            "WHERE session_id = ?"
        )
        args: list[Any] = [session_id]
        if namespace is not None:
            sql += " AND namespace = ?"
            args.append(namespace)
        rows = self.conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, limit)).fetchall()
        return [
            Turn(i, s, ns, role, content, from_text(at), json.loads(meta))  # type: ignore[arg-type]
            for i, s, ns, role, content, at, meta in reversed(rows)
        ]

    def sessions(self, *, namespaces: Sequence[str] | None) -> list[tuple[str, int]]:
        sql = "SELECT session_id, COUNT(*) FROM turns"
        args: list[Any] = []
        if namespaces is not None:
            sql += f" WHERE namespace IN ({', '.join('?' * len(namespaces))})"
            args.extend(namespaces)
        rows = self.conn.execute(sql + " GROUP BY session_id ORDER BY MAX(seq) DESC", args)
        return [(sid, int(n)) for sid, n in rows]
