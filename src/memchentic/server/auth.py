"""API keys for the HTTP face: created with ``memchentic keys create``, sent as
``Authorization: Bearer <key>``.

The keys are :mod:`memchentic.access.keys`' (stored hashed in the store's
``api_keys`` table since migration 12); this module names them for the server and
gives the ``Memory`` a request with a key runs as (:func:`view_for`): an identity
key runs as that identity under the access rules; an admin key runs as the trusted
principal, which may administer identities, groups, orgs and grants and sees
everything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..access.keys import ID_CHARS, KEY_PREFIX, ApiKey, KeyRing, hash_key
from ..access.keys import KEYS_META as META_KEY
from ..errors import ValidationError

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ["ID_CHARS", "KEY_PREFIX", "META_KEY", "ApiKey", "KeyRing", "hash_key", "view_for"]


def view_for(root: Memory, key: ApiKey) -> Memory | None:
    """The ``Memory`` a request with this key runs as: the trusted root for an admin
    key, the identity's view otherwise; None when the identity no longer exists."""
    if key.admin:
        return root
    try:
        return root.for_identity(f"{key.identity_kind}:{key.identity_id}")
    except ValidationError:
        return None
