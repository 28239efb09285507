"""API keys: stored hashed in the store's meta table (every backend), verified,
listed, revoked; and the ``memchentic keys`` commands."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memchentic import Memory, ValidationError
from memchentic.cli import app
from memchentic.server.auth import KEY_PREFIX, META_KEY, KeyRing, view_for


def test_keys_are_random_hashed_and_verified(mem: Memory):
    mem.directory.create_identity("alice")
    ring = KeyRing(mem.store)
    secret, record = ring.create(identity="alice", name="laptop")
    other, _ = ring.create(identity="user:alice")
    admin, admin_record = ring.create(admin=True)
    assert secret.startswith(KEY_PREFIX) and len(secret) > 40 and secret != other
    stored = mem.store.get_meta(META_KEY) or ""
    assert secret not in stored and other not in stored and admin not in stored
    assert ring.verify(secret) == record
    assert record.principal == "user:alice" and record.name == "laptop"
    assert admin_record.admin and admin_record.principal == "admin"
    for wrong in (None, "", "mck_nope", secret + "x", secret.removeprefix(KEY_PREFIX)):
        assert ring.verify(wrong) is None
    view = view_for(mem, record)
    assert view is not None and view.principal.identity_id == "alice"
    assert view_for(mem, admin_record) is mem
    assert [k.id for k in ring.list()] == [record.id, ring.verify(other).id, admin_record.id]  # type: ignore[union-attr]
    assert ring.revoke(record.id) and ring.verify(secret) is None
    assert ring.revoke(admin) and ring.verify(admin) is None  # by the key itself
    assert not ring.revoke(record.id) and not ring.revoke("")


def test_keys_need_an_existing_identity_or_admin(mem: Memory):
    ring = KeyRing(mem.store)
    with pytest.raises(ValidationError):
        ring.create(identity="ghost")
    with pytest.raises(ValidationError):
        ring.create()
    mem.directory.create_identity("alice")
    with pytest.raises(ValidationError):
        ring.create(identity="alice", admin=True)
    with pytest.raises(ValidationError):
        ring.create(identity="robot:alice")


def test_concurrent_creations_keep_every_key(mem: Memory):
    mem.directory.create_identity("alice")
    ring = KeyRing(mem.store)
    made: list[str] = []

    def create() -> None:
        for _ in range(5):
            made.append(ring.create(identity="alice")[0])

    threads = [threading.Thread(target=create) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ring.list()) == 20 and all(ring.verify(k) for k in made)


def test_keys_commands(tmp_path: Path):
    runner = CliRunner()
    store = str(tmp_path / "memory.db")
    made = runner.invoke(app, ["keys", "create", "--identity", "agent:coder", "--store", store])
    assert made.exit_code == 0, made.output
    secret = made.stdout.strip().splitlines()[-1]
    assert secret.startswith(KEY_PREFIX)
    assert "created identity agent:coder" in made.stderr
    admin = runner.invoke(app, ["keys", "create", "--admin", "--json", "--store", store])
    assert json.loads(admin.stdout)["admin"] is True
    listed = json.loads(runner.invoke(app, ["keys", "list", "--json", "--store", store]).stdout)
    assert [k["principal"] for k in listed] == ["agent:coder", "admin"]
    assert secret not in runner.invoke(app, ["keys", "list", "--store", store]).stdout
    revoked = runner.invoke(app, ["keys", "revoke", listed[0]["id"], "--store", store])
    assert revoked.exit_code == 0
    again = runner.invoke(app, ["keys", "revoke", listed[0]["id"], "--store", store])
    assert again.exit_code == 1 and "no API key" in again.stderr
    both = runner.invoke(app, ["keys", "create", "--store", store])
    assert both.exit_code == 2
    with Memory(store=store, embedder="hash") as mem:
        assert KeyRing(mem.store).verify(secret) is None
