"""bench/context_budget.py (issue 33, item 3): evidence inside the context block at
each budget, next to recall@k, on a tiny LoCoMo conversation and a tiny LongMemEval
haystack (hash embedder, vectors in memory)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bench import context_budget as cb

FILLER = " ".join(
    f"Point {n}: the weather was mild and we spoke about trains, films and the news."
    for n in range(40)
)


def _locomo(folder: Path) -> Path:
    data = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat called Pixel."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! What does Pixel eat?"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Mostly tuna and some chicken."},
        ],
        "session_2_date_time": "9:30 am on 2 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I ran my first marathon in Berlin."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Amazing, how long did it take?"},
        ],
        "qa": [
            {"question": "What is the name of Ann's cat?", "answer": "Pixel",
             "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Bob run a marathon?", "answer": "Berlin",
             "evidence": ["D2:1"], "category": 4},
            {"question": "What does the cat eat?", "answer": "tuna and chicken",
             "evidence": ["D1:3"], "category": 1},
        ],
    }  # fmt: skip
    folder.mkdir()
    (folder / "conv-1.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def _longmemeval(folder: Path) -> Path:
    long_reply = f"{FILLER} Your cat Pixel loves the window seat. {FILLER}"
    item = {
        "question_id": "q1", "question_type": "single-session-user",
        "question": "What is the name of my cat?", "answer": "Pixel",
        "question_date": "2023/06/10 (Sat) 10:00",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 08:00", "2023/06/01 (Thu) 09:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "I adopted a grey cat. Her name is Pixel.",
              "has_answer": True},
             {"role": "assistant", "content": long_reply}],
            [{"role": "user", "content": "Recommend a tuna recipe."},
             {"role": "assistant", "content": "Try a tuna salad with lemon."}],
        ],
        "answer_session_ids": ["s1"],
    }  # fmt: skip
    path = folder / "tiny.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump([item], handle)
    return path


def test_answer_check_reads_whole_words_in_order() -> None:
    assert cb.answer_in("tuna and chicken", "Ann: Mostly tuna and  chicken!")
    assert not cb.answer_in("tuna", "Ann: tunafish")
    assert not cb.answer_in("", "anything")
    assert cb.checkable("Berlin", ["Bob: a marathon in Berlin."]) == "Berlin"
    assert cb.checkable("Paris", ["Bob: a marathon in Berlin."]) is None
    assert cb.checkable(7, ["7 cats"]) is None  # too short to tell
    assert cb.checkable(None, ["x"]) is None


def test_summarise_means_each_metric_over_the_rows_that_hold_it() -> None:
    out = cb.summarise([{"context@500": 1.0, "answer@500": 1.0}, {"context@500": 0.0}], 2.0)
    assert out["context@500"] == 0.5 and out["answer@500"] == 1.0
    assert out["n"] == 2 and out["n_answer"] == 1 and out["s_per_question"] == 1.0


@pytest.mark.parametrize("which", ["locomo", "longmemeval"])
def test_end_to_end_on_tiny_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   which: str) -> None:  # fmt: skip
    data = _locomo(tmp_path / "locomo") if which == "locomo" else _longmemeval(tmp_path)
    out = tmp_path / "out.json"
    argv = [f"--{which}", str(data), "--embedder", "hash", "--cache", str(tmp_path / "v.sqlite"),
            "--only", "before: all three off", "--json", str(out)]  # fmt: skip
    assert cb.main(argv) == 0
    report = json.loads(out.read_text())[which]
    assert set(report) == {"defaults", "before: all three off"}
    for row in report.values():
        assert row["n"] == (3 if which == "locomo" else 1)
        for b in cb.BUDGETS:
            assert 0.0 <= row[f"complete@{b}"] <= row[f"context@{b}"] <= 1.0
            assert 0 < row[f"tokens@{b}"] <= b
            assert row[f"memories@{b}"] >= 1
        assert row["recall@1"] <= row["recall@5"] <= row["recall@10"]
    text = capsys.readouterr().out
    assert "| defaults |" in text and "context@500" in text
    if which == "longmemeval":  # the long reply fits at 500 tokens only as an excerpt
        assert report["defaults"]["excerpts@500"] == 1.0
        assert report["before: all three off"]["excerpts@500"] == 0.0
        assert report["defaults"]["memories@500"] > report["before: all three off"]["memories@500"]
