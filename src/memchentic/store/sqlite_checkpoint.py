"""WAL checkpoints on a thread of their own.

In WAL mode every commit appends pages to the ``-wal`` file, and a *checkpoint*
copies them into the database file. SQLite's automatic checkpoint runs inside the
commit that crosses ``wal_autocheckpoint`` pages (1,000 by default), so the writer
waits for it: for a bulk write, a read and a write call per page, about a sixth
of ``add_many``'s time here (30k memories: 5,029 and 5,131/s with it, 6,056 and
6,152/s with no checkpoint at all).

The store's connections raise that threshold to :data:`BACKSTOP_PAGES` (a
writer still checkpoints itself if this thread falls behind), and a
:class:`Checkpointer` runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its own
connection once the store's commits have changed :data:`EVERY_ROWS` rows: the
copy runs beside the writer's next work (SQLite releases the GIL), on the other
core. A passive checkpoint never waits: it copies what no reader still needs and
leaves the rest to the next one.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

#: ``wal_autocheckpoint`` of the store's connections: the checkpoint a writer
#: still makes itself when the WAL has grown this many pages (40 MiB at 4 KiB).
BACKSTOP_PAGES = 10_000
#: Rows changed by commits since the last checkpoint that wake the thread (a
#: memory written in bulk changes about 8 rows and appends about 1.3 pages).
EVERY_ROWS = 2_000


class Checkpointer:
    """Checkpoints the WAL on a daemon thread, woken by :meth:`committed`."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], every_rows: int = EVERY_ROWS):
        self._connect = connect
        self.every_rows = every_rows
        self._lock = threading.Lock()
        self._due = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._rows = 0
        self._stopping = False
        self._thread: threading.Thread | None = None
        #: Checkpoints run (for tests and diagnostics).
        self.runs = 0

    def committed(self, rows: int) -> None:
        """A commit changed ``rows`` rows: wake the thread once enough have."""
        with self._lock:
            if self._stopping:
                return
            self._rows += rows
            if self._rows < self.every_rows:
                return
            self._rows = 0
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="memchentic-checkpoint", daemon=True
                )
                self._thread.start()
            self._idle.clear()
            self._due.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Whether every checkpoint asked for so far has run (within ``timeout`` s)."""
        return self._idle.wait(timeout)

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running)."""
        with self._lock:
            self._stopping = True
            thread = self._thread
        self._due.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        try:
            conn = self._connect()
        except sqlite3.Error:
            log.warning("checkpoint thread could not connect; commits checkpoint themselves")
            self._idle.set()
            return
        try:
            while True:
                self._due.wait()
                with self._lock:
                    if self._stopping:
                        return
                    self._due.clear()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
                except sqlite3.Error as exc:  # the next one, or the backstop, copies it
                    log.debug("checkpoint failed: %s", exc)
                with self._lock:
                    if not self._due.is_set():
                        self._idle.set()
        finally:
            self._idle.set()
            conn.close()
