"""API keys and console sessions in tables of their own (migration 12, issue 35):
a store made before keeps its keys and sessions, on both backends."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memchentic import Memory
from memchentic.access.keys import KEYS_META, SESSIONS_META, ConsoleSessions, KeyRing, hash_key
from memchentic.clock import to_text, utcnow
from memchentic.store.migrations import STEPS


def _as_before_step_12(mem: Memory, keys: dict[str, Any], sessions: dict[str, Any]) -> None:
    """The store as the code before migration 12 left it: no tables, JSON in meta."""
    store: Any = mem.store
    sql = store.dialect.sql
    with store.write():
        store._run("DROP TABLE console_sessions")
        store._run("DROP TABLE api_keys")
        step_12 = STEPS.index("m012_access_keys") + 1  # and every later step
        store._run(sql("DELETE FROM schema_migrations WHERE version >= ?"), (step_12,))
    store.set_meta(KEYS_META, json.dumps(keys, sort_keys=True))
    store.set_meta(SESSIONS_META, json.dumps(sessions, sort_keys=True))


def test_keys_and_sessions_move_out_of_meta(make_mem: Callable[..., Memory]):
    mem = make_mem()
    mem.directory.create_identity("alice")
    alice = mem.store.find_identity("alice")
    assert alice is not None
    secret, admin = "mck_" + "a" * 43, "mck_" + "b" * 43
    now = utcnow()
    created = to_text(now)
    keys = {
        hash_key(secret): {"id": hash_key(secret)[:12], "name": "laptop", "admin": False,
                           "created_at": created, "identity_id": alice.id,
                           "identity_kind": "user", "identity_name": "alice"},
        hash_key(admin): {"id": hash_key(admin)[:12], "name": "admin", "admin": True,
                          "created_at": created},
    }  # fmt: skip
    token = "s" * 43
    sessions = {hash_key(token): {"key": hash_key(secret), "created_at": created,
                                  "expires_at": "9999-01-01T00:00:00.000000+00:00"}}  # fmt: skip
    _as_before_step_12(mem, keys, sessions)
    mem.close()

    again = make_mem()  # opening runs migration 12
    assert again.store.schema_version() == len(STEPS)
    assert again.store.get_meta(KEYS_META) is None and again.store.get_meta(SESSIONS_META) is None
    ring = KeyRing(again.store)
    found = ring.verify(secret)
    assert found is not None and found.principal == "user:alice" and found.name == "laptop"
    assert found.identity_id == alice.id and not found.admin
    admin_key = ring.verify(admin)
    assert admin_key is not None and admin_key.admin and admin_key.principal == "admin"
    assert [k.id for k in ring.list()] == sorted(k.id for k in ring.list())  # same created_at
    console = ConsoleSessions(ring, hours=1.0, per_key=5)
    assert console.key(token) == found  # the session survived, and still needs its key
    assert ring.revoke(found.id) and console.key(token) is None


def test_the_tables_hold_hashes_only(make_mem: Callable[..., Memory]):
    mem = make_mem()
    mem.directory.create_identity("alice")
    ring = KeyRing(mem.store)
    secret, record = ring.create(identity="alice")
    token = ConsoleSessions(ring, hours=1.0, per_key=2).open(secret)
    assert token is not None
    stored = repr(mem.store.api_keys()) + repr(mem.store.console_sessions())
    assert secret not in stored and token not in stored
    assert hash_key(secret) in stored and hash_key(token) in stored and record.id in stored
