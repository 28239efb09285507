"""ULIDs: 26-character, Crockford base32, sortable by creation time."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


#: Every pair of base32 digits, indexed by the 10 bits they encode.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]


def _encode(value: int, length: int) -> str:
    """``value`` as ``length`` base32 digits (``length`` even), two digits a step."""
    out = []
    for _ in range(length // 2):
        out.append(_PAIRS[value & 1023])
        value >>= 10
    return "".join(reversed(out))


def new_id(ms: int | None = None) -> str:
    """A new ULID; monotonic within one process for ids made in the same millisecond."""
    global _last_ms, _last_rand
    with _lock:
        now = int(time.time() * 1000) if ms is None else ms
        if now == _last_ms:
            _last_rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            _last_ms = now
            _last_rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to count up
        return _encode(now, 10) + _encode(_last_rand, 16)
