"""The SQLite store's cache of isolated searches (``store/isolated_cache.py``; issue 36,
item 4): an untrusted caller's vectors and keyword documents kept between searches,
per set of namespaces.

What must hold: the answers are exactly those computed from the rows read afresh
(scores to the bit); a write by anyone (this store, another ``Memory`` on the same
file, another process) is seen by the next search; what a state holds never
reaches a caller of other namespaces; a revoked membership or grant takes effect at
once, whatever the cache holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memchentic import Memory
from memchentic.clock import utcnow
from memchentic.store.base import MemoryFilter
from memchentic.store.isolated_cache import IsolatedCache

TOPICS = ("green tea", "the staging database", "the login page", "rate limits", "dark mode",
          "the billing service", "the release notes", "unit tests")  # fmt: skip
QUERIES = ("green tea", "who fixed the login page", "rate limits staging", "billing notes")


def _texts(who: str, n: int, offset: int = 0) -> list[str]:
    return [
        f"{who} note {i}: {TOPICS[i % len(TOPICS)]} and {TOPICS[(i * 3) % len(TOPICS)]}"
        for i in range(offset, offset + n)
    ]


def _filter(mem: Memory, identity: str, **scope: Any) -> MemoryFilter:
    view = mem.for_identity(identity)
    return view._read_filter(  # type: ignore[attr-defined]
        user_id=scope.get("user_id"), agent_id=None, namespace=scope.get("namespace"),
        now=utcnow(),
    )  # fmt: skip


def _stages(mem: Memory, flt: MemoryFilter, query: str, k: int = 15) -> tuple[Any, Any]:
    """The vector and keyword stages' hits for ``flt`` through the cache."""
    store: Any = mem.store
    vector = mem.embedder.embed(query)
    return store.vector_search(vector, k, flt), store.keyword_search(query, k, flt)


def _fresh(mem: Memory, flt: MemoryFilter, query: str, k: int = 15) -> tuple[Any, Any]:
    """The same stages with every row read afresh: inside a transaction the cache is
    not used."""
    store: Any = mem.store
    vector = mem.embedder.embed(query)
    with store.write():
        assert store._visible_state(flt) is None
        return store.vector_search(vector, k, flt), store.keyword_search(query, k, flt)


def _states(mem: Memory) -> IsolatedCache:
    cache: IsolatedCache = mem.store.__dict__["_isolated_cache"]
    return cache


def _rowids(mem: Memory, namespaces: list[str]) -> set[int]:
    conn = mem.store.conn  # type: ignore[attr-defined]
    marks = ", ".join("?" * len(namespaces))
    rows = conn.execute(f"SELECT rowid FROM memories WHERE namespace IN ({marks})", namespaces)
    return {r[0] for r in rows}


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Memory]:
    """alice (700 memories: past SEARCH_ISOLATED_SCAN_ROWS, so her keyword stage
    goes through the index), bob (60) and a group core of both (80, by alice)."""
    mem = Memory(store=str(tmp_path / "memory.db"), embedder="hash")
    mem.directory.create_identity("alice")
    mem.directory.create_identity("bob")
    mem.directory.create_group("core", admins=["alice"], members=["bob"])
    alice, bob = mem.for_identity("alice"), mem.for_identity("bob")
    alice.add_many(_texts("alice", 700), on_duplicate="keep")
    bob.add_many(_texts("bob", 60), on_duplicate="keep")
    alice.add_many(_texts("core", 80), namespace="group:core", on_duplicate="keep")
    yield mem
    mem.close()


def test_cached_answers_are_those_of_the_rows_read_afresh(shared: Memory):
    for who in ("alice", "bob"):
        flt = _filter(shared, who)
        for query in QUERIES:
            for _ in range(2):  # the first fills the state, the second reads it
                cached = _stages(shared, flt, query)
                assert cached == _fresh(shared, flt, query), (who, query)  # to the bit
                assert cached[0] and cached[1]


def test_a_state_holds_only_rows_of_its_namespaces(shared: Memory):
    for who in ("alice", "bob"):
        for query in QUERIES:
            _stages(shared, _filter(shared, who), query)
    _stages(shared, _filter(shared, "bob", namespace="user:bob"), "green tea")
    cache = _states(shared)
    assert len(cache) == 3
    for namespaces, state in cache._states.items():
        allowed = _rowids(shared, list(namespaces))
        assert state.rows and set(state.rows) <= allowed, namespaces
        for kind, kept in state.kept.items():
            assert set(kept) <= allowed, (namespaces, kind)
        assert set(state.documents_kept) <= allowed, namespaces
        for _, visible in state._visible:
            assert set(visible.keys) <= allowed, namespaces
        assert state.documents_kept or state.kept.get("words"), namespaces
    bob_only = cache._states[("user:bob",)]
    assert set(bob_only.rows) == _rowids(shared, ["user:bob"])


def test_bob_never_gets_what_alice_warmed(shared: Memory):
    alice_flt, bob_flt = _filter(shared, "alice"), _filter(shared, "bob")
    for query in QUERIES:
        _stages(shared, alice_flt, query)
    alice_private = {r.id for r in shared.for_identity("alice").list(limit=1000)
                     if r.namespace == "user:alice"}  # fmt: skip
    for query in QUERIES:
        vector_hits, keyword_hits = _stages(shared, bob_flt, query)
        assert not {h for h, _ in vector_hits + keyword_hits} & alice_private
        assert (vector_hits, keyword_hits) == _fresh(shared, bob_flt, query)


def test_a_removed_member_loses_the_group_at_once(shared: Memory):
    bob = shared.for_identity("bob")
    before = {h.memory.namespace for h in bob.search("core note green tea", limit=50)}
    assert "group:core" in before
    shared.directory.remove_member("group:core", "bob")
    after = bob.search("core note green tea", limit=50)
    assert after and {h.memory.namespace for h in after} == {"user:bob"}


def test_a_revoked_grant_takes_effect_at_once(tmp_path: Path):
    with Memory(store=str(tmp_path / "m.db"), embedder="hash") as mem:
        for name in ("alice", "bob", "dave"):
            mem.directory.create_identity(name)
        mem.directory.create_org("acme", admins=["alice"], members=["bob"])
        alice = mem.for_identity("alice")
        alice.add_many(_texts("shared", 30), namespace="federated:acme:alice")
        mem.directory.grant("federated:acme:alice", "dave")
        dave = mem.for_identity("dave")
        assert dave.search("shared note green tea", limit=5)
        mem.directory.revoke("federated:acme:alice", "dave")
        assert dave.search("shared note green tea", limit=5) == []


def test_writes_through_another_memory_on_the_same_file_are_seen(shared: Memory, tmp_path: Path):
    flt = _filter(shared, "bob")
    for query in QUERIES:
        _stages(shared, flt, query)
    with Memory(store=str(tmp_path / "memory.db"), embedder="hash") as other:
        bob = other.for_identity("bob")
        first = bob.search("green tea", limit=3)[0].memory
        bob.delete(first.id)
        revised = bob.search("rate limits", limit=1)[0].memory
        bob.revise(revised.id, content="bob keeps a lantern in the shed")
        added = bob.add("bob's kettle whistles at green tea time").memory
    for query in (*QUERIES, "lantern shed", "kettle whistles"):
        vector_hits, keyword_hits = _stages(shared, flt, query)
        assert (vector_hits, keyword_hits) == _fresh(shared, flt, query), query
        assert first.id not in {h for h, _ in vector_hits + keyword_hits}
    assert _stages(shared, flt, "lantern shed")[1][0][0] == revised.id
    assert added.id in {h for h, _ in _stages(shared, flt, "kettle whistles")[0]}


def test_a_delete_by_another_process_is_seen(shared: Memory, tmp_path: Path):
    flt = _filter(shared, "bob")
    hits = _stages(shared, flt, "green tea")[0]
    gone = hits[0][0]
    script = (
        "import sys; from memchentic import Memory\n"
        "with Memory(store=sys.argv[1], embedder='hash') as m:\n"
        "    m.for_identity('bob').delete(sys.argv[2])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "memory.db"), gone],
                   check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    vector_hits, keyword_hits = _stages(shared, flt, "green tea")
    assert gone not in {h for h, _ in vector_hits + keyword_hits}
    assert (vector_hits, keyword_hits) == _fresh(shared, flt, "green tea")


def test_a_rolled_back_write_leaves_no_trace(shared: Memory):
    flt = _filter(shared, "bob")
    store: Any = shared.store
    _stages(shared, flt, "green tea")
    bob = shared.for_identity("bob")

    class Undo(Exception):
        pass

    with pytest.raises(Undo), store.write():
        bob.add("bob writes about a phantom lighthouse")
        assert _stages(shared, flt, "phantom lighthouse")[1]  # seen inside, uncached
        raise Undo
    assert not _stages(shared, flt, "phantom lighthouse")[1]
    kept = bob.add("bob writes about a real lighthouse").memory  # reuses the log's numbers
    vector_hits, keyword_hits = _stages(shared, flt, "real lighthouse")
    assert kept.id == keyword_hits[0][0]
    assert (vector_hits, keyword_hits) == _fresh(shared, flt, "real lighthouse")


def test_expired_rows_leave_the_cached_answers(shared: Memory):
    bob = shared.for_identity("bob")
    brief = bob.add("bob's parking permit for the green tea shop", ttl_days=1).memory
    flt = _filter(shared, "bob")
    assert brief.id in {h for h, _ in _stages(shared, flt, "parking permit")[1]}
    later = replace(flt, now=utcnow() + timedelta(days=2))
    vector_hits, keyword_hits = _stages(shared, later, "parking permit")
    assert brief.id not in {h for h, _ in vector_hits + keyword_hits}


def test_concurrent_searches_and_writes_end_consistent(shared: Memory):
    flt = _filter(shared, "bob")
    bob = shared.for_identity("bob")
    failures: list[BaseException] = []
    stop = threading.Event()

    def searcher() -> None:
        try:
            while not stop.is_set():
                for query in QUERIES:
                    _stages(shared, flt, query)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    added = [bob.add(text).memory.id for text in _texts("bob", 25, offset=1000)]
    for memory_id in added[::3]:
        bob.delete(memory_id)
    stop.set()
    for t in threads:
        t.join()
    assert not failures
    for query in QUERIES:
        assert _stages(shared, flt, query) == _fresh(shared, flt, query)


def test_the_cache_keeps_to_its_budget(shared: Memory):
    store: Any = shared.store
    store.__dict__["_isolated_cache"] = IsolatedCache(budget=100)
    for who in ("bob", "alice"):
        _stages(shared, _filter(shared, who), "green tea")
    cache = _states(shared)
    assert list(cache._states) == [("group:core", "user:alice")]  # bob's dropped
    flt = _filter(shared, "bob")
    assert _stages(shared, flt, "green tea") == _fresh(shared, flt, "green tea")


def test_vectors_of_another_model_replace_the_held_ones(shared: Memory):
    flt = _filter(shared, "bob")
    _stages(shared, flt, "green tea")
    store: Any = shared.store
    rows = store.conn.execute(
        "SELECT m.id FROM memories m WHERE m.namespace = 'user:bob'"
    ).fetchall()
    rng = np.random.default_rng(3)
    dim = shared.embedder.dimension
    store.replace_vectors({r[0]: rng.standard_normal(dim).astype(np.float32) for r in rows})
    vector = rng.standard_normal(dim).astype(np.float32)
    assert store.vector_search(vector, 10, flt) == _fresh_vectors(shared, flt, vector)


def _fresh_vectors(mem: Memory, flt: MemoryFilter, vector: np.ndarray) -> Any:
    store: Any = mem.store
    with store.write():
        return store.vector_search(vector, 10, flt)


def test_a_row_without_a_vector_is_left_out_as_before(shared: Memory):
    flt = _filter(shared, "bob")
    store: Any = shared.store
    first = _stages(shared, flt, "green tea")[0][0][0]
    with store.write():  # a damaged store: a memory without its vector
        store.conn.execute(
            "DELETE FROM vectors WHERE rowid = (SELECT rowid FROM memories WHERE id = ?)",
            (first,),
        )
    vector_hits, keyword_hits = _stages(shared, flt, "green tea")
    assert first not in {h for h, _ in vector_hits}
    assert (vector_hits, keyword_hits) == _fresh(shared, flt, "green tea")


def test_a_namespace_emptied_by_another_memory_is_gone_at_once(shared: Memory, tmp_path: Path):
    bob = shared.for_identity("bob")
    assert "group:core" in {h.memory.namespace for h in bob.search("core note", limit=50)}
    with Memory(store=str(tmp_path / "memory.db"), embedder="hash") as other:
        assert other.delete_all(namespace="group:core") == 80
    flt = _filter(shared, "bob")
    for query in ("core note", *QUERIES):
        assert _stages(shared, flt, query) == _fresh(shared, flt, query)
    assert {h.memory.namespace for h in bob.search("core note", limit=50)} == {"user:bob"}


def test_an_inactive_org_member_loses_the_org_at_once(tmp_path: Path):
    with Memory(store=str(tmp_path / "m.db"), embedder="hash") as mem:
        for name in ("alice", "bob"):
            mem.directory.create_identity(name)
        mem.directory.create_org("acme", admins=["alice"], members=["bob"])
        mem.for_identity("alice").add_many(_texts("acme", 30), namespace="org:acme")
        bob = mem.for_identity("bob")
        assert bob.search("acme note green tea", limit=5)
        mem.directory.set_active("org:acme", "bob", False)
        assert bob.search("acme note green tea", limit=5) == []


def test_the_keyword_stage_reuses_the_vector_stage_count_only_while_nothing_changed(
    shared: Memory, tmp_path: Path
):
    store: Any = shared.store
    flt = _filter(shared, "alice")  # past SEARCH_ISOLATED_SCAN_ROWS: the count matters
    statements: list[str] = []
    store.vector_search(shared.embedder.embed("green tea"), 10, flt)
    store.conn.set_trace_callback(statements.append)
    reused = store.keyword_search("green tea", 15, flt)
    store.conn.set_trace_callback(None)
    assert not [s for s in statements if "COUNT(*)" in s]
    assert reused == _fresh(shared, flt, "green tea")[1]

    store.vector_search(shared.embedder.embed("green tea"), 10, flt)
    with Memory(store=str(tmp_path / "memory.db"), embedder="hash") as other:
        other.for_identity("alice").add_many(_texts("alice", 40, offset=5000))
    statements.clear()
    store.conn.set_trace_callback(statements.append)
    counted = store.keyword_search("green tea", 15, flt)
    store.conn.set_trace_callback(None)
    assert [s for s in statements if "COUNT(*)" in s]  # another connection committed
    assert counted == _fresh(shared, flt, "green tea")[1] != reused
