"""The keyword stage's work for an untrusted caller depends only on what it may see
(issue 20, item 17: a search by bob for a word frequent in alice's memories was
measurably slower, because the shared keyword index walked alice's matches).

Tested structurally, not by the clock: the rows the stage reads, whether it goes
through the shared index at all (SQLite: no statement touches ``memories_fts``;
PostgreSQL: the plan never uses the ``tsvector`` index), and the answers, with and
without a flood of matching memories in another namespace.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

import pytest

from memchentic import Memory, Settings
from memchentic.clock import utcnow


def _filler(rnd: random.Random, n: int) -> str:
    return " ".join("".join(rnd.choice("bcdfghjklmnpqrstvwz") for _ in range(6)) for _ in range(n))


def _bob_keyword(mem: Memory, query: str) -> tuple[list[tuple[str, float]], int, int]:
    """Bob's keyword-stage hits and the stage's counters (rows scanned, index searches)."""
    bob = mem.for_identity("bob")
    flt = bob._read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
    store: Any = mem.store
    scanned, indexed = store.keyword_rows_scanned, store.keyword_index_searches
    hits = store.keyword_search(query, 30, flt)
    return hits, store.keyword_rows_scanned - scanned, store.keyword_index_searches - indexed


def test_other_namespaces_do_not_change_the_isolated_keyword_work(
    make_mem: Callable[..., Memory], backend: str
):
    mem = make_mem()
    rnd = random.Random(11)
    bob = mem.as_identity("bob")
    alice = mem.as_identity("alice")
    bob.add_many([_filler(rnd, 12) + (" lantern" if i % 4 == 0 else " kettle") for i in range(40)])
    searches = ("lantern", "orchard", "kettle lantern")
    before = {q: _bob_keyword(mem, q) for q in searches}
    assert before["lantern"][0] and not before["orchard"][0]

    statements: list[str] = []
    if backend == "sqlite":
        mem.store.conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    alice.add_many([f"{_filler(rnd, 12)} orchard lantern {i}" for i in range(600)])
    statements.clear()
    after = {q: _bob_keyword(mem, q) for q in searches}
    for query in searches:
        hits, scanned, indexed = after[query]
        assert [h for h, _ in hits] == [h for h, _ in before[query][0]], query
        assert [round(s, 9) for _, s in hits] == [round(s, 9) for _, s in before[query][0]]
        assert scanned == before[query][1] == 40  # bob's rows, whatever alice holds
        assert indexed == 0
    if backend == "sqlite":
        assert statements and not [s for s in statements if "memories_fts" in s]

    # Alice sees more than SEARCH_ISOLATED_SCAN_ROWS rows: she goes through the index
    # (the residual that docs/access.md states), with the same answers as a scan.
    alice_view = mem.for_identity("alice")
    flt = alice_view._read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
    store: Any = mem.store
    indexed = store.keyword_index_searches
    through_index = store.keyword_search("orchard", 10, flt)
    assert store.keyword_index_searches == indexed + 1 and len(through_index) == 10


def test_a_scan_and_the_index_give_the_same_answers(make_mem: Callable[..., Memory]):
    scanning = make_mem("scan", settings=Settings(search_isolated_scan_rows=1000))
    indexed = make_mem("index", settings=Settings(search_isolated_scan_rows=0))
    rnd = random.Random(5)
    texts = [
        _filler(rnd, 10) + rnd.choice([" lantern", " kettle", " lantern kettle", ""])
        for _ in range(120)
    ]
    titles = [rnd.choice([None, "Lantern repair", "Kettle"]) for _ in texts]
    for mem in (scanning, indexed):
        mem.as_identity("bob").add_many(
            [{"content": t, "title": title} for t, title in zip(texts, titles, strict=True)]
        )
    for query in ("lantern", "kettle", "lantern kettle repair", "nothing-here"):
        hits = [
            [(mem.get(i).content, round(s, 6)) for i, s in _bob_keyword(mem, query)[0]]
            for mem in (scanning, indexed)
        ]
        assert hits[0] == hits[1], query


@pytest.mark.backends("postgres")
def test_the_postgres_scan_never_plans_through_the_tsvector_index(
    make_mem: Callable[..., Memory],
):
    """A word rare in the whole store: unfenced, the planner reads it through the
    ``tsvector`` index (cost: its matches in every namespace); over bob's rows it
    never does."""
    mem = make_mem()
    rnd = random.Random(2)
    rare = [" zephyr"] + [""] * 299
    mem.as_identity("bob").add_many([_filler(rnd, 8) + extra for extra in rare])
    mem.as_identity("alice").add_many([_filler(rnd, 8) + extra for extra in rare])
    store: Any = mem.store
    tsv_indexes = [
        row[0]
        for row in store._rows(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories' "
            "AND indexdef ILIKE '%%gin%%tsv%%'"
        )
    ]
    bob = mem.for_identity("bob")
    flt = bob._read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
    from memchentic.store.postgres_rows import where

    cond, params = where(flt)
    fenced = store._visible_rows(flt, cond, params)
    assert fenced is not None and tsv_indexes

    def plan(source: str) -> str:
        with store.connection() as conn:
            conn.execute("ANALYZE memories")
            rows = conn.execute(
                f"EXPLAIN SELECT m.id FROM {source} m WHERE m.tsv @@ 'zephyr'::tsquery AND {cond}",
                params,
            ).fetchall()
        return "\n".join(row[0] for row in rows)

    def uses_tsv_index(text: str) -> bool:
        return any(re.search(rf"\b{name}\b", text) for name in tsv_indexes)

    assert uses_tsv_index(plan("memories"))  # what the fence keeps out
    assert not uses_tsv_index(plan(fenced)), plan(fenced)
    hits = [i for i, _ in _bob_keyword(mem, "zephyr")[0]]
    assert [mem.get(i).namespace for i in hits] == ["user:bob"]
