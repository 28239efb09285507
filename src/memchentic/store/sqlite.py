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
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .. import text
from ..errors import NotAStoreError, StoreError
from ..record import MemoryRecord
from ..text import keyword_text
from .keywords import LANGUAGE_KEY, RULES_KEY, parse_rules
from .migrations.sqlite import KEYWORD_FUNCTION, MIGRATIONS, TOKENIZER, migrate
from .sql_store import SqlStore
from .sqlite_check import SQLiteCheck
from .sqlite_checkpoint import BACKSTOP_PAGES, Checkpointer
from .sqlite_conn import GuardedConnection, SQLiteStoreError, backoff, is_locked
from .sqlite_extra import SQLiteExtras
from .sqlite_files import make_folder, open_error, probe, store_leftovers, truncate_wal
from .sqlite_rows import (
    COLUMNS,
    SELECT_COLUMNS,
    record_params,
    row_to_record,
)
from .sqlite_search import SQLiteSearch
from .vectors import VectorIndex

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
    "SELECT key, title, content, tags FROM memories_keywords WHERE key >= ? AND key < ?"
)
APP_ID = "memchentic"
_LOCK_RETRIES = 8
#: Address space each connection may map of the database file (not memory: the OS
#: pages in what is read, shared with every other reader of the file).
MMAP_BYTES = 1 << 34


class SQLiteStore(SQLiteSearch, SQLiteExtras, SQLiteCheck, SqlStore):
    """A memchentic store in one SQLite file (``:memory:`` is not supported:
    several connections must see the same data): the SQLite dialect, this class's
    connections (the host) and :class:`SQLiteSearch`'s stages; the shared tables are
    :class:`~.sql_store.SqlStore`'s parts."""

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
        statement_timeout: float = 0.0,
    ) -> None:
        self.path = Path(path).expanduser()
        #: Seconds each statement may run (STATEMENT_TIMEOUT_SECONDS; 0: no budget),
        #: from the end of opening on: migrations run without one.
        self.statement_timeout = 0.0
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
        # the language its keyword index stems in (a store made before issue 34: English)
        self.keyword_language = self.get_meta(LANGUAGE_KEY) or "english"
        self.keyword_rules = parse_rules(self.get_meta(RULES_KEY))  # its index's rules
        store_leftovers(self.path)
        self.statement_timeout = float(statement_timeout)
        with self._conns_lock:
            for opened in self._conns:
                if isinstance(opened, GuardedConnection):
                    opened.set_budget(self.statement_timeout)

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
            # The keyword index's text (CJK bigrams), called by its triggers and view.
            conn.create_function(KEYWORD_FUNCTION, 1, self._keyword_sql, deterministic=True)
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
        conn.set_budget(self.statement_timeout)
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _keyword_sql(self, text: Any) -> Any:
        """``memchentic_keywords(text)``: :func:`~memchentic.text.keyword_text` in the
        store's keyword language with its keyword rules (NULL and non-text values
        pass through)."""
        if not isinstance(text, str):
            return text
        return keyword_text(text, self.keyword_language, self.keyword_rules)

    def _checkpoint_connection(self) -> sqlite3.Connection:
        """The checkpoint thread's connection (it runs nothing else)."""
        return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)

    @contextlib.contextmanager
    def unbudgeted(self) -> Iterator[None]:
        """This thread's statements in the block run without a time budget
        (maintenance: checks, backups)."""
        conn = self.conn
        assert isinstance(conn, GuardedConnection)
        with conn.unbudgeted():
            yield

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
            # The steps that rebuild the keyword index (m011, m013) read the memories
            # through memchentic_keywords: in the recorded language, with the recorded
            # rules or, for a store without a record, the default ones m013 records.
            meta = "meta" in tables
            self.keyword_language = (self.get_meta(LANGUAGE_KEY) if meta else None) or "english"
            recorded = self.get_meta(RULES_KEY) if meta else None
            self.keyword_rules = (
                text.ACTIVE_KEYWORD_RULES if recorded is None else parse_rules(recorded)
            )
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

    def _delete_row(self, memory_id: str) -> bool:
        key = self._rowid(memory_id)
        if key is None:
            return False
        self.conn.execute("DELETE FROM memories WHERE rowid = ?", (key,))
        self.conn.execute("DELETE FROM vectors WHERE rowid = ?", (key,))
        self.conn.execute("DELETE FROM memory_entities WHERE key = ?", (key,))
        return True

    def _by_ids(self, select: str, ids: Sequence[str]) -> Iterator[Any]:
        """Rows of ``select ... WHERE m.id IN (ids)``, the ids deduplicated and sent in
        chunks (SQLite caps the parameters of one statement)."""
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            yield from self.conn.execute(
                f"{select} WHERE m.id IN ({', '.join('?' * len(chunk))})", chunk
            ).fetchall()  # one call, not a step a row

    def get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        records = map(row_to_record, self._by_ids(f"SELECT {SELECT_COLUMNS} FROM memories m", ids))
        return {record.id: record for record in records}

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._by_ids(
            "SELECT m.id, v.embedding FROM memories m JOIN vectors v ON v.rowid = m.rowid", ids
        )
        return {memory_id: np.frombuffer(blob, dtype=np.float32) for memory_id, blob in rows}
