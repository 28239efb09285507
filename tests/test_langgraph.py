"""LangGraph's BaseStore on memchentic (issue 24, item 4): ``MemchenticStore``.

LangGraph ships no conformance suite for stores, so these are its contracts as
``langgraph.store.base`` documents them (and ``InMemoryStore`` behaves), on every
backend, plus what memchentic adds: one memory per item, access rules kept.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import (  # noqa: E402 - after the skip
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchItem,
    SearchOp,
)

from memchentic import AsyncMemory, Memory, NamespaceError, ValidationError  # noqa: E402
from memchentic.integrations.langgraph import METADATA_KEY, MemchenticStore  # noqa: E402


@pytest.fixture
def store(mem: Memory) -> MemchenticStore:
    return MemchenticStore(mem)


def _keys(items: list[Any]) -> list[str]:
    return [i.key for i in items]


def test_put_get_roundtrip_with_timestamps(store: MemchenticStore) -> None:
    store.put(("users", "alice"), "prefs", {"theme": "dark", "size": 3})
    item = store.get(("users", "alice"), "prefs")
    assert isinstance(item, Item) and not isinstance(item, SearchItem)
    assert (item.namespace, item.key, item.value) == (
        ("users", "alice"), "prefs", {"theme": "dark", "size": 3}
    )  # fmt: skip
    assert item.created_at.tzinfo is not None and item.created_at.utcoffset() == UTC.utcoffset(None)
    assert item.created_at == item.updated_at
    assert store.get(("users", "alice"), "other") is None
    assert store.get(("users",), "prefs") is None  # another namespace, the same key


def test_one_item_is_one_memory_in_the_store_namespace(mem: Memory) -> None:
    store = MemchenticStore(mem, user_id="alice", index={"fields": ["text"]})
    store.put(("notes",), "n1", {"text": "The deploy is on Thursday", "n": 1})
    (memory,) = mem.list(user_id="alice")
    assert memory.namespace == "user:alice" == store.namespace
    assert memory.content == "The deploy is on Thursday"  # the indexed field is the text
    assert memory.metadata[METADATA_KEY] == {
        "namespace": ["notes"], "key": "n1", "value": {"text": "The deploy is on Thursday", "n": 1}
    }  # fmt: skip
    assert memory.expires_at is None  # an item lives until deleted
    whole = MemchenticStore(mem, user_id="bob")
    whole.put(("notes",), "n1", {"text": "Buy milk"})
    assert json.loads(mem.list(user_id="bob")[0].content) == {"text": "Buy milk"}


def test_put_twice_updates_the_one_item(mem: Memory, store: MemchenticStore) -> None:
    store.put(("docs",), "d1", {"text": "first draft"})
    first = store.get(("docs",), "d1")
    store.put(("docs",), "d1", {"text": "second draft", "done": True})
    second = store.get(("docs",), "d1")
    assert first is not None and second is not None
    assert second.value == {"text": "second draft", "done": True}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert len(mem.list(include_superseded=True, include_expired=True)) == 1
    assert _keys(store.search(("docs",))) == ["d1"]
    assert _keys(store.search(("docs",), query="draft")) == ["d1"]


def test_put_none_and_delete_remove_the_memory(mem: Memory, store: MemchenticStore) -> None:
    store.put(("docs",), "d1", {"text": "one"})
    store.put(("docs",), "d2", {"text": "two"})
    store.batch([PutOp(("docs",), "d1", None)])
    store.delete(("docs",), "d2")
    store.delete(("docs",), "never-there")  # deleting nothing is no error
    assert store.get(("docs",), "d1") is None and store.get(("docs",), "d2") is None
    assert store.search(("docs",)) == []
    assert mem.list(include_superseded=True, include_expired=True) == []


def test_search_by_query_ranks_the_relevant_item_first(store: MemchenticStore) -> None:
    store.put(("kb",), "pets", {"text": "Alice has two cats named Tom and Kit"})
    store.put(("kb",), "work", {"text": "The quarterly budget review is on Monday"})
    store.put(("kb",), "food", {"text": "Bob is allergic to peanuts and shellfish"})
    hits = store.search(("kb",), query="what is Bob allergic to?")
    assert hits[0].key == "food"
    assert all(isinstance(h, SearchItem) and h.score is not None for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert _keys(store.search(("kb",), query="cats", limit=1)) == ["pets"]


def test_filters_match_values_exactly_and_with_operators(store: MemchenticStore) -> None:
    rows = [("a", 1, "red", True), ("b", 2, "blue", False), ("c", 3, "red", 1), ("d", 4.5, "x", 0)]
    for key, score, color, flag in rows:
        store.put(("f",), key, {"score": score, "color": color, "flag": flag,
                                "meta": {"kind": color[0]}})  # fmt: skip

    def keys(flt: dict[str, Any]) -> list[str]:
        return sorted(_keys(store.search(("f",), filter=flt)))

    assert keys({"color": "red"}) == ["a", "c"]
    assert keys({"color": {"$eq": "red"}, "score": {"$gte": 2}}) == ["c"]
    assert keys({"color": {"$ne": "red"}}) == ["b", "d"]
    assert keys({"score": {"$gt": 2}}) == ["c", "d"]
    assert keys({"score": {"$lt": 2}}) == ["a"]
    assert keys({"score": {"$lte": 3, "$gt": 1}}) == ["b", "c"]
    assert keys({"flag": True}) == ["a"]  # JSON true is not 1
    assert keys({"flag": 1}) == ["c"]
    assert keys({"meta": {"kind": "b"}}) == ["b"]
    assert keys({"missing": {"$gt": 0}}) == []
    assert keys({"color": {"$gt": "m"}}) == ["a", "c", "d"]  # strings compare as strings
    assert _keys(store.search(("f",), query="red", filter={"score": {"$gt": 2}})) == ["c"]


def test_prefix_limit_and_offset(store: MemchenticStore) -> None:
    for i in range(5):
        store.put(("a", "b"), f"ab{i}", {"i": i})
    store.put(("a", "c"), "ac", {"i": 9})
    store.put(("b",), "b", {"i": 9})
    store.put(("ab",), "not-a-prefix", {"i": 9})
    assert _keys(store.search(("a", "b"))) == [f"ab{i}" for i in range(5)]  # oldest first
    assert _keys(store.search(("a",))) == [*(f"ab{i}" for i in range(5)), "ac"]
    assert len(store.search(())) == 8
    assert _keys(store.search(("a", "b"), limit=2)) == ["ab0", "ab1"]
    assert _keys(store.search(("a", "b"), limit=2, offset=3)) == ["ab3", "ab4"]
    assert _keys(store.search(("a",), filter={"i": {"$gte": 3}}, offset=1)) == ["ab4", "ac"]
    assert store.search(("a", "b"), limit=0) == []
    assert store.search(("zzz",)) == []
    ranked = store.search(("a", "b"), query="i", limit=2, offset=1)
    assert len(ranked) == 2 and all(h.namespace == ("a", "b") for h in ranked)


def test_list_namespaces_prefix_suffix_and_depth(store: MemchenticStore) -> None:
    spaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
              ("a", "c", "f"), ("b", "a", "f"), ("users", "123")]  # fmt: skip
    for i, ns in enumerate(spaces):
        store.put(ns, f"k{i}", {"i": i})
        store.put(ns, f"again{i}", {"i": i})  # two items: one namespace
    assert store.list_namespaces() == sorted(spaces)
    assert store.list_namespaces(prefix=("a", "b")) == sorted(spaces[:4])
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"),
                                                        ("b", "a", "f")]  # fmt: skip
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")
    ]  # fmt: skip
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), offset=3) == [("a", "b", "f")]
    assert store.list_namespaces(prefix=("nope",)) == []


def test_async_twins_give_the_same_results(mem: Memory) -> None:
    sync = MemchenticStore(mem, namespace="user:sam")
    twin = MemchenticStore(AsyncMemory(mem), namespace="user:sam")

    async def run() -> list[Any]:
        await twin.aput(("n",), "k1", {"text": "Sam moved to Porto in May"})
        await asyncio.gather(
            twin.aput(("n",), "k2", {"text": "Sam plays the cello"}),
            twin.aput(("n", "deep"), "k3", {"text": "Sam's cat is called Miso"}),
        )
        await twin.aput(("n",), "gone", {"text": "temporary"})
        await twin.adelete(("n",), "gone")
        return [
            await twin.aget(("n",), "k1"),
            await twin.asearch(("n",), query="did Sam move to Porto?"),
            await twin.asearch(("n",), filter={"text": "Sam plays the cello"}),
            await twin.alist_namespaces(prefix=("n",)),
            await twin.aget(("n",), "gone"),
        ]

    got = asyncio.run(run())
    want = [
        sync.get(("n",), "k1"),
        sync.search(("n",), query="did Sam move to Porto?"),
        sync.search(("n",), filter={"text": "Sam plays the cello"}),
        sync.list_namespaces(prefix=("n",)),
        None,
    ]
    assert got == want
    assert got[1][0].key == "k1" and len(got[1]) == 3  # scores differ: a search is a recall


def test_another_identity_cannot_read_or_write_the_items(mem: Memory) -> None:
    alice = MemchenticStore(mem.as_identity("alice"))
    assert alice.namespace == "user:alice"
    alice.put(("private",), "diary", {"text": "Alice's secret plan for the party"})
    bob_view = mem.as_identity("bob")
    prying = MemchenticStore(bob_view, namespace="user:alice")
    assert prying.get(("private",), "diary") is None
    assert prying.search(("private",)) == []
    assert prying.search(("private",), query="secret plan party") == []
    assert prying.list_namespaces() == []
    with pytest.raises(NamespaceError):
        prying.put(("private",), "diary", {"text": "overwritten"})
    prying.delete(("private",), "diary")  # what he cannot see is not there to delete
    bob = MemchenticStore(bob_view)
    assert bob.namespace == "user:bob" and bob.search(()) == [] and bob.list_namespaces() == []
    assert alice.get(("private",), "diary") is not None  # untouched


def test_memories_that_are_not_items_stay_out(mem: Memory, store: MemchenticStore) -> None:
    mem.add("Bob is allergic to peanuts", namespace=store.namespace)
    store.put(("kb",), "k", {"text": "Bob likes hiking"})
    assert _keys(store.search(())) == ["k"]
    assert _keys(store.search(("kb",), query="Bob allergic peanuts")) == ["k"]
    assert store.list_namespaces() == [("kb",)]


def test_index_fields_and_unindexed_items(mem: Memory) -> None:
    store = MemchenticStore(mem, index={"fields": ["title", "tags[*]"]})
    store.put(("d",), "k1", {"title": "Kubernetes upgrade", "tags": ["ops", "cluster"], "x": 1})
    store.put(("d",), "blob", {"title": "Kubernetes raw dump"}, index=False)
    store.put(("d",), "other", {"body": "no indexed field"})
    texts = {r.metadata[METADATA_KEY]["key"]: r.content for r in mem.list()}
    assert texts["k1"] == "Kubernetes upgrade\nops\ncluster"
    assert texts["blob"] == "blob" and texts["other"] == "other"  # nothing to embed: the key
    hits = store.search(("d",), query="kubernetes cluster upgrade")
    assert hits[0].key == "k1" and hits[0].score is not None
    assert {h.key for h in hits[1:]} == {"blob", "other"}  # unindexed: fill, unscored
    assert all(h.score is None for h in hits[1:])
    assert _keys(store.search(("d",), query="kubernetes", limit=1)) == ["k1"]
    store.put(("d",), "k2", {"body": "later"}, index=["body"])
    assert "later" in {r.content for r in mem.list()}


def test_langmem_items_are_indexed_in_a_store_configured_for_text(mem: Memory) -> None:
    """LangMem writes ``{"content": ...}``; a store set up with ``fields: ["text"]``
    (the docs' first example) indexes their content rather than keeping them unindexed
    (issue 45, item 7). A put that names its own paths, or ``index=False``, is obeyed."""
    store = MemchenticStore(mem, index={"fields": ["text"]})
    ns = ("memories", "u1")
    store.put(ns, "m1", {"content": "User's favourite editor is Helix"})
    store.put(ns, "m2", {"content": "User drinks green tea"})
    store.put(ns, "t1", {"text": "The deploy is on Thursday", "content": "not this"})
    store.put(ns, "own", {"content": "User owns a red bike"}, index=["text"])
    store.put(ns, "off", {"content": "User plays chess"}, index=False)
    texts = {r.metadata[METADATA_KEY]["key"]: (r.content, r.tags) for r in mem.list()}
    assert texts["m1"][0] == "User's favourite editor is Helix"
    assert texts["t1"][0] == "The deploy is on Thursday"  # the configured field first
    assert texts["own"][0] == "own" and texts["off"][0] == "off"  # unindexed: the key
    assert "langgraph:unindexed" not in texts["m1"][1]
    hits = store.search(ns, query="favourite editor")
    assert hits[0].key == "m1" and hits[0].score is not None


def test_batch_runs_in_order_and_the_last_put_of_a_key_wins(
    mem: Memory, store: MemchenticStore
) -> None:
    results = store.batch([
        PutOp(("b",), "k", {"v": 1}),
        PutOp(("b",), "k", {"v": 2}),
        PutOp(("b",), "j", {"v": 3}),
        GetOp(("b",), "k"),
        SearchOp(("b",), filter={"v": {"$gt": 1}}),
        PutOp(("b",), "j", None),
        ListNamespacesOp(),
        GetOp(("b",), "j"),
    ])  # fmt: skip
    assert results[:3] == [None, None, None] and results[5] is None
    got = results[3]
    assert isinstance(got, Item) and got.value == {"v": 2}
    assert sorted(_keys(results[4])) == ["j", "k"]  # type: ignore[arg-type]
    assert results[6] == [("b",)] and results[7] is None
    assert len(mem.list()) == 1


def test_bad_input_is_a_clear_error_naming_the_field(store: MemchenticStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="namespace"):
        store.batch([PutOp(["a", "b"], "k", {"v": 1})])  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError, match="namespace"):
        store.get("users", "k")  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"v": 1})])
    for value in (["not", "a", "dict"], "text", 3):
        with pytest.raises(ValidationError) as err:
            store.put(("a",), "k", value)  # type: ignore[arg-type]
        assert err.value.field == "value"
    with pytest.raises(ValidationError) as err:
        store.put(("a",), "k", {"when": object()})
    assert err.value.field == "value"
    with pytest.raises(ValidationError) as err:
        store.put(("a",), "k", {"blob": "x" * 70_000})  # over MAX_METADATA_BYTES
    assert err.value.field == "value" and "bytes" in str(err.value)
    with pytest.raises(ValidationError) as err:
        store.search(("a",), filter={"v": {"$regex": "x"}})
    assert err.value.field == "filter"
    with pytest.raises(ValidationError) as err:
        store.search(("a",), limit=-1)
    assert err.value.field == "limit"
    with pytest.raises(ValidationError) as err:
        store.batch([PutOp(("a",), "", {"v": 1})])
    assert err.value.field == "key"
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("a",), "k", {"v": 1}, ttl=5)
    with pytest.raises(ValidationError) as err:
        MemchenticStore(store.memory, namespace="user:x", user_id="x")
    assert err.value.field == "user_id"
    assert store.search(()) == []  # nothing was written by the refused calls


def test_a_secret_in_a_value_is_refused(store: MemchenticStore) -> None:
    with pytest.raises(ValidationError) as err:
        store.put(("a",), "k", {"text": "the key is sk-proj-" + "Ab3xQ9zT" * 6})
    assert err.value.field == "value" and "refused" in str(err.value)
    assert store.get(("a",), "k") is None


def test_an_agent_loop_of_manage_and_search(store: MemchenticStore) -> None:
    """The sequence LangMem's manage and search tools run: create, search, update by
    id, delete by id, search again."""
    ns = ("memories", "user-1")
    ids = {}
    for key, text in [("m1", "User prefers dark mode"), ("m2", "User lives in Lisbon"),
                      ("m3", "User's dog is named Rex")]:  # fmt: skip
        store.put(ns, key, {"content": text})
        ids[text] = key
    assert store.search(ns, query="the city the user lives in")[0].key == "m2"
    store.put(ns, "m2", {"content": "User lives in Porto now"})  # update
    hits = store.search(ns, query="the city the user lives in")
    assert hits[0].key == "m2" and hits[0].value == {"content": "User lives in Porto now"}
    assert len(hits) == 3
    store.delete(ns, "m3")
    assert "m3" not in _keys(store.search(ns, query="the dog named Rex"))
    assert sorted(_keys(store.search(ns))) == ["m1", "m2"]
    assert store.list_namespaces(prefix=("memories",)) == [ns]


def test_langmem_tools_on_the_store(store: MemchenticStore) -> None:
    tools = pytest.importorskip("langmem")
    manage = tools.create_manage_memory_tool(namespace=("memories", "u1"), store=store)
    search = tools.create_search_memory_tool(namespace=("memories", "u1"), store=store)
    said = manage.invoke({"content": "User's favourite editor is Helix", "action": "create"})
    key = said.split()[-1]
    manage.invoke({"content": "User likes long walks on the beach", "action": "create"})
    found = json.loads(search.invoke({"query": "favourite editor"}))
    assert found[0]["key"] == key and found[0]["value"] == {
        "content": "User's favourite editor is Helix"
    }  # fmt: skip
    manage.invoke({"content": "User's favourite editor is Zed", "action": "update", "id": key})
    assert store.get(("memories", "u1"), key).value == {  # type: ignore[union-attr]
        "content": "User's favourite editor is Zed"
    }  # fmt: skip
    manage.invoke({"action": "delete", "id": key})
    assert store.get(("memories", "u1"), key) is None
    assert len(json.loads(search.invoke({"query": "editor"}))) == 1

    async def arun() -> list[Any]:
        await manage.ainvoke({"content": "User drinks green tea", "action": "create"})
        return json.loads(await search.ainvoke({"query": "green tea"}))

    assert asyncio.run(arun())[0]["value"] == {"content": "User drinks green tea"}


@pytest.mark.slow
def test_a_paraphrase_finds_the_item_with_the_local_model(local_mem: Memory) -> None:
    """With MiniLM a question finds the item that answers it in other words, as a
    LangMem agent's search tool asks (the default index: the value's JSON)."""
    store = MemchenticStore(local_mem, user_id="ana")
    ns = ("memories", "ana")
    store.put(ns, "m1", {"content": "Ana relocated to Porto last spring"})
    store.put(ns, "m2", {"content": "Ana's favourite drink is green tea"})
    store.put(ns, "m3", {"content": "Ana is learning to play the cello"})
    assert store.search(ns, query="Which city does she live in?")[0].key == "m1"
    assert store.search(ns, query="What does she like to drink?")[0].key == "m2"
    assert store.search(ns, query="musical instrument")[0].key == "m3"
