"""SQLite connections that keep SQLite's own errors and transient locks inside the store.

Every statement of :class:`~memchentic.store.sqlite.SQLiteStore` runs through a
:class:`GuardedConnection`, which

* retries a statement that found the database locked or busy, when it runs outside
  a transaction (a plain read, or a statement in autocommit mode), a bounded number
  of times with jittered exponential backoff, on top of ``busy_timeout``. Inside a
  transaction a retry could not help (the snapshot is fixed) and ``BEGIN`` has its
  own retry in :meth:`SQLiteStore.write`, so those are never retried here;
* turns any ``sqlite3.Error``, and a parameter SQLite cannot bind (text with lone
  surrogates, an integer over 64 bits), into :class:`SQLiteStoreError`, a
  :class:`~memchentic.errors.StoreError`, so callers never see ``sqlite3`` errors.
  (Input checks refuse such values first; this is the last line of defence.)

* returns a :class:`GuardedCursor`, whose later steps (iterating, ``fetchall``...)
  translate errors too: a damaged page is often met only there. In WAL mode a
  statement takes its read snapshot on its first step, which ``execute`` runs, so a
  later step cannot find the database locked and is never retried;
* raises :class:`SQLiteCorruptError` (a :class:`~memchentic.errors.StoreCorruptError`
  naming the file) when SQLite finds the file damaged (``SQLITE_CORRUPT``,
  ``SQLITE_NOTADB``);
* gives each call into SQLite (executing a statement, fetching its rows) a time
  budget, ``STATEMENT_TIMEOUT_SECONDS`` (:meth:`GuardedConnection.set_budget`): a
  progress handler looks at the clock every few thousand VM steps and stops the
  statement past its deadline, which raises
  :class:`~memchentic.errors.StoreTimeoutError`; the connection goes on serving.
  Inside :meth:`GuardedConnection.unbudgeted` (maintenance) there is none. Waiting
  for a lock is not counted (``busy_timeout`` sleeps outside the VM).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import StoreCorruptError, StoreError, StoreTimeoutError

#: Attempts of a statement that finds the database locked (outside a transaction).
READ_RETRIES = 8


def is_locked(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED ("database is locked", "... is busy")."""
    if isinstance(exc, SQLiteStoreError):
        return exc.locked
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): 10 ms doubling, at most
    about 1 s, with jitter so that waiting processes do not retry in lockstep."""
    return float(min(1.0, 0.01 * 2**attempt) * (0.5 + random.random()))


class SQLiteStoreError(StoreError):
    """A SQLite error inside the store; ``sqlite_error`` is the original, ``locked``
    says whether the database was locked (still busy after every retry)."""

    def __init__(self, cause: Exception, sql: str = "") -> None:
        self.sqlite_error = cause
        self.locked = is_locked(cause)
        name = getattr(cause, "sqlite_errorname", None) or type(cause).__name__
        what = " ".join(sql.split())[:60]
        super().__init__(f"the store failed ({name}: {cause})" + (f" in: {what}" if what else ""))


#: SQLite's names of the errors that mean the file itself is damaged.
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def is_damaged(exc: BaseException) -> bool:
    """True for SQLITE_CORRUPT (a malformed page, index or FTS5 structure) and
    SQLITE_NOTADB (the header is not a database's)."""
    cause = exc.sqlite_error if isinstance(exc, SQLiteStoreError) else exc
    name = getattr(cause, "sqlite_errorname", "") or ""
    return name.startswith(_DAMAGED)


class SQLiteCorruptError(SQLiteStoreError, StoreCorruptError):
    """SQLite found the store's file damaged; the message names the file and what to do."""

    def __init__(self, cause: Exception, path: str, sql: str = "") -> None:
        super().__init__(cause, sql)
        self.path = path
        self.message = (
            f"the store {path} is damaged ({cause}); run `memchentic check` to see what "
            "is affected and restore it from a backup (`memchentic restore`)"
        )
        self.args = (self.message,)


def store_error(cause: Exception, sql: str, path: str | None) -> SQLiteStoreError:
    """The store's error for a ``sqlite3`` error: a corrupt one names the file."""
    if is_damaged(cause):
        return SQLiteCorruptError(cause, path or "(unknown file)", sql)
    return SQLiteStoreError(cause, sql)


def is_interrupted(exc: BaseException) -> bool:
    """True for SQLITE_INTERRUPT (the progress handler stopped the statement)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name == "SQLITE_INTERRUPT" or (
        isinstance(exc, sqlite3.OperationalError) and str(exc) == "interrupted"
    )


#: Rows a guarded cursor's iteration fetches at a time.
_ITER_BLOCK = 256
#: SQLite VM steps between two looks at the clock (each about a microsecond of
#: Python; a step is tens of nanoseconds, so well under 1% of a statement).
BUDGET_STEPS = 10_000


class GuardedCursor(sqlite3.Cursor):
    """A cursor whose steps after the first (iteration, ``fetch*``) raise the store's
    errors too; ``fetchall`` and friends cost nothing per row, iteration a little."""

    def _failed(self, exc: Exception) -> StoreError:
        conn = self.connection
        if isinstance(conn, GuardedConnection):
            return conn.failed(exc, "")
        return store_error(exc, "", None)

    def _arm(self) -> None:
        """A fresh budget for this call into SQLite (a slow reader of the rows is
        not the statement's fault)."""
        conn = self.connection
        if isinstance(conn, GuardedConnection):
            conn.arm()

    def fetchone(self) -> Any:
        self._arm()
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def fetchall(self) -> list[Any]:
        self._arm()
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def fetchmany(self, size: int | None = None) -> list[Any]:
        self._arm()
        try:
            return super().fetchmany(self.arraysize if size is None else size)
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        # rows in blocks: a generator step per row cost more than the row itself
        fetch = super().fetchmany
        while True:
            self._arm()
            try:
                rows = fetch(_ITER_BLOCK)
            except sqlite3.Error as exc:
                raise self._failed(exc) from exc
            if not rows:
                return
            yield from rows


class GuardedConnection(sqlite3.Connection):
    """A ``sqlite3.Connection`` whose statements retry transient locks (outside
    transactions) and raise :class:`SQLiteStoreError` instead of ``sqlite3`` errors."""

    #: The file, for errors that name it (set by the store after connecting).
    store_path: str | None = None
    #: Seconds each call into SQLite may take (0: no budget); see :meth:`set_budget`.
    budget: float = 0.0
    #: When the running call's budget ends (``time.monotonic``), None: no budget.
    _deadline: float | None = None
    #: Open :meth:`unbudgeted` blocks.
    _exempt: int = 0

    def set_budget(self, seconds: float) -> None:
        """Give each later statement ``seconds`` (0: no budget, no handler)."""
        self.budget = float(seconds)
        self._deadline = None
        self.set_progress_handler(self._over_budget if self.budget > 0 else None, BUDGET_STEPS)

    def _over_budget(self) -> int:
        deadline = self._deadline
        return 1 if deadline is not None and time.monotonic() > deadline else 0

    def arm(self) -> None:
        """Start the budget of a call into SQLite (none inside :meth:`unbudgeted`)."""
        budget = self.budget
        self._deadline = time.monotonic() + budget if budget > 0 and not self._exempt else None

    @contextmanager
    def unbudgeted(self) -> Iterator[None]:
        """Statements of the block run without a time budget (maintenance: checks,
        backups, index builds), on this connection (so this thread)."""
        self._exempt += 1
        self._deadline = None
        try:
            yield
        finally:
            self._exempt -= 1

    def failed(self, exc: Exception, sql: str) -> StoreError:
        """The store's error for a ``sqlite3`` error of this connection: a statement
        stopped by the budget is a :class:`StoreTimeoutError`."""
        if is_interrupted(exc) and self.budget > 0:
            return StoreTimeoutError(self.budget)
        return store_error(exc, sql, self.store_path)

    def backup(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        with self.unbudgeted():  # the backup API copies pages, never the VM: no budget
            super().backup(*args, **kwargs)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        return self._guarded(sql, args, retry=True)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        # Parameters may be a one-shot iterator: never re-run, only translate errors.
        return self._guarded(sql, args, retry=False, many=True)

    def _guarded(
        self, sql: str, args: tuple[Any, ...], *, retry: bool, many: bool = False
    ) -> sqlite3.Cursor:
        attempt = 0
        while True:
            self.arm()
            try:
                cursor = self.cursor(GuardedCursor)
                return (cursor.executemany if many else cursor.execute)(sql, *args)
            except (UnicodeEncodeError, OverflowError) as exc:  # unbindable parameters
                raise SQLiteStoreError(exc, sql) from exc
            except sqlite3.Error as exc:
                again = (
                    retry
                    and attempt < READ_RETRIES - 1
                    and is_locked(exc)
                    and not self.in_transaction
                    and not sql.lstrip()[:5].upper().startswith("BEGIN")
                )
                if not again:
                    raise self.failed(exc, sql) from exc
            time.sleep(backoff(attempt))
            attempt += 1
