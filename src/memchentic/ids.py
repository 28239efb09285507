"""ULIDs: 26-character, Crockford base32, sortable by creation time."""

from __future__ import annotations

import hashlib
import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
#: Counts every id this process makes (the high 40 bits of the random part), from a
#: random start; the low 40 bits are fresh random bits for each id.
_count = int.from_bytes(os.urandom(5), "big") >> 1  # room to count up

#: Every pair of base32 digits, indexed by the 10 bits they encode.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
_LOW40 = (1 << 40) - 1


def _encode(ms: int, rand: int) -> str:
    """The 10 digits of the low 50 bits of ``ms`` and the 16 of the 80 of ``rand``.

    Written out pair by pair on machine-size ints (``rand`` in two halves of 40
    bits): a loop over the pairs of the 80-bit int took about 1.7 times as long,
    and a bulk write makes three ids a memory."""
    p, hi, lo = _PAIRS, rand >> 40 & _LOW40, rand & _LOW40
    return "".join((
        p[ms >> 40 & 1023], p[ms >> 30 & 1023], p[ms >> 20 & 1023], p[ms >> 10 & 1023],
        p[ms & 1023], p[hi >> 30], p[hi >> 20 & 1023], p[hi >> 10 & 1023], p[hi & 1023],
        p[lo >> 30], p[lo >> 20 & 1023], p[lo >> 10 & 1023], p[lo & 1023],
    ))  # fmt: skip


def new_id(ms: int | None = None) -> str:
    """A new ULID; ids with the same millisecond sort in the order they were made.

    Like ULID's monotonic mode, but across the whole process rather than between
    consecutive calls only: the random part starts with a process-wide counter, so
    two back-dated writes stamped with the same ``created_at`` (two sessions of one
    date, logged apart) still sort by write order, never by random bits. The 40
    random bits after the counter keep ids of different processes apart."""
    global _count
    now = int(time.time() * 1000) if ms is None else ms
    low = int.from_bytes(os.urandom(5), "big")
    with _lock:
        _count = (_count + 1) & _LOW40
        return _encode(now, _count << 40 | low)


def derived_id(ms: int, seed: str) -> str:
    """The ULID of time ``ms`` whose random part is a digest of ``seed``: the same
    seed gives the same id (an import renaming a record whose id is taken gives it
    the same new id each time, so importing the file again skips it)."""
    rand = int.from_bytes(hashlib.blake2b(seed.encode("utf-8"), digest_size=10).digest(), "big")
    return _encode(max(ms, 0), rand)
