"""API keys and console sessions (step 12, ``m012_access_keys``), written once for
both backends in the shared SQL of :mod:`.tables`.

Rows hold hashes only: the SHA-256 of a key or of a session id, never the secret.
What the rows mean (who a key is for, when a session ends, how many a key keeps)
is :mod:`memchentic.access.keys`'; these are its reads and writes, a part of the
store composed from its host (:class:`~.tables.Part`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .migrations import KEY_COLUMNS, SESSION_COLUMNS
from .tables import Part


class KeyRow(NamedTuple):
    """One API key as stored: the SHA-256 of the key and what it stands for."""

    digest: str
    id: str
    name: str
    admin: bool
    created_at: str
    identity_id: str | None
    identity_kind: str | None
    identity_name: str | None


class SessionRow(NamedTuple):
    """One console session as stored: the SHA-256 of its id and of its key, and its
    times as :func:`memchentic.clock.to_text` writes them (text in time order)."""

    digest: str
    key_digest: str
    created_at: str
    expires_at: str


_KEY = ", ".join(("digest", *KEY_COLUMNS))
_SESSION = ", ".join(SESSION_COLUMNS)


def _key(row: Sequence[Any]) -> KeyRow:
    return KeyRow(row[0], row[1], row[2], bool(row[3]), row[4], row[5], row[6], row[7])


class AccessTables(Part):
    """The ``api_keys`` and ``console_sessions`` tables."""

    def save_api_key(self, key: KeyRow) -> None:
        """Insert a key (its digest is new: a random key's hash)."""
        d = self.d
        values = [*key]
        values[3] = d.value(key.admin)
        self._run(d.sql(f"INSERT INTO api_keys ({_KEY}) VALUES ({', '.join('?' * 8)})"), values)

    def api_keys(self) -> list[KeyRow]:
        """Every key, oldest first."""
        rows = self._rows(f"SELECT {_KEY} FROM api_keys ORDER BY created_at, id, digest")
        return [_key(r) for r in rows]

    def api_key(self, digest: str) -> KeyRow | None:
        """The key whose SHA-256 is ``digest``."""
        row = self._row(self.d.sql(f"SELECT {_KEY} FROM api_keys WHERE digest = ?"),
                        (digest,))  # fmt: skip
        return _key(row) if row else None

    def delete_api_keys(self, key_id: str) -> int:
        """Delete the keys whose id is ``key_id``; how many there were."""
        return self._run(self.d.sql("DELETE FROM api_keys WHERE id = ?"), (key_id,))

    def save_console_session(self, session: SessionRow) -> None:
        """Insert a session, or replace the one of its digest."""
        self._save("console_sessions", _SESSION, "digest", session, *SESSION_COLUMNS[1:])

    def console_sessions(self) -> list[SessionRow]:
        """Every session, oldest first."""
        rows = self._rows(f"SELECT {_SESSION} FROM console_sessions ORDER BY created_at, digest")
        return [SessionRow(*r) for r in rows]

    def console_session(self, digest: str) -> SessionRow | None:
        """The session whose id's SHA-256 is ``digest``."""
        sql = self.d.sql(f"SELECT {_SESSION} FROM console_sessions WHERE digest = ?")
        row = self._row(sql, (digest,))
        return SessionRow(*row) if row else None

    def delete_console_sessions(self, digests: Sequence[str]) -> int:
        """Delete the sessions of ``digests``; how many there were."""
        if not digests:
            return 0
        cond, params = self.d.any_of("digest", list(digests))
        return self._run(self.d.sql(f"DELETE FROM console_sessions WHERE {cond}"), params)
