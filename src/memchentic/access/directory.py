"""Managing who exists: identities, groups ("rings"), orgs, memberships and grants.

The trusted local principal may do everything. An identity may create groups
(it becomes their admin), manage the groups and orgs it administers, and grant
or revoke reads of the federated namespaces it is the source of. Targets the
caller cannot see answer like targets that do not exist.

Membership is consented to: when an identity names another as a member or
admin of a team (at creation or with :meth:`Directory.add_member`), that one is
only invited, and joins when it accepts (:meth:`Directory.accept`); until then it
sees nothing of the team and the team's memories never reach it. Only the
trusted principal adds members directly. An identity is never told whether the
identity it named exists: naming an unknown one answers exactly like naming a
known one (nothing is stored for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import validation as check
from ..clock import utcnow
from ..errors import ValidationError
from ..identity import IDENTITY_KINDS, ROLES, Grant, Identity, Invitation, Membership, Team
from ..ids import new_id
from .namespaces import check_identifier, parse_namespace
from .policy import AccessPolicy, Principal

if TYPE_CHECKING:
    from ..store.base import Store


def _team_ref(team: str) -> tuple[str, str]:
    """``group:NAME`` / ``ring:NAME`` / ``org:NAME`` -> (kind, key)."""
    ns = parse_namespace(team, "team")
    if ns.kind not in ("group", "org"):
        raise ValidationError("team", "must be group:NAME (or ring:NAME) or org:NAME")
    return ns.kind, ns.name


class Directory:
    """Identities, teams and grants, as seen by one principal."""

    def __init__(self, store: Store, policy: AccessPolicy, principal: Principal) -> None:
        self.store = store
        self.policy = policy
        self.principal = principal

    # --- helpers ----------------------------------------------------------------------
    def _require_trusted(self, what: str) -> None:
        if not self.principal.trusted:
            raise ValidationError("principal", f"only the trusted local principal can {what}")

    def _lookup(self, key: str, field: str = "identity") -> Identity | None:
        """The identity ``key`` names, or None; only a malformed key is an error."""
        if not isinstance(key, str) or not key:
            raise ValidationError(field, "must be NAME, user:NAME or agent:NAME")
        kind, _, name = key.partition(":") if ":" in key else ("", "", key)
        if kind and kind not in IDENTITY_KINDS:
            raise ValidationError(field, "must be NAME, user:NAME or agent:NAME")
        return self.store.find_identity(check.identifier(name, field), kind or None)

    def _identity(self, key: str, field: str = "identity") -> Identity:
        """The identity ``key`` names; an unknown one is an error (trusted callers only:
        others must not learn which identities exist)."""
        found = self._lookup(key, field)
        if found is None:
            raise ValidationError(field, f"unknown identity: {key}")
        return found

    def _caller(self, what: str) -> Identity:
        """The calling identity (the trusted principal is none)."""
        identity = None if self.principal.trusted else self.policy.scope(self.principal).identity
        if identity is None:
            raise ValidationError("principal", f"only an identity can {what}")
        return identity

    def _team(self, team: str, *, admin: bool) -> Team:
        kind, key = _team_ref(team)
        found = self.store.find_team(kind, key)
        visible = found is not None and (
            self.principal.trusted or found.namespace in self.policy.scope(self.principal).readable
        )
        if found is None or not visible:
            raise ValidationError("team", f"unknown {kind}: {key}")
        if (
            admin
            and not self.principal.trusted
            and found.namespace not in self.policy.scope(self.principal).admin_of
        ):
            raise ValidationError("team", f"only admins of {kind}:{key} can change it")
        return found

    def _free_id(self, name: str, taken: bool) -> str:
        return new_id() if taken else name

    # --- identities ---------------------------------------------------------------------
    def create_identity(self, name: str, kind: str = "user", *, id: str | None = None) -> Identity:  # noqa: A002
        """A new user or agent. Its id is its name when that is free (so ``user_id="alice"``
        and the identity ``alice`` share the namespace ``user:alice``), else a ULID."""
        self._require_trusted("create identities")
        if kind not in IDENTITY_KINDS:
            raise ValidationError("kind", "must be 'user' or 'agent'")
        check_identifier("name", name)
        if id is not None:
            check_identifier("id", id)
        with self.store.write():
            if self.store.find_identity(name, kind) is not None:
                raise ValidationError("name", f"a {kind} named {name} already exists")
            if id is not None and self.store.find_identity(id) is not None:
                raise ValidationError("id", f"the id {id} is taken")
            taken = self.store.find_identity(name) is not None
            identity = Identity(id or self._free_id(name, taken), kind, name, utcnow())
            self.store.save_identity(identity)
        return identity

    def rename_identity(self, key: str, new_name: str) -> Identity:
        self._require_trusted("rename identities")
        check_identifier("name", new_name)
        with self.store.write():
            found = self._identity(key)
            if self.store.find_identity(new_name, found.kind) not in (None, found):
                raise ValidationError("name", f"a {found.kind} named {new_name} already exists")
            renamed = Identity(found.id, found.kind, new_name, found.created_at)
            self.store.save_identity(renamed)
        return renamed

    def identities(self, kind: str | None = None) -> list[Identity]:
        """Every identity (trusted), or the caller and the members of its teams."""
        if kind is not None and kind not in IDENTITY_KINDS:
            raise ValidationError("kind", "must be 'user' or 'agent'")
        if self.principal.trusted:
            return self.store.list_identities(kind)
        scope = self.policy.scope(self.principal)
        if scope.identity is None:
            return []
        ids = {scope.identity.id}
        for team, _ in self.store.memberships_of(scope.identity.id):
            ids.update(m.identity_id for m in self.store.members(team.kind, team.id))
        found = [self.store.find_identity(i) for i in sorted(ids)]
        return [i for i in found if i is not None and (kind is None or i.kind == kind)]

    # --- groups and orgs -------------------------------------------------------------------
    def create_group(
        self, name: str, *, admins: list[str] | None = None, members: list[str] | None = None
    ) -> Team:
        """A group ("ring"); an identity that creates one becomes its admin."""
        return self._create_team("group", name, admins or [], members or [])

    def create_org(
        self, name: str, *, admins: list[str] | None = None, members: list[str] | None = None
    ) -> Team:
        self._require_trusted("create orgs")
        return self._create_team("org", name, admins or [], members or [])

    def _create_team(self, kind: str, name: str, admins: list[str], members: list[str]) -> Team:
        """The trusted principal adds ``admins`` and ``members`` at once; an identity
        becomes the admin and only invites the others."""
        check_identifier("name", name)
        if not self.principal.trusted:
            return self._create_team_as_identity(kind, name, admins, members)
        with self.store.write():
            if self.store.find_team(kind, name) is not None:
                raise ValidationError("name", f"a {kind} named {name} already exists")
            admin_ids = [self._identity(a, "admins").id for a in admins]
            member_ids = [self._identity(m, "members").id for m in members]
            if not admin_ids:
                raise ValidationError("admins", f"a {kind} needs at least one admin")
            team = self._new_team(kind, name)
            for identity_id in member_ids:
                self.store.save_membership(Membership(kind, team.id, identity_id, "member"))
            for identity_id in admin_ids:
                self.store.save_membership(Membership(kind, team.id, identity_id, "admin"))
        return team

    def _create_team_as_identity(
        self, kind: str, name: str, admins: list[str], members: list[str]
    ) -> Team:
        creator = self._caller(f"create a {kind}")
        named = [(m, "members", "member") for m in members]
        named += [(a, "admins", "admin") for a in admins]
        with self.store.write():
            if self.store.find_team(kind, name) is not None:
                raise ValidationError("name", f"a {kind} named {name} already exists")
            invitees = [(self._lookup(key, field), role) for key, field, role in named]
            team = self._new_team(kind, name)
            self.store.save_membership(Membership(kind, team.id, creator.id, "admin"))
            for who, role in invitees:  # unknown identities: nothing stored, same answer
                if who is not None and who.id != creator.id:
                    self.store.save_invitation(
                        Invitation(kind, team.id, who.id, role, creator.id, utcnow())
                    )
        return team

    def _new_team(self, kind: str, name: str) -> Team:
        taken = self.store.find_team(kind, name) is not None
        team = Team(self._free_id(name, taken), kind, name, utcnow())
        self.store.save_team(team)
        return team

    def rename_team(self, team: str, new_name: str) -> Team:
        check_identifier("name", new_name)
        with self.store.write():
            found = self._team(team, admin=True)
            if self.store.find_team(found.kind, new_name) not in (None, found):
                raise ValidationError("name", f"a {found.kind} named {new_name} already exists")
            renamed = Team(found.id, found.kind, new_name, found.created_at)
            self.store.save_team(renamed)
        return renamed

    def teams(self, kind: str) -> list[Team]:
        """Every group or org (trusted), or those the caller belongs to."""
        if kind not in ("group", "org"):
            raise ValidationError("kind", "must be 'group' or 'org'")
        if self.principal.trusted:
            return self.store.list_teams(kind)
        scope = self.policy.scope(self.principal)
        if scope.identity is None:
            return []
        return [t for t, _ in self.store.memberships_of(scope.identity.id) if t.kind == kind]

    def members(self, team: str) -> list[Membership]:
        found = self._team(team, admin=False)
        return self.store.members(found.kind, found.id)

    def add_member(
        self, team: str, identity: str, *, role: str = "member", active: bool = True
    ) -> Membership | Invitation:
        """Add (or change the role or activity of) a member; only orgs have inactive members.

        The trusted principal adds directly. A team admin that is an identity changes
        current members directly but only *invites* anyone else: the answer is an
        :class:`Invitation` that echoes ``identity`` as given, the same whether or not
        such an identity exists; it joins when it calls :meth:`accept`."""
        if role not in ROLES:
            raise ValidationError("role", "must be 'member' or 'admin'")
        with self.store.write():
            found = self._team(team, admin=True)
            if not active and found.kind != "org":
                raise ValidationError("active", "only org members can be inactive")
            who = self._identity(identity) if self.principal.trusted else self._lookup(identity)
            current = {m.identity_id: m for m in self.store.members(found.kind, found.id)}
            if who is None or (who.id not in current and not self.principal.trusted):
                return self._invite(found, who, identity, role, active)
            if role != "admin" or not active:
                self._keep_an_admin(found, current, who.id, role, active)
            membership = Membership(found.kind, found.id, who.id, role, active)
            self.store.save_membership(membership)
            self.store.delete_invitation(found.kind, found.id, who.id)
        return membership

    def _invite(
        self, team: Team, who: Identity | None, given: str, role: str, active: bool
    ) -> Invitation:
        if not active:
            raise ValidationError("active", "only current members can be made inactive")
        inviter = self._caller("invite")
        now = utcnow()
        if who is not None:
            invitation = Invitation(team.kind, team.id, who.id, role, inviter.id, now)
            self.store.save_invitation(invitation)
        return Invitation(team.kind, team.id, given, role, inviter.id, now, team.name)

    # --- invitations (the invitee's side) ---------------------------------------------------
    def invitations(self) -> list[Invitation]:
        """The caller's pending invitations (every pending one, for the trusted principal)."""
        if self.principal.trusted:
            return self.store.invitations()
        identity = self.policy.scope(self.principal).identity
        return [] if identity is None else self.store.invitations(identity_id=identity.id)

    def _pending(self, team: str, me: Identity) -> Invitation | None:
        kind, key = _team_ref(team)
        found = self.store.find_team(kind, key)
        if found is None:
            return None
        mine = self.store.invitations(identity_id=me.id, team=(kind, found.id))
        return mine[0] if mine else None

    def accept(self, team: str) -> Membership:
        """Join a team the caller was invited to, with the role it was invited as. No
        invitation and no such team answer the same."""
        me = self._caller("accept invitations")
        with self.store.write():
            pending = self._pending(team, me)
            if pending is None:
                raise ValidationError("team", f"you have no invitation to {team}")
            membership = Membership(pending.team_kind, pending.team_id, me.id, pending.role)
            self.store.save_membership(membership)
            self.store.delete_invitation(pending.team_kind, pending.team_id, me.id)
        return membership

    def decline(self, team: str) -> bool:
        """Refuse an invitation; False when there was none (or no such team)."""
        me = self._caller("decline invitations")
        with self.store.write():
            pending = self._pending(team, me)
            if pending is None:
                return False
            return self.store.delete_invitation(pending.team_kind, pending.team_id, me.id)

    def set_active(self, org: str, identity: str, active: bool) -> Membership:
        kind, _ = _team_ref(org)
        if kind != "org":
            raise ValidationError("team", "only org members can be made inactive")
        with self.store.write():
            found = self._team(org, admin=True)
            who = self._identity(identity) if self.principal.trusted else self._lookup(identity)
            current = {m.identity_id: m for m in self.store.members(found.kind, found.id)}
            if who is None or who.id not in current:
                raise ValidationError("identity", f"{identity} is not a member of {org}")
            role = current[who.id].role
            if role != "admin" or not active:
                self._keep_an_admin(found, current, who.id, role, active)
            membership = Membership(found.kind, found.id, who.id, role, active)
            self.store.save_membership(membership)
        return membership

    def remove_member(self, team: str, identity: str) -> bool:
        """Remove a member (True), or withdraw an invitation (False, as for anyone who
        was no member: an identity learns nothing about who exists)."""
        with self.store.write():
            found = self._team(team, admin=True)
            who = self._identity(identity) if self.principal.trusted else self._lookup(identity)
            if who is None:
                return False
            current = {m.identity_id: m for m in self.store.members(found.kind, found.id)}
            if who.id not in current:
                self.store.delete_invitation(found.kind, found.id, who.id)
                return False
            self._keep_an_admin(found, current, who.id, None, False)
            return self.store.delete_membership(found.kind, found.id, who.id)

    @staticmethod
    def _keep_an_admin(
        team: Team, current: dict[str, Membership], identity_id: str, role: str | None,
        active: bool,
    ) -> None:  # fmt: skip
        """Refuse the change when it would leave the team without an active admin."""
        admins = {i for i, m in current.items() if m.role == "admin" and m.active}
        if admins == {identity_id} and not (role == "admin" and active):
            raise ValidationError(
                "identity", f"{identity_id} is the last admin of {team.kind}:{team.name}; "
                "make another member admin first",
            )  # fmt: skip

    # --- federated grants -------------------------------------------------------------------
    def grant(self, namespace: str, grantee: str) -> Grant:
        """Let ``grantee`` read the federated namespace (its source or trusted only)."""
        with self.store.write():
            canonical = self._federated(namespace)
            who = self._identity(grantee, "grantee")
            existing = self.store.grants(namespace=canonical, grantee=who.id)
            if existing:
                return existing[0]
            grant = Grant(new_id(), canonical, who.id, utcnow())
            self.store.save_grant(grant)
        return grant

    def revoke(self, namespace: str, grantee: str) -> bool:
        with self.store.write():
            canonical = self._federated(namespace)
            who = self._identity(grantee, "grantee")
            return self.store.delete_grant(canonical, who.id)

    def grants(self, namespace: str | None = None) -> list[Grant]:
        if namespace is not None:
            return self.store.grants(namespace=self._federated(namespace))
        if self.principal.trusted:
            return self.store.grants()
        writable = self.policy.scope(self.principal).writable
        return [g for g in self.store.grants() if g.namespace in writable]

    def _federated(self, namespace: str) -> str:
        ns = parse_namespace(namespace)
        if ns.kind != "federated":
            raise ValidationError("namespace", "grants apply to federated:ORG:SOURCE namespaces")
        canonical = self.policy.resolve(namespace, strict=True)
        if canonical is None:
            raise ValidationError("namespace", f"unknown federated namespace: {namespace}")
        if (
            not self.principal.trusted
            and canonical not in self.policy.scope(self.principal).writable
        ):
            raise ValidationError("namespace", f"unknown federated namespace: {namespace}")
        return canonical
