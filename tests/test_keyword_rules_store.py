"""A store records the keyword rules its index is written with (issue 33, item 4):
a new store takes the default ones (``identifiers``), a store written before rules
existed adopts them through migration 13, which rebuilds its index, so deleting
or revising a camelCase memory leaves the index sound (SQLite's triggers delete a
memory's entries by analysing its text again); a copy carries its source's rules.
On both backends."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memchentic import Memory, Settings, text
from memchentic.clock import utcnow
from memchentic.store import open_store
from memchentic.store.keywords import RULES_KEY, bind_rules
from memchentic.store.migrations import STEPS
from memchentic.store_copy import migrate

from .conftest import Stores

LOADER = "The portal reads names through UserProfileLoader.load"
OTHERS = ["The profile page shows the avatar", "Loading screens are slow"]


def _keyword(mem: Memory, query: str) -> list[str]:
    flt = mem._read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
    return [hit for hit, _ in mem.store.keyword_search(query, 10, flt)]


def _run(stores: Stores, name: str, script: str) -> None:
    """Run ``script`` on the store ``name`` through a connection of its own."""
    location = stores.location(name)
    if stores.backend == "sqlite":
        conn = sqlite3.connect(location)
        try:
            conn.executescript(script)
        finally:
            conn.close()
        return
    import psycopg

    assert stores.postgres_url is not None
    with psycopg.connect(stores.postgres_url, autocommit=True) as pg:
        pg.execute(f'SET search_path TO "{location.rsplit("schema=", 1)[1]}"')
        pg.execute(script)


def _fts_ok(mem: Memory) -> None:
    """SQLite: FTS5's own check of the keyword index against what the function gives
    (raises ``sqlite3.DatabaseError`` when they differ); PostgreSQL stores entries."""
    conn: Any = getattr(mem.store, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")


def test_a_new_store_records_the_default_rules_and_splits_identifiers(
    make_mem: Callable[..., Memory],
):
    mem = make_mem()
    assert frozenset({"identifiers"}) == text.ACTIVE_KEYWORD_RULES
    assert mem.store.get_meta(RULES_KEY) == "identifiers"
    assert mem.store.keyword_rules == frozenset({"identifiers"})  # type: ignore[attr-defined]
    loader = mem.add(LOADER).memory
    mem.add_many(OTHERS)
    assert loader is not None
    assert _keyword(mem, "user profile loader")[:1] == [loader.id]
    assert _keyword(mem, "UserProfileLoader")[:1] == [loader.id]
    mem.revise(loader.id, content="The portal reads names through AccountLoader.load")
    mem.delete(loader.id)
    _fts_ok(mem)
    report = mem.store.check()
    assert report["ok"], report


def test_a_store_written_before_rules_is_migrated_and_stays_sound(
    stores: Stores, make_mem: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
):
    """The old code's store: no rules recorded, an index written without them,
    migration 13 not applied. Opened now, it adopts the default rules and its index
    is rebuilt with them: the camelCase memory is found by its words, and revising
    and deleting camelCase memories (their entries deleted by analysing the text
    again, with the new rules) leave FTS5's integrity-check and the store's check ok."""
    monkeypatch.setattr(text, "ACTIVE_KEYWORD_RULES", frozenset())
    old = make_mem("old")
    loader = old.add(LOADER).memory
    saver = old.add("Sessions are written by SessionStateWriter.flush").memory
    old.add_many(OTHERS)
    assert loader is not None and saver is not None
    assert old.store.get_meta(RULES_KEY) == ""
    assert _keyword(old, "user profile loader") != [loader.id]  # one token in the old index
    old.close()
    _run(stores, "old", f"DELETE FROM meta WHERE key = '{RULES_KEY}'; "
                        "DELETE FROM schema_migrations WHERE version = 13;")  # fmt: skip
    monkeypatch.undo()
    again = make_mem("old")
    assert again.store.schema_version() == len(STEPS)
    assert again.store.get_meta(RULES_KEY) == "identifiers"
    assert _keyword(again, "user profile loader")[:1] == [loader.id]
    assert _keyword(again, "session state writer")[:1] == [saver.id]
    _fts_ok(again)
    again.revise(loader.id, content="The portal reads names through AccountLoader.load")
    assert _keyword(again, "account loader")[:1] == [loader.id]
    again.delete(saver.id)
    again.delete(loader.id)
    assert _keyword(again, "session state writer") == []
    _fts_ok(again)
    report = again.store.check()
    assert report["ok"], report


def test_a_store_with_memories_and_no_record_has_no_rules(
    stores: Stores, make_mem: Callable[..., Memory]
):
    """A store of a backend without migration 13 that holds memories and records no
    rules was indexed without them: it is read without them (and records so)."""
    mem = make_mem()
    mem.add(LOADER)
    _run(stores, "memory", f"DELETE FROM meta WHERE key = '{RULES_KEY}'")
    assert bind_rules(mem.store) == frozenset()
    assert mem.store.get_meta(RULES_KEY) == ""


def test_a_copy_carries_its_sources_rules(
    stores: Stores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """``memchentic migrate`` into a new store: its index uses the source's rules; a
    target holding memories keeps its own (its index stays read as written)."""
    monkeypatch.setattr(text, "ACTIVE_KEYWORD_RULES", frozenset())
    source = Memory(path=tmp_path / "plain.db", embedder="hash")
    loader = source.add(LOADER).memory
    assert loader is not None
    monkeypatch.undo()
    target = open_store(stores.location("copy"), Settings())
    try:
        assert target.get_meta(RULES_KEY) == "identifiers"  # a new store: the default
        assert migrate(source.store, target).ok
        assert target.get_meta(RULES_KEY) == ""
    finally:
        target.close()
    with Memory(store=stores.location("copy"), embedder="hash") as copy:
        assert _keyword(copy, "UserProfileLoader") == [loader.id]
        assert copy.store.check()["ok"]
    held = Memory(store=stores.location("held"), embedder="hash")
    held.add("The heron fishes at the weir")
    assert migrate(source.store, held.store).ok
    assert held.store.get_meta(RULES_KEY) == "identifiers"
    assert _keyword(held, "user profile loader")[:1] == [loader.id]
    held.close()
    source.close()


def test_a_restore_of_a_logical_backup_splits_as_its_source_did(
    stores: Stores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """An export names its keyword rules; importing it into a new store takes them
    (as it takes the language), so the restored index is read as the source's was;
    a store holding memories keeps its own; a header naming an unknown rule is
    refused by name."""
    import io

    monkeypatch.setattr(text, "ACTIVE_KEYWORD_RULES", frozenset())
    source = Memory(path=tmp_path / "plain.db", embedder="hash")
    source.add(LOADER)
    monkeypatch.undo()
    buffer = io.StringIO()
    source.export(buffer)
    source.close()
    header = buffer.getvalue().splitlines()[0]
    assert '"keyword_rules": []' in header
    with Memory(store=stores.location("restored"), embedder="hash") as restored:
        assert restored.store.get_meta(RULES_KEY) == "identifiers"  # new: the default
        assert restored.import_(io.StringIO(buffer.getvalue()), strict=True).memories == 1
        assert restored.store.get_meta(RULES_KEY) == ""
        assert restored.store.check()["ok"]
    with Memory(store=stores.location("held"), embedder="hash") as held:
        held.add("The heron fishes at the weir")
        held.import_(io.StringIO(buffer.getvalue()))
        assert held.store.get_meta(RULES_KEY) == "identifiers"
    bad = buffer.getvalue().replace('"keyword_rules": []', '"keyword_rules": ["soundex"]')
    with Memory(store=stores.location("bad"), embedder="hash") as target:
        report = target.import_(io.StringIO(bad), strict=True)
        assert report.memories == 0
        assert [n for n, message in report.errors if "keyword_rules" in message] == [1]
