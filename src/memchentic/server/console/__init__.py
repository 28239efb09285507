"""The web console at ``/console``: see what agents remember and why.

Plain server-rendered HTML (Jinja2 templates and one stylesheet, served from
this package: no CDN, works offline) over the same library calls as the API.
Sign-in takes an API key and opens a server-side session (``..sessions``): the
``HttpOnly``, ``SameSite=Strict`` cookie scoped to ``/console`` (``Secure`` over
HTTPS) holds the session's random id, never the key; signing out or revoking the
key ends the session. Every page runs as that key's identity. Forms that change
something are POSTs checked against the ``Origin`` header. Opening a memory here
does not count as a recall (``touch=False``): looking must not change ranking.

Pages: memories (browse and filter by namespace, type, tag; add one), search (each
hit's score and its signal breakdown), a memory (fields, versions, edges,
entities), its neighbourhood as a small graph, and a live events view (SSE).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, FastAPI, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from ...choices import PROFILES
from ...errors import MemchenticError, NotFoundError
from ..deps import Caller, caller_for, resolve, still_valid
from ..errors import ApiError, caller_message
from ..sessions import ConsoleSessions
from ..sse import sse_response, stream
from .graph_layout import layout

HERE = Path(__file__).parent
COOKIE = "memchentic_console"
#: Memories per page of the list, and hits per search.
PAGE_SIZE = 50
#: Neighbours drawn in the graph view (depth 2).
GRAPH_NODES = 30

templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals["PROFILES"] = PROFILES  # the search form's choices
router = APIRouter(prefix="/console", include_in_schema=False)

OptText = Annotated[str | None, Query(max_length=1024)]


class _SignIn(Exception):
    """No valid console cookie: go to the sign-in page."""


def _sessions(request: Request) -> ConsoleSessions:
    sessions: ConsoleSessions = request.app.state.console_sessions
    return sessions


def _caller(request: Request) -> Caller:
    try:
        return caller_for(request, _sessions(request).key(request.cookies.get(COOKIE)))
    except ApiError:
        raise _SignIn() from None


def _cookie_options(request: Request) -> dict[str, Any]:
    """The session cookie's attributes: ``Secure`` when the request came over HTTPS
    (as the app sees it: behind a TLS proxy, the ASGI server must trust its
    ``X-Forwarded-Proto``: uvicorn trusts the addresses in ``FORWARDED_ALLOW_IPS``)."""
    secure = request.url.scheme == "https"
    return {"httponly": True, "samesite": "strict", "path": "/console", "secure": secure}


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of ``url``, the default port filled in; None when it has
    none (``null``, a relative or malformed value)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def _same_origin(request: Request) -> None:
    """A form post must come from the console's own origin: scheme, host and port
    (issue 32, item 12). Browsers send ``Origin`` with every POST; without one, the
    ``Referer`` (the console keeps it same-origin) must name this origin. A post with
    neither, or with ``Origin: null``, is refused."""
    own = _origin_of(f"{request.url.scheme}://{request.headers.get('host', '')}")
    origin = request.headers.get("origin")
    sender = origin if origin is not None else request.headers.get("referer")
    if own is None or sender is None or _origin_of(sender) != own:
        raise ApiError(403, "forbidden", "cross-site form submission refused")


def _page(request: Request, name: str, who: Caller | None, **values: Any) -> HTMLResponse:
    values["me"] = who.key if who else None
    return templates.TemplateResponse(request, name, values)


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


@router.get("/login")
def login_page(request: Request, error: OptText = None) -> HTMLResponse:
    return _page(request, "login.html", None, error=error)


@router.post("/login")
def login(request: Request, key: Annotated[str, Form(max_length=256)]) -> Response:
    _same_origin(request)
    secret = key.strip()
    try:
        resolve(request, secret)
    except ApiError:
        return _page(request, "login.html", None, error="That key is not valid.")
    session = _sessions(request).open(secret)
    if session is None:  # revoked in between
        return _page(request, "login.html", None, error="That key is not valid.")
    response = RedirectResponse("/console", status_code=303)
    response.set_cookie(COOKIE, session, **_cookie_options(request))
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    _same_origin(request)
    _sessions(request).close(request.cookies.get(COOKIE))  # a replayed cookie is refused
    response = RedirectResponse("/console/login", status_code=303)
    response.delete_cookie(COOKIE, **_cookie_options(request))
    return response


@router.get("")
def memories(
    request: Request,
    namespace: OptText = None,
    type: OptText = None,  # noqa: A002
    tag: OptText = None,
    kind: OptText = None,
    include_expired: bool = False,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    status: OptText = None,
) -> HTMLResponse:
    """Browse memories, newest first, filtered by namespace, type, tag and kind."""
    who = _caller(request)
    filters = {"namespace": namespace or None, "type": type or None, "tag": tag or None,
               "kind": kind or None}  # fmt: skip
    error = None
    try:
        found = who.mem.list(
            namespace=filters["namespace"], type=filters["type"], kind=filters["kind"],
            tags=[tag] if tag else None, include_expired=include_expired,
            limit=PAGE_SIZE, offset=offset,
        )  # fmt: skip
    except MemchenticError as exc:
        found, error = [], caller_message(exc)
    facets = who.mem.stats()
    nxt = urlencode({**{k: v for k, v in filters.items() if v}, "offset": offset + PAGE_SIZE})
    return _page(
        request, "memories.html", who, memories=found, filters=filters, facets=facets,
        error=error, status=status, offset=offset, more=len(found) == PAGE_SIZE, next_query=nxt,
    )  # fmt: skip


@router.post("/memories")
def add(
    request: Request,
    content: Annotated[str, Form(max_length=1_000_000)],
    type: Annotated[str, Form(max_length=64)] = "",  # noqa: A002
    kind: Annotated[str, Form(max_length=16)] = "entry",
    tags: Annotated[str, Form(max_length=4096)] = "",
    namespace: Annotated[str, Form(max_length=1024)] = "",
    title: Annotated[str, Form(max_length=1024)] = "",
) -> Response:
    """Add a memory from the form; go to its page (or back, saying why it was refused)."""
    _same_origin(request)
    who = _caller(request)
    try:
        result = who.mem.add(
            content, type=type or None, kind=kind or "entry", tags=_split(tags),
            namespace=namespace or None, title=title or None,
        )  # fmt: skip
    except MemchenticError as exc:
        status = urlencode({"status": caller_message(exc)})
        return RedirectResponse("/console?" + status, status_code=303)
    if result.id is None:
        message = f"refused: {result.reason}"
        return RedirectResponse("/console?" + urlencode({"status": message}), status_code=303)
    note = result.status + (f" ({result.reason})" if result.reason else "")
    target = f"/console/memories/{result.id}?" + urlencode({"status": note})
    return RedirectResponse(target, status_code=303)


@router.get("/search")
def search(
    request: Request,
    q: OptText = None,
    namespace: OptText = None,
    type: OptText = None,  # noqa: A002
    tag: OptText = None,
    profile: OptText = None,
) -> HTMLResponse:
    """Search with every hit's score and the signals that made it."""
    who = _caller(request)
    hits, error = [], None
    if q and q.strip():
        try:
            hits = who.mem.search(
                q, namespace=namespace or None, type=type or None, tags=[tag] if tag else None,
                profile=profile or None, include_trace=True, limit=PAGE_SIZE,
            )  # fmt: skip
        except MemchenticError as exc:
            error = caller_message(exc)
    form = {"q": q or "", "namespace": namespace or "", "type": type or "", "tag": tag or "",
            "profile": profile or ""}  # fmt: skip
    return _page(request, "search.html", who, hits=hits, form=form, error=error)


@router.get("/memories/{memory_id}")
def memory(request: Request, memory_id: str, status: OptText = None) -> HTMLResponse:
    """One memory: its fields, versions, edges and entities."""
    who = _caller(request)
    try:
        record = who.mem.get(memory_id, touch=False)
    except NotFoundError as exc:
        return _page(request, "missing.html", who, message=str(exc))
    versions = who.mem.history(memory_id)
    edges = who.mem.edges(memory_id)
    return _page(request, "memory.html", who, m=record, versions=versions, edges=edges,
                 status=status)  # fmt: skip


@router.get("/memories/{memory_id}/graph")
def graph(request: Request, memory_id: str) -> HTMLResponse:
    """The memory and its neighbours (two hops) as an SVG drawing (``.graph_layout``)."""
    who = _caller(request)
    try:
        record = who.mem.get(memory_id, touch=False)
    except NotFoundError as exc:
        return _page(request, "missing.html", who, message=str(exc))
    found = who.mem.neighbors(memory_id, 2, limit=GRAPH_NODES)
    return _page(request, "graph.html", who, m=record, **layout(record, found))


@router.get("/events")
def events_page(request: Request) -> HTMLResponse:
    """Events as they happen (server-sent events from ``/console/events/stream``)."""
    who = _caller(request)
    namespaces = who.mem.access.readable(who.mem.principal, None)  # None: every one
    return _page(request, "events.html", who, namespaces=namespaces)


@router.get("/events/stream")
def events_stream(request: Request) -> Response:
    who = _caller(request)
    settings = who.mem.settings
    token, sessions = request.cookies.get(COOKIE), _sessions(request)
    body = stream(
        request, who.mem, since=request.headers.get("last-event-id"), types=None,
        poll_seconds=settings.server_events_poll_seconds,
        alive=still_valid(request, lambda: sessions.key(token)),
        recheck_seconds=settings.server_events_key_recheck_seconds,
    )  # fmt: skip
    return sse_response(body)


async def _sign_in(request: Request, exc: Exception) -> Response:
    if request.url.path.endswith("/stream"):
        return Response(status_code=401)
    return RedirectResponse("/console/login", status_code=303)


def install(app: FastAPI) -> None:
    """Serve the console (pages and static files) on ``app``."""
    settings = app.state.memory.settings
    app.state.console_sessions = ConsoleSessions(
        app.state.keys, hours=settings.server_console_session_hours,
        per_key=settings.server_console_sessions_per_key,
    )  # fmt: skip
    app.include_router(router)
    app.mount("/console/static", StaticFiles(directory=HERE / "static"), name="console-static")
    app.add_exception_handler(_SignIn, _sign_in)
