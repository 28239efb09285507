"""The MCP server: the tools an agent calls, built on the official ``mcp`` SDK.

Tools: ``remember``, ``search``, ``recall``, ``revise``, ``forget``, ``relate``,
``context`` and ``list_recent``. Each resolves the ``Memory`` it runs as from
the request (``resolve``): over stdio, the identity ``memchentic mcp`` was
started as; over HTTP (``/mcp`` in ``memchentic serve``), the API key in the
request's ``Authorization`` header. Library errors come back as tool errors
(``is_error``) reading ``<code>: <message>``, which a model can act on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ..choices import EDGE_KINDS, EdgeKind, Kind, spoken
from ..errors import MemchenticError
from ..memory import Memory
from ..record import MemoryRecord, SearchHit, WriteResult
from .errors import caller_message
from .mcp_spans import install as bound_spans

INSTRUCTIONS = """\
Long-term memory that outlives this conversation. Before answering anything that may
depend on what you were told earlier (the user's preferences, facts about them or the
project, past decisions, how a task was done), call `search` (or `context` at the start
of a task). Save with `remember` only what will still be true and useful later: a fact
the user stated or confirmed, a preference, a decision and its reason (kind "entry"),
or a lesson to apply again (kind "guide"). Do not save chatter, greetings, guesses,
your own speculation, transient task state, or secrets (passwords, API keys, tokens,
private keys). When something you saved turns out wrong, `revise` it; when asked to
forget, `forget` it."""

Resolver = Callable[[Context], Memory]

OptStr = Annotated[str | None, Field(description="Leave empty unless you need it.")]
Namespace = Annotated[
    str | None,
    Field(description="Where: e.g. group:core-team for a shared memory; empty = your own."),
]
UserId = Annotated[
    str | None, Field(description="The user the memory is about, when you serve several.")
]
Tags = Annotated[list[str] | None, Field(description="A few short labels for filtering.")]
MemoryId = Annotated[str, Field(description="The memory's id (from search or list_recent).")]

REMEMBER = """\
Save one thing worth remembering in later conversations.

kind "entry" (default): something true, chosen or learned: a fact about the user, a
person or the project, a preference, a decision with its reason, an event that matters.
kind "guide": advice to follow again next time: how to do a task, a pitfall to avoid,
a procedure that worked. Saving nearly the same guide again reinforces it.

Save facts the user stated or confirmed. Do NOT save: chatter or greetings, guesses or
your own speculation, things true only for the current task, or secrets (passwords, API
keys, tokens, private keys: they are refused). One self-contained idea per memory: name
who or what it is about ("Sam prefers green tea", not "prefers it"). For a value that
changes over time, give a slot_key such as "profile.location": the new value replaces
the old one and keeps it in history.

The answer's status: added, updated (slot), merged or reinforced (guide), superseded (it
contradicted and replaced an older memory) or refused (a near duplicate: its id is
returned; or a secret)."""

SEARCH = """\
Find the memories that best answer a question, best first. Call it before answering
anything that may depend on what you were told earlier. Write the query as a question
or a few keywords. Each hit has id, text, type, kind, score; include_trace adds the
signals that made the score."""

RECALL = """\
Everything that names one entity (a person, project, place, tool), newest first,
across every namespace you can read. Use it when you need all about X rather than the
best answer to a question."""

REVISE = """\
Correct or complete an existing memory (id from search or list_recent) when it has
become wrong or out of date; prefer this to saving a second, contradicting memory.
Only the fields you give change."""

FORGET = """\
Delete a memory for good (id from search or list_recent): when the user asks you to
forget something, or it is wrong and not worth correcting."""

RESTORE = """\
Bring back a memory that a newer one superseded (or that expired), when the newer one
was wrong to hide it: both are then live. The id is the older memory's (from the
newer memory's history or edges)."""

RELATE = f"""\
Link two memories: {spoken(EDGE_KINDS)} (supersedes: the source replaces the target, which
then leaves search)."""

CONTEXT = """\
A ready-to-use block of memory for your prompt: standing instructions, the user's
profile and goals, pinned memories, then what is relevant to `query` and the
session's recent turns. Call it at the start of a task."""

LIST_RECENT = """\
The most recently saved memories, newest first, optionally only of one type, tag or
namespace. Use it to review what is stored or to find the id of a memory to revise or
forget."""


def _fail(exc: MemchenticError) -> ToolError:
    return ToolError(f"{exc.code}: {caller_message(exc)}")


def _write(result: WriteResult) -> dict[str, Any]:
    out: dict[str, Any] = {"status": result.status, "id": result.id, "ids": list(result.ids)}
    if result.reason:
        out["reason"] = result.reason
    return out


def _brief(record: MemoryRecord) -> dict[str, Any]:
    return {
        "id": record.id, "text": record.content, "title": record.title, "type": record.type,
        "kind": record.kind, "namespace": record.namespace, "tags": list(record.tags),
        "updated_at": record.to_dict()["updated_at"],
    }  # fmt: skip


def _hit(hit: SearchHit) -> dict[str, Any]:
    out = {**_brief(hit.memory), "text": hit.text, "score": round(hit.score, 6)}
    if hit.trace is not None:
        out["trace"] = {k: round(v, 6) for k, v in hit.trace.items()}
    return out


def _scope(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in (None, "", [])}


def build_server(resolve: Resolver, *, name: str = "memchentic") -> MCPServer:
    """An MCP server whose tools run as ``resolve(ctx)`` for each call."""
    server: MCPServer = MCPServer(name, instructions=INSTRUCTIONS, log_level="WARNING")
    bound_spans(server, TOOLS)  # no method, tool or id as the client sent it in a span

    def run(ctx: Context, call: Callable[[Memory], Any]) -> Any:
        try:
            return call(resolve(ctx))
        except MemchenticError as exc:
            raise _fail(exc) from None

    @server.tool(description=REMEMBER)
    def remember(
        content: Annotated[str, Field(description="The memory, one self-contained idea.")],
        ctx: Context,
        kind: Kind = "entry",
        type: Annotated[  # noqa: A002 - the documented name
            str | None,
            Field(description="e.g. fact, preference, decision, goal, skill, instruction."),
        ] = None,
        title: OptStr = None,
        tags: Tags = None,
        slot_key: Annotated[
            str | None, Field(description="A key for a value that changes: profile.location.")
        ] = None,
        namespace: Namespace = None,
        user_id: UserId = None,
        ttl_days: Annotated[
            float | None, Field(ge=0, description="Forget after this many days; 0 = never.")
        ] = None,
        importance: Annotated[float | None, Field(ge=0, le=1)] = None,
        metadata: Annotated[dict[str, Any] | None, Field(
            description="Your own fields, e.g. {'project': 'atlas'}; search filters on them.")
        ] = None,
    ) -> dict[str, Any]:
        options = _scope(kind=kind, type=type, title=title, tags=tags, slot_key=slot_key,
                         namespace=namespace, user_id=user_id, ttl_days=ttl_days,
                         importance=importance, metadata=metadata)  # fmt: skip
        return run(ctx, lambda m: _write(m.add(content, **options)))

    @server.tool(description=SEARCH)
    def search(
        query: Annotated[str, Field(description="A question or keywords.")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        type: OptStr = None,  # noqa: A002
        tags: Tags = None,
        namespace: Namespace = None,
        user_id: UserId = None,
        include_trace: bool = False,
        filters: Annotated[dict[str, Any] | None, Field(
            description="On metadata: {'key': value}, {'key': {'gte': 3}}, {'key': {'in': "
            "[...]}}, {'OR': [...]}, {'NOT': {...}}.")] = None,
    ) -> list[dict[str, Any]]:
        options = _scope(type=type, tags=tags, namespace=namespace, user_id=user_id,
                         filters=filters)  # fmt: skip
        return run(ctx, lambda m: [_hit(h) for h in m.search(
            query, limit=limit, include_trace=include_trace, **options)])  # fmt: skip

    @server.tool(description=RECALL)
    def recall(
        entity: Annotated[str, Field(description="The name: a person, project, place...")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
        namespace: Namespace = None,
        user_id: UserId = None,
    ) -> list[dict[str, Any]]:
        options = _scope(namespace=namespace, user_id=user_id)
        return run(ctx, lambda m: [_hit(h) for h in m.recall(entity=entity, limit=limit,
                                                               **options)])  # fmt: skip

    @server.tool(description=REVISE)
    def revise(
        id: MemoryId,  # noqa: A002 - what an agent expects
        ctx: Context,
        content: Annotated[str | None, Field(description="The corrected text.")] = None,
        title: OptStr = None,
        tags: Tags = None,
        type: OptStr = None,  # noqa: A002
        importance: Annotated[float | None, Field(ge=0, le=1)] = None,
    ) -> dict[str, Any]:
        changes = _scope(title=title, tags=tags, type=type, importance=importance)
        return run(ctx, lambda m: _write(m.revise(id, content, **changes)))

    @server.tool(description=FORGET)
    def forget(id: MemoryId, ctx: Context) -> dict[str, Any]:  # noqa: A002
        return run(ctx, lambda m: _write(m.delete(id)))

    @server.tool(description=RESTORE)
    def restore(id: MemoryId, ctx: Context) -> dict[str, Any]:  # noqa: A002
        return run(ctx, lambda m: _write(m.restore(id)))

    @server.tool(description=RELATE)
    def relate(
        source: MemoryId,
        target: MemoryId,
        kind: EdgeKind,
        ctx: Context,
        strength: Annotated[float, Field(ge=0, le=1)] = 1.0,
    ) -> dict[str, Any]:
        return run(ctx, lambda m: m.relate(source, target, kind, strength).to_dict())

    @server.tool(description=CONTEXT)
    def context(
        ctx: Context,
        query: Annotated[str | None, Field(description="What the task is about.")] = None,
        user_id: UserId = None,
        session_id: OptStr = None,
        budget_tokens: Annotated[int | None, Field(ge=1, description="Token budget.")] = None,
    ) -> str:
        options = _scope(user_id=user_id, session_id=session_id, budget_tokens=budget_tokens)
        text = run(ctx, lambda m: str(m.context(query or None, **options)))
        return text or "(no memories yet)"

    @server.tool(description=LIST_RECENT)
    def list_recent(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        type: OptStr = None,  # noqa: A002
        tags: Tags = None,
        namespace: Namespace = None,
        user_id: UserId = None,
    ) -> list[dict[str, Any]]:
        options = _scope(type=type, tags=tags, namespace=namespace, user_id=user_id)
        return run(ctx, lambda m: [_brief(r) for r in m.list(limit=limit, **options)])

    return server


#: The tool names, in the order an agent usually needs them.
TOOLS: tuple[str, ...] = (
    "remember", "search", "recall", "revise", "forget", "restore", "relate", "context",
    "list_recent",
)  # fmt: skip
