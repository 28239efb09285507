"""Scopes that select what an operation acts on (issue 32, items 1 and 11), on every
backend and over HTTP: an empty scope value is an error, never "no scope"; a scope
means the same on list, search and delete_all."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memchentic import AsyncMemory, Memory
from memchentic.errors import ValidationError

SCOPE_FIELDS = ("user_id", "agent_id", "session_id", "namespace")
#: Values that name nothing: empty, blank, and invisible only (a zero-width space,
#: a BOM, a word joiner between spaces).
EMPTY_VALUES = ("", " ", "\u200b", "\ufeff", " \u2060\t")


def _everything(mem: Memory) -> set[str]:
    return {r.id for r in mem.list(include_expired=True, include_superseded=True, limit=1000)}


def _seed_team(mem: Memory) -> tuple[Memory, set[str]]:
    """A group ``core`` with alice (admin) and carol (member), memories in it, in
    alice's and carol's private namespaces, and in a session; carol's view."""
    mem.directory.create_identity("alice")
    mem.directory.create_identity("carol")
    mem.directory.create_group("core", admins=["alice"], members=["carol"])
    alice = mem.as_identity("alice")
    carol = mem.as_identity("carol")
    alice.add("The core team deploys on Tuesdays", namespace="group:core")
    alice.add("Core standup is at nine", namespace="group:core", session_id="s1")
    carol.add("The billing service runs on port 8080", namespace="group:core")
    alice.add("Alice prefers tea")
    carol.add("Carol takes the night train", session_id="s1")
    mem.add("Sam lives in Porto", user_id="sam", session_id="s1")
    return carol, _everything(mem)


@pytest.mark.parametrize("field", SCOPE_FIELDS)
def test_an_empty_scope_value_deletes_nothing(mem: Memory, field: str) -> None:
    """Issue 32, item 1: ``delete_all(session_id="")`` once passed the "at least one
    scope" check and then deleted everything the caller could change."""
    carol, before = _seed_team(mem)
    for who in (mem, carol):
        for value in EMPTY_VALUES:
            with pytest.raises(ValidationError) as raised:
                who.delete_all(**{field: value})
            assert raised.value.field == field, (field, value)
            beside = {"session_id": "s1"} if field == "user_id" else {"user_id": "sam"}
            with pytest.raises(ValidationError):  # beside a real scope too
                who.delete_all(**beside, **{field: value})
    assert _everything(mem) == before


def test_a_real_scope_still_deletes_exactly_its_memories(mem: Memory) -> None:
    carol, before = _seed_team(mem)
    s1 = {r.id for r in mem.list(include_expired=True, limit=1000) if r.session_id == "s1"}
    # carol may change the group's and her own memories of session s1, not sam's
    assert carol.delete_all(session_id="s1") == 2
    left = _everything(mem)
    assert before - left <= s1 and len(before - left) == 2
    assert any(r.user_id == "sam" or r.namespace == "user:sam" for r in mem.list(user_id="sam"))


def test_the_async_face_refuses_an_empty_scope(mem: Memory) -> None:
    mem.add("Sam lives in Porto", user_id="sam", session_id="s1")
    amem = AsyncMemory(mem)
    with pytest.raises(ValidationError) as raised:
        asyncio.run(amem.adelete_all(session_id=""))
    assert raised.value.field == "session_id"
    assert len(mem.list(user_id="sam")) == 1


def test_the_mem0_adapter_names_run_id(tmp_path: Path) -> None:
    from memchentic.mem0 import Memory as Mem0

    m = Mem0(path=str(tmp_path / "m.db"), embedder="hash")
    try:
        m.add("I like hiking", user_id="alice", run_id="r1", infer=False)
        for value in EMPTY_VALUES:
            with pytest.raises(ValidationError) as raised:
                m.delete_all(run_id=value)
            assert raised.value.field == "run_id"
        assert len(m.get_all(user_id="alice")["results"]) == 1
    finally:
        m.close()


def test_http_and_the_clients_refuse_an_empty_scope(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from memchentic import Client
    from memchentic.mem0 import MemoryClient

    from .live_server import live_server

    with live_server(tmp_path, mcp=False, console=False) as live:
        live.mem.add("Sam lives in Porto", user_id="sam", session_id="s1")
        live.mem.add("alice's note", user_id="alice")
        before = _everything(live.mem)
        admin = live.http("admin")
        for field in SCOPE_FIELDS:
            for value in EMPTY_VALUES:
                answer = admin.post("/v1/memories/delete_all", json={field: value})
                assert answer.status_code == 422, (field, value, answer.text)
                assert answer.json()["error"]["field"] == field
        with Client(live.url, live.keys["admin"]) as client:
            with pytest.raises(ValidationError) as raised:
                client.delete_all(session_id="\u200b")
            assert raised.value.field == "session_id"
        with MemoryClient(api_key=live.keys["admin"], host=live.url) as ported:
            with pytest.raises(ValidationError) as raised:
                ported.delete_all(run_id="")
            assert raised.value.field == "run_id"
        assert _everything(live.mem) == before


def _agents(mem: Memory) -> dict[str, str]:
    ids = {
        "bot": mem.add("Sam books aisle seats", user_id="sam", agent_id="travel-bot").id,
        "other": mem.add("Sam's build uses Node 22", user_id="sam", agent_id="code-bot").id,
        "shared": mem.add("Sam is vegetarian", user_id="sam").id,
    }
    return ids


@pytest.mark.parametrize("scope", [{"user_id": "sam"}, {"namespace": "user:sam"}])
def test_a_namespace_with_an_agent_means_the_same_everywhere(
    mem: Memory, scope: dict[str, Any]
) -> None:
    """Issue 32, item 11: ``list``/``search`` with ``namespace`` and ``agent_id`` once
    ignored ``agent_id`` (every agent's memories) while ``delete_all`` narrowed to the
    agent. Now both scopes read the agent's memories and the shared (agent-less) ones,
    never another agent's; ``delete_all`` removes the agent's own only."""
    ids = _agents(mem)
    seen = {r.id for r in mem.list(agent_id="travel-bot", **scope)}
    assert seen == {ids["bot"], ids["shared"]}
    found = {h.id for h in mem.search("Sam", agent_id="travel-bot", limit=10, **scope)}
    assert found == {ids["bot"], ids["shared"]}
    assert mem.delete_all(agent_id="travel-bot", **scope) == 1
    assert {r.id for r in mem.list(user_id="sam")} == {ids["other"], ids["shared"]}


def test_errors_name_the_callers_field(tmp_path: Path) -> None:
    """Issue 32, item 12: ``POST /v1/working`` with a long ``key`` named ``slot_key``
    (our name for what it becomes); ``/v1/ask`` named ``query``, not ``question``."""
    pytest.importorskip("fastapi")
    from .live_server import live_server

    with live_server(tmp_path, mcp=False, console=False) as live:
        alice = live.http("alice")
        long_key = alice.post("/v1/working", json={"content": "draft reply", "key": "k" * 400})
        assert long_key.status_code == 422
        assert long_key.json()["error"]["field"] == "key"
        for question in ("", "q" * 100_000):
            asked = alice.post("/v1/ask", json={"question": question})
            assert asked.status_code == 422, asked.text
            assert asked.json()["error"]["field"] == "question"
        assert live.mem.list(include_expired=True) == []
        assert alice.post("/v1/working", json={"content": "draft", "key": "k"}).status_code == 200
