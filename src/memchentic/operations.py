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

from . import args as a
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
    #: The class of its arguments (:mod:`memchentic.args`): the fields every face
    #: offers or, in ``tests/test_faces.py``, says why it leaves out.
    args: type[a.Args] = a.Args

    @property
    def remote(self) -> bool:
        return not self.local_only


_FILES = "it reads files on the engine's machine"
_CALLBACK = "it registers a callback in the engine's process (remote: stream_events)"
_WHOLE_STORE = "it re-embeds the whole store with the engine's embedder (an operator's job)"

OPERATIONS: tuple[Operation, ...] = (
    # --- writes
    Operation(
        "add",
        "writes",
        WriteResult,
        "POST /memories",
        "remember",
        "add",
        aliases=("remember",),
        args=a.AddArgs,
    ),  # fmt: skip
    Operation("add_many", "writes", list[WriteResult], "POST /memories/batch", args=a.AddManyArgs),
    Operation(
        "revise",
        "writes",
        WriteResult,
        "PATCH /memories/{memory_id}",
        "revise",
        "revise",
        args=a.ReviseArgs,
    ),
    Operation(
        "improve", "writes", WriteResult, "POST /memories/{memory_id}/improve", args=a.ImproveArgs
    ),
    Operation(
        "delete",
        "writes",
        WriteResult,
        "DELETE /memories/{memory_id}",
        "forget",
        "delete",
        aliases=("forget",),
        args=a.DeleteArgs,
    ),  # fmt: skip
    Operation("delete_all", "writes", int, "POST /memories/delete_all", args=a.DeleteAllArgs),
    Operation(
        "pin", "writes", WriteResult, "POST /memories/{memory_id}/pin", cli="pin", args=a.PinArgs
    ),
    Operation(
        "unpin",
        "writes",
        WriteResult,
        "POST /memories/{memory_id}/unpin",
        cli="unpin",
        args=a.UnpinArgs,
    ),
    Operation(
        "restore",
        "writes",
        WriteResult,
        "POST /memories/{memory_id}/restore",
        "restore",
        "restore-memory",  # `memchentic restore` restores a backup
        args=a.RestoreArgs,
    ),  # fmt: skip
    Operation("manage", "learning", list[WriteResult], "POST /manage", args=a.ManageArgs),
    # --- reads
    Operation(
        "search", "reads", list[SearchHit], "POST /search", "search", "search", args=a.SearchArgs
    ),
    Operation("recall", "reads", list[SearchHit], "POST /recall", "recall", args=a.RecallArgs),
    Operation("get", "reads", MemoryRecord, "GET /memories/{memory_id}", cli="get", args=a.GetArgs),
    Operation(
        "list", "reads", list[MemoryRecord], "GET /memories", "list_recent", "list", args=a.ListArgs
    ),
    Operation(
        "history",
        "reads",
        list[Version],
        "GET /memories/{memory_id}/history",
        cli="history",
        args=a.HistoryArgs,
    ),  # fmt: skip
    # --- graph
    Operation("relate", "graph", Edge, "POST /edges", "relate", args=a.RelateArgs),
    Operation("delete_edge", "graph", bool, "DELETE /edges/{edge_id}", args=a.DeleteEdgeArgs),
    Operation("edges", "graph", list[Edge], "GET /memories/{memory_id}/edges", args=a.EdgesArgs),
    Operation(
        "neighbors",
        "graph",
        list[Neighbour],
        "GET /memories/{memory_id}/neighbors",
        cli="neighbors",
        args=a.NeighborsArgs,
    ),  # fmt: skip
    Operation("entities", "graph", dict[str, Any], "GET /entities", args=a.EntitiesArgs),
    Operation("ask", "graph", Answer, "POST /ask", cli="ask", args=a.AskArgs),
    Operation(
        "consolidate",
        "graph",
        ConsolidationReport,
        "POST /consolidate",
        cli="consolidate",
        args=a.ConsolidateArgs,
    ),  # fmt: skip
    # --- sessions (short-term memory)
    Operation(
        "record_turn", "sessions", Turn, "POST /turns", cli="session turn", args=a.RecordTurnArgs
    ),
    Operation("add_message", "sessions", Turn, "POST /turns", args=a.AddMessageArgs),
    Operation(
        "get_history",
        "sessions",
        list[Turn],
        "GET /turns",
        cli="session history",
        args=a.GetHistoryArgs,
    ),
    Operation(
        "list_sessions",
        "sessions",
        list[tuple[str, int]],
        "GET /sessions",
        cli="session list",
        args=a.ListSessionsArgs,
    ),  # fmt: skip
    Operation(
        "summarize_session",
        "sessions",
        WriteResult,
        "POST /sessions/summarize",
        cli="session summarize",
        args=a.SummarizeSessionArgs,
    ),  # fmt: skip
    Operation("add_working", "sessions", WriteResult, "POST /working", args=a.AddWorkingArgs),
    Operation(
        "working_memory", "sessions", list[MemoryRecord], "GET /working", args=a.WorkingMemoryArgs
    ),
    # --- context
    Operation(
        "context",
        "context",
        Context,
        "POST /context",
        "context",
        "context",
        aliases=("build_context",),
        args=a.ContextArgs,
    ),  # fmt: skip
    # --- learning
    Operation("learn", "learning", list[WriteResult], "POST /learn", cli="learn", args=a.LearnArgs),
    # --- upkeep
    Operation("stats", "upkeep", dict[str, Any], "GET /stats", cli="stats", args=a.StatsArgs),
    Operation("gc", "upkeep", dict[str, Any], "POST /gc", cli="gc", args=a.GcArgs),
    Operation(
        "maintain",
        "upkeep",
        MaintenanceReport,
        "POST /maintain",
        cli="maintain",
        args=a.MaintainArgs,
    ),
    Operation("export", "upkeep", int, "GET /export", cli="export", args=a.ExportArgs),
    Operation(
        "import_", "upkeep", ImportReport, cli="import", local_only=_FILES, args=a.ImportArgs
    ),
    Operation("reindex", "upkeep", int, cli="reindex", local_only=_WHOLE_STORE, args=a.ReindexArgs),
    Operation("reset", "upkeep", int, "POST /reset", args=a.ResetArgs),
    # --- events
    Operation("events", "events", list[Event], "GET /events/log", args=a.EventsArgs),
    Operation("subscribe", "events", str, local_only=_CALLBACK, args=a.SubscribeArgs),
    Operation("unsubscribe", "events", bool, local_only=_CALLBACK, args=a.UnsubscribeArgs),
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
