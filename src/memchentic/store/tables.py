"""The directory (identities, teams, memberships, invitations, grants), events and
session turns, and the meta values, written once for both backends.

These tables hold the same columns on both; only the dialect differs (parameter
markers, timestamps, flags, JSON, lists of values: :class:`~.dialect.Dialect`).
Each part is composed from a :class:`SqlHost` (a backend's connections and its
dialect), not mixed into the store: :class:`~.sql_store.SqlStore` holds one of each
and answers the engine's calls with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from ..identity import Grant, Identity, Invitation, Membership, Team
from ..record import Event, Turn
from .dialect import Dialect


class SqlHost(Protocol):
    """What the shared tables need of a store: its dialect and four ways to run SQL
    (in the dialect's own spelling)."""

    dialect: Dialect

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of a query."""
        ...

    def _row(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of a query, or None."""
        ...

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement inside a write; the number of rows it changed."""
        ...

    def _write_alone(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` once per parameter row, as one write nobody reads the result of."""
        ...


#: The memories table's columns, in insert order, on both backends (SQLite adds
#: its ``rowid``; PostgreSQL its ``key`` and the ``tsv`` keyword entry).
COLUMNS: tuple[str, ...] = (
    "id", "namespace", "kind", "type", "content", "title", "tier_l0", "tier_l1", "tags",
    "path_hint", "repo", "entities", "slot_key", "user_id", "agent_id", "session_id",
    "confidence", "reinforcement", "importance", "polarity", "pinned", "created_at",
    "updated_at", "valid_from", "valid_to", "expires_at", "recall_count",
    "last_recalled_at", "superseded_by", "metadata",
)  # fmt: skip
SELECT_COLUMNS = ", ".join(f"m.{c}" for c in COLUMNS)
EDGE_COLUMNS = "id, source, target, kind, strength, created_at, metadata"
VERSION_COLUMNS = "memory_id, version, op, actor, at, changes, snapshot"

_IDENTITY = "id, kind, name, created_at"
_TEAM = "id, kind, name, created_at"
_GRANT = "id, namespace, grantee, created_at"
_MEMBERSHIP = "team_kind, team_id, identity_id, role, active"
#: The key of a membership and of an invitation.
_MEMBER_KEY = "team_kind, team_id, identity_id"
_MEMBER_WHERE = "team_kind = ? AND team_id = ? AND identity_id = ?"
_INVITATION = "team_kind, team_id, identity_id, role, invited_by, created_at, named"


class Part:
    """A part of the store composed from its host: it runs its SQL with the host's
    primitives, rendered by the host's dialect (``self.d``)."""

    def __init__(self, host: SqlHost) -> None:
        self.host = host
        self.d = host.dialect

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.host._rows(sql, params)

    def _row(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.host._row(sql, params)

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.host._run(sql, params)

    def _write_alone(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.host._write_alone(sql, rows)

    def _save(
        self, table: str, columns: str, key: str, values: Sequence[Any], *updated: str
    ) -> None:
        """Insert a row of ``values`` into ``table`` (its ``columns``), or, when a row
        of the same ``key`` (the columns of a unique index) is there, set its
        ``updated`` columns to the new values (none: keep it as it is)."""
        marks = ", ".join("?" * len(values))
        then = "UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in updated)
        self._run(
            self.d.sql(f"INSERT INTO {table} ({columns}) VALUES ({marks}) "
                       f"ON CONFLICT ({key}) DO {then if updated else 'NOTHING'}"),
            values,
        )  # fmt: skip


class MetaTable(Part):
    """The store's ``meta`` values and its schema version."""

    def get_meta(self, key: str) -> str | None:
        row = self._row(self.d.sql("SELECT value FROM meta WHERE key = ?"), (key,))
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._save("meta", "key, value", "key", (key, value), "value")

    def schema_version(self) -> int:
        return int(self._row("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0])


class DirectoryTables(Part):
    """Identities, teams (groups and orgs), memberships, invitations and grants."""

    def save_identity(self, identity: Identity) -> None:
        values = (identity.id, identity.kind, identity.name, self.d.value(identity.created_at))
        self._save("identities", _IDENTITY, "id", values, "name")

    def find_identity(self, key: str, kind: str | None = None) -> Identity | None:
        d = self.d
        kind_sql, args = (" AND kind = ?", [kind]) if kind else ("", [])
        row = self._row(
            d.sql(f"SELECT {_IDENTITY} FROM identities WHERE id = ?{kind_sql}"), [key, *args]
        ) or self._row(
            d.sql(
                f"SELECT {_IDENTITY} FROM identities WHERE name = ?{kind_sql} ORDER BY kind LIMIT 1"
            ),
            [key, *args],
        )
        return Identity(row[0], row[1], row[2], d.read_time(row[3])) if row else None  # type: ignore[arg-type]

    def list_identities(self, kind: str | None = None) -> list[Identity]:
        d = self.d
        sql, args = f"SELECT {_IDENTITY} FROM identities", []
        if kind:
            sql, args = sql + " WHERE kind = ?", [kind]
        rows = self._rows(d.sql(sql + " ORDER BY kind, name"), args)
        return [Identity(r[0], r[1], r[2], d.read_time(r[3])) for r in rows]  # type: ignore[arg-type]

    def save_team(self, team: Team) -> None:
        values = (team.id, team.kind, team.name, self.d.value(team.created_at))
        self._save("teams", _TEAM, "kind, id", values, "name")

    def find_team(self, kind: str, key: str) -> Team | None:
        d = self.d
        row = self._row(
            d.sql(f"SELECT {_TEAM} FROM teams WHERE kind = ? AND id = ?"), (kind, key)
        ) or self._row(d.sql(f"SELECT {_TEAM} FROM teams WHERE kind = ? AND name = ?"), (kind, key))
        return Team(row[0], row[1], row[2], d.read_time(row[3])) if row else None  # type: ignore[arg-type]

    def list_teams(self, kind: str) -> list[Team]:
        d = self.d
        rows = self._rows(d.sql(f"SELECT {_TEAM} FROM teams WHERE kind = ? ORDER BY name"), (kind,))
        return [Team(r[0], r[1], r[2], d.read_time(r[3])) for r in rows]  # type: ignore[arg-type]

    def save_membership(self, membership: Membership) -> None:
        m = membership
        values = (m.team_kind, m.team_id, m.identity_id, m.role, self.d.value(bool(m.active)))
        self._save("memberships", _MEMBERSHIP, _MEMBER_KEY, values, "role", "active")

    def delete_membership(self, team_kind: str, team_id: str, identity_id: str) -> bool:
        sql = f"DELETE FROM memberships WHERE {_MEMBER_WHERE}"
        return self._run(self.d.sql(sql), (team_kind, team_id, identity_id)) > 0

    def members(self, team_kind: str, team_id: str) -> list[Membership]:
        rows = self._rows(
            self.d.sql(
                f"SELECT {_MEMBERSHIP} FROM memberships "
                "WHERE team_kind = ? AND team_id = ? ORDER BY identity_id"
            ),
            (team_kind, team_id),
        )
        return [_membership(r) for r in rows]

    def memberships_of(self, identity_id: str) -> list[tuple[Team, Membership]]:
        d = self.d
        rows = self._rows(
            d.sql(
                "SELECT t.id, t.kind, t.name, t.created_at, "
                "m.team_kind, m.team_id, m.identity_id, m.role, m.active "
                "FROM memberships m JOIN teams t ON t.kind = m.team_kind AND t.id = m.team_id "
                "WHERE m.identity_id = ? ORDER BY t.kind, t.id"
            ),
            (identity_id,),
        )
        return [(Team(r[0], r[1], r[2], d.read_time(r[3])), _membership(r[4:])) for r in rows]  # type: ignore[arg-type]

    def save_invitation(self, invitation: Invitation) -> None:
        i = invitation
        values = (i.team_kind, i.team_id, i.identity_id, i.role, i.invited_by,
                  self.d.value(i.created_at), i.named)  # fmt: skip
        self._save("invitations", _INVITATION, _MEMBER_KEY, values, "role", "invited_by", "named")

    def delete_invitation(self, team_kind: str, team_id: str, identity_id: str) -> bool:
        sql = f"DELETE FROM invitations WHERE {_MEMBER_WHERE}"
        return self._run(self.d.sql(sql), (team_kind, team_id, identity_id)) > 0

    def invitations(
        self, *, identity_id: str | None = None, team: tuple[str, str] | None = None,
        team_kind: str | None = None, invited_by: str | None = None, limit: int | None = None,
        offset: int = 0,
    ) -> list[Invitation]:  # fmt: skip
        d = self.d
        sql = (
            "SELECT i.team_kind, i.team_id, i.identity_id, i.role, i.invited_by, i.created_at, "
            "t.name, i.named FROM invitations i "
            f"JOIN teams t ON t.kind = i.team_kind AND t.id = i.team_id WHERE {d.true}"
        )
        args: list[Any] = []
        if identity_id is not None:
            sql, args = sql + " AND i.identity_id = ?", [*args, identity_id]
        if team is not None:
            sql, args = sql + " AND i.team_kind = ? AND i.team_id = ?", [*args, *team]
        if team_kind is not None:
            sql, args = sql + " AND i.team_kind = ?", [*args, team_kind]
        if invited_by is not None:
            sql, args = sql + " AND i.invited_by = ?", [*args, invited_by]
        sql += " ORDER BY i.created_at, i.team_kind, i.team_id, i.identity_id"
        if limit is not None:
            sql, args = sql + " LIMIT ? OFFSET ?", [*args, limit, offset]
        return [
            Invitation(r[0], r[1], r[2], r[3], r[4], d.read_time(r[5]), r[6], r[7])  # type: ignore[arg-type]
            for r in self._rows(d.sql(sql), args)
        ]

    def save_grant(self, grant: Grant) -> None:
        values = (grant.id, grant.namespace, grant.grantee, self.d.value(grant.created_at))
        self._save("grants", _GRANT, "namespace, grantee", values)

    def delete_grant(self, namespace: str, grantee: str) -> bool:
        sql = "DELETE FROM grants WHERE namespace = ? AND grantee = ?"
        return self._run(self.d.sql(sql), (namespace, grantee)) > 0

    def grants(self, *, namespace: str | None = None, grantee: str | None = None) -> list[Grant]:
        d = self.d
        sql = f"SELECT {_GRANT} FROM grants WHERE {d.true}"
        args: list[Any] = []
        if namespace is not None:
            sql, args = sql + " AND namespace = ?", [*args, namespace]
        if grantee is not None:
            sql, args = sql + " AND grantee = ?", [*args, grantee]
        rows = self._rows(d.sql(sql + " ORDER BY created_at, id"), args)
        return [Grant(r[0], r[1], r[2], d.read_time(r[3])) for r in rows]  # type: ignore[arg-type]


def _membership(row: Sequence[Any]) -> Membership:
    return Membership(row[0], row[1], row[2], row[3], bool(row[4]))


_EVENT = "id, type, at, actor, namespace, memory_id, payload"
_TURN = "id, session_id, namespace, role, content, at, metadata"


class LogTables(Part):
    """Events (the change feed) and session turns: appended, read in order."""

    def add_events(self, events: Sequence[Event]) -> None:
        # Under the store's write lock, so events commit in the order of their
        # sequence numbers and a reader paging with ``since`` never skips one.
        d = self.d
        self._write_alone(
            d.sql(f"INSERT INTO events ({_EVENT}) VALUES (?, ?, ?, ?, ?, ?, ?)"),
            [(e.id, e.type, d.value(e.at), e.actor, e.namespace, e.memory_id,
              d.json(e.payload, "payload")) for e in events],
        )  # fmt: skip

    def events(
        self, *, namespaces: Sequence[str] | None, since: str | None = None,
        types: Sequence[str] | None = None, limit: int = 100,
    ) -> list[Event]:  # fmt: skip
        d = self.d
        sql = f"SELECT {_EVENT} FROM events WHERE {d.true}"
        args: list[Any] = []
        if since is not None:
            sql += " AND seq > COALESCE((SELECT seq FROM events WHERE id = ?), 0)"
            args.append(since)
        for column, values in (("namespace", namespaces), ("type", types or None)):
            if values is not None:
                cond, params = d.any_of(column, values)
                sql += f" AND {cond}"
                args.extend(params)
        rows = self._rows(d.sql(sql + " ORDER BY seq LIMIT ?"), (*args, limit))
        return [
            Event(i, t, d.read_time(at), actor, ns, mid, d.read_json(payload))  # type: ignore[arg-type]
            for i, t, at, actor, ns, mid, payload in rows
        ]

    def prune_events(self, before: datetime) -> int:
        return self._run(self.d.sql("DELETE FROM events WHERE at < ?"), (self.d.value(before),))

    def add_turn(self, turn: Turn) -> None:
        d = self.d
        self._write_alone(
            d.sql(f"INSERT INTO turns ({_TURN}) VALUES (?, ?, ?, ?, ?, ?, ?)"),
            [(turn.id, turn.session_id, turn.namespace, turn.role, turn.content,
              d.value(turn.at), d.json(turn.metadata))],
        )  # fmt: skip

    def turns(self, session_id: str, *, namespace: str | None, limit: int) -> list[Turn]:
        d = self.d
        sql = f"SELECT {_TURN} FROM turns WHERE session_id = ?"
        args: list[Any] = [session_id]
        if namespace is not None:
            sql += " AND namespace = ?"
            args.append(namespace)
        rows = self._rows(d.sql(sql + " ORDER BY seq DESC LIMIT ?"), (*args, limit))
        return [
            Turn(i, s, ns, role, content, d.read_time(at), d.read_json(meta))  # type: ignore[arg-type]
            for i, s, ns, role, content, at, meta in reversed(rows)
        ]

    def sessions(self, *, namespaces: Sequence[str] | None) -> list[tuple[str, int]]:
        d = self.d
        sql = "SELECT session_id, count(*) FROM turns"
        args: list[Any] = []
        if namespaces is not None:
            cond, args = d.any_of("namespace", namespaces)
            sql += f" WHERE {cond}"
        rows = self._rows(d.sql(sql + " GROUP BY session_id ORDER BY max(seq) DESC"), args)
        return [(sid, int(n)) for sid, n in rows]
