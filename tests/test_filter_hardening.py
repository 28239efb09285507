"""Issue 32, items 2, 5, 6 and 10: metadata filters attacked, on every backend and
through the library, HTTP and MCP.

* item 2: a filter's total work is bounded (``FILTER_MAX_TERMS``), ``in`` costs one
  lookup per row whatever its length, and every store statement has a time budget
  (``STATEMENT_TIMEOUT_SECONDS``): past it a :class:`StoreTimeoutError` naming the
  setting (HTTP 503 ``store_timeout``), and the store goes on serving;
* item 5: operands no backend can hold (over 64 bits, lone surrogates, NUL) and
  JSON nested deeper than any filter are a :class:`ValidationError` naming
  ``filters``, never a store error or a 500; a store failure never sends SQL to a
  caller (HTTP, MCP);
* item 6: the LangGraph store refuses a filter or a value nested 3,000 deep;
* item 10: a dotted key with a numeric step (``a.0``) means the same on SQLite,
  PostgreSQL and the reference: a key of an object, never an item of a list.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from memchentic import LimitError, Memory, Settings, ValidationError
from memchentic.errors import StoreError, StoreTimeoutError
from memchentic.metadata_filter import MAX_JSON_CHARS, MAX_TERMS, loads, matches, parse

SETTING = "STATEMENT_TIMEOUT_SECONDS"
#: The filter of the report: 64 conditions, each "in" a list of 256 (16,384 terms).
PATHOLOGICAL = {"AND": [{f"k{i}": {"in": list(range(256))}} for i in range(64)]}


# --- helpers -------------------------------------------------------------------------------
def _heavy(mem: Memory, backend: str, *, long: bool = True) -> None:
    """One statement through the store's own connection layer that runs far past a
    small budget (``long``: minutes without one; else about a second)."""
    store: Any = mem.store
    if backend == "sqlite":
        rows = 10**9 if long else 5 * 10**6
        store.conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
            "SELECT count(*) FROM c",
            (rows,),
        ).fetchall()
    else:
        with store.connection() as conn:
            conn.execute(f"SELECT pg_sleep({600 if long else 1})")


#: A budget far below the heavy statement, far above any ordinary one.
BUDGET = {"sqlite": 0.05, "postgres": 0.3}


@contextmanager
def _served(mem: Memory, *, mcp: bool = False) -> Iterator[tuple[str, str]]:
    """``mem`` served by a real uvicorn (any backend); its URL and alice's key."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    from .live_server import ServerThread

    mem.as_identity("alice")  # made when missing
    key = KeyRing(mem.store).create(identity="alice")[0]
    thread = ServerThread(create_app(mem, mcp=mcp, console=False))
    url = thread.start()
    try:
        yield url, key
    finally:
        thread.stop()


@contextmanager
def _client(url: str, key: str) -> Iterator[Any]:
    import httpx

    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        yield c


def _field(response: Any) -> str:
    return str(response.json()["error"].get("field"))


# --- item 2: bounded work ------------------------------------------------------------------
def test_the_reported_filter_is_refused_by_the_total_work_bound(mem: Memory) -> None:
    mem.add("a note", metadata={"k0": 1}, user_id="sam")
    for call in (
        lambda: mem.list(user_id="sam", filters=PATHOLOGICAL),
        lambda: mem.search("note", user_id="sam", filters=PATHOLOGICAL),
    ):
        with pytest.raises(LimitError) as raised:
            call()
        assert raised.value.field == "filters"
        assert raised.value.setting == "FILTER_MAX_TERMS"
        assert f"at most {MAX_TERMS} terms" in str(raised.value) and "16384" in str(raised.value)
    # the bound counts every level: 2 x 2 x 300 values nested in OR/AND
    nested = {"OR": [{"AND": [{"a": {"in": list(range(256))}}, {"b": {"nin": list(range(
        256))}}]} for _ in range(3)]}  # fmt: skip
    with pytest.raises(LimitError):
        parse(nested)
    assert parse(nested, max_terms=3 * 512) is not None


def test_a_filter_just_inside_the_bound_returns_the_right_rows(mem: Memory) -> None:
    docs = [{f"k{j}": (i * 7 + j) % 300 for j in range(4)} for i in range(60)]
    docs += [{"k0": "1", "k1": 1, "k2": 1, "k3": 1}, {"k0": True}, {}]
    ids = {mem.add(f"note {i} on the shared topic", metadata=d, user_id="sam").id: d
           for i, d in enumerate(docs)}  # fmt: skip
    inside = {"AND": [{f"k{j}": {"in": list(range(256))}} for j in range(4)]}  # 1,024 terms
    tree = parse(inside)
    expected = {i for i, d in ids.items() if matches(tree, d)}
    assert 0 < len(expected) < len(ids)
    assert {r.id for r in mem.list(user_id="sam", filters=inside, limit=1000)} == expected
    hits = mem.search("note shared topic", user_id="sam", filters=inside, limit=100)
    assert {h.id for h in hits} == expected
    negated = {"NOT": inside}
    assert {r.id for r in mem.list(user_id="sam", filters=negated, limit=1000)} == (
        set(ids) - expected
    )


def test_the_reported_filter_completes_when_the_bound_allows_it(make_mem: Callable) -> None:
    """With FILTER_MAX_TERMS raised to the per-level limits' product, the filter that
    held a worker for minutes is rendered linearly and answers right."""
    mem = make_mem(settings=Settings(filter_max_terms=64 * 256))
    docs = [{f"k{j}": (i * 13 + j) % 280 for j in range(64)} for i in range(40)]
    ids = {r.id: d for r, d in zip(mem.add_many(
        [{"content": f"note {i}", "metadata": d, "user_id": "sam"} for i, d in enumerate(docs)]
    ), docs, strict=True)}  # fmt: skip
    expected = {i for i, d in ids.items() if matches(parse(PATHOLOGICAL, max_terms=10**5), d)}
    assert 0 < len(expected) < len(ids)
    assert {r.id for r in mem.list(user_id="sam", filters=PATHOLOGICAL, limit=100)} == expected
    hits = mem.search("note", user_id="sam", filters=PATHOLOGICAL, limit=100)
    assert {h.id for h in hits} == expected


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_in_costs_the_same_sql_whatever_the_length_of_its_list(dialect: str) -> None:
    """One statement parameter per list, not one OR'ed comparison per value."""
    from memchentic.store.filters import MemoryFilter

    if dialect == "sqlite":
        from memchentic.store.sqlite_rows import SQLITE as engine
    else:
        pytest.importorskip("psycopg")
        from memchentic.store.postgres_rows import POSTGRES as engine

    def rendered(values: list[Any]) -> tuple[str, int]:
        text, params = engine.where(MemoryFilter.everything(metadata=parse({"k": {"in": values}})))
        return text, len(params)

    short, long = rendered([1, 2]), rendered(list(range(256)))
    assert short == long
    assert rendered(["a", "b"]) == rendered([str(i) for i in range(256)])


def test_a_statement_past_its_budget_is_stopped_and_the_store_goes_on(
    make_mem: Callable, backend: str
) -> None:
    mem = make_mem(settings=Settings(statement_timeout_seconds=BUDGET[backend]))
    kept = mem.add("a note before", metadata={"k": 1}, user_id="sam").id
    for _ in range(2):  # twice: the connection that was stopped serves again
        with pytest.raises(StoreTimeoutError) as raised:
            _heavy(mem, backend)
        assert raised.value.setting == SETTING and SETTING in str(raised.value)
        assert raised.value.code == "store_timeout"
        assert isinstance(raised.value, StoreError)
        assert [r.id for r in mem.list(user_id="sam", filters={"k": 1})] == [kept]
    after = mem.add("a note after", metadata={"k": 2}, user_id="sam").id
    assert {r.id for r in mem.list(user_id="sam")} == {kept, after}
    assert [h.id for h in mem.search("note after", user_id="sam", filters={"k": 2})] == [after]


def test_a_statement_stopped_inside_a_write_keeps_nothing(
    make_mem: Callable, backend: str
) -> None:
    mem = make_mem(settings=Settings(statement_timeout_seconds=BUDGET[backend]))
    store: Any = mem.store
    with pytest.raises(StoreTimeoutError), store.write():
        store.set_meta("half_done", "yes")
        _heavy(mem, backend)
    assert store.get_meta("half_done") is None
    store.set_meta("done", "yes")  # the next write goes through
    assert store.get_meta("done") == "yes"


def test_maintenance_runs_without_the_budget(make_mem: Callable, backend: str) -> None:
    mem = make_mem(settings=Settings(statement_timeout_seconds=BUDGET[backend]))
    store: Any = mem.store
    mem.add("a note", user_id="sam")
    with pytest.raises(StoreTimeoutError):
        _heavy(mem, backend, long=False)
    with store.unbudgeted():
        _heavy(mem, backend, long=False)
    with store.unbudgeted(), store.write():  # in a transaction too
        _heavy(mem, backend, long=False)
    with pytest.raises(StoreTimeoutError):  # the budget is back on the same connections
        _heavy(mem, backend, long=False)
    assert store.check()["ok"]  # a check is maintenance: no budget


def test_the_default_budget_is_generous_and_zero_turns_it_off(make_mem: Callable) -> None:
    assert Settings().statement_timeout_seconds >= 5
    assert Settings().filter_max_terms == MAX_TERMS
    mem = make_mem(settings=Settings(statement_timeout_seconds=0))
    mem.add("a note", user_id="sam")
    assert len(mem.list(user_id="sam")) == 1


# --- item 5: operands and depth at the edge -------------------------------------------------
BAD_OPERANDS: list[tuple[dict[str, Any], str, str]] = [
    ({"k": 2**64}, "filters.k.eq", "64 bits"),
    ({"k": -(2**63) - 1}, "filters.k.eq", "64 bits"),
    ({"k": {"gt": -(2**70)}}, "filters.k.gt", "64 bits"),
    ({"k": {"in": [1, 2**64]}}, "filters.k.in", "64 bits"),
    ({"k": "\ud800"}, "filters.k.eq", "surrogates"),
    ({"k": {"lt": "a\udfff"}}, "filters.k.lt", "surrogates"),
    ({"k": {"nin": ["\ud800"]}}, "filters.k.nin", "surrogates"),
    ({"k": {"contains": "\ud800"}}, "filters.k.contains", "surrogates"),
    ({"k": "a\x00b"}, "filters.k.eq", "NUL"),
    ({"k": float("inf")}, "filters.k.eq", "finite"),
    ({"\ud800": 1}, "filters.\\ud800", "a metadata key"),
]


@pytest.mark.parametrize(("filters", "field", "rule"), BAD_OPERANDS,
                         ids=[b[1] + ":" + b[2] for b in BAD_OPERANDS])  # fmt: skip
def test_an_operand_no_backend_can_hold_is_a_validation_error(
    mem: Memory, filters: dict[str, Any], field: str, rule: str
) -> None:
    mem.add("a note", metadata={"k": 1}, user_id="sam")
    for call in (
        lambda: mem.list(user_id="sam", filters=filters),
        lambda: mem.search("note", user_id="sam", filters=filters),
        lambda: mem.list(filters=filters),  # every namespace
    ):
        with pytest.raises(ValidationError) as raised:
            call()
        assert raised.value.field == field and rule in raised.value.rule
        assert not isinstance(raised.value, StoreError)


def test_the_64_bit_limits_themselves_are_fine(mem: Memory) -> None:
    top = mem.add("the top", metadata={"k": 2**63 - 1}, user_id="sam").id
    bottom = mem.add("the bottom", metadata={"k": -(2**63)}, user_id="sam").id
    assert [r.id for r in mem.list(user_id="sam", filters={"k": 2**63 - 1})] == [top]
    assert [r.id for r in mem.list(user_id="sam", filters={"k": {"lte": -(2**63)}})] == [bottom]
    both = {"k": {"in": [2**63 - 1, -(2**63)]}}
    assert {r.id for r in mem.list(user_id="sam", filters=both)} == {top, bottom}


def test_json_text_is_bounded_before_it_is_parsed() -> None:
    for deep in ("[" * 3000 + "]" * 3000, '{"a":' * 2000 + "1" + "}" * 2000, "[" * 3000):
        with pytest.raises(ValidationError) as raised:
            loads(deep)
        assert raised.value.field == "filters" and "nested" in raised.value.rule
    with pytest.raises(ValidationError, match="characters"):
        loads('{"a": "' + "x" * MAX_JSON_CHARS + '"}')
    # brackets inside strings do not count; the deepest legal filter parses
    brackets = "[" * 40 + '\\"' + "{" * 30
    assert loads('{"a": "' + brackets + '"}') == {"a": "[" * 40 + '"' + "{" * 30}
    deepest: dict[str, Any] = {"k": {"in": [1, 2]}}
    for _ in range(8):
        deepest = {"OR": [deepest, {"j": 1}]}
    assert parse(loads(json.dumps(deepest))) is not None
    for bad in ("[1]", "not json", '{"a": 1'):
        with pytest.raises(ValidationError, match="JSON object"):
            loads(bad)


def test_http_answers_bad_operands_and_deep_filters_with_4xx_naming_filters(
    mem: Memory,
) -> None:
    mem.as_identity("alice").add("a note", metadata={"k": 1})
    with _served(mem) as (url, key), _client(url, key) as http:
        for filters, field, _rule in BAD_OPERANDS[:4]:
            response = http.post("/v1/search", json={"query": "note", "filters": filters})
            assert response.status_code == 422, response.text
            assert _field(response) == field
        for body in ('{"query": "note", "filters": {"k": "\\ud800"}}',
                     '{"query": "note", "filters": {"k": {"gte": "\\udc00"}}}'):  # fmt: skip
            response = http.post("/v1/search", content=body,
                                 headers={"Content-Type": "application/json"})  # fmt: skip
            assert response.status_code == 422, response.text
            assert _field(response).startswith("filters.k")
        for text in ("[" * 3000, "[" * 3000 + "]" * 3000, '{"k": "\\ud800"}', '{"k": 1e999}'):
            response = http.get("/v1/memories", params={"filters": text})
            assert response.status_code == 422, response.text
            assert _field(response).startswith("filters")
            assert "SELECT" not in response.text
        # the report's filter, and a 16 KB one, are refused by the work bound
        response = http.post("/v1/search", json={"query": "note", "filters": PATHOLOGICAL})
        assert response.status_code == 413, response.text
        error = response.json()["error"]
        assert (error["field"], error["setting"]) == ("filters", "FILTER_MAX_TERMS")
        big = json.dumps({"AND": [{f"k{i}": {"in": list(range(250))}} for i in range(12)]})
        assert len(big) <= MAX_JSON_CHARS
        response = http.get("/v1/memories", params={"filters": big})
        assert response.status_code == 413 and "FILTER_MAX_TERMS" in response.text
        # the worker is free: an ordinary filter answers
        response = http.get("/v1/memories", params={"filters": '{"k": {"in": [1, 2]}}'})
        assert response.status_code == 200 and len(response.json()) == 1


def test_http_never_sends_sql_to_a_caller(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from memchentic.server.errors import STORE_FAILED

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("the store failed (OperationalError: no such column: x) in: "
                         "SELECT m.id, v.embedding FROM memories m JOIN vectors v")  # fmt: skip

    with _served(mem) as (url, key), _client(url, key) as http:
        monkeypatch.setattr(mem.store, "list_memories", failing)
        response = http.get("/v1/memories")
        assert response.status_code == 503
        assert response.json()["error"] == {"code": "store_error", "message": STORE_FAILED}
        assert "SELECT" not in response.text and "memories m" not in response.text


def test_http_answers_a_statement_past_its_budget_with_503_naming_the_setting(
    make_mem: Callable, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_mem(settings=Settings(statement_timeout_seconds=BUDGET[backend]))
    mem.as_identity("alice").add("a note", metadata={"k": 1})
    listed = mem.store.list_memories

    def slow(*args: Any, **kwargs: Any) -> Any:
        _heavy(mem, backend)
        return listed(*args, **kwargs)

    with _served(mem) as (url, key), _client(url, key) as http:
        monkeypatch.setattr(mem.store, "list_memories", slow)
        response = http.get("/v1/memories", params={"filters": '{"k": 1}'})
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["code"] == "store_timeout" and error["setting"] == SETTING
        assert SETTING in error["message"]
        from memchentic import Client

        with Client(url, key) as client, pytest.raises(StoreTimeoutError) as raised:
            client.list(filters={"k": 1})  # the client raises the library's class
        assert raised.value.setting == SETTING and raised.value.limit == BUDGET[backend]
        monkeypatch.setattr(mem.store, "list_memories", listed)
        response = http.get("/v1/memories", params={"filters": '{"k": 1}'})
        assert response.status_code == 200 and len(response.json()) == 1


def test_mcp_answers_bad_operands_and_store_failures_without_sql(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memchentic.server.errors import STORE_FAILED

    mem.as_identity("alice").add("a note", metadata={"k": 1})

    async def script(url: str, key: str) -> list[str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            seen = []
            # (the SDK's client cannot send a lone surrogate: the library test has those)
            for filters in ({"k": 2**64}, {"k": {"gt": -(2**70)}}, PATHOLOGICAL, {"k": 1}):
                result = await client.call_tool("search", {"query": "note", "filters": filters})
                seen.append(str(result.content[0].text) if result.is_error else "ok")
            return seen

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("the store failed in: SELECT m.id FROM memories m")

    with _served(mem, mcp=True) as (url, key):
        seen = asyncio.run(script(url, key))
        assert "invalid: filters.k.eq" in seen[0] and "64 bits" in seen[0]
        assert "invalid: filters.k.gt" in seen[1] and "64 bits" in seen[1]
        assert "limit_exceeded: filters" in seen[2] and "FILTER_MAX_TERMS" in seen[2]
        assert seen[3] == "ok"
        monkeypatch.setattr(mem.store, "vector_search", failing)
        monkeypatch.setattr(mem.store, "keyword_search", failing)
        failed = asyncio.run(script(url, key))[3]
        assert failed.endswith(f"store_error: {STORE_FAILED}") and "SELECT" not in failed


# --- item 6: the LangGraph store -------------------------------------------------------------
def test_the_langgraph_store_refuses_what_is_nested_3000_deep(mem: Memory) -> None:
    pytest.importorskip("langgraph")
    from memchentic.integrations.langgraph import MemchenticStore

    store = MemchenticStore(mem)
    deep: dict[str, Any] = {"v": 1}
    for _ in range(3000):
        deep = {"a": deep}
    deep_list: list[Any] = [1]
    for _ in range(3000):
        deep_list = [deep_list]
    for call, field in (
        (lambda: store.search(("n",), filter=deep), "filter"),
        (lambda: store.search(("n",), filter={"x": deep_list}), "filter"),
        (lambda: store.search(("n",), query="v", filter=deep), "filter"),
        (lambda: store.put(("n",), "k", deep), "value"),
        (lambda: store.put(("n",), "k", {"x": deep_list}), "value"),
        (lambda: asyncio.run(store.aput(("n",), "k", deep)), "value"),
    ):
        with pytest.raises(ValidationError) as raised:
            call()
        assert raised.value.field == field and "nested at most" in raised.value.rule
    assert store.search(("n",)) == []  # nothing was written
    # as deep as the store can keep is fine, and found by an as-deep filter
    limit = mem.settings.max_metadata_depth - 2
    fits: dict[str, Any] = {"v": 1}
    for _ in range(limit - 1):
        fits = {"a": fits}
    store.put(("n",), "k", fits)
    item = store.get(("n",), "k")
    assert item is not None and item.value == fits
    assert [i.key for i in store.search(("n",), filter=fits)] == ["k"]
    with pytest.raises(ValidationError):
        store.put(("n",), "k2", {"a": fits})


# --- item 10: dotted keys with numeric steps --------------------------------------------------
NUMERIC_DOCS: list[dict[str, Any]] = [
    {"a": [5, 6]},
    {"a": {"0": 5}},
    {"a": {"0": "x", "1": [0]}},
    {"a": [[1]]},
    {"a": [{"0": 1}]},
    {"a": {"0": {"0": 1}}},
    {"a": {"-1": 3}},
    {"a": [7, 8, 9]},
    {"a": 5},
    {},
]
NUMERIC_FILTERS: list[dict[str, Any]] = [
    {"a.0": {"exists": True}},
    {"a.0": {"exists": False}},
    {"NOT": {"a.0": {"exists": True}}},
    {"a.0": {"gte": 0}},
    {"NOT": {"a.0": {"gte": 0}}},
    {"a.0": {"lt": "y"}},
    {"a.0": 5},
    {"a.0": {"ne": 5}},
    {"a.0": {"in": [5, 6, "x"]}},
    {"a.0": {"nin": [5, 7]}},
    {"a.-1": {"exists": True}},
    {"a.-1": {"gt": 0}},
    {"a.1.0": {"exists": True}},
    {"a.1": {"contains": 0}},
    {"a.0.0": {"lte": 1}},
    {"a.2": {"exists": True}},
]


@pytest.fixture
def numeric(mem: Memory) -> tuple[Memory, dict[str, dict[str, Any]]]:
    by_id = {}
    for i, doc in enumerate(NUMERIC_DOCS):
        by_id[mem.add(f"numeric note {i} on the topic", metadata=doc, user_id="sam").id] = doc
    return mem, by_id


@pytest.mark.parametrize("filters", NUMERIC_FILTERS, ids=[json.dumps(f) for f in NUMERIC_FILTERS])
def test_a_numeric_step_means_a_key_on_every_backend(numeric: Any, filters: dict) -> None:
    mem, by_id = numeric
    tree = parse(filters)
    expected = {i for i, doc in by_id.items() if matches(tree, doc)}
    assert {r.id for r in mem.list(user_id="sam", filters=filters)} == expected
    hits = mem.search("numeric note topic", user_id="sam", filters=filters, limit=50)
    assert {h.id for h in hits} == expected


def test_the_reference_never_indexes_a_list() -> None:
    assert not matches(parse({"a.0": {"exists": True}}), {"a": [5]})
    assert matches(parse({"a.0": {"exists": True}}), {"a": {"0": 5}})
    assert not matches(parse({"a.0": {"gte": 0}}), {"a": [5]})
    assert matches(parse({"NOT": {"a.0": {"gte": 0}}}), {"a": [5]})


MIXED_DOCS: list[dict[str, Any]] = [
    {"k": 1}, {"k": 1.0}, {"k": "1"}, {"k": True}, {"k": False}, {"k": None}, {"k": 2},
    {"k": [1]}, {"k": {"1": 1}}, {"k": "b"}, {"k": 2.5}, {},
]  # fmt: skip
MIXED_FILTERS: list[dict[str, Any]] = [
    {"k": {"in": [1, "1", True, None]}},
    {"k": {"in": [1.0, 2, 2.5]}},
    {"k": {"in": ["a", "b", "1"]}},
    {"k": {"in": [False, None]}},
    {"k": {"nin": [1, "b", None]}},
    {"k": {"nin": [True, 2.5, "1", 2]}},
    {"k": {"in": [1, 1.0, 1, "b", "b"]}},
]


@pytest.mark.parametrize("filters", MIXED_FILTERS, ids=[json.dumps(f) for f in MIXED_FILTERS])
def test_in_and_nin_of_mixed_kinds_agree_with_the_reference(mem: Memory, filters: dict) -> None:
    by_id = {mem.add(f"mixed note {i}", metadata=d, user_id="sam").id: d
             for i, d in enumerate(MIXED_DOCS)}  # fmt: skip
    tree = parse(filters)
    expected = {i for i, doc in by_id.items() if matches(tree, doc)}
    assert {r.id for r in mem.list(user_id="sam", filters=filters)} == expected
    hits = mem.search("mixed note", user_id="sam", filters=filters, limit=50)
    assert {h.id for h in hits} == expected
