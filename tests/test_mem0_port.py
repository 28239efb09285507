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

from memchentic.errors import MemchenticError, ValidationError
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


def test_the_platform_clients_keyword_arguments_work_against_the_server(tmp_path: Path) -> None:
    """mem0's ``MemoryClient`` habits (issue 45, item 4), against a real server:
    ``version``, ``output_format``, ``top_k``, ``update(text=...)`` and ``filters`` in
    the v2 shape, whose scope terms become the scope and whose other terms filter
    metadata; what cannot be a scope is refused, never an empty answer."""
    pytest.importorskip("fastapi")
    from memchentic.mem0 import MemoryClient

    from .live_server import live_server

    with live_server(tmp_path, mcp=False, console=False) as live:
        with MemoryClient(api_key=live.keys["alice"], host=live.url) as client:
            client.add("I love sci-fi movies", user_id="alice", version="v2",
                       output_format="v1.1", metadata={"category": "movies"})  # fmt: skip
            client.add("I'm allergic to peanuts", user_id="alice", metadata={"category": "food"})
            added = client.add("我住在上海", user_id="alice", output_format="v1.0")
            assert isinstance(added, list) and added[0]["event"] == "ADD"  # kept as written

            v2 = client.search("movies", version="v2", filters={"AND": [{"user_id": "alice"}]})
            assert [r["memory"] for r in v2["results"]][:1] == ["Loves sci-fi movies"]
            either = client.search("movies", version="v2", filters={"OR": [{"user_id": "alice"}]})
            assert [r["id"] for r in either["results"]] == [r["id"] for r in v2["results"]]
            food = client.search("peanuts", version="v2", filters={
                "AND": [{"user_id": "alice"}, {"category": {"in": ["food"]}}]})  # fmt: skip
            assert [r["memory"] for r in food["results"]] == ["Allergic to peanuts"]
            bare = client.search("movies", user_id="alice", output_format="v1.0", top_k=1)
            assert isinstance(bare, list) and len(bare) == 1

            movies = {"AND": [{"user_id": "alice"}, {"category": "movies"}]}
            listed = client.get_all(version="v2", filters=movies)
            assert [r["memory"] for r in listed["results"]] == ["Loves sci-fi movies"]
            assert len(client.get_all(version="v2", filters={"user_id": "alice"}, top_k=2)[
                "results"]) == 2  # fmt: skip

            memory_id = listed["results"][0]["id"]
            assert client.update(memory_id, text="Loves sci-fi and fantasy movies")["message"]
            assert client.get(memory_id)["memory"] == "Loves sci-fi and fantasy movies"

            refused = [
                ({"version": "v3"}, "version"),
                ({"output_format": "v2.0"}, "output_format"),
                ({"filters": {"OR": [{"user_id": "alice"}, {"category": "food"}]}},
                 "filters.OR[0].user_id"),
                ({"filters": {"user_id": {"in": ["alice", "bob"]}}}, "filters.user_id"),
                ({"filters": {"AND": [{"app_id": "shop"}]}}, "filters.AND[0].app_id"),
                ({"user_id": "alice", "filters": {"AND": [{"user_id": "bob"}]}},
                 "filters.AND[0].user_id"),
            ]  # fmt: skip
            for options, field in refused:
                with pytest.raises(ValidationError) as raised:
                    client.search("movies", **options)
                assert raised.value.field == field, options
        # bob's key cannot reach alice's memories by naming her in a v2 filter
        with MemoryClient(api_key=live.keys["bob"], host=live.url) as bob:
            try:
                seen = bob.search("movies", version="v2", filters={"AND": [{"user_id": "alice"}]})
            except MemchenticError as denied:  # refused, or answered with nothing
                assert denied.code in ("forbidden", "invalid_namespace"), denied
            else:
                assert seen == {"results": []}
