"""The engine's operations, listed once.

Every face of the engine derives from or is checked against this table:
:class:`~memchentic.Memory` defines each operation, :class:`~memchentic.AsyncMemory`
offers it as ``a<name>``, :class:`~memchentic.Client` and
:class:`~memchentic.AsyncClient` call it over HTTP under the same name and return
the same type, and the HTTP route, MCP tool and CLI command named here run it.
``tests/test_faces.py`` enumerates the table and fails when a face lacks an
operation, returns another type, or grows a public method the table does not name.

A face an operation is not offered on says why (``local_only``): an operation that
needs the engine's process (a callback) or its machine (a file, the embedder's
whole store) has no remote twin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .context.model import Context
from .record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from .reports import Answer, ConsolidationReport, ImportReport, MaintenanceReport, Neighbour


@dataclass(frozen=True, slots=True)
class Operation:
    """One thing the engine does, and the name it has on each face."""

    #: The method's name on ``Memory``, ``Client`` and ``AsyncClient``; ``AsyncMemory``
    #: prefixes it with ``a``.
    name: str
    #: The service that defines it (``writes``, ``reads``, ``graph``, ``sessions``,
    #: ``context``, ``learning``, ``upkeep``, ``events``).
    group: str
    #: What every face returns.
    returns: Any
    #: ``"METHOD /path"`` of the HTTP route that runs it (under ``/v1``), if any.
    http: str | None = None
    #: The MCP tool that runs it, if any.
    mcp: str | None = None
    #: The CLI command that runs it (``"session history"`` for a sub-command), if any.
    cli: str | None = None
    #: Other names of the same method on every face (``remember`` for ``add``).
    aliases: tuple[str, ...] = ()
    #: Why it has no HTTP twin (then ``Client``/``AsyncClient`` lack it); "" when it has.
    local_only: str = ""

    @property
    def remote(self) -> bool:
        return not self.local_only


_FILES = "it reads files on the engine's machine"
_CALLBACK = "it registers a callback in the engine's process (remote: stream_events)"
_WHOLE_STORE = "it re-embeds the whole store with the engine's embedder (an operator's job)"

OPERATIONS: tuple[Operation, ...] = (
    # --- writes
    Operation(
        "add", "writes", WriteResult, "POST /memories", "remember", "add", aliases=("remember",)
    ),  # fmt: skip
    Operation("add_many", "writes", list[WriteResult], "POST /memories/batch"),
    Operation("revise", "writes", WriteResult, "PATCH /memories/{memory_id}", "revise", "revise"),
    Operation("improve", "writes", WriteResult, "POST /memories/{memory_id}/improve"),
    Operation(
        "delete",
        "writes",
        WriteResult,
        "DELETE /memories/{memory_id}",
        "forget",
        "delete",
        aliases=("forget",),
    ),  # fmt: skip
    Operation("delete_all", "writes", int, "POST /memories/delete_all"),
    Operation("pin", "writes", WriteResult, "POST /memories/{memory_id}/pin", cli="pin"),
    Operation("unpin", "writes", WriteResult, "POST /memories/{memory_id}/unpin", cli="unpin"),
    Operation(
        "restore", "writes", WriteResult, "POST /memories/{memory_id}/restore", "restore",
        "restore-memory",  # `memchentic restore` restores a backup
    ),  # fmt: skip
    Operation("manage", "learning", list[WriteResult], "POST /manage"),
    # --- reads
    Operation("search", "reads", list[SearchHit], "POST /search", "search", "search"),
    Operation("recall", "reads", list[SearchHit], "POST /recall", "recall"),
    Operation("get", "reads", MemoryRecord, "GET /memories/{memory_id}", cli="get"),
    Operation("list", "reads", list[MemoryRecord], "GET /memories", "list_recent", "list"),
    Operation(
        "history", "reads", list[Version], "GET /memories/{memory_id}/history", cli="history"
    ),  # fmt: skip
    # --- graph
    Operation("relate", "graph", Edge, "POST /edges", "relate"),
    Operation("delete_edge", "graph", bool, "DELETE /edges/{edge_id}"),
    Operation("edges", "graph", list[Edge], "GET /memories/{memory_id}/edges"),
    Operation(
        "neighbors",
        "graph",
        list[Neighbour],
        "GET /memories/{memory_id}/neighbors",
        cli="neighbors",
    ),  # fmt: skip
    Operation("entities", "graph", dict[str, Any], "GET /entities"),
    Operation("ask", "graph", Answer, "POST /ask", cli="ask"),
    Operation(
        "consolidate", "graph", ConsolidationReport, "POST /consolidate", cli="consolidate"
    ),  # fmt: skip
    # --- sessions (short-term memory)
    Operation("record_turn", "sessions", Turn, "POST /turns", cli="session turn"),
    Operation("add_message", "sessions", Turn, "POST /turns"),
    Operation("get_history", "sessions", list[Turn], "GET /turns", cli="session history"),
    Operation(
        "list_sessions", "sessions", list[tuple[str, int]], "GET /sessions", cli="session list"
    ),  # fmt: skip
    Operation(
        "summarize_session",
        "sessions",
        WriteResult,
        "POST /sessions/summarize",
        cli="session summarize",
    ),  # fmt: skip
    Operation("add_working", "sessions", WriteResult, "POST /working"),
    Operation("working_memory", "sessions", list[MemoryRecord], "GET /working"),
    # --- context
    Operation(
        "context",
        "context",
        Context,
        "POST /context",
        "context",
        "context",
        aliases=("build_context",),
    ),  # fmt: skip
    # --- learning
    Operation("learn", "learning", list[WriteResult], "POST /learn", cli="learn"),
    # --- upkeep
    Operation("stats", "upkeep", dict[str, Any], "GET /stats", cli="stats"),
    Operation("gc", "upkeep", dict[str, Any], "POST /gc", cli="gc"),
    Operation("maintain", "upkeep", MaintenanceReport, "POST /maintain", cli="maintain"),
    Operation("export", "upkeep", int, "GET /export", cli="export"),
    Operation("import_", "upkeep", ImportReport, cli="import", local_only=_FILES),
    Operation("reindex", "upkeep", int, cli="reindex", local_only=_WHOLE_STORE),
    Operation("reset", "upkeep", int, "POST /reset"),
    # --- events
    Operation("events", "events", list[Event], "GET /events/log"),
    Operation("subscribe", "events", str, local_only=_CALLBACK),
    Operation("unsubscribe", "events", bool, local_only=_CALLBACK),
)

#: Public members of ``Memory`` that are not operations: its lifecycle and views.
LIFECYCLE: tuple[str, ...] = (
    "as_identity", "close", "directory", "extractor", "for_identity", "summarizer",
)  # fmt: skip

#: Public members of ``Client`` that are not operations of ``Memory``: the key's own
#: identity, the directory over HTTP and the live event stream.
REMOTE_ONLY: tuple[str, ...] = ("me", "stream_events")


def operation(name: str) -> Operation:
    """The operation called ``name`` (or one of its aliases)."""
    for op in OPERATIONS:
        if name == op.name or name in op.aliases:
            return op
    raise KeyError(name)
