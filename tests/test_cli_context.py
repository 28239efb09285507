"""The context, learning and session commands through typer's CliRunner, against a
temporary store with the hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memchentic.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("STORE_URL", "EMBEDDER", "CHAT_BASE_URL", "CONTEXT_TOKENIZER"):
        monkeypatch.delenv(key, raising=False)
        monkeypatch.delenv(f"MEMCHENTIC_{key}", raising=False)
    monkeypatch.setenv("MEMCHENTIC_HOME", str(tmp_path / "home"))


def run(db: Path, *args: str, stdin: str | None = None) -> str:
    result = runner.invoke(app, [*args, "--store", str(db), "--embedder", "hash"], input=stdin)
    assert result.exit_code == 0, result.output
    return result.stdout


def jrun(db: Path, *args: str, stdin: str | None = None) -> Any:
    return json.loads(run(db, *args, "--json", stdin=stdin))


def test_learn_context_pin_and_sessions(tmp_path: Path):
    db = tmp_path / "m.db"
    chat = json.dumps([{"role": "user", "content": "My name is Sam. I live in Oslo."}])
    learned = jrun(db, "learn", "-", "--user", "sam", stdin=chat)
    assert [(r["status"], r["content"]) for r in learned] == [
        ("added", "Name is Sam"), ("added", "Lives in Oslo"),
    ]  # fmt: skip
    assert "instruction: Never use emojis" in run(db, "learn", "-", "--user", "sam",
                                                  stdin="Never use emojis.")  # fmt: skip
    unread = run(db, "learn", "-", stdin="What time is it?")
    assert "What time is it?  (kept as written: no-fact)" in unread, unread

    turn = jrun(db, "session", "turn", "user", "Planning a trip", "--user", "sam",
                "--session", "trip")  # fmt: skip
    assert turn["session_id"] == "trip" and turn["namespace"] == "user:sam"
    assert "recorded" in run(db, "session", "turn", "assistant", "Where to?", "--user", "sam",
                             "--session", "trip")  # fmt: skip
    history = jrun(db, "session", "history", "--user", "sam", "--session", "trip")
    assert [t["content"] for t in history] == ["Planning a trip", "Where to?"]
    assert "Where to?" in run(db, "session", "history", "--user", "sam", "--session", "trip")
    assert jrun(db, "session", "list", "--user", "sam") == [{"session_id": "trip", "turns": 2}]
    summary = jrun(db, "session", "summarize", "--user", "sam", "--session", "trip")
    assert summary["status"] == "added"

    text = run(db, "context", "where does Sam live", "--user", "sam", "--session", "trip")
    assert text.startswith("## Instructions\n- Never use emojis\n\n## Profile\n")
    assert "- Lives in Oslo" in text and "]\n- user: Planning a trip" in text  # dated turns
    data = jrun(db, "context", "where", "--user", "sam", "--session", "trip", "--budget", "25")
    assert data["tokens"] <= 25 and data["dropped"]

    memory_id = learned[1]["id"]
    assert jrun(db, "pin", memory_id)["status"] == "updated"
    assert "## Pinned" not in run(db, "context", "--user", "sam")  # already in the profile
    assert jrun(db, "unpin", memory_id)["id"] == memory_id

    report = jrun(db, "maintain", "--dry-run")
    assert report["dry_run"] and report["events_pruned"] is None
    assert "summary trip (user:sam)" in run(db, "maintain")


def test_learn_from_a_file_and_bad_input(tmp_path: Path):
    db = tmp_path / "m.db"
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "I'm vegan."}]), encoding="utf-8")
    assert [r["content"] for r in jrun(db, "learn", str(chat), "--user", "kim")] == ["Is vegan"]
    missing = runner.invoke(app, ["learn", str(tmp_path / "nope.json"), "--store", str(db)])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    bad = runner.invoke(app, ["context", "x", "--budget", "0", "--store", str(db)])
    assert bad.exit_code == 2
