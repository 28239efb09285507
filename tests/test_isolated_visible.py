"""The rows an isolated search may see, kept between searches while nothing changed
(``store/isolated_cache.py``: :meth:`VisibleState.visible`; issue 36, item 4), and
the keyword documents kept while the memory log names no change of their row.

What must hold: the kept rows are those the filter's statement reads, in its order;
any write of a memory (by this store, another ``Memory`` on the file, another
process), a clock that reaches an expiry or goes back, a filter that differs in
any field, or one that reads another table, reads them again; the answers are
those of the rows read afresh, to the bit.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memchentic import Memory
from memchentic.clock import utcnow
from memchentic.store.base import MemoryFilter
from memchentic.store.sqlite_isolated import K1, B, _bm25

TOPICS = ("green tea", "the staging database", "the login page", "rate limits", "dark mode",
          "the billing service", "the release notes", "unit tests")  # fmt: skip
QUERIES = ("green tea", "who fixed the login page", "rate limits staging", "billing notes")
#: What the statement reading a filter's rows begins with (the keys, ids, expiry).
READ = "SELECT json_group_array(k), json_group_array(i), min(e)"


def _texts(who: str, n: int, offset: int = 0) -> list[str]:
    return [
        f"{who} note {i}: {TOPICS[i % len(TOPICS)]} and {TOPICS[(i * 3) % len(TOPICS)]}"
        for i in range(offset, offset + n)
    ]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    """alice (600 memories: her keyword stage goes through the index), bob (40) and
    a group core of both (50, by alice)."""
    mem = Memory(store=str(tmp_path / "memory.db"), embedder="hash")
    mem.directory.create_identity("alice")
    mem.directory.create_identity("bob")
    mem.directory.create_group("core", admins=["alice"], members=["bob"])
    mem.for_identity("alice").add_many(_texts("alice", 600), on_duplicate="keep")
    mem.for_identity("bob").add_many(_texts("bob", 40), on_duplicate="keep")
    mem.for_identity("alice").add_many(_texts("core", 50), namespace="group:core",
                                       on_duplicate="keep")  # fmt: skip
    yield mem
    mem.close()


def _filter(mem: Memory, identity: str, **scope: Any) -> MemoryFilter:
    return mem.for_identity(identity)._read_filter(  # type: ignore[attr-defined]
        user_id=None, agent_id=None, namespace=scope.get("namespace"), now=utcnow()
    )


def _stages(mem: Memory, flt: MemoryFilter, query: str, k: int = 15) -> tuple[Any, Any]:
    store: Any = mem.store
    vector = mem.embedder.embed(query)
    return store.vector_search(vector, k, flt), store.keyword_search(query, k, flt)


def _fresh(mem: Memory, flt: MemoryFilter, query: str, k: int = 15) -> tuple[Any, Any]:
    """The stages with every row read afresh (inside a transaction nothing is cached)."""
    store: Any = mem.store
    with store.write():
        return _stages(mem, flt, query, k)


def _reads(mem: Memory, run: Any) -> list[str]:
    """The statements reading a filter's rows while ``run()`` runs."""
    statements: list[str] = []
    conn = mem.store.conn  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return [s for s in statements if s.startswith(READ)]


def test_the_rows_are_those_of_the_statement_in_its_order(mem: Memory):
    store: Any = mem.store
    for who in ("alice", "bob"):
        flt = _filter(mem, who)
        state = store._visible_state(flt)
        found = store._visible(state, flt, 100_000)
        cond, params = _where(flt)
        rows = store.conn.execute(f"SELECT m.rowid, m.id FROM memories m WHERE {cond}",
                                  params).fetchall()  # fmt: skip
        assert found.keys == [r[0] for r in rows] and found.ids == [r[1] for r in rows]
        assert len(set(found.keys)) == len(rows) > 0


def _where(flt: MemoryFilter) -> tuple[str, list[Any]]:
    from memchentic.store.sqlite_rows import where

    return where(flt)


def test_nothing_changed_no_read_and_the_same_answers(mem: Memory):
    flt = _filter(mem, "bob")
    first = _stages(mem, flt, "green tea")
    later = replace(flt, now=flt.now + timedelta(seconds=5))  # type: ignore[operator]
    assert not _reads(mem, lambda: _stages(mem, later, "green tea"))
    for query in QUERIES:
        assert _stages(mem, later, query) == _fresh(mem, later, query)
    assert first == _stages(mem, later, "green tea")


def test_any_write_of_a_memory_reads_the_rows_again(mem: Memory, tmp_path: Path):
    flt = _filter(mem, "bob")
    _stages(mem, flt, "green tea")
    alice = mem.for_identity("alice")
    alice.add("alice keeps a green tea kettle")  # another namespace: read again all the same
    assert _reads(mem, lambda: _stages(mem, flt, "green tea"))
    assert not _reads(mem, lambda: _stages(mem, flt, "green tea"))
    with Memory(store=str(tmp_path / "memory.db"), embedder="hash") as other:
        added = other.for_identity("bob").add("bob's green tea comes from a kiosk").memory
    assert _reads(mem, lambda: _stages(mem, flt, "green tea kiosk"))
    vector_hits, keyword_hits = _stages(mem, flt, "green tea kiosk")
    assert keyword_hits[0][0] == added.id
    assert (vector_hits, keyword_hits) == _fresh(mem, flt, "green tea kiosk")


def test_a_write_by_another_process_is_seen(mem: Memory, tmp_path: Path):
    flt = _filter(mem, "bob")
    gone = _stages(mem, flt, "rate limits")[1][0][0]
    script = (
        "import sys; from memchentic import Memory\n"
        "with Memory(store=sys.argv[1], embedder='hash') as m:\n"
        "    m.for_identity('bob').delete(sys.argv[2])\n"
        "    m.for_identity('bob').add('bob tunes the rate limits of the lighthouse')\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "memory.db"), gone],
                   check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    vector_hits, keyword_hits = _stages(mem, flt, "rate limits lighthouse")
    assert gone not in {h for h, _ in vector_hits + keyword_hits}
    assert (vector_hits, keyword_hits) == _fresh(mem, flt, "rate limits lighthouse")


def test_the_clock_reaching_an_expiry_or_going_back_reads_again(mem: Memory):
    bob = mem.for_identity("bob")
    brief = bob.add("bob's parking permit for the green tea shop", ttl_days=1).memory
    flt = _filter(mem, "bob")
    assert brief.id in {h for h, _ in _stages(mem, flt, "parking permit")[1]}
    assert not _reads(mem, lambda: _stages(mem, flt, "parking permit"))
    later = replace(flt, now=utcnow() + timedelta(days=2))
    assert _reads(mem, lambda: _stages(mem, later, "parking permit"))
    hits = _stages(mem, later, "parking permit")
    assert brief.id not in {h for h, _ in hits[0] + hits[1]}
    assert hits == _fresh(mem, later, "parking permit")
    # back to a time before the expiry: the row is visible again
    assert _reads(mem, lambda: _stages(mem, flt, "parking permit"))
    assert brief.id in {h for h, _ in _stages(mem, flt, "parking permit")[1]}


def test_filters_differing_in_any_field_are_kept_apart(mem: Memory):
    flt = _filter(mem, "bob")
    bob = mem.for_identity("bob")
    tagged = bob.add("bob's tagged green tea note", tags=["tea"]).memory
    narrowed = [
        replace(flt, tags=["tea"]),
        replace(flt, types=["fact"]),
        replace(flt, include_superseded=True),
        replace(flt, include_expired=True),
    ]
    for f in [flt, *narrowed]:
        _stages(mem, f, "green tea")
    for f in [flt, *narrowed]:
        assert _stages(mem, f, "green tea") == _fresh(mem, f, "green tea")
    only_tagged = _stages(mem, narrowed[0], "green tea")
    assert {h for h, _ in only_tagged[0] + only_tagged[1]} == {tagged.id}


def test_a_filter_on_who_wrote_is_never_kept(mem: Memory):
    flt = replace(_filter(mem, "bob"), written_by="user:bob")
    _stages(mem, flt, "green tea")
    assert _reads(mem, lambda: _stages(mem, flt, "green tea"))
    assert _stages(mem, flt, "green tea") == _fresh(mem, flt, "green tea")


def test_kept_rows_never_reach_another_identity(mem: Memory):
    store: Any = mem.store
    alice, bob = _filter(mem, "alice"), _filter(mem, "bob")
    for query in QUERIES:
        _stages(mem, alice, query)
    private = {r[0] for r in store.conn.execute(
        "SELECT id FROM memories WHERE namespace = 'user:alice'")}  # fmt: skip
    for query in QUERIES:
        hits = _stages(mem, bob, query)
        assert not {h for h, _ in hits[0] + hits[1]} & private
        assert hits == _fresh(mem, bob, query)
    state = store._visible_state(bob)
    bobs = {r[0] for r in store.conn.execute(
        "SELECT rowid FROM memories WHERE namespace IN ('user:bob', 'group:core')")}  # fmt: skip
    assert state._visible and state.documents_kept is not None
    for _, visible in state._visible:
        assert set(visible.keys) <= bobs
    assert set(state.documents_kept) <= bobs and set(state.rows) <= bobs


def test_a_revised_text_is_analysed_again(mem: Memory, tmp_path: Path):
    flt = _filter(mem, "alice")  # past the scan: documents kept by log
    before = _stages(mem, flt, "lantern shed")
    target = _stages(mem, flt, "rate limits")[1][0][0]
    with Memory(store=str(tmp_path / "memory.db"), embedder="hash") as other:
        other.for_identity("alice").revise(target, content="alice keeps a lantern in the shed")
    after = _stages(mem, flt, "lantern shed")
    assert after != before and after[1][0][0] == target
    for query in ("lantern shed", *QUERIES):
        assert _stages(mem, flt, query) == _fresh(mem, flt, query)


def test_a_log_that_lost_entries_drops_every_document(mem: Memory, tmp_path: Path):
    store: Any = mem.store
    flt = _filter(mem, "alice")
    _stages(mem, flt, "green tea")
    state = store._visible_state(flt)
    assert state.documents_kept
    target = _stages(mem, flt, "rate limits")[1][0][0]
    with Memory(store=str(tmp_path / "memory.db"), embedder="hash") as other:
        other.for_identity("alice").revise(target, content="alice keeps a lantern in the shed")
        other.for_identity("alice").add("alice's one more note")
        with other.store.write():  # entries lost, as the log's pruning would drop them
            other.store.conn.execute(  # type: ignore[attr-defined]
                "DELETE FROM memory_log WHERE seq > ? AND seq < (SELECT max(seq) FROM memory_log)",
                (state.logged_at[1],),
            )
    assert store._logged_rows(state.logged_at[1], store._memory_mark()[1]) is None
    assert _stages(mem, flt, "lantern shed")[1][0][0] == target
    assert _stages(mem, flt, "lantern shed") == _fresh(mem, flt, "lantern shed")


def test_the_logged_keys_are_read_in_one_step(mem: Memory):
    store: Any = mem.store
    mark = store._memory_mark()
    mem.for_identity("bob").add("bob's one more note")
    keys = store._logged_rows(mark[1], store._memory_mark()[1])
    assert keys and all(isinstance(k, int) for k in keys)
    assert json.loads(json.dumps(keys)) == keys


def _bm25_by_rows(pairs: Any, rows: Any, docs: Any, total: int, k: int) -> Any:
    """BM25 a row at a time (what the isolated keyword stage computed before)."""
    terms = {t for _, t in pairs}
    freqs = Counter(t for doc, _ in docs for t in terms if t in doc)
    avg_len = sum(length for _, length in docs) / len(docs) or 1.0
    idf = {t: math.log(1.0 + (total - freqs[t] + 0.5) / (freqs[t] + 0.5)) for t in terms}
    scored = []
    for (rowid, memory_id), (tf, length) in zip(rows, docs, strict=True):
        norm = K1 * (1 - B + B * length / avg_len)
        score = sum(idf[t] * tf[t] * (K1 + 1) / (tf[t] + norm) for t in terms if t in tf)
        scored.append((score, rowid, memory_id))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [(memory_id, score) for score, _, memory_id in scored[:k]]


def test_bm25_by_terms_is_bm25_by_rows_to_the_bit():
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(12)]
    for trial in range(200):
        n = rng.randrange(1, 60)
        docs = []
        for _ in range(n):
            doc = {t: rng.choice((1.0, 2.0, 3.0, 2.5, 0.0)) for t in rng.sample(vocabulary, 4)}
            docs.append((doc, rng.randrange(1, 40)))
        if trial % 7 == 0:
            docs[0] = ({}, 3)  # matched, yet none of the query's terms (score 0)
            docs[-1] = (dict(docs[-2][0]), docs[-2][1]) if n > 1 else docs[-1]  # a tie
        rows = [(1000 - i, f"id{i}") for i in range(n)]
        pairs = [(t, t) for t in rng.sample(vocabulary, rng.randrange(1, 5))]
        total = n + rng.randrange(0, 500)
        k = rng.randrange(1, 70)
        got = _bm25(pairs, rows, docs, total, k)
        want = _bm25_by_rows(pairs, rows, docs, total, k)
        assert got == want and [type(s) for _, s in got] == [type(s) for _, s in want]


def test_a_small_scope_is_matched_from_kept_words_without_reading_its_text(
    mem: Memory, tmp_path: Path
):
    flt = _filter(mem, "bob")  # 90 rows: matched here, not through the index
    _stages(mem, flt, "green tea")
    statements: list[str] = []
    conn = mem.store.conn  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    warm = _stages(mem, flt, "green tea")
    conn.set_trace_callback(None)
    assert not [s for s in statements if "m.content" in s or "memories_fts" in s]
    assert warm == _fresh(mem, flt, "green tea")
    target = _stages(mem, flt, "rate limits")[1][0][0]
    with Memory(store=str(tmp_path / "memory.db"), embedder="hash") as other:
        other.for_identity("bob").revise(target, content="bob keeps a lantern in the shed")
    assert _stages(mem, flt, "lantern shed")[1][0][0] == target
    for query in ("lantern shed", *QUERIES):
        assert _stages(mem, flt, query) == _fresh(mem, flt, query)
