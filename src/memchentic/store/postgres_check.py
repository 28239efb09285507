"""Integrity check of the PostgreSQL store (``memchentic check``).

:meth:`PostgresCheck.check` runs inside one :meth:`snapshot` (a repeatable-read
transaction: one committed state, writers carry on): the checks every backend
gets through the store interface (:func:`~memchentic.store.integrity.generic_check`),
then the schema version, the JSON shapes of the rows, the keyword statistics
against the rows' ``tsvector`` entries, and the vector index's dimension and
validity. Types and foreign keys make the rest hold by construction (timestamps
are ``timestamptz``; an entity link or a vector cannot outlive its memory).
"""

from __future__ import annotations

from typing import Any

from .integrity import IntegrityReport, found, generic_check
from .migrations.postgres import MIGRATIONS
from .postgres_connect import APP_ID, PgConnections


class PostgresCheck(PgConnections):
    """Mixin for :class:`~memchentic.store.postgres.PostgresStore`."""

    def _found(self, what: str, sql: str, params: tuple[Any, ...] = ()) -> list[str]:
        """One problem line when ``sql`` (one column) selects rows: "N <what> (e.g. ...)"."""
        rows = [r[0] for r in self._rows(sql, params)]
        return found(len(rows), what, rows)

    def check(self) -> dict[str, Any]:
        """Every check of :mod:`memchentic.store.integrity` but ``vector_log`` (the
        server's index needs no change log); see :meth:`Store.check`. Maintenance:
        its statements run without the time budget."""
        with self.unbudgeted(), self.snapshot():
            report = generic_check(self, "postgres")  # type: ignore[arg-type]
            self._check_schema(report)
            report.record(
                "rows",
                self._found(
                    "memories with malformed JSON fields",
                    "SELECT id FROM memories WHERE jsonb_typeof(tags) <> 'array' "
                    "OR jsonb_typeof(entities) <> 'array' OR jsonb_typeof(metadata) <> 'object'",
                ),
            )
            self._check_keywords(report)
            self._check_vector_index(report)
            report.record(
                "entities",
                self._found(
                    "entity links to a missing memory",
                    "SELECT e.entity FROM memory_entities e "
                    "LEFT JOIN memories m ON m.key = e.key WHERE m.key IS NULL",
                ),
            )
            report.record("database", [])  # constraints hold by construction
        return report.to_dict()

    def _check_schema(self, report: IntegrityReport) -> None:
        report.expected_schema_version = len(MIGRATIONS)
        problems = []
        if report.schema_version != len(MIGRATIONS):
            problems.append(f"at version {report.schema_version}, expected {len(MIGRATIONS)}")
        row = self._row("SELECT value FROM meta WHERE key = 'app'")
        if row is None or row[0] != APP_ID:
            problems.append("meta 'app' is not memchentic")
        report.record("schema_version", problems)

    def _check_keywords(self, report: IntegrityReport) -> None:
        """term_docs holds each term's document count as the rows' tsvectors say."""
        drift = self._found(
            "index terms whose document count is wrong",
            "SELECT COALESCE(s.word, d.term) FROM ts_stat('SELECT tsv FROM memories') s "
            "FULL JOIN (SELECT term, docs FROM term_docs WHERE term <> '') d "
            "ON d.term = s.word WHERE s.ndoc IS DISTINCT FROM d.docs",
        )
        rows = self._row(
            "SELECT (SELECT count(*) FROM memories), "
            "COALESCE((SELECT docs FROM term_docs WHERE term = ''), 0), "
            "(SELECT count(*) FROM term_pending)"
        )
        if rows[0] != rows[1]:
            drift.append(f"the row count is {rows[1]}, the table holds {rows[0]}")
        if rows[2]:
            drift.append(f"{rows[2]} term changes were never folded into term_docs")
        report.record("keyword_index", drift)

    def _check_vector_index(self, report: IntegrityReport) -> None:
        dim_text = self._row("SELECT value FROM meta WHERE key = 'embedding_dimension'")
        dimension = int(dim_text[0]) if dim_text else None
        index = self._row(
            "SELECT pg_get_indexdef(i.indexrelid), i.indisvalid FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'ix_vectors_hnsw' "
            "AND c.relnamespace = current_schema()::regnamespace"
        )
        problems: list[str] = []
        if dimension is not None and index is None:
            problems.append(f"no HNSW index for dimension {dimension}")
        elif index is not None:
            if dimension is not None and f"vector({dimension})" not in index[0]:
                problems.append(f"the HNSW index is not for dimension {dimension}")
            if not index[1]:
                problems.append("the HNSW index is not valid (rebuild it: reindex)")
        report.record("vector_index", problems)
