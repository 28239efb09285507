"""Directory tables of the PostgreSQL store: identities, teams, memberships,
invitations, grants."""

from __future__ import annotations

from typing import Any

from ..identity import Grant, Identity, Invitation, Membership, Team
from .postgres_connect import PgConnections
from .postgres_rows import utc


def _identity(row: tuple[Any, ...]) -> Identity:
    return Identity(row[0], row[1], row[2], utc(row[3]))  # type: ignore[arg-type]


def _team(row: tuple[Any, ...]) -> Team:
    return Team(row[0], row[1], row[2], utc(row[3]))  # type: ignore[arg-type]


def _membership(row: tuple[Any, ...]) -> Membership:
    return Membership(row[0], row[1], row[2], row[3], bool(row[4]))


def _invitation(row: tuple[Any, ...]) -> Invitation:
    return Invitation(row[0], row[1], row[2], row[3], row[4], utc(row[5]), row[6])


def _grant(row: tuple[Any, ...]) -> Grant:
    return Grant(row[0], row[1], row[2], utc(row[3]))  # type: ignore[arg-type]


class PostgresDirectory(PgConnections):
    """Mixin for :class:`~memchentic.store.postgres.PostgresStore`."""

    def save_identity(self, identity: Identity) -> None:
        self._run(
            "INSERT INTO identities (id, kind, name, created_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET name = excluded.name",
            (identity.id, identity.kind, identity.name, identity.created_at),
        )

    def find_identity(self, key: str, kind: str | None = None) -> Identity | None:
        cols = "id, kind, name, created_at"
        kind_sql, args = (" AND kind = %s", [kind]) if kind else ("", [])
        row = self._row(
            f"SELECT {cols} FROM identities WHERE id = %s{kind_sql}", [key, *args]
        ) or self._row(
            f"SELECT {cols} FROM identities WHERE name = %s{kind_sql} ORDER BY kind LIMIT 1",
            [key, *args],
        )
        return _identity(row) if row else None

    def list_identities(self, kind: str | None = None) -> list[Identity]:
        sql = "SELECT id, kind, name, created_at FROM identities"
        args: list[Any] = []
        if kind:
            sql, args = sql + " WHERE kind = %s", [kind]
        return [_identity(r) for r in self._rows(sql + " ORDER BY kind, name", args)]

    def save_team(self, team: Team) -> None:
        self._run(
            "INSERT INTO teams (id, kind, name, created_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (kind, id) DO UPDATE SET name = excluded.name",
            (team.id, team.kind, team.name, team.created_at),
        )

    def find_team(self, kind: str, key: str) -> Team | None:
        cols = "id, kind, name, created_at"
        row = self._row(
            f"SELECT {cols} FROM teams WHERE kind = %s AND id = %s", (kind, key)
        ) or self._row(f"SELECT {cols} FROM teams WHERE kind = %s AND name = %s", (kind, key))
        return _team(row) if row else None

    def list_teams(self, kind: str) -> list[Team]:
        rows = self._rows(
            "SELECT id, kind, name, created_at FROM teams WHERE kind = %s ORDER BY name", (kind,)
        )
        return [_team(r) for r in rows]

    def save_membership(self, membership: Membership) -> None:
        self._run(
            "INSERT INTO memberships (team_kind, team_id, identity_id, role, active) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (team_kind, team_id, identity_id) "
            "DO UPDATE SET role = excluded.role, active = excluded.active",
            (membership.team_kind, membership.team_id, membership.identity_id,
             membership.role, bool(membership.active)),
        )  # fmt: skip

    def delete_membership(self, team_kind: str, team_id: str, identity_id: str) -> bool:
        return (
            self._run(
                "DELETE FROM memberships "
                "WHERE team_kind = %s AND team_id = %s AND identity_id = %s",
                (team_kind, team_id, identity_id),
            )
            > 0
        )

    def members(self, team_kind: str, team_id: str) -> list[Membership]:
        rows = self._rows(
            "SELECT team_kind, team_id, identity_id, role, active FROM memberships "
            "WHERE team_kind = %s AND team_id = %s ORDER BY identity_id",
            (team_kind, team_id),
        )
        return [_membership(r) for r in rows]

    def memberships_of(self, identity_id: str) -> list[tuple[Team, Membership]]:
        rows = self._rows(
            "SELECT t.id, t.kind, t.name, t.created_at, "
            "m.team_kind, m.team_id, m.identity_id, m.role, m.active "
            "FROM memberships m JOIN teams t ON t.kind = m.team_kind AND t.id = m.team_id "
            "WHERE m.identity_id = %s ORDER BY t.kind, t.id",
            (identity_id,),
        )
        return [(_team(r[:4]), _membership(r[4:])) for r in rows]

    def save_invitation(self, invitation: Invitation) -> None:
        self._run(
            "INSERT INTO invitations (team_kind, team_id, identity_id, role, invited_by, "
            "created_at) VALUES (%s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (team_kind, team_id, identity_id) "
            "DO UPDATE SET role = excluded.role, invited_by = excluded.invited_by",
            (invitation.team_kind, invitation.team_id, invitation.identity_id,
             invitation.role, invitation.invited_by, invitation.created_at),
        )  # fmt: skip

    def delete_invitation(self, team_kind: str, team_id: str, identity_id: str) -> bool:
        return (
            self._run(
                "DELETE FROM invitations "
                "WHERE team_kind = %s AND team_id = %s AND identity_id = %s",
                (team_kind, team_id, identity_id),
            )
            > 0
        )

    def invitations(
        self, *, identity_id: str | None = None, team: tuple[str, str] | None = None
    ) -> list[Invitation]:
        sql = (
            "SELECT i.team_kind, i.team_id, i.identity_id, i.role, i.invited_by, i.created_at, "
            "t.name FROM invitations i JOIN teams t ON t.kind = i.team_kind AND t.id = i.team_id "
            "WHERE TRUE"
        )
        args: list[Any] = []
        if identity_id is not None:
            sql, args = sql + " AND i.identity_id = %s", [*args, identity_id]
        if team is not None:
            sql, args = sql + " AND i.team_kind = %s AND i.team_id = %s", [*args, *team]
        order = " ORDER BY i.created_at, i.team_kind, i.team_id, i.identity_id"
        return [_invitation(r) for r in self._rows(sql + order, args)]

    def save_grant(self, grant: Grant) -> None:
        self._run(
            "INSERT INTO grants (id, namespace, grantee, created_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (namespace, grantee) DO NOTHING",
            (grant.id, grant.namespace, grant.grantee, grant.created_at),
        )

    def delete_grant(self, namespace: str, grantee: str) -> bool:
        return (
            self._run(
                "DELETE FROM grants WHERE namespace = %s AND grantee = %s", (namespace, grantee)
            )
            > 0
        )

    def grants(self, *, namespace: str | None = None, grantee: str | None = None) -> list[Grant]:
        sql = "SELECT id, namespace, grantee, created_at FROM grants WHERE TRUE"
        args: list[Any] = []
        if namespace is not None:
            sql, args = sql + " AND namespace = %s", [*args, namespace]
        if grantee is not None:
            sql, args = sql + " AND grantee = %s", [*args, grantee]
        return [_grant(r) for r in self._rows(sql + " ORDER BY created_at, id", args)]
