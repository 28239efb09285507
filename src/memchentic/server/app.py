"""The ASGI application of ``memchentic serve``: the engine under ``/v1``, the
OpenAPI spec at ``/openapi.json`` with its reference pages at ``/docs`` (Swagger UI)
and ``/redoc``, ``/healthz``, the MCP server (streamable HTTP)
at ``/mcp`` and the web console at ``/console``.

    from memchentic.server import create_app
    app = create_app(store="memory.db", embedder="hash")   # any ASGI server runs it

Every ``/v1`` request needs an API key (``Authorization: Bearer mck_...``) and runs
as that key's identity; see ``auth.py``. The app holds one ``Memory`` per process;
several processes (``serve --workers N``) can share one store.
"""

from __future__ import annotations

import inspect
import json
import os
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..embed import Embedder
from ..memory import Memory
from ..settings import Settings
from ..store.base import Store
from . import errors, routes_admin, routes_memories, routes_sessions, sse
from .auth import KeyRing, view_for
from .headers import SecurityHeaders, docs_csp
from .mcp_server import build_server
from .metrics import install as install_metrics
from .threads import handoffs_for, limit_blas_threads

DESCRIPTION = """\
Long-term memory for AI agents over HTTP: the same engine and the same rules as
the Python library. Send an API key from `memchentic keys create` as
`Authorization: Bearer mck_...`; each request runs as that key's identity. Errors
are JSON: `{"error": {"code": ..., "message": ..., "field": ...}}`."""


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with a JSON 413, whether the size is
    announced (``Content-Length``) or only discovered while reading (chunked)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:  # FastAPI passes HTTPException through as is
                    raise HTTPException(413, self._message)
            return message

        await self.app(scope, limited, send)

    @property
    def _message(self) -> str:
        return f"the request body is larger than {self.max_bytes} bytes"

    async def _refuse(self, send: Send) -> None:
        payload = json.dumps(errors.body("too_large", self._message)).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
                   (b"content-length", str(len(payload)).encode())]  # fmt: skip
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class McpGate:
    """``/mcp``: a 401 unless the request carries a valid API key, then the MCP
    streamable HTTP transport (stateless: any process can answer any request)."""

    def __init__(self, handler: ASGIApp, keys: KeyRing) -> None:
        self.handler = handler
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        secret = _bearer(dict(scope["headers"]).get(b"authorization", b"").decode("latin-1"))
        key = await run_in_threadpool(self.keys.verify, secret)
        if key is None:
            payload = json.dumps(errors.body("unauthorized", "invalid or missing API key"))
            headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": payload.encode()})
            return
        await self.handler(scope, receive, send)


def _bearer(header: str | None) -> str | None:
    scheme, _, secret = (header or "").partition(" ")
    return secret.strip() if scheme.lower() == "bearer" else None


def _mcp_resolver(root: Memory, keys: KeyRing) -> Callable[[Context], Memory]:
    def resolve(ctx: Context) -> Memory:
        headers = ctx.headers or {}
        key = keys.verify(_bearer(headers.get("authorization")))
        view = view_for(root, key) if key is not None else None
        if view is None:
            raise ToolError("unauthorized: invalid API key")
        return view

    return resolve


def _mcp(root: Memory, keys: KeyRing) -> tuple[MCPServer, Route]:
    server = build_server(_mcp_resolver(root, keys))
    server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True,
        # Requests carry a bearer key that browsers never add on their own, so DNS
        # rebinding gains an attacker nothing; the check would only refuse real hosts.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )  # fmt: skip
    handler = StreamableHTTPASGIApp(server.session_manager)
    return server, Route("/mcp", endpoint=McpGate(handler, keys), methods=["GET", "POST", "DELETE"])


#: Where the reference pages load Swagger UI's and ReDoc's files from: the copies the
#: ``fastapi-offline`` package ships, so the pages work with no network.
DOCS_STATIC = "/docs/static"
#: ReDoc's page. Not ``get_redoc_html``'s: ReDoc's injected styles need the page's
#: nonce, which it can only get from ``Redoc.init`` (a browser hides an element's
#: ``nonce`` attribute from scripts). Its "by Redocly" logo, from a CDN, is refused
#: by the policy, and the page shows none.
REDOC_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="{favicon}">
<style>body {{ margin: 0; padding: 0; }}</style>
</head>
<body>
<div id="redoc"></div>
<script src="{js}"></script>
<script>
Redoc.init("{spec}", {{nonce: "NONCE", nativeScrollbars: true}}, document.getElementById("redoc"));
</script>
</body>
</html>
"""


def _api_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc``: documentation, so no key is needed to
    read them; the calls Swagger UI's "Try it out" makes need one ("Authorize")."""
    assets = Path(fastapi_offline.__file__).parent / "static"
    app.mount(DOCS_STATIC, StaticFiles(directory=assets), name="docs-static")
    spec, title = app.openapi_url or "/openapi.json", f"{app.title} API"
    favicon = f"{DOCS_STATIC}/favicon.png"
    swagger = get_swagger_ui_html(
        openapi_url=spec, title=title, swagger_favicon_url=favicon,
        swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
    ).body  # fmt: skip
    redoc = REDOC_PAGE.format(title=title, favicon=favicon, spec=spec,
                              js=f"{DOCS_STATIC}/redoc.standalone.js").encode()  # fmt: skip
    for path, page in (("/docs", bytes(swagger)), ("/redoc", redoc)):
        app.add_api_route(path, _docs_page(page), methods=["GET"], include_in_schema=False)


def _docs_page(html: bytes) -> Callable[[], HTMLResponse]:
    """An endpoint serving ``html`` with a fresh nonce on its inline ``<script>`` and
    ``<style>`` blocks (and for ``NONCE``), and the policy that allows them."""

    def serve() -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        page = html.replace(b"<script>", f'<script nonce="{nonce}">'.encode())
        page = page.replace(b"<style>", f'<style nonce="{nonce}">'.encode())
        page = page.replace(b'"NONCE"', f'"{nonce}"'.encode())
        return HTMLResponse(page, headers={"Content-Security-Policy": docs_csp(nonce)})

    return serve


def _fastapi_telemetry() -> dict[str, Any]:
    """FastAPI's own spans and logs off (where it has them): their attributes hold the
    path and query (``/v1/identities/alice``, ``?user_id=alice``). The server's spans
    are memchentic's, with the route template (docs/observability.md)."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "logs": False}}


def create_app(
    memory: Memory | None = None,
    *,
    store: str | Store | None = None,
    embedder: str | Embedder | None = None,
    settings: Settings | None = None,
    mcp: bool = True,
    console: bool = True,
) -> FastAPI:
    """The server application.

    :param memory: serve this ``Memory`` (left open at shutdown); default: open one
        from ``store``/``embedder``/``settings`` (or the environment) and close it
        at shutdown.
    :param mcp: mount the MCP server (streamable HTTP) at ``/mcp``.
    :param console: serve the web console at ``/console``.
    """
    owned = memory is None
    mem = memory if memory is not None else Memory(store=store, embedder=embedder,
                                                   settings=settings)  # fmt: skip
    keys = KeyRing(mem.store)
    mcp_server, mcp_route = _mcp(mem, keys) if mcp else (None, None)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            if metrics is not None:
                metrics.start()
            try:
                yield
            finally:
                if metrics is not None:
                    metrics.close()
                if owned:
                    mem.close()

    app = FastAPI(
        title="memchentic", version=__version__, description=DESCRIPTION, lifespan=lifespan,
        docs_url=None, redoc_url=None,  # FastAPI's own pages load from a CDN: _api_docs
        **_fastapi_telemetry(),
    )  # fmt: skip
    app.state.memory = mem
    app.state.keys = keys
    errors.install(app)
    app.add_middleware(BodyLimit, max_bytes=mem.settings.server_max_request_bytes)
    app.add_middleware(SecurityHeaders)  # outside BodyLimit, so the 413 gets them too
    for module in (routes_memories, routes_sessions, sse, routes_admin):
        app.include_router(module.router)
    _api_docs(app)
    metrics = install_metrics(app, mem)  # its middleware outermost: every answer counts

    @app.get("/healthz", tags=["health"], summary="Liveness")
    def healthz() -> dict[str, str]:
        """``{"status": "ok"}`` while the server can read its store (no key needed)."""
        mem.store.get_meta("app")
        return {"status": "ok", "version": __version__}

    if mcp_route is not None:
        app.router.routes.append(mcp_route)
    if console:
        from .console import install

        install(app)
    return app


#: Environment switches ``memchentic serve --no-mcp / --no-console`` pass to its workers.
SERVE_MCP_ENV = "MEMCHENTIC_SERVE_MCP"
SERVE_CONSOLE_ENV = "MEMCHENTIC_SERVE_CONSOLE"


def app_from_env() -> FastAPI:
    """``create_app()`` configured from the environment (``MEMCHENTIC_STORE_URL``,
    ``MEMCHENTIC_EMBEDDER``...): what each worker of ``memchentic serve`` runs, on
    one BLAS thread unless the environment names a count, and over SQLite with a
    1 ms switch interval of the interpreter's lock (:mod:`.threads`)."""
    limit_blas_threads()
    app = create_app(
        mcp=os.environ.get(SERVE_MCP_ENV, "1") != "0",
        console=os.environ.get(SERVE_CONSOLE_ENV, "1") != "0",
    )
    handoffs_for(app.state.memory.store)
    return app
