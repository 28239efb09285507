"""``/v1`` routes for prompt context and short-term memory (docs/design.md, section 7):
``context``, sessions and their turns, working memory, session summaries, ``learn``
and ``manage``.

Session ids travel in the body or the query string, not the path: the default
session of a caller (``default:<user>``) is chosen by the library when none is
given, exactly as in Python."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from .deps import CallerDep
from .schemas import (
    ContextRequest,
    LearnRequest,
    ManageRequest,
    MemoryOut,
    OptText,
    SessionOut,
    SummarizeRequest,
    TurnOut,
    TurnRequest,
    WorkingRequest,
    WriteOut,
    memory_out,
    options,
    write_out,
)

router = APIRouter(prefix="/v1", tags=["context and sessions"])


@router.post("/context", summary="Context for a prompt")
def context(body: ContextRequest, who: CallerDep) -> dict[str, Any]:
    """Up to sixteen sections of memory for a prompt, the stable part first;
    ``text`` is the prompt block (``str(ctx)`` in Python)."""
    fields = options(body)
    return who.mem.context(fields.pop("query", None), **fields).to_dict()


@router.post("/turns", response_model=TurnOut, summary="Record a turn")
def record_turn(body: TurnRequest, who: CallerDep) -> dict[str, Any]:
    """Append one message (role: user, assistant, system, tool...) to a session
    (default: the caller's ``default:<user>`` session)."""
    fields = options(body)
    return who.mem.record_turn(fields.pop("role"), fields.pop("content"), **fields).to_dict()


@router.get("/turns", response_model=list[TurnOut], summary="Turns of a session")
def get_history(
    who: CallerDep,
    session_id: OptText = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 50,
    user_id: OptText = None,
    agent_id: OptText = None,
    namespace: OptText = None,
) -> list[dict[str, Any]]:
    """The last ``limit`` turns of a session that the caller can see, oldest first."""
    turns = who.mem.get_history(
        session_id, limit, user_id=user_id, agent_id=agent_id, namespace=namespace
    )
    return [t.to_dict() for t in turns]


@router.get("/sessions", response_model=list[SessionOut], summary="Sessions")
def list_sessions(
    who: CallerDep, user_id: OptText = None, namespace: OptText = None
) -> list[dict[str, Any]]:
    """The sessions the caller can see with their number of turns, latest first."""
    found = who.mem.list_sessions(user_id=user_id, namespace=namespace)
    return [{"session_id": sid, "turns": count} for sid, count in found]


@router.post("/working", response_model=WriteOut, summary="Remember for this session")
def add_working(body: WorkingRequest, who: CallerDep) -> dict[str, Any]:
    """Write a ``working`` memory of a session (default: the caller's
    ``default:<user>`` session) in the caller's namespace or one it may write."""
    fields = options(body)
    return write_out(who.mem.add_working(fields.pop("content"), **fields))


@router.get("/working", response_model=list[MemoryOut], summary="Working memory of a session")
def working_memory(
    who: CallerDep,
    session_id: OptText = None,
    user_id: OptText = None,
    agent_id: OptText = None,
    namespace: OptText = None,
    limit: Annotated[int | None, Query(ge=1, le=1000)] = None,
) -> list[dict[str, Any]]:
    """The newest ``limit`` (default CONTEXT_SECTION_LIMIT) live working memories of a
    session that the caller can read, oldest first."""
    found = who.mem.working_memory(
        session_id, user_id=user_id, agent_id=agent_id, namespace=namespace, limit=limit
    )
    return [memory_out(r) for r in found]


@router.post("/sessions/summarize", response_model=WriteOut, summary="Summarise a session")
def summarize_session(body: SummarizeRequest, who: CallerDep) -> dict[str, Any]:
    """Write (or replace) the session's ``summary`` memory from its turns."""
    fields = options(body)
    return write_out(who.mem.summarize_session(fields.pop("session_id", None), **fields))


@router.post("/learn", response_model=list[WriteOut], summary="Learn from a conversation")
def learn(body: LearnRequest, who: CallerDep) -> list[dict[str, Any]]:
    """Extract memories from messages (a chat model when configured, rules otherwise)
    and write each through the normal write path."""
    fields = options(body)
    return [write_out(r) for r in who.mem.learn(fields.pop("messages"), **fields)]


@router.post("/manage", response_model=list[WriteOut], summary="Apply memory operations")
def manage(body: ManageRequest, who: CallerDep) -> list[dict[str, Any]]:
    """Apply ``add`` / ``revise`` / ``delete`` / ``none`` operations in order."""
    fields = options(body)
    return [write_out(r) for r in who.mem.manage(fields.pop("operations"), **fields)]
