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

Only ``execute`` and ``executemany`` are guarded, not the steps of a cursor after
its first row. In WAL mode a statement takes its read snapshot on its first step,
which ``execute`` runs, so a later step cannot find the database locked; an I/O
error while iterating a cursor would still surface as ``sqlite3`` (a broken disk,
not a busy store).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from ..errors import StoreError

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


class GuardedConnection(sqlite3.Connection):
    """A ``sqlite3.Connection`` whose statements retry transient locks (outside
    transactions) and raise :class:`SQLiteStoreError` instead of ``sqlite3`` errors."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        return self._guarded(super().execute, sql, args, retry=True)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        # Parameters may be a one-shot iterator: never re-run, only translate errors.
        return self._guarded(super().executemany, sql, args, retry=False)

    def _guarded(
        self, call: Callable[..., sqlite3.Cursor], sql: str, args: tuple[Any, ...], *, retry: bool
    ) -> sqlite3.Cursor:
        attempt = 0
        while True:
            try:
                return call(sql, *args)
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
                    raise SQLiteStoreError(exc, sql) from exc
            time.sleep(backoff(attempt))
            attempt += 1
