"""The span of each MCP message, with nothing a client wrote in its name.

The MCP SDK opens a span per message (its ``OpenTelemetryMiddleware``) named after
the JSON-RPC method and tool name as the client sent them, with the request id and
the protocol version the client announced as attributes. Any caller with a key
could so put megabytes of their own text into span names, each one new (a trace
backend indexes span names), and quote input into a failed span's status.

:func:`install` puts :class:`BoundedSpans` in its place: the same span
(``tools/call remember``, kind SERVER, under the caller's ``traceparent`` if any),
whose method is one of :data:`METHODS` or ``_OTHER``, whose tool is one the server
has (else none), whose request id is kept up to :data:`MAX_ID_CHARS` characters,
and whose failure says the error's class or JSON-RPC code, never its message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer

from .. import tracing

#: The methods of the protocol a span names as sent; any other reads ``_OTHER``.
METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
    "resources/templates/list", "resources/subscribe", "resources/unsubscribe",
    "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
    "server/discover", "subscriptions/listen", "notifications/initialized",
    "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed",
})  # fmt: skip
OTHER = "_OTHER"
#: A longer request id (the client chooses it) is left out of the span.
MAX_ID_CHARS = 64

_VERSIONS: tuple[str, ...]
try:
    from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

    _VERSIONS = tuple(KNOWN_PROTOCOL_VERSIONS)
except ImportError:  # pragma: no cover - another layout of the SDK's types
    _VERSIONS = ()


class BoundedSpans:
    """The MCP SDK's span of a message (a context-tier middleware), bounded."""

    def __init__(self, tools: Iterable[str]) -> None:
        self.tools = frozenset(tools)

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if not tracing.active():
            return await call_next(ctx)
        from opentelemetry.trace import SpanKind, StatusCode

        method = ctx.method if ctx.method in METHODS else OTHER
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        tool = params.get("name") if method == "tools/call" else None
        tool = tool if isinstance(tool, str) and tool in self.tools else None
        version = ctx.protocol_version if ctx.protocol_version in _VERSIONS else OTHER
        attributes: dict[str, Any] = {"mcp.method.name": method, "mcp.protocol.version": version}
        rid = ctx.request_id
        if isinstance(rid, int) or (isinstance(rid, str) and len(rid) <= MAX_ID_CHARS):
            attributes["jsonrpc.request.id"] = str(rid)
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
            if tool is not None:
                attributes["gen_ai.tool.name"] = tool
        with tracing.tracer.start_as_current_span(
            f"{method} {tool}" if tool else method, kind=SpanKind.SERVER, attributes=attributes,
            context=_parent(ctx.meta), record_exception=False, set_status_on_exception=False,
        ) as span:  # fmt: skip
            try:
                result = await call_next(ctx)
            except Exception as exc:
                code = getattr(getattr(exc, "error", None), "code", None)
                span.set_attribute("error.type", str(code) if code else type(exc).__qualname__)
                span.set_status(StatusCode.ERROR)
                raise
            failed = getattr(result, "is_error", None) is True or (
                isinstance(result, Mapping) and result.get("isError") is True
            )
            if method == "tools/call" and failed:
                span.set_attribute("error.type", "tool_error")
                span.set_status(StatusCode.ERROR)
            return result


def _parent(meta: Any) -> Any:
    """The caller's trace context from ``_meta`` (``traceparent``), or None (the
    current span is the parent)."""
    if not isinstance(meta, Mapping) or not meta:
        return None
    from opentelemetry.propagate import extract
    from opentelemetry.trace import get_current_span

    try:
        found = extract(meta)
    except (ValueError, TypeError):
        return None
    return found if get_current_span(found).get_span_context().is_valid else None


def install(server: MCPServer, tools: Iterable[str]) -> None:
    """Replace the SDK's span middleware of ``server`` with :class:`BoundedSpans`."""
    chain = server.middleware
    chain[:] = [
        BoundedSpans(tools) if type(m).__name__ == "OpenTelemetryMiddleware" else m for m in chain
    ]
    if not any(isinstance(m, BoundedSpans) for m in chain):  # an SDK that has none
        chain.insert(0, BoundedSpans(tools))
