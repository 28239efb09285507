"""API keys and console sessions: who a bearer key or a console cookie stands for.

A key is created with ``memchentic keys create``, sent as ``Authorization: Bearer
<key>``; it is random (``mck_`` + 32 bytes from :mod:`secrets`), shown once, and only
its SHA-256 is kept, in the store's ``api_keys`` table (every backend; migration 12
moved the rows out of the ``meta`` document ``api_keys`` where they lived before),
so every server process sharing the store sees a new or revoked key on its next
request.

An identity key runs each request as that identity (``Memory.for_identity``)
under the access rules; an admin key runs as the trusted principal, which may
administer identities, groups, orgs and grants and sees everything.

Console sign-in sessions live beside them, in ``console_sessions``: the console's
cookie holds a random session id, never the key; the table holds the SHA-256 of
each session id, of its key and when it ends. A session is only as good as its key:
each lookup checks that the key is still there, so revoking a key ends its sessions
at once. A session lasts ``SERVER_CONSOLE_SESSION_HOURS`` at most, and each key
keeps its newest ``SERVER_CONSOLE_SESSIONS_PER_KEY`` (a sign-in drops the oldest
beyond that, and every expired or orphaned session).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..clock import to_text, utcnow
from ..errors import ValidationError
from ..store.access_tables import KeyRow, SessionRow
from ..store.migrations import KEYS_META, SESSIONS_META
from .namespaces import check_identifier

if TYPE_CHECKING:
    from ..store.base import Store

#: Every key starts with this, so a leaked one is easy to recognise (and to scan for).
KEY_PREFIX = "mck_"
#: Characters of the hash shown as a key's id (``keys list``, ``keys revoke``).
ID_CHARS = 12
#: Longest session id accepted from a cookie (the ids made here are 43 characters).
MAX_ID_CHARS = 128

__all__ = [
    "ID_CHARS",
    "KEYS_META",
    "KEY_PREFIX",
    "MAX_ID_CHARS",
    "SESSIONS_META",
    "ApiKey",
    "ConsoleSessions",
    "KeyRing",
    "hash_key",
]


@dataclass(frozen=True, slots=True)
class ApiKey:
    """What a key stands for (never the key itself)."""

    id: str
    name: str
    admin: bool
    created_at: str
    #: The identity's id and kind; None for an admin key.
    identity_id: str | None = None
    identity_kind: str | None = None
    #: The identity's name when the key was made (for listings; the id is what counts).
    identity_name: str | None = None

    @property
    def principal(self) -> str:
        """``admin`` or ``user:alice`` style, for listings and ``/v1/me``."""
        if self.admin:
            return "admin"
        return f"{self.identity_kind}:{self.identity_name}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "principal": self.principal}


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _record(row: KeyRow) -> ApiKey:
    return ApiKey(*row[1:])


class KeyRing:
    """The API keys of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def create(
        self, *, identity: str | None = None, admin: bool = False, name: str | None = None
    ) -> tuple[str, ApiKey]:
        """A new key for an existing identity (``alice``, ``user:alice``, ``agent:bot``)
        or, with ``admin=True``, an admin key. Returns the key (shown once) and its record."""
        if admin == (identity is not None):
            raise ValidationError("identity", "give an identity, or admin=True (not both)")
        label = name or ("admin" if admin else str(identity))
        check_identifier("name", label.replace(":", "-"))
        found = None
        if identity is not None:
            kind, _, key = identity.partition(":") if ":" in identity else ("", "", identity)
            if kind not in ("", "user", "agent"):
                raise ValidationError("identity", "must be NAME, user:NAME or agent:NAME")
            found = self.store.find_identity(key, kind or None)
            if found is None:
                raise ValidationError("identity", f"unknown identity: {identity}")
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        digest = hash_key(secret)
        record = ApiKey(
            id=digest[:ID_CHARS], name=label, admin=admin, created_at=to_text(utcnow()) or "",
            identity_id=found.id if found else None, identity_kind=found.kind if found else None,
            identity_name=found.name if found else None,
        )  # fmt: skip
        self.store.save_api_key(KeyRow(digest, *asdict(record).values()))
        return secret, record

    def list(self) -> list[ApiKey]:
        """Every key, oldest first."""
        return [_record(row) for row in self.store.api_keys()]

    def revoke(self, key_id: str) -> bool:
        """Delete the key whose id (or the full key) is ``key_id``; False if none."""
        if not isinstance(key_id, str) or not key_id:
            return False
        wanted = hash_key(key_id)[:ID_CHARS] if key_id.startswith(KEY_PREFIX) else key_id
        return self.store.delete_api_keys(wanted) > 0

    def verify(self, secret: str | None) -> ApiKey | None:
        """The key's record, or None for a missing, malformed or unknown key."""
        if not secret or not secret.startswith(KEY_PREFIX) or len(secret) > 200:
            return None
        return self.find(hash_key(secret))

    def find(self, digest: str) -> ApiKey | None:
        """The record of the key whose SHA-256 is ``digest``; None once it is revoked."""
        found = self.store.api_key(digest)
        return _record(found) if found else None

    def digests(self) -> set[str]:
        """The SHA-256 of every key in the ring."""
        return {row.digest for row in self.store.api_keys()}


class ConsoleSessions:
    """The console sessions of one store."""

    def __init__(self, keys: KeyRing, *, hours: float, per_key: int) -> None:
        self.keys = keys
        self.store = keys.store
        self.lifetime = timedelta(hours=hours)
        self.per_key = per_key

    def open(self, secret: str) -> str | None:
        """A new session for the API key ``secret``: its id (for the cookie), or None
        when the key is not valid."""
        if self.keys.verify(secret) is None:
            return None
        token = secrets.token_urlsafe(32)
        now = utcnow()
        key_digest = hash_key(secret)
        with self.store.write():  # two sign-ins must not both keep one too many
            live = self.keys.digests()
            sessions = self.store.console_sessions()  # oldest first
            gone = {s.digest for s in sessions if s.key_digest not in live or _expired(s, now)}
            mine = [s.digest for s in sessions if s.key_digest == key_digest
                    and s.digest not in gone]  # fmt: skip
            gone.update(mine[: max(0, len(mine) + 1 - self.per_key)])
            self.store.delete_console_sessions(sorted(gone))
            self.store.save_console_session(SessionRow(
                hash_key(token), key_digest, to_text(now) or "", to_text(now + self.lifetime) or "",
            ))  # fmt: skip
        return token

    def key(self, token: str | None) -> ApiKey | None:
        """The key of a live session; None for a missing, unknown, expired or closed
        session, or one whose key was revoked."""
        if not token or len(token) > MAX_ID_CHARS:
            return None
        found = self.store.console_session(hash_key(token))
        if found is None or _expired(found, utcnow()):
            return None
        return self.keys.find(found.key_digest)

    def close(self, token: str | None) -> bool:
        """End the session ``token`` (sign-out); False if there was none."""
        if not token or len(token) > MAX_ID_CHARS:
            return False
        return self.store.delete_console_sessions([hash_key(token)]) > 0


def _expired(session: SessionRow, now: datetime) -> bool:
    # to_text is fixed-width UTC text that sorts in time order
    return session.expires_at <= (to_text(now) or "")
