"""Events: emitted at the right moments, persisted, filtered by access, never fatal."""

from __future__ import annotations

import json

import pytest

from memchentic import Memory, ValidationError


def test_writes_emit_events_in_order(mem: Memory):
    seen = []
    mem.subscribe(seen.append)
    a = mem.add("Greta waters the ferns on Sundays", user_id="g")
    mem.add("Greta waters the ferns on Sundays", user_id="g")  # refused duplicate
    mem.add("token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", user_id="g")  # secret
    mem.revise(a.id, "Greta waters the ferns on Saturdays")
    mem.search("ferns")
    mem.delete(a.id)
    types = [e.type for e in seen if e.type != "history.appended"]
    assert types == [
        "memory.added", "memory.deduplicated", "memory.dropped", "memory.updated",
        "memory.searched", "memory.deleted",
    ]  # fmt: skip
    assert [e.payload["op"] for e in seen if e.type == "history.appended"] == [
        "add", "revise", "delete",
    ]  # fmt: skip
    assert seen[0].memory_id == a.id and seen[0].namespace == "user:g"
    stored = mem.events(limit=100)
    assert [e.id for e in stored] == [e.id for e in seen]
    assert [e.id for e in mem.events(since=seen[2].id, types=["memory.deleted"])] == [seen[-1].id]
    assert "ferns" not in json.dumps([e.to_dict() for e in stored])  # no content in the log


def test_identities_only_see_events_of_namespaces_they_can_read(mem: Memory):
    mem.directory.create_identity("hana")
    mem.directory.create_identity("ivo")
    hana, ivo = mem.as_identity("hana"), mem.as_identity("ivo")
    got_hana, got_ivo = [], []
    hana.subscribe(got_hana.append, types=["memory.added"])
    ivo.subscribe(got_ivo.append, types=["memory.added"])
    note = hana.add("Hana's private note about the launch")
    assert [e.memory_id for e in got_hana] == [note.id]
    assert got_ivo == []
    assert [e.memory_id for e in ivo.events(types=["memory.added"])] == []
    assert [e.memory_id for e in hana.events(types=["memory.added"])] == [note.id]


def test_a_failing_subscriber_never_breaks_a_write(mem: Memory, caplog):
    def boom(event):
        raise RuntimeError("subscriber exploded")

    token = mem.subscribe(boom)
    res = mem.add("Jonas keeps bees")
    assert res.status == "added" and mem.get(res.id).content == "Jonas keeps bees"
    assert "subscriber failed" in caplog.text
    assert mem.unsubscribe(token) is True and mem.unsubscribe(token) is False


def test_unknown_event_types_are_refused(mem: Memory):
    with pytest.raises(ValidationError) as err:
        mem.subscribe(print, types=["memory.exploded"])
    assert err.value.field == "types"
