"""A program written against mem0's documented calls runs on memchentic with only its
import changed (issue 24, item 1).

``PROGRAM`` is mem0's quickstart usage (add with messages, search, get_all, get,
update, history, delete, delete_all), kept as mem0 spells it; the test runs it with
``from memchentic.mem0 import Memory`` in place of ``from mem0 import Memory``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from memchentic.errors import ValidationError
from memchentic.mem0 import Memory as Mem0Memory

PROGRAM = textwrap.dedent("""
    from mem0 import Memory

    m = Memory()
    messages = [
        {"role": "user", "content": "I'm planning to watch a movie tonight."},
        {"role": "assistant", "content": "How about a thriller?"},
        {"role": "user", "content": "I love sci-fi movies."},
    ]
    added = m.add(messages, user_id="alice", metadata={"category": "movies"}, infer=False)
    ids = [r["id"] for r in added["results"]]
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD", "ADD"]

    m.add("My name is Bob and I live in Lisbon.", user_id="bob")

    found = m.search("what movies does she love", user_id="alice", limit=3)
    top = found["results"][0]
    assert top["memory"] == "I love sci-fi movies.", found
    assert top["metadata"]["category"] == "movies" and "score" in top

    everything = m.get_all(user_id="alice")
    assert {r["id"] for r in everything["results"]} == set(ids)
    only_user = m.get_all(user_id="alice", filters={"role": "user"})
    assert len(only_user["results"]) == 2

    one = m.get(ids[2])
    assert one["memory"] == "I love sci-fi movies." and one["user_id"] == "alice"

    assert m.update(ids[2], "I love sci-fi and fantasy movies.")["message"]
    assert m.get(ids[2])["memory"] == "I love sci-fi and fantasy movies."
    events = [h["event"] for h in m.history(ids[2])]
    assert events[0] == "ADD" and events[-1] == "UPDATE", events
    assert m.history(ids[2])[-1]["new_memory"] == "I love sci-fi and fantasy movies."

    m.delete(ids[0])
    assert m.get(ids[0]) is None
    m.delete_all(user_id="alice")
    assert m.get_all(user_id="alice")["results"] == []
    assert m.get_all(user_id="bob")["results"], "delete_all must leave other users alone"
    RESULT = "ok"
""")


def test_a_mem0_program_runs_with_only_its_import_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCHENTIC_HOME", str(tmp_path))  # Memory() opens HOME/memory.db
    monkeypatch.setenv("MEMCHENTIC_EMBEDDER", "hash")
    ported = PROGRAM.replace("from mem0 import Memory", "from memchentic.mem0 import Memory")
    assert ported.count("memchentic") == 1  # the only change
    scope: dict[str, Any] = {}
    exec(compile(ported, "mem0_program.py", "exec"), scope)  # noqa: S102 - the test's program
    assert scope["RESULT"] == "ok"
    scope["m"].close()


def test_add_infers_with_learn_and_keeps_run_ids(tmp_path: Path) -> None:
    with Mem0Memory(path=tmp_path / "m.db", embedder="hash") as m:
        out = m.add([{"role": "user", "content": "I work at Globex as a designer."}],
                    user_id="maya", run_id="run-1")  # fmt: skip
        assert out["results"] and {r["event"] for r in out["results"]} == {"ADD"}
        memory = m.get(out["results"][0]["id"])
        assert memory is not None
        assert memory["run_id"] == "run-1" and memory["metadata"]["source"] == "learn"
        m.add("I also like tea.", user_id="maya", run_id="run-2", infer=False)
        assert len(m.get_all(user_id="maya", run_id="run-2")["results"]) == 1
        in_run = m.search("Globex designer tea", user_id="maya", run_id="run-1")["results"]
        assert in_run and {r["run_id"] for r in in_run} == {"run-1"}
        assert m.search("tea", user_id="maya", run_id="run-1")["results"] == []
        assert m.search("tea", user_id="maya")["results"][0]["memory"] == "I also like tea."
        system = m.add([{"role": "system", "content": "You are terse."}], user_id="maya",
                       infer=False)  # fmt: skip
        assert system["results"] == []  # mem0 keeps no system messages


def test_the_scope_of_delete_all_is_never_empty(tmp_path: Path) -> None:
    with Mem0Memory(path=tmp_path / "m.db", embedder="hash") as m:
        m.add("keep me", user_id="zoe", infer=False)
        with pytest.raises(ValidationError):
            m.delete_all()
        assert len(m.get_all(user_id="zoe")["results"]) == 1
        m.reset()
        assert m.get_all(user_id="zoe")["results"] == []
