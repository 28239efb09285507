"""``GET /metrics``: the server's counters and histograms in the Prometheus text
exposition format (version 0.0.4), written here (no client library needed).

What is measured (docs/observability.md lists each metric with its labels):

- HTTP requests by route *template* (``/v1/memories/{memory_id}``, never the path a
  client sent, so no id or name reaches a label and the label set stays bounded),
  method and status, and their latency;
- the engine's operations (search, add, context...) as every face of this process
  runs them (HTTP and MCP alike), timed by :func:`memchentic.tracing.observe`;
- write outcomes by status (added, superseded, refused, ...), from the event bus;
- the embedder's time and texts, by wrapping the engine's embedder;
- the store's size, read at scrape time and kept for :data:`STORE_CACHE_SECONDS`.

No label carries an identity, namespace, user, key, query or content. Each process
has its own registry: with ``serve --workers N`` a scrape reaches one worker, as
with any multiprocess Prometheus exporter (docs/observability.md, "Workers").
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from http import HTTPStatus
from time import monotonic, perf_counter
from typing import TYPE_CHECKING, Any

import numpy as np
from fastapi import Depends, FastAPI
from fastapi.responses import PlainTextResponse
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__, tracing
from ..clock import utcnow
from ..embed import Embedder
from ..record import Event
from ..store.base import MemoryFilter
from .deps import admin

if TYPE_CHECKING:
    from ..memory import Memory

#: The exposition format's content type.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: Latency buckets (seconds) of requests and operations: Prometheus' defaults.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
#: Buckets of one embedder call (a query is a millisecond or two, a batch more).
EMBED_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
#: The store's size is read at most this often (a scrape every few seconds is cheap).
STORE_CACHE_SECONDS = 5.0
#: The route label of a request no route answered (404s, refusals before routing).
UNMATCHED = "unmatched"
#: The methods a label or span names as sent (OpenTelemetry's known HTTP methods); any
#: other token (``get``, ``M`` * 12,000: a client sends what it likes, before its key
#: is checked) reads :data:`OTHER_METHOD`, so the label set stays closed.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT",
                     "TRACE"})  # fmt: skip
OTHER_METHOD = "_OTHER"
#: The status codes a label names (HTTP's registered ones); any other reads ``other``.
STATUSES = frozenset(str(code.value) for code in HTTPStatus)
#: Write statuses counted; another (a future one) counts as ``other``.
WRITE_STATUSES = frozenset({
    "added", "superseded", "updated", "merged", "reinforced", "refused", "revised",
    "improved", "deleted", "restored", "pinned", "unpinned",
})  # fmt: skip
#: The events of writes, and the status of those whose payload names none.
WRITE_EVENTS = {
    "memory.added": "added", "memory.updated": "updated", "memory.deduplicated": "refused",
    "memory.dropped": "refused", "memory.deleted": "deleted", "memory.restored": "restored",
    "memory.pinned": "pinned", "memory.unpinned": "unpinned",
}  # fmt: skip

Labels = tuple[str, ...]


# --- the registry and the exposition format -----------------------------------------------


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


class _Metric:
    kind = "untyped"

    def __init__(self, name: str, help_text: str, labels: Labels = ()) -> None:
        self.name = name
        self.help = help_text
        self.labelnames = labels
        self._lock = threading.Lock()

    def header(self) -> Iterator[str]:
        yield f"# HELP {self.name} {self.help.replace(chr(92), chr(92) * 2)}"
        yield f"# TYPE {self.name} {self.kind}"

    def lines(self) -> Iterator[str]:
        raise NotImplementedError


class Counter(_Metric):
    """A count that only goes up (per set of label values)."""

    kind = "counter"

    def __init__(self, name: str, help_text: str, labels: Labels = ()) -> None:
        super().__init__(name, help_text, labels)
        self._values: dict[Labels, float] = {} if labels else {(): 0.0}

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def value(self, labels: Labels = ()) -> float:
        return self._values.get(labels, 0.0)

    def lines(self) -> Iterator[str]:
        with self._lock:
            values = sorted(self._values.items())
        for labels, value in values:
            yield f"{self.name}{_labels(self.labelnames, labels)} {_number(value)}"


class Gauge(_Metric):
    """A value that is set (here: at scrape time)."""

    kind = "gauge"

    def __init__(self, name: str, help_text: str, labels: Labels = ()) -> None:
        super().__init__(name, help_text, labels)
        self._values: dict[Labels, float] = {}

    def set(self, value: float, labels: Labels = ()) -> None:
        with self._lock:
            self._values[labels] = float(value)

    def lines(self) -> Iterator[str]:
        with self._lock:
            values = sorted(self._values.items())
        for labels, value in values:
            yield f"{self.name}{_labels(self.labelnames, labels)} {_number(value)}"


class Histogram(_Metric):
    """Observations counted into cumulative buckets, with their sum and count."""

    kind = "histogram"

    def __init__(
        self, name: str, help_text: str, labels: Labels = (), buckets: Sequence[float] = ()
    ) -> None:
        super().__init__(name, help_text, labels)
        self.buckets = tuple(sorted(buckets or LATENCY_BUCKETS))
        self._bounds = np.array(self.buckets)
        #: labels -> (a count per bucket (not cumulative) and one over the last, sum)
        self._values: dict[Labels, tuple[list[int], list[float]]] = {}

    def observe(self, value: float, labels: Labels = ()) -> None:
        at = int(np.searchsorted(self._bounds, value, side="left"))
        with self._lock:
            counts, total = self._values.setdefault(labels, ([0] * (len(self.buckets) + 1), [0.0]))
            counts[at] += 1
            total[0] += value

    def count(self, labels: Labels = ()) -> int:
        found = self._values.get(labels)
        return sum(found[0]) if found else 0

    def lines(self) -> Iterator[str]:
        with self._lock:
            values = sorted((k, (list(c), s[0])) for k, (c, s) in self._values.items())
        for labels, (counts, total) in values:
            running = 0
            for bound, n in zip((*self.buckets, math.inf), counts, strict=True):
                running += n
                le = f'le="{_number(bound)}"' if math.isinf(bound) else f'le="{bound!r}"'
                yield f"{self.name}_bucket{_labels(self.labelnames, labels, le)} {running}"
            yield f"{self.name}_sum{_labels(self.labelnames, labels)} {_number(total)}"
            yield f"{self.name}_count{_labels(self.labelnames, labels)} {running}"


class Registry:
    """The metrics of one process, and what to refresh before each scrape."""

    def __init__(self) -> None:
        self.metrics: list[_Metric] = []
        self.before_scrape: list[Callable[[], None]] = []

    def add(self, metric: _Metric) -> Any:
        self.metrics.append(metric)
        return metric

    def render(self) -> str:
        for refresh in self.before_scrape:
            refresh()
        lines: list[str] = []
        for metric in self.metrics:
            lines.extend(metric.header())
            lines.extend(metric.lines())
        return "\n".join(lines) + "\n"


# --- what the server measures --------------------------------------------------------------


class ServerMetrics:
    """The metrics of one server (one ``Memory``): filled by the HTTP middleware,
    the operation observer, the event bus and the embedder wrapper."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem
        r = self.registry = Registry()
        self.info = r.add(Gauge("memchentic_info", "The server's version (always 1).",
                                ("version",)))  # fmt: skip
        self.info.set(1, (__version__,))
        self.requests = r.add(Counter(
            "memchentic_http_requests_total",
            "HTTP requests answered, by method, route template and status code.",
            ("method", "route", "status"),
        ))  # fmt: skip
        self.request_seconds = r.add(Histogram(
            "memchentic_http_request_duration_seconds",
            "Time to answer an HTTP request (to its last byte), by method and route template.",
            ("method", "route"),
        ))  # fmt: skip
        self.operation_seconds = r.add(Histogram(
            "memchentic_operation_duration_seconds",
            "Time of an engine operation run by any face of this process (HTTP, MCP), "
            "by operation (search, add, context...) and group (reads, writes...).",
            ("operation", "group"),
        ))  # fmt: skip
        self.operation_errors = r.add(Counter(
            "memchentic_operation_errors_total",
            "Engine operations that ended in an error (refused input included), by operation.",
            ("operation",),
        ))  # fmt: skip
        self.writes = r.add(Counter(
            "memchentic_writes_total",
            "Memories written, by outcome (added, superseded, refused, updated, merged, "
            "reinforced, deleted, ...).",
            ("status",),
        ))  # fmt: skip
        self.embed_seconds = r.add(Histogram(
            "memchentic_embed_duration_seconds", "Time of one call to the embedder.",
            buckets=EMBED_BUCKETS,
        ))  # fmt: skip
        self.embedded = r.add(Counter("memchentic_embedded_texts_total", "Texts embedded."))
        self.store_memories = r.add(Gauge(
            "memchentic_store_memories",
            "Memories in the store: all rows, and those live, expired and superseded.",
            ("state",),
        ))  # fmt: skip
        self.store_bytes = r.add(Gauge(
            "memchentic_store_size_bytes",
            "The store's size on disk (the SQLite files; PostgreSQL: its tables and indexes).",
        ))  # fmt: skip
        r.before_scrape.append(self._read_store)
        self._store_read_at: float | None = None
        self._store_lock = threading.Lock()
        self._stops: list[Callable[[], None]] = []
        self._embedder: Embedder | None = None

    # --- wiring
    def start(self) -> None:
        """Count write outcomes from the bus, time operations and the embedder (until
        :meth:`close`: the server's lifespan)."""
        token = self.mem.subscribe(self._on_event)

        def unsubscribe() -> None:
            self.mem.unsubscribe(token)

        self._stops.append(unsubscribe)
        self._stops.append(tracing.observe(self._on_operation))
        self._embedder = self.mem.embedder
        self.mem.embedder = MeasuredEmbedder(self._embedder, self)

    def close(self) -> None:
        for stop in reversed(self._stops):
            stop()
        self._stops.clear()
        if self._embedder is not None:  # the Memory may outlive the server
            self.mem.embedder = self._embedder
            self._embedder = None

    # --- sources
    def _on_operation(
        self, engine: object, operation: str, group: str, seconds: float, failed: bool
    ) -> None:
        if getattr(engine, "store", None) is not self.mem.store:  # another Memory
            return
        self.operation_seconds.observe(seconds, (operation, group))
        if failed:
            self.operation_errors.inc((operation,))

    def _on_event(self, event: Event) -> None:
        default = WRITE_EVENTS.get(event.type)
        if default is None:
            return
        status = event.payload.get("status", default)
        self.writes.inc((status if status in WRITE_STATUSES else "other",))

    def on_embed(self, seconds: float, texts: int) -> None:
        self.embed_seconds.observe(seconds)
        self.embedded.inc(amount=texts)

    def on_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count a request: ``method`` is taken as sent (mapped here to a closed set),
        ``route`` a route template or :data:`UNMATCHED`."""
        method, code = known_method(method), str(status)
        self.requests.inc((method, route, code if code in STATUSES else "other"))
        self.request_seconds.observe(seconds, (method, route))

    def _read_store(self) -> None:
        with self._store_lock:
            now = monotonic()
            if self._store_read_at is not None and now - self._store_read_at < STORE_CACHE_SECONDS:
                return
            stats = self.mem.store.stats(MemoryFilter.everything(now=utcnow()))
            for state, value in (
                ("all", stats.memories),
                ("live", stats.live),
                ("expired", stats.expired),
                ("superseded", stats.superseded),
            ):
                self.store_memories.set(value, (state,))  # fmt: skip
            self.store_bytes.set(stats.size_bytes)
            self._store_read_at = now

    def render(self) -> str:
        return self.registry.render()


class MeasuredEmbedder(Embedder):
    """The engine's embedder, timed: the same name, model and vectors."""

    def __init__(self, inner: Embedder, metrics: ServerMetrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self.name, self.model, self.dimension = inner.name, inner.model, inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        started = perf_counter()
        try:
            return self.inner.embed_batch(texts)
        finally:
            self.metrics.on_embed(perf_counter() - started, len(texts))

    def embed(self, text: str) -> np.ndarray:
        started = perf_counter()
        try:
            return self.inner.embed(text)
        finally:
            self.metrics.on_embed(perf_counter() - started, 1)

    def __getattr__(self, name: str) -> Any:  # what else the embedder offers
        return getattr(self.inner, name)


def known_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS` (case sensitive, as HTTP is), else
    :data:`OTHER_METHOD`."""
    return method if method in METHODS else OTHER_METHOD


class HttpMetrics:
    """ASGI middleware: counts and times each HTTP request by its route template, in
    an HTTP span (``GET /v1/memories/{memory_id}``) when tracing is on. The span's
    attributes are the method (one of :data:`METHODS` or ``_OTHER``, whose span is
    ``HTTP <route>``), route template and status: never the path or query (a path can
    name an identity, a query a user) nor a method as sent."""

    def __init__(self, app: ASGIApp, metrics: ServerMetrics, routes: Sequence[Any]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        asked = dict(scope)  # the router adds its match to ``scope``
        method = known_method(scope["method"])
        verb = "HTTP" if method == OTHER_METHOD else method  # the span name's
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started = perf_counter()
        with tracing.span(verb, {"http.request.method": method}) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                route = self._template(scope, asked)
                self.metrics.on_request(method, route, status, perf_counter() - started)
                if span.is_recording():
                    span.update_name(f"{verb} {route}")
                    span.set_attribute("http.route", route)
                    span.set_attribute("http.response.status_code", status)

    def _template(self, scope: Scope, asked: Scope) -> str:
        route = scope.get("route")
        if route is None:  # answered before routing (413) or by no route (404)
            route = next((r for r in self.routes if r.matches(asked)[0] != Match.NONE), None)
        if route is None:
            return UNMATCHED
        if isinstance(route, Mount):
            return f"{route.path}/{{path}}"
        return str(getattr(route, "path", UNMATCHED))


def install(app: FastAPI, mem: Memory) -> ServerMetrics | None:
    """``/metrics`` and what fills it, unless ``SERVER_METRICS`` is off. The route
    needs an admin key unless ``SERVER_METRICS_PUBLIC`` is on."""
    settings = mem.settings
    if not settings.server_metrics:
        return None
    metrics = ServerMetrics(mem)  # started and closed by the app's lifespan
    app.add_middleware(HttpMetrics, metrics=metrics, routes=app.router.routes)

    def scrape() -> PlainTextResponse:
        """The metrics of this process in the Prometheus text format."""
        return PlainTextResponse(metrics.render(), media_type=CONTENT_TYPE)

    app.add_api_route(
        "/metrics", scrape, methods=["GET"], include_in_schema=False,
        dependencies=[] if settings.server_metrics_public else [Depends(admin)],
    )  # fmt: skip
    return metrics
