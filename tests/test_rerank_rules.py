"""Rules of the second ranking stage added with the profile's knobs (issue 33,
item 1): each off by default, exactly the stage of before at its neutral value."""

from __future__ import annotations

from collections.abc import Callable

from memchentic import Memory
from memchentic.record import MemoryRecord
from memchentic.retrieval import profiles, rerank
from memchentic.retrieval.rerank import query_cues

WEIGHTS = {"coverage": 0.25, "proximity": 0.5, "phrase": 0.25, "answer": 0.1}


def _cand(i: str, text: str, who: dict[str, str], *, speaker_cue: float) -> profiles.Candidate:
    record = MemoryRecord(id=i, namespace="n", content=text, metadata=who)
    return profiles.Candidate(record, score=1.0, trace={"speaker": speaker_cue})


def _chat(key: str = "role", user: str = "user", assistant: str = "assistant"):
    return [
        _cand("reply", "So you play the clarinet in a band? Which instruments do you play?",
              {key: assistant}, speaker_cue=1.0),
        _cand("said", "I play the clarinet in a band", {key: user}, speaker_cue=1.25),
    ]  # fmt: skip


WORD_KEYS = [f"rerank_{n}" for n in ("coverage", "proximity", "phrase")]
ASKED = "Which instruments did I say I play in a band?"


def test_the_role_gate_leaves_the_other_roles_word_evidence_out() -> None:
    """A question about what the user said: the assistant's reply restating the
    user's words gets no word signals when gated; the user's turn is unchanged,
    and so is every signal that is not a word signal."""
    q = query_cues(ASKED)
    open_, gated = _chat(), _chat()
    rerank.rescore(open_, q, WEIGHTS)
    rerank.rescore(gated, q, WEIGHTS, role_gate=0.0)
    assert open_[0].trace["rerank_coverage"] > 1.0
    assert [gated[0].trace[k] for k in WORD_KEYS] == [1.0] * 3
    assert gated[1].trace == open_[1].trace
    assert gated[0].trace["rerank_answer"] == open_[0].trace["rerank_answer"]
    assert gated[1].score > gated[0].score


def test_the_role_gate_leaves_named_speakers_and_unnamed_queries_alone() -> None:
    """People with names (a chat between Caroline and Melanie) are the speaker
    cue's alone; and without a speaker cue that applies, nothing is gated."""
    q = query_cues(ASKED)
    for make in (lambda: _chat("speaker", "Melanie", "Caroline"), _chat):
        open_, gated = make(), make()
        if make is _chat:
            for cand in open_ + gated:
                cand.trace["speaker"] = 1.0
        rerank.rescore(open_, q, WEIGHTS)
        rerank.rescore(gated, q, WEIGHTS, role_gate=0.0)
        assert [c.score for c in gated] == [c.score for c in open_]


def test_the_role_gate_is_a_knob_of_the_profile(make_mem: Callable[..., Memory]) -> None:
    """On by default (the named profiles), off in a profile tuned so: through
    the whole search on each backend."""
    mem = make_mem()
    mem.add_many([
        {"content": "I play the clarinet in a band", "metadata": {"role": "user"}},
        {"content": "So you play the clarinet in a band? Which instruments do you play?",
         "metadata": {"role": "assistant"}},
    ], user_id="u", on_duplicate="keep")  # fmt: skip

    def reply_coverage(profile: str | profiles.SearchProfile) -> float:
        hits = mem.search(ASKED, user_id="u", profile=profile, include_trace=True)
        return next(h.trace["rerank_coverage"] for h in hits
                    if h.memory.metadata.get("role") == "assistant")  # type: ignore[index]  # fmt: skip

    assert reply_coverage("rrf") == 1.0
    assert reply_coverage(profiles.RRF.tuned(rerank_role_gate=1.0)) > 1.0
