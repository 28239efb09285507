"""Session and entity neighbourhoods of the PostgreSQL store."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import timedelta

from .base import MemoryFilter, SessionLine, SessionPoint, session_windows
from .dialect import Dialect
from .postgres_connect import PgConnections
from .postgres_rows import POSTGRES, utc, where


class PostgresExtras(PgConnections):
    """Mixin for :class:`~memchentic.store.postgres.PostgresStore`; its
    :class:`~.tables.SqlHost` primitives are :class:`PgConnections`'."""

    dialect: Dialect = POSTGRES

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
