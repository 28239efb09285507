"""Short-term memory (DESIGN section 7): turns, default sessions, working memory,
session summaries, pin/unpin, and maintain() (gc, consolidation, summaries, events)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memchentic import Memory, NamespaceError, ValidationError
from memchentic.clock import utcnow
from memchentic.ids import new_id
from memchentic.learn.summaries import ExtractiveSummarizer
from memchentic.record import Event, Turn


def test_turns_are_kept_in_order_and_limited(mem: Memory):
    for i in range(7):
        mem.record_turn("user" if i % 2 == 0 else "assistant", f"message {i}", session_id="s1")
    history = mem.get_history("s1")
    assert [t.content for t in history] == [f"message {i}" for i in range(7)]
    assert [t.content for t in mem.get_history("s1", 3)] == ["message 4", "message 5", "message 6"]
    assert all(isinstance(t, Turn) and t.session_id == "s1" for t in history)
    assert history[0].role == "user" and history[1].role == "assistant"
    assert mem.get_history("other") == []


def test_add_message_and_default_session_per_user(mem: Memory):
    turn = mem.add_message({"role": "User", "content": "hi", "metadata": {"lang": "en"}},
                           user_id="sam")  # fmt: skip
    assert turn.session_id == "default:sam" and turn.role == "user"
    assert turn.namespace == "user:sam" and turn.metadata == {"lang": "en"}
    mem.record_turn("user", "hello", user_id="kim")
    assert [t.content for t in mem.get_history(user_id="sam")] == ["hi"]
    assert [t.content for t in mem.get_history(user_id="kim")] == ["hello"]
    local = mem.record_turn("user", "no scope at all")
    assert local.session_id == f"default:{mem.settings.default_user_id}"
    ana = mem.as_identity("ana")
    assert ana.record_turn("user", "as an identity").session_id == "default:ana"
    assert dict(mem.list_sessions(user_id="sam")) == {"default:sam": 1}


def test_session_id_never_filters_search(mem: Memory):
    fact = mem.add("Sam's bike is a blue Brompton", user_id="sam", session_id="s1")
    hits = mem.search("blue Brompton bike", user_id="sam")
    assert fact.id in [h.id for h in hits]
    ctx = mem.context("blue Brompton bike", user_id="sam", session_id="s2")
    assert fact.id in [i.id for i in ctx["relevant_facts"].items]


def test_turns_follow_access_rules(mem: Memory):
    alice, bob = mem.as_identity("alice"), mem.as_identity("bob")
    alice.record_turn("user", "alice's secret plan", session_id="shared")
    bob.record_turn("user", "bob's question", session_id="shared")
    assert [t.content for t in alice.get_history("shared")] == ["alice's secret plan"]
    assert [t.content for t in bob.get_history("shared")] == ["bob's question"]
    assert bob.get_history("shared", namespace="user:alice") == []
    assert bob.get_history("shared", namespace="user:nobody-at-all") == []
    with pytest.raises(NamespaceError):
        bob.record_turn("user", "sneaky", session_id="shared", namespace="user:alice")
    assert dict(bob.list_sessions()) == {"shared": 1}
    assert [t.content for t in mem.get_history("shared")] == [  # trusted: every namespace
        "alice's secret plan", "bob's question",
    ]  # fmt: skip


def test_secrets_in_turns_are_redacted(mem: Memory):
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
    turn = mem.record_turn("user", f"my key is {key}", user_id="s")
    assert "sk-proj" not in turn.content and "[REDACTED" in turn.content
    assert "sk-proj" not in mem.get_history(user_id="s")[0].content


def test_bad_turns(mem: Memory):
    with pytest.raises(ValidationError):
        mem.record_turn("", "x")
    with pytest.raises(ValidationError):
        mem.record_turn("user", "  ")
    with pytest.raises(ValidationError):
        mem.add_message({"content": "no role"})
    with pytest.raises(ValidationError):
        mem.get_history("s", 0)
    with pytest.raises(ValidationError):
        mem.record_turn("user", "x", session_id="s" * 500)


def test_working_memory_is_session_scoped(mem: Memory):
    a = mem.add_working("Comparing flights to Porto", session_id="trip", user_id="sam")
    mem.add_working("Drafting the wedding speech", session_id="speech", user_id="sam")
    keyed = mem.add_working("step 1 of 3", session_id="trip", key="progress", user_id="sam")
    again = mem.add_working("step 2 of 3", session_id="trip", key="progress", user_id="sam")
    assert again.status == "updated" and again.id == keyed.id
    record = mem.get(a.id)
    assert record.type == "working" and record.session_id == "trip"
    assert record.expires_at is not None and record.created_at is not None
    ttl = record.expires_at - record.created_at
    assert ttl == timedelta(days=mem.settings.working_memory_ttl_days)
    texts = [r.content for r in mem.working_memory("trip", user_id="sam")]
    assert texts == ["Comparing flights to Porto", "step 2 of 3"]
    ctx = mem.context("flights", user_id="sam", session_id="trip")
    assert [i.text for i in ctx["working_memory"].items] == texts
    other = mem.context("flights wedding speech", user_id="sam", session_id="speech")
    assert [i.text for i in other["working_memory"].items] == ["Drafting the wedding speech"]


def test_summarize_session_writes_one_summary_and_replaces_it(mem: Memory):
    seen = []
    mem.subscribe(seen.append, types=["session.summarized"])
    for text in ("I want to plan a trip to Porto.", "Trains are better than planes for me."):
        mem.record_turn("user", text, user_id="sam", session_id="trip")
        mem.record_turn("assistant", "Noted.", user_id="sam", session_id="trip")
    first = mem.summarize_session("trip", user_id="sam")
    assert first.status == "added"
    record = mem.get(first.id)
    assert record.type == "summary" and record.slot_key == "session:trip:summary"
    assert record.content.startswith("Session trip, 4 turns (assistant 2, user 2).")
    assert "user: I want to plan a trip to Porto." in record.content
    assert record.metadata["turns"] == 4 and record.metadata["summarizer"] == "extractive"
    mem.record_turn("user", "Book the 9am train to Porto.", user_id="sam", session_id="trip")
    second = mem.summarize_session("trip", user_id="sam")
    assert second.status == "updated" and second.id == first.id
    summaries = mem.list(user_id="sam", type="summary")
    assert len(summaries) == 1 and "5 turns" in summaries[0].content
    assert [e.memory_id for e in seen] == [first.id, first.id]
    assert seen[0].payload["session_id"] == "trip" and "Porto" not in json.dumps(seen[0].to_dict())
    empty = mem.summarize_session("nothing-here", user_id="sam")
    assert empty.status == "refused" and empty.reason == "empty session"


def test_summarizer_is_pluggable(mem: Memory):
    class FirstWords:
        name = "first-words"

        def summarize(self, turns: list[Turn]) -> str:
            return " / ".join(t.content.split()[0] for t in turns)

    mem.record_turn("user", "alpha one", session_id="s")
    mem.record_turn("user", "beta two", session_id="s")
    result = mem.summarize_session("s", summarizer=FirstWords())
    assert mem.get(result.id).content == "alpha / beta"
    mem.summarizer = FirstWords()
    mem.record_turn("user", "gamma three", session_id="s")
    assert mem.get(mem.summarize_session("s").id).content == "alpha / beta / gamma"


def test_extractive_summarizer_is_deterministic_and_keeps_order():
    at = utcnow()
    turns = [
        Turn(new_id(), "s", "user:x", "user", text, at)
        for text in (
            "Porto trip in May. Trains to Porto are quick.",
            "ok thanks",
            "Porto hotels near the river.",
            "What about the weather?",
        )  # fmt: skip
    ]
    summary = ExtractiveSummarizer(2).summarize(turns)
    assert summary == ExtractiveSummarizer(2).summarize(turns)
    lines = summary.splitlines()
    assert lines[0] == "Session s, 4 turns (user 4)."
    assert len(lines) == 3 and all("Porto" in line for line in lines[1:])
    assert lines[1:] == sorted(lines[1:], key=lambda line: summary.index(line))


def test_pin_and_unpin_emit_events_and_keep_age(mem: Memory):
    seen = []
    mem.subscribe(seen.append, types=["memory.pinned", "memory.unpinned"])
    added = mem.add("The wifi password hint is 'blue door'", user_id="sam")
    before = mem.get(added.id)
    pinned = mem.pin(added.id)
    assert pinned.status == "updated" and mem.get(added.id).pinned
    assert mem.get(added.id).updated_at == before.updated_at
    assert mem.pin(added.id).reason == "already pinned"
    mem.unpin(added.id)
    assert not mem.get(added.id).pinned
    assert [(e.type, e.memory_id, e.namespace) for e in seen] == [
        ("memory.pinned", added.id, "user:sam"), ("memory.unpinned", added.id, "user:sam"),
    ]  # fmt: skip
    assert [v.op for v in mem.history(added.id)] == ["add", "pin", "unpin"]


def test_maintain_summarises_sessions_and_prunes_old_events(mem: Memory):
    mem.settings.session_summary_min_turns = 3
    for i in range(4):
        mem.record_turn("user", f"Porto plan step {i}", user_id="sam", session_id="long")
    mem.record_turn("user", "hi", user_id="sam", session_id="short")
    old = Event(new_id(), "memory.added", utcnow() - timedelta(days=45), "local", "user:sam")
    mem.store.add_event(old)

    dry = mem.maintain(dry_run=True).to_dict()
    assert dry["dry_run"] and dry["events_pruned"] is None
    assert {(s["session_id"], s["status"]) for s in dry["summaries"]} == {
        ("long", "would summarize"), ("short", "too short"),
    }  # fmt: skip
    assert mem.list(type="summary") == []

    report = mem.maintain()
    data = report.to_dict()
    assert data["gc"] == {"dry_run": False, "expired": [], "decayed": [], "deleted": 0}
    assert data["consolidation"] is not None  # this Memory has consolidate()
    by_session = {s["session_id"]: s for s in data["summaries"]}
    assert by_session["long"]["status"] == "added" and by_session["long"]["namespace"] == "user:sam"
    assert data["events_pruned"] >= 1
    assert old.id not in [e.id for e in mem.events(limit=10_000)]

    again = mem.maintain().to_dict()
    assert {s["session_id"]: s["status"] for s in again["summaries"]}["long"] == "current"
    mem.record_turn("user", "Porto plan step 4", user_id="sam", session_id="long")
    third = mem.maintain().to_dict()
    assert {s["session_id"]: s["status"] for s in third["summaries"]}["long"] == "updated"
    assert len(mem.list(type="summary")) == 1


def test_maintain_keeps_events_when_retention_is_zero(mem: Memory):
    mem.settings.events_retention_days = 0
    old = Event(new_id(), "memory.added", utcnow() - timedelta(days=400), "local", "user:sam")
    mem.store.add_event(old)
    assert mem.maintain().events_pruned is None
    assert old.id in [e.id for e in mem.events(limit=10_000)]


def test_identities_maintain_only_their_own_sessions(mem: Memory):
    mem.settings.session_summary_min_turns = 1
    alice, bob = mem.as_identity("alice"), mem.as_identity("bob")
    alice.record_turn("user", "alice talks", session_id="a")
    bob.record_turn("user", "bob talks", session_id="b")
    report = bob.maintain()
    assert [s["session_id"] for s in report.summaries] == ["b"]
    assert report.events_pruned is None  # the shared event log is the local admin's
    assert alice.list(type="summary") == []
