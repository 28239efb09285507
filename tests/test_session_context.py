"""Conversation context in search (issue 22, item 4): the adjacent memories of a
session are found along an index (``Store.session_lines``) and join the bounded
path as ids, and the answer is the one the earlier code gave, which read every
session window whole and scored every candidate."""

from __future__ import annotations

import functools
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memchentic import Memory, Settings
from memchentic.record import MemoryRecord
from memchentic.retrieval import context, cues, pipeline, signals
from memchentic.retrieval.knobs import Knobs
from memchentic.retrieval.profiles import ScoringContext, get_profile
from memchentic.store.base import MemoryFilter, Store

NOW = datetime(2024, 6, 1, tzinfo=UTC)
T0 = datetime(2024, 3, 1, 9, tzinfo=UTC)
GAP = timedelta(hours=6)
WORDS = ["yoga", "river", "piano", "garden", "coffee", "train", "novel", "engine"]


# --- the earlier code, as it was before issue 22, item 4 --------------------------------
def old_neighbours(
    store: Store, flt: MemoryFilter, records: list[MemoryRecord], gap: timedelta
) -> tuple[dict[str, MemoryRecord], dict[str, list[str]]]:
    """``retrieval.context.neighbours`` before: each session's window read whole."""
    groups: dict[tuple[str, str], list[MemoryRecord]] = {}
    for rec in records:
        if rec.session_id and rec.created_at is not None:
            groups.setdefault((rec.namespace, rec.session_id), []).append(rec)
    rows: dict[str, MemoryRecord] = {}
    adjacent: dict[str, list[str]] = {}
    for (namespace, session), members in groups.items():
        times = [r.created_at for r in members if r.created_at is not None]
        lo, hi = min(times) - gap, max(times) + gap + timedelta(microseconds=1)
        if flt.created_after is not None:
            lo = max(lo, flt.created_after)
        if flt.created_before is not None:
            hi = min(hi, flt.created_before)
        window = replace(flt, created_after=lo, created_before=hi)
        found = store.list_memories(window, limit=2000, newest_first=False)
        line = [r for r in found if r.namespace == namespace and r.session_id == session]
        line.sort(key=lambda r: (r.created_at, r.id))
        for i, rec in enumerate(line):
            rows[rec.id] = rec
            adjacent[rec.id] = [
                line[j].id for j in (i - 1, i + 1)
                if 0 <= j < len(line) and abs(line[j].created_at - rec.created_at) <= gap  # type: ignore[operator]
            ]  # fmt: skip
    return rows, adjacent


def old_candidates(
    store: Store, req: pipeline.SearchRequest, settings: Settings
) -> list[pipeline.Candidate]:
    """``pipeline._assemble`` before: every candidate and neighbour loaded whole."""
    knobs = Knobs.of(settings)
    stages = pipeline._stages(store, req, knobs)
    records = store.get_many(stages.ids())
    rows, near = old_neighbours(store, req.flt, list(records.values()), GAP)
    for memory_id in list(records):
        for other in near.get(memory_id, ()):
            records.setdefault(other, rows[other])
    adjacent = {i: [o for o in near.get(i, ()) if o in records] for i in records}
    ids = list(records)
    cosines = pipeline._true_cosines(store, req, stages, ids)
    ranked = pipeline._rank(ids, stages, cosines, adjacent, knobs)
    candidates = [
        pipeline._candidate(records[i], ranked, cosines, stages.keyword)
        for i in ids if i in ranked.vector_rank or i in ranked.keyword_rank
    ]  # fmt: skip
    if req.profile.needs_coverage and candidates:
        pipeline._add_coverage(store, req.query, candidates)
    return candidates


# --- a store of several sessions ------------------------------------------------------
def _conversations(mem: Memory, seed: int) -> None:
    """Sessions in two namespaces (one session id in both), with turns that share a
    time, turns SEARCH_CONTEXT_GAP_HOURS apart, less and more, other types,
    expired turns, and memories with an empty session or none."""
    rng = random.Random(seed)
    items = []
    for s in range(6):
        when = T0 + timedelta(days=s)
        for turn in range(14):
            # minutes: ties, a few hours, the gap exactly (6 h) and more
            step = rng.choice([0, 0, 1, 2, 5, 120, 180, 300, 360, 420])
            when += timedelta(minutes=step)
            picked = rng.sample(WORDS, 2)
            speaker = rng.choice(["Ann", "Bob"])
            items.append({
                "content": f"{speaker}: turn {turn} of {s} about {picked[0]} and {picked[1]}",
                "session_id": f"s{s % 4}", "namespace": "user:ann" if s < 4 else "user:bob",
                "created_at": when, "valid_from": when,
                "type": "episodic" if rng.random() < 0.8 else "semantic",
                **({"expires_at": NOW - timedelta(days=1)} if rng.random() < 0.1 else
                   {"permanent": True}),
            })  # fmt: skip
    for i in range(10):
        items.append({
            "content": f"note {i} on {' and '.join(rng.sample(WORDS, 2))}",
            "session_id": rng.choice([None, ""]), "namespace": "user:ann",
            "created_at": T0 + timedelta(hours=i), "permanent": True,
        })  # fmt: skip
    results = mem.add_many(items, on_duplicate="keep")
    assert all(r.status == "added" for r in results)


FILTERS = {
    "everything": MemoryFilter.everything(now=NOW, include_superseded=True),
    "one namespace": MemoryFilter(namespaces=["user:ann"], now=NOW, include_superseded=True),
    "episodic": MemoryFilter(
        namespaces=["user:ann", "user:bob"], now=NOW, types=["episodic"], include_superseded=True
    ),  # fmt: skip
    "expired too": MemoryFilter(
        namespaces=["user:bob"], now=NOW, include_expired=True, include_superseded=True
    ),  # fmt: skip
    "a window": MemoryFilter.everything(
        now=NOW,
        include_superseded=True,
        isolated=True,
        created_after=T0 + timedelta(days=1, hours=1),
        created_before=T0 + timedelta(days=4),
    ),  # fmt: skip
}
QUERIES = ["what did Ann say about yoga and the river?", "piano garden", "coffee train novel"]


def _request(mem: Memory, query: str, flt: MemoryFilter, limit: int, profile: str):
    return pipeline.SearchRequest(query, mem.embedder.embed(query), flt, limit,
                                  get_profile(profile), NOW)  # fmt: skip


def _scoring(mem: Memory, query: str) -> ScoringContext:
    return ScoringContext(NOW, mem.settings, None, frozenset(cues.words(query)),
                          tuple(cues.query_dates(query)))  # fmt: skip


def _answer(cands: list[pipeline.Candidate]) -> list[tuple[str, float, dict[str, float]]]:
    return [(c.memory.id, c.score, {k: v for k, v in c.trace.items() if k != "score"})
            for c in cands]  # fmt: skip


# --- tests ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_the_bounded_context_path_answers_like_scoring_every_candidate(make_mem, seed):
    """Ids, order, scores and traces of a search with session context equal those of
    the earlier code (every session window read whole, every candidate scored), on
    every filter; with rrf through the bounded path, with cosine_decay through
    ``_assemble``. The bounded path loads fewer records than there are candidates."""
    # the first stage (the second, issue 33 item 1, reorders after it: test_rerank.py)
    mem = make_mem(settings=Settings(search_candidate_floor=30, search_rerank=False))
    _conversations(mem, seed)
    get_many = mem.store.get_many
    loaded: list[int] = []

    def counted(ids):
        loaded.append(len(ids))
        return get_many(ids)

    compared = skipped = 0
    for name, flt in FILTERS.items():
        for query in QUERIES:
            for profile, limit in (("rrf", 3), ("rrf", 10), ("cosine_decay", 5)):
                req = _request(mem, query, flt, limit, profile)
                every = old_candidates(mem.store, req, mem.settings)
                assert every, name
                ctx = _scoring(mem, query)
                for cand in every:
                    cand.score = req.profile.scorer(cand, ctx)
                every.sort(key=lambda c: (-c.score, c.memory.id))
                assert any(c.vector_context > c.cosine for c in every)  # context counts
                loaded.clear()
                mem.store.get_many = counted  # type: ignore[method-assign]
                got = pipeline.run(mem.store, req, mem.settings)
                mem.store.get_many = get_many  # type: ignore[method-assign]
                assert _answer(got) == _answer(every[:limit]), (name, query, profile)
                if profile == "rrf":
                    skipped += sum(loaded) < len(every)
                    # _assemble (rerank, route, coverage) ranks every candidate alike
                    gathered = pipeline.gather(mem.store, req, mem.settings)
                    for cand in gathered:
                        cand.score = req.profile.scorer(cand, ctx)
                    gathered.sort(key=lambda c: (-c.score, c.memory.id))
                    assert _answer(gathered) == _answer(every)
                compared += 1
    assert compared == len(FILTERS) * len(QUERIES) * 3
    assert skipped > compared // 3  # the bound leaves records unloaded


def test_neighbours_are_the_adjacent_rows_that_pass_the_filter(make_mem):
    """For candidates spread over the sessions: the adjacent memories found along the
    index are those of the earlier window reads, on every filter, and so are those
    the store interface's default (``list_memories`` windows) finds."""
    mem = make_mem()
    _conversations(mem, 3)
    store = mem.store
    everything = store.list_memories(
        MemoryFilter.everything(include_expired=True, include_superseded=True), limit=1000
    )
    rng = random.Random(5)
    default = functools.partial(Store.session_lines, store)
    joined = 0
    for name, flt in FILTERS.items():
        for _ in range(3):
            picked = rng.sample(everything, 25)
            ids = [r.id for r in picked]
            points = [(r.namespace, r.session_id, r.created_at) for r in picked if r.session_id]
            hood = context.neighbours(store, flt, ids, points, GAP)
            # the earlier code: adjacency of the loaded candidates that pass flt
            visible = store.get_many(ids)
            passing = {r.id for r in store.list_memories(flt, limit=1000)}
            rows, near = old_neighbours(store, flt, [visible[i] for i in ids if i in passing],
                                        GAP)  # fmt: skip
            added = list(dict.fromkeys(o for i in ids for o in near.get(i, ()) if o not in ids))
            members = set(ids) | set(added)
            assert sorted(hood.added) == sorted(added), name
            joined += len(added)
            assert set(hood.added) <= passing
            assert hood.adjacent == {
                i: [o for o in near.get(i, ()) if o in members] for i in (*ids, *hood.added)
            }, name  # fmt: skip
            lines = default(points, flt, 2 * GAP)
            store.session_lines = lambda *args, lines=lines: lines  # type: ignore[method-assign]
            try:
                again = context.neighbours(store, flt, ids, points, GAP)
                assert (sorted(again.added), again.adjacent) == (sorted(added), hood.adjacent)
            finally:
                del store.session_lines
    assert joined > 20


def test_a_joined_neighbour_is_adjacent_to_its_own_neighbours_only(make_mem):
    """Turns at 0, 5, 7, 10 and 15 hours, the first and the last candidates: 5 and 10
    join them (within 6 hours), and each is adjacent to its candidate only. The turn
    at 7 lies between them, so 5 and 10 are not adjacent, though 5 hours apart: the
    rows read reach twice the gap around the candidates."""
    mem = make_mem()
    ids = [
        mem.add(f"turn at {hours} h", session_id="s", user_id="u", type="episodic",
                created_at=T0 + timedelta(hours=hours), permanent=True).id
        for hours in (0, 5, 7, 10, 15)
    ]  # fmt: skip
    first, five, _, ten, last = ids
    flt = MemoryFilter.everything(now=NOW, include_superseded=True)
    points = [("user:u", "s", T0), ("user:u", "s", T0 + timedelta(hours=15))]
    hood = context.neighbours(mem.store, flt, [first, last], points, GAP)
    assert hood == context.Neighbourhood(
        [five, ten], {first: [five], last: [ten], five: [first], ten: [last]}
    )


def test_a_neighbour_the_caller_cannot_see_changes_no_score(make_mem):
    """Turns of the same session that the filter hides (another namespace, another
    type, expired), between two visible turns and matching the query better than
    either: the visible hits' scores and traces are those of the store without them
    (the visible turns on either side are each other's neighbours)."""
    mem = make_mem()
    visible = [
        mem.add(f"Ann: turn {i} about the garden", session_id="s", namespace="user:ann",
                type="episodic", created_at=T0 + timedelta(minutes=i), permanent=True).id
        for i in range(8)
    ]  # fmt: skip
    hidden = []
    for n, (namespace, type_, expired) in enumerate(
        [
            ("user:bob", "episodic", False),
            ("user:ann", "semantic", False),
            ("user:ann", "episodic", True),
        ]
    ):
        fields = {"expires_at": NOW - timedelta(days=1)} if expired else {"permanent": True}
        hidden.append(mem.add(
            "Ann: yoga yoga on the river, yoga every day", session_id="s", namespace=namespace,
            type=type_, created_at=T0 + timedelta(minutes=3, seconds=10 * (n + 1)), **fields,
        ).id)  # fmt: skip
    flt = MemoryFilter(namespaces=["user:ann"], types=["episodic"], now=NOW, isolated=True,
                       include_superseded=True)  # fmt: skip
    req = _request(mem, "Ann yoga river garden", flt, 10, "rrf")
    before = pipeline.run(mem.store, req, mem.settings)
    assert {c.memory.id for c in before} == set(visible)
    everyone = MemoryFilter.everything(now=NOW, include_expired=True, include_superseded=True)
    seen = {c.memory.id: c for c in pipeline.run(mem.store, replace(req, flt=everyone, limit=20),
                                                 mem.settings)}  # fmt: skip
    assert set(hidden) <= set(seen)
    lifted = seen[visible[3]].trace["keyword_context"]  # its neighbour: a hidden turn
    assert lifted > next(c for c in before if c.memory.id == visible[3]).trace["keyword_context"]
    for memory_id in hidden:
        assert mem.store.delete(memory_id)
    after = pipeline.run(mem.store, req, mem.settings)
    assert _answer(before) == _answer(after)


def test_a_store_of_the_schema_before_gets_the_session_index_when_opened(stores, make_mem):
    """The session index comes with a migration (7 on both backends): a store
    written before it is indexed on its next open, and searches with context."""
    from memchentic.store.migrations.postgres import MIGRATIONS as PG
    from memchentic.store.migrations.sqlite import MIGRATIONS as SQLITE

    migrations = SQLITE if stores.backend == "sqlite" else PG
    number = next(n for n, step in enumerate(migrations, start=1)
                  if step.__name__.endswith("_session_order"))  # fmt: skip
    mem = make_mem("older")
    ids = _conversation_of_three(mem)
    run = _runner(stores, "older")
    mem.close()
    run("DROP INDEX ix_memories_session")
    run(f"DELETE FROM schema_migrations WHERE version = {number}")
    assert run("SELECT count(*) FROM schema_migrations")[0][0] == len(migrations) - 1
    again = make_mem("older")
    assert again.store.schema_version() == len(migrations)
    hits = again.search("where is the harbour", user_id="u", now=NOW, include_trace=True)
    answer = next(h for h in hits if h.memory.id == ids[1])
    assert answer.trace["keyword_context"] > answer.trace["keyword_score"]  # its question


def _conversation_of_three(mem: Memory) -> list[str]:
    lines = ["Tim: where is the harbour?", "Ann: past the old lighthouse", "Tim: thanks"]
    return [
        mem.add(line, session_id="s", user_id="u", type="episodic", permanent=True,
                created_at=T0 + timedelta(minutes=i)).id
        for i, line in enumerate(lines)
    ]  # fmt: skip


def _runner(stores, name: str):
    """A function that runs one SQL statement on the store ``name`` (its rows)."""
    location = stores.location(name)
    if stores.backend == "sqlite":
        import sqlite3
        from contextlib import closing

        def run_sqlite(sql: str):
            with closing(sqlite3.connect(location)) as conn, conn:
                return conn.execute(sql).fetchall()

        return run_sqlite
    import psycopg

    schema = location.rsplit("schema=", 1)[1]

    def run_postgres(sql: str):
        with psycopg.connect(stores.postgres_url, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else []

    return run_postgres


_score = st.floats(-1.0, 40.0, allow_nan=False)


@given(st.lists(st.tuples(_score, st.lists(_score, min_size=1, max_size=2)), min_size=1),
       st.floats(0.0, 2.0))  # fmt: skip
def test_with_context_many_gives_the_values_of_with_context(rows, weight):
    own = np.array([o for o, _ in rows])
    best = np.array([max(near) for _, near in rows])
    many = signals.with_context_many(own, best, weight).tolist()
    assert many == [signals.with_context(o, near, weight) for o, near in rows]
