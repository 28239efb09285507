"""``restore(id)`` undoes a supersession (issue 31, item 7): the older memory comes
back into list, search, recall and context, the newer one stays live, a version
``restore`` names who did it, ``memory.restored`` announces it, and the access rules
hold (a memory the caller cannot see is not found; one it cannot write is
forbidden). On every face: Memory, AsyncMemory, Client, AsyncClient, HTTP, MCP, CLI.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memchentic import AsyncMemory, Memory
from memchentic.errors import ForbiddenError, NotFoundError

OLD = "Sam speaks Italian with his grandmother."
NEW = "Sam speaks Greek with his colleagues."


def _superseded(mem: Memory, **scope: Any) -> tuple[str, str]:
    """Two memories, the newer superseding the older (the way an automatic update
    does: a ``supersedes`` edge); the older one leaves every read."""
    old = mem.add(OLD, entities=["Sam"], **scope).id
    new = mem.add(NEW, entities=["Sam"], **scope).id
    mem.relate(new, old, "supersedes")
    assert old not in _listed(mem, **scope)
    return old, new


def _listed(mem: Memory, **scope: Any) -> list[str]:
    return [r.id for r in mem.list(**scope)]


def test_restore_brings_a_superseded_memory_back_everywhere(make_mem: Callable[..., Memory]):
    mem = make_mem()
    old, new = _superseded(mem, user_id="sam")
    assert old not in [h.id for h in mem.search("Italian grandmother", user_id="sam")]
    assert old not in [h.id for h in mem.recall(entity="Sam", user_id="sam")]
    seen: list[Any] = []
    mem.subscribe(seen.append, types=["memory.restored"])

    result = mem.restore(old)

    assert (result.status, result.id, result.ids) == ("restored", old, [old, new])
    assert result.reason == "restore:superseded"
    assert result.memory is not None and result.memory.superseded_by is None
    assert set(_listed(mem, user_id="sam")) == {old, new}  # the newer one stays live
    assert old in [h.id for h in mem.search("Italian grandmother", user_id="sam")]
    assert old in [h.id for h in mem.recall(entity="Sam", user_id="sam")]
    assert OLD in str(mem.context("What languages does Sam speak?", user_id="sam"))
    assert mem.edges(old, kind="supersedes") == []
    last = mem.history(old)[-1]
    assert (last.op, last.actor) == ("restore", mem.access.actor(mem.principal))
    assert last.changes["superseded_by"] == [new, None]
    assert [(e.type, e.memory_id, e.namespace) for e in seen] == [
        ("memory.restored", old, "user:sam")
    ]
    stored = [e for e in mem.events(types=["memory.restored"])]
    assert [e.memory_id for e in stored] == [old]


def test_restoring_what_is_live_is_unchanged(make_mem: Callable[..., Memory]):
    mem = make_mem()
    old, new = _superseded(mem)
    assert mem.restore(old).status == "restored"
    again = mem.restore(old)
    assert (again.status, again.reason) == ("unchanged", "not superseded or expired")
    assert mem.restore(new).status == "unchanged"
    assert [v.op for v in mem.history(old)].count("restore") == 1


def test_restore_revives_an_expired_memory(make_mem: Callable[..., Memory]):
    mem = make_mem()
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    gone = mem.add("The parking pass is in the blue folder.", ttl_days=1, now=t0).id
    later = t0 + timedelta(days=10)
    assert gone not in _listed(mem, now=later)
    result = mem.restore(gone, now=later)
    assert (result.status, result.reason) == ("restored", "restore:expired")
    assert mem.get(gone).expires_at == later + timedelta(days=90)
    assert gone in _listed(mem, now=later)
    # a superseded and expired record of what was said: both undone, kept for good
    said = mem.add("I left my keys at Mia's.", type="episodic", ttl_days=1, now=t0).id
    newer = mem.add("I got my keys back from Mia.", type="episodic", now=t0).id
    mem.relate(newer, said, "supersedes")
    both = mem.restore(said, now=later)
    assert both.reason == "restore:superseded,expired"
    assert mem.get(said).expires_at is None and said in _listed(mem, now=later)


def test_restore_obeys_the_access_rules(make_mem: Callable[..., Memory]):
    root = make_mem()
    for name in ("alice", "bob", "carol"):
        root.directory.create_identity(name)
    root.directory.create_org("acme", admins=["alice"], members=["carol"])
    alice, bob, carol = (root.for_identity(n) for n in ("alice", "bob", "carol"))
    old, new = _superseded(alice)
    with pytest.raises(NotFoundError):
        bob.restore(old)  # cannot see it: answered like a memory that does not exist
    with pytest.raises(NotFoundError):
        bob.restore("01J0000000000000000000000A")
    org_old, org_new = _superseded(alice, namespace="org:acme")
    with pytest.raises(ForbiddenError):
        carol.restore(org_old)  # reads the org, may not write it
    assert root.get(org_old).superseded_by == org_new  # nothing changed
    assert [v.op for v in root.history(old)] == ["add"]  # no restore recorded
    assert bob.events(types=["memory.restored"]) == []
    assert alice.restore(old).status == "restored"
    assert bob.events(types=["memory.restored"]) == []  # not bob's to see
    assert [e.memory_id for e in alice.events(types=["memory.restored"])] == [old]


def test_async_memory_restores(make_mem: Callable[..., Memory]):
    mem = make_mem()
    old, _ = _superseded(mem)

    async def run() -> str:
        return (await AsyncMemory(mem).arestore(old)).status

    assert asyncio.run(run()) == "restored"
    assert old in _listed(mem)


def test_cli_restore_memory(make_mem: Callable[..., Memory], stores: Any):
    from typer.testing import CliRunner

    from memchentic.cli import app

    mem = make_mem()
    old, _ = _superseded(mem)
    location = str(stores.location("memory"))
    args = ["restore-memory", old, "--json", "--store", location, "--embedder", "hash"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["status"] == "restored"
    assert old in _listed(mem)
    assert CliRunner().invoke(app, ["restore-memory", "--help"]).exit_code == 0


# --- over HTTP and MCP, on both backends ----------------------------------------------
@pytest.fixture
def served(make_mem: Callable[..., Memory]) -> Iterator[tuple[str, dict[str, str], Memory]]:
    """A server over this test's store: (url, {alice, bob: key}, the store)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    from .live_server import ServerThread

    mem = make_mem()
    ring = KeyRing(mem.store)
    keys = {}
    for name in ("alice", "bob"):
        mem.directory.create_identity(name)
        keys[name] = ring.create(identity=name)[0]
    thread = ServerThread(create_app(mem, mcp=False, console=False))
    url = thread.start()
    try:
        yield url, keys, mem
    finally:
        thread.stop()


def test_http_and_the_clients_restore(served: tuple[str, dict[str, str], Memory]):
    import httpx

    from memchentic import AsyncClient, Client

    url, keys, mem = served
    alice = mem.for_identity("alice")
    old, new = _superseded(alice)
    other, _ = _superseded(alice, tags=["second"])
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {keys['bob']}"}) as bob:
        assert bob.post(f"/v1/memories/{old}/restore").status_code == 404
    with Client(url, api_key=keys["alice"]) as client:
        result = client.restore(old)
        assert (result.status, result.ids) == ("restored", [old, new])
        assert old in [r.id for r in client.list()]
        assert client.restore(old).status == "unchanged"

    async def run() -> str:
        async with AsyncClient(url, api_key=keys["alice"]) as client:
            return (await client.restore(other)).status

    assert asyncio.run(run()) == "restored"
    assert {old, other} <= set(_listed(alice))


def test_the_mcp_tool_restores(make_mem: Callable[..., Memory]):
    pytest.importorskip("mcp")
    from mcp import Client

    from memchentic.server.mcp_server import build_server

    mem = make_mem()
    old, _ = _superseded(mem)

    async def run() -> Any:
        async with Client(build_server(lambda _ctx: mem)) as client:
            done = await client.call_tool("restore", {"id": old})
            missing = await client.call_tool("restore", {"id": "01J0000000000000000000000A"})
            return done, missing

    done, missing = asyncio.run(run())
    assert not done.is_error
    payload = done.structured_content or json.loads(done.content[0].text)
    assert payload["status"] == "restored" and payload["id"] == old
    assert missing.is_error and "not_found" in missing.content[0].text
    assert old in _listed(mem)
