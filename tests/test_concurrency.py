"""Concurrency (issue 9): 8 threads and 4 processes mix adds, searches, revises,
deletes and gc on one store. No error reaches a caller (no "database is locked"),
no acknowledged write is lost or duplicated, and the final state equals a
sequential replay of the acknowledged operations, both on a model and on a
fresh store driven through the same API one call at a time. Then the lock
retries, the error translation and the gc races, one at a time.

Short variant: 8 s. ``MEMCHENTIC_LONG_TESTS=1``: 60 s.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memchentic import HashEmbedder, Memory
from memchentic.clock import utcnow
from memchentic.errors import StoreError
from memchentic.store import sqlite_conn
from memchentic.store.base import MemoryFilter
from memchentic.store.sqlite_conn import GuardedConnection, SQLiteStoreError

from .conftest import Stores

LONG = os.environ.get("MEMCHENTIC_LONG_TESTS") == "1"
SECONDS = 60.0 if LONG else 8.0
THREADS, PROCESSES = 8, 4
EVERYTHING = MemoryFilter(namespaces=None, include_expired=True, include_superseded=True)
WORDS = (
    "amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
    "juniper", "kelp", "lagoon", "maple", "nectar", "onyx", "pepper", "quartz", "raven",
    "saffron", "tundra", "umber", "violet", "willow", "yarrow", "zephyr",
)  # fmt: skip
#: Every worker adds these: exactly one copy of each may be stored.
SHARED = [f"the shared team rule number {n}: {WORDS[n]} before {WORDS[-n - 1]}" for n in range(6)]
EMBEDDER = HashEmbedder()
Log = Callable[..., None]


def _work(mem: Memory, worker: int, deadline: float, log: Log) -> None:
    """One worker's mix of calls until ``deadline``; logs each acknowledged write."""
    rnd = random.Random(worker)
    own: dict[str, int] = {}
    key = 0
    while time.time() < deadline:
        roll = rnd.random()
        if roll < 0.30 or not own:
            key += 1
            text = f"worker {worker} note k{key}w{worker} " + " ".join(rnd.sample(WORDS, 5))
            result = mem.add(text, user_id=f"cw{worker}")
            log(op="add", key=f"{worker}:{key}", id=result.id, status=result.status, text=text)
            if result.status == "added":
                own[result.id] = key
        elif roll < 0.40:
            text = rnd.choice(SHARED)
            result = mem.add(text, user_id="shared")
            log(op="shared", id=result.id, status=result.status, text=text)
        elif roll < 0.45:  # expired 200 days ago: gc removes it
            text = f"worker {worker} stale k{key}x{worker} " + " ".join(rnd.sample(WORDS, 5))
            result = mem.add(text, user_id="stale", ttl_days=1,
                             created_at=utcnow() - timedelta(days=200))  # fmt: skip
            log(op="stale", id=result.id, status=result.status, text=text)
        elif roll < 0.65:
            hits = mem.search(rnd.choice(WORDS), user_id=f"cw{worker}", limit=5)
            assert all(h.memory.namespace == f"user:cw{worker}" for h in hits)
        elif roll < 0.85:
            memory_id = rnd.choice(sorted(own))
            text = f"worker {worker} revised k{own[memory_id]}w{worker} " + " ".join(
                rnd.sample(WORDS, 5)
            )
            mem.revise(memory_id, text)
            log(op="revise", id=memory_id, text=text)
        elif roll < 0.97:
            memory_id = rnd.choice(sorted(own))
            mem.delete(memory_id)
            log(op="delete", id=memory_id)
            del own[memory_id]
        else:
            mem.gc()
            log(op="gc")


def _thread(mem: Memory, worker: int, deadline: float, out: list[Any], errors: list[str]) -> None:
    def log(**line: Any) -> None:
        out.append({"at": time.time_ns(), "worker": worker, **line})

    try:
        _work(mem, worker, deadline, log)
    except BaseException as exc:  # noqa: BLE001 - every error is a failure
        errors.append(f"thread {worker}: {type(exc).__name__}: {exc}")


def _process(location: str, worker: int, start: float, deadline: float, path: Path) -> int:
    with warnings.catch_warnings():  # Python 3.12+ warns about fork with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return pid
    code = 0
    with open(path, "a", encoding="utf-8") as handle:

        def log(**line: Any) -> None:
            handle.write(json.dumps({"at": time.time_ns(), "worker": worker, **line}) + "\n")

        try:
            with Memory(store=location, embedder=EMBEDDER) as mem:
                time.sleep(max(0.0, start - time.time()))
                _work(mem, worker, deadline, log)
        except BaseException as exc:  # noqa: BLE001
            log(op="error", error=f"process {worker}: {type(exc).__name__}: {exc}")
            code = 3
    os._exit(code)


def _expected(ops: list[dict[str, Any]]) -> dict[str, str]:
    """The model: the acknowledged writes applied one by one (stale ones: gone)."""
    state: dict[str, str] = {}
    for op in ops:
        if (op["op"] in ("add", "shared") and op["status"] == "added") or op["op"] == "revise":
            state[op["id"]] = op["text"]
        elif op["op"] == "delete":
            del state[op["id"]]
    return state


def _replay(ops: list[dict[str, Any]], location: str) -> Counter[str]:
    """The same acknowledged writes, one call at a time, on a fresh store."""
    ids: dict[str, str] = {}
    with Memory(store=location, embedder=EMBEDDER) as mem:
        for op in ops:
            if op["op"] == "add":
                result = mem.add(op["text"], user_id=f"cw{op['worker']}")
                assert result.status == op["status"]
                ids[op["id"]] = result.id
            elif op["op"] == "shared":
                mem.add(op["text"], user_id="shared")
            elif op["op"] == "revise":
                mem.revise(ids[op["id"]], op["text"])
            elif op["op"] == "delete":
                mem.delete(ids[op["id"]])
        mem.gc()
        return Counter(r.content for r in mem.store.iter_memories(EVERYTHING))


def run_mixed_load(location: str, replay_location: str, tmp: Path) -> dict[str, int]:
    Memory(store=location, embedder=EMBEDDER).close()
    start = time.time() + 2.0  # the processes open the store meanwhile
    deadline = start + SECONDS
    paths = [tmp / f"process{w}.jsonl" for w in range(PROCESSES)]
    pids = [_process(location, THREADS + w, start, deadline, paths[w]) for w in range(PROCESSES)]
    ops: list[dict[str, Any]] = []
    errors: list[str] = []
    with Memory(store=location, embedder=EMBEDDER) as mem:
        time.sleep(max(0.0, start - time.time()))
        threads = [
            threading.Thread(target=_thread, args=(mem, w, deadline, ops, errors))
            for w in range(THREADS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    codes = [os.waitpid(pid, 0)[1] for pid in pids]
    for path in paths:
        for line in path.read_text().splitlines():
            op = json.loads(line)
            (errors.append(op["error"]) if op["op"] == "error" else ops.append(op))
    assert errors == [] and codes == [0] * PROCESSES, errors
    ops.sort(key=lambda op: op["at"])
    with Memory(store=location, embedder=EMBEDDER) as mem:
        mem.gc()  # the final gc of the replay
        actual = {r.id: r.content for r in mem.store.iter_memories(EVERYTHING)}
        report = mem.store.check()
    assert report["ok"], report["problems"]
    expected = _expected(ops)
    shared_added = Counter(op["text"] for op in ops if op["op"] == "shared" and
                           op["status"] == "added")  # fmt: skip
    assert all(n == 1 for n in shared_added.values()), shared_added  # never twice
    assert actual == expected, set(actual) ^ set(expected)
    added = [op["id"] for op in ops if op["op"] in ("add", "stale") and op["status"] == "added"]
    assert len(added) == len(set(added))  # no id handed out twice
    assert _replay(ops, replay_location) == Counter(actual.values())
    kinds = Counter(op["op"] for op in ops)
    return {"acknowledged_writes": len(ops), "rows": len(actual), **kinds}


def test_sqlite_threads_and_processes(tmp_path: Path) -> None:
    figures = run_mixed_load(str(tmp_path / "c.db"), str(tmp_path / "replay.db"), tmp_path)
    print(f"\nsqlite concurrency ({SECONDS:.0f} s): {figures}")
    assert figures["acknowledged_writes"] > 100 and figures["gc"] > 0


@pytest.fixture
def pg_locations(postgres_stores: Stores) -> tuple[str, str]:
    return postgres_stores.location("load"), postgres_stores.location("replay")


def test_postgres_threads_and_processes(pg_locations: tuple[str, str], tmp_path: Path) -> None:
    figures = run_mixed_load(*pg_locations, tmp_path)
    print(f"\npostgres concurrency ({SECONDS:.0f} s): {figures}")
    assert figures["acknowledged_writes"] > 50


def test_several_threads_share_one_memory(mem: Memory):
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(20):
                mem.add(f"thread {t} fact {i} number {t * 100 + i}")
                mem.add("all threads write this sentence")
                mem.search(f"thread {t} fact")
        except BaseException as exc:  # noqa: BLE001 - report any failure in the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    contents = [r.content for r in mem.list(limit=1000)]
    assert len(contents) == 4 * 20 + 1
    assert contents.count("all threads write this sentence") == 1


# --- locks, errors and gc races, one at a time ------------------------------------------
def test_a_write_waits_out_a_held_lock(tmp_path: Path) -> None:
    """BEGIN IMMEDIATE retries with backoff: a lock held for a moment is no error."""
    path = tmp_path / "lock.db"
    with Memory(path=path, embedder=EMBEDDER) as mem:
        mem.store.conn.execute("PRAGMA busy_timeout = 0")  # only the store's retries wait
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(0.3, holder.execute, args=("COMMIT",))
        release.start()
        try:
            assert mem.add("written once the lock is released").status == "added"
        finally:
            release.join()
            holder.close()


def test_a_locked_read_is_retried_then_reported_as_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "plain.db"  # rollback journal: a writer's EXCLUSIVE lock blocks readers
    conn = sqlite3.connect(path, factory=GuardedConnection, isolation_level=None, timeout=0)
    conn.execute("CREATE TABLE t(x)")
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.2, other.execute, args=("COMMIT",))
    release.start()
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (0,)
    release.join()
    other.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(sqlite_conn, "READ_RETRIES", 2)
    with pytest.raises(StoreError) as info:
        conn.execute("SELECT COUNT(*) FROM t")
    assert isinstance(info.value, SQLiteStoreError) and info.value.locked
    other.execute("COMMIT")
    with pytest.raises(StoreError, match="syntax error"):
        conn.execute("SELEC 1")
    conn.close()
    other.close()


def test_a_damaged_file_is_a_store_error_never_a_sqlite_error(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    with Memory(path=path, embedder=EMBEDDER) as mem:
        mem.add_many([f"row {i} about ravens and {WORDS[i % 25]}" for i in range(300)])
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.seek(size // 2)
        handle.write(b"\xff" * (size // 2))
    try:
        with Memory(path=path, embedder=EMBEDDER) as mem:
            mem.list(limit=1000)
            report = mem.store.check()
            assert not report["ok"]
    except StoreError:
        pass  # refused cleanly: a memchentic error, not sqlite3.DatabaseError


def _stale(mem: Memory) -> str:
    result = mem.add("a memo that expired long ago", ttl_days=1,
                     created_at=utcnow() - timedelta(days=200))  # fmt: skip
    assert result.id is not None
    return result.id


def test_gc_skips_a_memory_deleted_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    with Memory(path=tmp_path / "gc.db", embedder=EMBEDDER) as mem:
        stale = _stale(mem)
        seen = mem.store.gc_candidates(utcnow(), None)  # gc has picked its candidates...
        monkeypatch.setattr(mem.store, "gc_candidates", lambda *_: seen)
        mem.delete(stale)  # ...and another process deletes one before gc gets to it
        assert mem.gc() == {"dry_run": False, "expired": [], "decayed": [], "deleted": 0}


def test_gc_keeps_a_memory_revised_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    with Memory(path=tmp_path / "gc.db", embedder=EMBEDDER) as mem:
        stale = _stale(mem)
        seen = mem.store.gc_candidates(utcnow(), None)
        monkeypatch.setattr(mem.store, "gc_candidates", lambda *_: seen)
        mem.revise(stale, "a memo brought back to life")  # renews its expiry
        assert mem.gc()["deleted"] == 0
        assert mem.get(stale).content == "a memo brought back to life"
