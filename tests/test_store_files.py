"""The store's files under faults (issue 20, items 14-16): damaged pages, a store path
under a file, a store whose schema is newer than the code, a foreign SQLite file
(refused byte for byte unchanged), leftovers of killed processes, and deleted
content lingering in the WAL."""

from __future__ import annotations

import hashlib
import io
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memchentic import (
    Memory,
    NotAStoreError,
    SchemaTooNewError,
    Settings,
    StoreCorruptError,
    StoreError,
)
from memchentic.backup import backup
from memchentic.store.migrations import change
from memchentic.store.migrations.postgres import MIGRATIONS as PG_MIGRATIONS
from memchentic.store.migrations.sqlite import MIGRATIONS as SQLITE_MIGRATIONS

from .conftest import Stores


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _beside(path: Path) -> list[str]:
    """The files next to ``path`` that SQLite makes for it."""
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + "-"))


def _words(rnd: random.Random, n: int) -> str:
    return " ".join("".join(rnd.choice("bcdfghjklmnp") for _ in range(6)) for _ in range(n))


# --- item 14: damaged pages and a path under a file ---------------------------------------
@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """A store of 300 memories whose ``memories`` table has a damaged root page."""
    path = tmp_path / "memory.db"
    rnd = random.Random(7)
    with Memory(path=path, embedder="hash") as mem:
        mem.add_many([_words(rnd, 30) for _ in range(300)])
    conn = sqlite3.connect(path)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    assert not _beside(path)  # everything is in the file itself
    with open(path, "r+b") as handle:
        handle.seek((root - 1) * size)
        handle.write(random.Random(1).randbytes(size))
    return path


def test_a_damaged_page_is_a_store_corrupt_error_naming_the_file(damaged: Path):
    mem = Memory(path=damaged, embedder="hash")
    try:
        calls: dict[str, Callable[[], Any]] = {
            "export": lambda: mem.export(io.StringIO()),
            "search": lambda: mem.search(_words(random.Random(7), 3)),
            "add": lambda: mem.add("a memory about the red kite over the hills"),
            "list": lambda: mem.list(),
            "stats": lambda: mem.stats(),
        }
        for name, call in calls.items():
            with pytest.raises(StoreCorruptError) as caught:
                call()
            assert str(damaged) in str(caught.value), name
            assert "damaged" in str(caught.value) and "backup" in str(caught.value), name
        report = mem.store.check()  # reported, not raised
        assert not report["ok"] and report["checks"]["database"] == "failed"
        assert any(str(damaged) in problem for problem in report["problems"])
    finally:
        mem.close()


def test_the_http_api_answers_a_damaged_store_with_503_not_500(damaged: Path):
    pytest.importorskip("fastapi")
    import httpx

    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    from .live_server import ServerThread

    mem = Memory(path=damaged, embedder="hash")
    key = KeyRing(mem.store).create(admin=True)[0]
    thread = ServerThread(create_app(mem, mcp=False, console=False))
    url = thread.start()
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
            for method, path, body in [
                ("GET", "/v1/memories", None),
                ("POST", "/v1/memories", {"content": "the red kite over the hills"}),
                ("GET", "/v1/stats", None),
            ]:
                response = client.request(method, path, json=body)
                assert response.status_code == 503, (path, response.text)
                assert response.json()["error"]["code"] == "store_corrupt"
    finally:
        thread.stop()
        mem.close()


def test_a_store_path_under_a_file_names_that_file(tmp_path: Path):
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    for path in (blocker / "memory.db", blocker / "deeper" / "memory.db"):
        with pytest.raises(StoreError) as caught:
            Memory(path=path, embedder="hash")
        assert f"{blocker} is a file, not a folder" in str(caught.value)
    assert blocker.read_text() == "not a folder"


# --- item 15: newer schema, foreign files -------------------------------------------------
def _foreign_file(path: Path, *statements: str) -> str:
    """A SQLite file of another app, made by ``statements``; its digest."""
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return _digest(path)


def test_a_foreign_sqlite_file_is_refused_and_left_unchanged(tmp_path: Path):
    path = tmp_path / "other.db"
    before = _foreign_file(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)",
                           "INSERT INTO invoices (total) VALUES (12.5)")  # fmt: skip
    for _ in range(2):
        with pytest.raises(NotAStoreError, match="not a memchentic store"):
            Memory(path=path, embedder="hash")
    assert _digest(path) == before  # still a rollback-journal file: not turned into WAL
    assert _beside(path) == []  # no -wal, no -shm


def test_a_memchentic_looking_file_of_another_app_is_left_unchanged(tmp_path: Path):
    path = tmp_path / "lookalike.db"
    before = _foreign_file(path, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                           "INSERT INTO meta VALUES ('app', 'someone-else')")  # fmt: skip
    with pytest.raises(NotAStoreError):
        Memory(path=path, embedder="hash")
    assert _digest(path) == before and _beside(path) == []


def _schema_version(stores: Stores, name: str) -> tuple[int, Callable[[str], Any]]:
    """(the schema version the code knows, a function running SQL on that store)."""
    location = stores.location(name)
    if stores.backend == "sqlite":

        def run_sqlite(sql: str) -> Any:
            conn = sqlite3.connect(location)
            try:
                rows = conn.execute(sql).fetchall()
                conn.commit()
                return rows
            finally:
                conn.close()

        return len(SQLITE_MIGRATIONS), run_sqlite
    import psycopg

    schema = location.rsplit("schema=", 1)[1]
    assert stores.postgres_url is not None

    def run_postgres(sql: str) -> Any:
        with psycopg.connect(stores.postgres_url, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else []

    return len(PG_MIGRATIONS), run_postgres


def test_a_store_with_a_newer_schema_is_refused_before_any_write(
    stores: Stores, make_mem: Callable[..., Memory]
):
    mem = make_mem("newer")
    mem.add("The heron fishes at the weir")
    mem.close()
    known, run = _schema_version(stores, "newer")
    run(
        f"INSERT INTO schema_migrations (version, name, applied_at) "
        f"VALUES ({known + 1}, 'm{known + 1:03d}_from_the_future', '2030-01-01T00:00:00+00:00')"
    )
    path = Path(stores.location("newer")) if stores.backend == "sqlite" else None
    before = _digest(path) if path else None
    rows_before = run("SELECT COUNT(*) FROM memories"), run("SELECT key, value FROM meta")
    with pytest.raises(SchemaTooNewError) as caught:
        Memory(store=stores.location("newer"), embedder="hash")
    assert f"schema version {known + 1}" in str(caught.value)
    assert f"knows ({known})" in str(caught.value) and "upgrade memchentic" in str(caught.value)
    assert (run("SELECT COUNT(*) FROM memories"), run("SELECT key, value FROM meta")) == (
        rows_before
    )
    versions = [r[0] for r in run("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == list(range(1, known + 2))
    if path is not None:
        assert _digest(path) == before and _beside(path) == []


#: The ``schema_migrations`` rows of a fully migrated store before issue 23 (item 3):
#: SQLite had no step 4, and numbered its later steps one lower than PostgreSQL.
OLD_ROWS = {
    "sqlite": [
        (1, "m001_initial"), (2, "m002_directory"), (3, "m003_events_and_turns"),
        (4, "m004_negated_rows"), (5, "m005_invitations"), (6, "m006_session_order"),
    ],
    "postgres": [
        (1, "m001_initial"), (2, "m002_directory"), (3, "m003_events_and_turns"),
        (4, "m004_keyword_index_without_pending_list"), (5, "m005_negated_rows"),
        (6, "m006_invitations"), (7, "m007_session_order"),
    ],
}  # fmt: skip


def test_both_backends_number_each_migration_alike():
    assert [f.__name__ for f in SQLITE_MIGRATIONS] == [f.__name__ for f in PG_MIGRATIONS]


@pytest.mark.parametrize("last", ["invitations", "session_order"])
def test_a_store_of_the_old_numbering_is_renumbered_and_runs_only_what_it_lacks(
    stores: Stores, make_mem: Callable[..., Memory], last: str
):
    """A store migrated under the numbering before issue 23 opens: its rows take the
    new numbers (keeping when they were applied), no step runs twice (re-creating
    the invitations table would fail), and the steps it lacks run once."""
    mem = make_mem("old")
    mem.add("The heron fishes at the weir", session_id="s")
    mem.close()
    known, run = _schema_version(stores, "old")
    old = OLD_ROWS[stores.backend]
    old = old[: next(i for i, (_, name) in enumerate(old, start=1) if name.endswith(last))]
    if last != "session_order":  # the store was written before the session index
        run("DROP INDEX ix_memories_session")
    if stores.backend == "postgres":  # and before the metadata index (step 8)
        run("DROP INDEX ix_memories_metadata")
    run("DROP INDEX ix_memories_working")  # and the working memory index (step 9)
    run("DROP INDEX ix_invitations_inviter")  # and the invitations' names (step 10)
    run("ALTER TABLE invitations DROP COLUMN named")
    run("DELETE FROM schema_migrations")
    for version, name in old:
        run(
            "INSERT INTO schema_migrations (version, name, applied_at) "
            f"VALUES ({version}, '{name}', '2024-01-01T00:00:00+00:00')"
        )
    again = make_mem("old")
    assert again.store.schema_version() == known
    assert [h.memory.content for h in again.search("heron")] == ["The heron fishes at the weir"]
    again.close()
    rows = run("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
    assert [(v, n) for v, n, _ in rows] == [
        (i, f.__name__) for i, f in enumerate(SQLITE_MIGRATIONS, start=1)
    ]
    kept = {n for _, n, at in rows if str(at).startswith("2024-01-01")}
    assert {change(n) for n in kept} == {change(n) for _, n in old}
    if stores.backend == "sqlite":
        index = run("SELECT name FROM sqlite_master WHERE name = 'ix_memories_session'")
    else:
        index = run("SELECT to_regclass('ix_memories_session')::text")
    assert index == [("ix_memories_session",)]


# --- item 16: leftovers and the WAL -------------------------------------------------------
def _dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _old(path: Path, text: str = "x") -> Path:
    """A file written 30 days ago (before this test process started)."""
    path.write_text(text)
    long_ago = time.time() - 30 * 86400
    os.utime(path, (long_ago, long_ago))
    return path


@pytest.fixture
def closed_store(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "memory.db"
    with Memory(path=path, embedder="hash") as mem:
        mem.add("The heron fishes at the weir")
    yield path


def test_leftovers_of_killed_processes_are_removed_at_open(closed_store: Path):
    folder, dead = closed_store.parent, _dead_pid()
    gone = [
        _old(folder / f".memory.db.{dead}.partial"),  # a killed backup or restore into it
        _old(folder / f"memory.db.vectors.{dead}.tmp"),  # a killed or disk-full index save
        _old(folder / f"memory.db.vectors.{os.getpid()}.tmp"),  # an earlier process, same id
    ]
    kept = [
        folder / f"memory.db.vectors.{os.getppid()}.tmp",  # its writer is alive
        _old(folder / f".other.db.{dead}.partial"),  # not this store's (a backup cleans it)
        _old(folder / f"notes.{dead}.tmp"),  # not ours at all
    ]
    kept[0].write_text("being written")
    with Memory(path=closed_store, embedder="hash") as mem:
        assert [r.content for r in mem.list()] == ["The heron fishes at the weir"]
    assert [p for p in gone if p.exists()] == []
    assert [p for p in kept if not p.exists()] == []


def test_a_backup_removes_partial_copies_of_killed_backups(
    make_mem: Callable[..., Memory], tmp_path: Path
):
    mem = make_mem()
    mem.add("The heron fishes at the weir")
    folder = tmp_path / "backups"
    folder.mkdir()
    dead = _dead_pid()
    stale = _old(folder / f".monday.db.{dead}.partial", "half a backup")
    live = folder / f".tuesday.db.{os.getppid()}.partial"
    live.write_text("a backup being written")
    result = backup(mem.store, folder / "wednesday.db", Settings(), logical=True)
    assert result.memories == 1
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in folder.iterdir()) == [live.name, "wednesday.db"]


@pytest.mark.parametrize("secure", [True, False], ids=["secure", "plain"])
def test_deleted_content_does_not_linger_in_the_file_or_the_wal(tmp_path: Path, secure: bool):
    path = tmp_path / "memory.db"
    secret = "The vault combination is QUOKKA-ZANZIBAR-7741, behind the painting"
    mem = Memory(path=path, embedder="hash", settings=Settings(secure_delete=secure))
    try:
        rnd = random.Random(3)
        mem.add_many([_words(rnd, 12) for _ in range(40)])
        doomed = [
            mem.add(secret, title="Vault note MARMALADE-ORCHID").id,
            mem.add("Second secret: the PELICAN-ANVIL-5520 key is under the mat").id,
        ]
        mem.search("vault combination")
        mem.delete(doomed[0])
        mem.forget(doomed[1])
        files = [path, path.with_name(path.name + "-wal")]
        found = {
            needle: [f.name for f in files if f.exists() and needle.encode() in f.read_bytes()]
            for needle in ("QUOKKA-ZANZIBAR-7741", "MARMALADE-ORCHID", "PELICAN-ANVIL-5520")
        }
        if secure:
            assert found == {needle: [] for needle in found}
        else:  # the pages as they were stay in the WAL until a checkpoint
            assert any(found.values())
        assert len(mem.list(limit=100)) == 40
    finally:
        mem.close()


def test_a_vector_index_save_that_fails_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import errno

    import numpy as np

    from memchentic.store.vectors import VectorIndex

    index = VectorIndex(8)
    index.upsert([1, 2], np.eye(2, 8, dtype=np.float32))

    def full_disk(self: VectorIndex, tmp: Path) -> str:
        tmp.write_bytes(b"half an index")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(VectorIndex, "_write_npz", full_disk)
    with pytest.raises(OSError, match="No space left"):
        index.save(tmp_path / "memory.db.vectors", "epoch")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == []


def _killed_copy(path: Path) -> None:
    """What a backup killed while copying leaves: the partial copy and SQLite's hot
    rollback journal beside it (a process that dies inside a write transaction)."""
    script = (
        "import os, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('CREATE TABLE t(x)')\n"
        "conn.execute('INSERT INTO t VALUES (1)')\n"
        "conn.execute('BEGIN IMMEDIATE')\n"
        "conn.execute('INSERT INTO t SELECT randomblob(4096) FROM t')\n"
        "conn.execute('UPDATE t SET x = randomblob(8192)')\n"
        "os._exit(9)  # killed mid-write: no commit, no close\n"
    )
    child = subprocess.run([sys.executable, "-c", script, str(path)], check=False)
    assert child.returncode == 9
    journal = path.with_name(f"{path.name}-journal")
    assert journal.exists(), "the killed writer left no journal: the test proves nothing"
    for file in (path, journal):
        long_ago = time.time() - 30 * 86400
        os.utime(file, (long_ago, long_ago))


def test_a_killed_backup_leaves_no_journal_after_the_next_backup_and_open(
    closed_store: Path,
) -> None:
    """Issue 32, item 8: the ``.partial`` copy of a killed backup was cleaned, its
    ``.partial-journal`` stayed beside the store for good."""
    folder = closed_store.parent
    # a killed backup into the folder of the next one, and a killed restore into the store
    into_folder = folder / f".monday.db.{_dead_pid()}.partial"
    into_store = folder / f".{closed_store.name}.{_dead_pid()}.partial"
    _killed_copy(into_folder)
    _killed_copy(into_store)
    with Memory(path=closed_store, embedder="hash") as mem:
        assert [r.content for r in mem.list()] == ["The heron fishes at the weir"]
        assert not into_store.exists()
        assert not into_store.with_name(f"{into_store.name}-journal").exists()
        backup(mem.store, folder / "tuesday.db", Settings())
    left = sorted(p.name for p in folder.iterdir() if ".partial" in p.name)
    assert left == []
