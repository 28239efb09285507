"""The reads of memories, edges, versions and entities, the writes of edges,
versions and recalls, the statistics, the rows gc may collect and the streams of
every row, written once for both backends.

Like :mod:`.tables`, in the SQL both engines read alike (``?`` parameters, rendered
by the store's :class:`~.dialect.Dialect`, which also maps the rows back, names
the memories' integer key and does the date arithmetic), composed from the store
as its host. What the engines do differently stays in the backends: the writes of
memory rows (their vectors and keyword entries), the counts of
:meth:`~.base.Store.stats` that one statement answers on PostgreSQL and several on
SQLite, and the size of the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from ..lifetime import DecayScan
from ..record import Edge, MemoryRecord, Version
from .base import StoreStats
from .filters import MemoryFilter
from .tables import EDGE_COLUMNS, SELECT_COLUMNS, VERSION_COLUMNS, Part, SqlHost


class MemoryHost(SqlHost, Protocol):
    """What :class:`MemoryTables` needs of a store besides :class:`~.tables.SqlHost`."""

    def write(self) -> AbstractContextManager[None]: ...

    def get_meta(self, key: str) -> str | None: ...

    def schema_version(self) -> int: ...

    def _erased(self) -> None:
        """Note, inside a write, that it deleted content (SQLite then empties its WAL)."""
        ...

    def _stat_counts(
        self, flt: MemoryFilter, cond: str, params: Sequence[Any]
    ) -> tuple[int, int, int, int]:
        """(rows, expired at ``flt.now``, superseded, vectors) of the memories that
        pass ``cond`` (the dialect's SQL of ``flt`` with every state included)."""
        ...

    def _size_bytes(self) -> int:
        """What the whole store takes on disk."""
        ...


class MemoryTables(Part):
    """Memories, edges, versions and entities as both backends read them, and the
    writes of edges, versions and recalls."""

    host: MemoryHost

    def __init__(self, host: MemoryHost) -> None:
        super().__init__(host)

    def get(self, memory_id: str) -> MemoryRecord | None:
        d = self.d
        row = self._row(d.sql(f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.id = ?"),
                        (memory_id,))  # fmt: skip
        return d.record(row) if row else None

    def find_slot(self, namespace: str, slot_key: str) -> MemoryRecord | None:
        d = self.d
        row = self._row(
            d.sql(f"SELECT {SELECT_COLUMNS} FROM memories m "
                  "WHERE m.namespace = ? AND m.slot_key = ?"),
            (namespace, slot_key),
        )  # fmt: skip
        return d.record(row) if row else None

    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, newest_first: bool = True
    ) -> list[MemoryRecord]:
        d = self.d
        cond, params = d.condition(flt)
        order = "DESC" if newest_first else "ASC"
        rows = self._rows(
            d.sql(f"SELECT {SELECT_COLUMNS} FROM memories m WHERE {cond} "
                  f"ORDER BY m.created_at {order}, m.id {order} LIMIT ? OFFSET ?"),
            (*params, limit, offset),
        )  # fmt: skip
        return [d.record(r) for r in rows]

    def count(self, flt: MemoryFilter) -> int:
        d = self.d
        cond, params = d.condition(flt)
        return int(self._row(d.sql(f"SELECT count(*) FROM memories m WHERE {cond}"), params)[0])

    # --- edges, versions, entities ------------------------------------------------------
    def get_edge(self, edge_id: str) -> Edge | None:
        d = self.d
        row = self._row(d.sql(f"SELECT {EDGE_COLUMNS} FROM edges WHERE id = ?"), (edge_id,))
        return d.edge(row) if row else None

    def edges(self, memory_id: str, *, kind: str | None = None) -> list[Edge]:
        d = self.d
        sql = f"SELECT {EDGE_COLUMNS} FROM edges WHERE (source = ? OR target = ?)"
        params: list[Any] = [memory_id, memory_id]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        return [d.edge(r) for r in self._rows(d.sql(sql + " ORDER BY created_at, id"), params)]

    def edges_among(
        self, memory_ids: Sequence[str], *, kind: str, limit: int | None = None
    ) -> list[Edge]:
        d = self.d
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        sql = (
            f"SELECT {EDGE_COLUMNS} FROM edges WHERE kind = ? "
            f"AND (source IN ({marks}) OR target IN ({marks})) ORDER BY created_at DESC, id DESC"
        )
        params: list[Any] = [kind, *ids, *ids]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [d.edge(r) for r in self._rows(d.sql(sql), params)]

    def versions(self, memory_id: str) -> list[Version]:
        d = self.d
        rows = self._rows(
            d.sql(f"SELECT {VERSION_COLUMNS} FROM versions WHERE memory_id = ? ORDER BY version"),
            (memory_id,),
        )
        return [d.version(r) for r in rows]

    def next_version(self, memory_id: str) -> int:
        row = self._row(
            self.d.sql("SELECT COALESCE(MAX(version), 0) + 1 FROM versions WHERE memory_id = ?"),
            (memory_id,),
        )
        return int(row[0])

    def by_entity(self, entity: str, flt: MemoryFilter, *, limit: int) -> list[MemoryRecord]:
        d = self.d
        cond, params = d.condition(flt)
        rows = self._rows(
            d.sql(f"SELECT {SELECT_COLUMNS} FROM memory_entities e JOIN memories m "
                  f"ON m.{d.key} = e.key WHERE e.entity = ? AND {cond} "
                  "ORDER BY m.created_at DESC, m.id DESC LIMIT ?"),
            (entity.strip().lower(), *params, limit),
        )  # fmt: skip
        return [d.record(r) for r in rows]

    def entity_counts(self, flt: MemoryFilter) -> dict[str, int]:
        d = self.d
        cond, params = d.condition(flt)
        rows = self._rows(
            d.sql(f"SELECT e.entity, count(*) FROM memory_entities e JOIN memories m "
                  f"ON m.{d.key} = e.key WHERE {cond} GROUP BY e.entity ORDER BY 2 DESC, 1"),
            params,
        )  # fmt: skip
        return {entity: int(n) for entity, n in rows}

    def add_edge(self, edge: Edge) -> None:
        d = self.d
        with self.host.write():
            self._run(
                d.sql(f"INSERT INTO edges ({EDGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"),
                (edge.id, edge.source, edge.target, edge.kind, edge.strength,
                 d.value(edge.created_at), d.json(edge.metadata)),
            )  # fmt: skip
            if edge.kind == "supersedes":
                self._run(d.sql("UPDATE memories SET superseded_by = ? WHERE id = ?"),
                          (edge.source, edge.target))  # fmt: skip

    def delete_edge(self, edge_id: str) -> bool:
        d = self.d
        with self.host.write():
            row = self._row(d.sql("SELECT source, target, kind FROM edges WHERE id = ?"),
                            (edge_id,))  # fmt: skip
            if row is None:
                return False
            self._run(d.sql("DELETE FROM edges WHERE id = ?"), (edge_id,))
            if row[2] == "supersedes":
                self._run(
                    d.sql("UPDATE memories SET superseded_by = NULL "
                          "WHERE id = ? AND superseded_by = ?"),
                    (row[1], row[0]),
                )  # fmt: skip
        return True

    def unlink(self, memory_id: str) -> None:
        """What points at a deleted memory goes: its edges, and ``superseded_by``."""
        d = self.d
        self._run(d.sql("DELETE FROM edges WHERE source = ? OR target = ?"), (memory_id, memory_id))
        self._run(d.sql("UPDATE memories SET superseded_by = NULL WHERE superseded_by = ?"),
                  (memory_id,))  # fmt: skip

    def add_versions(self, versions: Sequence[Version]) -> None:
        if not versions:
            return
        d = self.d
        self._write_alone(
            d.sql(f"INSERT INTO versions ({VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"),
            [(v.memory_id, v.version, v.op, v.actor, d.value(v.at), d.json(v.changes, "changes"),
              d.json(v.snapshot, "snapshot") if v.snapshot else None) for v in versions],
        )  # fmt: skip

    def purge_versions(self, memory_id: str) -> None:
        """Drop a memory's versions (their snapshots hold its content)."""
        with self.host.write():
            self._run(self.d.sql("DELETE FROM versions WHERE memory_id = ?"), (memory_id,))
            self.host._erased()

    def touch(self, updates: Sequence[tuple[str, int, datetime, datetime | None]]) -> None:
        if not updates:
            return
        d = self.d
        self._write_alone(
            d.sql("UPDATE memories SET recall_count = ?, last_recalled_at = ?, expires_at = ? "
                  "WHERE id = ?"),
            [(count, d.value(at), d.value(exp), mid) for mid, count, at, exp in updates],
        )  # fmt: skip

    # --- maintenance ----------------------------------------------------------------
    def gc_candidates(
        self, expired_before: datetime, decay: DecayScan | None
    ) -> list[MemoryRecord]:
        d = self.d
        sql = f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.expires_at <= ?"
        params: list[Any] = [d.value(expired_before)]
        if decay is not None:
            sql += (f" OR (m.expires_at IS NOT NULL AND m.pinned = {d.false} "
                    f"AND {d.decayed('m')})")  # fmt: skip
            params += [d.value(decay.now), decay.days_per_confidence, decay.floor]
        return [d.record(r) for r in self._rows(d.sql(sql), params)]

    def stats(self, flt: MemoryFilter) -> StoreStats:
        d = self.d
        cond, params = d.where(flt)
        everything = MemoryFilter(
            namespaces=flt.namespaces, include_expired=True, include_superseded=True
        )
        all_cond, all_params = d.where(everything)  # rendered: what the backends are given
        memories, expired, superseded, vectors = self.host._stat_counts(flt, all_cond, all_params)
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

        host = self.host
        model, dim = host.get_meta("embedding_model"), host.get_meta("embedding_dimension")
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
            size_bytes=host._size_bytes() if flt.namespaces is None else 0,
            schema_version=host.schema_version(),
            embedder=f"{model}:{dim}" if model else None,
        )

    def iter_memories(self, flt: MemoryFilter, batch: int = 500) -> Iterator[MemoryRecord]:
        d = self.d
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

    def iter_edges(self) -> Iterator[Edge]:
        rows = self._rows(f"SELECT {EDGE_COLUMNS} FROM edges ORDER BY created_at, id")
        yield from (self.d.edge(r) for r in rows)

    def iter_versions(self) -> Iterator[Version]:
        rows = self._rows(f"SELECT {VERSION_COLUMNS} FROM versions ORDER BY memory_id, version")
        yield from (self.d.version(r) for r in rows)
