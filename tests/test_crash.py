"""Crash safety (issue 9): writers killed with SIGKILL at random points lose no
acknowledged write, leave nothing half-written, and the store passes ``check``.

Each cycle forks two writer processes that add (one at a time and in batches),
revise and delete their own memories. Before a call a writer logs its *intent* to
a side file, after the call returns its *acknowledgement* (one ``write`` each, so a
kill never tears a line). Both are killed with SIGKILL at random moments; then the
store is reopened and must equal the acknowledged state, plus, for each writer,
all or nothing of the one call it was in when killed. Every row must be whole:
its vector is the embedding of its content, its versions are exactly its history,
the keyword and vector indexes find it, and ``check`` is clean.

Short variant: 50 kills on SQLite, 16 on PostgreSQL (when a server is available).
``MEMCHENTIC_LONG_TESTS=1``: 400 and 100.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import signal
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from memchentic import HashEmbedder, Memory
from memchentic.cli import app
from memchentic.store.base import MemoryFilter

from .conftest import Stores

LONG = os.environ.get("MEMCHENTIC_LONG_TESTS") == "1"
WORDS = (
    "amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
    "juniper", "kelp", "lagoon", "maple", "nectar", "onyx", "pepper", "quartz", "raven",
    "saffron", "tundra", "umber", "violet", "willow", "yarrow", "zephyr", "anchor", "bridge",
    "canyon", "dune", "estuary", "forest", "glacier", "hollow", "island", "jetty", "knoll",
    "ledge", "meadow", "nook", "orchard", "prairie", "quarry", "reef", "summit", "thicket",
    "upland", "valley", "wharf",
)  # fmt: skip
EVERYTHING = MemoryFilter(namespaces=None, include_expired=True, include_superseded=True)
EMBEDDER = HashEmbedder()


# --- the writer (a forked child) ------------------------------------------------------
def _content(worker: int, key: int, rev: int, rnd: random.Random) -> str:
    return f"crash w{worker} k{key}w{worker} r{rev} " + " ".join(rnd.sample(WORDS, 6))


def _writer(location: str, log_path: Path, worker: int, own: dict[str, int], seed: int) -> None:
    """Write forever (until killed): own maps this writer's live ids to their revision."""
    rnd = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(**line: Any) -> None:
        os.write(fd, (json.dumps(line) + "\n").encode())

    key = seed * 1000
    try:
        with Memory(store=location, embedder=EMBEDDER) as mem:
            while True:
                roll = rnd.random()
                if roll < 0.45 or len(own) < 3:
                    key += 1
                    text = _content(worker, key, 0, rnd)
                    log(t="intent", op="add", contents=[text])
                    result = mem.add(text, user_id=f"crash{worker}")
                    log(t="ack", op="add", ids=[result.id], status=[result.status])
                    if result.status == "added":
                        own[result.id] = 0
                elif roll < 0.55:
                    texts = []
                    for _ in range(3):
                        key += 1
                        texts.append(_content(worker, key, 0, rnd))
                    log(t="intent", op="add", contents=texts)
                    results = mem.add_many(texts, user_id=f"crash{worker}")
                    log(t="ack", op="add", ids=[r.id for r in results],
                        status=[r.status for r in results])  # fmt: skip
                    own.update({r.id: 0 for r in results if r.status == "added"})
                elif roll < 0.85:
                    memory_id = rnd.choice(sorted(own))
                    rev = own[memory_id] + 1
                    old = mem.store.get(memory_id)
                    assert old is not None
                    k = int(re.search(r" k(\d+)w", old.content).group(1))  # type: ignore[union-attr]
                    text = _content(worker, k, rev, rnd)
                    log(t="intent", op="revise", id=memory_id, content=text)
                    mem.revise(memory_id, text)
                    log(t="ack", op="revise", id=memory_id)
                    own[memory_id] = rev
                else:
                    memory_id = rnd.choice(sorted(own))
                    log(t="intent", op="delete", id=memory_id)
                    mem.delete(memory_id)
                    log(t="ack", op="delete", id=memory_id)
                    del own[memory_id]
    except BaseException as exc:  # any error is a failure the parent reports
        log(t="error", error=f"{type(exc).__name__}: {exc}")
        raise


def _spawn(location: str, log_path: Path, worker: int, own: dict[str, int], seed: int) -> int:
    with warnings.catch_warnings():  # Python 3.12+ warns about fork with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 0
        try:
            _writer(location, log_path, worker, own, seed)
        except BaseException:  # noqa: BLE001 - logged by _writer
            code = 3
        finally:
            os._exit(code)
    return pid


# --- the parent: model, kills, verification -----------------------------------------
@dataclass
class Figures:
    kills: int = 0
    kills_inside_a_write: int = 0
    pending_committed: int = 0
    acknowledged_ops: int = 0
    rows_checked: int = 0
    checks_clean: int = 0
    errors: list[str] = field(default_factory=list)


def _read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for text in path.read_text().splitlines():
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError:  # cannot happen with one write per line; be safe
            continue
    return lines


def _apply(state: dict[str, str], intent: dict[str, Any]) -> None:
    """Apply a revise or delete to ``state`` (id -> content)."""
    if intent["op"] == "revise":
        state[intent["id"]] = intent["content"]
    elif intent["op"] == "delete":
        state.pop(intent["id"], None)


def _replay(state: dict[str, str], lines: list[dict[str, Any]], figures: Figures) -> Any:
    """Apply the acknowledged calls; return the pending intent (None when there is none)."""
    pending = None
    for line in lines:
        if line["t"] == "error":
            figures.errors.append(line["error"])
        elif line["t"] == "intent":
            pending = line
        elif line["t"] == "ack":
            assert pending is not None and pending["op"] == line["op"]
            figures.acknowledged_ops += 1
            if line["op"] == "add":
                for memory_id, text, status in zip(
                    line["ids"], pending["contents"], line["status"], strict=True
                ):
                    if status == "added":
                        state[memory_id] = text
            else:
                _apply(state, pending)
            pending = None
    return pending


def _with_pending(state: dict[str, str], pending: list[Any], actual: dict[str, str]) -> bool:
    """Does ``state`` plus some of the pending calls (each all or nothing) give ``actual``?"""
    for chosen in itertools.product((False, True), repeat=len(pending)):
        trial = dict(state)
        for intent, take in zip(pending, chosen, strict=True):
            if not take:
                continue
            if intent["op"] == "add":  # committed: every one of its texts is a new row
                new = {actual[i]: i for i in actual if i not in trial}
                if not set(intent["contents"]) <= set(new):
                    break
                trial.update({new[text]: text for text in intent["contents"]})
            else:
                _apply(trial, intent)
        else:
            if trial == actual:
                state.clear()
                state.update(trial)
                return True
    return False


def _verify_rows(mem: Memory, state: dict[str, str], deleted: set[str], rnd: random.Random) -> int:
    store = mem.store
    rows = {r.id: r for r in store.iter_memories(EVERYTHING)}
    vectors = store.vectors(list(rows))
    for memory_id, record in rows.items():
        expected = EMBEDDER.embed(record.content)
        assert np.allclose(vectors[memory_id], expected, atol=1e-6), f"vector of {memory_id}"
        rev = int(re.search(r" r(\d+) ", record.content).group(1))  # type: ignore[union-attr]
        ops = [v.op for v in store.versions(memory_id)]
        assert ops == ["add"] + ["revise"] * rev, f"versions of {memory_id}: {ops}"
    for memory_id in rnd.sample(sorted(deleted), min(5, len(deleted))):
        assert [v.op for v in store.versions(memory_id)] == ["delete"], memory_id
    for memory_id in rnd.sample(sorted(rows), min(8, len(rows))):
        content = rows[memory_id].content
        token = re.search(r" (k\d+w\d+) ", content).group(1)  # type: ignore[union-attr]
        assert memory_id in [i for i, _ in store.keyword_search(token, 5, EVERYTHING)]
        top = store.vector_search(EMBEDDER.embed(content), 1, EVERYTHING)
        assert top and top[0][0] == memory_id, f"vector index misses {memory_id}"
    return len(rows)


def run_crash_cycles(location: str, tmp: Path, kills: int, seed: int = 9) -> Figures:
    """Fork two writers per cycle, SIGKILL them, verify; until ``kills`` kills."""
    rnd = random.Random(seed)
    figures = Figures()
    state: dict[str, str] = {}
    deleted: set[str] = set()
    Memory(store=location, embedder=EMBEDDER).close()  # create the store first
    cycle = 0
    while figures.kills < kills:
        cycle += 1
        logs = [tmp / f"cycle{cycle}-w{w}.jsonl" for w in (0, 1)]
        owned = [
            {i: int(re.search(r" r(\d+) ", c).group(1))  # type: ignore[union-attr]
             for i, c in state.items() if c.startswith(f"crash w{w} ")}
            for w in (0, 1)
        ]  # fmt: skip
        pids = [
            _spawn(location, logs[w], w, owned[w], cycle * 2 + w + seed * 100_000) for w in (0, 1)
        ]
        for pid in pids:
            time.sleep(rnd.uniform(0.05, 0.6))
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                os.kill(pid, signal.SIGKILL)
                figures.kills += 1
            os.waitpid(pid, 0)
        before = dict(state)
        pending = [p for p in (_replay(state, _read_log(path), figures) for path in logs) if p]
        assert not figures.errors, figures.errors
        figures.kills_inside_a_write += len(pending)
        with Memory(store=location, embedder=EMBEDDER) as mem:
            actual = {r.id: r.content for r in mem.store.iter_memories(EVERYTHING)}
            acked = dict(state)
            assert _with_pending(state, pending, actual), _diff(acked, actual)
            figures.pending_committed += sum(1 for p in pending if _committed(p, acked, state))
            deleted |= set(before) - set(state)
            figures.rows_checked += _verify_rows(mem, state, deleted, rnd)
            report = mem.store.check()
            assert report["ok"], report["problems"]
            figures.checks_clean += 1
    result = CliRunner().invoke(app, ["check", "--store", location])
    assert result.exit_code == 0, result.output
    assert "clean" in result.output
    return figures


def _committed(intent: dict[str, Any], acked: dict[str, str], final: dict[str, str]) -> bool:
    if intent["op"] == "add":
        return any(c in final.values() for c in intent["contents"])
    if intent["op"] == "revise":
        return final.get(intent["id"]) == intent["content"]
    return intent["id"] in acked and intent["id"] not in final


def _diff(expected: dict[str, str], actual: dict[str, str]) -> str:
    missing = {i: expected[i] for i in expected if actual.get(i) != expected[i]}
    extra = {i: actual[i] for i in actual if expected.get(i) != actual[i]}
    return f"acknowledged but missing or changed: {missing}; unexpected: {extra}"


def _report(name: str, figures: Figures) -> None:
    print(f"\n{name}: {figures}")  # shown with -s; the figures of docs/reliability.md


# --- a write that raises --------------------------------------------------------------------
def test_a_rolled_back_write_leaves_nothing_behind(mem: Memory, backend: str) -> None:
    class Boom(Exception):
        pass

    try:
        with mem.store.write():
            mem.add("phantom row about quasars")
            assert mem.search("phantom quasars")  # seen inside the transaction
            raise Boom
    except Boom:
        pass
    assert mem.search("phantom quasars") == []  # no row, no vector
    if backend == "postgres":  # its keyword statistics are a table of their own
        with mem.store.connection() as conn:  # type: ignore[attr-defined]
            assert conn.execute("SELECT docs FROM term_docs WHERE term = 'quasar'").fetchall() == []
    real = mem.add("real row about pulsars")
    assert [h.id for h in mem.search("real pulsars")] == [real.id]


# --- the tests ------------------------------------------------------------------------
def test_sqlite_survives_sigkill_of_writers(tmp_path: Path) -> None:
    figures = run_crash_cycles(str(tmp_path / "crash.db"), tmp_path, 400 if LONG else 50)
    _report("sqlite crash", figures)
    assert figures.kills >= 50 and figures.checks_clean >= 25
    assert figures.kills_inside_a_write > 0  # the kills did land inside writes


@pytest.fixture
def pg_location(postgres_stores: Stores) -> str:
    """A store URL in a schema of its own on the test PostgreSQL server."""
    return postgres_stores.location("crash")


def test_postgres_survives_sigkill_of_writers(pg_location: str, tmp_path: Path) -> None:
    figures = run_crash_cycles(pg_location, tmp_path, 100 if LONG else 16)
    _report("postgres crash", figures)
    assert figures.kills >= 16 and figures.checks_clean >= 8
