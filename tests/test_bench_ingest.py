"""The benchmarks' two ingest modes (issue 22): one ``add`` per turn and one
``add_many`` per session store the same rows and give the same rankings; ties in
``created_at`` sort by write order, never by random id bits."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bench.harness.ingest import MODES, Entry, ingest, stamp
from memchentic import Memory

DAY = datetime(2023, 5, 20, 8, 0, tzinfo=UTC)
SESSIONS = {
    # two sessions of the same date: their i-th turns share a created_at
    "s1": (DAY, ["user: I adopted a grey cat called Pixel.",
                 "assistant: Lovely! What does Pixel eat?",
                 "user: Mostly tuna, and Pixel hates the vet.",
                 "assistant: Noted."]),
    "s2": (DAY, ["user: I ran my first marathon in Berlin.",
                 "assistant: Noted.",  # the same text again, kept
                 "user: It took four hours and ten minutes.",
                 "assistant: Well done on the marathon!"]),
    "s3": (DAY + timedelta(days=9), ["user: Pixel now eats chicken instead of tuna.",
                                     "assistant: Noted."]),
}  # fmt: skip
QUESTIONS = ["What does my cat eat?", "Where did I run a marathon?", "Noted", "vet visit"]


def _entries() -> list[Entry]:
    return [
        Entry(text, sid, stamp(start, i), {"role": text.split(":")[0], "turn": i})
        for sid, (start, texts) in SESSIONS.items()
        for i, text in enumerate(texts)
    ]


def _rankings(mem: Memory, ids: list[str]) -> list[list[tuple[int, float]]]:
    index = {mid: n for n, mid in enumerate(ids)}
    now = DAY + timedelta(days=10)
    return [
        [(index[h.memory.id], round(h.score, 9)) for h in mem.search(q, user_id="u", now=now)]
        for q in QUESTIONS
    ]


def test_per_turn_add_and_add_many_give_the_same_rankings(make_mem: Callable[..., Memory]):
    entries = _entries()
    stored, ranked = {}, {}
    for mode in MODES:
        mem = make_mem(mode)
        ids = ingest(mem, entries, user_id="u", mode=mode)
        rows = {r.id: r for r in mem.list(user_id="u", limit=100)}
        stored[mode] = [
            (rows[i].content, rows[i].session_id, rows[i].created_at, rows[i].metadata)
            for i in ids
        ]
        # ties in created_at: the ids (and so every order by (created_at, id)) follow
        # the write order
        assert sorted(ids, key=lambda i: (rows[i].created_at, i)) == sorted(
            ids, key=lambda i: (rows[i].created_at, ids.index(i))
        )
        ranked[mode] = _rankings(mem, ids)
    assert stored["add"] == stored["add_many"]
    assert [(e.content, e.session_id, e.at, e.metadata) for e in entries] == stored["add"]
    assert ranked["add"] == ranked["add_many"]
    assert all(ranked["add"])  # every question finds something


def test_an_unknown_mode_is_refused(make_mem: Callable[..., Memory]):
    with pytest.raises(ValueError, match="add_many"):
        ingest(make_mem(), _entries(), user_id="u", mode="bulk")
