"""The LoCoMo benchmark: metrics on hand-built examples, the data loader, the
baselines, and an end-to-end run on a tiny slice (hash embedder)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bench import locomo as locomo_cli
from bench.harness import baselines as bl
from bench.harness import locomo

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"


def test_metrics_on_a_hand_built_example():
    ranked = ["a", "x", "b", "y"] + [f"n{i}" for i in range(16)] + ["z"]
    m = locomo.question_metrics(ranked, ["b", "z"])
    assert m["recall@1"] == 0.0
    assert m["recall@5"] == 0.5
    assert m["recall@10"] == 0.5
    assert m["recall@20"] == 0.5  # z sits at 21, past the top 20
    assert m["hit@10"] == 1.0
    assert m["mrr"] == pytest.approx(1 / 3)


def test_metrics_when_nothing_is_found_and_when_all_is():
    miss = locomo.question_metrics(["a", "b"], ["c"])
    assert all(miss[k] == 0.0 for k in locomo.METRICS)
    full = locomo.question_metrics(["c", "d", "a"], ["d", "c"])
    assert full == {
        "recall@1": 0.5, "recall@5": 1.0, "recall@10": 1.0, "recall@20": 1.0,
        "hit@10": 1.0, "mrr": 1.0,
    }  # fmt: skip
    with pytest.raises(ValueError):
        locomo.question_metrics(["a"], [])


def test_aggregate_means_per_category_and_overall():
    one = locomo.question_metrics(["e"], ["e"])
    zero = locomo.question_metrics(["x"], ["e"])
    report = locomo.aggregate([(1, one), (1, zero), (2, one)])
    assert report["overall"]["recall@10"] == pytest.approx(2 / 3)
    assert report["overall"]["n"] == 3
    assert report["by_category"]["1"]["mrr"] == pytest.approx(0.5)
    assert report["by_category"]["2"]["hit@10"] == 1.0


def test_session_dates_and_evidence_ids_are_parsed():
    assert locomo.parse_when("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert locomo.parse_when("12:09 am on 13 September, 2023").hour == 0
    assert locomo._evidence_ids(["D8:6; D9:17", "D:11:26", "D1:3", "D1:3"]) == [
        "D8:6", "D9:17", "D11:26", "D1:3",
    ]  # fmt: skip


def _tiny_conversation(folder: Path) -> Path:
    data = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat called Pixel."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! What does Pixel eat?",
             "blip_caption": "a photo of a cat bowl"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Mostly tuna and some chicken."},
        ],
        "session_2_date_time": "9:30 am on 2 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I ran my first marathon in Berlin."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Amazing, how long did it take?"},
            {"speaker": "Bob", "dia_id": "D2:3", "text": "Four hours and ten minutes."},
        ],
        "session_3_date_time": "2:00 pm on 1 July, 2023",
        "qa": [
            {"question": "What is the name of Ann's cat?", "answer": "Pixel",
             "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Bob run a marathon?", "answer": "Berlin",
             "evidence": ["D2:1"], "category": 4},
            {"question": "When did Bob run the marathon?", "answer": "May 2023",
             "evidence": ["D2:1", "D2:3"], "category": 2},
            {"question": "No evidence here?", "answer": "-", "evidence": [], "category": 3},
            {"question": "Broken evidence?", "answer": "-", "evidence": ["D9:9"], "category": 1},
        ],
    }  # fmt: skip
    path = folder / "conv-1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_loader_keeps_questions_with_evidence_and_ends_at_the_last_session(tmp_path: Path):
    conv = locomo.load_conversation(_tiny_conversation(tmp_path))
    assert conv.id == "1" and conv.speakers == ("Ann", "Bob")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert conv.turns[1].content == (
        "Bob: Lovely! What does Pixel eat? [shares a photo: a photo of a cat bowl]"
    )
    assert len(conv.questions) == 3 and conv.dropped_evidence == 1
    # a minute per turn from the session's date; session 3 has no turns
    assert [t.when.minute for t in conv.turns] == [0, 1, 2, 30, 31, 32]
    assert conv.end == datetime(2023, 6, 2, 9, 32, tzinfo=UTC)


def _check_report(report: dict, questions: int) -> None:
    assert report["questions"] == questions
    assert set(report["systems"]) == {"memchentic", *locomo.BASELINES}
    for system in report["systems"].values():
        overall = system["overall"]
        assert set(locomo.METRICS) <= set(overall)
        assert overall["n"] == questions
        assert all(0.0 <= overall[m] <= 1.0 for m in locomo.METRICS)
        assert overall["recall@1"] <= overall["recall@5"] <= overall["recall@10"]
        assert overall["recall@10"] <= overall["recall@20"]
        assert sum(c["n"] for c in system["by_category"].values()) == questions
        assert system["ms_per_query"] >= 0
    assert report["ingest_s"] >= 0 and report["total_s"] >= report["ingest_s"]
    text = locomo.format_report(report)
    assert "recall@10 by category" in text and "memchentic" in text


def test_end_to_end_on_a_tiny_conversation(tmp_path: Path):
    _tiny_conversation(tmp_path)
    report = locomo.run_benchmark(tmp_path, embedder="hash", cache=None, ablations={"ctx off": {
        "search_context_weight": 0.0}})  # fmt: skip
    _check_report(report, 3)
    assert report["turns"] == 6
    assert report["systems"]["memchentic"]["overall"]["hit@10"] == 1.0  # six turns: all found
    assert set(report["ablations"]) == {"ctx off"}
    json.dumps(locomo.public(report))  # the figures are plain JSON


@pytest.mark.skipif(not DATA.is_dir(), reason="the LoCoMo development split is not here")
def test_end_to_end_on_a_slice_of_the_development_split():
    report = locomo.run_benchmark(
        DATA, embedder="hash", conversations=["30"], max_questions=10, cache=None
    )
    _check_report(report, 10)
    assert report["conversations"] == ["30"]


def test_cli_writes_json_and_caches_vectors_on_disk(tmp_path: Path, capsys):
    (tmp_path / "data").mkdir()
    _tiny_conversation(tmp_path / "data")
    out, cache = tmp_path / "out.json", tmp_path / "vectors.sqlite"
    argv = ["--data", str(tmp_path / "data"), "--embedder", "hash", "--json", str(out),
            "--cache", str(cache), "--ingest", "add_many"]  # fmt: skip
    assert locomo_cli.main(argv) == 0
    assert "memchentic" in capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert figures["questions"] == 3 and "_ranked" not in figures
    assert figures["ingest"] == "add_many" and figures["embedded"] > 0
    assert locomo_cli.main(argv) == 0
    assert json.loads(out.read_text())["embedded"] == 0  # the second run embeds nothing


def test_memchentic_has_no_bench_command_and_does_not_import_the_harness():
    from typer.testing import CliRunner

    from memchentic.cli import app

    assert CliRunner().invoke(app, ["bench", "locomo"]).exit_code != 0
    src = Path(__file__).resolve().parents[1] / "src" / "memchentic"
    importing = re.compile(r"^\s*(from|import) bench\b", re.MULTILINE)
    assert not [p for p in src.rglob("*.py") if importing.search(p.read_text(encoding="utf-8"))]


def test_bm25_ranks_the_rare_term_first_and_stemming_matches_forms():
    docs = ["the cat sat", "a dog runs fast", "cats and dogs", "running is fun"]
    plain = bl.BM25(docs)
    assert plain.rank("dog", 4) == [1]
    assert plain.rank("the of", 4) == []  # stopwords only: nothing to match
    stemmed = bl.BM25(docs, stem=True)
    assert set(stemmed.rank("run", 4)) == {1, 3}
    assert set(stemmed.rank("cat", 4)) == {0, 2}
    assert plain.scores("cat")[2] == 0.0  # unstemmed: "cats" is not "cat"


def test_dense_rank_and_plain_rrf():
    m = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    assert bl.dense_rank(m, np.array([0.0, 2.0]), 2) == [2, 1]
    fused = bl.rrf_fuse([[0, 1, 2], [2, 1, 0]], 3, rrf_k=60)
    assert fused == [0, 2, 1]  # 1/61 + 1/63 > 2/62: ties broken by the smaller index
    assert bl.rrf_fuse([[5], [5, 6]], 2) == [5, 6]


def test_context_budgets_measure_the_evidence_inside_the_prompt_block(tmp_path: Path):
    """issue 33, item 3: ``context@B`` is the share of the evidence turns among the
    memories ``context(question, budget_tokens=B)`` keeps; six short turns fit in
    the largest budget whole, and the table is printed."""
    _tiny_conversation(tmp_path)
    report = locomo.run_benchmark(tmp_path, embedder="hash", cache=None, baselines=False,
                                  context_budgets=(20, 2000))  # fmt: skip
    overall = report["systems"]["memchentic"]["overall"]
    assert overall["context@2000"] == 1.0
    assert 0.0 <= overall["context@20"] < 1.0  # 20 tokens hold one turn at most
    assert "ctx@2000" in locomo.format_report(report)
