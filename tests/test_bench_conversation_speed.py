"""bench/conversation_speed.py (issue 36, item 2's measurement) on a tiny
LongMemEval-shaped file: the figures' shape, all positive; no timing asserted."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench import conversation_speed


def _item(qid: str, question: str) -> dict:
    return {
        "question_id": qid, "question_type": "single-session-user", "question": question,
        "answer": "Pixel", "question_date": "2023/06/10 (Sat) 10:00",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 08:00", "2023/06/01 (Thu) 09:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "I adopted a grey cat.", "has_answer": True},
             {"role": "assistant", "content": "What is the cat called?"},
             {"role": "user", "content": "Her name is Pixel."}],
            [{"role": "user", "content": "I ran a marathon in Berlin."},
             {"role": "assistant", "content": "Well done!"}],
        ],
        "answer_session_ids": ["s1"],
    }  # fmt: skip


def test_search_and_ingest_figures_with_a_profile(tmp_path: Path, capsys):
    data = tmp_path / "tiny.json.gz"
    with gzip.open(data, "wt", encoding="utf-8") as handle:
        json.dump([_item("q1", "What is my cat called?"), _item("q2", "Where did I run?")],
                  handle)  # fmt: skip
    out = tmp_path / "figures.json"
    code = conversation_speed.main([
        "--data", str(data), "--embedder", "hash", "--cache", "none", "--questions", "2",
        "--repeat", "2", "--profile", "5", "--json", str(out),
    ])  # fmt: skip
    assert code == 0
    r = json.loads(out.read_text())
    assert (r["haystacks"], r["turns"], r["searches"]) == (2, 10, 4)
    assert 0 < r["search_ms"]["p50"] <= r["search_ms"]["p95"]
    assert r["ingest_turns_per_s"] > 0
    assert r["statements_per_search"] > 0
    assert set(r["profile"]) == {"tottime", "cumulative"}
    assert "search" in capsys.readouterr().out
