"""The SQLite store: one file, WAL, migrations, the vector index, threads and processes."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from memchentic import HashEmbedder, Memory
from memchentic.store.migrations.sqlite import MIGRATIONS
from memchentic.text import keyword_text

from .conftest import run_spawned

pytestmark = pytest.mark.backends("sqlite")


def test_one_file_in_wal_mode_with_a_migration_table(mem: Memory, db_path: Path):
    mem.add("Ana writes the release notes")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = conn.execute("SELECT version, name FROM schema_migrations").fetchall()
    assert rows == [(i, f.__name__) for i, f in enumerate(MIGRATIONS, start=1)]
    assert mem.store.schema_version() == len(MIGRATIONS)


def test_reopen_keeps_everything_and_migrations_run_once(db_path: Path):
    with Memory(path=db_path, embedder="hash") as m:
        ids = [r.id for r in m.add_many([f"persisted fact {i} about ducks" for i in range(25)])]
    with Memory(path=db_path, embedder="hash") as m:
        assert {r.id for r in m.list(limit=100)} == set(ids)
        assert len(m.search("ducks", limit=50)) == 25
        assert m.store.schema_version() == len(MIGRATIONS)


def _insert_triggers(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories' "
        "AND sql LIKE '%AFTER INSERT%' AND name != 'memory_log_ai'")]  # fmt: skip


def test_bulk_inserts_index_their_keywords_with_one_statement(db_path: Path):
    """A bulk insert sets the keyword trigger aside inside its transaction and
    writes its rows' keyword rows with one statement (FTS5 fed by the row trigger
    cost ten times as much); the trigger is back after it, so single writes, other
    processes and older versions still index theirs. Each memory is indexed once."""
    with Memory(path=db_path, embedder="hash") as m:
        one = m.add("the quartermaster audits zeppelin manifests").id
        many = [r.id for r in m.add_many(
            [f"harbour crane {i} lifts {word} crates"
             for i, word in enumerate(["walnut", "saffron", "cobalt"] * 15)]
            + ["the quartermaster audits zeppelin manifests twice"],
            on_duplicate="keep")]  # fmt: skip
        assert len(many) >= 32  # (the statement's threshold)
        assert _insert_triggers(m.store.conn) == ["memories_fts_ai"]
        with sqlite3.connect(db_path) as other:  # a writer that knows nothing of this
            # (but registers the keyword index's text function, as every connection of
            # the store does since issue 34, item 1: the index's triggers call it)
            other.create_function("memchentic_keywords", 1, keyword_text, deterministic=True)
            other.execute(
                "INSERT INTO memories(id, namespace, kind, type, content, created_at, "
                "updated_at, confidence, reinforcement, importance, polarity) VALUES "
                "('x-raw', 'user:default', 'entry', 'semantic', 'a raw zeppelin row', "
                "'2026-01-01', '2026-01-01', 1, 0, 0.5, 1)")  # fmt: skip
        matched = m.store.conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT rowid) FROM memories_fts WHERE memories_fts "
            "MATCH 'zeppelin'").fetchone()  # fmt: skip
        assert matched == (3, 3)
        with m.store.write():  # (a raw row, without a vector or full fields)
            m.store.conn.execute("DELETE FROM memories WHERE id = 'x-raw'")

        def keyword_hits(query: str) -> set[str]:
            hits = m.search(query, limit=50, include_trace=True)
            return {h.memory.id for h in hits if h.trace and h.trace["keyword_rank"] > 0}

        assert {one, many[-1]} <= keyword_hits("zeppelin")
        assert keyword_hits("saffron") == set(many[1:45:3])
        report = m.store.check()
        assert report["ok"] and report["checks"]["keyword_index"] == "ok", report["problems"]


def test_a_failed_bulk_insert_leaves_the_keyword_trigger_in_place(db_path: Path):
    """The trigger is set aside inside the insert's transaction: when the insert
    fails after it (here on a vector row in the way), the rollback brings it back
    with everything else."""
    from memchentic import StoreError

    with Memory(path=db_path, embedder="hash") as m:
        m.add("a first memory about lighthouses")
        conn = m.store.conn
        in_the_way = conn.execute("SELECT MAX(rowid) FROM memories").fetchone()[0] + 5
        with m.store.write():
            conn.execute("INSERT INTO vectors(rowid, embedding) VALUES (?, ?)",
                         (in_the_way, b"\0" * 32))  # fmt: skip
        items = [m._prepare(f"bulk lighthouse note {i}").record for i in range(40)]
        with pytest.raises(StoreError):
            m.store.insert_many([(r, m.embedder.embed(r.content)) for r in items])
        assert _insert_triggers(conn) == ["memories_fts_ai"]
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 1
        with m.store.write():
            conn.execute("DELETE FROM vectors WHERE rowid = ?", (in_the_way,))
        assert m.store.check()["ok"]
        m.add_many([f"bulk lighthouse note {i}" for i in range(40)], on_duplicate="keep")
        assert m.store.check()["ok"]


def test_vector_index_file_is_reused_and_replays_later_writes(db_path: Path):
    with Memory(path=db_path, embedder="hash") as m:
        m.add_many([f"harbour report {i}: ship count {i * 3}" for i in range(30)])
    assert db_path.with_name(db_path.name + ".vectors").exists()
    # another handle writes after the index was saved; the next open must replay it
    with Memory(path=db_path, embedder="hash") as writer:
        late = writer.add("lighthouse keeper changed shifts").id
        writer.store._index = None  # do not save: simulate a process that was killed
        writer.store._closed = True
    with Memory(path=db_path, embedder="hash") as m:
        assert m.search("lighthouse keeper shifts", limit=1)[0].id == late


def _writer(path: str, worker: int, count: int) -> None:
    with Memory(path=path, embedder=HashEmbedder()) as m:
        for i in range(count):
            m.add(f"worker {worker} wrote unique fact {i} code {worker * 1000 + i}")
            m.add("every worker writes this exact shared sentence")


def test_several_processes_write_one_file_without_loss_or_duplicates(db_path: Path):
    Memory(path=db_path, embedder="hash").close()
    run_spawned(_writer, [(str(db_path), w, 15) for w in range(3)])
    with Memory(path=db_path, embedder="hash") as m:
        rows = m.list(limit=1000)
        contents = [r.content for r in rows]
        assert contents.count("every worker writes this exact shared sentence") == 1
        assert len(rows) == 3 * 15 + 1
        hits = m.search("worker 2 wrote unique fact 9 code 2009", limit=1)
        assert hits[0].memory.content == "worker 2 wrote unique fact 9 code 2009"


def test_filtered_vector_search_in_a_large_store_finds_a_small_namespace(db_path, settings):
    settings.search_exact_vector_rows = 50
    with Memory(path=db_path, embedder="hash", settings=settings) as m:
        m.add_many([f"common bulk row {i}" for i in range(400)], user_id="bulk",
                   on_duplicate="keep")  # fmt: skip
        small = m.add("tiny namespace row about otters", user_id="tiny")
        hits = m.search("common bulk row", user_id="tiny")
        assert [h.id for h in hits] == [small.id]


def test_common_words_rank_the_newest_window_by_idf(db_path: Path):
    """When a query's common words match more rows than SEARCH_COMMON_WINDOW,
    only the newest window of their matches is ranked, by the idf of the query
    words each row holds (both words above the rarer one alone, above the
    commoner one alone; ties newest first)."""
    from memchentic import Settings
    from memchentic.store.base import MemoryFilter

    settings = Settings(search_common_term_docs=80, search_common_window=12)
    with Memory(path=db_path, embedder="hash", settings=settings) as m:
        words = [[w for w, keep in (("alpha", i % 2 == 0), ("beta", i % 3 == 0)) if keep]
                 for i in range(90)]  # fmt: skip
        texts = [f"row {i} " + " ".join(ws) + (" zebra" if i == 4 else "")
                 for i, ws in enumerate(words)]  # fmt: skip
        ids = [r.id for r in m.add_many(texts, on_duplicate="keep")]
        flt = MemoryFilter.everything(include_superseded=True)
        hits = m.store.keyword_search("alpha beta", 50, flt)
        matching = [i for i, ws in enumerate(words) if ws]
        window = matching[-12:]
        assert sorted(ids.index(i) for i, _ in hits) == window
        def group(i: int) -> int:
            return {("alpha", "beta"): 0, ("beta",): 1, ("alpha",): 2}[tuple(words[i])]
        expected = sorted(window, key=lambda i: (group(i), -i))
        assert [ids.index(i) for i, _ in hits] == expected
        assert hits[0][1] > hits[-1][1] > 0
        # with a much rarer word in the query, only that word is ranked
        assert [i for i, _ in m.store.keyword_search("alpha zebra", 50, flt)] == [ids[4]]
        # a restricted filter keeps the window's rows that pass it
        dropped = {ids[i] for i in window[-4:]}
        others = MemoryFilter.everything(exclude_ids=list(dropped))
        only = m.store.keyword_search("alpha beta", 50, others)
        assert {i for i, _ in only} == {ids[i] for i in window} - dropped


def test_a_thread_of_its_own_copies_bulk_writes_into_the_database_file(db_path: Path) -> None:
    """Commits leave the WAL checkpoint to the store's checkpoint thread (a writer
    makes one itself only past the backstop): after a bulk write, once that thread
    is idle, the rows are in the database file itself, and the writer's own
    connection never checkpointed them (its threshold is far above this write)."""
    from memchentic.store.sqlite_checkpoint import BACKSTOP_PAGES

    with Memory(path=db_path, embedder="hash") as mem:
        conn = mem.store.conn
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
        before = db_path.stat().st_size
        wal = db_path.with_name(db_path.name + "-wal")
        texts = [f"Observation {i}: sensor {i % 7} read {i * 13 % 101} units" for i in range(800)]
        assert all(r.status == "added" for r in mem.add_many(texts, on_duplicate="keep"))
        written = wal.stat().st_size
        assert written < BACKSTOP_PAGES * 4096  # under the backstop: no commit checkpointed
        assert mem.store.checkpointer.wait_idle(timeout=60)
        assert mem.store.checkpointer.runs >= 1
        assert db_path.stat().st_size >= before + written // 2  # the pages were copied in
        assert len(mem.search("sensor read units", limit=100)) == 100
    with sqlite3.connect(db_path) as check:  # whole and readable without the WAL
        assert check.execute("SELECT count(*) FROM memories").fetchone()[0] == 800
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_closing_the_store_stops_its_checkpoint_thread(db_path: Path) -> None:
    mem = Memory(path=db_path, embedder="hash")
    mem.add_many([f"Reading {i} of the tide gauge was {i * 7 % 31} cm" for i in range(400)])
    threads = [t for t in threading.enumerate() if t.name == "memchentic-checkpoint"]
    assert threads
    mem.close()
    assert all(not t.is_alive() for t in threads)
