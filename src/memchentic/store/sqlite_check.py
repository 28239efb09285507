"""Integrity check, read snapshots and online backup of the SQLite store.

:meth:`SQLiteCheck.check` runs every check of :mod:`memchentic.store.integrity`
inside one write transaction, so the rows, the FTS5 index, the vector table, the
vector log and the in-process vector index are compared at one committed state
(writers wait for the check; about a second per 100k memories).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StoreCorruptError, StoreError
from .integrity import EXAMPLES, IntegrityReport, found, vector_problems
from .migrations.sqlite import MIGRATIONS
from .sqlite_conn import SQLiteStoreError

if TYPE_CHECKING:
    from .vectors import VectorIndex

#: Vectors whose values are compared with the vector index (all of them below this).
INDEX_SAMPLE = 256
#: Stored timestamps look like this (``clock.to_text``).
_TIME_GLOB = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].*"
_LATEST_LOG = (
    "SELECT l.key, l.op FROM vector_log l JOIN (SELECT key, MAX(seq) AS seq FROM vector_log "
    "GROUP BY key) t ON t.key = l.key AND t.seq = l.seq"
)


class SQLiteCheck:
    """Mixin for :class:`~memchentic.store.sqlite.SQLiteStore`."""

    path: Path
    location: str

    @property
    def conn(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

    def _found(self, what: str, sql: str, params: tuple[Any, ...] = ()) -> list[str]:
        """One problem line when ``sql`` (one column) selects rows: "N <what> (e.g. ...)"."""
        rows = [r[0] for r in self.conn.execute(sql, params)]
        return found(len(rows), what, rows)

    def _scalar(self, sql: str) -> int:
        return int(self.conn.execute(sql).fetchone()[0] or 0)

    # --- check ------------------------------------------------------------------------
    def check(self) -> dict[str, Any]:
        """Every check of :mod:`memchentic.store.integrity`; see :meth:`Store.check`.
        Maintenance: its statements run without the time budget."""
        with self.unbudgeted():  # type: ignore[attr-defined]
            return self._check_all()

    def _check_all(self) -> dict[str, Any]:
        report = IntegrityReport("sqlite", self.location)
        try:
            with self.write():  # type: ignore[attr-defined]
                self._check_schema(report)
                self._check_rows(report)
                dimension = self._check_vectors(report)
                self._check_keywords(report)
                self._check_vector_log(report)
                self._check_vector_index(report, dimension)
                self._check_links(report)
                self._check_database(report)
        except StoreCorruptError as exc:  # a damaged page stopped a check: say where
            report.record("database", [exc.message])
            with contextlib.suppress(StoreError):
                self._check_database(report)
        return report.to_dict()

    def _check_database(self, report: IntegrityReport) -> None:
        """SQLite's own check of every page and index (``PRAGMA integrity_check``)."""
        rows = [r[0] for r in self.conn.execute("PRAGMA integrity_check").fetchall()]
        report.record("database", [] if rows == ["ok"] else rows[:EXAMPLES])

    def _check_schema(self, report: IntegrityReport) -> None:
        report.schema_version = self.schema_version()  # type: ignore[attr-defined]
        report.expected_schema_version = len(MIGRATIONS)
        problems = []
        if report.schema_version != len(MIGRATIONS):
            problems.append(f"at version {report.schema_version}, expected {len(MIGRATIONS)}")
        if self.get_meta("app") != "memchentic":  # type: ignore[attr-defined]
            problems.append("meta 'app' is not memchentic")
        report.record("schema_version", problems)

    def _check_rows(self, report: IntegrityReport) -> None:
        report.record(
            "rows",
            self._found(
                "memories with unreadable JSON fields",
                "SELECT id FROM memories WHERE NOT (json_valid(tags) AND json_valid(entities) "
                "AND json_valid(metadata))",
            )
            + self._found(
                "memories with malformed timestamps",
                "SELECT id FROM memories WHERE created_at NOT GLOB ?1 OR updated_at NOT GLOB ?1 "
                "OR (expires_at IS NOT NULL AND expires_at NOT GLOB ?1)",
                (_TIME_GLOB,),
            ),
        )

    def _check_vectors(self, report: IntegrityReport) -> int | None:
        dim_text = self.get_meta("embedding_dimension")  # type: ignore[attr-defined]
        dimension = int(dim_text) if dim_text else None
        count = self._scalar("SELECT COUNT(*) FROM memories")
        report.counts.update(memories=count, vectors=self._scalar("SELECT COUNT(*) FROM vectors"))
        problems: list[str] = []
        if count and dimension is None:
            problems.append("memories are stored but no embedding dimension is recorded")
        problems += self._found(
            "memories without a vector",
            "SELECT m.id FROM memories m LEFT JOIN vectors v ON v.rowid = m.rowid "
            "WHERE v.rowid IS NULL",
        )
        problems += self._found(
            "vectors of missing memories (row keys)",
            "SELECT rowid FROM vectors WHERE rowid NOT IN (SELECT rowid FROM memories)",
        )
        bad: list[str] = []
        last = 0
        while True:  # stream every vector once: size and finiteness
            rows = self.conn.execute(
                "SELECT v.rowid, m.id, v.embedding FROM vectors v JOIN memories m "
                "ON m.rowid = v.rowid WHERE v.rowid > ? ORDER BY v.rowid LIMIT 2000",
                (last,),
            ).fetchall()
            if not rows:
                break
            last = rows[-1][0]
            vectors = {mid: _floats(blob) for _, mid, blob in rows}
            bad += vector_problems(vectors, list(vectors), dimension)[1]
        problems += found(len(bad), "vectors of the wrong size or not finite", bad)
        report.record("vectors", problems)
        return dimension

    def _check_keywords(self, report: IntegrityReport) -> None:
        indexed = self._scalar("SELECT COUNT(*) FROM memories_fts_docsize")
        report.counts["keyword_rows"] = indexed
        problems = []
        if indexed != report.counts["memories"]:
            problems.append(f"{indexed} rows indexed for {report.counts['memories']} memories")
        try:  # rank 1: compare the index with the content table too
            self.conn.execute(
                "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)"
            )
        except SQLiteStoreError as exc:
            problems.append(f"the full-text index does not match the memories ({exc})")
        report.record("keyword_index", problems)

    def _check_vector_log(self, report: IntegrityReport) -> None:
        report.counts["vector_log"] = self._scalar("SELECT COUNT(*) FROM vector_log")
        report.record(
            "vector_log",
            self._found(
                "logged vectors missing from the table (row keys)",
                f"SELECT key FROM ({_LATEST_LOG}) WHERE op = 'upsert' "
                f"AND key NOT IN (SELECT rowid FROM vectors)",
            )
            + self._found(
                "vectors the log does not know (row keys)",
                f"SELECT rowid FROM vectors WHERE rowid NOT IN "
                f"(SELECT key FROM ({_LATEST_LOG}) WHERE op = 'upsert')",
            ),
        )

    def _check_vector_index(self, report: IntegrityReport, dimension: int | None) -> None:
        index: VectorIndex | None = self._sync_index()  # type: ignore[attr-defined]
        keys = [r[0] for r in self.conn.execute("SELECT rowid FROM vectors ORDER BY rowid")]
        if index is None:
            report.counts["index_vectors"] = 0
            report.record("vector_index", found(len(keys), "vectors but no index", keys))
            return
        report.counts["index_vectors"] = len(index)
        probe = np.ones(index.dimension, dtype=np.float32)
        present = {key for key, _ in index.scan(probe, keys, len(keys))}
        absent = [k for k in keys if k not in present]
        problems = found(len(absent), "vectors missing from the index (row keys)", absent)
        problems += found(len(index) - len(present), "index entries of no stored vector", [])
        step = max(1, len(keys) // INDEX_SAMPLE)
        differ: list[int] = []
        for key in keys[::step]:
            if key not in present:
                continue
            blob = self.conn.execute(
                "SELECT embedding FROM vectors WHERE rowid = ?", (key,)
            ).fetchone()[0]
            vector = _floats(blob)
            if not np.any(vector) or not np.all(np.isfinite(vector)):
                continue  # nothing to compare (reported by the vectors check)
            hit = index.scan(vector, [key], 1)
            if not hit or hit[0][1] < 0.99:  # the graph keeps half precision
                differ.append(key)
        problems += found(len(differ), "index vectors differ from the table (row keys)", differ)
        report.record("vector_index", problems)

    def _check_links(self, report: IntegrityReport) -> None:
        missing = "NOT IN (SELECT id FROM memories)"
        checks = {
            "edges": (
                "edges name a missing memory",
                f"SELECT id FROM edges WHERE source {missing} OR target {missing}",
            ),
            "supersession": (
                "memories superseded by a missing one",
                f"SELECT id FROM memories WHERE superseded_by IS NOT NULL "
                f"AND superseded_by {missing}",
            ),
            "versions": (
                "missing memories still have versions",
                f"SELECT DISTINCT memory_id FROM versions WHERE op != 'delete' "
                f"AND memory_id {missing}",
            ),
            "entities": (
                "entity links to missing memories (row keys)",
                "SELECT DISTINCT key FROM memory_entities "
                "WHERE key NOT IN (SELECT rowid FROM memories)",
            ),
        }
        for name, (what, sql) in checks.items():
            report.record(name, self._found(what, sql))
        report.counts.update(
            edges=self._scalar("SELECT COUNT(*) FROM edges"),
            versions=self._scalar("SELECT COUNT(*) FROM versions"),
            entity_links=self._scalar("SELECT COUNT(*) FROM memory_entities"),
        )

    # --- snapshot and backup ----------------------------------------------------------
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads of this thread inside the block see one committed state; writers of
        other connections go on (WAL). No writes inside the block."""
        conn = self.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN DEFERRED")
        try:
            conn.execute("SELECT COUNT(*) FROM meta").fetchone()  # the snapshot starts here
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def backup_to(self, dest: str | os.PathLike[str]) -> int:
        """Copy the whole store, as of one committed state, to the new file ``dest``
        with SQLite's online backup API (writers go on meanwhile). The copy appears
        under its name only when complete. Returns its size in bytes.

        The vector index file is not copied: a store rebuilds it on first use."""
        target = Path(dest).expanduser()
        if target.exists():
            raise StoreError(f"{target} exists; choose a new file")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
        try:
            copy = sqlite3.connect(tmp)
            try:
                # pages=-1: one step, under one read lock: a consistent copy.
                self.conn.backup(copy, pages=-1)
            finally:
                copy.close()
            with open(tmp, "rb+") as handle:
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"backup to {target} failed: {exc}") from exc
        finally:
            for leftover in (tmp, tmp.with_name(f"{tmp.name}-journal")):
                with contextlib.suppress(OSError):
                    leftover.unlink()
        with contextlib.suppress(OSError):  # make the new name durable
            fd = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return target.stat().st_size


def _floats(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32) if len(blob) % 4 == 0 else np.array([np.nan])
