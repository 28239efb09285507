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
