"""Backup and restore (issue 9): online and consistent, verified by ``check`` and by
comparing exports; restore refuses a non-empty store unless forced, and a damaged
backup changes nothing."""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memchentic import Memory, Settings
from memchentic.backup import backup, restore
from memchentic.cli import app
from memchentic.errors import NotAStoreError, StoreError, ValidationError

from .conftest import Stores


def _populate(m: Memory) -> dict[str, str]:
    t0 = datetime(2025, 3, 1, 12, tzinfo=UTC)
    a = m.add("Bea runs the Thursday book club", user_id="bea", tags=["club"], title="Club",
              metadata={"source": "chat"}, created_at=t0)  # fmt: skip
    b = m.add("Bea moved the club to Fridays", user_id="bea", created_at=t0 + timedelta(days=9))
    g = m.add("Confirm the venue a week ahead", kind="guide", user_id="bea", permanent=True)
    m.add("Confirm the venue a week ahead", kind="guide", user_id="bea")
    m.add("Sam likes tea", user_id="sam")
    m.add("Sam does not like tea", user_id="sam")  # supersedes
    m.relate(b.id, a.id, "derives_from", 0.7)
    m.revise(a.id, "Bea runs the book club")
    m.as_identity("bea")
    return {"a": a.id, "b": b.id, "g": g.id}


def _export(m: Memory) -> list[dict[str, object]]:
    out = io.StringIO()
    m.export(out)
    return [x for x in map(json.loads, out.getvalue().splitlines()) if x["kind"] != "header"]


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Memory]:
    with Memory(path=tmp_path / "source.db", embedder="hash") as m:
        _populate(m)
        yield m


def test_sqlite_backup_is_complete_and_restores_exactly(source: Memory, tmp_path: Path) -> None:
    settings = Settings()
    result = backup(source.store, tmp_path / "b" / "copy.db", settings)
    assert result.method == "sqlite" and result.check is not None and result.check["ok"]
    assert result.memories == source.store.count(_all())
    restored = restore(tmp_path / "b" / "copy.db", str(tmp_path / "new.db"), settings)
    assert restored.check["ok"] and restored.replaced == 0
    with Memory(path=tmp_path / "new.db", embedder="hash") as m:
        assert _export(m) == _export(source)
        # "Bea moved the club to Fridays" superseded "Bea runs the book club"
        assert [h.memory.content for h in m.search("book club", user_id="bea")][0] == (
            "Bea moved the club to Fridays"
        )
        assert m.store.find_identity("bea", "user") is not None  # the directory too


def test_logical_backup_restores_exactly(source: Memory, tmp_path: Path) -> None:
    settings = Settings()
    result = backup(source.store, tmp_path / "copy.jsonl", settings, logical=True)
    assert result.method == "logical" and result.memories == source.store.count(_all())
    restored = restore(tmp_path / "copy.jsonl", str(tmp_path / "new.db"), settings)
    assert restored.check["ok"] and restored.method == "logical"
    with Memory(path=tmp_path / "new.db", embedder="hash") as m:
        assert _export(m) == _export(source)


def test_backup_while_writers_write_is_consistent(tmp_path: Path) -> None:
    """An online backup taken in the middle of writes is one committed state."""
    settings = Settings()
    stop = threading.Event()
    with Memory(path=tmp_path / "busy.db", embedder="hash") as m:
        m.add_many([f"seed fact {i} about rivers" for i in range(20)])

        def write() -> None:
            i = 0
            while not stop.is_set():
                i += 1
                m.add_many([f"busy fact {i} number {j} on lakes" for j in range(3)])

        writer = threading.Thread(target=write)
        writer.start()
        try:
            copies = [backup(m.store, tmp_path / f"copy{n}.db", settings) for n in range(3)]
            logical = backup(m.store, tmp_path / "copy.jsonl", settings, logical=True)
        finally:
            stop.set()
            writer.join()
    for copy in copies:
        assert copy.check is not None and copy.check["ok"], copy.check
        assert copy.check["counts"]["memories"] % 3 == 20 % 3  # whole batches only
    restored = restore(tmp_path / "copy.jsonl", str(tmp_path / "from-logical.db"), settings)
    assert restored.check["ok"] and restored.memories == logical.memories


def test_restore_refuses_a_store_with_memories_unless_forced(source: Memory, tmp_path: Path):  # type: ignore[no-untyped-def]
    settings = Settings()
    backup(source.store, tmp_path / "copy.db", settings)
    with Memory(path=tmp_path / "other.db", embedder="hash") as other:
        other.add("Other store's only memory")
    for src in (tmp_path / "copy.db",):
        with pytest.raises(ValidationError, match="--force"):
            restore(src, str(tmp_path / "other.db"), settings)
        with Memory(path=tmp_path / "other.db", embedder="hash") as other:
            assert [r.content for r in other.list()] == ["Other store's only memory"]
    forced = restore(tmp_path / "copy.db", str(tmp_path / "other.db"), settings, force=True)
    assert forced.replaced == 1 and forced.check["ok"]
    with Memory(path=tmp_path / "other.db", embedder="hash") as other:
        assert _export(other) == _export(source)


def test_restoring_an_old_backup_over_its_own_store_drops_the_stale_vector_index(
    tmp_path: Path,
) -> None:
    """The store's saved vector index is newer than the backup: it must not be used."""
    path = tmp_path / "memory.db"
    settings = Settings()
    with Memory(path=path, embedder="hash") as m:
        kept = m.add("lighthouse keeper logs the storms").id
        backup(m.store, tmp_path / "old.db", settings)
        later = m.add_many([f"harbour note {i} after the backup" for i in range(30)])
        m.search("harbour note")  # the index now holds the later vectors; saved on close
    watcher = Memory(path=path, embedder="hash")  # another user of the store, still open
    try:
        before = {h.id for h in watcher.search("harbour note after the backup", limit=50)}
        assert {r.id for r in later} <= before
        restore(tmp_path / "old.db", str(path), settings, force=True)
        hits = watcher.search("harbour note after the backup", limit=50)
        assert {h.id for h in hits} == {kept}  # the open handle sees the restored store
        assert watcher.store.check()["ok"]
    finally:
        watcher.close()
    with Memory(path=path, embedder="hash") as m:
        assert {h.id for h in m.search("harbour note after the backup", limit=50)} == {kept}
        assert m.store.check()["ok"]
        assert all(m.store.get(r.id) is None for r in later)


def test_a_damaged_backup_changes_nothing(source: Memory, tmp_path: Path) -> None:
    settings = Settings()
    backup(source.store, tmp_path / "copy.jsonl", settings, logical=True)
    lines = (tmp_path / "copy.jsonl").read_text().splitlines()
    lines[3] = lines[3][:40]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "junk.db").write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    (tmp_path / "text.txt").write_text("not a backup\n")
    with Memory(path=tmp_path / "target.db", embedder="hash") as target:
        target.add("Target keeps this")
    for bad, error in (("bad.jsonl", ValidationError), ("junk.db", StoreError),
                       ("text.txt", ValidationError)):  # fmt: skip
        with pytest.raises(error):
            restore(tmp_path / bad, str(tmp_path / "target.db"), settings, force=True)
        with Memory(path=tmp_path / "target.db", embedder="hash") as target:
            assert [r.content for r in target.list()] == ["Target keeps this"], bad
            assert target.store.check()["ok"]
    with pytest.raises(ValidationError, match="line 4"):
        restore(tmp_path / "bad.jsonl", str(tmp_path / "fresh.db"), settings)


def test_backup_never_overwrites_and_restore_refuses_a_foreign_file(
    source: Memory, tmp_path: Path
) -> None:
    settings = Settings()
    (tmp_path / "taken.db").write_text("precious")
    with pytest.raises(ValidationError, match="exists"):
        backup(source.store, tmp_path / "taken.db", settings)
    assert (tmp_path / "taken.db").read_text() == "precious"
    backup(source.store, tmp_path / "copy.db", settings)
    (tmp_path / "foreign.db").write_text("not sqlite at all")
    with pytest.raises(NotAStoreError):
        restore(tmp_path / "copy.db", str(tmp_path / "foreign.db"), settings, force=True)
    assert (tmp_path / "foreign.db").read_text() == "not sqlite at all"


def test_cli_check_backup_restore(source: Memory, tmp_path: Path) -> None:
    runner = CliRunner()
    store = source.store.location
    result = runner.invoke(app, ["check", "--store", store])
    assert result.exit_code == 0 and "clean" in result.output
    result = runner.invoke(app, ["check", "--store", store, "--json"])
    assert json.loads(result.output)["ok"] is True
    result = runner.invoke(app, ["backup", str(tmp_path / "c.db"), "--store", store])
    assert result.exit_code == 0 and "verified: clean" in result.output
    logical = ["backup", str(tmp_path / "c.jsonl"), "--logical", "--store", store]
    result = runner.invoke(app, logical)
    assert result.exit_code == 0, result.output
    target = str(tmp_path / "t.db")
    assert runner.invoke(app, ["restore", str(tmp_path / "c.db"), "--store", target]).exit_code == 0
    refused = runner.invoke(app, ["restore", str(tmp_path / "c.jsonl"), "--store", target])
    assert refused.exit_code == 2 and "--force" in refused.output
    forced = runner.invoke(app, ["restore", str(tmp_path / "c.jsonl"), "--store", target,
                                 "--force", "--json"])  # fmt: skip
    assert forced.exit_code == 0 and json.loads(forced.output)["check"]["ok"]
    as_someone = runner.invoke(app, ["--as", "bea", "check", "--store", store])
    assert as_someone.exit_code == 2
    same = runner.invoke(app, ["check", "--store", store, "--embedder", "hash"])
    assert same.exit_code == 0
    other = runner.invoke(app, ["check", "--store", store, "--embedder", "hash"],
                          env={"HASH_EMBEDDING_DIMENSION": "64"})  # fmt: skip
    assert other.exit_code == 1 and "not hash-v1:64" in other.output


def test_an_empty_store_backs_up_and_restores(tmp_path: Path) -> None:
    settings = Settings()
    with Memory(path=tmp_path / "empty.db", embedder="hash") as m:
        backup(m.store, tmp_path / "empty.jsonl", settings, logical=True)
        backup(m.store, tmp_path / "copy.db", settings)
    for name in ("empty.jsonl", "copy.db"):
        result = restore(tmp_path / name, str(tmp_path / f"from-{name}.db"), settings)
        assert result.memories == 0 and result.check["ok"]
        with Memory(path=tmp_path / f"from-{name}.db", embedder="hash") as m:
            assert m.add("the first memory after the restore").status == "added"


def test_check_finds_damage(source: Memory) -> None:
    assert source.store.check()["ok"]
    conn = source.store.conn
    with source.store.write():
        first = conn.execute("SELECT MIN(rowid) FROM memories").fetchone()[0]
        conn.execute("DELETE FROM vectors WHERE rowid = ?", (first,))
        conn.execute("DELETE FROM vector_log WHERE seq = (SELECT MAX(seq) FROM vector_log)")
        conn.execute("DELETE FROM memories_fts_docsize WHERE id = ?", (first,))
        conn.execute(
            "INSERT INTO edges(id, source, target, kind, strength, created_at) "
            "VALUES ('e-x', 'nope', 'gone', 'related_to', 1, '2025-01-01')"
        )
        conn.execute(
            "INSERT INTO versions(memory_id, version, op, actor, at, changes) "
            "VALUES ('ghost', 1, 'add', 'x', '2025-01-01', '{}')"
        )
        conn.execute("INSERT INTO memory_entities(entity, key) VALUES ('ghost', 99999)")
        conn.execute("UPDATE memories SET tags = 'not json', superseded_by = 'ghost' "
                     "WHERE rowid = (SELECT MAX(rowid) FROM memories)")  # fmt: skip
    report = source.store.check()
    assert not report["ok"]
    failed = {k for k, v in report["checks"].items() if v == "failed"}
    assert failed == {
        "rows",
        "vectors",
        "keyword_index",
        "vector_log",
        "vector_index",
        "edges",
        "supersession",
        "versions",
        "entities",
    }, report["problems"]
    assert all(":" in p for p in report["problems"])


def _all() -> object:
    from memchentic.store.base import MemoryFilter

    return MemoryFilter(namespaces=None, include_expired=True, include_superseded=True)


# --- PostgreSQL (when a server is available) ------------------------------------------
@pytest.fixture
def pg_urls(postgres_stores: Stores) -> tuple[str, str]:
    return postgres_stores.location("first"), postgres_stores.location("second")


def test_postgres_logical_backup_and_restore(
    pg_urls: tuple[str, str], source: Memory, tmp_path: Path
) -> None:
    settings = Settings()
    first, second = pg_urls
    sqlite_copy = tmp_path / "copy.db"
    backup(source.store, sqlite_copy, settings)
    into_pg = restore(sqlite_copy, first, settings)  # a SQLite backup into PostgreSQL
    assert into_pg.method == "logical" and into_pg.check["ok"], into_pg.check
    with Memory(store=first, embedder="hash") as pg:
        assert _export(pg) == _export(source)
        result = backup(pg.store, tmp_path / "pg.jsonl", settings)  # PostgreSQL: logical
        assert result.method == "logical"
    again = restore(tmp_path / "pg.jsonl", second, settings)
    assert again.check["ok"]
    with Memory(store=second, embedder="hash") as pg:
        assert _export(pg) == _export(source)
    with pytest.raises(ValidationError, match="--force"):
        restore(tmp_path / "pg.jsonl", second, settings)
