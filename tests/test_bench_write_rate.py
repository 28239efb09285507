"""bench/write_rate.py (issue 36, item 3's measurement) on a tiny LoCoMo-shaped
conversation: both ways write every turn with the same outcomes, the figures are
positive and the profile is printed; no timing asserted."""

from __future__ import annotations

import json
from pathlib import Path

from bench import write_rate


def _conversation() -> dict:
    turns = [
        ("Ana", "I adopted a grey cat last week."),
        ("Ben", "What is the cat called?"),
        ("Ana", "Her name is Pixel."),
        ("Ben", "I ran a marathon in Berlin."),
        ("Ana", "I adopted a grey cat last week."),  # the same words: refused
        ("Ben", "My API key is sk-abcdefghijklmnopqrstuvwxyz012345"),  # refused: a secret
    ]
    return {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t}
                      for i, (s, t) in enumerate(turns[:3])],
        "session_2_date_time": "10:00 am on 9 May, 2023",
        "session_2": [{"speaker": s, "dia_id": f"D2:{i + 1}", "text": t}
                      for i, (s, t) in enumerate(turns[3:])],
        "qa": [],
    }  # fmt: skip


def test_both_ways_write_every_turn_alike_with_a_profile(tmp_path: Path, capsys) -> None:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "conv-1.json").write_text(json.dumps(_conversation()))
    out = tmp_path / "figures.json"
    code = write_rate.main([
        "--data", str(tmp_path), "--embedder", "hash", "--cache", "none", "--questions", "0",
        "--repeat", "1", "--profile", "5", "--json", str(out),
    ])  # fmt: skip
    assert code == 0
    r = json.loads(out.read_text())
    assert (r["conversations"], r["turns"], r["policy"]) == (1, 6, "default")
    many, one = r["ways"]["add_many"], r["ways"]["add"]
    assert many["statuses"] == one["statuses"] == {"added": 4, "refused": 2}
    assert many["outcomes"] == one["outcomes"]
    assert many["memories_per_s"] > 0 and one["memories_per_s"] > 0
    assert set(many["profile"]) == {"tottime", "cumulative"}
    assert "memories/s" in capsys.readouterr().out


def test_logged_turns_are_all_added(tmp_path: Path) -> None:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "conv-1.json").write_text(json.dumps(_conversation()))
    convs = write_rate.conversations(tmp_path, 0)
    r = write_rate.run(convs, embedder="hash", cache_path=None, repeat=1, log=True,
                       ways=["add_many"])  # fmt: skip
    # a logged turn is kept as it was said (its secret redacted), never refused
    assert r["ways"]["add_many"]["statuses"] == {"added": 6}
