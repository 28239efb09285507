"""One BLAS thread per server process, and a shorter switch interval of the
interpreter's lock (issue 36, item 4).

numpy's BLAS (OpenBLAS) splits every matrix product above a few thousand
elements across a pool of threads, one per core. A server already runs a
request per thread, and its workers share the cores: each product then waits
for pool threads that the other requests are using. On the 2-core development
machine under load, 8 clients of one worker got 13.9 requests/s with the pool
and 70.3 with one BLAS thread (``bench/http_load.py --clients 8``, SQLite, the
same run). The products of a search are small (an identity's rows times the
query), so one thread loses nothing.

``memchentic serve`` limits each worker to one BLAS thread unless the
environment names a count (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS``), as it does for the embedder's threads (docs/server.md).
The limit is set through ``threadpoolctl`` when it is installed (the
``server`` and ``local`` extras install it); without it, the environment
variable it also sets reaches workers started after it (``--workers`` of 2 or
more).

The interpreter's lock passes from a thread that computes to one that waits
every ``sys.getswitchinterval()`` (5 ms by default), and a thread that gave it
up around a short C call (a SQLite statement, a numpy product) waits that long
to have it back while another computes: each search makes a dozen such calls.
``memchentic serve`` over a SQLite store sets the interval to
:data:`SWITCH_INTERVAL` (1 ms) in each worker (:func:`handoffs_for`), unless the
application changed it: 8 clients of one worker, the same store and minutes,
answered 108-115 requests/s at 5 ms, 136-153 at 1 ms and 121-123 at 0.2 ms
(``bench/http_load.py``, SQLite). Over PostgreSQL, whose statements run in the
database's processes while the threads wait on sockets, the default stays: at
1 ms the same grid answered 64-86 requests/s against 85-125 at 5 ms (8 clients,
library and 1 or 2 workers, alternating), each request costing 1-3 ms more CPU.
"""

from __future__ import annotations

import contextlib
import os
import sys

#: The variables that name a BLAS thread count; one set by the user is kept.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: The interpreter's switch interval a server worker runs with (seconds).
SWITCH_INTERVAL = 0.001
#: Python's own default, which :func:`quicker_handoffs` replaces (and no other).
DEFAULT_SWITCH_INTERVAL = 0.005


def limit_blas_threads(threads: int = 1) -> bool:
    """Run this process's BLAS on ``threads`` threads unless the environment names a
    count; whether a limit was set in the running process (False: the environment
    named one, or ``threadpoolctl`` is not installed)."""
    if any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)  # processes started from here
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    with contextlib.suppress(Exception):  # an unknown BLAS build: leave it as it is
        threadpool_limits(threads, user_api="blas")
        return True
    return False


def quicker_handoffs(interval: float = SWITCH_INTERVAL) -> bool:
    """Pass the interpreter's lock between threads every ``interval`` seconds, unless
    the interval is no longer Python's default (the application chose one); whether
    it was set."""
    if sys.getswitchinterval() != DEFAULT_SWITCH_INTERVAL:
        return False
    sys.setswitchinterval(interval)
    return True


def handoffs_for(store: object) -> bool:
    """:func:`quicker_handoffs` for a SQLite store (its reads are short C calls of
    this process); a server database keeps the default. Whether it was set."""
    from ..store.sqlite import SQLiteStore

    return isinstance(store, SQLiteStore) and quicker_handoffs()
