"""Console sign-in sessions, kept on the server: the console's cookie holds a random
session id, never the API key. The sessions are :mod:`memchentic.access.keys`'
(:class:`~memchentic.access.keys.ConsoleSessions`, in the store's
``console_sessions`` table since migration 12); this module names them for the
console."""

from __future__ import annotations

from ..access.keys import MAX_ID_CHARS, ConsoleSessions
from ..access.keys import SESSIONS_META as META_KEY

__all__ = ["MAX_ID_CHARS", "META_KEY", "ConsoleSessions"]
