"""The embedded SQLite store: one file, WAL, FTS5, vectors beside the rows.

Concurrency: every thread gets its own connection; writers take the database
write lock up front (``BEGIN IMMEDIATE``) so a check-then-write sequence is
atomic across threads and processes; ``busy_timeout`` waits for the lock and
:meth:`SQLiteStore.write` retries a bounded number of times on top.

Vectors: float32 bytes in ``vectors``; every change is appended to
``vector_log`` by triggers, and each process's :class:`VectorIndex` replays the
log before it answers, so a search sees every committed write (read your
writes, across processes too).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..clock import from_text, to_text
from ..errors import NotAStoreError, StoreError
from ..lifetime import DecayScan
from ..record import Edge, MemoryRecord, Version
from ..text import fts_phrase, query_words
from .base import MemoryFilter, Neighbour, RankRow, Store, StoreStats
from .migrations.sqlite import MIGRATIONS, TOKENIZER, migrate
from .sqlite_check import SQLiteCheck
from .sqlite_checkpoint import BACKSTOP_PAGES, Checkpointer
from .sqlite_conn import GuardedConnection, SQLiteStoreError, backoff, is_locked
from .sqlite_extra import SQLiteExtras
from .sqlite_files import make_folder, open_error, probe, store_leftovers, truncate_wal
from .sqlite_isolated import SQLiteIsolated
from .sqlite_rows import (
    COLUMNS,
    SELECT_COLUMNS,
    record_params,
    row_to_edge,
    row_to_record,
    row_to_version,
    to_json,
    where,
)
from .tables import DirectoryTables, LogTables
from .vectors import VectorIndex

#: The columns of a :class:`RankRow`, in its order.
_RANK_COLUMNS = (
    "m.session_id, m.updated_at, m.kind, m.type, m.reinforcement, m.recall_count, m.path_hint, "
    "m.namespace, m.created_at"
)
_RANK_WIDTH = 9


def _rank_row(row: Sequence[Any], at: int) -> RankRow:
    """The RankRow in ``row`` from column ``at`` on (_RANK_COLUMNS, then maybe a
    vector blob)."""
    session, updated, kind, type_, reinforcement, recalls, path, namespace, created = row[
        at : at + _RANK_WIDTH
    ]
    blob = row[at + _RANK_WIDTH] if len(row) > at + _RANK_WIDTH else None
    vector = np.frombuffer(blob, dtype=np.float32) if blob is not None else None
    return RankRow(session, from_text(updated), kind, type_, reinforcement, recalls, path,
                   namespace, from_text(created), vector)  # fmt: skip


#: A bulk insert of at least this many memories writes their keyword rows with one
#: statement (``_KEYWORD_ROWS``), its insert trigger set aside inside its own
#: transaction: FTS5 fed by the row trigger cost 60-90 us a memory, by one
#: statement 6-10 us. The trigger stays in the schema (every other insert, and
#: every other version of this code, relies on it); dropping and creating it again
#: costs each other connection a schema reload (about 1 ms) per bulk insert.
KEYWORD_STATEMENT_ROWS = 32
_KEYWORD_TRIGGER = "memories_fts_ai"
_KEYWORD_ROWS = (
    "INSERT INTO memories_fts(rowid, title, content, tags) "
    "SELECT rowid, title, content, tags FROM memories WHERE rowid >= ? AND rowid < ?"
)
APP_ID = "memchentic"
_LOCK_RETRIES = 8
#: Address space each connection may map of the database file (not memory: the OS
#: pages in what is read, shared with every other reader of the file).
MMAP_BYTES = 1 << 34


class SQLiteStore(SQLiteCheck, DirectoryTables, LogTables, SQLiteExtras, SQLiteIsolated, Store):
    """A memchentic store in one SQLite file (``:memory:`` is not supported:
    several connections must see the same data)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        common_term_docs: int = 20000,
        common_window: int = 1000,
        exact_vector_rows: int = 20000,
        title_weight: float = 3.0,
        secure_delete: bool = True,
        isolated_scan_rows: int = 500,
    ) -> None:
        self.path = Path(path).expanduser()
        self.isolated_scan_rows = isolated_scan_rows
        #: Deleted content is overwritten in the file, and the WAL emptied after
        #: each write that deleted some (docs/reliability.md, "Deleting").
        self.secure_delete = secure_delete
        self.location = str(self.path)
        self.common_term_docs = common_term_docs
        self.common_window = common_window
        self.exact_vector_rows = exact_vector_rows
        self.title_weight = title_weight
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._index: VectorIndex | None = None
        self._index_lock = threading.RLock()
        self._closed = False
        self.checkpointer = Checkpointer(self._checkpoint_connection)
        make_folder(self.path)
        # Read-only first: a file this code must refuse is left exactly as it was.
        probe(self.path, len(MIGRATIONS))
        self._open()
        store_leftovers(self.path)

    # --- connections ----------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=30.0, check_same_thread=False,
                factory=GuardedConnection,
            )  # fmt: skip
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        conn.store_path = self.location
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA secure_delete = {'ON' if self.secure_delete else 'OFF'}")
            conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints run on a thread of their own (sqlite_checkpoint): a commit
            # makes one itself only past this many pages of WAL.
            conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
            conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: BM25 walks posting lists
            # Reads through a memory map: a search reads a few hundred rows spread over
            # the file, and a mapped page costs no read() call (the WAL still works).
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            # A query tokenizer with the index's own rules (see _stems), created
            # outside any transaction so a rollback cannot take it away.
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens "
                f"USING fts5(word, tokenize='{TOKENIZER}')"
            )
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_terms "
                "USING fts5vocab(temp, query_tokens, instance)"
            )
        except SQLiteStoreError as exc:
            conn.close()
            refused = open_error(exc, self.path)
            if refused is None:
                raise
            raise refused from exc
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _checkpoint_connection(self) -> sqlite3.Connection:
        """The checkpoint thread's connection (it runs nothing else)."""
        return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError("the store is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def _open(self) -> None:
        conn = self.conn
        try:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        except SQLiteStoreError as exc:
            refused = open_error(exc, self.path)
            if refused is None:
                raise
            raise refused from exc
        if tables and "meta" not in tables:
            raise NotAStoreError(f"{self.path} is not a memchentic store (no meta table)")
        if "meta" in tables and self.get_meta("app") != APP_ID:
            raise NotAStoreError(f"{self.path} is not a memchentic store")
        with self.write():
            migrate(conn, self.location)
            if self.get_meta("app") is None:
                self.set_meta("app", APP_ID)
                self.set_meta("index_epoch", str(time.time_ns()))

    def close(self) -> None:
        if self._closed:
            return
        if self._index is not None:  # bulk writes leave it behind the log: catch up
            with contextlib.suppress(SQLiteStoreError, StoreError):
                self._sync_index()
        with self._index_lock:
            if self._index is not None and len(self._index):
                # The index is a cache: on failure the next open rebuilds or replays.
                with contextlib.suppress(OSError, RuntimeError):
                    self._index.save(self._index_path, self.get_meta("index_epoch") or "")
        self._closed = True
        self.checkpointer.close()
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()

    def _erased(self) -> None:
        """Note, inside a write, that it deleted content: with ``secure_delete`` the
        WAL, which still holds the pages as they were, is emptied after the commit."""
        if self.secure_delete:
            self._local.erased = True

    @property
    def _index_path(self) -> Path:
        return self.path.with_name(self.path.name + ".vectors")

    # --- transactions ---------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[None]:
        conn = self.conn
        if conn.in_transaction:  # nested: join the open transaction
            yield
            return
        for attempt in range(_LOCK_RETRIES):
            try:
                conn.execute("BEGIN IMMEDIATE")
                break
            except SQLiteStoreError as exc:
                if not is_locked(exc) or attempt == _LOCK_RETRIES - 1:
                    raise StoreError(f"could not lock the store: {exc}") from exc
                time.sleep(backoff(attempt))
        index = self._index
        seq_at_start = index.applied_seq if index is not None else None
        changes_at_start = conn.total_changes
        try:
            yield
            conn.execute("COMMIT")
            self.checkpointer.committed(conn.total_changes - changes_at_start)
        except BaseException:
            self._local.erased = False
            if conn.in_transaction:  # SQLite may have rolled back already (disk full)
                with contextlib.suppress(SQLiteStoreError):
                    conn.execute("ROLLBACK")
            with self._index_lock:
                # The index may hold vectors of rows that were never committed, and
                # the log's sequence numbers will be reused: rebuild it on next use.
                current = self._index
                if current is not None and (
                    current is not index or current.applied_seq != seq_at_start
                ):
                    self._index = None
            raise
        if getattr(self._local, "erased", False):
            self._local.erased = False
            truncate_wal(conn)

    # --- metadata -------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    # --- memories -------------------------------------------------------------------
    def _rowid(self, memory_id: str) -> int | None:
        row = self.conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return row[0] if row else None

    def insert(self, record: MemoryRecord, vector: np.ndarray) -> None:
        with self.write():
            cur = self.conn.execute(
                f"INSERT INTO memories({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})",
                record_params(record),
            )
            key = cur.lastrowid
            self.conn.execute(
                "INSERT INTO vectors(rowid, embedding) VALUES (?, ?)",
                (key, np.asarray(vector, dtype=np.float32).tobytes()),
            )
            self._set_entities(key, record.entities)

    def insert_many(self, items: Sequence[tuple[MemoryRecord, np.ndarray]]) -> None:
        if not items:
            return
        with self.write():
            conn = self.conn
            first = conn.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM memories").fetchone()[0]
            # Explicit rowids (the next free ones; the write lock is held), so the
            # vectors and entity links can go in with one statement each too.
            keys = range(first, first + len(items))
            bulk = len(items) >= KEYWORD_STATEMENT_ROWS
            trigger = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                (_KEYWORD_TRIGGER,),
            ).fetchone() if bulk else None  # fmt: skip
            if trigger is not None:  # back before commit; a rollback restores it too
                conn.execute(f"DROP TRIGGER {_KEYWORD_TRIGGER}")
            conn.executemany(
                f"INSERT INTO memories(rowid, {', '.join(COLUMNS)}) "
                f"VALUES (?, {', '.join('?' * len(COLUMNS))})",
                [(key, *record_params(record))
                 for key, (record, _) in zip(keys, items, strict=True)],
            )  # fmt: skip
            if bulk:
                conn.execute(_KEYWORD_ROWS, (first, first + len(items)))
            if trigger is not None:
                conn.execute(trigger[0])
            conn.executemany(
                "INSERT INTO vectors(rowid, embedding) VALUES (?, ?)",
                [(key, np.asarray(vector, dtype=np.float32).tobytes())
                 for key, (_, vector) in zip(keys, items, strict=True)],
            )  # fmt: skip
            conn.executemany(
                "INSERT INTO memory_entities(entity, key) VALUES (?, ?)",
                [(name, key) for key, (record, _) in zip(keys, items, strict=True)
                 for name in {e.strip().lower() for e in record.entities if e.strip()}],
            )  # fmt: skip

    def update(self, record: MemoryRecord, vector: np.ndarray | None = None) -> None:
        with self.write():
            key = self._rowid(record.id)
            if key is None:
                raise StoreError(f"cannot update a missing memory: {record.id}")
            assignments = ", ".join(f"{c} = ?" for c in COLUMNS[1:])
            self.conn.execute(
                f"UPDATE memories SET {assignments} WHERE rowid = ?",
                (*record_params(record)[1:], key),
            )
            if vector is not None:
                self.conn.execute(
                    "UPDATE vectors SET embedding = ? WHERE rowid = ?",
                    (np.asarray(vector, dtype=np.float32).tobytes(), key),
                )
            self._set_entities(key, record.entities)

    def _set_entities(self, key: int | None, entities: Sequence[str]) -> None:
        self.conn.execute("DELETE FROM memory_entities WHERE key = ?", (key,))
        names = {e.strip().lower() for e in entities if e.strip()}
        self.conn.executemany(
            "INSERT INTO memory_entities(entity, key) VALUES (?, ?)", [(n, key) for n in names]
        )

    def delete(self, memory_id: str) -> bool:
        with self.write():
            key = self._rowid(memory_id)
            if key is None:
                return False
            self.conn.execute("DELETE FROM memories WHERE rowid = ?", (key,))
            self.conn.execute("DELETE FROM vectors WHERE rowid = ?", (key,))
            self.conn.execute("DELETE FROM memory_entities WHERE key = ?", (key,))
            self.conn.execute(
                "DELETE FROM edges WHERE source = ? OR target = ?", (memory_id, memory_id)
            )
            self.conn.execute(
                "UPDATE memories SET superseded_by = NULL WHERE superseded_by = ?", (memory_id,)
            )
            self._erased()
        return True

    def get(self, memory_id: str) -> MemoryRecord | None:
        row = self.conn.execute(
            f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.id = ?", (memory_id,)
        ).fetchone()
        return row_to_record(row) if row else None

    def _by_ids(self, select: str, ids: Sequence[str]) -> Iterator[Any]:
        """Rows of ``select ... WHERE m.id IN (ids)``, the ids deduplicated and sent in
        chunks (SQLite caps the parameters of one statement)."""
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            yield from self.conn.execute(
                f"{select} WHERE m.id IN ({', '.join('?' * len(chunk))})", chunk
            ).fetchall()  # one call, not a step a row

    def _by_rowids(
        self,
        columns: str,
        keys: Sequence[int],
        cond: str = "1",
        params: Sequence[Any] = (),
        joined: str = "",
    ) -> Iterator[Any]:
        """``columns`` of ``memories m`` (and ``joined``) at these rowids that pass
        ``cond``, in chunks. ``NOT INDEXED``: the keys are looked up by rowid; left
        alone, the planner may pick a filter column's index instead and walk every
        row of the namespace."""
        for start in range(0, len(keys), 4096):
            chunk = keys[start : start + 4096]
            yield from self.conn.execute(
                f"SELECT {columns} FROM memories m NOT INDEXED {joined} "
                f"WHERE m.rowid IN ({', '.join('?' * len(chunk))}) AND {cond}",
                (*chunk, *params),
            ).fetchall()  # one call, not a step a row

    def get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        records = map(row_to_record, self._by_ids(f"SELECT {SELECT_COLUMNS} FROM memories m", ids))
        return {record.id: record for record in records}

    def rank_rows(self, ids: Sequence[str], *, vectors: bool = False) -> dict[str, RankRow]:
        select = f"SELECT m.id, {_RANK_COLUMNS} FROM memories m"
        if vectors:
            select = (f"SELECT m.id, {_RANK_COLUMNS}, v.embedding FROM memories m "
                      "LEFT JOIN vectors v ON v.rowid = m.rowid")  # fmt: skip
        return {row[0]: _rank_row(row, 1) for row in self._by_ids(select, ids)}

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._by_ids(
            "SELECT m.id, v.embedding FROM memories m JOIN vectors v ON v.rowid = m.rowid", ids
        )
        return {memory_id: np.frombuffer(blob, dtype=np.float32) for memory_id, blob in rows}

    def find_slot(self, namespace: str, slot_key: str) -> MemoryRecord | None:
        row = self.conn.execute(
            f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.namespace = ? AND m.slot_key = ?",
            (namespace, slot_key),
        ).fetchone()
        return row_to_record(row) if row else None

    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, newest_first: bool = True
    ) -> list[MemoryRecord]:
        cond, params = where(flt)
        order = "DESC" if newest_first else "ASC"
        rows = self.conn.execute(
            f"SELECT {SELECT_COLUMNS} FROM memories m WHERE {cond} "
            f"ORDER BY m.created_at {order}, m.id {order} LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [row_to_record(r) for r in rows]

    def count(self, flt: MemoryFilter) -> int:
        cond, params = where(flt)
        return int(self.conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {cond}", params)
                   .fetchone()[0])  # fmt: skip

    def touch(self, updates: Sequence[tuple[str, int, datetime, datetime | None]]) -> None:
        if not updates:
            return
        with self.write():
            self.conn.executemany(
                "UPDATE memories SET recall_count = ?, last_recalled_at = ?, expires_at = ? "
                "WHERE id = ?",
                [(count, to_text(at), to_text(exp), mid) for mid, count, at, exp in updates],
            )

    # --- vectors --------------------------------------------------------------------
    def _sync_index(self) -> VectorIndex | None:
        """Bring this process's index up to the committed vector log."""
        with self._index_lock:
            meta = dict(
                self.conn.execute(
                    "SELECT key, value FROM meta "
                    "WHERE key IN ('embedding_dimension', 'index_epoch')"
                ).fetchall()
            )
            dim_text = meta.get("embedding_dimension")
            if dim_text is None:
                return None
            epoch = meta.get("index_epoch") or ""
            dim = int(dim_text)
            index = self._index
            if index is None or index.dimension != dim or getattr(index, "epoch", None) != epoch:
                index = VectorIndex.load(
                    self._index_path, epoch, dim, exact_below=self.exact_vector_rows
                ) or VectorIndex(dim, exact_below=self.exact_vector_rows)
                index.epoch = epoch  # type: ignore[attr-defined]
                self._index = index
            changes = self.conn.execute(
                "SELECT seq, key, op FROM vector_log WHERE seq > ? ORDER BY seq",
                (index.applied_seq,),
            ).fetchall()
            if not changes:
                return index
            latest: dict[int, str] = {}
            for _, key, op in changes:
                latest[key] = op
            removed = [k for k, op in latest.items() if op == "delete"]
            upserted = [k for k, op in latest.items() if op == "upsert"]
            index.remove(removed)
            for start in range(0, len(upserted), 8192):
                chunk = upserted[start : start + 8192]
                if len(chunk) == 1:  # the common case: one write since the last search
                    rows = self.conn.execute(
                        "SELECT rowid, embedding FROM vectors WHERE rowid = ?", chunk
                    ).fetchall()
                else:
                    rows = self.conn.execute(
                        f"SELECT rowid, embedding FROM vectors "
                        f"WHERE rowid IN ({', '.join('?' * len(chunk))})",
                        chunk,
                    ).fetchall()
                keys = [r[0] for r in rows]
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                matrix = matrix.reshape(len(rows), dim)
                index.upsert(keys, matrix)
                if len(rows) < len(chunk):
                    index.remove(list(set(chunk) - set(keys)))
            index.applied_seq = changes[-1][0]
            return index

    def vector_search(
        self,
        vector: np.ndarray,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
    ) -> list[tuple[str, float]]:
        if flt.isolated and k > 0:  # untrusted caller: never through the shared graph
            visible = self._vector_isolated(vector, k, flt)
            if visible is not None:
                return visible
        index = self._sync_index()
        if index is None or k <= 0 or not len(index):
            return []
        cond, params = where(flt)
        query = np.asarray(vector, dtype=np.float32)
        # Few rows fail a filter with no namespace or field restriction (expired or
        # superseded ones): ask for a little more than k, not four times as many.
        fetch = k + max(8, k // 4) if flt.is_unrestricted() else k * 4
        while True:
            found = index.search(query, fetch)
            passing = self._passing([key for key, _ in found], cond, params, rows)
            if len(passing) >= k or len(found) >= len(index):
                break
            allowed = self.conn.execute(
                f"SELECT m.rowid FROM memories m WHERE {cond} LIMIT ?",
                (*params, self.exact_vector_rows + 1),
            ).fetchall()
            if len(allowed) <= self.exact_vector_rows:  # few rows pass: scan them exactly
                found = index.scan(query, [r[0] for r in allowed], k)
                passing = self._passing([key for key, _ in found], cond, params, rows)
                break
            fetch *= 8
        # The index holds the exact float32 rows: its cosines are final.
        hits = [(passing[key], cosine) for key, cosine in found if key in passing]
        hits.sort(key=lambda item: (-item[1], item[0]))
        return hits[:k]

    def similar_many(
        self,
        vectors: np.ndarray,
        k: int,
        min_cosine: float,
    ) -> list[list[Neighbour]]:
        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        index = self._sync_index()
        if index is None or not len(index) or k <= 0:
            return [[] for _ in range(len(queries))]
        close = index.search_many(queries, k, min_cosine)
        keys = list(dict.fromkeys(key for hits in close for key, _ in hits))
        facts = {
            key: row
            for key, *row in self._by_rowids(
                "m.rowid, m.id, m.namespace, m.kind, m.polarity, m.superseded_by, m.expires_at",
                keys,
            )
        }
        out: list[list[Neighbour]] = []
        for hits in close:
            found = []
            for key, cosine in hits:
                if (row := facts.get(key)) is not None:
                    memory_id, namespace, kind, polarity, superseded, expires = row
                    found.append(Neighbour(
                        memory_id, cosine, namespace, kind, polarity, superseded,
                        from_text(expires),
                    ))  # fmt: skip
            out.append(found)
        return out

    def _passing(
        self,
        keys: Sequence[int],
        cond: str,
        params: list[Any],
        rank_rows: dict[str, RankRow] | None = None,
        *,
        with_vectors: bool = False,
    ) -> dict[int, str]:
        """The keys (rows) that pass the filter, with their ids; with ``rank_rows``,
        their :class:`RankRow` too (read from the same rows), with their vectors
        when ``with_vectors``."""
        out: dict[int, str] = {}
        columns, joined = "m.rowid, m.id", ""
        if rank_rows is not None:
            columns += f", {_RANK_COLUMNS}"
            if with_vectors:
                columns += ", v.embedding"
                joined = "LEFT JOIN vectors v ON v.rowid = m.rowid"
        rows = self._by_rowids(columns, keys, cond, params, joined)
        if rank_rows is None:
            out.update(rows)
            return out
        for row in rows:
            out[row[0]] = row[1]
            rank_rows[row[1]] = _rank_row(row, 2)
        return out

    def replace_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        with self.write():
            self.conn.executemany(
                "UPDATE vectors SET embedding = ? "
                "WHERE rowid = (SELECT rowid FROM memories WHERE id = ?)",
                [(np.asarray(v, dtype=np.float32).tobytes(), mid) for mid, v in vectors.items()],
            )

    # --- keywords -------------------------------------------------------------------
    def index_terms(self, text: str) -> list[str]:
        words = query_words(text, max_words=10_000)
        return [term for _, term in self._stems(words)]

    def _stems(self, words: Sequence[str]) -> list[tuple[str, str]]:
        """(word, index term) pairs, tokenised exactly as the keyword index does.

        Each word's terms are remembered (the tokenizer is fixed), so only words
        not seen before go through SQLite's tokenizer.
        """
        if not words:
            return []
        cache: dict[str, tuple[str, ...]] | None = getattr(self, "_stem_cache", None)
        if cache is None or len(cache) > 100_000:
            cache = {}
            self._stem_cache = cache
        todo = list(dict.fromkeys(w for w in words if w not in cache))
        if todo:
            conn = self.conn
            conn.executemany(
                "INSERT INTO temp.query_tokens(rowid, word) VALUES (?, ?)",
                list(enumerate(todo, start=1)),
            )
            found: dict[str, list[str]] = {w: [] for w in todo}
            rows = conn.execute("SELECT doc, term FROM temp.query_terms ORDER BY doc, offset")
            for doc, term in rows:
                found[todo[doc - 1]].append(term)
            conn.execute("DELETE FROM temp.query_tokens")
            for word, terms in found.items():
                cache[word] = tuple(terms)
        return [(word, term) for word in words for term in cache[word]]

    def _write_stamp(self) -> int:
        """A counter that grows with every vector change (so with every memory
        added, re-embedded or deleted): how far cached statistics may have drifted."""
        row = self.conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'"
        ).fetchone()
        return int(row[0]) if row else 0

    def _doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Memories holding each term. Counting walks the term's whole posting list,
        so a large count is reused until the writes since could have moved it by
        more than 2% (small counts are always read afresh)."""
        if not terms:
            return {}
        cache: dict[str, tuple[int, int]] | None = getattr(self, "_df_cache", None)
        if cache is None or len(cache) > 100_000:
            cache = {}
            self._df_cache = cache
        stamp = self._write_stamp()
        out: dict[str, int] = {}
        todo: list[str] = []
        for term in terms:
            hit = cache.get(term)
            if hit is not None and 0 <= stamp - hit[1] <= hit[0] // 50:
                out[term] = hit[0]
            else:
                todo.append(term)
        if todo:
            rows = dict(
                self.conn.execute(
                    f"SELECT term, doc FROM memories_fts_terms WHERE term IN "
                    f"({', '.join('?' * len(todo))})",
                    todo,
                ).fetchall()
            )
            for term in todo:
                out[term] = int(rows.get(term, 0))
                cache[term] = (out[term], stamp)
        return {term: df for term, df in out.items() if df}

    def _live_rows(self) -> int:
        """About how many memories the store holds (exact to within 1%)."""
        stamp = self._write_stamp()
        hit: tuple[int, int] | None = getattr(self, "_rows_cache", None)
        if hit is not None and 0 <= stamp - hit[1] <= hit[0] // 100:
            return hit[0]
        count = int(self.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        self._rows_cache = (count, stamp)
        return count

    def term_stats(self, query: str) -> tuple[list[tuple[str, str]], dict[str, int], int]:
        pairs = self._stems(query_words(query))
        freqs = self._doc_freqs(sorted({t for _, t in pairs}))
        total = int(self.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        return pairs, freqs, total

    def keyword_search(
        self,
        query: str,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
        *,
        query_vector: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 over the query's words, at a bounded cost.

        A ranked FTS5 query costs time in proportion to the rows its words match.
        Words found in no memory are skipped. Words in more than
        ``common_term_docs`` memories are *common*: left out when rarer words
        exist. Words are taken rarest first while the rows they match add up to at
        most ``common_window``; when even the rarest matches more, only the newest
        ``common_window`` of its matches (with the next rarest words while they add
        up to at most ``common_term_docs``) are ranked. This holds at any store
        size, as in the PostgreSQL store: in a 10k store the words of a long
        question matched about 6,000 rows, 11 ms of ranking (2-4 ms at 100k, where
        the budget applied).
        """
        if flt.isolated:  # untrusted caller: statistics of the visible rows only
            return self._keyword_isolated(query, k, flt)
        pairs = self._stems(query_words(query))
        if not pairs or k <= 0:
            return []
        freqs = self._doc_freqs(sorted({t for _, t in pairs}))
        word_df: dict[str, int] = {}
        for word, term in pairs:  # a phrase matches at most as many rows as its rarest term
            word_df[word] = min(word_df.get(word, freqs.get(term, 0)), freqs.get(term, 0))
        present = [w for w, df in word_df.items() if df > 0]
        if not present:
            return []
        rare = [w for w in present if word_df[w] <= self.common_term_docs]
        words = rare or present
        window_rows = None if rare else self.common_window
        if sum(word_df[w] for w in words) > self.common_window:  # at any store size
            words, window_rows = self._within_budget(words, word_df)
        match = " OR ".join(fts_phrase(w) for w in words)
        if window_rows is not None:  # rank only the newest window_rows matches
            row = self.conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, window_rows - 1),
            ).fetchone()
            if row is not None:
                return self._rank_window(words, word_df, row[0], k, flt, rows)
        cond, params = where(flt)
        if not flt.is_unrestricted():  # filter every match: the filter may keep few
            # The vectors of the k best only (not of every match the sort sees).
            found = self.conn.execute(
                f"SELECT s.*, v.embedding FROM ("
                f"SELECT m.id, bm25(memories_fts, ?, 1.0, 1.0) AS score, {_RANK_COLUMNS}, "
                f"m.rowid AS key FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
                f"WHERE memories_fts MATCH ? AND {cond} "
                f"ORDER BY score, m.rowid DESC LIMIT ?) s "
                f"LEFT JOIN vectors v ON v.rowid = s.key ORDER BY s.score, s.key DESC",
                (self.title_weight, match, *params, k),
            ).fetchall()
            if rows is not None:
                for row in found:
                    rows[row[0]] = _rank_row((*row[: 2 + _RANK_WIDTH], row[-1]), 2)
            return [(row[0], -float(row[1])) for row in found]
        # Most rows pass: rank inside FTS5 and look up only the best rows.
        fetch = k + max(16, k // 4)
        while True:
            top = self.conn.execute(
                "SELECT f.rowid, bm25(memories_fts, ?, 1.0, 1.0) AS score "
                "FROM memories_fts f WHERE memories_fts MATCH ? "
                "ORDER BY score, f.rowid DESC LIMIT ?",
                (self.title_weight, match, fetch),
            ).fetchall()
            passing = self._passing([key for key, _ in top], cond, params, rows, with_vectors=True)
            hits = [(passing[key], -float(score)) for key, score in top if key in passing]
            if len(hits) >= k or len(top) < fetch:
                return hits[:k]
            fetch *= 4

    def _rank_window(
        self,
        words: list[str],
        word_df: dict[str, int],
        window: int,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
    ) -> list[tuple[str, float]]:
        """Rank the matches from rowid ``window`` on (the newest ``common_window``) by
        the BM25 idf of the query words each holds.

        Only for queries of common words: FTS5's ``bm25()`` counts the rows holding
        each word by reading its whole posting list, at every query, a cost that
        grows with the store (40 ms for three words in a third of 1M rows), while
        each word's matches past ``window`` are found by a seek. Term frequency and
        length do not count here; among common words they would add little.
        """
        total = max(self._live_rows(), 1)
        scores: dict[int, float] = {}
        for word in words:
            df = word_df[word]
            idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
            for (key,) in self.conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid >= ?",
                (fts_phrase(word), window),
            ).fetchall():
                scores[key] = scores.get(key, 0.0) + idf
        ranked = sorted(scores, key=lambda key: (-scores[key], -key))
        cond, params = where(flt)
        step = k + max(16, k // 4) if flt.is_unrestricted() else len(ranked)
        hits: list[tuple[str, float]] = []
        for start in range(0, len(ranked), max(step, 1)):
            chunk = ranked[start : start + step]
            passing = self._passing(chunk, cond, params, rows, with_vectors=True)
            hits.extend((passing[key], scores[key]) for key in chunk if key in passing)
            if len(hits) >= k:
                break
        return hits[:k]

    def _within_budget(
        self, words: list[str], word_df: dict[str, int]
    ) -> tuple[list[str], int | None]:
        """The rarest words while their rows add up to ``common_window`` (rank them
        all), or when the rarest alone matches more, the rarest words while they add
        up to ``common_term_docs`` with the window size (rank the newest matches)."""
        ordered = sorted(words, key=lambda w: (word_df[w], w))
        if word_df[ordered[0]] > self.common_window:
            budget, window_rows = self.common_term_docs, self.common_window
        else:
            budget, window_rows = self.common_window, None
        chosen, total = [ordered[0]], word_df[ordered[0]]
        for word in ordered[1:]:
            if total + word_df[word] > budget:
                break
            chosen.append(word)
            total += word_df[word]
        return chosen, window_rows

    # --- graph, versions, entities ----------------------------------------------------
    def add_edge(self, edge: Edge) -> None:
        with self.write():
            self.conn.execute(
                "INSERT INTO edges(id, source, target, kind, strength, created_at, metadata) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (edge.id, edge.source, edge.target, edge.kind, edge.strength,
                 to_text(edge.created_at), json.dumps(edge.metadata)),
            )  # fmt: skip
            if edge.kind == "supersedes":
                self.conn.execute(
                    "UPDATE memories SET superseded_by = ? WHERE id = ?", (edge.source, edge.target)
                )

    def edges(self, memory_id: str, *, kind: str | None = None) -> list[Edge]:
        sql = (
            "SELECT id, source, target, kind, strength, created_at, metadata FROM edges "
            "WHERE (source = ? OR target = ?)"
        )
        params: list[Any] = [memory_id, memory_id]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        return [row_to_edge(r) for r in self.conn.execute(sql + " ORDER BY created_at, id", params)]

    def delete_edge(self, edge_id: str) -> bool:
        with self.write():
            row = self.conn.execute(
                "SELECT source, target, kind FROM edges WHERE id = ?", (edge_id,)
            ).fetchone()
            if row is None:
                return False
            self.conn.execute("DELETE FROM edges WHERE id = ?", (edge_id,))
            if row[2] == "supersedes":
                self.conn.execute(
                    "UPDATE memories SET superseded_by = NULL WHERE id = ? AND superseded_by = ?",
                    (row[1], row[0]),
                )
        return True

    def add_version(self, version: Version) -> None:
        self.add_versions([version])

    def add_versions(self, versions: Sequence[Version]) -> None:
        with self.write():
            self.conn.executemany(
                "INSERT INTO versions(memory_id, version, op, actor, at, changes, snapshot) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(v.memory_id, v.version, v.op, v.actor, to_text(v.at),
                  to_json(v.changes), to_json(v.snapshot) if v.snapshot else None)
                 for v in versions],
            )  # fmt: skip

    def versions(self, memory_id: str) -> list[Version]:
        rows = self.conn.execute(
            "SELECT memory_id, version, op, actor, at, changes, snapshot FROM versions "
            "WHERE memory_id = ? ORDER BY version",
            (memory_id,),
        )
        return [row_to_version(r) for r in rows]

    def next_version(self, memory_id: str) -> int:
        row = self.conn.execute(
            "SELECT COALESCE(MAX(version), 0) + 1 FROM versions WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        return int(row[0])

    def purge_versions(self, memory_id: str) -> None:
        """Drop a memory's versions (their snapshots hold its content)."""
        with self.write():
            self.conn.execute("DELETE FROM versions WHERE memory_id = ?", (memory_id,))
            self._erased()

    def by_entity(self, entity: str, flt: MemoryFilter, *, limit: int) -> list[MemoryRecord]:
        cond, params = where(flt)
        rows = self.conn.execute(
            f"SELECT {SELECT_COLUMNS} FROM memory_entities e JOIN memories m ON m.rowid = e.key "
            f"WHERE e.entity = ? AND {cond} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (entity.strip().lower(), *params, limit),
        )
        return [row_to_record(r) for r in rows]

    def entity_counts(self, flt: MemoryFilter) -> dict[str, int]:
        cond, params = where(flt)
        rows = self.conn.execute(
            f"SELECT e.entity, COUNT(*) FROM memory_entities e JOIN memories m "
            f"ON m.rowid = e.key WHERE {cond} GROUP BY e.entity ORDER BY 2 DESC, 1",
            params,
        )
        return {entity: int(n) for entity, n in rows}

    # --- maintenance ----------------------------------------------------------------
    def stats(self, flt: MemoryFilter) -> StoreStats:
        cond, params = where(flt)
        everything = MemoryFilter(
            namespaces=flt.namespaces, include_expired=True, include_superseded=True
        )
        all_cond, all_params = where(everything)

        def grouped(column: str) -> dict[str, int]:
            rows = self.conn.execute(
                f"SELECT m.{column}, COUNT(*) FROM memories m WHERE {cond} GROUP BY 1", params
            )
            return {str(k): int(n) for k, n in rows}

        def scalar(sql: str, args: Sequence[Any]) -> int:
            return int(self.conn.execute(sql, args).fetchone()[0] or 0)

        total = scalar(f"SELECT COUNT(*) FROM memories m WHERE {all_cond}", all_params)
        expired = scalar(
            f"SELECT COUNT(*) FROM memories m WHERE {all_cond} AND m.expires_at <= ?",
            [*all_params, to_text(flt.now)],
        ) if flt.now else 0  # fmt: skip
        superseded = scalar(
            f"SELECT COUNT(*) FROM memories m WHERE {all_cond} AND m.superseded_by IS NOT NULL",
            all_params,
        )
        edges = scalar(
            f"SELECT COUNT(*) FROM edges WHERE source IN (SELECT m.id FROM memories m "
            f"WHERE {all_cond})",
            all_params,
        )
        versions = scalar(
            f"SELECT COUNT(*) FROM versions WHERE memory_id IN (SELECT m.id FROM memories m "
            f"WHERE {all_cond})",
            all_params,
        )
        vectors = scalar(
            f"SELECT COUNT(*) FROM vectors WHERE rowid IN (SELECT m.rowid FROM memories m "
            f"WHERE {all_cond})",
            all_params,
        )
        size = sum(
            p.stat().st_size
            for p in (self.path, self.path.with_name(self.path.name + "-wal"))
            if p.exists()
        )
        model, dim = self.get_meta("embedding_model"), self.get_meta("embedding_dimension")
        return StoreStats(
            memories=total,
            live=self.count(flt),
            expired=expired,
            superseded=superseded,
            edges=edges,
            versions=versions,
            vectors=vectors,
            by_namespace=grouped("namespace"),
            by_type=grouped("type"),
            by_kind=grouped("kind"),
            size_bytes=size if flt.namespaces is None else 0,
            schema_version=self.schema_version(),
            embedder=f"{model}:{dim}" if model else None,
        )

    def iter_memories(self, flt: MemoryFilter, batch: int = 500) -> Iterator[MemoryRecord]:
        cond, params = where(flt)
        last = 0
        while True:
            rows = self.conn.execute(
                f"SELECT m.rowid, {SELECT_COLUMNS} FROM memories m WHERE m.rowid > ? AND {cond} "
                f"ORDER BY m.rowid LIMIT ?",
                (last, *params, batch),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield row_to_record(row[1:])
            last = rows[-1][0]

    def iter_edges(self) -> Iterator[Edge]:
        rows = self.conn.execute(
            "SELECT id, source, target, kind, strength, created_at, metadata FROM edges "
            "ORDER BY created_at, id"
        ).fetchall()
        yield from (row_to_edge(r) for r in rows)

    def iter_versions(self) -> Iterator[Version]:
        rows = self.conn.execute(
            "SELECT memory_id, version, op, actor, at, changes, snapshot FROM versions "
            "ORDER BY memory_id, version"
        ).fetchall()
        yield from (row_to_version(r) for r in rows)

    def gc_candidates(
        self, expired_before: datetime, decay: DecayScan | None
    ) -> list[MemoryRecord]:
        sql = f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.expires_at <= ?"
        params: list[Any] = [to_text(expired_before)]
        if decay is not None:  # julianday: days, a core function (no math extension)
            sql += (
                " OR (m.expires_at IS NOT NULL AND m.pinned = 0 AND julianday(?) - "
                "julianday(MAX(m.updated_at, COALESCE(m.last_recalled_at, ''))) "
                ">= ? * (m.confidence - ?))"
            )
            params += [to_text(decay.now), decay.days_per_confidence, decay.floor]
        return [row_to_record(r) for r in self.conn.execute(sql, params)]
