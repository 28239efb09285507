"""Our own development sets (issue 33, item 4): informal chat and technical
sessions, each with at least 100 questions whose evidence turns exist; and their
benchmark (``bench/own_sets.py``) runs end to end on a slice."""

from __future__ import annotations

from datetime import datetime

import pytest

from bench import own_sets
from tests.data import chat_set, technical_set
from tests.data.dialogues import Conversation

SETS = {"chat": chat_set.CONVERSATIONS, "technical": technical_set.CONVERSATIONS}


@pytest.mark.parametrize("name", list(SETS))
def test_every_question_has_evidence_that_exists(name: str):
    convs: tuple[Conversation, ...] = SETS[name]
    turn_ids = [tid for c in convs for _, _, (tid, _, _) in c.turns()]
    assert len(turn_ids) == len(set(turn_ids)), "turn ids are unique across the set"
    assert len({c.id for c in convs}) == len(convs)
    assert sum(len(c.questions) for c in convs) >= 100
    for conv in convs:
        own = {tid for _, _, (tid, _, _) in conv.turns()}
        questions = [q.text for q in conv.questions]
        assert len(questions) == len(set(questions)), f"{conv.id}: a question asked twice"
        for q in conv.questions:
            assert q.evidence and set(q.evidence) <= own, (conv.id, q.text)
            assert len(set(q.evidence)) == len(q.evidence)
        speakers = {speaker for _, _, (_, speaker, _) in conv.turns()}
        assert speakers == set(conv.speakers), conv.id
        assert not conv.roles or speakers <= set(conv.roles)


@pytest.mark.parametrize("name", list(SETS))
def test_sessions_are_in_time_order_and_have_distractors(name: str):
    for conv in SETS[name]:
        starts = [datetime.fromisoformat(s.start) for s in conv.sessions]
        assert starts == sorted(starts) and len(conv.sessions) >= 6, conv.id
        ends = [s.at(len(s.turns) - 1) for s in conv.sessions]
        assert all(end < nxt.at(0) for end, nxt in zip(ends, conv.sessions[1:], strict=False))
        evidence = {e for q in conv.questions for e in q.evidence}
        turns = sum(len(s.turns) for s in conv.sessions)
        assert turns - len(evidence) >= 0.2 * turns, f"{conv.id}: too few distractor turns"


def test_the_bench_runs_on_a_slice_with_the_hash_embedder(tmp_path):
    report = own_sets.run_benchmark(
        ("chat", "technical"), embedder="hash", cache=None, max_questions=2,
        keyword_ablations=True, fuzzy=True, workdir=tmp_path,
    )  # fmt: skip
    for name, convs in SETS.items():
        rep = report["sets"][name]
        assert rep["questions"] == 2 * len(convs)
        systems = rep["systems"]
        assert {"memchentic", "bm25_stem", own_sets.FUZZY} <= set(systems)
        assert any(n.startswith("keyword rule") for n in systems)
        for s in systems.values():
            assert s["overall"]["n"] == rep["questions"]
            assert all(0.0 <= s["overall"][m] <= 1.0 for m in own_sets.METRICS)
    assert "chat:" in own_sets.format_report(report)
