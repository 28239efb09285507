"""Console sign-in sessions, kept on the server: the console's cookie holds a random
session id, never the API key.

Sessions live in the store's ``meta`` table under ``console_sessions`` (JSON: the
SHA-256 of each session id -> the SHA-256 of its API key and when the session ends),
beside the keys, so every server process sharing a store knows every session and
signing out in one ends it in all. A session is only as good as its key: each
lookup checks that the key is still in the key ring, so revoking a key ends its
sessions at once. A session lasts ``SERVER_CONSOLE_SESSION_HOURS`` at most, and
each key keeps its newest ``SERVER_CONSOLE_SESSIONS_PER_KEY`` (a sign-in drops the
oldest beyond that, and every expired or orphaned session).
"""

from __future__ import annotations

import json
import secrets
from datetime import datetime, timedelta
from typing import Any

from ..clock import to_text, utcnow
from .auth import ApiKey, KeyRing, hash_key

#: Meta key of the session table.
META_KEY = "console_sessions"
#: Longest session id accepted from a cookie (the ids made here are 43 characters).
MAX_ID_CHARS = 128


class ConsoleSessions:
    """The console sessions of one store."""

    def __init__(self, keys: KeyRing, *, hours: float, per_key: int) -> None:
        self.keys = keys
        self.store = keys.store
        self.lifetime = timedelta(hours=hours)
        self.per_key = per_key

    def _load(self) -> dict[str, dict[str, Any]]:
        raw = self.store.get_meta(META_KEY)
        data = json.loads(raw) if raw else {}
        return data if isinstance(data, dict) else {}

    def _save(self, sessions: dict[str, dict[str, Any]]) -> None:
        self.store.set_meta(META_KEY, json.dumps(sessions, sort_keys=True))

    def open(self, secret: str) -> str | None:
        """A new session for the API key ``secret``: its id (for the cookie), or None
        when the key is not valid."""
        if self.keys.verify(secret) is None:
            return None
        token = secrets.token_urlsafe(32)
        now = utcnow()
        key_digest = hash_key(secret)
        with self.store.write():  # read-modify-write: two sign-ins must not lose one
            live = self.keys.digests()
            sessions = {
                sid: s for sid, s in self._load().items()
                if s.get("key") in live and not _expired(s, now)
            }  # fmt: skip
            sessions[hash_key(token)] = {"key": key_digest, "created_at": to_text(now),
                                         "expires_at": to_text(now + self.lifetime)}  # fmt: skip
            mine = sorted(
                (sid for sid, s in sessions.items() if s["key"] == key_digest),
                key=lambda sid: str(sessions[sid].get("created_at")),
            )
            for sid in mine[: max(0, len(mine) - self.per_key)]:
                del sessions[sid]
            self._save(sessions)
        return token

    def key(self, token: str | None) -> ApiKey | None:
        """The key of a live session; None for a missing, unknown, expired or closed
        session, or one whose key was revoked."""
        if not token or len(token) > MAX_ID_CHARS:
            return None
        found = self._load().get(hash_key(token))
        if not isinstance(found, dict) or _expired(found, utcnow()):
            return None
        return self.keys.find(str(found.get("key")))

    def close(self, token: str | None) -> bool:
        """End the session ``token`` (sign-out); False if there was none."""
        if not token or len(token) > MAX_ID_CHARS:
            return False
        with self.store.write():
            sessions = self._load()
            gone = sessions.pop(hash_key(token), None)
            if gone is not None:
                self._save(sessions)
        return gone is not None


def _expired(session: dict[str, Any], now: datetime) -> bool:
    # to_text is fixed-width UTC text that sorts in time order
    return str(session.get("expires_at") or "") <= (to_text(now) or "")
