"""The LongMemEval benchmark (bench/longmemeval.py): metrics on hand-built examples,
the loader, and end-to-end runs on a tiny haystack and a slice of the development
split (hash embedder)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import longmemeval as lme_cli
from bench.harness import longmemeval as lme

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "dev.json.gz"


def test_turn_and_session_metrics_on_a_hand_built_example():
    ranked = ["a#0", "b#1", "a#3", "c#0", "d#2"]
    m = lme.question_metrics(ranked, evidence={"b#1", "d#2"}, answer_sessions={"b", "d"})
    assert m["turn_recall@1"] == 0.0 and m["turn_recall@5"] == 1.0
    assert m["mrr"] == pytest.approx(1 / 2)
    # sessions in first-seen order: a, b, c, d
    assert m["session_recall@5"] == m["session_recall@10"] == 1.0
    ideal = 1 + 1 / 1.584962500721156
    assert m["session_ndcg@10"] == pytest.approx((1 / 1.584962500721156 + 1 / 2.321928094887362)
                                                 / ideal)  # fmt: skip
    miss = lme.question_metrics(["x#0"], {"a#0"}, {"a"})
    assert all(miss[k] == 0.0 for k in lme.METRICS)
    with pytest.raises(ValueError):
        lme.question_metrics(["a#0"], set(), {"a"})


def test_question_dates_are_parsed():
    assert lme.parse_date("2023/05/30 (Tue) 23:40") == datetime(2023, 5, 30, 23, 40, tzinfo=UTC)


def _item(qid: str, qtype: str) -> dict:
    return {
        "question_id": qid, "question_type": qtype,
        "question": "What is the name of my cat?", "answer": "Pixel",
        "question_date": "2023/06/10 (Sat) 10:00",
        "haystack_session_ids": ["s1", "s2", "s3"],
        "haystack_dates": ["2023/05/20 (Sat) 08:00", "2023/05/20 (Sat) 08:00",
                           "2023/06/01 (Thu) 09:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "I adopted a grey cat.", "has_answer": True},
             {"role": "assistant", "content": "What is the cat called?"},
             {"role": "user", "content": "Her name is Pixel.", "has_answer": True}],
            [{"role": "user", "content": "I ran a marathon in Berlin."},
             {"role": "assistant", "content": "Well done!"}],
            [{"role": "user", "content": "Recommend a tuna recipe."},
             {"role": "assistant", "content": "Try a tuna salad with lemon."}],
        ],
        "answer_session_ids": ["s1"],
    }  # fmt: skip


def _write(folder: Path, items: list[dict]) -> Path:
    path = folder / "tiny.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(items, handle)
    return path


def test_loader_leaves_out_abstention_and_stamps_turns_in_order(tmp_path: Path):
    path = _write(tmp_path, [_item("q1", "single-session-user"),
                             _item("q2_abs", "single-session-user"),
                             _item("q3", "multi-session")])  # fmt: skip
    questions, left = lme.load(path)
    assert [q.id for q in questions] == ["q1", "q3"] and left["abstention"] == 1
    q = questions[0]
    assert q.entries[0].content == "user: I adopted a grey cat."
    assert q.entries[1].metadata == {"role": "assistant", "turn": 1}
    assert [e.at.minute for e in q.entries[:3]] == [0, 1, 2]
    assert q.evidence == {"s1#0", "s1#2"} and q.answer_sessions == {"s1"}
    only, _ = lme.load(path, types=["multi-session"])
    assert [q.id for q in only] == ["q3"]


def test_max_questions_takes_them_in_turn_from_each_type():
    items = [{"question_type": t, "i": i} for i, t in enumerate("aaabbc")]
    assert [it["i"] for it in lme.spread(items, 4)] == [0, 1, 3, 5]


def test_end_to_end_both_ingest_modes_give_the_same_figures(tmp_path: Path):
    path = _write(tmp_path, [_item("q1", "single-session-user"), _item("q2", "multi-session")])
    reports = {
        mode: lme.run_benchmark(path, embedder="hash", ingest=mode, cache=None)
        for mode in ("add", "add_many")
    }
    a, b = reports["add"], reports["add_many"]
    assert a["questions"] == 2 and a["turns"] == 14
    assert set(a["systems"]) == {"memchentic", *lme.bl.NAMES}
    assert a["_ranked"] == b["_ranked"]
    for system in a["systems"].values():
        o = system["overall"]
        assert o["n"] == 2 and all(0.0 <= o[m] <= 1.0 for m in lme.METRICS)
        assert o["turn_recall@1"] <= o["turn_recall@5"] <= o["turn_recall@10"]
        assert set(system["by_type"]) == {"single-session-user", "multi-session"}
    assert a["systems"]["memchentic"]["overall"]["session_recall@5"] == 1.0  # three sessions
    text = lme.format_report(a)
    assert "turn_recall@10 by question type" in text and "ss-user" in text
    json.dumps(lme.public(a))


def test_ablations_each_ask_on_a_fresh_copy_of_the_store(tmp_path: Path):
    path = _write(tmp_path, [_item("q1", "single-session-user"), _item("q2", "multi-session")])
    same = {"same as defaults": {}, "context off": {"search_context_weight": 0.0}}
    report = lme.run_benchmark(path, embedder="hash", cache=None, baselines=False,
                               ablations=same)  # fmt: skip
    assert set(report["systems"]) == {"memchentic"}
    assert set(report["ablations"]) == set(same)
    # Asked after the defaults' search counted its recalls, and still ranks alike.
    assert report["_ranked"]["same as defaults"] == report["_ranked"]["memchentic"]
    assert "ablations (each changes one setting" in lme.format_report(report)


def test_cli_writes_json(tmp_path: Path, capsys):
    path = _write(tmp_path, [_item("q1", "knowledge-update")])
    out = tmp_path / "out.json"
    argv = ["--data", str(path), "--embedder", "hash", "--json", str(out),
            "--cache", str(tmp_path / "v.sqlite")]  # fmt: skip
    assert lme_cli.main(argv) == 0
    assert "memchentic" in capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert figures["questions"] == 1 and "_ranked" not in figures and figures["embedded"] == 8
    assert lme_cli.main(argv) == 0
    assert json.loads(out.read_text())["embedded"] == 0  # cached on disk


@pytest.mark.skipif(not DATA.is_file(), reason="the LongMemEval development split is not here")
def test_end_to_end_on_a_slice_of_the_development_split():
    report = lme.run_benchmark(DATA, embedder="hash", max_questions=2, cache=None)
    assert report["questions"] == 2 and report["turns"] > 500
    assert report["systems"]["memchentic"]["overall"]["n"] == 2
