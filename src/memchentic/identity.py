"""Who exists: identities, groups and orgs (teams), memberships and share grants."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .choices import IDENTITY_KINDS as IDENTITY_KINDS  # the vocabulary lives in choices
from .choices import ROLES as ROLES
from .choices import TEAM_KINDS as TEAM_KINDS
from .choices import IdentityKind as IdentityKind
from .choices import Role as Role
from .choices import TeamKind as TeamKind
from .record import dated_dict


@dataclass(frozen=True, slots=True)
class _Named:
    """Something with a stable ``id`` (namespaces hold it) and a ``name`` that can change."""

    id: str
    kind: str
    name: str
    created_at: datetime

    @property
    def namespace(self) -> str:
        """Its namespace: the private one of an identity, the shared one of a team."""
        return f"{self.kind}:{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)


@dataclass(frozen=True, slots=True)
class Identity(_Named):
    """A user or an agent (``kind``: user | agent)."""


@dataclass(frozen=True, slots=True)
class Team(_Named):
    """A group ("ring") or an org (``kind``: group | org)."""


@dataclass(frozen=True, slots=True)
class Membership:
    team_kind: str
    team_id: str
    identity_id: str
    role: str = "member"
    #: Org members can be inactive (they read nothing of the org); group members are active.
    active: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)


@dataclass(frozen=True, slots=True)
class Invitation:
    """An offer of membership that ``identity_id`` has not accepted yet: until it
    does, it is no member and sees nothing of the team (docs/access.md)."""

    team_kind: str
    team_id: str
    identity_id: str
    role: str = "member"
    #: The identity that invited (None: the trusted principal).
    invited_by: str | None = None
    created_at: datetime | None = None
    #: The team's current name, filled in when read (not stored).
    team_name: str | None = None
    #: The invitee as the inviter named it (``bob``, ``user:bob``): what the team's
    #: admins are shown, the same whether or not such an identity exists.
    named: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)


@dataclass(frozen=True, slots=True)
class Grant:
    """Lets ``grantee`` read the federated namespace ``namespace``."""

    id: str
    namespace: str
    grantee: str
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)
