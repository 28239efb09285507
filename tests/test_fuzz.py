"""Fuzzing (issue 9): hypothesis strategies for every public input (text, tags,
namespaces, metadata JSON, queries, limits, dates) and for corrupted JSON Lines
imports. Whatever comes in, a call either works or raises a
:class:`~memchentic.errors.MemchenticError` naming the field; never another
exception, and a refused call writes nothing.

Short variant: a few hundred cases per test. ``MEMCHENTIC_LONG_TESTS=1``: 20x.
"""

from __future__ import annotations

import io
import json
import os
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from memchentic import Memory
from memchentic.cli import app
from memchentic.errors import MemchenticError, ValidationError
from memchentic.store.base import MemoryFilter
from memchentic.text import fts_phrase, query_words

LONG = os.environ.get("MEMCHENTIC_LONG_TESTS") == "1"
EVERYTHING = MemoryFilter(namespaces=None, include_expired=True, include_superseded=True)
#: Cases run per test, by test name (reported with -s).
CASES: dict[str, int] = {}


def fuzz(examples: int) -> Callable[[Any], Any]:
    return settings(
        max_examples=examples * (20 if LONG else 1),
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],  # fmt: skip
    )


def _count(name: str) -> None:
    CASES[name] = CASES.get(name, 0) + 1


# --- strategies: every public input ---------------------------------------------------
#: Any code point: controls, NUL, lone surrogates, RTL marks, emoji, unassigned.
ANY_CHAR = st.characters(exclude_categories=())
TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=200),
    st.text(st.sampled_from(list("ab \"'*^:-()[]{}.,;!?\\/\t\n")), max_size=40),
    st.sampled_from(["AND", "OR", "NOT", "NEAR(a b)", "a*", '"', "''", "-x", "^a", "c:d",
                     "\x00", "\ud800", "𝔘𝔫𝔦", "\u202etxet", " ", "", "x" * 70_000]),
)  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHAR, max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(ANY_CHAR, max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
NAMESPACE = st.one_of(
    st.sampled_from(["user:alice", "agent:bot", "group:team", "org:acme", "federated:a:b",
                     "ring:team", "user:", ":", "user:a b", "USER:x", "user:x:y", "team:x"]),
    TEXT,
)  # fmt: skip
DATE = st.one_of(
    st.none(),
    st.datetimes(timezones=st.none() | st.timezones()),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1, 1, 3)),
    st.datetimes(min_value=datetime(9999, 12, 29), max_value=datetime(9999, 12, 31)),
    st.sampled_from(["2025-01-01", "2025-01-01T10:00:00Z", "0001-01-01T00:00:00+14:00",
                     "9999-12-31T23:59:59-12:00", "yesterday", "", "2025-13-45"]),
    TEXT,
)  # fmt: skip
NUMBER = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(),
    st.text(max_size=4),
)
LIMIT = st.one_of(NUMBER, st.integers(min_value=-5, max_value=2000))
TAGS = st.one_of(st.none(), st.lists(TEXT, max_size=70), TEXT, st.lists(JSON, max_size=3))
METADATA = st.one_of(JSON, st.dictionaries(st.text(max_size=10), JSON, max_size=6))
ADD_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.none() | TEXT,
        "kind": st.sampled_from(["entry", "guide", "note", "", None]),
        "title": st.none() | TEXT,
        "tags": TAGS,
        "metadata": METADATA,
        "slot_key": st.none() | TEXT,
        "namespace": NAMESPACE,
        "user_id": st.none() | TEXT,
        "agent_id": st.none() | TEXT,
        "session_id": st.none() | TEXT,
        "confidence": NUMBER,
        "importance": NUMBER,
        "ttl_days": NUMBER,
        "permanent": st.booleans(),
        "expires_at": DATE,
        "created_at": DATE,
        "valid_from": DATE,
        "valid_to": DATE,
        "path_hint": st.none() | TEXT,
        "repo": st.none() | TEXT,
        "entities": st.none() | TAGS,
        "tier_l0": st.none() | TEXT,
        "tier_l1": st.none() | TEXT,
        "pinned": st.booleans(),
        "on_duplicate": st.sampled_from(["refuse", "reinforce", "keep", "merge", None]),
        "secrets": st.sampled_from(["refuse", "redact", "allow", "x", None]),
        "now": DATE,
    },
)


REVISABLE = {"title", "tags", "metadata", "type", "confidence", "importance", "valid_from",
             "valid_to", "path_hint", "repo", "tier_l0", "tier_l1", "entities", "pinned",
             "expires_at", "now"}  # fmt: skip


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    m = Memory(path=tmp_path_factory.mktemp("fuzz") / "fuzz.db", embedder="hash")
    m.add("Anchor: Ana keeps the release checklist", user_id="alice", tags=["keep"])
    yield m
    print(f"\nfuzz cases: {CASES} (total {sum(CASES.values())})")
    assert m.store.check()["ok"]
    m.close()


def _footprint(m: Memory) -> tuple[int, int, int]:
    store = m.store
    return (store.count(EVERYTHING), sum(1 for _ in store.iter_versions()),
            sum(1 for _ in store.iter_edges()))  # fmt: skip


def _works_or_refuses(call: Callable[[], Any]) -> Any:
    """Run ``call``: its result, or None when it raised a MemchenticError."""
    try:
        return call()
    except MemchenticError as exc:
        assert str(exc)  # a message for a person
        return None


# --- the tests ------------------------------------------------------------------------
@fuzz(300)
@given(content=TEXT, options=ADD_OPTIONS)
def test_add_works_or_refuses_cleanly(mem: Memory, content: Any, options: dict[str, Any]) -> None:
    _count("add")
    before = _footprint(mem)
    result = _works_or_refuses(lambda: mem.add(content, **options))
    if result is None:
        assert _footprint(mem) == before  # a refused call writes nothing
        return
    if result.id and result.status != "refused":
        stored = mem.get(result.id, touch=False)  # what was written reads back whole
        assert stored.id == result.id


@fuzz(150)
@given(content=TEXT, changes=ADD_OPTIONS)
def test_revise_works_or_refuses_cleanly(mem: Memory, content: Any, changes: dict[str, Any]):  # type: ignore[no-untyped-def]
    _count("revise")
    target = mem.add(f"revise target {random.random()}", user_id="alice").id
    assert target is not None
    changes = {k: v for k, v in changes.items() if k in REVISABLE}
    before = mem.get(target, touch=False)
    if _works_or_refuses(lambda: mem.revise(target, content, **changes)) is None:
        assert mem.get(target, touch=False) == before  # unchanged


@fuzz(300)
@given(
    query=TEXT, limit=LIMIT, namespace=st.none() | NAMESPACE, tags=TAGS,
    as_of=DATE, now=DATE, profile=st.sampled_from([None, "rrf", "hybrid", "cosine_decay", "x"]),
    intent=st.sampled_from([None, "preview", "default", "full", "x"]),
)  # fmt: skip
def test_search_works_or_refuses_cleanly(mem: Memory, query: Any, limit: Any, namespace: Any,
                                         tags: Any, as_of: Any, now: Any, profile: Any,
                                         intent: Any) -> None:  # fmt: skip
    _count("search")
    hits = _works_or_refuses(lambda: mem.search(
        query, limit=limit, namespace=namespace, tags=tags, as_of=as_of, now=now,
        profile=profile, intent=intent,
    ))  # fmt: skip
    if hits is not None:
        assert isinstance(hits, list) and len(hits) <= 100


@fuzz(200)
@given(limit=LIMIT, offset=LIMIT, namespace=st.none() | NAMESPACE, tags=TAGS, now=DATE,
       kind=st.sampled_from([None, "entry", "guide", "x"]))  # fmt: skip
def test_list_works_or_refuses_cleanly(mem: Memory, limit: Any, offset: Any, namespace: Any,
                                       tags: Any, now: Any, kind: Any) -> None:  # fmt: skip
    _count("list")
    rows = _works_or_refuses(lambda: mem.list(limit=limit, offset=offset, namespace=namespace,
                                              tags=tags, now=now, kind=kind))  # fmt: skip
    if rows is not None:
        assert len(rows) <= mem.settings.list_max_limit


@fuzz(300)
@given(query=TEXT, k=st.integers(min_value=-3, max_value=50))
def test_the_query_parser_never_raises(mem: Memory, query: str, k: int) -> None:
    """Keyword search takes any text as plain words: no FTS5 syntax error, ever."""
    _count("query parser")
    for word in query_words(query):
        assert fts_phrase(word).startswith('"')
    mem.store.keyword_search(query, k, EVERYTHING)
    mem.store.keyword_search(query, k, MemoryFilter(namespaces=["user:alice"]))
    mem.store.term_stats(query)


@fuzz(200)
@given(name=TEXT, value=DATE)
def test_dates_parse_or_refuse(mem: Memory, name: str, value: Any) -> None:
    _count("dates")
    from memchentic.clock import as_utc, from_text, to_text

    try:
        parsed = as_utc(value, "when")
    except ValidationError:
        return
    if parsed is not None:
        assert parsed.tzinfo is not None
        assert from_text(to_text(parsed)) == parsed  # stored and read back exactly


# --- corrupted JSON Lines -------------------------------------------------------------
@pytest.fixture(scope="module")
def export_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A small real export: memories (one superseded), an edge, versions."""
    path = tmp_path_factory.mktemp("src") / "src.db"
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    with Memory(path=path, embedder="hash") as m:
        a = m.add("Bea runs the Thursday book club", user_id="bea", tags=["club"],
                  metadata={"source": "chat"}, title="Club", created_at=t0)  # fmt: skip
        b = m.add("Bea moved the club to Fridays", user_id="bea", created_at=t0 + timedelta(1))
        m.add("Confirm the venue a week ahead", kind="guide", user_id="bea")
        m.add("Sam likes tea", user_id="sam", slot_key="profile.drink")
        m.add("Sam does not like tea", user_id="sam")
        m.relate(b.id, a.id, "derives_from", 0.7)
        m.revise(a.id, "Bea runs the book club")
        out = io.StringIO()
        m.export(out)
    return out.getvalue().splitlines()


def _mutate(line: str, rnd: random.Random, value: Any) -> str:
    """One corruption: a field replaced by ``value``, a key dropped, or bytes damaged."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError:  # damaged before: damage it again
        data = None
    choice = rnd.randrange(6) if isinstance(data, dict) and "kind" in data else 3 + rnd.randrange(3)
    if choice <= 1:
        kind = data["kind"]  # an earlier corruption may have made it any JSON value
        section = ("record" if kind == "memory" else kind) if isinstance(kind, str) else None
        target = data.get(section, data) if section is not None else data
        if isinstance(target, dict) and target:
            key = rnd.choice(sorted(target))
            if choice == 0:
                target[key] = value
            else:
                del target[key]
        return json.dumps(data, ensure_ascii=False)
    if choice == 2:
        data[rnd.choice(["kind", "record", "edge", "version", "vector", "format"])] = value
        return json.dumps(data, ensure_ascii=False)
    if choice == 3:
        return line[: rnd.randrange(len(line) or 1)]
    if choice == 4:
        at = rnd.randrange(len(line) or 1)
        return line[:at] + rnd.choice(["\x00", "}", "{", '"', "\\", "é", "\ufffd"]) + line[at:]
    return json.dumps(value, ensure_ascii=False)


@fuzz(120)
@given(seed=st.integers(0, 2**32 - 1), values=st.lists(JSON, min_size=1, max_size=4),
       strict=st.booleans())  # fmt: skip
def test_import_of_corrupted_lines(export_lines: list[str], tmp_path_factory: Any, seed: int,
                                   values: list[Any], strict: bool) -> None:  # fmt: skip
    _count("import")
    rnd = random.Random(seed)
    lines = list(export_lines)
    damaged = set()
    for value in values:
        at = rnd.randrange(len(lines))
        lines[at] = _mutate(lines[at], rnd, value)
        damaged.add(at + 1)
    path = tmp_path_factory.mktemp("dst") / "dst.db"
    with Memory(path=path, embedder="hash") as m:
        report = m.import_(io.StringIO("\n".join(lines) + "\n"), strict=strict)
        bad = {n for n, _ in report.errors}
        assert bad <= damaged, "a good line was reported as bad"
        if strict and bad:
            assert _footprint(m) == (0, 0, 0), "--strict refused but wrote"
        else:
            memory_lines = sum(1 for n, text in enumerate(lines, start=1)
                               if n not in bad and '"kind": "memory"' in text)  # fmt: skip
            assert report.memories + report.skipped >= memory_lines - len(damaged)
        check = m.store.check()
        assert check["ok"], check["problems"]


def test_cli_import_reports_line_numbers_and_strict_refuses(
    export_lines: list[str], tmp_path: Path
) -> None:
    lines = list(export_lines)
    lines[2] = lines[2][:25]  # truncated
    lines[4] = json.dumps({"kind": "memory", "record": {"id": "x", "namespace": "user:a"}})
    source = tmp_path / "bad.jsonl"
    source.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    store = str(tmp_path / "strict.db")
    result = runner.invoke(app, ["import", str(source), "--strict", "--store", store,
                                 "--embedder", "hash"])  # fmt: skip
    assert result.exit_code == 1
    assert "line 3:" in result.output and "line 5:" in result.output
    with Memory(path=store, embedder="hash") as m:
        assert _footprint(m) == (0, 0, 0)
    store = str(tmp_path / "lenient.db")
    result = runner.invoke(app, ["import", str(source), "--store", store, "--embedder", "hash"])
    assert result.exit_code == 0, result.output
    assert "line 3:" in result.output and "line 5:" in result.output
    with Memory(path=store, embedder="hash") as m:
        good = sum(1 for n, t in enumerate(lines, 1) if n not in (3, 5) and '"memory"' in t)
        assert m.store.count(EVERYTHING) == good
        assert m.store.check()["ok"]
