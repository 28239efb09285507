"""The command line: every command through typer's CliRunner against a temporary
store with the hashing embedder, plus one run of the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from memchentic import Memory
from memchentic.cli import RRF_SIGNALS, app

#: Settings read from the environment that would change what these tests see.
_ENV_KEYS = (
    "HOME",
    "STORE_URL",
    "EMBEDDER",
    "HASH_EMBEDDING_DIMENSION",
    "SEARCH_PROFILE",
    "DUPLICATE_POLICY",
    "SECRET_POLICY",
    "SEARCH_DEFAULT_LIMIT",
)


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in _ENV_KEYS:
        if key != "HOME":
            monkeypatch.delenv(key, raising=False)
            monkeypatch.delenv(f"MEMCHENTIC_{key}", raising=False)
            monkeypatch.delenv(key.lower(), raising=False)
    monkeypatch.setenv("MEMCHENTIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    yield


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


runner = CliRunner()


def cli(store: Path | str, *args: str, env: Mapping[str, str] | None = None) -> Result:
    """Run one command against ``store`` with the hashing embedder."""
    argv = [*args, "--store", str(store), "--embedder", "hash"]
    return runner.invoke(app, argv, env=dict(env) if env else None)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def jcli(store: Path, *args: str, env: Mapping[str, str] | None = None) -> Any:
    """Run one command with ``--json`` and parse what it printed."""
    return as_json(cli(store, *args, "--json", env=env))


def add(store: Path, text: str, *args: str) -> str:
    data = jcli(store, "add", text, *args)
    assert data["status"] == "added", data
    return str(data["id"])


def failed(result: Result, code: int) -> str:
    """The stderr of a failed command: the right exit code, one error line, no traceback."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr


# --- add and search ----------------------------------------------------------------------


def test_add_then_search_finds_it(db: Path) -> None:
    add(db, "Sam drinks green tea every morning", "--user", "sam", "--type", "preference")
    wanted = add(db, "The deploy script lives in tools/deploy.sh", "--user", "sam")
    add(db, "Berlin is the capital of Germany", "--user", "sam")

    hits = jcli(db, "search", "where is the deploy script", "--user", "sam")

    assert hits[0]["id"] == wanted
    assert hits[0]["text"] == "The deploy script lives in tools/deploy.sh"
    assert hits[0]["memory"]["namespace"] == "user:sam"
    assert "trace" not in hits[0]
    assert all(isinstance(h["score"], float) for h in hits)


def test_add_prints_status_and_id(db: Path) -> None:
    result = ok(cli(db, "add", "Sam plays chess on Sundays", "--tag", "hobby", "--tag", "games"))
    status, memory_id = result.stdout.split()
    assert status == "added"
    record = jcli(db, "get", memory_id)
    assert record["tags"] == ["hobby", "games"]


def test_add_passes_every_option(db: Path) -> None:
    memory_id = add(
        db,
        "Always run the linter before committing",
        "--type", "instruction", "--agent", "coder", "--user", "sam",
        "--kind", "guide", "--slot", "lint-rule", "--title", "Linting",
        "--permanent", "--confidence", "0.8", "--importance", "0.9",
    )  # fmt: skip
    record = jcli(db, "get", memory_id)
    assert record["type"] == "instruction"
    assert record["kind"] == "guide"
    assert record["slot_key"] == "lint-rule"
    assert record["title"] == "Linting"
    assert record["expires_at"] is None
    assert (record["confidence"], record["importance"]) == (0.8, 0.9)
    assert (record["user_id"], record["agent_id"]) == ("sam", "coder")

    short = add(db, "A short-lived note about the weather today", "--ttl-days", "1")
    record = jcli(db, "get", short)
    assert record["expires_at"] is not None


def test_search_trace_json_has_rrf_signals(db: Path) -> None:
    memory_id = add(db, "Sam drinks green tea every morning")

    hits = jcli(db, "search", "green tea", "--trace", "--profile", "rrf")

    assert hits[0]["id"] == memory_id
    trace = hits[0]["trace"]
    assert set(RRF_SIGNALS) <= set(trace)
    assert all(isinstance(trace[k], float) for k in RRF_SIGNALS)
    assert trace["score"] == pytest.approx(hits[0]["score"])


def test_search_table_shows_rank_score_and_signals(db: Path) -> None:
    memory_id = add(db, "Sam drinks green tea every morning [bold]really[/bold]")

    plain = ok(cli(db, "search", "green tea")).stdout
    assert memory_id in plain
    assert "rank" in plain and "score" in plain
    assert "[bold]really[/bold]" in plain  # content is never read as rich markup
    assert "freshness" not in plain

    traced = ok(cli(db, "search", "green tea", "--trace")).stdout
    for signal in RRF_SIGNALS:
        assert signal in traced
    hybrid = ok(cli(db, "search", "green tea", "--trace", "--profile", "hybrid")).stdout
    assert "cosine" in hybrid and memory_id in hybrid


def test_search_trace_shows_the_second_stages_factors_that_moved_a_hit(db: Path) -> None:
    """The table's score is the product of its columns: a second-stage factor that
    moved a hit has a column of its own; one that moved none is left out."""
    add(db, "Sam drinks green tea every morning")
    add(db, "Tea is served in the green room")
    hits = jcli(db, "search", "green tea", "--trace")
    moved = {k for h in hits for k, v in h["trace"].items()
             if k.startswith("rerank_") and v != 1.0}  # fmt: skip
    assert moved  # the phrase "green tea" and its proximity lift the first
    traced = ok(cli(db, "search", "green tea", "--trace")).stdout
    assert all(k in traced for k in moved)
    idle = {k for h in hits for k in h["trace"] if k.startswith("rerank_")} - moved
    assert not any(k in traced for k in idle)


def test_search_json_is_plain_json(db: Path) -> None:
    add(db, "Zoë likes crème brûlée [red]dessert[/red]")
    result = ok(cli(db, "search", "crème brûlée"))
    hits = jcli(db, "search", "crème brûlée")
    assert hits[0]["text"] == "Zoë likes crème brûlée [red]dessert[/red]"
    raw = cli(db, "search", "crème brûlée", "--json").stdout
    assert "\x1b[" not in raw and "crème" in raw  # no ANSI codes, not ascii-escaped
    assert "Zoë" in result.stdout


def test_search_nothing_found(db: Path) -> None:
    add(db, "Sam drinks green tea every morning")
    assert jcli(db, "search", "tea", "--user", "nobody") == []
    result = ok(cli(db, "search", "tea", "--user", "nobody"))
    assert result.stdout == ""
    assert "no memories found" in result.stderr


def test_near_duplicate_is_refused_with_the_existing_id(db: Path) -> None:
    first = add(db, "Sam is allergic to peanuts")

    data = jcli(db, "add", "Sam is allergic to peanuts")

    assert data["status"] == "refused"
    assert data["id"] == first
    assert data["reason"] == "duplicate:exact"  # the rule that refused it (issue 31, item 7)
    text = ok(cli(db, "add", "Sam is allergic to peanuts")).stdout
    assert text.startswith(f"refused {first}")
    reinforced = as_json(
        cli(db, "add", "Sam is allergic to peanuts", "--on-duplicate", "reinforce", "--json")
    )
    assert (reinforced["status"], reinforced["id"]) == ("reinforced", first)
    assert len(jcli(db, "list")) == 1


# --- get, list, revise, delete, history --------------------------------------------------


def test_get_of_an_expired_memory_does_not_revive_it(db: Path) -> None:
    """Issue 20, item 10: ``memchentic get`` slid an expired memory's expiry."""
    then = datetime(2026, 1, 1, tzinfo=UTC)
    with Memory(store=str(db), embedder="hash") as m:
        memory_id = m.add("Yuri's guest wifi code", created_at=then, now=then, ttl_days=3).id
    assert jcli(db, "get", memory_id)["content"] == "Yuri's guest wifi code"
    with Memory(store=str(db), embedder="hash") as m:
        record = m.get(memory_id, touch=False)
        assert (record.expires_at, record.recall_count) == (then + timedelta(days=3), 0)
        assert m.list() == []


def test_get_list_revise_delete_history_round_trip(db: Path) -> None:
    memory_id = add(db, "Bob drives a red car", "--user", "bob", "--type", "fact")
    other = add(db, "Alice works at the bakery", "--user", "alice")

    record = jcli(db, "get", memory_id)
    assert record["content"] == "Bob drives a red car"
    assert record["type"] == "fact"
    assert memory_id in ok(cli(db, "get", memory_id)).stdout

    listed = jcli(db, "list", "--user", "bob")
    assert [r["id"] for r in listed] == [memory_id]
    assert {r["id"] for r in jcli(db, "list")} == {memory_id, other}
    assert jcli(db, "list", "--type", "preference") == []
    assert memory_id in ok(cli(db, "list")).stdout

    revised = jcli(db, "revise", memory_id, "Bob drives a blue car")
    assert (revised["status"], revised["id"]) == ("revised", memory_id)
    assert ok(cli(db, "revise", memory_id, "Bob drives a green car")).stdout.startswith(
        f"revised {memory_id}"
    )
    assert jcli(db, "get", memory_id)["content"] == "Bob drives a green car"

    versions = jcli(db, "history", memory_id)
    assert [v["op"] for v in versions] == ["add", "revise", "revise"]
    assert versions[1]["changes"]["content"] == ["Bob drives a red car", "Bob drives a blue car"]
    table = ok(cli(db, "history", memory_id)).stdout
    assert "revise" in table and "Bob drives a blue car" in table

    assert ok(cli(db, "delete", memory_id)).stdout.startswith(f"deleted {memory_id}")
    message = failed(cli(db, "get", memory_id), 1)
    assert f"memory not found: {memory_id}" in message
    failed(cli(db, "delete", memory_id), 1)
    failed(cli(db, "revise", memory_id, "again"), 1)
    tombstone = jcli(db, "history", memory_id)
    assert tombstone[-1]["op"] == "delete"

    gone = jcli(db, "forget", other)
    assert (gone["status"], gone["id"]) == ("deleted", other)
    assert jcli(db, "list") == []


def test_unknown_id_is_not_found(db: Path) -> None:
    add(db, "something to create the store")
    assert "memory not found: 01NOPE" in failed(cli(db, "get", "01NOPE"), 1)
    assert "memory not found: 01NOPE" in failed(cli(db, "history", "01NOPE"), 1)


# --- bad input ----------------------------------------------------------------------------


def test_bad_input_exits_2_naming_the_field(db: Path) -> None:
    assert "content" in failed(cli(db, "add", ""), 2)
    assert "content" in failed(cli(db, "add", "   "), 2)
    add(db, "Sam drinks green tea every morning")
    assert "limit" in failed(cli(db, "search", "tea", "--limit", "0"), 2)
    assert "limit" in failed(cli(db, "list", "--limit", "0"), 2)
    assert "profile" in failed(cli(db, "search", "tea", "--profile", "nope"), 2)
    assert "query" in failed(cli(db, "search", " "), 2)
    assert "kind" in failed(cli(db, "add", "x y z", "--kind", "poem"), 2)
    assert "on_duplicate" in failed(cli(db, "add", "x y z", "--on-duplicate", "merge"), 2)
    assert "confidence" in failed(cli(db, "add", "x y z", "--confidence", "2"), 2)
    assert "type" in failed(cli(db, "add", "x y z", "--type", "no spaces"), 2)


def test_bad_embedder_and_store_exit_2(db: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["stats", "--store", str(db), "--embedder", "nope"])
    assert "embedder" in failed(result, 2)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a sqlite database at all" * 100)
    assert "not a memchentic store" in failed(cli(junk, "stats"), 2)
    assert "store" in failed(cli("http://example.com/x", "stats"), 2)


def test_bad_setting_exits_2_without_traceback(db: Path) -> None:
    result = cli(db, "stats", env={"HASH_EMBEDDING_DIMENSION": "2"})
    assert "hash_embedding_dimension" in failed(result, 2).lower()


# --- export and import ---------------------------------------------------------------------


def _snapshot(store: Path) -> dict[str, str]:
    return {r["id"]: r["content"] for r in jcli(store, "list")}


def test_export_then_import_gives_the_same_memories(db: Path, tmp_path: Path) -> None:
    for text in ("Sam drinks green tea", "Bob drives a blue car", "Alice bakes bread"):
        add(db, text, "--user", "sam")
    memory_id = next(iter(_snapshot(db)))
    ok(cli(db, "revise", memory_id, "Sam drinks black tea now"))
    dump = tmp_path / "dump.jsonl"

    assert "exported" in ok(cli(db, "export", str(dump))).stdout

    fresh = tmp_path / "fresh.db"
    result = ok(cli(fresh, "import", str(dump)))
    assert "imported 3 memories" in result.stdout
    assert _snapshot(fresh) == _snapshot(db)
    assert len(_snapshot(db)) == 3
    assert jcli(fresh, "history", memory_id)[-1]["op"] == "revise"
    hits = jcli(fresh, "search", "black tea", "--user", "sam")
    assert hits[0]["id"] == memory_id

    again = jcli(fresh, "import", str(dump))
    assert again["memories"] == 0 and again["skipped"] >= 3


def test_export_to_stdout_without_vectors(db: Path) -> None:
    add(db, "Sam drinks green tea")
    result = ok(cli(db, "export", "-", "--no-vectors"))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["kind"] == "header"
    memories = [x for x in lines if x["kind"] == "memory"]
    assert len(memories) == 1 and "vector" not in memories[0]
    assert "exported" in result.stderr


def test_import_from_stdin(db: Path, tmp_path: Path) -> None:
    add(db, "Sam drinks green tea")
    dump = ok(cli(db, "export", "-")).stdout
    fresh = tmp_path / "fresh.db"
    argv = ["import", "-", "--store", str(fresh), "--embedder", "hash"]
    ok(runner.invoke(app, argv, input=dump))
    assert _snapshot(fresh) == _snapshot(db)


def test_import_reports_bad_lines_and_strict_imports_nothing(db: Path, tmp_path: Path) -> None:
    for text in ("Sam drinks green tea", "Bob drives a blue car", "Alice bakes bread"):
        add(db, text)
    dump = tmp_path / "dump.jsonl"
    ok(cli(db, "export", str(dump)))
    lines = dump.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[2])["kind"] == "memory"
    broken_id = json.loads(lines[2])["record"]["id"]
    lines[2] = '{"kind": "memory", "record": {"id": '  # line 3: cut off
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")

    fresh = tmp_path / "fresh.db"
    result = ok(cli(fresh, "import", str(bad)))
    assert "line 3:" in result.stderr
    assert "imported 2 memories" in result.stdout
    imported = _snapshot(fresh)
    assert len(imported) == 2 and broken_id not in imported
    assert imported == {k: v for k, v in _snapshot(db).items() if k != broken_id}

    strict = tmp_path / "strict.db"
    result = cli(strict, "import", str(bad), "--strict")
    assert result.exit_code == 1
    assert "line 3:" in result.stderr
    assert "nothing imported" in result.stderr
    assert "Traceback" not in result.output
    assert _snapshot(strict) == {}

    report = json.loads(cli(strict, "import", str(bad), "--strict", "--json").stdout)
    assert report["memories"] == 0
    assert [e["line"] for e in report["errors"]] == [3]


def test_import_missing_file_exits_2(db: Path, tmp_path: Path) -> None:
    assert "cannot read" in failed(cli(db, "import", str(tmp_path / "missing.jsonl")), 2)


# --- embedder mismatch and reindex ----------------------------------------------------------


def test_other_dimension_needs_reindex_then_works(db: Path) -> None:
    memory_id = add(db, "The deploy script lives in tools/deploy.sh")
    add(db, "Berlin is the capital of Germany")
    small = {"HASH_EMBEDDING_DIMENSION": "64"}

    message = failed(cli(db, "search", "deploy script", env=small), 2)
    assert "reindex" in message
    assert "\n" not in message.rstrip("\n")  # one line, not wrapped

    result = ok(cli(db, "reindex", env=small))
    assert "reindexed 2 memories with hash-v1:64" in result.stdout

    hits = jcli(db, "search", "deploy script", env=small)
    assert hits[0]["id"] == memory_id
    assert jcli(db, "stats", "--json", env=small)["embedder"] == "hash-v1:64"
    assert "reindex" in failed(cli(db, "search", "deploy script"), 2)  # 384 no longer fits


# --- maintenance ------------------------------------------------------------------------------


def test_gc_and_stats(db: Path) -> None:
    add(db, "Sam drinks green tea", "--user", "sam", "--type", "preference")
    add(db, "Bob drives a blue car", "--user", "bob")

    dry = jcli(db, "gc", "--dry-run")
    assert dry == {"dry_run": True, "expired": [], "decayed": [], "deleted": 0}
    assert "would delete 0 memories" in ok(cli(db, "gc", "--dry-run")).stdout
    assert jcli(db, "gc")["deleted"] == 0

    stats = jcli(db, "stats")
    assert stats["memories"] == 2
    assert stats["by_type"] == {"preference": 1, "semantic": 1}
    assert stats["embedder"] == "hash-v1:384"
    assert jcli(db, "stats", "--user", "sam")["memories"] == 1
    table = ok(cli(db, "stats")).stdout
    assert "memories" in table and "hash-v1:384" in table


# --- help ---------------------------------------------------------------------------------------


def test_every_command_has_help_with_an_example() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    names = set(group.commands)
    assert names >= {"add", "search", "get", "list", "revise", "delete", "forget", "history",
                     "gc", "export", "import", "reindex", "stats"}  # fmt: skip
    leaves = []
    for name, command in group.commands.items():
        if command.hidden:  # aliases such as "ring" share their group's help
            continue
        if isinstance(command, typer.core.TyperGroup):  # identity, group, org, grant
            leaves += [(f"{name} {sub}", [name, sub], c) for sub, c in command.commands.items()]
        else:
            leaves.append((name, [name], command))
    for name, argv, command in leaves:
        assert command.help and command.help.strip(), name
        assert f"memchentic {name}" in command.help, name
        result = runner.invoke(app, [*argv, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "--store" in result.stdout and "--embedder" in result.stdout, name
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0 and "search" in top.stdout
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith("memchentic ")


# --- the installed console script -----------------------------------------------------------


def test_console_script_uses_memchentic_home(tmp_path: Path) -> None:
    script = shutil.which("memchentic", path=str(Path(sys.executable).parent))
    assert script, "the memchentic console script is not installed next to this python"
    home = tmp_path / "mhome"
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith(("STORE_URL", "EMBEDDER"))}
    env["MEMCHENTIC_HOME"] = str(home)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [script, *args, "--embedder", "hash"],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    added = run("add", "The console script works", "--json")
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["id"]
    assert (home / "memory.db").is_file()

    found = run("search", "console script", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["id"] == memory_id

    missing = run("get", "01NOPE")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: memory not found: 01NOPE")
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize(("given", "workers_get"), [(None, "1"), ("3", "3")])
def test_serve_gives_each_worker_one_embedder_thread_unless_told(
    db: Path, monkeypatch: pytest.MonkeyPatch, given: str | None, workers_get: str
) -> None:
    """A server embeds for concurrent requests, each on its own thread: torch's
    default (a thread per core each) makes them contend (docs/server.md)."""
    pytest.importorskip("uvicorn")
    import uvicorn

    from memchentic.server.app import SERVE_CONSOLE_ENV, SERVE_MCP_ENV

    for key in ("MEMCHENTIC_LOCAL_EMBEDDER_THREADS", "MEMCHENTIC_STORE_URL",
                "MEMCHENTIC_EMBEDDER", SERVE_MCP_ENV, SERVE_CONSOLE_ENV):  # fmt: skip
        monkeypatch.setenv(key, "")  # serve sets them: undone after the test
        monkeypatch.delenv(key)
    if given is not None:
        monkeypatch.setenv("MEMCHENTIC_LOCAL_EMBEDDER_THREADS", given)
    seen: dict[str, str | None] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: seen.update(
        threads=os.environ.get("MEMCHENTIC_LOCAL_EMBEDDER_THREADS"), workers=str(k["workers"])))
    ok(cli(db, "serve", "--workers", "2"))
    assert seen == {"threads": workers_get, "workers": "2"}


def test_serve_never_shows_a_store_password() -> None:
    """The serve banner (text or a JSON log line) names the store; a PostgreSQL
    URL's password, in its user part or as a parameter, is masked there."""
    pytest.importorskip("psycopg")
    from memchentic.store.postgres_connect import _display as shown_location

    shown = shown_location("postgresql://mem:s3cr%40t@db:5432/m?schema=a&password=hunter2")
    assert "s3cr" not in shown and "hunter2" not in shown
    assert shown == "postgresql://mem:***@db:5432/m?schema=a&password=***"
    for plain in ("/srv/memory.db", "postgresql://mem@db/m?schema=a"):
        assert shown_location(plain) == plain
