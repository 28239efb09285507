"""Directory tables of the SQLite store: identities, teams, memberships, invitations,
grants."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..clock import from_text, to_text
from ..identity import Grant, Identity, Invitation, Membership, Team


def _identity(row: tuple[Any, ...]) -> Identity:
    return Identity(row[0], row[1], row[2], from_text(row[3]))  # type: ignore[arg-type]


def _team(row: tuple[Any, ...]) -> Team:
    return Team(row[0], row[1], row[2], from_text(row[3]))  # type: ignore[arg-type]


def _membership(row: tuple[Any, ...]) -> Membership:
    return Membership(row[0], row[1], row[2], row[3], bool(row[4]))


def _invitation(row: tuple[Any, ...]) -> Invitation:
    return Invitation(row[0], row[1], row[2], row[3], row[4], from_text(row[5]), row[6])


def _grant(row: tuple[Any, ...]) -> Grant:
    return Grant(row[0], row[1], row[2], from_text(row[3]))  # type: ignore[arg-type]


class SQLiteDirectory:
    """Mixin for :class:`~memchentic.store.sqlite.SQLiteStore` (uses ``conn`` and ``write``)."""

    @property
    def conn(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

    def save_identity(self, identity: Identity) -> None:
        with self.write():  # type: ignore[attr-defined]
            self.conn.execute(
                "INSERT INTO identities(id, kind, name, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET name = excluded.name",
                (identity.id, identity.kind, identity.name, to_text(identity.created_at)),
            )

    def find_identity(self, key: str, kind: str | None = None) -> Identity | None:
        cols = "id, kind, name, created_at"
        kind_sql, args = (" AND kind = ?", [kind]) if kind else ("", [])
        row = (
            self.conn.execute(
                f"SELECT {cols} FROM identities WHERE id = ?{kind_sql}", [key, *args]
            ).fetchone()
            or self.conn.execute(
                f"SELECT {cols} FROM identities WHERE name = ?{kind_sql} ORDER BY kind",
                [key, *args],
            ).fetchone()
        )
        return _identity(row) if row else None

    def list_identities(self, kind: str | None = None) -> list[Identity]:
        sql = "SELECT id, kind, name, created_at FROM identities"
        args: list[Any] = []
        if kind:
            sql, args = sql + " WHERE kind = ?", [kind]
        return [_identity(r) for r in self.conn.execute(sql + " ORDER BY kind, name", args)]

    def save_team(self, team: Team) -> None:
        with self.write():  # type: ignore[attr-defined]
            self.conn.execute(
                "INSERT INTO teams(id, kind, name, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(kind, id) DO UPDATE SET name = excluded.name",
                (team.id, team.kind, team.name, to_text(team.created_at)),
            )

    def find_team(self, kind: str, key: str) -> Team | None:
        cols = "id, kind, name, created_at"
        row = (
            self.conn.execute(
                f"SELECT {cols} FROM teams WHERE kind = ? AND id = ?", (kind, key)
            ).fetchone()
            or self.conn.execute(
                f"SELECT {cols} FROM teams WHERE kind = ? AND name = ?", (kind, key)
            ).fetchone()
        )
        return _team(row) if row else None

    def list_teams(self, kind: str) -> list[Team]:
        rows = self.conn.execute(
            "SELECT id, kind, name, created_at FROM teams WHERE kind = ? ORDER BY name", (kind,)
        )
        return [_team(r) for r in rows]

    def save_membership(self, membership: Membership) -> None:
        with self.write():  # type: ignore[attr-defined]
            self.conn.execute(
                "INSERT INTO memberships(team_kind, team_id, identity_id, role, active) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(team_kind, team_id, identity_id) "
                "DO UPDATE SET role = excluded.role, active = excluded.active",
                (membership.team_kind, membership.team_id, membership.identity_id,
                 membership.role, 1 if membership.active else 0),
            )  # fmt: skip

    def delete_membership(self, team_kind: str, team_id: str, identity_id: str) -> bool:
        with self.write():  # type: ignore[attr-defined]
            cur = self.conn.execute(
                "DELETE FROM memberships WHERE team_kind = ? AND team_id = ? AND identity_id = ?",
                (team_kind, team_id, identity_id),
            )
        return cur.rowcount > 0

    def members(self, team_kind: str, team_id: str) -> list[Membership]:
        rows = self.conn.execute(
            "SELECT team_kind, team_id, identity_id, role, active FROM memberships "
            "WHERE team_kind = ? AND team_id = ? ORDER BY identity_id",
            (team_kind, team_id),
        )
        return [_membership(r) for r in rows]

    def memberships_of(self, identity_id: str) -> list[tuple[Team, Membership]]:
        rows = self.conn.execute(
            "SELECT t.id, t.kind, t.name, t.created_at, "
            "m.team_kind, m.team_id, m.identity_id, m.role, m.active "
            "FROM memberships m JOIN teams t ON t.kind = m.team_kind AND t.id = m.team_id "
            "WHERE m.identity_id = ? ORDER BY t.kind, t.id",
            (identity_id,),
        )
        return [(_team(r[:4]), _membership(r[4:])) for r in rows]

    def save_invitation(self, invitation: Invitation) -> None:
        with self.write():  # type: ignore[attr-defined]
            self.conn.execute(
                "INSERT INTO invitations(team_kind, team_id, identity_id, role, invited_by, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(team_kind, team_id, identity_id) "
                "DO UPDATE SET role = excluded.role, invited_by = excluded.invited_by",
                (invitation.team_kind, invitation.team_id, invitation.identity_id,
                 invitation.role, invitation.invited_by, to_text(invitation.created_at)),
            )  # fmt: skip

    def delete_invitation(self, team_kind: str, team_id: str, identity_id: str) -> bool:
        with self.write():  # type: ignore[attr-defined]
            cur = self.conn.execute(
                "DELETE FROM invitations WHERE team_kind = ? AND team_id = ? AND identity_id = ?",
                (team_kind, team_id, identity_id),
            )
        return cur.rowcount > 0

    def invitations(
        self, *, identity_id: str | None = None, team: tuple[str, str] | None = None
    ) -> list[Invitation]:
        sql = (
            "SELECT i.team_kind, i.team_id, i.identity_id, i.role, i.invited_by, i.created_at, "
            "t.name FROM invitations i JOIN teams t ON t.kind = i.team_kind AND t.id = i.team_id "
            "WHERE 1"
        )
        args: list[Any] = []
        if identity_id is not None:
            sql, args = sql + " AND i.identity_id = ?", [*args, identity_id]
        if team is not None:
            sql, args = sql + " AND i.team_kind = ? AND i.team_id = ?", [*args, *team]
        order = " ORDER BY i.created_at, i.team_kind, i.team_id, i.identity_id"
        return [_invitation(r) for r in self.conn.execute(sql + order, args)]

    def save_grant(self, grant: Grant) -> None:
        with self.write():  # type: ignore[attr-defined]
            self.conn.execute(
                "INSERT INTO grants(id, namespace, grantee, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(namespace, grantee) DO NOTHING",
                (grant.id, grant.namespace, grant.grantee, to_text(grant.created_at)),
            )

    def delete_grant(self, namespace: str, grantee: str) -> bool:
        with self.write():  # type: ignore[attr-defined]
            cur = self.conn.execute(
                "DELETE FROM grants WHERE namespace = ? AND grantee = ?", (namespace, grantee)
            )
        return cur.rowcount > 0

    def grants(self, *, namespace: str | None = None, grantee: str | None = None) -> list[Grant]:
        sql = "SELECT id, namespace, grantee, created_at FROM grants WHERE 1"
        args: list[Any] = []
        if namespace is not None:
            sql, args = sql + " AND namespace = ?", [*args, namespace]
        if grantee is not None:
            sql, args = sql + " AND grantee = ?", [*args, grantee]
        return [_grant(r) for r in self.conn.execute(sql + " ORDER BY created_at, id", args)]
