"""OpenTelemetry spans (issue 34, item 5): one around each operation of the table
and each search stage, children of their operation; an HTTP span by route
template; and never the caller's identity, namespace, query or content in any
span's attributes. Recorded with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from memchentic import Memory, tracing  # noqa: E402
from memchentic.errors import NotFoundError  # noqa: E402
from memchentic.settings import Settings  # noqa: E402

STAGES = ("embed", "vector", "keyword", "rank", "supersession")


class _WhileTesting(Sampler):
    """Records spans only while a test of this module runs: the global provider can
    be set once a process, and the rest of the suite should not pay for spans."""

    on = False

    def should_sample(
        self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
        attributes: Any = None, links: Any = None, trace_state: Any = None,
    ) -> SamplingResult:  # fmt: skip
        decision = Decision.RECORD_AND_SAMPLE if self.on else Decision.DROP
        return SamplingResult(decision, attributes if self.on else None)

    def get_description(self) -> str:
        return "memchentic tests"


_SAMPLER = _WhileTesting()
_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans recorded during the test."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider(sampler=_SAMPLER)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    assert provider.sampler is _SAMPLER, "another test set the global tracer provider"
    _EXPORTER.clear()
    _SAMPLER.on = True
    try:
        yield _EXPORTER
    finally:
        _SAMPLER.on = False
        _EXPORTER.clear()


def _named(found: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def _one(found: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    matches = _named(found, name)
    assert len(matches) == 1, (name, [s.name for s in found])
    return matches[0]


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_a_search_has_a_span_per_stage_under_its_operation(
    make_mem: Callable[..., Memory], spans: InMemorySpanExporter
) -> None:
    """On both backends: PostgreSQL runs the keyword stage on another thread, and its
    span still has the search for parent."""
    alice = make_mem().as_identity("alice")
    alice.add("Ottilie grows tomatoes on her balcony")
    spans.clear()
    assert alice.search("tomatoes on the balcony")
    found = spans.get_finished_spans()
    search = _one(found, "memchentic.search")
    assert search.attributes is not None
    assert dict(search.attributes) == {"memchentic.operation": "search",
                                       "memchentic.group": "reads"}  # fmt: skip
    assert search.parent is None
    for stage in STAGES:
        child = _one(found, f"memchentic.search.{stage}")
        assert _parent_id(child) == search.context.span_id, stage
        assert child.context.trace_id == search.context.trace_id, stage
    rank = _one(found, "memchentic.search.rank")
    assert rank.attributes is not None and rank.attributes["memchentic.candidates"] >= 1


def test_the_second_ranking_stage_has_its_span(
    make_mem: Callable[..., Memory], spans: InMemorySpanExporter
) -> None:
    alice = make_mem(settings=Settings(search_rerank=True)).as_identity("alice")
    alice.add("Ottilie grows tomatoes on her balcony")
    spans.clear()
    alice.search("tomatoes on the balcony")
    found = spans.get_finished_spans()
    second = _one(found, "memchentic.search.second_stage")
    assert _parent_id(second) == _one(found, "memchentic.search").context.span_id


def test_a_context_spans_its_collection_its_search_and_its_fit(
    mem: Memory, spans: InMemorySpanExporter
) -> None:
    alice = mem.as_identity("alice")
    alice.add("Ottilie prefers oat milk in her coffee", type="preference")
    spans.clear()
    alice.context("what does Ottilie drink", budget_tokens=200)
    found = spans.get_finished_spans()
    context = _one(found, "memchentic.context")
    collect = _one(found, "memchentic.context.collect")
    fit = _one(found, "memchentic.context.fit")
    search = _one(found, "memchentic.search")  # the context's search: an operation too
    assert _parent_id(collect) == _parent_id(fit) == context.context.span_id
    assert _parent_id(search) == collect.context.span_id


def test_every_operation_of_a_write_is_a_span(mem: Memory, spans: InMemorySpanExporter) -> None:
    alice = mem.as_identity("alice")
    result = alice.add("Ottilie cycles to work")
    alice.remember("Ottilie swims on Fridays")
    alice.revise(result.id, content="Ottilie cycles to work in summer")
    alice.delete(result.id)
    names = [s.name for s in spans.get_finished_spans() if s.parent is None]
    assert names == ["memchentic.add", "memchentic.add", "memchentic.revise",
                     "memchentic.delete"]  # fmt: skip


def test_a_failed_operation_says_its_error_class_not_its_message(
    mem: Memory, spans: InMemorySpanExporter
) -> None:
    alice = mem.as_identity("alice")
    with pytest.raises(NotFoundError):
        alice.get("01JNOTAMEMORYOFALICE0000000")
    span = _one(spans.get_finished_spans(), "memchentic.get")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] == "NotFoundError"
    assert not span.events  # no exception event: its message could quote input
    assert span.status.description is None


def _all_attributes(found: tuple[ReadableSpan, ...]) -> str:
    """Every attribute key and value of every span, its events' and links' too."""
    parts: list[str] = []
    for span in found:
        for attributes in [span.attributes, *[e.attributes for e in span.events],
                           *[link.attributes for link in span.links]]:  # fmt: skip
            for key, value in (attributes or {}).items():
                parts.append(f"{key}={value}")
        parts.append(span.name)
    return "\n".join(parts)


def test_no_span_carries_the_identity_namespace_query_or_content(
    mem: Memory, spans: InMemorySpanExporter
) -> None:
    alice = mem.as_identity("alice")
    identity = mem.store.find_identity("alice", "user")
    assert identity is not None
    content = "Wilhelmina stores the spare passport in the cedar chest"
    query = "where is the spare passport kept"
    written = alice.add(content, user_id="alice", tags=["travel"])
    alice.search(query, user_id="alice")
    alice.context(query, user_id="alice")
    assert written.memory is not None
    found = spans.get_finished_spans()
    assert {"memchentic.add", "memchentic.search", "memchentic.search.vector"} <= {
        s.name for s in found
    }
    text = _all_attributes(found)
    for secret in ("alice", identity.id, written.memory.namespace, "Wilhelmina", "passport",
                   "cedar", query, content):  # fmt: skip
        assert secret not in text, secret


def test_http_and_mcp_spans_name_the_route_template_and_the_tool(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    """Over HTTP and MCP: the server's span names the route template, the MCP SDK's
    the tool, the operation's span is inside them, and none of it says who called
    or what they wrote."""
    pytest.importorskip("fastapi")
    from .live_server import live_server
    from .test_metrics import _mcp_remember

    with live_server(tmp_path) as live:
        alice = live.http("alice")
        content = "Bartholomew feeds the koi at dawn"
        added = alice.post("/v1/memories", json={"content": content, "user_id": "alice"}).json()
        alice.get(f"/v1/memories/{added['id']}")
        alice.post("/v1/search", json={"query": "who feeds the koi", "user_id": "alice"})
        _mcp_remember(live, "Bartholomew repaints the boathouse each spring")
        me = alice.get("/v1/me").json()["key"]
    found = spans.get_finished_spans()
    get = _one(found, "GET /v1/memories/{memory_id}")
    assert get.attributes is not None
    assert get.attributes["http.route"] == "/v1/memories/{memory_id}"
    assert get.attributes["http.response.status_code"] == 200
    search = _one(found, "POST /v1/search")
    operation = _one(found, "memchentic.search")
    assert operation.context.trace_id == search.context.trace_id
    tool = _one(found, "tools/call remember")
    adds = [s for s in _named(found, "memchentic.add") if _parent_id(s) == tool.context.span_id]
    assert len(adds) == 1
    text = _all_attributes(found)
    for secret in ("alice", me["identity_id"], added["id"], "Bartholomew", "koi", content,
                   live.keys["alice"]):  # fmt: skip
        assert secret not in text, secret


def test_tracing_is_a_shared_no_op_without_a_provider(tmp_path: Path) -> None:
    """Without a tracer provider, or without OpenTelemetry at all, a span is one
    shared object and an operation records nothing: tracing costs nothing to speak of."""
    unset = (
        "from memchentic import tracing\n"
        "assert not tracing.active()\n"
        "assert tracing.span('x') is tracing.span('y') is tracing.NO_SPAN\n"
    )
    subprocess.run([sys.executable, "-c", unset], check=True, timeout=120)
    uninstalled = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from memchentic import Memory, tracing\n"
        "assert tracing.tracer.start_as_current_span('x') is tracing.NO_SPAN\n"
        "assert not tracing.active() and tracing.span('x') is tracing.NO_SPAN\n"
        "mem = Memory(sys.argv[1], embedder='hash')\n"
        "mem.add('Ottilie grows tomatoes')\n"
        "assert mem.search('tomatoes')\n"
    )
    subprocess.run([sys.executable, "-c", uninstalled, str(tmp_path / "m.db")], check=True,
                   timeout=120)  # fmt: skip


def test_spans_follow_a_provider_set_after_import(spans: InMemorySpanExporter) -> None:
    """``tracing.tracer`` is OpenTelemetry's proxy: an application that sets its
    provider after importing memchentic still gets memchentic's spans."""
    assert tracing.active()
    with tracing.span("memchentic.test", {"memchentic.count": 2}) as span:
        assert span.is_recording()
    recorded = _one(spans.get_finished_spans(), "memchentic.test")
    assert recorded.attributes is not None and recorded.attributes["memchentic.count"] == 2


def test_an_unknown_method_is_other_in_the_http_span(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    """The method a client sends, unchecked and before any key, never names a span
    nor fills an attribute: an unknown one reads ``_OTHER`` (OpenTelemetry's
    semantic conventions), and the span is ``HTTP <route>``."""
    pytest.importorskip("fastapi")
    from .live_server import live_server

    garbage = "XGARBAGE" + "Q" * 2000
    with live_server(tmp_path) as live:
        assert live.http().request(garbage, "/v1/memories").status_code == 405
        assert live.http("alice").get("/v1/memories").status_code == 200
    found = spans.get_finished_spans()
    assert "XGARBAGE" not in _all_attributes(found)
    other = _one(found, "HTTP /v1/memories")
    assert other.attributes is not None
    assert other.attributes["http.request.method"] == "_OTHER"
    assert other.attributes["http.response.status_code"] == 405
    known = _one(found, "GET /v1/memories")
    assert known.attributes is not None and known.attributes["http.request.method"] == "GET"


def test_mcp_spans_name_no_method_tool_or_id_as_the_client_sent_it(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    """A caller with a key sends any JSON-RPC method, tool name and request id over
    ``/mcp``: a span names a method of the protocol or ``_OTHER``, a tool the server
    has or none, and keeps a request id of at most 64 characters."""
    pytest.importorskip("mcp")
    pytest.importorskip("fastapi")
    import httpx

    from .live_server import live_server

    messages = [
        {"id": "I" * 300, "method": "tools/call", "params": {"name": "T" * 300, "arguments": {}}},
        {"id": 7, "method": "M" * 300, "params": {}},
        {"id": 8, "method": "tools/call",
         "params": {"name": "remember", "arguments": {"content": "Quill sharpens pencils"}}},
    ]  # fmt: skip
    with live_server(tmp_path) as live:
        headers = {"Authorization": f"Bearer {live.keys['alice']}",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
        with httpx.Client(base_url=live.url, headers=headers, timeout=30) as http:
            for message in messages:
                assert http.post("/mcp", json={"jsonrpc": "2.0", **message}).status_code == 200
    found = spans.get_finished_spans()
    text = _all_attributes(found)
    assert "TTTT" not in text and "MMMM" not in text and "IIII" not in text
    unknown_tool = _one(found, "tools/call")
    assert unknown_tool.attributes is not None
    assert "gen_ai.tool.name" not in unknown_tool.attributes
    assert unknown_tool.attributes["error.type"] == "tool_error"
    other = _one(found, "_OTHER")
    assert other.attributes is not None and other.attributes["jsonrpc.request.id"] == "7"
    assert other.status.status_code is StatusCode.ERROR and other.status.description is None
    remember = _one(found, "tools/call remember")
    assert remember.attributes is not None
    assert remember.attributes["gen_ai.tool.name"] == "remember"
    assert remember.attributes["jsonrpc.request.id"] == "8"
