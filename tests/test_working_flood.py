"""Working memory cannot be flooded away (issue 32, item 3).

``working_memory()`` and ``context()`` used to read the newest 10,000 working
memories of every namespace the caller could read and keep the session's: a group
member that wrote 10,100 working memories into the shared group made alice's
private working memory vanish. It is now read by session, one namespace at a time
(each namespace takes its turn when there are more than the limit), and one
identity may hold at most ``WORKING_MEMORY_MAX_PER_IDENTITY`` live working
memories in a namespace it shares. Library on both backends; HTTP through a real
server.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from memchentic import Memory, Settings, ValidationError
from memchentic.clock import utcnow
from memchentic.ids import new_id
from memchentic.record import MemoryRecord

NOTE = "alice: the client's budget is 40k, keep it quiet"
#: Working notes different enough not to be refused as near duplicates.
STEPS = [
    "book the meeting room for Tuesday", "draft the quarterly report outline",
    "call the supplier about late parcels", "review Sam's pull request on caching",
    "water the office plants before leaving", "renew the domain name next month",
]  # fmt: skip


def _team(mem: Memory) -> tuple[Memory, Memory]:
    for name in ("alice", "bob", "carol"):
        mem.directory.create_identity(name)
    mem.directory.create_group("team", admins=["alice"], members=["bob", "carol"])
    return mem.as_identity("alice"), mem.as_identity("bob")


def _shows_the_note(alice: Memory) -> None:
    assert NOTE in [r.content for r in alice.working_memory("s1")]
    assert NOTE in [i.text for i in alice.context(session_id="s1")["working_memory"].items]


def test_a_flood_of_other_sessions_in_a_group_hides_nothing(mem: Memory):
    """10,100 working memories of other sessions in the shared group, newer than
    alice's private one: her session still shows it (the old window was 10,000)."""
    alice, _ = _team(mem)
    alice.add_working(NOTE, session_id="s1")
    later = utcnow() + timedelta(seconds=1)
    vector = mem.embedder.embed("flood")
    rows = [
        MemoryRecord(
            id=new_id(int((later + timedelta(milliseconds=i)).timestamp() * 1000)),
            namespace="group:team",
            content=f"flood {i}",
            type="working",
            session_id=f"bob-{i}",
            created_at=later + timedelta(milliseconds=i),
            updated_at=later,
            expires_at=later + timedelta(days=1),
        )
        for i in range(10_100)
    ]
    mem.store.insert_many([(r, np.asarray(vector)) for r in rows])
    _shows_the_note(alice)
    assert [r.content for r in alice.working_memory("bob-7")] == ["flood 7"]  # still readable


def test_a_flood_of_the_same_session_in_a_group_hides_nothing(mem: Memory):
    """Session ids are not secret: bob fills session s1 of the group with more working
    memories than a context lists. Each namespace takes its turn, the caller's own
    first, so alice's private ones stay in view (and so do some of the group's)."""
    alice, bob = _team(mem)
    alice.add_working(NOTE, session_id="s1")
    limit = mem.settings.context_section_limit
    written = bob.add_many([f"bob's note number {i} about s1" for i in range(limit + 5)],
                           type="working", session_id="s1", namespace="group:team",
                           on_duplicate="keep")  # fmt: skip
    assert [w.status for w in written] == ["added"] * (limit + 5)
    _shows_the_note(alice)
    shown = alice.working_memory("s1")
    assert len(shown) == limit
    assert sum(r.namespace == "group:team" for r in shown) == limit - 1
    newest = max(r.created_at for r in shown if r.namespace == "group:team")
    assert newest == max(r.created_at for r in bob.working_memory("s1"))  # the newest kept
    assert [r.content for r in alice.working_memory("s1", namespace="group:team", limit=3)] == [
        f"bob's note number {i} about s1" for i in range(limit + 2, limit + 5)
    ]


def test_working_memory_is_read_by_session_along_an_index(mem: Memory, backend: str):
    """The session's read names the session (MemoryFilter.session_id), and the plan
    uses the index of migration 9 rather than reading every working memory."""
    if backend != "sqlite":
        pytest.skip("the plan is checked on SQLite; PostgreSQL has the same index")
    from memchentic.store.filters import MemoryFilter

    flt = MemoryFilter(namespaces=["group:team"], types=["working"], session_id="s1",
                       now=utcnow())  # fmt: skip
    cond, params = mem.store.dialect.condition(flt)
    sql = mem.store.dialect.sql(
        f"EXPLAIN QUERY PLAN SELECT m.id FROM memories m WHERE {cond} "
        "ORDER BY m.created_at DESC, m.id DESC LIMIT 20"
    )
    plan = " ".join(str(row[-1]) for row in mem.store._rows(sql, params))
    assert "ix_memories_working" in plan and "TEMP B-TREE" not in plan


def _capped(make_mem, cap: int) -> tuple[Memory, Memory, Memory]:
    mem = make_mem(settings=Settings(working_memory_max_per_identity=cap))
    alice, bob = _team(mem)
    return mem, alice, bob


def test_one_identity_may_hold_only_so_many_working_memories_in_a_shared_namespace(make_mem):
    mem, alice, bob = _capped(make_mem, 3)
    group = {"namespace": "group:team", "session_id": "s1"}
    written = [bob.add_working(step, **group) for step in STEPS[:3]]
    assert [w.status for w in written] == ["added"] * 3
    ids = [w.id for w in written]
    with pytest.raises(ValidationError, match="WORKING_MEMORY_MAX_PER_IDENTITY") as refused:
        bob.add_working(STEPS[3], **group)
    assert refused.value.field == "namespace" and "at most 3" in str(refused.value)
    with pytest.raises(ValidationError, match="WORKING_MEMORY_MAX_PER_IDENTITY"):
        bob.add(STEPS[4], type="working", **group)  # not only add_working
    with pytest.raises(ValidationError, match="WORKING_MEMORY_MAX_PER_IDENTITY"):
        bob.add_many(STEPS[4:], type="working", **group)
    assert sorted(r.id for r in bob.working_memory("s1")) == sorted(ids)  # nothing stored
    assert len(mem.list(namespace="group:team")) == 3
    # the cap is per identity and per shared namespace: others, and bob's own, are free
    assert alice.add_working("alice's step", **group).ok
    assert bob.add_working("in bob's private namespace", session_id="s1").ok
    assert bob.add("a plain fact for the team", namespace="group:team").ok
    # a delete frees a place; a keyed write that replaces one in place adds none
    bob.delete(ids[0])
    first = bob.add_working("progress: one of five", key="progress", **group)
    again = bob.add_working("progress: two of five", key="progress", **group)
    assert first.status == "added" and again.status == "updated" and again.id == first.id
    with pytest.raises(ValidationError, match="WORKING_MEMORY_MAX_PER_IDENTITY"):
        bob.add_working(STEPS[5], **group)


def test_expired_working_memories_do_not_count(make_mem):
    mem, _, bob = _capped(make_mem, 2)
    group = {"namespace": "group:team", "session_id": "s1"}
    then = utcnow() - timedelta(days=3)
    for step in STEPS[:2]:
        assert bob.add_working(step, now=then, ttl_days=1, **group).status == "added"
    assert [bob.add_working(s, **group).status for s in STEPS[2:4]] == ["added", "added"]
    with pytest.raises(ValidationError, match="WORKING_MEMORY_MAX_PER_IDENTITY"):
        bob.add_working(STEPS[4], **group)
    assert len(mem.list(namespace="group:team", include_expired=True)) == 4


def test_the_trusted_principal_has_no_cap(make_mem):
    mem, _, _ = _capped(make_mem, 1)
    for step in STEPS[:3]:
        assert mem.add_working(step, session_id="s1", namespace="group:team").status == "added"


# --- through HTTP ------------------------------------------------------------------------------
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from .live_server import Live  # noqa: E402  (``live``: a fresh server, tests/conftest.py)


def _http_team(live: Live) -> None:
    live.mem.directory.create_identity("carol")
    live.mem.directory.create_group("team", admins=["alice"], members=["bob"])


def test_http_a_flooded_session_still_shows_the_callers_working_memory(live: Live):
    _http_team(live)
    alice, bob = live.http("alice"), live.http("bob")
    mine = alice.post("/v1/working", json={"content": NOTE, "session_id": "s1"})
    assert mine.status_code == 200, mine.text
    limit = live.mem.settings.context_section_limit
    for i in range(limit + 2):
        body = {"content": f"bob q{i}a q{i}b q{i}c q{i}d", "session_id": "s1",
                "namespace": "group:team"}  # fmt: skip
        assert bob.post("/v1/working", json=body).status_code == 200
    shown = alice.get("/v1/working", params={"session_id": "s1"}).json()
    assert NOTE in [r["content"] for r in shown] and len(shown) == limit
    context = alice.post("/v1/context", json={"session_id": "s1"})
    assert context.status_code == 200 and NOTE in context.text


def test_http_a_write_over_the_cap_is_a_422_naming_the_setting(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    from .live_server import live_server

    monkeypatch.setenv("WORKING_MEMORY_MAX_PER_IDENTITY", "2")
    with live_server(tmp_path) as live:
        _http_team(live)
        bob = live.http("bob")
        body = {"session_id": "s1", "namespace": "group:team"}
        for step in STEPS[:2]:
            assert bob.post("/v1/working", json={**body, "content": step}).status_code == 200
        over = bob.post("/v1/working", json={**body, "content": STEPS[2]})
        assert over.status_code == 422, over.text
        error = over.json()["error"]
        assert error["field"] == "namespace"
        assert "WORKING_MEMORY_MAX_PER_IDENTITY" in error["message"]
        listed = bob.get("/v1/working", params={"session_id": "s1"}).json()
        assert sorted(r["content"] for r in listed) == sorted(STEPS[:2])
