"""The reads of memories, edges, versions and entities, the statistics and the
streams of every row, written once for both backends.

Like :mod:`.tables`, in the SQL both engines read alike (``?`` parameters, rendered
by the store's :class:`~.dialect.Dialect`, which also maps the rows back and names
the memories' integer key). What the engines do differently stays in the
backends: writes, the counts of :meth:`~.base.Store.stats` that one statement
answers on PostgreSQL and several on SQLite, and the size of the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from ..record import Edge, MemoryRecord, Version
from .base import StoreStats
from .filters import MemoryFilter
from .tables import EDGE_COLUMNS, SELECT_COLUMNS, VERSION_COLUMNS, SqlHost


class MemoryHost(SqlHost, Protocol):
    """What :class:`MemoryTables` needs of a store besides :class:`~.tables.SqlHost`."""

    def get_meta(self, key: str) -> str | None: ...

    def schema_version(self) -> int: ...

    def count(self, flt: MemoryFilter) -> int: ...

    def _stat_counts(
        self, flt: MemoryFilter, cond: str, params: Sequence[Any]
    ) -> tuple[int, int, int, int]:
        """(rows, expired at ``flt.now``, superseded, vectors) of the memories that
        pass ``cond`` (the dialect's SQL of ``flt`` with every state included)."""
        ...

    def _size_bytes(self) -> int:
        """What the whole store takes on disk."""
        ...


class MemoryTables:
    """Memories, edges, versions and entities as both backends read them."""

    def get(self: SqlHost, memory_id: str) -> MemoryRecord | None:
        d = self.dialect
        row = self._row(d.sql(f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.id = ?"),
                        (memory_id,))  # fmt: skip
        return d.record(row) if row else None

    def find_slot(self: SqlHost, namespace: str, slot_key: str) -> MemoryRecord | None:
        d = self.dialect
        row = self._row(
            d.sql(f"SELECT {SELECT_COLUMNS} FROM memories m "
                  "WHERE m.namespace = ? AND m.slot_key = ?"),
            (namespace, slot_key),
        )  # fmt: skip
        return d.record(row) if row else None

    def list_memories(
        self: SqlHost, flt: MemoryFilter, *, limit: int, offset: int = 0, newest_first: bool = True
    ) -> list[MemoryRecord]:
        d = self.dialect
        cond, params = d.condition(flt)
        order = "DESC" if newest_first else "ASC"
        rows = self._rows(
            d.sql(f"SELECT {SELECT_COLUMNS} FROM memories m WHERE {cond} "
                  f"ORDER BY m.created_at {order}, m.id {order} LIMIT ? OFFSET ?"),
            (*params, limit, offset),
        )  # fmt: skip
        return [d.record(r) for r in rows]

    def count(self: SqlHost, flt: MemoryFilter) -> int:
        d = self.dialect
        cond, params = d.condition(flt)
        return int(self._row(d.sql(f"SELECT count(*) FROM memories m WHERE {cond}"), params)[0])

    # --- edges, versions, entities ------------------------------------------------------
    def get_edge(self: SqlHost, edge_id: str) -> Edge | None:
        d = self.dialect
        row = self._row(d.sql(f"SELECT {EDGE_COLUMNS} FROM edges WHERE id = ?"), (edge_id,))
        return d.edge(row) if row else None

    def edges(self: SqlHost, memory_id: str, *, kind: str | None = None) -> list[Edge]:
        d = self.dialect
        sql = f"SELECT {EDGE_COLUMNS} FROM edges WHERE (source = ? OR target = ?)"
        params: list[Any] = [memory_id, memory_id]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        return [d.edge(r) for r in self._rows(d.sql(sql + " ORDER BY created_at, id"), params)]

    def versions(self: SqlHost, memory_id: str) -> list[Version]:
        d = self.dialect
        rows = self._rows(
            d.sql(f"SELECT {VERSION_COLUMNS} FROM versions WHERE memory_id = ? ORDER BY version"),
            (memory_id,),
        )
        return [d.version(r) for r in rows]

    def next_version(self: SqlHost, memory_id: str) -> int:
        row = self._row(
            self.dialect.sql(
                "SELECT COALESCE(MAX(version), 0) + 1 FROM versions WHERE memory_id = ?"
            ),
            (memory_id,),
        )
        return int(row[0])

    def by_entity(
        self: SqlHost, entity: str, flt: MemoryFilter, *, limit: int
    ) -> list[MemoryRecord]:
        d = self.dialect
        cond, params = d.condition(flt)
        rows = self._rows(
            d.sql(f"SELECT {SELECT_COLUMNS} FROM memory_entities e JOIN memories m "
                  f"ON m.{d.key} = e.key WHERE e.entity = ? AND {cond} "
                  "ORDER BY m.created_at DESC, m.id DESC LIMIT ?"),
            (entity.strip().lower(), *params, limit),
        )  # fmt: skip
        return [d.record(r) for r in rows]

    def entity_counts(self: SqlHost, flt: MemoryFilter) -> dict[str, int]:
        d = self.dialect
        cond, params = d.condition(flt)
        rows = self._rows(
            d.sql(f"SELECT e.entity, count(*) FROM memory_entities e JOIN memories m "
                  f"ON m.{d.key} = e.key WHERE {cond} GROUP BY e.entity ORDER BY 2 DESC, 1"),
            params,
        )  # fmt: skip
        return {entity: int(n) for entity, n in rows}

    # --- maintenance ----------------------------------------------------------------
    def stats(self: MemoryHost, flt: MemoryFilter) -> StoreStats:
        d = self.dialect
        cond, params = d.where(flt)
        everything = MemoryFilter(
            namespaces=flt.namespaces, include_expired=True, include_superseded=True
        )
        all_cond, all_params = d.where(everything)  # rendered: what the backends are given
        memories, expired, superseded, vectors = self._stat_counts(flt, all_cond, all_params)
        edges, versions = self._row(
            f"SELECT (SELECT count(*) FROM edges WHERE source IN "
            f"(SELECT m.id FROM memories m WHERE {all_cond})), "
            f"(SELECT count(*) FROM versions WHERE memory_id IN "
            f"(SELECT m.id FROM memories m WHERE {all_cond}))",
            [*all_params, *all_params],
        )

        def grouped(column: str) -> dict[str, int]:
            rows = self._rows(
                f"SELECT m.{column}, count(*) FROM memories m WHERE {cond} GROUP BY 1", params
            )
            return {str(k): int(n) for k, n in rows}

        model, dim = self.get_meta("embedding_model"), self.get_meta("embedding_dimension")
        return StoreStats(
            memories=memories,
            live=self.count(flt),
            expired=expired,
            superseded=superseded,
            edges=int(edges),
            versions=int(versions),
            vectors=vectors,
            by_namespace=grouped("namespace"),
            by_type=grouped("type"),
            by_kind=grouped("kind"),
            size_bytes=self._size_bytes() if flt.namespaces is None else 0,
            schema_version=self.schema_version(),
            embedder=f"{model}:{dim}" if model else None,
        )

    def iter_memories(self: SqlHost, flt: MemoryFilter, batch: int = 500) -> Iterator[MemoryRecord]:
        d = self.dialect
        cond, params = d.condition(flt)
        sql = d.sql(f"SELECT m.{d.key}, {SELECT_COLUMNS} FROM memories m "
                    f"WHERE m.{d.key} > ? AND {cond} ORDER BY m.{d.key} LIMIT ?")  # fmt: skip
        last = 0
        while True:
            rows = self._rows(sql, (last, *params, batch))
            if not rows:
                return
            for row in rows:
                yield d.record(row[1:])
            last = rows[-1][0]

    def iter_edges(self: SqlHost) -> Iterator[Edge]:
        rows = self._rows(f"SELECT {EDGE_COLUMNS} FROM edges ORDER BY created_at, id")
        yield from (self.dialect.edge(r) for r in rows)

    def iter_versions(self: SqlHost) -> Iterator[Version]:
        rows = self._rows(f"SELECT {VERSION_COLUMNS} FROM versions ORDER BY memory_id, version")
        yield from (self.dialect.version(r) for r in rows)
