"""Limits that protect the process (issue 9): content size, tags per memory, metadata
size, query length and results per page. Each is a setting (also read from the
environment) and breaking it is a clear error naming the field and the limit;
nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memchentic import Memory, Settings, ValidationError
from memchentic.cli import app
from memchentic.settings import load_settings


@pytest.fixture
def small(tmp_path: Path) -> Memory:
    settings = Settings(max_content_bytes=100, max_tags=3, max_metadata_bytes=64,
                        max_query_chars=50, search_max_limit=10, list_max_limit=20)  # fmt: skip
    m = Memory(path=tmp_path / "limits.db", embedder="hash", settings=settings)
    yield m
    m.close()


def _refused(call, field: str, *words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as info:
        call()
    assert info.value.field == field
    for word in words:
        assert word in str(info.value)


def test_content_size(small: Memory) -> None:
    small.add("x" * 100)  # exactly the limit: accepted
    _refused(lambda: small.add("y" * 101), "content", "at most 100 bytes", "got 101")
    _refused(lambda: small.add("é" * 51), "content", "at most 100 bytes", "got 102")  # bytes
    assert small.store.count(_all()) == 1
    first = small.list()[0].id
    _refused(lambda: small.revise(first, "z" * 101), "content", "at most 100 bytes")


def test_tags_per_memory(small: Memory) -> None:
    small.add("three tags", tags=["a", "b", "c"])
    _refused(lambda: small.add("four tags", tags=["a", "b", "c", "d"]), "tags", "at most 3")
    assert small.store.count(_all()) == 1


def test_metadata_size(small: Memory) -> None:
    small.add("small metadata", metadata={"k": "v" * 40})
    _refused(lambda: small.add("big metadata", metadata={"k": "v" * 80}), "metadata",
             "at most 64 bytes")  # fmt: skip
    assert small.store.count(_all()) == 1


def test_query_length_is_an_error_not_a_silent_cut(small: Memory) -> None:
    small.add("Ana keeps the release checklist")
    assert small.search("q" * 50) == []
    _refused(lambda: small.search("q" * 51), "query", "at most 50 characters", "got 51")


def test_results_per_page(small: Memory) -> None:
    small.add_many([f"page fact {i} about otters number {i * 7}" for i in range(25)],
                   on_duplicate="keep")  # fmt: skip
    assert len(small.search("otters", limit=500)) <= 10  # a top-k: clamped
    _refused(lambda: small.search("otters", limit=0), "limit", "at least 1")
    assert len(small.list(limit=20)) == 20
    _refused(lambda: small.list(limit=21), "limit", "at most 20", "LIST_MAX_LIMIT")
    _refused(lambda: small.list(limit=-1), "limit")
    _refused(lambda: small.events(limit=-1), "limit")  # a negative LIMIT would mean "all"
    pages = [small.list(limit=20, offset=0), small.list(limit=20, offset=20)]
    assert len({r.id for page in pages for r in page}) == 25


def test_limits_are_settings_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCHENTIC_MAX_CONTENT_BYTES", "10")
    monkeypatch.setenv("MAX_TAGS", "2")
    monkeypatch.setenv("MEMCHENTIC_MAX_METADATA_BYTES", "20")
    monkeypatch.setenv("MAX_QUERY_CHARS", "30")
    monkeypatch.setenv("MEMCHENTIC_SEARCH_MAX_LIMIT", "5")
    monkeypatch.setenv("LIST_MAX_LIMIT", "7")
    s = load_settings()
    assert (s.max_content_bytes, s.max_tags, s.max_metadata_bytes, s.max_query_chars,
            s.search_max_limit, s.list_max_limit) == (10, 2, 20, 30, 5, 7)  # fmt: skip
    monkeypatch.setenv("LIST_MAX_LIMIT", "0")
    with pytest.raises(ValidationError, match="LIST_MAX_LIMIT"):
        load_settings()


def test_the_cli_shows_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCHENTIC_MAX_QUERY_CHARS", "20")
    monkeypatch.setenv("MEMCHENTIC_LIST_MAX_LIMIT", "5")
    store = str(tmp_path / "cli.db")
    Memory(store=store, embedder="hash").close()  # search and list read a store
    runner = CliRunner()
    result = runner.invoke(app, ["search", "w" * 21, "--store", store, "--embedder", "hash"])
    assert result.exit_code == 2
    assert "query: must be at most 20 characters" in result.output
    result = runner.invoke(app, ["list", "--limit", "6", "--store", store, "--embedder", "hash"])
    assert result.exit_code == 2 and "limit: must be at most 5" in result.output


def test_imported_lines_obey_the_limits(small: Memory) -> None:
    import io
    import json

    line = {"kind": "memory", "record": {"id": "m1", "namespace": "user:a",
            "content": "c" * 200, "created_at": "2025-01-01T00:00:00+00:00"}}  # fmt: skip
    report = small.import_(io.StringIO(json.dumps(line) + "\n"))
    assert report.memories == 0 and report.errors[0][0] == 1
    assert "at most 100 bytes" in report.errors[0][1]


def _all() -> object:
    from memchentic.store.base import MemoryFilter

    return MemoryFilter(namespaces=None, include_expired=True, include_superseded=True)
