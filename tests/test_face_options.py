"""Options a face gained when its parameters were checked against the operation's
argument class (issue 35, item 3): the CLI's ``search --as-of/--filter/--threshold``,
HTTP search's ``tier`` and a working-memory item's write options."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memchentic import Memory
from memchentic.cli import app

runner = CliRunner()


def search(store: Path, *args: str) -> list[dict]:
    argv = ["search", *args, "--json", "--store", str(store), "--embedder", "hash"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMCHENTIC_HOME", str(tmp_path / "home"))
    for key in ("SEARCH_PROFILE", "SEARCH_DEFAULT_LIMIT", "EMBEDDER"):
        monkeypatch.delenv(f"MEMCHENTIC_{key}", raising=False)
    path = tmp_path / "memory.db"
    with Memory(path, embedder="hash") as mem:
        now = datetime.now(UTC)
        mem.add(
            "Sam lived in Porto",
            user_id="sam",
            metadata={"city": "porto"},
            valid_from=now - timedelta(days=90),
            valid_to=now - timedelta(days=30),
        )
        mem.add("Sam lives in Lisbon", user_id="sam", metadata={"city": "lisbon"})
    return path


def test_cli_search_filters_on_metadata(store: Path) -> None:
    hits = search(store, "where does Sam live", "--user", "sam", "--filter", '{"city": "lisbon"}')
    assert [h["text"] for h in hits] == ["Sam lives in Lisbon"]


def test_cli_search_as_of_a_past_time(store: Path) -> None:
    then = (datetime.now(UTC) - timedelta(days=60)).isoformat()
    hits = search(store, "where does Sam live", "--user", "sam", "--as-of", then)
    assert [h["text"] for h in hits] == ["Sam lived in Porto"]
    now = search(store, "where does Sam live", "--user", "sam")
    assert "Sam lives in Lisbon" in [h["text"] for h in now]


def test_cli_search_threshold_drops_hits_far_in_meaning(store: Path) -> None:
    every = search(store, "Sam lives in Lisbon", "--user", "sam")
    assert len(every) == 2
    close = search(store, "Sam lives in Lisbon", "--user", "sam", "--threshold", "0.9")
    assert [h["text"] for h in close] == ["Sam lives in Lisbon"]


def test_cli_list_takes_the_same_filters(store: Path) -> None:
    argv = ["list", "--user", "sam", "--filter", '{"city": "porto"}', "--json",
            "--store", str(store), "--embedder", "hash"]  # fmt: skip
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    assert [r["content"] for r in json.loads(result.stdout)] == ["Sam lived in Porto"]
    then = (datetime.now(UTC) - timedelta(days=60)).isoformat()
    argv = ["list", "--user", "sam", "--as-of", then, "--kind", "entry", "--json",
            "--store", str(store), "--embedder", "hash"]  # fmt: skip
    result = runner.invoke(app, argv)
    assert [r["content"] for r in json.loads(result.stdout)] == ["Sam lived in Porto"]


def test_cli_search_bad_filter_is_an_error_line(store: Path) -> None:
    argv = ["search", "x", "--filter", "{not json", "--store", str(store), "--embedder", "hash"]
    result = runner.invoke(app, argv)
    assert result.exit_code != 0
    assert result.stderr.startswith("error: ") and "filter" in result.stderr
    assert "Traceback" not in result.output


# --- HTTP -----------------------------------------------------------------------------------
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from .live_server import Live, live_server  # noqa: E402


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("options")) as server:
        yield server


def test_http_search_takes_the_older_tier_selector(live: Live) -> None:
    alice = live.http("alice")
    made = alice.post("/v1/memories", json={"content": "Alice's long notes on the kiln firing",
                                            "tier_l0": "Kiln notes"})  # fmt: skip
    assert made.status_code == 200, made.text
    with pytest.warns(DeprecationWarning, match="tier"):
        hits = alice.post("/v1/search", json={"query": "kiln firing notes", "tier": "L0"}).json()
    assert hits[0]["text"] == "Kiln notes"
    bad = alice.post("/v1/search", json={"query": "kiln", "tier": "L9"})
    assert bad.status_code == 422 and "tier" in bad.text


def test_http_working_memory_takes_the_write_options(live: Live) -> None:
    alice = live.http("alice")
    body = {"content": "Draft the kiln schedule", "session_id": "s1", "key": "todo",
            "repo": "kiln", "path_hint": "docs/schedule.md", "pinned": True}  # fmt: skip
    made = alice.post("/v1/working", json=body)
    assert made.status_code == 200, made.text
    memory = made.json()["memory"]
    assert (memory["repo"], memory["path_hint"], memory["pinned"]) == (
        "kiln", "docs/schedule.md", True,
    )  # fmt: skip
