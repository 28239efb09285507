"""Events over HTTP (docs/design.md, section 8): ``GET /v1/events`` streams them as
server-sent events, ``GET /v1/events/log`` pages through them as JSON.

The stream polls the store's event log through the caller's view, so it sees
exactly the events the access rules let that caller see, and every server
process sharing a store streams the same events (a subscriber callback would
only see the writes of its own process). Each message carries the event id as
its SSE ``id``: a client that reconnects with ``Last-Event-ID`` (browsers do it
on their own) resumes right after it. Without ``Last-Event-ID`` or ``since`` the
stream starts at the present; ``since=0`` replays the whole log.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool

from ..events import EVENT_TYPES, check_types
from ..memory import Memory
from ..record import Event
from .deps import CallerDep, bearer, keyring, still_valid
from .schemas import EventOut

router = APIRouter(prefix="/v1", tags=["events"])

#: A comment line is sent after this many idle seconds, so proxies keep the stream open.
KEEPALIVE_SECONDS = 15.0
#: Events read from the store per query.
BATCH = 200
#: Reconnection delay suggested to clients (SSE ``retry:``), in milliseconds.
RETRY_MS = 2000

Types = Annotated[
    list[str] | None,
    Query(max_length=len(EVENT_TYPES), description="Only these event types (repeatable)."),
]


def format_event(event: Event) -> str:
    """One SSE message: ``id``, ``event`` (the type) and the event as JSON ``data``."""
    data = json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n"


def tail_cursor(view: Memory, types: Sequence[str] | None) -> str | None:
    """The id of the newest event this view can see (None when there is none yet).

    The store reads events oldest first after a cursor, so this pages to the end;
    it runs once per new stream."""
    cursor: str | None = None
    while True:
        page = view.events(since=cursor, types=types, limit=BATCH * 5)
        if not page:
            return cursor
        cursor = page[-1].id
        if len(page) < BATCH * 5:
            return cursor


class _Gate:
    """Whether the stream's caller still holds: asks ``alive`` before each batch is
    delivered and, between batches and within a long one, once ``every`` seconds."""

    def __init__(self, alive: Callable[[], bool], every: float) -> None:
        self.alive = alive
        self.every = every
        self.checked = anyio.current_time()

    async def open(self, *, force: bool = False) -> bool:
        if not force and anyio.current_time() - self.checked < self.every:
            return True
        ok = await run_in_threadpool(self.alive)
        self.checked = anyio.current_time()
        return ok


async def stream(
    request: Request,
    view: Memory,
    *,
    since: str | None,
    types: Sequence[str] | None,
    poll_seconds: float,
    alive: Callable[[], bool],
    recheck_seconds: float,
) -> AsyncIterator[str]:
    """The SSE body: new events as they are stored, a keepalive comment when idle.

    It ends as soon as ``alive()`` says the caller's key (or console session) no
    longer holds: checked before every batch it delivers, so nothing stored after a
    revocation goes out, and every ``recheck_seconds`` (idle or mid-batch)."""
    if since == "0":
        cursor: str | None = None
    elif since:
        cursor = since
    else:
        cursor = await run_in_threadpool(tail_cursor, view, types)
    gate = _Gate(alive, recheck_seconds)
    yield f"retry: {RETRY_MS}\n\n"
    idle = 0.0
    while not await request.is_disconnected():
        batch = await run_in_threadpool(view.events, since=cursor, types=types, limit=BATCH)
        if not await gate.open(force=bool(batch)):
            return
        for event in batch:
            if not await gate.open():
                return
            yield format_event(event)
            cursor = event.id
        if batch:
            idle = 0.0
            if len(batch) == BATCH:
                continue
        elif idle >= KEEPALIVE_SECONDS:
            yield ": keepalive\n\n"
            idle = 0.0
        await anyio.sleep(poll_seconds)
        idle += poll_seconds


def sse_response(body: AsyncIterator[str]) -> StreamingResponse:
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)


@router.get(
    "/events",
    summary="Stream events (SSE)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
def events_stream(
    request: Request,
    who: CallerDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    type: Types = None,  # noqa: A002 - the documented name
    since: Annotated[str | None, Query(max_length=64)] = None,
    last_event_id: Annotated[str | None, Header(max_length=64)] = None,
) -> StreamingResponse:
    """Server-sent events the caller may see, as they happen. ``Last-Event-ID`` (or
    ``since``) resumes after that event; ``since=0`` replays the log first. The
    stream ends once the key is revoked."""
    wanted = check_types(type)
    settings = who.mem.settings
    secret = credentials.credentials if credentials else None
    body = stream(
        request, who.mem, since=last_event_id or since,
        types=sorted(wanted) if wanted else None, poll_seconds=settings.server_events_poll_seconds,
        alive=still_valid(request, lambda: keyring(request).verify(secret)),
        recheck_seconds=settings.server_events_key_recheck_seconds,
    )  # fmt: skip
    return sse_response(body)


@router.get("/events/log", response_model=list[EventOut], summary="Stored events")
def events_log(
    who: CallerDep,
    type: Types = None,  # noqa: A002
    since: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """Stored events after the event id ``since``, oldest first, that the caller may see."""
    return [e.to_dict() for e in who.mem.events(since=since, types=type, limit=limit)]
