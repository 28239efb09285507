"""``/v1`` routes for the directory (identities, groups, orgs, grants) and upkeep
(``gc``, ``maintain``, ``export``).

Creating identities and orgs and renaming identities need an admin key (403
``admin_required`` otherwise). The other routes run as the caller, and the
directory decides (docs/design.md, section 2): an identity may create groups, manage the
groups and orgs it administers, and share its own federated namespaces. Members
an identity names are only invited (``"status": "invited"``, the same answer
whether or not the identity exists) and join with ``POST .../accept``; an admin
key adds them at once (``"status": "member"``). A team's admins list its pending
invitations (``GET .../invitations``) and withdraw one (``DELETE
.../invitations/{identity}``); lists of invitations come in pages (``limit``,
``offset``)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from ..identity import Invitation
from .deps import AdminDep, CallerDep
from .errors import admin_required
from .schemas import (
    CountOut,
    DeletedOut,
    GrantRequest,
    IdentityRequest,
    MaintenanceRequest,
    MemberRequest,
    OptText,
    RenameRequest,
    TeamRequest,
)

router = APIRouter(prefix="/v1", tags=["directory and upkeep"])

#: A page of invitations: ``limit`` (default 100, at most LIST_MAX_LIMIT) from ``offset``;
#: the library checks both (422 naming the field and the setting).
PageLimit = Annotated[
    int | None, Query(description="Page size: default 100, at most LIST_MAX_LIMIT.")
]
PageOffset = Annotated[int, Query(description="Invitations to skip (page on with it).")]

#: Exports up to this size are kept in memory while they stream; larger ones spill to disk.
EXPORT_SPOOL_BYTES = 8 * 1024 * 1024


@router.get("/me", summary="Who am I")
def me(who: CallerDep) -> dict[str, Any]:
    """The caller's key (never the secret) and the namespaces it can read
    (``null``: every namespace, for an admin key)."""
    readable = who.mem.access.readable(who.mem.principal, None)
    return {"key": who.key.to_dict(), "admin": who.admin, "readable": readable}


@router.get("/identities", summary="Identities")
def identities(who: CallerDep, kind: OptText = None) -> list[dict[str, Any]]:
    """Every identity (admin), or the caller and the members of its teams."""
    return [i.to_dict() for i in who.mem.directory.identities(kind)]


@router.post("/identities", summary="Create an identity (admin)")
def create_identity(body: IdentityRequest, who: AdminDep) -> dict[str, Any]:
    return who.mem.directory.create_identity(body.name, body.kind).to_dict()


@router.patch("/identities/{key}", summary="Rename an identity (admin)")
def rename_identity(key: str, body: RenameRequest, who: AdminDep) -> dict[str, Any]:
    return who.mem.directory.rename_identity(key, body.name).to_dict()


def _team_routes(plural: str) -> None:
    """The routes of ``/v1/groups`` or ``/v1/orgs`` (the same shape for both)."""
    kind = plural.removesuffix("s")

    @router.get(f"/{plural}", summary=f"List {plural}", name=f"list_{plural}")
    def teams(who: CallerDep) -> list[dict[str, Any]]:
        """Every one (admin), or those the caller belongs to."""
        return [t.to_dict() for t in who.mem.directory.teams(kind)]

    @router.post(f"/{plural}", summary=f"Create a {kind}", name=f"create_{kind}")
    def create(body: TeamRequest, who: CallerDep) -> dict[str, Any]:
        """An identity that creates a group becomes its admin; orgs need an admin key."""
        directory = who.mem.directory
        if kind == "org" and not who.admin:
            raise admin_required()
        make = directory.create_org if kind == "org" else directory.create_group
        return make(body.name, admins=body.admins, members=body.members).to_dict()

    @router.patch(f"/{plural}/{{name}}", summary=f"Rename a {kind}", name=f"rename_{kind}")
    def rename(name: str, body: RenameRequest, who: CallerDep) -> dict[str, Any]:
        return who.mem.directory.rename_team(f"{kind}:{name}", body.name).to_dict()

    @router.get(f"/{plural}/{{name}}/members", summary="Members", name=f"{kind}_members")
    def members(name: str, who: CallerDep) -> list[dict[str, Any]]:
        return [m.to_dict() for m in who.mem.directory.members(f"{kind}:{name}")]

    @router.post(
        f"/{plural}/{{name}}/members", summary="Add or change a member", name=f"{kind}_add_member"
    )
    def add_member(name: str, body: MemberRequest, who: CallerDep) -> dict[str, Any]:
        """Add a member, or change its role (``member``/``admin``) or, in an org, activity.
        With an identity's key, someone not yet a member is only invited."""
        found = who.mem.directory.add_member(
            f"{kind}:{name}", body.identity, role=body.role, active=body.active
        )
        status = "invited" if isinstance(found, Invitation) else "member"
        return {"status": status, **found.to_dict()}

    @router.post(
        f"/{plural}/{{name}}/accept", summary="Accept an invitation", name=f"{kind}_accept"
    )
    def accept(name: str, who: CallerDep) -> dict[str, Any]:
        """Join the team the caller was invited to (422 when there is no invitation)."""
        return {"status": "member", **who.mem.directory.accept(f"{kind}:{name}").to_dict()}

    @router.post(
        f"/{plural}/{{name}}/decline", response_model=DeletedOut,
        summary="Decline an invitation", name=f"{kind}_decline",
    )  # fmt: skip
    def decline(name: str, who: CallerDep) -> dict[str, Any]:
        return {"deleted": who.mem.directory.decline(f"{kind}:{name}")}

    @router.delete(
        f"/{plural}/{{name}}/members/{{identity}}", response_model=DeletedOut,
        summary="Remove a member", name=f"{kind}_remove_member",
    )  # fmt: skip
    def remove_member(name: str, identity: str, who: CallerDep) -> dict[str, Any]:
        return {"deleted": who.mem.directory.remove_member(f"{kind}:{name}", identity)}

    @router.get(
        f"/{plural}/{{name}}/invitations", summary="Pending invitations (admins)",
        name=f"{kind}_invitations",
    )  # fmt: skip
    def team_invitations(
        name: str, who: CallerDep, limit: PageLimit = None, offset: PageOffset = 0
    ) -> list[dict[str, Any]]:
        """The team's pending invitations, oldest first, each naming the invitee as its
        inviter did (``identity_id``), whether or not such an identity exists."""
        found = who.mem.directory.team_invitations(f"{kind}:{name}", limit=limit, offset=offset)
        return [i.to_dict() for i in found]

    @router.delete(
        f"/{plural}/{{name}}/invitations/{{identity}}", response_model=DeletedOut,
        summary="Withdraw an invitation (admins)", name=f"{kind}_withdraw",
    )  # fmt: skip
    def withdraw(name: str, identity: str, who: CallerDep) -> dict[str, Any]:
        return {"deleted": who.mem.directory.withdraw(f"{kind}:{name}", identity)}


_team_routes("groups")
_team_routes("orgs")


@router.get("/invitations", summary="My invitations")
def invitations(
    who: CallerDep, kind: OptText = None, limit: PageLimit = None, offset: PageOffset = 0
) -> list[dict[str, Any]]:
    """The caller's pending invitations to groups and orgs (every one, for an admin key),
    oldest first, a page at a time (``limit``, ``offset``)."""
    found = who.mem.directory.invitations(kind=kind, limit=limit, offset=offset)
    return [i.to_dict() for i in found]


@router.get("/grants", summary="Share grants")
def grants(who: CallerDep, namespace: OptText = None) -> list[dict[str, Any]]:
    return [g.to_dict() for g in who.mem.directory.grants(namespace)]


@router.post("/grants", summary="Share a federated namespace")
def grant(body: GrantRequest, who: CallerDep) -> dict[str, Any]:
    """Let ``grantee`` read ``federated:ORG:SOURCE`` (its source or an admin key)."""
    return who.mem.directory.grant(body.namespace, body.grantee).to_dict()


@router.post("/grants/revoke", response_model=DeletedOut, summary="Revoke a share")
def revoke(body: GrantRequest, who: CallerDep) -> dict[str, Any]:
    return {"deleted": who.mem.directory.revoke(body.namespace, body.grantee)}


@router.post("/gc", summary="Garbage-collect")
def gc(body: MaintenanceRequest, who: CallerDep) -> dict[str, Any]:
    """Delete long-expired and decayed memories the caller may change (everything
    with an admin key); ``dry_run`` reports without deleting."""
    return who.mem.gc(dry_run=body.dry_run)


@router.post("/reset", response_model=CountOut, summary="Empty the store (admin)")
def reset(who: AdminDep) -> dict[str, Any]:
    """Remove every memory with its edges and history; identities, keys, turns and the
    event log stay. An admin key only (any other key: 403)."""
    return {"deleted": who.mem.reset()}


@router.post("/maintain", summary="Periodic upkeep")
def maintain(body: MaintenanceRequest, who: CallerDep) -> dict[str, Any]:
    """gc, consolidation, session summaries and (admin) event pruning in one call."""
    return who.mem.maintain(dry_run=body.dry_run).to_dict()


@router.get(
    "/export",
    summary="Export as JSON Lines",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
def export(who: CallerDep, vectors: bool = False) -> StreamingResponse:
    """Every memory the caller can read (everything with an admin key), with edges
    and versions, in the format ``memchentic import`` reads."""
    spool = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - the stream closes it
        max_size=EXPORT_SPOOL_BYTES, mode="w+", encoding="utf-8"
    )
    count = who.mem.export(spool, vectors=vectors)
    spool.seek(0)

    def lines() -> Iterator[str]:
        try:
            yield from spool
        finally:
            spool.close()

    headers = {"X-Memchentic-Lines": str(count),
               "Content-Disposition": 'attachment; filename="memchentic.jsonl"'}  # fmt: skip
    return StreamingResponse(lines(), media_type="application/x-ndjson", headers=headers)
