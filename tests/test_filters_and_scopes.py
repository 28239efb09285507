"""Metadata filters on search and list, ``agent_id`` alone, ``threshold``, ``delete_all``
and ``reset`` (issue 24, items 1-3), on every backend."""

from __future__ import annotations

from typing import Any

import pytest

from memchentic import Memory
from memchentic.errors import NotFoundError, ValidationError
from memchentic.metadata_filter import matches, parse

DOCS: list[dict[str, Any]] = [
    {"category": "travel", "rating": 5, "labels": ["urgent", "home"], "when": "2024-07-02"},
    {"category": "travel", "rating": 2.5, "labels": ["work"], "when": "2024-05-30"},
    {"category": "food", "rating": 4, "flag": True, "owner": {"team": "ops"}},
    {"category": "food", "rating": "4", "flag": 1, "owner": {"team": "dev"}},
    {"category": "music", "labels": [], "empty": None},
    {},
]
FILTERS: list[dict[str, Any]] = [
    {"category": "travel"},
    {"rating": 4},
    {"rating": {"gte": 3}},
    {"rating": {"gt": 2, "lt": 5}},
    {"rating": {"lte": "4"}},
    {"category": {"in": ["food", "music"]}},
    {"category": {"nin": ["food", "music"]}},
    {"category": {"ne": "travel"}},
    {"labels": {"contains": "urgent"}},
    {"flag": True},
    {"flag": 1},
    {"owner.team": "ops"},
    {"owner": {"exists": True}},
    {"labels": {"exists": False}},
    {"empty": None},
    {"when": {"gte": "2024-06-01"}},
    {"OR": [{"category": "music"}, {"rating": {"lt": 3}}]},
    {"AND": [{"category": "food"}, {"NOT": {"flag": True}}]},
    {"NOT": {"category": {"in": ["travel", "food"]}}},
    {"category": "travel", "labels": {"contains": "work"}},
]


@pytest.fixture
def filled(mem: Memory) -> tuple[Memory, dict[str, dict[str, Any]]]:
    by_id = {}
    for i, doc in enumerate(DOCS):
        result = mem.add(f"note number {i} about the shared topic", metadata=doc, user_id="sam")
        by_id[result.id] = doc
    return mem, by_id


@pytest.mark.parametrize("filters", FILTERS, ids=[str(f) for f in FILTERS])
def test_list_and_search_filter_as_the_reference_says(filled: Any, filters: dict) -> None:
    """Both backends' SQL agree with ``matches``, the filter's reference meaning."""
    mem, by_id = filled
    expected = {i for i, doc in by_id.items() if matches(parse(filters), doc)}
    listed = {r.id for r in mem.list(user_id="sam", filters=filters)}
    assert listed == expected
    found = {h.id for h in mem.search("shared topic note", user_id="sam", filters=filters)}
    assert found == expected


def test_a_bad_filter_is_an_error_naming_it_and_changes_nothing(filled: Any) -> None:
    mem, by_id = filled
    with pytest.raises(ValidationError) as raised:
        mem.search("topic", user_id="sam", filters={"rating": {"between": [1, 3]}})
    assert raised.value.field == "filters.rating.between"
    with pytest.raises(ValidationError):
        mem.list(user_id="sam", filters={"category": {"in": []}})
    assert len(mem.list(user_id="sam")) == len(by_id)


def test_threshold_keeps_only_close_meanings(mem: Memory) -> None:
    for text in ("the deploy key rotates every ninety days",
                 "the deploy key is kept in the vault",
                 "deploy on fridays only after review"):  # fmt: skip
        mem.add(text, user_id="sam")
    query = "the deploy key rotates every ninety days"
    traced = mem.search(query, user_id="sam", include_trace=True)
    cosines = {h.id: (h.trace or {})["cosine"] for h in traced}
    assert len(set(cosines.values())) > 1
    cut = sorted(cosines.values())[-2] + 1e-6  # between the two closest
    close = mem.search(query, user_id="sam", threshold=cut)
    assert [h.id for h in close] == [i for i, c in cosines.items() if c >= cut]
    assert [h.memory.content for h in close] == [query]
    with pytest.raises(ValidationError) as raised:
        mem.search("deploy", user_id="sam", threshold=1.5)
    assert raised.value.field == "threshold"


def test_agent_id_alone_finds_that_agents_memories_across_users(mem: Memory) -> None:
    a = mem.add("Alice prefers window seats", user_id="alice", agent_id="travel-bot").id
    b = mem.add("Bob flies economy", user_id="bob", agent_id="travel-bot").id
    own = mem.add("Fares drop on Tuesdays", agent_id="travel-bot").id
    mem.add("Alice likes jazz", user_id="alice", agent_id="music-bot")
    mem.add("Bob has a cat", user_id="bob")
    assert {r.id for r in mem.list(agent_id="travel-bot")} == {a, b, own}
    hits = mem.search("seats flights fares", agent_id="travel-bot")
    assert {h.id for h in hits} == {a, b, own}
    # with a user: that agent's memories of the user and the user's shared ones
    assert a in {r.id for r in mem.list(user_id="alice", agent_id="travel-bot")}


def test_agent_id_alone_stays_inside_what_the_caller_may_read(mem: Memory) -> None:
    alice = mem.as_identity("alice")
    mem.as_identity("bob")
    own = alice.access.default_namespace(alice.principal)
    mine = alice.add("I like aisle seats", namespace=own, agent_id="travel-bot").id
    mem.add("Bob flies economy", user_id="bob", agent_id="travel-bot")
    assert {r.id for r in alice.list(agent_id="travel-bot")} == {mine}
    assert {h.id for h in alice.search("seats economy", agent_id="travel-bot")} == {mine}


def test_delete_all_deletes_its_scope_and_nothing_more(mem: Memory) -> None:
    mine = [mem.add(f"alice fact {i}", user_id="alice").id for i in range(3)]
    run = mem.add("alice in run 7", user_id="alice", session_id="run-7").id
    bobs = [mem.add(f"bob fact {i}", user_id="bob").id for i in range(2)]
    seen: list[str] = []
    mem.subscribe(lambda e: seen.append(e.memory_id or ""), ["memory.deleted"])
    assert mem.delete_all(user_id="alice", session_id="run-7") == 1
    assert mem.delete_all(user_id="alice") == 3
    assert sorted(seen) == sorted([run, *mine])  # each as delete() announces it
    assert {r.id for r in mem.list(user_id="bob")} == set(bobs)
    assert mem.list(user_id="alice") == []
    with pytest.raises(ValidationError) as raised:
        mem.delete_all()
    assert raised.value.field == "scope"
    assert {r.id for r in mem.list(user_id="bob")} == set(bobs)


def test_delete_all_never_reaches_what_the_caller_may_not_change(mem: Memory) -> None:
    mallory = mem.as_identity("mallory")
    bob = mem.as_identity("bob")
    kept = bob.add("bob's private note").id
    assert mallory.delete_all(user_id="bob") == 0
    assert mallory.delete_all(namespace="user:bob") == 0
    assert bob.get(kept).id == kept


def test_reset_empties_memories_for_the_trusted_principal_only(mem: Memory) -> None:
    alice = mem.as_identity("alice")
    first = alice.add("alice's note").id
    mem.add("a shared fact", user_id="sam")
    mem.delete(mem.add("gone already", user_id="sam").id)
    with pytest.raises(ValidationError) as raised:
        alice.reset()
    assert raised.value.field == "principal"
    assert alice.get(first).id == first
    assert mem.reset() == 2
    assert mem.list(include_expired=True, include_superseded=True) == []
    with pytest.raises(NotFoundError):
        mem.history(first)
    assert mem.directory.identities()  # identities stay


def test_the_http_clients_filter_delete_a_scope_and_reset(tmp_path: Any) -> None:
    """The same operations over HTTP, as each key's identity: filters on list and
    search, delete_all within what the key may change, reset for an admin key only."""
    pytest.importorskip("fastapi")
    from memchentic import Client, ServerError
    from memchentic.mem0 import MemoryClient

    from .live_server import live_server

    with live_server(tmp_path, mcp=False, console=False) as live:
        alice = Client(live.url, live.keys["alice"])
        bob = Client(live.url, live.keys["bob"])
        try:
            first = alice.add("the train leaves at nine", metadata={"kind": "travel"}).id
            alice.add("the museum opens at ten", metadata={"kind": "culture"})
            bob_note = bob.add("bob's train is at noon", metadata={"kind": "travel"}).id
            assert [r.id for r in alice.list(filters={"kind": "travel"})] == [first]
            hits = alice.search("train", filters={"kind": {"in": ["travel"]}})
            assert [h.id for h in hits] == [first]
            with pytest.raises(ValidationError) as raised:
                alice.list(filters={"kind": {"like": "t%"}})
            assert raised.value.field == "filters.kind.like"
            own = alice.me()["key"]["identity_id"]
            assert bob.delete_all(namespace=f"user:{own}") == 0  # not bob's to delete
            assert alice.delete_all(namespace=f"user:{own}") == 2
            assert bob.get(bob_note).id == bob_note
            with pytest.raises(ServerError) as refused:
                bob.reset()
            assert (refused.value.code, refused.value.status) == ("admin_required", 403)
            with MemoryClient(api_key=live.keys["bob"], host=live.url) as ported:
                travel = ported.get_all(filters={"kind": "travel"})["results"]
            assert [r["id"] for r in travel] == [bob_note]
            with Client(live.url, live.keys["admin"]) as admin:
                assert admin.reset() == 1
            assert bob.list() == []
        finally:
            alice.close()
            bob.close()


def test_postgres_serves_metadata_filters_from_a_gin_index(mem: Memory, backend: str) -> None:
    if backend != "postgres":
        pytest.skip("PostgreSQL's index")
    from memchentic.store.postgres_rows import POSTGRES

    mem.add("a note", metadata={"project": "atlas"}, user_id="sam")
    every = {"user_id": None, "agent_id": None, "namespace": None}  # every namespace
    flt = mem._read_filter(now=mem._now(None), filters={"project": "atlas"}, **every)
    condition, params = POSTGRES.where(flt)
    with mem.store.connection() as conn:  # type: ignore[attr-defined]
        (indexdef,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_memories_metadata'"
        ).fetchone()
        assert "gin" in indexdef and "jsonb_path_ops" in indexdef
        conn.execute("SET enable_seqscan = off")  # as on a table too big to read whole
        try:
            plan = conn.execute(f"EXPLAIN SELECT id FROM memories m WHERE {condition}", params)
            assert "ix_memories_metadata" in "\n".join(row[0] for row in plan.fetchall())
        finally:
            conn.execute("RESET enable_seqscan")


def test_the_async_faces_take_filters_and_scopes(mem: Memory, tmp_path: Any) -> None:
    """AsyncMemory and AsyncClient: the same filters, delete_all and reset."""
    import asyncio

    from memchentic import AsyncClient, AsyncMemory

    from .live_server import live_server

    async def embedded() -> tuple[list[str], int, int]:
        amem = AsyncMemory(mem)
        keep = await amem.aadd("the tram runs late", metadata={"line": 4}, user_id="kim")
        await amem.aadd("the bus runs early", metadata={"line": 9}, user_id="kim")
        found = await amem.asearch("runs", user_id="kim", filters={"line": {"lt": 5}})
        listed = await amem.alist(user_id="kim", filters={"line": {"in": [4]}})
        assert [r.id for r in listed] == [keep.id]
        gone = await amem.adelete_all(user_id="kim")
        return [h.id for h in found], gone, await amem.areset()

    ids, gone, reset = asyncio.run(embedded())
    assert len(ids) == 1 and gone == 2 and reset == 0

    async def remote(url: str, alice: str, admin: str) -> tuple[int, int, int]:
        async with AsyncClient(url, alice) as client:
            await client.add("note one", metadata={"n": 1})
            await client.add("note two", metadata={"n": 2})
            matched = len(await client.list(filters={"n": {"gte": 2}}))
            deleted = await client.delete_all(user_id=(await client.me())["key"]["identity_id"])
        async with AsyncClient(url, admin) as root:
            return matched, deleted, await root.reset()

    pytest.importorskip("fastapi")
    with live_server(tmp_path, mcp=False, console=False) as live:
        assert asyncio.run(remote(live.url, live.keys["alice"], live.keys["admin"])) == (1, 2, 0)


def test_the_new_routes_need_a_key_and_change_nothing_without_one(tmp_path: Any) -> None:
    """No key, or a wrong one: 401 from delete_all, reset and the working-memory routes,
    and the store keeps every memory."""
    pytest.importorskip("fastapi")
    from .live_server import live_server

    with live_server(tmp_path, mcp=False, console=False) as live:
        kept = live.mem.add("a note nobody may delete anonymously", user_id="sam").id
        anonymous = live.http()
        for headers in ({}, {"Authorization": "Bearer mck_wrong"}):
            calls = [
                anonymous.post("/v1/memories/delete_all", json={"user_id": "sam"}, headers=headers),
                anonymous.post("/v1/reset", headers=headers),
                anonymous.post("/v1/working", json={"content": "x", "session_id": "s"},
                               headers=headers),  # fmt: skip
                anonymous.get("/v1/working", params={"session_id": "s"}, headers=headers),
                anonymous.get("/v1/memories", params={"filters": '{"a": 1}'}, headers=headers),
            ]
            assert [r.status_code for r in calls] == [401] * len(calls)
        assert live.mem.get(kept).id == kept
