"""bench/passages.py (issue 33, item 2, phase 1): passages cut within the model's
window, scores of a memory by its best passage, and a run end to end on a tiny
LongMemEval haystack (hash embedder, vectors in memory)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from memchentic.embed import local_available

pytest.importorskip("tokenizers")
if not local_available():  # the splitter counts with the bundled model's tokenizer
    pytest.skip("the bundled MiniLM is not installed", allow_module_level=True)

from bench import passages as bp  # noqa: E402

FILLER = " ".join(
    f"Point {n}: the weather was mild and we spoke about trains, films and the news."
    for n in range(60)
)


@pytest.fixture(scope="module")
def splitter() -> bp.Splitter:
    return bp.load_splitter(40)


def test_a_text_within_the_window_is_its_own_passage(splitter: bp.Splitter) -> None:
    assert splitter.split("A short text. Two sentences.") == ["A short text. Two sentences."]


def test_passages_fit_the_window_and_keep_every_word_in_order(splitter: bp.Splitter) -> None:
    text = f"user: {FILLER}\nThe last line holds the answer: the code is 4417."
    parts = splitter.split(text)
    assert len(parts) > 1
    assert max(splitter.count(parts)) <= splitter.window
    assert " ".join(parts).split() == text.split()
    assert parts[-1].endswith("the code is 4417.")
    # Cut after sentence ends: every passage but a cut sentence's rest starts one.
    assert all(p.startswith(("Point", "user:", "The last")) for p in parts)


def test_a_sentence_longer_than_the_window_is_cut_at_word_pieces(splitter: bp.Splitter) -> None:
    text = " ".join(["word"] * 100)
    parts = splitter.split(text)
    assert splitter.count(parts) == [40, 40, 20]


def test_a_memory_scores_by_its_best_passage() -> None:
    whole = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    passages = bp.Passages(
        owner=np.array([1, 1]), matrix=np.array([[0.8, 0.6], [1.0, 0.0]], np.float32),
        long_turns=1,
    )  # fmt: skip
    s = bp.dense_scores(whole, passages, np.array([1.0, 0.0], dtype=np.float32))
    assert s["whole"].tolist() == pytest.approx([1.0, 0.0, 0.6])
    assert s["max(whole, passage)"].tolist() == pytest.approx([1.0, 1.0, 0.6])
    assert s["passage only"].tolist() == pytest.approx([1.0, 1.0, 0.6])
    assert s["mean(whole, passage)"].tolist() == pytest.approx([1.0, 0.5, 0.6])
    assert s["max(whole, passage - 0.10)"].tolist() == pytest.approx([1.0, 0.9, 0.6])
    assert bp.top(s["max(whole, passage)"], 2) == [0, 1]  # ties keep the turn order


def _longmemeval(folder: Path) -> Path:
    item = {
        "question_id": "q1", "question_type": "single-session-assistant",
        "question": "What code did you give me for the locker?", "answer": "4417",
        "question_date": "2023/06/10 (Sat) 10:00",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 08:00", "2023/06/01 (Thu) 09:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "I need a locker at the gym."},
             {"role": "assistant", "has_answer": True,
              "content": f"{FILLER} Your locker code is 4417, keep it safe."}],
            [{"role": "user", "content": "Recommend a tuna recipe."},
             {"role": "assistant", "content": "Try a tuna salad with lemon."}],
        ],
        "answer_session_ids": ["s1"],
    }  # fmt: skip
    path = folder / "tiny.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump([item], handle)
    return path


def test_end_to_end_on_a_tiny_haystack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _longmemeval(tmp_path)
    argv = ["--data", str(data), "--embedder", "hash", "--cache", str(tmp_path / "v.sqlite"),
            "--window", "64", "--fused"]  # fmt: skip
    assert bp.main(argv) == 0
    out = capsys.readouterr().out
    assert "1 questions, 4 turns, 1 over the threshold" in out
    assert "evidence turns 1, 1 of them long" in out
    assert "long@10" in out.splitlines()[1]  # the share of the top ten with passages
    assert "dense rank of the evidence turns, (b) against (a): long " in out
    for name in ("dense whole", "dense max(whole, passage)", "memchentic whole",
                 "memchentic max(whole, passage)"):  # fmt: skip
        line = next(x for x in out.splitlines() if x.startswith(name + " "))
        assert len(line.split()) >= 4  # r@1 r@5 r@10 mrr
