"""API keys: created with ``memchentic keys create``, stored hashed, sent as
``Authorization: Bearer <key>``.

Keys live in the store's ``meta`` table under ``api_keys`` (JSON: the SHA-256 of
each key -> who it is for), so they work on every backend without a migration
and every server process sharing the store sees a new or revoked key on its
next request. A key is random (``mck_`` + 32 bytes from :mod:`secrets`) and is
shown once; only its hash is kept.

An identity key runs each request as that identity (``Memory.for_identity``)
under the access rules; an admin key runs as the trusted principal, which may
administer identities, groups, orgs and grants and sees everything.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..access import check_identifier
from ..clock import to_text, utcnow
from ..errors import ValidationError

if TYPE_CHECKING:
    from ..memory import Memory
    from ..store.base import Store

#: Meta key of the key table.
META_KEY = "api_keys"
#: Every key starts with this, so a leaked one is easy to recognise (and to scan for).
KEY_PREFIX = "mck_"
#: Characters of the hash shown as a key's id (``keys list``, ``keys revoke``).
ID_CHARS = 12


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


class KeyRing:
    """The API keys of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _load(self) -> dict[str, dict[str, Any]]:
        raw = self.store.get_meta(META_KEY)
        if not raw:
            return {}
        data = json.loads(raw)
        return data if isinstance(data, dict) else {}

    def _save(self, keys: dict[str, dict[str, Any]]) -> None:
        self.store.set_meta(META_KEY, json.dumps(keys, sort_keys=True))

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
        with self.store.write():  # read-modify-write: two creations must not lose one
            keys = self._load()
            keys[digest] = asdict(record)
            self._save(keys)
        return secret, record

    def list(self) -> list[ApiKey]:
        """Every key, oldest first."""
        keys = [_record(v) for v in self._load().values()]
        return sorted(keys, key=lambda k: (k.created_at, k.id))

    def revoke(self, key_id: str) -> bool:
        """Delete the key whose id (or the full key) is ``key_id``; False if none."""
        if not isinstance(key_id, str) or not key_id:
            return False
        wanted = hash_key(key_id)[:ID_CHARS] if key_id.startswith(KEY_PREFIX) else key_id
        with self.store.write():
            keys = self._load()
            gone = [d for d in keys if d[:ID_CHARS] == wanted]
            for digest in gone:
                del keys[digest]
            if gone:
                self._save(keys)
        return bool(gone)

    def verify(self, secret: str | None) -> ApiKey | None:
        """The key's record, or None for a missing, malformed or unknown key."""
        if not secret or not secret.startswith(KEY_PREFIX) or len(secret) > 200:
            return None
        found = self._load().get(hash_key(secret))
        return _record(found) if found else None

    def find(self, digest: str) -> ApiKey | None:
        """The record of the key whose SHA-256 is ``digest``; None once it is revoked."""
        found = self._load().get(digest)
        return _record(found) if found else None

    def digests(self) -> set[str]:
        """The SHA-256 of every key in the ring."""
        return set(self._load())


def _record(data: dict[str, Any]) -> ApiKey:
    names = ApiKey.__dataclass_fields__
    return ApiKey(**{k: v for k, v in data.items() if k in names})


def view_for(root: Memory, key: ApiKey) -> Memory | None:
    """The ``Memory`` a request with this key runs as: the trusted root for an admin
    key, the identity's view otherwise; None when the identity no longer exists."""
    if key.admin:
        return root
    try:
        return root.for_identity(f"{key.identity_kind}:{key.identity_id}")
    except ValidationError:
        return None
