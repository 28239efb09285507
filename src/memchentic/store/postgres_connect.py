"""Opening a PostgreSQL store: the URL, the pgvector extension, the schema, the
migrations, and the connection pool with its write transactions.

A store lives in one schema of one database: ``postgresql://host/db`` uses the
connection's current schema (usually ``public``), ``postgresql://host/db?schema=team_a``
its own schema (created when missing), so one database can hold several stores.

Concurrency: :meth:`PgConnections.write` opens a transaction on a pooled
connection, held by the calling thread until it ends, and takes a transaction
advisory lock on the store first, so check-then-write sequences of every
thread and process are serialised (as ``BEGIN IMMEDIATE`` does for SQLite);
nested ``write()`` calls of that thread join the open transaction. Reads outside
a write take any pooled connection (autocommit: each statement sees the latest
committed state).

Time budget: every pooled connection starts with ``statement_timeout`` set to
``STATEMENT_TIMEOUT_SECONDS`` (the migrations run on a connection of their own,
without it); a statement past it is cancelled by the server and raises
:class:`~memchentic.errors.StoreTimeoutError`. Waiting for the store's write lock
counts. Inside :meth:`PgConnections.unbudgeted` (maintenance: checks, index builds)
this thread's statements run without a budget.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.adapt import AdaptersMap, Dumper, Loader
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool

from ..errors import NotAStoreError, StoreError, StoreTimeoutError, ValidationError
from .conninfo import libpq_pairs
from .migrations.postgres import TS_CONFIG, migrate

APP_ID = "memchentic"
#: Connections one process keeps at most (``?pool_max=N`` in the URL overrides).
POOL_MAX = 10
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: ``hnsw.ef_search`` of every connection (larger searches raise it for one query).
#: A graph built insert by insert varies: recall@10 of an exact scan at 100k
#: clustered vectors was 0.973-0.988 at 200 over four builds; on one of them
#: (0.9865 at 200) 0.9915 at 300, for 4% more time a whole search (bench/README.md).
EF_SEARCH_DEFAULT = 300
#: Serialises ``CREATE EXTENSION vector`` of stores in different schemas.
_EXTENSION_LOCK = "memchentic:extension"


def lock_key(*parts: str) -> int:
    """A stable signed 64-bit advisory lock key for ``parts``."""
    digest = hashlib.blake2b(":".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# --- vectors as numpy arrays (pgvector's binary format: dim, unused, float32 BE) ---
class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        arr = np.asarray(obj, dtype=">f4").reshape(-1)
        return struct.pack(">HH", arr.size, 0) + arr.tobytes()


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Any) -> np.ndarray:
        return np.frombuffer(bytes(data)[4:], dtype=">f4").astype(np.float32)


class _VectorTextLoader(Loader):
    format = Format.TEXT

    def load(self, data: Any) -> np.ndarray:
        text = bytes(data).decode()[1:-1]
        return np.array(text.split(",") if text else [], dtype=np.float32)


_json_decode = json.JSONDecoder().decode


class _JsonbLoader(Loader):
    """``jsonb`` as Python values, empty lists and objects without the parser: most
    rows hold no tags, entities or metadata (a search loads about 35 records, three
    of these columns each)."""

    format = Format.TEXT

    def load(self, data: Any) -> Any:
        if len(data) == 2:
            raw = bytes(data)
            if raw == b"[]":
                return []
            if raw == b"{}":
                return {}
        return _json_decode(bytes(data).decode())


@dataclass(frozen=True, slots=True)
class PgLocation:
    """Where a store lives, learnt while opening it."""

    #: The URL as shown to people (password masked).
    display: str
    #: What the pool connects with (search path and time zone set).
    conninfo: str
    schema: str
    pool_max: int
    vector_oid: int
    #: pgvector 0.8+: filtered HNSW scans continue until enough rows pass.
    iterative_scan: bool
    #: Seconds each statement of a pooled connection may run (0: no budget).
    statement_timeout: float = 0.0

    @property
    def ts_config(self) -> str:
        return f'"{self.schema}".{TS_CONFIG}'


def _quoted(name: str) -> str:
    return name if _SCHEMA_NAME.fullmatch(name) else '"' + name.replace('"', '""') + '"'


def _split_keywords(conninfo: str) -> tuple[str, str | None, int, str]:
    """:func:`_split_url` of a libpq keyword/value string ("host=db dbname=mem")."""
    pairs = libpq_pairs(conninfo) or {}
    schema, pool_max = pairs.pop("schema", None), pairs.pop("pool_max", None)
    if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
        raise ValidationError(
            "store", "schema must be a lower-case SQL name (letters, digits, '_')"
        )
    if pool_max is not None and (not pool_max.isdigit() or int(pool_max) < 1):
        raise ValidationError("store", "pool_max must be a positive integer")
    libpq = make_conninfo(**pairs)
    try:
        conninfo_to_dict(libpq)
    except psycopg.ProgrammingError:  # its message may quote the string: no password shown
        raise ValidationError("store", "is not a valid libpq connection string") from None
    shown = {k: "***" if k in ("password", "sslpassword") else v for k, v in pairs.items()}
    return (libpq, schema, POOL_MAX if pool_max is None else int(pool_max),
            make_conninfo(**shown))  # fmt: skip


def _split_url(url: str) -> tuple[str, str | None, int, str]:
    """(libpq URL, schema, pool size, display URL) from a store URL, or from a libpq
    keyword/value string (``host=db dbname=mem user=me``)."""
    if "://" not in url:
        return _split_keywords(url)
    parts = urlsplit(url)
    query: list[tuple[str, str]] = []
    schema: str | None = None
    pool_max = POOL_MAX
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "schema":
            if not _SCHEMA_NAME.fullmatch(value):
                raise ValidationError(
                    "store", "schema must be a lower-case SQL name (letters, digits, '_')"
                )
            schema = value
        elif key == "pool_max":
            if not value.isdigit() or int(value) < 1:
                raise ValidationError("store", "pool_max must be a positive integer")
            pool_max = int(value)
        else:
            query.append((key, value))
    # %20, not +, for a space: libpq decodes %XX only
    libpq = urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))
    return libpq, schema, pool_max, _display(url)


def _display(url: str) -> str:
    """``url`` as logs, banners and errors show it: its password masked, in the
    user part or as a ``password=`` parameter (libpq takes either)."""
    parts = urlsplit(url)
    netloc, query = parts.netloc, parts.query
    if parts.password:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(k.lower() == "password" for k, _ in pairs):
        shown = [(k, "***" if k.lower() == "password" else v) for k, v in pairs]
        query = urlencode(shown, safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _ensure_extension(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    """pgvector's schema and version, creating the extension when missing."""
    sql = (
        "SELECT n.nspname, e.extversion FROM pg_extension e "
        "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    )
    row = conn.execute(sql).fetchone()
    if row is None:
        key = lock_key(_EXTENSION_LOCK)
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except pg_errors.InsufficientPrivilege as exc:
            raise StoreError(
                "the pgvector extension is not installed in this database: run "
                "`CREATE EXTENSION vector` as a superuser, then open the store again"
            ) from exc
        except (pg_errors.FeatureNotSupported, pg_errors.UndefinedFile) as exc:
            raise StoreError(f"the server has no pgvector extension ({exc})") from exc
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        row = conn.execute(sql).fetchone()
        assert row is not None
    return str(row[0]), str(row[1])


def _check_is_store(conn: psycopg.Connection[Any], schema: str, display: str) -> None:
    tables = {
        r[0]
        for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
    }
    if tables and "meta" not in tables:
        raise NotAStoreError(
            f"{display} is not a memchentic store (schema {schema} holds other tables; "
            "choose another with ?schema=NAME)"
        )
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'app'").fetchone()
        if row is not None and row[0] != APP_ID:
            raise NotAStoreError(f"{display} is not a memchentic store")


def budget_ms(seconds: float) -> int:
    """``statement_timeout`` in milliseconds for a budget in seconds (0: none; a
    positive budget is at least 1 ms: 0 would mean none)."""
    return 0 if seconds <= 0 else max(1, math.ceil(seconds * 1000))


def open_location(url: str, statement_timeout: float = 0.0) -> PgLocation:
    """Connect once: ensure pgvector, the schema and the migrations; learn the rest.
    ``statement_timeout``: the budget (seconds) of each statement on the pool."""
    libpq, schema, pool_max, display = _split_url(url)
    try:
        conn = psycopg.connect(libpq, autocommit=True, connect_timeout=30)
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to {display}: {str(exc).strip()}") from exc
    with conn:
        ext_schema, ext_version = _ensure_extension(conn)
        if schema is None:
            row = conn.execute("SELECT current_schema()").fetchone()
            if row is None or row[0] is None:
                raise StoreError(f"{display}: no schema to use; add ?schema=NAME to the URL")
            schema = str(row[0])
        else:
            key = lock_key(APP_ID, schema, "migrate")
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            try:
                create = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}")
                conn.execute(create.format(sql.Identifier(schema)))
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        path = sql.SQL(", ").join(sql.Identifier(n) for n in dict.fromkeys([schema, ext_schema]))
        conn.execute(sql.SQL("SET search_path TO {}").format(path))
        # Under the migration lock: a process migrating a new store at this moment
        # has created schema_migrations but not yet meta, which would look like a
        # schema of other tables (advisory locks nest within one session).
        key = lock_key(APP_ID, schema, "migrate")
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            _check_is_store(conn, schema, display)
            migrate(conn, key, display)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('app', %s) ON CONFLICT (key) DO NOTHING",
                (APP_ID,),
            )
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        info = TypeInfo.fetch(conn, "vector")
        assert info is not None
    major, minor = (int(x) for x in ext_version.split(".")[:2])
    iterative = (major, minor) >= (0, 8)
    # Session settings of every pooled connection: the store's schema first, UTC
    # timestamps, and the HNSW search effort (an iterative scan on pgvector 0.8+, so
    # filtered searches keep walking the graph until enough rows pass).
    settings = [
        "search_path=" + ",".join(_quoted(n) for n in dict.fromkeys([schema, ext_schema])),
        "TimeZone=UTC",
        f"hnsw.ef_search={EF_SEARCH_DEFAULT}",
    ]
    if iterative:
        settings.append("hnsw.iterative_scan=relaxed_order")
    if statement_timeout > 0:
        settings.append(f"statement_timeout={budget_ms(statement_timeout)}")
    options = str(conninfo_to_dict(libpq).get("options") or "")
    conninfo = make_conninfo(
        libpq,
        options=" ".join([options, *(f"-c {s}" for s in settings)]).strip(),
        application_name="memchentic",
    )
    return PgLocation(
        display, conninfo, schema, pool_max, info.oid, iterative, float(statement_timeout)
    )


@contextmanager
def refused_values(budget: float = 0.0) -> Iterator[None]:
    """The last line of defence for values PostgreSQL cannot take (text with a NUL,
    a number out of range): a :class:`ValidationError`, never ``psycopg.DataError``.
    The input checks (``validation``) refuse such values first, on every backend.
    A statement cancelled by ``statement_timeout`` (``budget`` seconds) is a
    :class:`StoreTimeoutError`."""
    try:
        yield
    except psycopg.DataError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValidationError("value", f"the store cannot hold this value ({reason})") from exc
    except pg_errors.QueryCanceled as exc:
        if budget <= 0:
            raise
        raise StoreTimeoutError(budget) from exc


class PgConnections:
    """The pool, this thread's write transaction, and small query helpers."""

    _pg: PgLocation
    _pool: ConnectionPool
    _local: threading.local
    _closed: bool
    _write_key: int

    def _connect(self, location: PgLocation) -> None:
        self._pg = location
        #: Seconds each statement may run (0: no budget).
        self.statement_timeout = location.statement_timeout
        self._local = threading.local()
        self._closed = False
        self._write_key = lock_key(APP_ID, location.schema, "write")
        adapters = AdaptersMap(psycopg.adapters)
        adapters.register_dumper(np.ndarray, type("VectorDumper", (_VectorDumper,),
                                                  {"oid": location.vector_oid}))  # fmt: skip
        adapters.register_loader(location.vector_oid, _VectorLoader)
        adapters.register_loader(location.vector_oid, _VectorTextLoader)
        adapters.register_loader("jsonb", _JsonbLoader)
        self._pool = ConnectionPool(
            location.conninfo,
            min_size=1,
            max_size=location.pool_max,
            kwargs={"autocommit": True, "context": adapters},
            num_workers=1,
            name=f"memchentic:{location.schema}",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=30.0)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(f"cannot connect to {location.display}: {exc}") from exc

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.close(timeout=5.0)

    @contextmanager
    def unbudgeted(self) -> Iterator[None]:
        """This thread's statements in the block run without a time budget
        (maintenance: checks, index builds)."""
        self._local.exempt = getattr(self._local, "exempt", 0) + 1
        try:
            yield
        finally:
            self._local.exempt -= 1

    def _exempt(self) -> bool:
        return self.statement_timeout > 0 and getattr(self._local, "exempt", 0) > 0

    def _lift_in_transaction(self, conn: psycopg.Connection[Any]) -> None:
        """No budget for the rest of this thread's open transaction."""
        if not getattr(self._local, "tx_unbudgeted", False):
            conn.execute("SET LOCAL statement_timeout = 0")
            self._local.tx_unbudgeted = True

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """This thread's write transaction's connection, else a pooled one."""
        tx = getattr(self._local, "tx", None)
        budget = self.statement_timeout
        if tx is not None:
            with refused_values(budget):
                if self._exempt():
                    self._lift_in_transaction(tx)
                yield tx
            return
        if self._closed:
            raise StoreError("the store is closed")
        with self._pool.connection() as conn, refused_values(budget):
            if not self._exempt():
                yield conn
                return
            conn.execute("SET statement_timeout = 0")
            try:
                yield conn
            finally:
                try:  # back to the session's budget before the pool lends it again
                    conn.execute("RESET statement_timeout")
                except psycopg.Error:
                    conn.close()  # the pool drops a closed connection

    def concurrent_reads(self) -> bool:
        """Yes outside this thread's transaction or snapshot (inside one, another
        connection would not see its writes or its state)."""
        return getattr(self._local, "tx", None) is None and not self._closed

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any] | None]:
        """A transaction of this thread on a pooled connection, which it yields; None
        inside one this thread holds already (the block joins that one)."""
        if getattr(self._local, "tx", None) is not None:
            yield None
            return
        if self._closed:
            raise StoreError("the store is closed")
        with self._pool.connection() as conn:
            self._local.tx = conn
            self._local.tx_unbudgeted = False
            try:
                with conn.transaction():
                    if self._exempt():
                        with refused_values(self.statement_timeout):
                            self._lift_in_transaction(conn)
                    yield conn
            finally:
                self._local.tx = None
                self._local.tx_unbudgeted = False

    @contextmanager
    def write(self) -> Iterator[None]:
        """A write transaction that excludes every other writer of this store."""
        with self._transaction() as conn:
            if conn is None:  # nested: join the open one
                yield
                return
            with refused_values(self.statement_timeout):  # waiting for the lock counts
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._write_key,))
            self._local.rows_changed = False
            yield
            if self._local.rows_changed:  # fold in their keyword statistics
                with refused_values(self.statement_timeout):
                    conn.execute("SELECT memchentic_flush_terms()")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads of this thread inside the block see one committed state (a
        ``REPEATABLE READ, READ ONLY`` transaction); writers are not held up."""
        with self._transaction() as conn:
            if conn is not None:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    def _rows_changed(self) -> None:
        """Note, inside a write, that memory rows (so keyword statistics) changed."""
        self._local.rows_changed = True

    def _rows(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        binary: bool = False,
        prepare: bool | None = None,
    ) -> list[Any]:
        """All rows of ``sql``. ``prepare=False``: planned afresh for these
        parameters each time, never with a prepared statement's generic plan
        (psycopg prepares a statement from its fifth run)."""
        with self.connection() as conn:
            return conn.execute(sql, params, binary=binary, prepare=prepare).fetchall()

    def _row(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self.connection() as conn:
            return conn.execute(sql, params).fetchone()

    def _write_alone(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` once per parameter row, as a write: inside this thread's open
        write transaction, else in a locked transaction of its own sent in one round
        trip (pipeline mode: begin, lock, statements and commit travel together).
        For small writes whose result nobody reads (events, turns, recall counts)."""
        tx = getattr(self._local, "tx", None)
        if tx is not None:
            with refused_values(self.statement_timeout), tx.cursor() as cur:
                cur.executemany(sql, rows)
            return
        if self._closed:
            raise StoreError("the store is closed")
        with (
            refused_values(self.statement_timeout),
            self._pool.connection() as conn,
            conn.pipeline(),
            conn.transaction(),
        ):
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._write_key,))
            with conn.cursor() as cur:
                cur.executemany(sql, rows)

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute a statement inside a write; the number of rows it changed."""
        with self.write(), self.connection() as conn:
            return conn.execute(sql, params).rowcount
