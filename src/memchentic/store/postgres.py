"""The PostgreSQL store: many stateless processes share one server database.

Rows in ``memories`` (``timestamptz``, ``jsonb`` tags, entities and metadata, a
``tsvector`` for keywords), vectors in ``memory_vectors`` with a pgvector HNSW
index (cosine), document frequencies kept by a trigger in ``term_docs``. See
``postgres_connect`` for how a store is opened and how writers are serialised,
``postgres_search`` for the candidate stages, and ``migrations/postgres.py`` for
the schema.

Open one with ``Memory(store="postgresql://user@host/db?schema=team_a")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import StoreError
from ..lifetime import DecayScan
from ..record import Edge, MemoryRecord, Version
from .access_tables import AccessTables
from .base import MemoryFilter, RankRow, Store
from .keywords import LANGUAGE_KEY
from .memory_tables import MemoryTables
from .postgres_check import PostgresCheck
from .postgres_connect import open_location
from .postgres_extra import PostgresExtras
from .postgres_rows import (
    COLUMNS,
    EDGE_COLUMNS,
    SELECT_COLUMNS,
    VERSION_COLUMNS,
    jsonb,
    record_params,
    row_to_record,
    tsv_params,
)
from .postgres_search import RANK_COLUMNS, PostgresSearch, keep_rank_rows
from .tables import DirectoryTables, LogTables

_ENTITY_SQL = "SELECT unnest(%s::text[])"


def _entity_names(entities: Sequence[str]) -> list[str]:
    """Entity names as the index keeps them (trimmed, lower-case, once each)."""
    return sorted({e.strip().lower() for e in entities if e.strip()})


class PostgresStore(
    PostgresSearch, DirectoryTables, AccessTables, LogTables, MemoryTables, PostgresExtras,
    PostgresCheck, Store,
):  # fmt: skip
    """A memchentic store in one schema of a PostgreSQL database (pgvector required)."""

    def __init__(
        self,
        url: str,
        *,
        common_term_docs: int = 20000,
        common_window: int = 1000,
        exact_vector_rows: int = 20000,
        title_weight: float = 3.0,
        isolated_scan_rows: int = 500,
        statement_timeout: float = 0.0,
    ) -> None:
        self.isolated_scan_rows = isolated_scan_rows
        self.common_term_docs = common_term_docs
        self.common_window = common_window
        self.exact_vector_rows = exact_vector_rows
        self.title_weight = title_weight
        self._stem_cache = {}
        location = open_location(url, statement_timeout)
        self.location = location.display
        self._connect(location)
        # the language its keyword index stems in (a store made before issue 34: English)
        self.keyword_language = self.get_meta(LANGUAGE_KEY) or "english"

    def _tsv_sql(self) -> str:
        cfg = f"'{self._ts_config_literal}'"
        return (
            f"setweight(to_tsvector({cfg}, %s), 'A') || setweight(to_tsvector({cfg}, %s), 'B') "
            f"|| setweight(to_tsvector({cfg}, %s), 'C')"
        )

    # --- metadata -------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._row("SELECT value FROM meta WHERE key = %s", (key,))
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value; ``embedding_dimension`` also (re)builds the vector index."""
        with self.write():
            self._run(
                "INSERT INTO meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
            if key == "embedding_dimension":
                self._ensure_vector_index(int(value))

    def schema_version(self) -> int:
        return int(self._row("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0])

    # --- memories -------------------------------------------------------------------
    def insert(self, record: MemoryRecord, vector: np.ndarray) -> None:
        self.insert_many([(record, vector)])

    def insert_many(self, items: Sequence[tuple[MemoryRecord, np.ndarray]]) -> None:
        if not items:
            return
        # One statement per row (the row, its vector and its entities), sent
        # together: executemany pipelines them in one round trip.
        sql = (
            f"WITH m AS (INSERT INTO memories ({', '.join(COLUMNS)}, tsv) "
            f"VALUES ({', '.join(['%s'] * len(COLUMNS))}, {self._tsv_sql()}) RETURNING key), "
            f"v AS (INSERT INTO memory_vectors (key, embedding) SELECT key, %s FROM m) "
            f"INSERT INTO memory_entities (entity, key) SELECT e, m.key FROM m, "
            f"({_ENTITY_SQL}) AS names (e)"
        )
        rows = [
            (*record_params(record), *tsv_params(record, self.keyword_language),
             np.asarray(vector, dtype=np.float32), _entity_names(record.entities))
            for record, vector in items
        ]  # fmt: skip
        with self.write(), self.connection() as conn, conn.cursor() as cur:
            self._rows_changed()
            cur.executemany(sql, rows)

    def update(self, record: MemoryRecord, vector: np.ndarray | None = None) -> None:
        assignments = ", ".join(f"{c} = %s" for c in COLUMNS[1:])
        with self.write(), self.connection() as conn:
            self._rows_changed()
            row = conn.execute(
                f"UPDATE memories SET {assignments}, tsv = {self._tsv_sql()} "
                f"WHERE id = %s RETURNING key",
                (*record_params(record)[1:], *tsv_params(record, self.keyword_language), record.id),
            ).fetchone()
            if row is None:
                raise StoreError(f"cannot update a missing memory: {record.id}")
            if vector is not None:
                conn.execute(
                    "UPDATE memory_vectors SET embedding = %s WHERE key = %s",
                    (np.asarray(vector, dtype=np.float32), row[0]),
                )
            conn.execute("DELETE FROM memory_entities WHERE key = %s", (row[0],))
            conn.execute(
                "INSERT INTO memory_entities (entity, key) "
                f"SELECT e, %s FROM ({_ENTITY_SQL}) n (e)",
                (row[0], _entity_names(record.entities)),
            )

    def delete(self, memory_id: str) -> bool:
        with self.write(), self.connection() as conn:
            self._rows_changed()
            # The vector and the entities go with the row (ON DELETE CASCADE).
            if conn.execute("DELETE FROM memories WHERE id = %s", (memory_id,)).rowcount == 0:
                return False
            conn.execute("DELETE FROM edges WHERE source = %s OR target = %s",
                         (memory_id, memory_id))  # fmt: skip
            conn.execute(
                "UPDATE memories SET superseded_by = NULL WHERE superseded_by = %s", (memory_id,)
            )
        return True

    def get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        rows = self._rows(
            f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.id = ANY(%s)",
            (list(dict.fromkeys(ids)),),
        )
        return {r.id: r for r in map(row_to_record, rows)}

    def rank_rows(self, ids: Sequence[str], *, vectors: bool = False) -> dict[str, RankRow]:
        if not ids:
            return {}
        select = f"SELECT m.id, {RANK_COLUMNS} FROM memories m"
        if vectors:
            select = (f"SELECT m.id, {RANK_COLUMNS}, v.embedding FROM memories m "
                      "LEFT JOIN memory_vectors v ON v.key = m.key")  # fmt: skip
        rows = self._rows(
            f"{select} WHERE m.id = ANY(%s)", (list(dict.fromkeys(ids)),), binary=vectors
        )
        found: dict[str, RankRow] = {}
        keep_rank_rows(rows, 1, found)
        return found

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        rows = self._rows(
            "SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v ON v.key = m.key "
            "WHERE m.id = ANY(%s)",
            (list(dict.fromkeys(ids)),),
            binary=True,
        )
        return dict(rows)

    def touch(self, updates: Sequence[tuple[str, int, datetime, datetime | None]]) -> None:
        if not updates:
            return
        self._write_alone(
            "UPDATE memories SET recall_count = %s, last_recalled_at = %s, expires_at = %s "
            "WHERE id = %s",
            [(count, at, exp, mid) for mid, count, at, exp in updates],
        )

    # --- graph, versions, entities ----------------------------------------------------
    def add_edge(self, edge: Edge) -> None:
        with self.write():
            self._run(
                f"INSERT INTO edges ({EDGE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (edge.id, edge.source, edge.target, edge.kind, edge.strength, edge.created_at,
                 jsonb(edge.metadata)),
            )  # fmt: skip
            if edge.kind == "supersedes":
                self._run(
                    "UPDATE memories SET superseded_by = %s WHERE id = %s",
                    (edge.source, edge.target),
                )

    def delete_edge(self, edge_id: str) -> bool:
        with self.write():
            row = self._row("DELETE FROM edges WHERE id = %s RETURNING source, target, kind",
                            (edge_id,))  # fmt: skip
            if row is None:
                return False
            if row[2] == "supersedes":
                self._run(
                    "UPDATE memories SET superseded_by = NULL WHERE id = %s AND superseded_by = %s",
                    (row[1], row[0]),
                )
        return True

    def add_version(self, version: Version) -> None:
        self.add_versions([version])

    def add_versions(self, versions: Sequence[Version]) -> None:
        if not versions:
            return
        with self.write(), self.connection() as conn, conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO versions ({VERSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [(v.memory_id, v.version, v.op, v.actor, v.at, jsonb(v.changes, "changes"),
                  jsonb(v.snapshot, "snapshot") if v.snapshot else None) for v in versions],
            )  # fmt: skip

    def purge_versions(self, memory_id: str) -> None:
        """Drop a memory's versions (their snapshots hold its content)."""
        self._run("DELETE FROM versions WHERE memory_id = %s", (memory_id,))

    # --- maintenance ----------------------------------------------------------------
    def _stat_counts(
        self, flt: MemoryFilter, cond: str, params: Sequence[Any]
    ) -> tuple[int, int, int, int]:
        expired_sql = "count(*) FILTER (WHERE m.expires_at <= %s)" if flt.now else "0"
        counts = self._row(
            f"SELECT count(*), {expired_sql}, count(*) FILTER (WHERE m.superseded_by IS NOT NULL),"
            f" count(v.key) FROM memories m LEFT JOIN memory_vectors v ON v.key = m.key "
            f"WHERE {cond}",
            ([flt.now] if flt.now else []) + list(params),
        )
        return int(counts[0]), int(counts[1]), int(counts[2]), int(counts[3])

    def _size_bytes(self) -> int:
        return int(
            self._row(
                "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "WHERE c.relnamespace = current_schema()::regnamespace "
                "AND c.relkind IN ('r', 'm')",
            )[0]
        )

    def gc_candidates(
        self, expired_before: datetime, decay: DecayScan | None
    ) -> list[MemoryRecord]:
        sql = f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.expires_at <= %s"
        params: list[Any] = [expired_before]
        if decay is not None:
            sql += (
                " OR (m.expires_at IS NOT NULL AND NOT m.pinned AND EXTRACT(EPOCH FROM "
                "%s::timestamptz - GREATEST(m.updated_at, m.last_recalled_at))::float8 "
                ">= %s::float8 * 86400 * (m.confidence - %s::float8))"
            )
            params += [decay.now, decay.days_per_confidence, decay.floor]
        return [row_to_record(r) for r in self._rows(sql, params)]
