"""Issue 20 item 1 (denial of service): a slot's history is bounded (count and bytes),
a version stores only what changed (N slot updates cost O(N), not O(N^2)), and one
call (one HTTP request) may cause only so much work: lines and characters per
``learn``, writes per call. Each limit is a setting; breaking one is a LimitError
(HTTP 413) naming it, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memchentic import LimitError, Memory, Settings, ValidationError
from memchentic.store.base import MemoryFilter
from memchentic.write.slot_history import json_bytes

SLOT = "profile.location"


def _move(mem: Memory, n: int, **options: Any) -> str:
    """``n`` writes of the slot, one value each; the slot's memory id."""
    results = mem.add_many(
        [{"content": f"Lives in City {i}", "slot_key": SLOT} for i in range(n)],
        user_id="sam", **options,
    )  # fmt: skip
    assert [r.status for r in results] == ["added"] + ["updated"] * (n - 1)
    return results[0].id


def _version_bytes(mem: Memory, memory_id: str) -> int:
    return sum(len(json.dumps(v.to_dict(), ensure_ascii=False)) for v in mem.history(memory_id))


def _count(mem: Memory) -> int:
    return mem.store.count(MemoryFilter(namespaces=None, include_expired=True,
                                        include_superseded=True))  # fmt: skip


def test_history_keeps_the_newest_values_and_versions_keep_them_all(
    make_mem: Callable[..., Memory],
) -> None:
    mem = make_mem(settings=Settings(slot_history_max_entries=3))
    slot = _move(mem, 10)
    history = mem.get(slot, touch=False).metadata["history"]
    assert [h["content"] for h in history] == ["Lives in City 6", "Lives in City 7",
                                               "Lives in City 8"]  # fmt: skip
    versions = mem.history(slot)
    assert [v.op for v in versions] == ["add"] + ["slot_update"] * 9
    # every value is still readable in the versions: who, when, what changed
    assert [v.changes["content"] for v in versions[1:]] == [
        [f"Lives in City {i}", f"Lives in City {i + 1}"] for i in range(9)
    ]
    last = versions[-1].changes["metadata.history"]
    assert last[0] == {"dropped": 1}
    assert [h["content"] for h in last[1]["appended"]] == ["Lives in City 8"]
    assert versions[1].changes["metadata.history"][0] == {"dropped": 0}
    assert all(v.actor and v.at for v in versions)


def test_history_is_bounded_in_bytes_and_the_newest_value_is_cut_to_fit(
    make_mem: Callable[..., Memory],
) -> None:
    mem = make_mem(settings=Settings(slot_history_max_bytes=700))
    values = [f"{i} " + "x" * 250 for i in range(5)] + ["short", "y" * 2000, "last"]
    ids = {mem.add(v, slot_key=SLOT, user_id="sam").id for v in values}
    assert len(ids) == 1
    slot = ids.pop()
    history = mem.get(slot, touch=False).metadata["history"]
    assert json_bytes(history) <= 700
    (newest,) = history  # the 2,000-character value, cut to fill the room, flagged
    assert newest["truncated"] is True and set(newest["content"]) == {"y"}
    assert 300 < len(newest["content"]) < 700
    # the versions keep the whole value
    assert mem.history(slot)[-1].changes["content"] == ["y" * 2000, "last"]


def test_slot_updates_cost_linear_version_storage(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem()
    small = _version_bytes(mem, _move(mem, 50, namespace="user:a"))
    large = _version_bytes(mem, _move(mem, 400, namespace="user:b"))
    history = mem.get(mem.store.find_slot("user:b", SLOT).id, touch=False).metadata["history"]
    assert len(history) == mem.settings.slot_history_max_entries == 20
    # each version holds its own change: about 0.7 kB. Before the fix each one
    # repeated the whole history twice: 400 updates took 21 MB (quadratic growth)
    assert large < 400 * 1500
    assert large < 10 * small  # 8x the updates: 8x the bytes, not 64x


def test_merged_slot_metadata_stays_within_max_metadata_bytes(
    make_mem: Callable[..., Memory],
) -> None:
    mem = make_mem(settings=Settings(max_metadata_bytes=200))
    slot = mem.add("v0", slot_key=SLOT, user_id="sam", metadata={"k0": "a" * 60}).id
    mem.add("v1", slot_key=SLOT, user_id="sam", metadata={"k1": "b" * 60})
    with pytest.raises(ValidationError) as info:
        mem.add("v2", slot_key=SLOT, user_id="sam", metadata={"k2": "c" * 60})
    assert info.value.field == "metadata" and "MAX_METADATA_BYTES" in str(info.value)
    stored = mem.get(slot, touch=False)
    assert stored.content == "v1" and set(stored.metadata) == {"k0", "k1", "history"}
    assert json_bytes(stored.metadata) <= 200


def test_a_version_records_only_the_metadata_keys_that_changed(
    make_mem: Callable[..., Memory],
) -> None:
    mem = make_mem()
    big = {"notes": "n" * 5000, "a": 1, "gone": True}
    memory_id = mem.add("Ana keeps the release checklist", metadata=big).id
    mem.revise(memory_id, metadata={"notes": "n" * 5000, "a": 2, "new": "x"})
    change = mem.history(memory_id)[-1].changes
    assert change["metadata"] == [{"a": 1, "gone": True}, {"a": 2, "new": "x"}]
    assert "metadata.history" not in change


# --- the work one call may cause -------------------------------------------------------


def _lines(n: int) -> str:
    return "\n".join(f"I live in City {i}." for i in range(n))


def _limited(call: Callable[[], object], setting: str, field: str) -> LimitError:
    with pytest.raises(LimitError) as info:
        call()
    assert info.value.setting == setting and info.value.field == field
    assert setting in str(info.value)
    return info.value


def test_learn_refuses_more_lines_or_characters_than_the_settings(
    make_mem: Callable[..., Memory],
) -> None:
    mem = make_mem(settings=Settings(learn_max_lines=10, learn_max_chars=300))
    error = _limited(lambda: mem.learn(_lines(11), user_id="sam"), "LEARN_MAX_LINES", "messages")
    assert "at most 10 lines" in str(error) and "got 11" in str(error)
    _limited(lambda: mem.learn([_lines(5)] * 3, user_id="sam"), "LEARN_MAX_LINES", "messages")
    _limited(lambda: mem.learn("I live in " + "Lisbon" * 60, user_id="sam"),
             "LEARN_MAX_CHARS", "messages")  # fmt: skip
    assert _count(mem) == 0
    assert len(mem.learn(_lines(10), user_id="sam")) == 10  # at the limit: accepted


def test_one_call_writes_at_most_max_writes_per_call(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem(settings=Settings(max_writes_per_call=5))
    _limited(lambda: mem.add_many([f"fact {i} about lakes" for i in range(6)]),
             "MAX_WRITES_PER_CALL", "items")  # fmt: skip
    ops = [{"op": "add", "content": f"note {i} on rivers"} for i in range(6)]
    _limited(lambda: mem.manage(ops), "MAX_WRITES_PER_CALL", "operations")
    # learn: 6 memories found in 6 lines is over the writes limit
    _limited(lambda: mem.learn(_lines(6), user_id="sam"), "MAX_WRITES_PER_CALL", "messages")
    assert _count(mem) == 0
    assert len(mem.add_many([f"fact {i} about lakes" for i in range(5)])) == 5


# --- over HTTP (a real server on each backend) -------------------------------------------


@pytest.fixture
def served(make_mem: Callable[..., Memory]) -> Iterator[tuple[str, dict[str, str], Memory]]:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    from .live_server import ServerThread

    mem = make_mem()
    mem.directory.create_identity("alice")
    key = KeyRing(mem.store).create(identity="alice")[0]
    thread = ServerThread(create_app(mem))
    url = thread.start()
    try:
        yield url, {"Authorization": f"Bearer {key}"}, mem
    finally:
        thread.stop()


def _too_much(response: Any, setting: str, field: str) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "limit_exceeded"
    assert error["setting"] == setting and error["field"] == field
    assert setting in error["message"]


def test_http_learn_of_many_lines_is_a_413_naming_the_setting_and_stores_nothing(
    served: tuple[str, dict[str, str], Memory],
) -> None:
    import httpx

    from memchentic import Client

    url, auth, mem = served
    with httpx.Client(base_url=url, headers=auth, timeout=60) as http:
        limit = mem.settings.learn_max_lines
        _too_much(http.post("/v1/learn", json={"messages": _lines(limit + 1)}),
                  "LEARN_MAX_LINES", "messages")  # fmt: skip
        items = [{"content": f"fact {i}"} for i in range(mem.settings.max_writes_per_call + 1)]
        _too_much(http.post("/v1/memories/batch", json={"items": items}),
                  "MAX_WRITES_PER_CALL", "items")  # fmt: skip
        ops = [{"op": "add", **item} for item in items]
        _too_much(http.post("/v1/manage", json={"operations": ops}),
                  "MAX_WRITES_PER_CALL", "operations")  # fmt: skip
        assert http.get("/v1/memories").json() == []
        assert _count(mem) == 0
        # under the limits, 300 moves of one slot: one memory, a bounded history
        moved = http.post("/v1/learn", json={"messages": _lines(300)})
        assert moved.status_code == 200, moved.text
        (memory,) = http.get("/v1/memories").json()
        assert len(memory["metadata"]["history"]) == mem.settings.slot_history_max_entries
        versions = http.get(f"/v1/memories/{memory['id']}/history").json()
        assert len(versions) == 300 and len(json.dumps(versions)) < 300 * 1500
    with Client(url, auth["Authorization"].split()[1]) as client:  # the same error class
        _limited(lambda: client.learn(_lines(limit + 1)), "LEARN_MAX_LINES", "messages")
