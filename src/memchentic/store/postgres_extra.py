"""Events, session turns, single edges, session and entity neighbourhoods of the
PostgreSQL store."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ..record import Edge, Event, Turn
from .base import MemoryFilter, SessionLine, SessionPoint, session_windows
from .postgres_connect import PgConnections
from .postgres_rows import EDGE_COLUMNS, jsonb, row_to_edge, utc, where


class PostgresExtras(PgConnections):
    """Mixin for :class:`~memchentic.store.postgres.PostgresStore`."""

    def entity_neighbours(
        self, memory_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[tuple[str, list[str]]]:
        cond, params = where(flt)
        rows = self._rows(
            "SELECT m.id, array_agg(DISTINCT e2.entity) FROM memories src "
            "JOIN memory_entities e1 ON e1.key = src.key "
            "JOIN memory_entities e2 ON e2.entity = e1.entity AND e2.key <> src.key "
            f"JOIN memories m ON m.key = e2.key WHERE src.id = %s AND {cond} "
            "GROUP BY m.key ORDER BY count(*) DESC, m.created_at DESC LIMIT %s",
            (memory_id, *params, limit),
        )
        return [(mid, sorted(set(names))) for mid, names in rows]

    def session_lines(
        self, points: Sequence[SessionPoint], flt: MemoryFilter, reach: timedelta
    ) -> list[SessionLine]:
        windows = [w for w in session_windows(points, reach) if w[1]]
        if not windows:
            return []
        cond, params = where(flt)
        # LATERAL with its own order: each window is read along the index, not
        # the namespace's rows hashed, whatever the planner guesses they number.
        rows = self._rows(
            "SELECT w.namespace, w.session_id, x.id, x.created_at "
            "FROM unnest(%s::text[], %s::text[], %s::timestamptz[], %s::timestamptz[]) "
            "AS w(namespace, session_id, lo, hi) CROSS JOIN LATERAL ("
            "SELECT m.id, m.created_at FROM memories m "
            "WHERE m.namespace = w.namespace AND m.session_id = w.session_id "
            "AND m.session_id <> '' AND m.created_at >= w.lo AND m.created_at <= w.hi "
            f"AND {cond} ORDER BY m.created_at, m.id) x",
            (*(list(column) for column in zip(*windows, strict=True)), *params),
        )
        rows.sort(key=lambda row: (row[0], row[1], row[3], row[2]))  # ids: "C" order
        return [
            [(memory_id, utc(created)) for _, _, memory_id, created in line]  # type: ignore[misc]
            for _, line in itertools.groupby(rows, key=lambda row: (row[0], row[1]))
        ]

    def get_edge(self, edge_id: str) -> Edge | None:
        row = self._row(f"SELECT {EDGE_COLUMNS} FROM edges WHERE id = %s", (edge_id,))
        return row_to_edge(row) if row else None

    def add_event(self, event: Event) -> None:
        self.add_events([event])

    def add_events(self, events: Sequence[Event]) -> None:
        # Under the store's write lock, so events commit in the order of their
        # sequence numbers and a reader paging with ``since`` never skips one.
        self._write_alone(
            "INSERT INTO events (id, type, at, actor, namespace, memory_id, payload) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [(e.id, e.type, e.at, e.actor, e.namespace, e.memory_id,
              jsonb(e.payload, "payload")) for e in events],
        )  # fmt: skip

    def events(
        self,
        *,
        namespaces: Sequence[str] | None,
        since: str | None = None,
        types: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[Event]:
        sql = "SELECT id, type, at, actor, namespace, memory_id, payload FROM events WHERE TRUE"
        args: list[Any] = []
        if since is not None:
            sql += " AND seq > COALESCE((SELECT seq FROM events WHERE id = %s), 0)"
            args.append(since)
        if namespaces is not None:
            sql += " AND namespace = ANY(%s)"
            args.append(list(namespaces))
        if types:
            sql += " AND type = ANY(%s)"
            args.append(list(types))
        rows = self._rows(sql + " ORDER BY seq LIMIT %s", (*args, limit))
        return [
            Event(i, t, utc(at), actor, ns, mid, payload)  # type: ignore[arg-type]
            for i, t, at, actor, ns, mid, payload in rows
        ]

    def prune_events(self, before: datetime) -> int:
        return self._run("DELETE FROM events WHERE at < %s", (before,))

    def add_turn(self, turn: Turn) -> None:
        self._write_alone(
            "INSERT INTO turns (id, session_id, namespace, role, content, at, metadata) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [(turn.id, turn.session_id, turn.namespace, turn.role, turn.content, turn.at,
              jsonb(turn.metadata))],
        )  # fmt: skip

    def turns(self, session_id: str, *, namespace: str | None, limit: int) -> list[Turn]:
        sql = (
            "SELECT id, session_id, namespace, role, content, at, metadata FROM turns "
            "WHERE session_id = %s"
        )
        args: list[Any] = [session_id]
        if namespace is not None:
            sql += " AND namespace = %s"
            args.append(namespace)
        rows = self._rows(sql + " ORDER BY seq DESC LIMIT %s", (*args, limit))
        return [
            Turn(i, s, ns, role, content, utc(at), meta)  # type: ignore[arg-type]
            for i, s, ns, role, content, at, meta in reversed(rows)
        ]

    def sessions(self, *, namespaces: Sequence[str] | None) -> list[tuple[str, int]]:
        sql = "SELECT session_id, count(*) FROM turns"
        args: list[Any] = []
        if namespaces is not None:
            sql += " WHERE namespace = ANY(%s)"
            args.append(list(namespaces))
        rows = self._rows(sql + " GROUP BY session_id ORDER BY max(seq) DESC", args)
        return [(sid, int(n)) for sid, n in rows]
