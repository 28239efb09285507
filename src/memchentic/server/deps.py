"""Who is calling: the API key of a request, resolved to the ``Memory`` view the
request runs as. Every route of ``/v1`` depends on :func:`caller`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..memory import Memory
from .auth import ApiKey, KeyRing, view_for
from .errors import ApiError, admin_required

bearer = HTTPBearer(
    auto_error=False,
    description="An API key from `memchentic keys create`, sent as "
    "`Authorization: Bearer mck_...`.",
)


@dataclass(frozen=True, slots=True)
class Caller:
    """The key of a request and the view of the engine it runs as."""

    key: ApiKey
    mem: Memory

    @property
    def admin(self) -> bool:
        return self.key.admin


def root_memory(request: Request) -> Memory:
    mem: Memory = request.app.state.memory
    return mem


def keyring(request: Request) -> KeyRing:
    ring: KeyRing = request.app.state.keys
    return ring


def resolve(request: Request, secret: str | None) -> Caller:
    """The caller holding ``secret``, or a 401 (missing, unknown or revoked key, or a
    key whose identity was deleted: all the same answer)."""
    if not secret:
        raise ApiError(401, "unauthorized", "missing API key (Authorization: Bearer ...)")
    return caller_for(request, keyring(request).verify(secret))


def caller_for(request: Request, key: ApiKey | None) -> Caller:
    """The caller of a key record, or a 401 when there is none or its identity is gone."""
    view = view_for(root_memory(request), key) if key is not None else None
    if key is None or view is None:
        raise ApiError(401, "unauthorized", "invalid API key")
    return Caller(key, view)


def still_valid(request: Request, find: Callable[[], ApiKey | None]) -> Callable[[], bool]:
    """A check that an open stream runs to learn whether its caller still holds:
    ``find`` looks the key up again (None once revoked), and the key's identity must
    still exist."""
    root = root_memory(request)

    def check() -> bool:
        key = find()
        return key is not None and view_for(root, key) is not None

    return check


def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Caller:
    return resolve(request, credentials.credentials if credentials else None)


def admin(who: Annotated[Caller, Depends(caller)]) -> Caller:
    if not who.admin:
        raise admin_required()
    return who


CallerDep = Annotated[Caller, Depends(caller)]
AdminDep = Annotated[Caller, Depends(admin)]
