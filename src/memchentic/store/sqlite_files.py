"""The files around a SQLite store: its folder, a read-only look at a file before the
store changes it, and what killed processes left behind (issue 20, items 14-16).

* :func:`make_folder`: a store path under a regular file is a :class:`StoreError`
  naming that file, not a ``FileExistsError``.
* :func:`probe`: before the store switches a file to WAL (which rewrites its
  header and leaves ``-wal``/``-shm`` beside it) or migrates it, the file is read
  through a plain connection that writes nothing: a SQLite file of another
  application, a memchentic store whose schema is newer than this code, or a
  damaged file is refused as it is, byte for byte. (A plain connection, not
  ``mode=ro``: a read-only connection to a WAL file leaves ``-wal`` and ``-shm``
  behind, a read-write one that only reads removes them when it closes.)
* :func:`remove_leftovers`: hidden copies of killed backups
  (``.NAME.PID.partial`` and its ``-journal``) and vector-index files of killed or disk-full saves
  (``NAME.vectors.PID.tmp``) are removed at the next open or backup, when the
  process that wrote them is gone (or is an older process with the same id).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import NotAStoreError, StoreError
from .migrations import refuse_newer
from .sqlite_conn import GuardedConnection, SQLiteStoreError, is_damaged

log = logging.getLogger(__name__)

APP_ID = "memchentic"
#: ``busy_timeout`` of the store's connections: how long a statement waits for a lock.
BUSY_TIMEOUT_MS = 30_000
#: How long the checkpoint after a deleting write waits for readers still on an
#: older snapshot before it gives up (the next checkpoint then empties the WAL).
SECURE_CHECKPOINT_WAIT_MS = 2_000
#: When this module was loaded: files of this process id older than this were
#: written by an earlier process that had the same id (a container restarts with
#: the same small ids).
_LOADED = time.time()
#: ``.NAME.PID.partial``: a backup (or restore) copy being written, and the files
#: SQLite keeps beside it while it is written (``-journal``; ``-wal``, ``-shm``): a
#: killed backup leaves its rollback journal too (issue 32, item 8).
PARTIAL_SUFFIX = r"\.partial(?:-journal|-wal|-shm)?"
PARTIAL = re.compile(rf"^\.(?P<name>.+)\.(?P<pid>\d+){PARTIAL_SUFFIX}$")


def vector_tmp(store_name: str) -> re.Pattern[str]:
    """``NAME.vectors.PID.tmp``: a vector index (or its ``.json`` side file) being saved."""
    return re.compile(rf"^{re.escape(store_name)}\.vectors\.(?P<pid>\d+)\.tmp$")


def make_folder(path: Path) -> None:
    """Create the folder of the store file ``path``; a clear error when a file is in
    the way or the folder cannot be made."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        what = f"{blocker} is a file, not a folder" if blocker else str(exc)
        raise StoreError(f"cannot create the store {path}: {what}") from exc
    except OSError as exc:
        raise StoreError(f"cannot create the folder of the store {path}: {exc}") from exc


def probe(path: Path, known_version: int) -> None:
    """Refuse, without changing the file, one that is not a memchentic store, one
    whose schema is newer than ``known_version``, or a damaged one. A missing or
    empty file is a new store (nothing to check)."""
    try:
        if not path.exists() or path.stat().st_size == 0:
            return
    except OSError as exc:
        raise StoreError(f"cannot open {path}: {exc}") from exc
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, factory=GuardedConnection)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from exc
    conn.store_path = str(path)
    try:
        _check(conn, path, known_version)
    finally:
        conn.close()


def _check(conn: sqlite3.Connection, path: Path, known_version: int) -> None:
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return
        if "meta" not in tables:
            raise NotAStoreError(f"{path} is not a memchentic store (no meta table)")
        app = conn.execute("SELECT value FROM meta WHERE key = 'app'").fetchone()
        if app is None or app[0] != APP_ID:
            raise NotAStoreError(f"{path} is not a memchentic store")
        if "schema_migrations" in tables:
            row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            refuse_newer(int(row[0] or 0), known_version, str(path))
    except SQLiteStoreError as exc:
        refused = open_error(exc, path)
        if refused is None:
            raise
        raise refused from exc


def open_error(exc: SQLiteStoreError, path: Path) -> NotAStoreError | None:
    """What opening ``path`` raises for ``exc``: None to raise ``exc`` itself (the
    file is locked, or damaged), else a :class:`NotAStoreError` (``SQLITE_NOTADB``:
    not a database at all, so not a store)."""
    name = getattr(exc.sqlite_error, "sqlite_errorname", "") or ""
    if exc.locked or (is_damaged(exc) and not name.startswith("SQLITE_NOTADB")):
        return None
    return NotAStoreError(f"{path} is not a memchentic store ({exc.sqlite_error})")


def truncate_wal(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the database file and empty it (``wal_checkpoint(TRUNCATE)``),
    so that the page images of deleted rows do not linger there; the rows themselves
    were overwritten in place (``PRAGMA secure_delete``). Waits at most
    ``SECURE_CHECKPOINT_WAIT_MS`` for readers of an older snapshot; True when done."""
    try:
        conn.execute(f"PRAGMA busy_timeout = {SECURE_CHECKPOINT_WAIT_MS}")
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    except SQLiteStoreError as exc:
        log.warning("could not empty the WAL after a delete: %s", exc)
        return False
    if busy:
        log.info("the WAL is emptied at a later checkpoint: readers were still busy")
    return not busy


# --- leftovers ------------------------------------------------------------------------
def _stale(file: Path, pid: int) -> bool:
    """Whether ``file``, written by process ``pid``, can no longer be in use: that
    process is gone, or it started after the file was last written (a new process
    with a reused id). When that cannot be told, the file is kept."""
    try:
        written = file.stat().st_mtime
    except OSError:
        return False
    if pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            pass  # alive (another user's process), or no way to tell
    started = _process_start(pid)
    if started is None and pid == os.getpid():
        started = _LOADED
    # A second of margin: the boot time the start is counted from is whole seconds.
    return started is not None and written < started - 1.0


def _process_start(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), where the system tells
    (Linux: ``/proc/PID/stat`` field 22, clock ticks after ``btime``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22; the fields after the name start at 3
        with open("/proc/stat", encoding="ascii") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def remove_leftovers(folder: Path, patterns: Sequence[re.Pattern[str]]) -> list[Path]:
    """Remove the files of ``folder`` whose names match one of ``patterns`` (with a
    ``pid`` group) and whose writer is gone; returns what was removed."""
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        for pattern in patterns:
            match = pattern.match(name)
            if match is None:
                continue
            file = folder / name
            if file.is_file() and _stale(file, int(match["pid"])):
                with contextlib.suppress(OSError):
                    file.unlink()
                    removed.append(file)
            break
    return removed


def store_leftovers(path: Path) -> list[Path]:
    """Leftovers of the store file ``path``: its vector-index temporaries and hidden
    partial copies written to its own name (a killed backup or restore into it)."""
    own_partial = re.compile(rf"^\.{re.escape(path.name)}\.(?P<pid>\d+){PARTIAL_SUFFIX}$")
    return remove_leftovers(path.parent, [vector_tmp(path.name), own_partial])
