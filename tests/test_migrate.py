"""``memchentic migrate``: SQLite to PostgreSQL and back, losslessly, resumably."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memchentic import Memory, Settings
from memchentic.cli import app
from memchentic.store import open_store
from memchentic.store.base import MemoryFilter, Store
from memchentic.store_copy import KINDS, migrate

from .conftest import Stores

pytestmark = pytest.mark.backends("postgres")
T0 = datetime(2025, 5, 1, 9, 30, 15, 123456, tzinfo=UTC)


def _populate(m: Memory) -> None:
    """A bit of everything a store holds."""
    d = m.directory
    d.create_identity("bea")
    d.create_identity("sophie", "agent")
    d.create_group("club", admins=["bea"], members=["sophie"])
    d.create_identity("dave")
    m.as_identity("bea").directory.add_member("group:club", "dave")  # pending invitation
    d.create_org("acme", admins=["bea"])
    d.grant("federated:acme:bea", "sophie")
    a = m.add("Bea runs the Thursday book club", user_id="bea", tags=["club"], created_at=T0,
              metadata={"source": "chat", "score": 0.25, "nested": {"k": [1, "two"]}},
              title="Book club")  # fmt: skip
    b = m.add("Bea moved the club to Fridays", user_id="bea", created_at=T0 + timedelta(days=9))
    m.add("Bea does not run the Thursday book club anymore", user_id="bea")
    m.add("Confirm the venue a week ahead", kind="guide", user_id="bea", permanent=True)
    m.add("Confirm the venue a week ahead", kind="guide", user_id="bea")  # a merge
    m.add("Bea lives in Lisbon", slot_key="profile.city", user_id="bea")
    m.add("Bea lives in Porto", slot_key="profile.city", user_id="bea")  # a slot update
    m.add("The club reads Saramago", namespace="group:club", entities=["Saramago"])
    m.relate(b.id, a.id, "derives_from", 0.7)
    m.revise(b.id, "Bea moved the club to Friday evenings")
    m.add_many([f"Reading list item {i}: volume {i * 13}" for i in range(30)], user_id="bea",
               on_duplicate="keep")  # fmt: skip
    m.record_turn("user", "What do we read next?", session_id="s1", user_id="bea")
    m.record_turn("assistant", "Saramago, then Pessoa.", session_id="s1", user_id="bea")
    m.search("book club", user_id="bea")  # events and recall counts


def _export(m: Memory) -> list[dict[str, Any]]:
    out = io.StringIO()
    m.export(out)
    return [json.loads(line) for line in out.getvalue().splitlines()][1:]  # no header


def _everything_else(store: Store) -> dict[str, Any]:
    """What an export leaves out: the directory, events and turns."""
    teams = [t.to_dict() for kind in ("group", "org") for t in store.list_teams(kind)]
    members = [
        m.to_dict()
        for kind in ("group", "org")
        for t in store.list_teams(kind)
        for m in store.members(kind, t.id)
    ]
    return {
        "identities": [i.to_dict() for i in store.list_identities()],
        "teams": teams,
        "memberships": members,
        "invitations": [i.to_dict() for i in store.invitations()],
        "grants": [g.to_dict() for g in store.grants()],
        "events": [e.to_dict() for e in store.events(namespaces=None, limit=10_000)],
        "turns": [t.to_dict() for t in store.turns("s1", namespace=None, limit=100)],
        "sessions": store.sessions(namespaces=None),
    }


def test_sqlite_to_postgres_and_back_is_lossless(stores: Stores, tmp_path: Path):
    source = tmp_path / "source.db"
    with Memory(path=source, embedder="hash") as m:
        _populate(m)
        before, rest = _export(m), _everything_else(m.store)
    url = stores.location("copy")
    runner = CliRunner()
    result = runner.invoke(app, ["migrate", "--from", f"sqlite://{source}", "--to", url])
    assert result.exit_code == 0, result.output
    assert "verified" in result.stdout
    with Memory(store=url, embedder="hash") as pg:
        assert _export(pg) == before
        assert _everything_else(pg.store) == rest
        assert pg.stats()["memories"] == len([x for x in before if x["kind"] == "memory"])
        assert pg.search("book club Fridays", user_id="bea")  # indexes built and used
        before, rest = _export(pg), _everything_else(pg.store)  # the search touched some
    back = tmp_path / "back.db"
    src, dst = open_store(url, Settings()), open_store(str(back), Settings())
    try:
        report = migrate(src, dst, batch=7)
    finally:
        src.close()
        dst.close()
    assert report.ok and report.copied["memories"] == report.source["memories"]
    with Memory(path=back, embedder="hash") as m:
        assert _export(m) == before
        assert _everything_else(m.store) == rest


def test_an_interrupted_migration_resumes(stores: Stores, tmp_path: Path):
    source = tmp_path / "source.db"
    with Memory(path=source, embedder="hash") as m:
        _populate(m)
        before = _export(m)

    class Interrupted(Exception):
        pass

    def stop_after_memories(kind: str, done: int, total: int) -> None:
        if kind == "memories" and done >= 10:
            raise Interrupted

    url = stores.location("resume")
    settings = Settings()
    src, dst = open_store(str(source), settings), open_store(url, settings)
    try:
        with pytest.raises(Interrupted):
            migrate(src, dst, batch=5, progress=stop_after_memories)
        everything = MemoryFilter.everything(include_expired=True, include_superseded=True)
        assert dst.count(everything) == 10
        report = migrate(src, dst, batch=5)
        again = migrate(src, dst, batch=5)
    finally:
        src.close()
        dst.close()
    assert report.ok and report.skipped["memories"] == 10
    assert report.copied["memories"] == report.source["memories"] - 10
    assert again.ok and sum(again.copied.values()) == 0
    assert set(again.to_dict()["kinds"]) == set(KINDS)
    with Memory(store=url, embedder="hash") as pg:
        assert _export(pg) == before


def test_migrate_refuses_a_missing_source_and_another_embedder(stores: Stores, tmp_path: Path):
    runner = CliRunner()
    missing = runner.invoke(app, ["migrate", "--from", str(tmp_path / "nope.db"), "--to",
                                  stores.location("x")])  # fmt: skip
    assert missing.exit_code == 2 and "no store at" in missing.output
    assert not (tmp_path / "nope.db").exists()
    source = tmp_path / "s.db"
    Memory(path=source, embedder="hash").close()
    other = runner.invoke(app, ["migrate", "--from", str(source), "--to", stores.location("x"),
                                "--embedder", "hash"],
                          env={"MEMCHENTIC_HASH_EMBEDDING_DIMENSION": "64"})  # fmt: skip
    assert other.exit_code == 2 and "reindex" in other.output
