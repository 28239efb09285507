"""Events, session turns, single edges, session and entity neighbourhoods of the
PostgreSQL store."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ..record import Edge, Event, Turn
from .base import MemoryFilter
from .postgres_connect import PgConnections
from .postgres_rows import EDGE_COLUMNS, jsonb, row_to_edge, utc, where

#: The rows around memories in their sessions (``session_lines``): each anchor's
#: window (its time +- ``%s`` microseconds: an interval of neither days nor months,
#: whatever the time zone), overlapping windows of a session joined (``island``
#: counts the windows that start after every earlier one ended), and the rows of
#: each joined window read along ``ix_memories_session``. (``OFFSET 0``: the
#: anchors are found by id, not by a walk of their namespace's session index.)
_LINES = """
WITH a AS (
    SELECT a.namespace, a.session_id, a.created_at - {reach} AS lo, a.created_at + {reach} AS hi
    FROM (SELECT * FROM memories WHERE id = ANY(%s) OFFSET 0) a
    WHERE a.session_id <> '' AND {anchor}
), s AS (
    SELECT *, CASE WHEN lo <= max(hi) OVER (PARTITION BY namespace, session_id ORDER BY lo, hi
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS starts FROM a
), g AS (
    SELECT *, sum(starts) OVER (PARTITION BY namespace, session_id ORDER BY lo, hi
        ROWS UNBOUNDED PRECEDING) AS island FROM s
), w AS (
    SELECT namespace, session_id, min(lo) AS lo, max(hi) AS hi FROM g
    GROUP BY namespace, session_id, island
)
SELECT m.namespace, m.session_id, m.id, m.created_at FROM w JOIN memories m
    ON m.namespace = w.namespace AND m.session_id = w.session_id AND m.session_id <> ''
    AND m.created_at >= w.lo AND m.created_at <= w.hi
WHERE {cond} ORDER BY m.namespace, m.session_id, m.created_at, m.id
"""
#: The longest reach the SQL is given: PostgreSQL keeps no time before 4713 BC (and
#: a memory is created in year 1 or later), so that a time minus it stays in range.
_LONGEST_REACH = timedelta(days=4000 * 365)


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
        self, ids: Sequence[str], flt: MemoryFilter, reach: timedelta
    ) -> list[list[tuple[str, datetime]]]:
        if not ids:
            return []
        cond, params = where(flt)
        anchor, anchor_params = where(flt, "a")
        micros = min(reach, _LONGEST_REACH) // timedelta(microseconds=1)
        sql = _LINES.format(reach="%s * interval '1 microsecond'", anchor=anchor, cond=cond)
        rows = self._rows(sql, (micros, micros, list(dict.fromkeys(ids)), *anchor_params, *params))
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
