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
known one; its invitation is kept too (under an id no identity can have, so no one
can accept it), and the team's admins list and withdraw it like any other.

An invitation holds only while its inviter could still grant it: while the inviter
is an active admin of the team (issue 32, item 9). When the inviter stops being one
(removed, made a plain member, made inactive), the invitations it sent to that team
are withdrawn, and :meth:`Directory.accept` checks again.

Caps (issue 32, item 4): an identity may administer at most ``MAX_GROUPS_PER_IDENTITY``
groups when it creates one, and have at most ``MAX_PENDING_INVITATIONS_PER_IDENTITY``
pending invitations out; lists of invitations come in pages (``limit``, ``offset``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .. import validation as check
from ..clock import utcnow
from ..errors import ValidationError
from ..identity import (
    IDENTITY_KINDS,
    ROLES,
    TEAM_KINDS,
    Grant,
    Identity,
    Invitation,
    Membership,
    Team,
)
from ..ids import new_id
from ..settings import Settings
from .namespaces import check_identifier, parse_namespace
from .policy import AccessPolicy, Principal

if TYPE_CHECKING:
    from ..store.base import Store

#: Where an invitation to a name no identity has is kept: its ``identity_id`` is
#: this and the name as given; identity ids hold no ``:``, so none can accept it.
UNKNOWN_INVITEE = "unknown:"
#: A page of invitations when the caller names no ``limit``.
INVITATIONS_PAGE = 100


def _check_choice(value: str | None, allowed: tuple[str, ...], field: str = "kind") -> None:
    """An argument that is None (any) or one of ``allowed`` (a list of ``choices``)."""
    if value is not None and value not in allowed:
        raise ValidationError(field, "must be " + " or ".join(f"'{v}'" for v in allowed))


def _team_ref(team: str) -> tuple[str, str]:
    """``group:NAME`` / ``ring:NAME`` / ``org:NAME`` -> (kind, key)."""
    ns = parse_namespace(team, "team")
    if ns.kind not in ("group", "org"):
        raise ValidationError("team", "must be group:NAME (or ring:NAME) or org:NAME")
    return ns.kind, ns.name


class Directory:
    """Identities, teams and grants, as seen by one principal."""

    def __init__(
        self, store: Store, policy: AccessPolicy, principal: Principal,
        settings: Settings | None = None,
    ) -> None:  # fmt: skip
        self.store = store
        self.policy = policy
        self.principal = principal
        self.settings = settings or Settings()

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

    def _me(self) -> Identity | None:
        """The calling identity; None for the trusted principal and a key of no identity."""
        return None if self.principal.trusted else self.policy.scope(self.principal).identity

    def _caller(self, what: str) -> Identity:
        """The calling identity (the trusted principal is none)."""
        identity = self._me()
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
        _check_choice(kind, IDENTITY_KINDS)
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
        _check_choice(kind, IDENTITY_KINDS)
        if self.principal.trusted:
            return self.store.list_identities(kind)
        if (me := self._me()) is None:
            return []
        ids = {me.id}
        for team, _ in self.store.memberships_of(me.id):
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
            if kind == "group":
                self._within_group_cap(creator)
            invitees = {}  # a name given twice is one invitation, its last role
            for key, field, role in named:
                who = self._lookup(key, field)
                if who is None or who.id != creator.id:
                    invitees[self._invitee_id(who, key)] = (key, role)
            self._within_invitation_cap(creator, len(invitees), "members")
            team = self._new_team(kind, name)
            self.store.save_membership(Membership(kind, team.id, creator.id, "admin"))
            for invitee_id, (key, role) in invitees.items():
                self.store.save_invitation(
                    Invitation(kind, team.id, invitee_id, role, creator.id, utcnow(), named=key)
                )
        return team

    @staticmethod
    def _invitee_id(who: Identity | None, given: str) -> str:
        """Whom an invitation is kept for: the identity, or the name as given."""
        return who.id if who is not None else UNKNOWN_INVITEE + given

    def _within_group_cap(self, creator: Identity) -> None:
        cap = self.settings.max_groups_per_identity
        held = sum(
            1 for team, m in self.store.memberships_of(creator.id)
            if team.kind == "group" and m.role == "admin"
        )  # fmt: skip
        if held >= cap:
            raise ValidationError(
                "name", f"an identity may administer at most {cap} groups "
                "(MAX_GROUPS_PER_IDENTITY) when it creates one",
            )  # fmt: skip

    def _within_invitation_cap(self, inviter: Identity, adding: int, field: str) -> None:
        """Refuse ``adding`` more pending invitations from ``inviter`` over the cap. Known
        and unknown invitees count alike, so the cap tells nothing about who exists."""
        cap = self.settings.max_pending_invitations_per_identity
        if adding <= 0:
            return
        out = len(self.store.invitations(invited_by=inviter.id, limit=cap))
        if out + adding > cap:
            raise ValidationError(
                field, f"at most {cap} pending invitations per identity "
                "(MAX_PENDING_INVITATIONS_PER_IDENTITY); withdraw some first",
            )  # fmt: skip

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
        _check_choice(kind, TEAM_KINDS)
        if self.principal.trusted:
            return self.store.list_teams(kind)
        if (me := self._me()) is None:
            return []
        return [t for t, _ in self.store.memberships_of(me.id) if t.kind == kind]

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
        _check_choice(role, ROLES, "role")
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
                self._withdraw_sent(found, who.id)
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
        invitee_id = self._invitee_id(who, given)
        again = self.store.invitations(team=(team.kind, team.id), identity_id=invitee_id)
        self._within_invitation_cap(inviter, 0 if again else 1, "identity")
        invitation = Invitation(team.kind, team.id, invitee_id, role, inviter.id, now, named=given)
        self.store.save_invitation(invitation)
        return Invitation(team.kind, team.id, given, role, inviter.id, now, team.name)

    def _withdraw_sent(self, team: Team, inviter_id: str) -> None:
        """Withdraw the invitations ``inviter_id`` sent to ``team``: it can no longer
        grant them (issue 32, item 9)."""
        for sent in self.store.invitations(team=(team.kind, team.id), invited_by=inviter_id):
            self.store.delete_invitation(team.kind, team.id, sent.identity_id)

    def _grantable(self, invitation: Invitation) -> bool:
        """Whether the invitation's inviter could still grant it: an active admin of the
        team (only admins invite); the team's existence was checked on finding it."""
        if invitation.invited_by is None:
            return True
        current = {m.identity_id: m for m in self.store.members(invitation.team_kind,
                                                                invitation.team_id)}  # fmt: skip
        inviter = current.get(invitation.invited_by)
        return inviter is not None and inviter.active and inviter.role == "admin"

    # --- invitations (the team admins' side) --------------------------------------------------
    def team_invitations(
        self, team: str, *, limit: int | None = None, offset: int = 0
    ) -> list[Invitation]:
        """The pending invitations of a team (its admins, or the trusted principal),
        oldest first, a page of ``limit`` (default 100, at most ``LIST_MAX_LIMIT``) from
        ``offset``. Each names the invitee as its inviter did (``identity_id``), the same
        for a name no identity has; withdraw one with :meth:`withdraw`."""
        size, start = self._page(limit, offset)
        found = self._team(team, admin=True)
        pending = self.store.invitations(team=(found.kind, found.id), limit=size, offset=start)
        return [replace(i, identity_id=i.named or i.identity_id, named=None) for i in pending]

    def withdraw(self, team: str, identity: str) -> bool:
        """Withdraw the team's pending invitation of ``identity`` (as listed by
        :meth:`team_invitations`); False when there was none. Team admins only."""
        with self.store.write():
            found = self._team(team, admin=True)
            who = self._lookup(identity)
            gone = who is not None and self.store.delete_invitation(found.kind, found.id, who.id)
            unknown = self.store.delete_invitation(found.kind, found.id, UNKNOWN_INVITEE + identity)
            return gone or unknown

    def _page(self, limit: int | None, offset: int) -> tuple[int, int]:
        size = INVITATIONS_PAGE if limit is None else check.page_limit(limit, self.settings)
        return size, check.whole(offset, "offset")

    # --- invitations (the invitee's side) ---------------------------------------------------
    def invitations(
        self, *, kind: str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[Invitation]:
        """The caller's pending invitations (every pending one, for the trusted principal:
        one to a name no identity has shows as ``unknown:NAME``), to teams of ``kind``
        (group, org; None: both), oldest first, a page of ``limit`` (default 100, at
        most ``LIST_MAX_LIMIT``) from ``offset``."""
        _check_choice(kind, TEAM_KINDS)
        size, start = self._page(limit, offset)
        if self.principal.trusted:
            return self.store.invitations(team_kind=kind, limit=size, offset=start)
        if (me := self._me()) is None:
            return []
        return self.store.invitations(identity_id=me.id, team_kind=kind, limit=size, offset=start)

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
            if pending is not None and not self._grantable(pending):  # the inviter lost the right
                self.store.delete_invitation(pending.team_kind, pending.team_id, me.id)
                pending = None
            if pending is not None:
                membership = Membership(pending.team_kind, pending.team_id, me.id, pending.role)
                self.store.save_membership(membership)
                self.store.delete_invitation(pending.team_kind, pending.team_id, me.id)
        if pending is None:
            raise ValidationError("team", f"you have no invitation to {team}")
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
            if not active:
                self._withdraw_sent(found, who.id)
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
                self.store.delete_invitation(found.kind, found.id, UNKNOWN_INVITEE + identity)
                return False
            current = {m.identity_id: m for m in self.store.members(found.kind, found.id)}
            if who.id not in current:
                self.store.delete_invitation(found.kind, found.id, who.id)
                self.store.delete_invitation(found.kind, found.id, UNKNOWN_INVITEE + identity)
                return False
            self._keep_an_admin(found, current, who.id, None, False)
            self._withdraw_sent(found, who.id)
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
