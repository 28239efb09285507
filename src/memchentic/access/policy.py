"""Who may read and write which namespace (docs/design.md, section 2). Every read and write of
the engine asks :class:`AccessPolicy`; storage never decides access on its own.

| namespace                  | reads                            | writes                        |
| -------------------------- | -------------------------------- | ----------------------------- |
| ``user:ID`` / ``agent:ID`` | that identity                    | that identity                 |
| ``group:ID``               | members                          | members; ``charter``: admins  |
| ``org:ID``                 | active members                   | active admins                 |
| ``federated:ORG:SOURCE``   | grantees (and the source)        | the source, an active member  |

Membership is read from the store on every call, so a change takes effect on
the next call. Unknown or malformed namespaces are denied, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..identity import Identity
from .namespaces import parse_namespace

if TYPE_CHECKING:
    from ..store.base import Store

CHARTER_TYPE = "charter"


def slot_right(namespace: str, slot_key: str | None, type_: str) -> str:
    """The type whose right a write of ``type_`` into ``slot_key`` needs. A group's
    ``charter`` slot holds its charter, so a write into it, whatever type it
    claims, replaces the charter: only those who may write the charter may."""
    if slot_key == CHARTER_TYPE and namespace.startswith("group:"):
        return CHARTER_TYPE
    return type_


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the trusted local principal, or an identity."""

    name: str
    trusted: bool = False
    identity_id: str | None = None


TRUSTED = Principal("local", trusted=True)


@dataclass(frozen=True, slots=True)
class Scope:
    """What one identity may read and write right now."""

    identity: Identity | None
    readable: frozenset[str]
    writable: frozenset[str]
    admin_of: frozenset[str]


class AccessPolicy:
    """Decides reads and writes; bound to the store that holds the directory."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store

    def bind(self, store: Store) -> AccessPolicy:
        self.store = store
        return self

    # --- names ------------------------------------------------------------------------
    def resolve(self, namespace: str, *, strict: bool) -> str | None:
        """The canonical namespace (ids, not names). Unknown names give ``None`` when
        ``strict`` (identities) and the parsed name otherwise (trusted local use)."""
        ns = parse_namespace(namespace)
        store = self.store
        if store is None:
            return None if strict else str(ns)
        if ns.kind in ("user", "agent"):
            found = store.find_identity(ns.name, ns.kind)
            canonical = found.namespace if found else None
        elif ns.kind in ("group", "org"):
            team = store.find_team(ns.kind, ns.name)
            canonical = team.namespace if team else None
        else:
            org_key, source_key = ns.name.split(":")
            org = store.find_team("org", org_key)
            source = store.find_identity(source_key)
            canonical = f"federated:{org.id}:{source.id}" if org and source else None
        if canonical is None and not strict:
            return str(ns)
        return canonical

    # --- scope of an identity ---------------------------------------------------------------
    def _identity(self, principal: Principal) -> Identity | None:
        """The principal's identity, when the store holds one of exactly its id."""
        store = self.store
        identity = (
            store.find_identity(principal.identity_id)
            if store is not None and principal.identity_id
            else None
        )
        return identity if identity is not None and identity.id == principal.identity_id else None

    def scope(self, principal: Principal) -> Scope:
        store = self.store
        identity = self._identity(principal)
        if identity is None:
            return Scope(None, frozenset(), frozenset(), frozenset())
        assert store is not None
        readable = {identity.namespace}
        writable = {identity.namespace}
        admin_of: set[str] = set()
        for team, membership in store.memberships_of(identity.id):
            if team.kind == "group":
                readable.add(team.namespace)
                writable.add(team.namespace)
                if membership.role == "admin":
                    admin_of.add(team.namespace)
            elif membership.active:  # org
                readable.add(team.namespace)
                source = f"federated:{team.id}:{identity.id}"
                readable.add(source)
                writable.add(source)
                if membership.role == "admin":
                    writable.add(team.namespace)
                    admin_of.add(team.namespace)
        readable.update(g.namespace for g in store.grants(grantee=identity.id))
        return Scope(identity, frozenset(readable), frozenset(writable), frozenset(admin_of))

    # --- decisions ------------------------------------------------------------------------
    def readable(self, principal: Principal, requested: Sequence[str] | None) -> list[str] | None:
        """Namespaces a read may cover: ``None`` = every namespace (trusted only).
        Requested namespaces the caller cannot read are dropped: an empty result, no error."""
        if principal.trusted:
            if requested is None:
                return None
            return [self.resolve(ns, strict=False) or ns for ns in requested]
        allowed = self.scope(principal).readable
        if requested is None:
            return sorted(allowed)
        resolved = [self.resolve(ns, strict=True) for ns in requested]
        return [ns for ns in resolved if ns is not None and ns in allowed]

    def can_read(self, principal: Principal, namespace: str) -> bool:
        if principal.trusted:
            return True
        return namespace in self.scope(principal).readable

    def can_write(self, principal: Principal, namespace: str, type_: str) -> bool:
        if type_ == CHARTER_TYPE and not namespace.startswith("group:"):
            raise ValidationError("type", "charter memories belong in a group namespace")
        if principal.trusted:
            return True
        scope = self.scope(principal)
        if type_ == CHARTER_TYPE:
            return namespace in scope.admin_of
        return namespace in scope.writable

    def default_namespace(self, principal: Principal) -> str | None:
        """Where an identity's writes go when they name no scope: its private namespace."""
        if principal.trusted:
            return None
        # The identity alone, not its memberships and grants (a search would read
        # them twice: here and in its filter's scope).
        identity = self._identity(principal)
        return identity.namespace if identity is not None else None

    def actor(self, principal: Principal) -> str:
        """The name versions and events record for this principal."""
        if principal.trusted:
            return principal.name
        return f"{principal.identity_id}"
