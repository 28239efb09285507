"""The directory: identities, groups, orgs, memberships and grants; each command
calls one method of ``Memory.directory``, as the ``--as`` identity."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from ..identity import Invitation
from ..memory import Memory
from .options import JsonOpt
from .output import echo_json, new_table, out
from .runtime import opens_memory

identity_app = typer.Typer(help="Users and agents.", no_args_is_help=True)
group_app = typer.Typer(
    help="Groups (also called rings): members and admins.", no_args_is_help=True
)
org_app = typer.Typer(help="Orgs: active and inactive members, admins.", no_args_is_help=True)
grant_app = typer.Typer(help="Share grants of federated namespaces.", no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="A name: letters, digits, '_ . @ + -'.")]
IdentityArg = Annotated[str, typer.Argument(help="An identity: NAME, user:NAME or agent:NAME.")]
AdminsOpt = Annotated[list[str] | None, typer.Option("--admin", help="An admin (repeatable).")]
MembersOpt = Annotated[list[str] | None, typer.Option("--member", help="A member (repeatable).")]
RoleOpt = Annotated[str, typer.Option("--role", help="member or admin.")]
NamespaceArg = Annotated[str, typer.Argument(help="A federated namespace: federated:ORG:SOURCE.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="A page of this many (default 100).")]
OffsetOpt = Annotated[int, typer.Option("--offset", help="Skip this many (page on).")]
INVITATION_COLUMNS = ["team_name", "identity_id", "role", "invited_by", "created_at"]


def _show(items: Sequence[Any], as_json: bool, columns: Sequence[str]) -> None:
    rows = [item.to_dict() for item in items]
    if as_json:
        echo_json(rows)
        return
    table = new_table(*columns)
    for row in rows:
        table.add_row(*(str(row.get(c, "")) for c in columns))
    out().print(table)


def _documented(doc: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command made in a loop its docstring (the help typer shows)."""

    def set_doc(command: Callable[..., None]) -> Callable[..., None]:
        command.__doc__ = doc
        return command

    return set_doc


def _list_command(
    app: typer.Typer,
    name: str,
    doc: str,
    found: Callable[[Memory], Sequence[Any]],
    columns: Sequence[str],
) -> None:
    """A command ``NAME [--json]`` that shows what ``found`` gives, in these columns."""

    @app.command(name)
    @_documented(doc)
    @opens_memory(json_last=True)
    def list_(mem: Memory, as_json: JsonOpt = False) -> None:
        _show(found(mem), as_json, columns)


# --- identities -------------------------------------------------------------------------
@identity_app.command("create")
@opens_memory(json_last=True)
def identity_create(
    mem: Memory,
    name: NameArg,
    agent: Annotated[bool, typer.Option("--agent", help="An agent, not a user.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Create a user (or, with --agent, an agent).

    Example: memchentic identity create sophie --agent
    """
    made = mem.directory.create_identity(name, "agent" if agent else "user")
    _show([made], as_json, ["id", "kind", "name"])


_list_command(
    identity_app,
    "list",
    """List identities.

    Example: memchentic identity list --json
    """,
    lambda mem: mem.directory.identities(),
    ["id", "kind", "name", "created_at"],
)


@identity_app.command("rename")
@opens_memory
def identity_rename(
    mem: Memory,
    identity: IdentityArg,
    new_name: NameArg,
) -> None:
    """Rename an identity (its id and memories stay).

    Example: memchentic identity rename alice alicia
    """
    renamed = mem.directory.rename_identity(identity, new_name)
    typer.echo(f"renamed {renamed.id} to {renamed.name}")


# --- groups and orgs ---------------------------------------------------------------------
def _team_commands(app: typer.Typer, kind: str) -> None:
    """create / list / rename / members / add-member / invitations / accept / decline /
    remove-member / pending / withdraw, for groups and orgs alike."""

    @app.command("create")
    @_documented(f"Create a {kind}.\n\n    Example: memchentic {kind} create core --admin alice")
    @opens_memory
    def create(
        mem: Memory,
        name: NameArg,
        admins: AdminsOpt = None,
        members: MembersOpt = None,
    ) -> None:
        make = mem.directory.create_group if kind == "group" else mem.directory.create_org
        team = make(name, admins=admins or [], members=members or [])
        typer.echo(f"created {team.namespace}")

    _list_command(
        app,
        "list",
        f"List {kind}s.\n\n    Example: memchentic {kind} list",
        lambda mem: mem.directory.teams(kind),
        ["id", "name", "created_at"],
    )

    @app.command("rename")
    @_documented(f"Rename a {kind}.\n\n    Example: memchentic {kind} rename core platform")
    @opens_memory
    def rename(
        mem: Memory,
        team: NameArg,
        new_name: NameArg,
    ) -> None:
        renamed = mem.directory.rename_team(f"{kind}:{team}", new_name)
        typer.echo(f"renamed {renamed.namespace} to {renamed.name}")

    @app.command("members")
    @_documented(f"List a {kind}'s members.\n\n    Example: memchentic {kind} members core")
    @opens_memory(json_last=True)
    def members(
        mem: Memory,
        team: NameArg,
        as_json: JsonOpt = False,
    ) -> None:
        found = mem.directory.members(f"{kind}:{team}")
        _show(found, as_json, ["identity_id", "role", "active"])

    @app.command("add-member")
    @_documented(
        f"Add a member to a {kind} (or change its role). Under --as, someone not yet\n"
        f"    a member is only invited: it joins with `memchentic {kind} accept`.\n\n"
        f"    Example: memchentic {kind} add-member core bob --role admin"
    )
    @opens_memory
    def add_member(
        mem: Memory,
        team: NameArg,
        identity: IdentityArg,
        role: RoleOpt = "member",
    ) -> None:
        m = mem.directory.add_member(f"{kind}:{team}", identity, role=role)
        if isinstance(m, Invitation):
            typer.echo(f"invited {identity} to {kind}:{team} as {m.role} (joins on accepting)")
        else:
            typer.echo(f"{m.identity_id} is {m.role} of {kind}:{team}")

    @app.command("invitations")
    @_documented(
        f"List pending invitations to {kind}s (yours, under --as NAME), a page at a time.\n\n"
        f"    Example: memchentic {kind} invitations --limit 20 --offset 20  (as bob: --as bob)"
    )
    @opens_memory(json_last=True)
    def invitations(
        mem: Memory, limit: LimitOpt = None, offset: OffsetOpt = 0, as_json: JsonOpt = False
    ) -> None:
        found = mem.directory.invitations(kind=kind, limit=limit, offset=offset)
        _show(found, as_json, INVITATION_COLUMNS)

    @app.command("pending")
    @_documented(
        f"List a {kind}'s pending invitations (its admins), each invitee as its inviter\n"
        f"    named it; withdraw one with `memchentic {kind} withdraw`.\n\n"
        f"    Example: memchentic {kind} pending core  (as carol: memchentic --as carol ...)"
    )
    @opens_memory(json_last=True)
    def pending(
        mem: Memory, team: NameArg, limit: LimitOpt = None, offset: OffsetOpt = 0,
        as_json: JsonOpt = False,
    ) -> None:  # fmt: skip
        found = mem.directory.team_invitations(f"{kind}:{team}", limit=limit, offset=offset)
        _show(found, as_json, INVITATION_COLUMNS)

    @app.command("withdraw")
    @_documented(
        f"Withdraw a pending invitation to a {kind} (its admins).\n\n"
        f"    Example: memchentic {kind} withdraw core agent:alicebot  (as carol: --as carol)"
    )
    @opens_memory
    def withdraw(mem: Memory, team: NameArg, identity: IdentityArg) -> None:
        done = mem.directory.withdraw(f"{kind}:{team}", identity)
        typer.echo(f"withdrew the invitation of {identity}" if done
                   else f"{identity} had no invitation to {kind}:{team}")  # fmt: skip

    @app.command("accept")
    @_documented(
        f"Accept an invitation to a {kind} and join it; run it as the invitee (--as).\n\n"
        f"    Example: memchentic --as bob {kind} accept core  (memchentic {kind} accept NAME)"
    )
    @opens_memory
    def accept(mem: Memory, team: NameArg) -> None:
        m = mem.directory.accept(f"{kind}:{team}")
        typer.echo(f"{m.identity_id} is {m.role} of {kind}:{team}")

    @app.command("decline")
    @_documented(
        f"Decline an invitation to a {kind}; run it as the invitee (--as).\n\n"
        f"    Example: memchentic --as bob {kind} decline core  (memchentic {kind} decline NAME)"
    )
    @opens_memory
    def decline(mem: Memory, team: NameArg) -> None:
        done = mem.directory.decline(f"{kind}:{team}")
        typer.echo("declined" if done else f"there was no invitation to {kind}:{team}")

    @app.command("remove-member")
    @_documented(
        f"Remove a member from a {kind} (never the last admin).\n\n"
        f"    Example: memchentic {kind} remove-member core bob"
    )
    @opens_memory
    def remove_member(
        mem: Memory,
        team: NameArg,
        identity: IdentityArg,
    ) -> None:
        removed = mem.directory.remove_member(f"{kind}:{team}", identity)
        typer.echo(f"removed {identity}" if removed else f"{identity} was not a member")


_team_commands(group_app, "group")
_team_commands(org_app, "org")


def _activity_command(active: bool, doc: str) -> None:
    """``org activate`` / ``org deactivate``: one membership's activity."""
    state = "active" if active else "inactive"

    @org_app.command("activate" if active else "deactivate")
    @_documented(doc)
    @opens_memory
    def set_active(
        mem: Memory,
        org: NameArg,
        identity: IdentityArg,
    ) -> None:
        mem.directory.set_active(f"org:{org}", identity, active)
        typer.echo(f"{identity} is {state} in org:{org}")


_activity_command(
    False,
    """Make an org member inactive: it reads nothing of the org until reactivated.

    Example: memchentic org deactivate acme carol
    """,
)
_activity_command(
    True,
    """Make an org member active again.

    Example: memchentic org activate acme carol
    """,
)


# --- grants ---------------------------------------------------------------------------------
@grant_app.command("add")
@opens_memory
def grant_add(
    mem: Memory,
    namespace: NamespaceArg,
    grantee: IdentityArg,
) -> None:
    """Let an identity read a federated namespace.

    Example: memchentic grant add federated:acme:alice dave
    """
    grant = mem.directory.grant(namespace, grantee)
    typer.echo(f"{grant.grantee} can read {grant.namespace}")


@grant_app.command("revoke")
@opens_memory
def grant_revoke(
    mem: Memory,
    namespace: NamespaceArg,
    grantee: IdentityArg,
) -> None:
    """Take a grant back; the namespace disappears for the grantee at once.

    Example: memchentic grant revoke federated:acme:alice dave
    """
    revoked = mem.directory.revoke(namespace, grantee)
    typer.echo("revoked" if revoked else "there was no such grant")


_list_command(
    grant_app,
    "list",
    """List grants.

    Example: memchentic grant list --json
    """,
    lambda mem: mem.directory.grants(),
    ["namespace", "grantee", "created_at"],
)


def register(app: typer.Typer) -> None:
    app.add_typer(identity_app, name="identity")
    app.add_typer(group_app, name="group")
    app.add_typer(group_app, name="ring", hidden=True)
    app.add_typer(org_app, name="org")
    app.add_typer(grant_app, name="grant")
