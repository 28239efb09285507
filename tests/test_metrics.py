"""``GET /metrics`` (issue 34, item 5): the Prometheus text format, behind an admin
key; requests by route template, operations, write outcomes from every face,
embedder time and store size; no identity, namespace or id in the scrape."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from memchentic import Memory  # noqa: E402
from memchentic.settings import Settings  # noqa: E402

from .live_server import Live, live_server  # noqa: E402

Sample = tuple[str, frozenset[tuple[str, str]]]

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(?:\{{(.*)\}})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)')


def parse(text: str) -> tuple[dict[str, str], dict[Sample, float]]:
    """The exposition format (0.0.4), strictly: the TYPE of each metric, and each
    sample's value by name and labels. Fails on a line it cannot read, a sample
    without a TYPE before it, or a histogram whose buckets do not add up."""
    types: dict[str, str] = {}
    samples: dict[Sample, float] = {}
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            assert name not in types, f"two TYPE lines for {name}"
            types[name] = kind
            continue
        found = _SAMPLE.match(line)
        assert found, f"not a sample line: {line!r}"
        name, raw_labels, value = found.groups()
        labels = _LABEL.findall(raw_labels or "")
        assert ",".join(f'{k}="{v}"' for k, v in labels) == (raw_labels or ""), line
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or types.get(family) == "histogram", f"no TYPE for {name}"
        key = (name, frozenset(labels))
        assert key not in samples, f"twice: {line}"
        samples[key] = float(value.replace("+Inf", "inf"))
    _check_histograms(types, samples)
    return types, samples


def _check_histograms(types: dict[str, str], samples: dict[Sample, float]) -> None:
    for name in (n for n, kind in types.items() if kind == "histogram"):
        series: dict[frozenset[tuple[str, str]], list[tuple[float, float]]] = {}
        for (sample, labels), value in samples.items():
            if sample == f"{name}_bucket":
                le = dict(labels)["le"]
                rest = frozenset((k, v) for k, v in labels if k != "le")
                series.setdefault(rest, []).append((float(le.replace("+Inf", "inf")), value))
        for labels, buckets in series.items():
            buckets.sort()
            counts = [n for _, n in buckets]
            assert counts == sorted(counts), f"{name}: buckets not cumulative"
            assert math.isinf(buckets[-1][0]), f"{name}: no +Inf bucket"
            assert samples[(f"{name}_count", labels)] == counts[-1]
            assert (f"{name}_sum", labels) in samples


def value(samples: dict[Sample, float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def change(before: dict[Sample, float], after: dict[Sample, float], name: str,
           **labels: str) -> float:  # fmt: skip
    return value(after, name, **labels) - value(before, name, **labels)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("metrics")) as server:
        yield server


def scrape(live: Live) -> dict[Sample, float]:
    answer = live.http("admin").get("/metrics")
    assert answer.status_code == 200, answer.text
    return parse(answer.text)[1]


def test_metrics_need_an_admin_key(live: Live) -> None:
    assert live.http().get("/metrics").status_code == 401
    assert live.http("alice").get("/metrics").status_code == 403
    answer = live.http("admin").get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")


def test_the_scrape_is_the_text_format_with_each_metric_typed(live: Live) -> None:
    live.http("alice").post("/v1/search", json={"query": "anything at all"})
    types, _ = parse(live.http("admin").get("/metrics").text)
    assert types == {
        "memchentic_info": "gauge",
        "memchentic_http_requests_total": "counter",
        "memchentic_http_request_duration_seconds": "histogram",
        "memchentic_operation_duration_seconds": "histogram",
        "memchentic_operation_errors_total": "counter",
        "memchentic_writes_total": "counter",
        "memchentic_embed_duration_seconds": "histogram",
        "memchentic_embedded_texts_total": "counter",
        "memchentic_store_memories": "gauge",
        "memchentic_store_size_bytes": "gauge",
    }


def test_a_search_and_an_add_move_their_counters(live: Live) -> None:
    alice = live.http("alice")
    before = scrape(live)
    added = alice.post("/v1/memories", json={"content": "Quentin waters the ferns on Mondays"})
    assert added.json()["status"] == "added"
    memory_id = added.json()["id"]
    assert alice.post("/v1/search", json={"query": "who waters the ferns"}).status_code == 200
    assert alice.get(f"/v1/memories/{memory_id}").status_code == 200
    after = scrape(live)

    def moved(name: str, **labels: str) -> float:
        return change(before, after, name, **labels)

    requests = "memchentic_http_requests_total"
    assert moved(requests, method="POST", route="/v1/memories", status="200") == 1
    assert moved(requests, method="POST", route="/v1/search", status="200") == 1
    assert moved(requests, method="GET", route="/v1/memories/{memory_id}", status="200") == 1
    latency = "memchentic_http_request_duration_seconds_count"
    assert moved(latency, method="POST", route="/v1/search") == 1
    operations = "memchentic_operation_duration_seconds_count"
    assert moved(operations, operation="search", group="reads") == 1
    assert moved(operations, operation="add", group="writes") == 1
    assert moved(operations, operation="get", group="reads") == 1
    assert moved("memchentic_writes_total", status="added") == 1
    assert moved("memchentic_embedded_texts_total") >= 2  # the memory, the query
    assert moved("memchentic_embed_duration_seconds_count") >= 2


def test_write_outcomes_by_status(live: Live) -> None:
    """A near duplicate is counted as refused, a deletion as deleted."""
    alice = live.http("alice")
    before = scrape(live)
    text = "Rosalind keeps the spare key under the blue flowerpot by the door"
    first = alice.post("/v1/memories", json={"content": text}).json()
    again = alice.post("/v1/memories", json={"content": text}).json()
    assert (first["status"], again["status"]) == ("added", "refused")
    assert alice.delete(f"/v1/memories/{first['id']}").status_code == 200
    after = scrape(live)
    for status in ("added", "refused", "deleted"):
        assert change(before, after, "memchentic_writes_total", status=status) == 1, status


def test_writes_over_mcp_are_counted(live: Live) -> None:
    """The metrics count what every face of the process does, MCP as HTTP."""
    pytest.importorskip("mcp")
    before = scrape(live)
    _mcp_remember(live, "Theodora bakes rye bread every Saturday morning")
    after = scrape(live)
    count = "memchentic_operation_duration_seconds_count"
    assert change(before, after, count, operation="add", group="writes") == 1
    assert change(before, after, "memchentic_writes_total", status="added") == 1
    requests = "memchentic_http_requests_total"
    assert change(before, after, requests, method="POST", route="/mcp", status="200") >= 1


def _mcp_remember(live: Live, content: str) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> None:
        headers = {"Authorization": f"Bearer {live.keys['alice']}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool("remember", {"content": content})
            assert not result.is_error, result.content

    asyncio.run(run())


def test_no_identity_namespace_id_or_text_in_the_scrape(live: Live) -> None:
    """Labels are route templates, operations and statuses: bounded, and nothing of
    who called or what they wrote."""
    alice = live.http("alice")
    content = "Marguerite hides the almond biscuits in the pantry"
    added = alice.post("/v1/memories", json={"content": content, "user_id": "alice"}).json()
    alice.post("/v1/search", json={"query": "almond biscuits pantry", "user_id": "alice"})
    alice.get("/v1/memories", params={"namespace": "user:alice"})
    alice.get(f"/v1/memories/{added['id']}/history")
    live.http("admin").get("/v1/identities/alice")
    me = alice.get("/v1/me").json()["key"]
    text = live.http("admin").get("/metrics").text
    for secret in ("alice", me["identity_id"], me["id"], added["id"], live.keys["alice"],
                   "almond", "biscuits", "Marguerite"):  # fmt: skip
        assert secret not in text, secret
    routes = {dict(labels)["route"] for (name, labels) in parse(text)[1]
              if name == "memchentic_http_requests_total"}  # fmt: skip
    assert "/v1/memories/{memory_id}/history" in routes
    assert all(r.startswith("/") or r == "unmatched" for r in routes)


def test_a_path_no_route_serves_is_counted_as_unmatched(live: Live) -> None:
    before = scrape(live)
    assert live.http("alice").get("/no/such/place/alice").status_code == 404
    after = scrape(live)
    labels = {"method": "GET", "route": "unmatched", "status": "404"}
    assert change(before, after, "memchentic_http_requests_total", **labels) == 1


def _app_client(mem: Memory) -> Any:
    from fastapi.testclient import TestClient

    from memchentic.server import create_app

    return TestClient(create_app(mem, mcp=False, console=False))


def test_settings_open_or_turn_off_the_metrics(tmp_path: Path) -> None:
    opened = Memory(tmp_path / "open.db", embedder="hash",
                    settings=Settings(server_metrics_public=True))  # fmt: skip
    off = Memory(tmp_path / "off.db", embedder="hash", settings=Settings(server_metrics=False))
    try:
        with _app_client(opened) as client:
            assert client.get("/metrics").status_code == 200
        with _app_client(off) as client:
            assert client.get("/metrics").status_code == 404
            assert client.get("/healthz").status_code == 200
    finally:
        opened.close()
        off.close()


def test_the_engine_is_left_as_it_was_after_shutdown(tmp_path: Path) -> None:
    """The server times the Memory's embedder while it runs and gives it back."""
    mem = Memory(tmp_path / "m.db", embedder="hash")
    embedder = mem.embedder
    try:
        with _app_client(mem) as client:
            assert mem.embedder is not embedder
            assert mem.embedder.identity == embedder.identity
            assert client.get("/healthz").status_code == 200
        assert mem.embedder is embedder
    finally:
        mem.close()


def test_store_size_on_each_backend(make_mem: Callable[..., Memory]) -> None:
    from memchentic.server.metrics import ServerMetrics

    mem = make_mem()
    alice = mem.as_identity("alice")
    for text in ("Ignatius repairs clocks in his workshop", "Ignatius sings in a choir",
                 "Ignatius keeps bees on the roof"):  # fmt: skip
        alice.add(text)
    alice.delete(alice.add("Ignatius owns a red bicycle").id)
    _, samples = parse(ServerMetrics(mem).render())
    assert value(samples, "memchentic_store_memories", state="all") == 3
    assert value(samples, "memchentic_store_memories", state="live") == 3
    assert value(samples, "memchentic_store_size_bytes") > 0


def test_the_parser_refuses_what_prometheus_would() -> None:
    """The checks above are only as good as the parser: it fails on broken text."""
    good = '# TYPE a_total counter\na_total{x="1"} 2\n'
    assert parse(good)[1] == {("a_total", frozenset({("x", "1")})): 2.0}
    for bad in ('a_total{x="1"} 2\n', '# TYPE a_total counter\na_total{x=1} 2\n',
                "# TYPE h histogram\nh_bucket{le=\"1.0\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                "h_count 1\nh_sum 1\n"):  # fmt: skip
        with pytest.raises(AssertionError):
            parse(bad)


#: The methods a label or span may name (OpenTelemetry's known methods, and ``_OTHER``).
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE",
           "_OTHER"}  # fmt: skip


def test_garbage_methods_from_anyone_do_not_grow_the_label_set(live: Live) -> None:
    """Requests are counted before their key is checked, so anyone can send any method
    token: each unknown one is counted as ``_OTHER``, and 100 distinct 512-byte methods
    add one label set, not 100."""
    before = scrape(live)
    anyone = live.http()
    for i in range(100):
        assert anyone.request(f"M{i:03d}" + "Q" * 512, "/v1/memories").status_code == 405
    text = live.http("admin").get("/metrics").text
    after = parse(text)[1]
    labelled = [dict(labels) for name, labels in after if name.startswith("memchentic_http_")]
    assert {labels["method"] for labels in labelled} <= METHODS
    assert {labels["status"] for labels in labelled if "status" in labels} <= {
        str(code) for code in range(100, 600)
    }
    assert "QQQQ" not in text and "M099" not in text
    assert len(after) - len(before) <= 1 + 17  # one counter and one histogram, at most
    requests = "memchentic_http_requests_total"
    assert change(before, after, requests, method="_OTHER", route="/v1/memories",
                  status="405") == 100  # fmt: skip


def test_methods_and_statuses_are_counted_from_a_closed_set(tmp_path: Path) -> None:
    """Methods are case sensitive (``get`` is not ``GET``); a status HTTP does not
    register reads ``other``."""
    from memchentic.server.metrics import ServerMetrics

    mem = Memory(tmp_path / "m.db", embedder="hash")
    try:
        metrics = ServerMetrics(mem)
        for method, status in (("get", 200), ("GET", 799), ("x" * 5000, 404), ("PATCH", 404)):
            metrics.on_request(method, "/v1/memories", status, 0.01)
        _, samples = parse(metrics.render())
    finally:
        mem.close()
    requests = "memchentic_http_requests_total"
    counted = {tuple(dict(labels)[k] for k in ("method", "status")): n
               for (name, labels), n in samples.items() if name == requests}  # fmt: skip
    assert counted == {("_OTHER", "200"): 1, ("GET", "other"): 1, ("_OTHER", "404"): 1,
                       ("PATCH", "404"): 1}  # fmt: skip
