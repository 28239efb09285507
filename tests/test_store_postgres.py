"""The PostgreSQL store: schema and migrations, concurrent opens, selection by URL,
the HNSW index, plain-word keyword queries, isolated ranking, threads, rollbacks.
(Behaviour every backend shares is tested on both by the other test files.)"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from memchentic import HashEmbedder, Memory, NotAStoreError, Settings, ValidationError
from memchentic.cli import app
from memchentic.store import open_store
from memchentic.store.base import MemoryFilter
from memchentic.store.migrations.postgres import MIGRATIONS

from .conftest import Stores, run_spawned

pytestmark = pytest.mark.backends("postgres")


def _sql(mem: Memory, sql: str, params: tuple = ()) -> list[tuple]:
    with mem.store.connection() as conn:  # type: ignore[attr-defined]
        return conn.execute(sql, params).fetchall()


def test_a_schema_of_its_own_with_a_migration_table(mem: Memory):
    mem.add("Ana writes the release notes")
    rows = _sql(mem, "SELECT version, name FROM schema_migrations ORDER BY version")
    assert rows == [(i, f.__name__) for i, f in enumerate(MIGRATIONS, start=1)]
    assert mem.store.schema_version() == len(MIGRATIONS)
    (schema,) = _sql(mem, "SELECT current_schema()")[0]
    assert schema.startswith("t") and "_memory" in schema
    # the vector index exists for the embedder's dimension
    (index,) = _sql(mem, "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_vectors_hnsw'")
    assert "hnsw" in index[0] and "vector(384)" in index[0] and "vector_cosine_ops" in index[0]


def test_keyword_index_writes_leave_no_pending_list_for_searches_to_scan(mem: Memory):
    mem.add_many([f"Ana reviews release {i} of the parser" for i in range(30)])
    assert mem.search("parser release", limit=10)  # counts recalls: updates the rows
    mem.revise(mem.list(limit=1)[0].id, "Ana reviews the lexer instead")
    # what the searches would otherwise scan on every query: nothing is pending
    assert _sql(mem, "SELECT gin_clean_pending_list('ix_memories_tsv'::regclass)") == [(0,)]
    (options,) = _sql(mem, "SELECT reloptions FROM pg_class WHERE relname = 'ix_memories_tsv' "
                           "AND relnamespace = current_schema()::regnamespace")[0]  # fmt: skip
    assert "fastupdate=off" in options


def _open(url: str) -> None:
    Memory(store=url, embedder=HashEmbedder()).close()


def test_processes_opening_a_new_store_at_once_migrate_it_once(stores: Stores):
    url = stores.location("race")
    run_spawned(_open, [(url,)] * 4)
    with Memory(store=url, embedder="hash") as m:
        rows = _sql(m, "SELECT version FROM schema_migrations ORDER BY version")
        assert rows == [(i,) for i in range(1, len(MIGRATIONS) + 1)]
        assert m.store.get_meta("app") == "memchentic"


def test_reopen_keeps_everything(make_mem: Callable[..., Memory]):
    with make_mem("keep") as m:
        ids = [r.id for r in m.add_many([f"persisted fact {i} about ducks" for i in range(25)])]
    with make_mem("keep") as m:
        assert {r.id for r in m.list(limit=100)} == set(ids)
        assert len(m.search("ducks", limit=50)) == 25


def test_selected_by_url_setting_and_cli(stores: Stores, monkeypatch: pytest.MonkeyPatch):
    url = stores.location("cli")
    monkeypatch.setenv("MEMCHENTIC_STORE_URL", url)
    with Memory(embedder="hash") as m:
        assert type(m.store).__name__ == "PostgresStore"
        kept = m.add("Selected by MEMCHENTIC_STORE_URL").id
    runner = CliRunner()
    monkeypatch.delenv("MEMCHENTIC_STORE_URL")
    added = runner.invoke(app, ["add", "The CLI writes to PostgreSQL", "--store", url,
                                "--embedder", "hash"])  # fmt: skip
    assert added.exit_code == 0, added.output
    found = runner.invoke(app, ["search", "CLI PostgreSQL", "--store", url, "--embedder", "hash",
                                "--json"])  # fmt: skip
    assert found.exit_code == 0 and "The CLI writes to PostgreSQL" in found.stdout
    with Memory(store=url, embedder="hash") as m:
        assert kept in {r.id for r in m.list()}


def test_bad_urls_are_clear_errors(stores: Stores):
    from memchentic import StoreError

    with pytest.raises(ValidationError) as err:
        Memory(store=stores.postgres_url + "&schema=Bad-Name", embedder="hash")
    assert "schema" in str(err.value)
    with pytest.raises(StoreError) as err2:
        Memory(store="postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", embedder="hash")
    assert "cannot connect" in str(err2.value)


def test_a_schema_of_another_application(stores: Stores):
    url = stores.location("other")
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(stores.postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'CREATE TABLE "{schema}".accounts (id integer PRIMARY KEY)')
    with pytest.raises(NotAStoreError):
        Memory(store=url, embedder="hash")
    with psycopg.connect(stores.postgres_url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
    assert tables == [("accounts",)]


def test_timestamps_round_trip_to_the_microsecond_in_utc(mem: Memory):
    at = datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC)
    res = mem.add("Leap day note", created_at=at, valid_to=at + timedelta(microseconds=1))
    got = mem.get(res.id, touch=False)
    assert got.created_at == at and got.created_at.tzinfo is UTC
    assert got.valid_to == at + timedelta(microseconds=1)
    assert got.to_dict() == res.memory.to_dict()


def test_hnsw_answers_large_stores_and_filters_still_find_small_namespaces(
    make_mem: Callable[..., Memory], settings: Settings
):
    settings.search_exact_vector_rows = 50
    m = make_mem(settings=settings)
    m.add_many([f"common bulk row {i} about harbour cranes {i % 7}" for i in range(400)],
               user_id="bulk", on_duplicate="keep")  # fmt: skip
    small = m.add("tiny namespace row about otters", user_id="tiny")
    hits = m.search("common bulk row", user_id="tiny")
    assert [h.id for h in hits] == [small.id]
    # unfiltered: the index answers, with the recall of an exact scan on this data
    flt = MemoryFilter.everything(now=datetime.now(UTC))
    query = HashEmbedder().embed("bulk row about harbour cranes 3")
    approx = m.store.vector_search(query, 10, flt)
    m.store.exact_vector_rows = 10_000  # type: ignore[attr-defined]
    exact = m.store.vector_search(query, 10, flt)
    assert len({i for i, _ in approx} & {i for i, _ in exact}) >= 9
    plan = _sql(
        m,
        "EXPLAIN SELECT key FROM memory_vectors WHERE vector_dims(embedding) = 384 "
        "ORDER BY embedding::vector(384) <=> %s LIMIT 5",
        (np.asarray(query, dtype=np.float32),),
    )
    assert "ix_vectors_hnsw" in " ".join(r[0] for r in plan)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(min_size=1, max_size=60))
def test_any_text_is_a_plain_word_query(mem: Memory, query: str):
    if not query.strip():
        return
    mem.store.keyword_search(query, 5, MemoryFilter.everything())
    mem.store.term_stats(query)


def test_isolated_keyword_scores_ignore_rows_the_caller_cannot_see(mem: Memory):
    mine = [mem.add(f"Quokka census note {i} for the island survey", user_id="me",
                    on_duplicate="keep").id for i in range(3)]  # fmt: skip
    visible = MemoryFilter(namespaces=["user:me"], now=datetime.now(UTC), isolated=True)
    before = mem.store.keyword_search("quokka island survey", 10, visible)
    mem.add_many([f"quokka quokka sighting {i}" for i in range(40)], user_id="other",
                 on_duplicate="keep")  # fmt: skip
    after = mem.store.keyword_search("quokka island survey", 10, visible)
    assert before == after and {i for i, _ in after} == set(mine)
    # without isolation the global statistics move the scores
    shared = MemoryFilter(namespaces=["user:me"], now=datetime.now(UTC))
    assert mem.store.keyword_search("quokka island survey", 10, shared) != after


def test_reindex_to_another_dimension_rebuilds_the_vector_index(make_mem: Callable[..., Memory]):
    m = make_mem("re", embedder=HashEmbedder(dimension=384))
    ids = [m.add(f"reindexed fact {i} about lighthouses {i * 11}").id for i in range(20)]
    assert m.reindex(embedder=HashEmbedder(dimension=64)) == 20
    (index,) = _sql(m, "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_vectors_hnsw'")
    assert "vector(64)" in index[0]
    assert m.search("lighthouses 55", limit=1)[0].id == ids[5]
    with make_mem("re", embedder=HashEmbedder(dimension=64)) as again:
        assert again.store.vectors([ids[0]])[ids[0]].shape == (64,)


def test_term_statistics_follow_writes_and_deletes(mem: Memory):
    a = mem.add("Walrus colonies rest on the ice floes")
    mem.add("Walrus tusks grow all their lives")
    pairs, freqs, total = mem.store.term_stats("walrus ice")
    assert dict(pairs) == {"walrus": "walrus", "ice": "ice"}
    assert (freqs, total) == ({"walrus": 2, "ice": 1}, 2)
    mem.revise(a.id, "Walrus colonies rest on rocky beaches")
    assert mem.store.term_stats("walrus ice")[1:] == ({"walrus": 2}, 2)
    mem.delete(a.id)
    assert mem.store.term_stats("walrus ice")[1:] == ({"walrus": 1}, 1)


def test_open_store_routes_urls(stores: Stores):
    store = open_store(stores.location("route"), Settings())
    try:
        assert type(store).__name__ == "PostgresStore" and "***" not in store.location
    finally:
        store.close()
    # a password no random folder or schema name holds by chance ("pw" once did)
    secret = "Zq9-not-in-any-path"
    masked = open_store(stores.location("route").replace("postgres:@", f"postgres:{secret}@"),
                        Settings())  # fmt: skip
    try:
        assert secret not in masked.location and ":***@" in masked.location
    finally:
        masked.close()


def test_a_snapshot_sees_one_state_and_does_not_hold_writers(mem: Memory):
    first = mem.add("Snapshot anchor about herons").id
    with mem.store.snapshot():
        before = {r.id for r in mem.store.iter_memories(MemoryFilter.everything())}
        done: list[str] = []
        writer = threading.Thread(target=lambda: done.append(mem.add("Written meanwhile").id))
        writer.start()
        writer.join(30)
        assert done  # the writer was not blocked by the snapshot
        after = {r.id for r in mem.store.iter_memories(MemoryFilter.everything())}
        assert after == before == {first}
    assert len(mem.list()) == 2
    assert mem.store.check()["ok"]


def test_check_finds_drifted_keyword_statistics_and_a_missing_index(mem: Memory):
    mem.add("Kestrels hover over the motorway verge")
    report = mem.store.check()
    assert report["ok"] and report["backend"] == "postgres"
    assert report["checks"]["keyword_index"] == report["checks"]["vector_index"] == "ok"
    with mem.store.connection() as conn:  # type: ignore[attr-defined]
        conn.execute("UPDATE term_docs SET docs = docs + 1 WHERE term = 'kestrel'")
        conn.execute("DROP INDEX ix_vectors_hnsw")
    report = mem.store.check()
    assert not report["ok"]
    assert report["checks"]["keyword_index"] == report["checks"]["vector_index"] == "failed"
    assert any("kestrel" in p for p in report["problems"])


def test_a_query_of_only_common_words_ranks_about_the_newest_matches(
    make_mem: Callable[..., Memory], settings: Settings
):
    settings.search_common_term_docs = 5
    settings.search_common_window = 10
    m = make_mem(settings=settings)
    results = m.add_many([f"alpha report {i}: item {i * 7}" for i in range(60)],
                         on_duplicate="keep")  # fmt: skip
    newest = {r.id for r in results[-10:]}
    every = MemoryFilter.everything(now=datetime.now(UTC))
    found = m.store.keyword_search("alpha report", 100, every)
    assert {i for i, _ in found} == newest
    rare = m.add("alpha report with a zeppelin").id
    assert m.store.keyword_search("zeppelin alpha", 3, MemoryFilter.everything())[0][0] == rare


def test_search_runs_its_stages_at_once_outside_a_transaction(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
):
    for i in range(30):
        mem.add(f"harbour crane {i} lifts containers of grain number {i * 7}")
    store = mem.store
    assert store.concurrent_reads()
    with store.write():  # another connection would not see this transaction's writes
        assert not store.concurrent_reads()
    with store.snapshot():  # nor this snapshot's state
        assert not store.concurrent_reads()
    assert store.concurrent_reads()

    keyword_threads: list[int] = []
    keyword_search = store.keyword_search

    def recorded(*args, **kwargs):
        keyword_threads.append(threading.get_ident())
        return keyword_search(*args, **kwargs)

    monkeypatch.setattr(store, "keyword_search", recorded)
    at_once = mem.search("crane lifts grain containers", limit=8, include_trace=True)
    assert keyword_threads[-1] != threading.get_ident()
    monkeypatch.setattr(store, "concurrent_reads", lambda: False)
    in_turn = mem.search("crane lifts grain containers", limit=8, include_trace=True)
    assert keyword_threads[-1] == threading.get_ident()
    # the same candidates with the same match (the usage factor grew by one recall)
    assert [h.id for h in at_once] == [h.id for h in in_turn]
    assert [h.trace["match"] for h in at_once] == [h.trace["match"] for h in in_turn]

    # a failing keyword stage fails the search with its own error
    monkeypatch.setattr(store, "concurrent_reads", lambda: True)

    def broken(*args, **kwargs):
        raise psycopg.OperationalError("keyword stage lost its connection")

    monkeypatch.setattr(store, "keyword_search", broken)
    with pytest.raises(psycopg.OperationalError, match="keyword stage"):
        mem.search("crane")


def test_a_forked_process_searches_with_stages_at_once(stores: Stores):
    """The parent's stage threads do not survive a fork: a child that searches must
    get its own (a task left on the parent's pool would wait forever)."""
    import os
    import signal

    location = stores.location("forked")
    with Memory(store=location, embedder="hash") as parent:
        parent.add("a fact about harbour cranes")
        assert parent.search("harbour cranes")  # the parent's stage threads exist now
        pid = os.fork()
        if pid == 0:  # the child: a search must finish (an alarm ends a hang)
            code = 1
            try:
                signal.alarm(60)
                with Memory(store=location, embedder="hash") as child:
                    code = 0 if child.search("harbour cranes") else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_jsonb_columns_load_like_the_json_parser(mem: Memory):
    """The store's jsonb loader (a shortcut for empty lists and objects, a parser
    for the rest) gives exactly what json.loads gives, types included, and
    records keep their tags and metadata."""
    texts = ['[]', '{}', '[ ]', '{"a": []}', '["ops", "naïve"]', '"[]"', '0', 'null',
             '{"speaker": "Zoë", "n": 3, "nested": {"a": [1, 2.5, null]}, "e": "🙂 שלום"}']
    row = mem.store._rows(f"SELECT {', '.join(['%s::jsonb'] * len(texts))}", texts)[0]
    for text, value in zip(texts, row, strict=True):
        expected = json.loads(text)
        assert value == expected and type(value) is type(expected), text
    res = mem.add("jsonb round trip", tags=["ops", "naïve"], metadata={"n": {"a": [1]}})
    stored = mem.get(res.id)
    assert stored.tags == ["ops", "naïve"] and stored.metadata["n"] == {"a": [1]}
