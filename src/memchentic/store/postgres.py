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
from typing import Any

import numpy as np

from ..errors import StoreError
from ..record import MemoryRecord
from .base import MemoryFilter, RankRow
from .keywords import LANGUAGE_KEY, RULES_KEY, parse_rules
from .postgres_check import PostgresCheck
from .postgres_connect import open_location
from .postgres_extra import PostgresExtras
from .postgres_rows import (
    COLUMNS,
    SELECT_COLUMNS,
    record_params,
    row_to_record,
    tsv_params,
)
from .postgres_search import RANK_COLUMNS, PostgresSearch, keep_rank_rows
from .sql_store import SqlStore

_ENTITY_SQL = "SELECT unnest(%s::text[])"


def _entity_names(entities: Sequence[str]) -> list[str]:
    """Entity names as the index keeps them (trimmed, lower-case, once each)."""
    return sorted({e.strip().lower() for e in entities if e.strip()})


class PostgresStore(PostgresSearch, PostgresExtras, PostgresCheck, SqlStore):
    """A memchentic store in one schema of a PostgreSQL database (pgvector required):
    the PostgreSQL dialect, :class:`~.postgres_connect.PgConnections` (the host) and
    :class:`PostgresSearch`'s stages; the shared tables are
    :class:`~.sql_store.SqlStore`'s parts."""

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
        self.keyword_rules = parse_rules(self.get_meta(RULES_KEY))  # its index's rules

    def _tsv_sql(self) -> str:
        cfg = f"'{self._ts_config_literal}'"
        return (
            f"setweight(to_tsvector({cfg}, %s), 'A') || setweight(to_tsvector({cfg}, %s), 'B') "
            f"|| setweight(to_tsvector({cfg}, %s), 'C')"
        )

    # --- metadata -------------------------------------------------------------------
    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value; ``embedding_dimension`` also (re)builds the vector index."""
        with self.write():
            super().set_meta(key, value)
            if key == "embedding_dimension":
                self._ensure_vector_index(int(value))

    # --- memories -------------------------------------------------------------------
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
            (*record_params(record), *tsv_params(record, self.keyword_language, self.keyword_rules),
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
                (
                    *record_params(record)[1:],
                    *tsv_params(record, self.keyword_language, self.keyword_rules),
                    record.id,
                ),
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

    def _delete_row(self, memory_id: str) -> bool:
        self._rows_changed()
        # The vector and the entities go with the row (ON DELETE CASCADE).
        return self._run("DELETE FROM memories WHERE id = %s", (memory_id,)) > 0

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
