"""``AsyncMemory``: the ``a``-prefixed async surface (docs/design.md, section 9).

It wraps one :class:`~memchentic.Memory` and adds only the waiting: each call
takes the sync method's parameters (its argument class in :mod:`memchentic.args`;
the keyword options typed once in :mod:`memchentic.args.keywords`, as the HTTP
clients take them) and runs the sync method in a worker thread
(:func:`asyncio.to_thread`), so store queries, embedding and model calls never
block the event loop, and results
are exactly those of the sync API. The stores are safe to share across threads
(SQLite keeps one connection per thread; writers are serialised by
``store.write()``).

    mem = AsyncMemory(path="memory.db")
    await mem.aadd("Sam lives in Lisbon", user_id="sam")
    hits = await mem.asearch("where does Sam live", user_id="sam")
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar, Unpack

from . import args as a
from .args import keywords
from .choices import SecretPolicy
from .context.model import Context
from .embed.base import Embedder
from .learn.base import Extractor, Message
from .learn.summaries import Summarizer
from .llm import ChatClient
from .memory import Memory
from .record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from .reports import Answer, ConsolidationReport, ImportReport, MaintenanceReport, Neighbour
from .retrieval.profiles import SearchProfile

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


def _offloaded(method: Callable[..., Any]) -> Callable[[F], F]:
    """Document an async twin as the sync method it runs."""

    def decorate(fn: F) -> F:
        fn.__doc__ = f"Async :meth:`Memory.{method.__name__}`. " + (method.__doc__ or "")
        return fn

    return decorate


class AsyncMemory:
    """Async twin of :class:`~memchentic.Memory`; ``AsyncMemory(memory)`` wraps one,
    ``AsyncMemory(path=..., embedder=..., ...)`` opens one with ``Memory``'s options."""

    def __init__(self, memory: Memory | None = None, /, **options: Any) -> None:
        if memory is not None and options:
            raise TypeError("pass a Memory or Memory options, not both")
        #: The sync engine every call runs on.
        self.sync = memory if memory is not None else Memory(**options)

    async def _run(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))

    # --- lifecycle ----------------------------------------------------------------------
    def as_identity(self, name: str) -> AsyncMemory:
        """An async view that runs every call as the identity ``name``."""
        return AsyncMemory(self.sync.as_identity(name))

    def for_identity(self, name: str) -> AsyncMemory:
        """An async view as the identity ``name``, which must exist
        (:meth:`Memory.for_identity`)."""
        return AsyncMemory(self.sync.for_identity(name))

    async def aclose(self) -> None:
        await self._run(self.sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- writes ---------------------------------------------------------------------------
    @_offloaded(Memory.add)
    async def aadd(
        self, content: str, *, now: datetime | str | None = None,
        **options: Unpack[keywords.AddKeywords]
    ) -> WriteResult:  # fmt: skip
        found = a.AddArgs(content, now=now, **options)
        return await self._run(self.sync.add, **found.kwargs())

    aremember = aadd

    @_offloaded(Memory.add_many)
    async def aadd_many(
        self, items: Iterable[str | Mapping[str, Any]], *, now: datetime | str | None = None,
        **options: Unpack[keywords.AddKeywords]
    ) -> list[WriteResult]:  # fmt: skip
        found = a.AddManyArgs(list(items), now=now, **options)
        return await self._run(self.sync.add_many, **found.kwargs())

    @_offloaded(Memory.revise)
    async def arevise(self, memory_id: str, content: str | None = None, **changes: Any
                      ) -> WriteResult:  # fmt: skip
        return await self._run(self.sync.revise, memory_id, content, **changes)

    @_offloaded(Memory.improve)
    async def aimprove(
        self, memory_id: str, *, now: datetime | str | None = None,
        **options: Unpack[keywords.ImproveKeywords]
    ) -> WriteResult:  # fmt: skip
        found = a.ImproveArgs(memory_id, now=now, **options)
        return await self._run(self.sync.improve, **found.kwargs())

    @_offloaded(Memory.delete)
    async def adelete(self, memory_id: str) -> WriteResult:
        found = a.DeleteArgs(memory_id)
        return await self._run(self.sync.delete, **found.kwargs())

    aforget = adelete

    @_offloaded(Memory.delete_all)
    async def adelete_all(self, **scope: Unpack[keywords.SessionScopeKeywords]) -> int:
        found = a.DeleteAllArgs(**scope)
        return await self._run(self.sync.delete_all, **found.kwargs())

    @_offloaded(Memory.pin)
    async def apin(self, memory_id: str) -> WriteResult:
        found = a.PinArgs(memory_id)
        return await self._run(self.sync.pin, **found.kwargs())

    @_offloaded(Memory.unpin)
    async def aunpin(self, memory_id: str) -> WriteResult:
        found = a.UnpinArgs(memory_id)
        return await self._run(self.sync.unpin, **found.kwargs())

    @_offloaded(Memory.restore)
    async def arestore(self, memory_id: str, *, now: datetime | str | None = None) -> WriteResult:
        found = a.RestoreArgs(memory_id, now=now)
        return await self._run(self.sync.restore, **found.kwargs())

    @_offloaded(Memory.manage)
    async def amanage(
        self, operations: Sequence[Mapping[str, Any]],
        **scope: Unpack[keywords.SessionScopeKeywords]
    ) -> list[WriteResult]:  # fmt: skip
        found = a.ManageArgs(operations, **scope)
        return await self._run(self.sync.manage, **found.kwargs())

    # --- reads ----------------------------------------------------------------------------
    @_offloaded(Memory.search)
    async def asearch(
        self, query: str, *, profile: str | SearchProfile | None = None,
        now: datetime | str | None = None,
        **options: Unpack[keywords.SearchKeywords]
    ) -> list[SearchHit]:  # fmt: skip
        found = a.SearchArgs(query, profile=profile, now=now, **options)
        return await self._run(self.sync.search, **found.kwargs())

    @_offloaded(Memory.recall)
    async def arecall(
        self, *, entity: str, now: datetime | str | None = None,
        **options: Unpack[keywords.RecallKeywords]
    ) -> list[SearchHit]:  # fmt: skip
        found = a.RecallArgs(entity=entity, now=now, **options)
        return await self._run(self.sync.recall, **found.kwargs())

    @_offloaded(Memory.get)
    async def aget(
        self, memory_id: str, *, now: datetime | str | None = None, touch: bool = True
    ) -> MemoryRecord:  # fmt: skip
        found = a.GetArgs(memory_id, now=now, touch=touch)
        return await self._run(self.sync.get, **found.kwargs())

    @_offloaded(Memory.list)
    async def alist(
        self, *, now: datetime | str | None = None, **options: Unpack[keywords.ListKeywords]
    ) -> list[MemoryRecord]:  # fmt: skip
        found = a.ListArgs(now=now, **options)
        return await self._run(self.sync.list, **found.kwargs())

    @_offloaded(Memory.history)
    async def ahistory(self, memory_id: str) -> list[Version]:
        found = a.HistoryArgs(memory_id)
        return await self._run(self.sync.history, **found.kwargs())

    # --- graph ----------------------------------------------------------------------------
    @_offloaded(Memory.relate)
    async def arelate(
        self, source: str, target: str, kind: str, strength: float = 1.0, *,
        metadata: Mapping[str, Any] | None = None
    ) -> Edge:  # fmt: skip
        found = a.RelateArgs(source, target, kind, strength, metadata=metadata)
        return await self._run(self.sync.relate, **found.kwargs())

    @_offloaded(Memory.delete_edge)
    async def adelete_edge(self, edge_id: str) -> bool:
        found = a.DeleteEdgeArgs(edge_id)
        return await self._run(self.sync.delete_edge, **found.kwargs())

    @_offloaded(Memory.edges)
    async def aedges(self, memory_id: str, *, kind: str | None = None) -> list[Edge]:
        found = a.EdgesArgs(memory_id, kind=kind)
        return await self._run(self.sync.edges, **found.kwargs())

    @_offloaded(Memory.neighbors)
    async def aneighbors(
        self, memory_id: str, depth: int = 1, *, limit: int = 50
    ) -> list[Neighbour]:  # fmt: skip
        found = a.NeighborsArgs(memory_id, depth, limit=limit)
        return await self._run(self.sync.neighbors, **found.kwargs())

    @_offloaded(Memory.entities)
    async def aentities(
        self, *, user_id: str | None = None, namespace: str | None = None,
        by_namespace: bool = False
    ) -> dict[str, Any]:  # fmt: skip
        found = a.EntitiesArgs(user_id=user_id, namespace=namespace, by_namespace=by_namespace)
        return await self._run(self.sync.entities, **found.kwargs())

    @_offloaded(Memory.ask)
    async def aask(
        self, question: str, *, chat: ChatClient | None = None,
        **options: Unpack[keywords.AskKeywords]
    ) -> Answer:  # fmt: skip
        found = a.AskArgs(question, chat=chat, **options)
        return await self._run(self.sync.ask, **found.kwargs())

    @_offloaded(Memory.consolidate)
    async def aconsolidate(
        self, *, user_id: str | None = None, namespace: str | None = None, dry_run: bool = False
    ) -> ConsolidationReport:  # fmt: skip
        found = a.ConsolidateArgs(user_id=user_id, namespace=namespace, dry_run=dry_run)
        return await self._run(self.sync.consolidate, **found.kwargs())

    # --- sessions (short-term memory) -----------------------------------------------------
    @_offloaded(Memory.record_turn)
    async def arecord_turn(
        self, role: str, content: str, *, now: datetime | str | None = None,
        **options: Unpack[keywords.MessageKeywords]
    ) -> Turn:  # fmt: skip
        found = a.RecordTurnArgs(role, content, now=now, **options)
        return await self._run(self.sync.record_turn, **found.kwargs())

    @_offloaded(Memory.add_message)
    async def aadd_message(
        self, message: Mapping[str, Any], *, now: datetime | str | None = None,
        **options: Unpack[keywords.MessageKeywords]
    ) -> Turn:  # fmt: skip
        found = a.AddMessageArgs(message, now=now, **options)
        return await self._run(self.sync.add_message, **found.kwargs())

    @_offloaded(Memory.get_history)
    async def aget_history(
        self, session_id: str | None = None, limit: int = 50,
        **scope: Unpack[keywords.ScopeKeywords]
    ) -> list[Turn]:  # fmt: skip
        found = a.GetHistoryArgs(session_id, limit, **scope)
        return await self._run(self.sync.get_history, **found.kwargs())

    @_offloaded(Memory.list_sessions)
    async def alist_sessions(
        self, *, user_id: str | None = None, namespace: str | None = None
    ) -> list[tuple[str, int]]:  # fmt: skip
        found = a.ListSessionsArgs(user_id=user_id, namespace=namespace)
        return await self._run(self.sync.list_sessions, **found.kwargs())

    @_offloaded(Memory.summarize_session)
    async def asummarize_session(
        self, session_id: str | None = None, *, summarizer: Summarizer | None = None,
        now: datetime | str | None = None, **scope: Unpack[keywords.ScopeKeywords]
    ) -> WriteResult:  # fmt: skip
        found = a.SummarizeSessionArgs(session_id, summarizer=summarizer, now=now, **scope)
        return await self._run(self.sync.summarize_session, **found.kwargs())

    @_offloaded(Memory.add_working)
    async def aadd_working(
        self, content: str, *, now: datetime | str | None = None,
        **options: Unpack[keywords.AddWorkingKeywords]
    ) -> WriteResult:  # fmt: skip
        found = a.AddWorkingArgs(content, now=now, **options)
        return await self._run(self.sync.add_working, **found.kwargs())

    @_offloaded(Memory.working_memory)
    async def aworking_memory(
        self, session_id: str | None = None, *, now: datetime | str | None = None,
        **options: Unpack[keywords.WorkingMemoryKeywords]
    ) -> list[MemoryRecord]:  # fmt: skip
        found = a.WorkingMemoryArgs(session_id, now=now, **options)
        return await self._run(self.sync.working_memory, **found.kwargs())

    # --- context and learning -------------------------------------------------------------
    @_offloaded(Memory.context)
    async def acontext(
        self, query: str | None = None, *, now: datetime | str | None = None,
        **options: Unpack[keywords.ContextKeywords]
    ) -> Context:  # fmt: skip
        found = a.ContextArgs(query, now=now, **options)
        return await self._run(self.sync.context, **found.kwargs())

    abuild_context = acontext

    @_offloaded(Memory.learn)
    async def alearn(
        self, messages: str | Iterable[str | Mapping[str, Any] | Turn | Message], *,
        extractor: Extractor | None = None, now: datetime | str | None = None,
        **options: Unpack[keywords.MessageKeywords]
    ) -> list[WriteResult]:  # fmt: skip
        found = a.LearnArgs(messages, extractor=extractor, now=now, **options)
        return await self._run(self.sync.learn, **found.kwargs())

    # --- upkeep ---------------------------------------------------------------------------
    @_offloaded(Memory.stats)
    async def astats(
        self, *, user_id: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:  # fmt: skip
        found = a.StatsArgs(user_id=user_id, namespace=namespace)
        return await self._run(self.sync.stats, **found.kwargs())

    @_offloaded(Memory.gc)
    async def agc(
        self, *, now: datetime | str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:  # fmt: skip
        found = a.GcArgs(now=now, dry_run=dry_run)
        return await self._run(self.sync.gc, **found.kwargs())

    @_offloaded(Memory.maintain)
    async def amaintain(
        self, *, now: datetime | str | None = None, dry_run: bool = False
    ) -> MaintenanceReport:  # fmt: skip
        found = a.MaintainArgs(now=now, dry_run=dry_run)
        return await self._run(self.sync.maintain, **found.kwargs())

    @_offloaded(Memory.export)
    async def aexport(self, target: Any, *, vectors: bool | None = None) -> int:
        found = a.ExportArgs(target, vectors=vectors)
        return await self._run(self.sync.export, **found.kwargs())

    @_offloaded(Memory.import_)
    async def aimport_(
        self, source: Any, *, strict: bool | None = None, secrets: SecretPolicy | None = None
    ) -> ImportReport:  # fmt: skip
        found = a.ImportArgs(source, strict=strict, secrets=secrets)
        return await self._run(self.sync.import_, **found.kwargs())

    @_offloaded(Memory.reindex)
    async def areindex(
        self, *, embedder: Embedder | None = None, batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None
    ) -> int:  # fmt: skip
        found = a.ReindexArgs(embedder=embedder, batch_size=batch_size, progress=progress)
        return await self._run(self.sync.reindex, **found.kwargs())

    @_offloaded(Memory.reset)
    async def areset(self) -> int:
        found = a.ResetArgs()
        return await self._run(self.sync.reset, **found.kwargs())

    # --- events ---------------------------------------------------------------------------
    @_offloaded(Memory.events)
    async def aevents(
        self, *, since: str | None = None, types: Sequence[str] | None = None, limit: int = 100
    ) -> list[Event]:  # fmt: skip
        found = a.EventsArgs(since=since, types=types, limit=limit)
        return await self._run(self.sync.events, **found.kwargs())

    # --- events (no I/O on the loop: subscribing only registers a callback) ---------------
    def subscribe(self, callback: Callable[[Event], Any], types: Any = None) -> str:
        """:meth:`Memory.subscribe`; callbacks run in the worker thread of the write."""
        return self.sync.subscribe(callback, types)

    def unsubscribe(self, token: str) -> bool:
        return self.sync.unsubscribe(token)
