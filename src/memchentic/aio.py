"""``AsyncMemory``: the ``a``-prefixed async surface (DESIGN section 9).

It wraps one :class:`~memchentic.Memory` and adds only the waiting: each call
runs the sync method in a worker thread (:func:`asyncio.to_thread`), so store
queries, embedding and model calls never block the event loop, and results are
exactly those of the sync API. The stores are safe to share across threads
(SQLite keeps one connection per thread; writers are serialised by
``store.write()``).

    mem = AsyncMemory(path="memory.db")
    await mem.aadd("Sam lives in Lisbon", user_id="sam")
    hits = await mem.asearch("where does Sam live", user_id="sam")
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .context.model import Context
from .memory import Memory
from .record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from .reports import Answer, ConsolidationReport, ImportReport, MaintenanceReport, Neighbour

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

    # --- writes -------------------------------------------------------------------------
    @_offloaded(Memory.add)
    async def aadd(self, content: str, **options: Any) -> WriteResult:
        return await self._run(self.sync.add, content, **options)

    aremember = aadd

    @_offloaded(Memory.add_many)
    async def aadd_many(self, items: Any, **common: Any) -> list[WriteResult]:
        return await self._run(self.sync.add_many, list(items), **common)

    @_offloaded(Memory.revise)
    async def arevise(self, memory_id: str, content: str | None = None, **changes: Any
                      ) -> WriteResult:  # fmt: skip
        return await self._run(self.sync.revise, memory_id, content, **changes)

    @_offloaded(Memory.improve)
    async def aimprove(self, memory_id: str, **changes: Any) -> WriteResult:
        return await self._run(self.sync.improve, memory_id, **changes)

    @_offloaded(Memory.delete)
    async def adelete(self, memory_id: str) -> WriteResult:
        return await self._run(self.sync.delete, memory_id)

    aforget = adelete

    @_offloaded(Memory.delete_all)
    async def adelete_all(self, **scope: Any) -> int:
        return await self._run(self.sync.delete_all, **scope)

    @_offloaded(Memory.pin)
    async def apin(self, memory_id: str) -> WriteResult:
        return await self._run(self.sync.pin, memory_id)

    @_offloaded(Memory.unpin)
    async def aunpin(self, memory_id: str) -> WriteResult:
        return await self._run(self.sync.unpin, memory_id)

    @_offloaded(Memory.restore)
    async def arestore(self, memory_id: str, **kw: Any) -> WriteResult:
        return await self._run(self.sync.restore, memory_id, **kw)

    @_offloaded(Memory.relate)
    async def arelate(self, source: str, target: str, kind: str, *args: Any, **kw: Any) -> Edge:
        return await self._run(self.sync.relate, source, target, kind, *args, **kw)

    @_offloaded(Memory.delete_edge)
    async def adelete_edge(self, edge_id: str) -> bool:
        return await self._run(self.sync.delete_edge, edge_id)

    @_offloaded(Memory.manage)
    async def amanage(self, operations: Any, **scope: Any) -> list[WriteResult]:
        return await self._run(self.sync.manage, operations, **scope)

    # --- reads --------------------------------------------------------------------------
    @_offloaded(Memory.search)
    async def asearch(self, query: str, **options: Any) -> list[SearchHit]:
        return await self._run(self.sync.search, query, **options)

    @_offloaded(Memory.recall)
    async def arecall(self, **options: Any) -> list[SearchHit]:
        return await self._run(self.sync.recall, **options)

    @_offloaded(Memory.get)
    async def aget(self, memory_id: str, **options: Any) -> MemoryRecord:
        return await self._run(self.sync.get, memory_id, **options)

    @_offloaded(Memory.list)
    async def alist(self, **options: Any) -> list[MemoryRecord]:
        return await self._run(self.sync.list, **options)

    @_offloaded(Memory.history)
    async def ahistory(self, memory_id: str) -> list[Version]:
        return await self._run(self.sync.history, memory_id)

    @_offloaded(Memory.events)
    async def aevents(self, **options: Any) -> list[Event]:
        return await self._run(self.sync.events, **options)

    # --- graph ---------------------------------------------------------------------------
    @_offloaded(Memory.edges)
    async def aedges(self, memory_id: str, **options: Any) -> list[Edge]:
        return await self._run(self.sync.edges, memory_id, **options)

    @_offloaded(Memory.neighbors)
    async def aneighbors(self, memory_id: str, depth: int = 1, **options: Any
                         ) -> list[Neighbour]:  # fmt: skip
        return await self._run(self.sync.neighbors, memory_id, depth, **options)

    @_offloaded(Memory.entities)
    async def aentities(self, **options: Any) -> dict[str, Any]:
        return await self._run(self.sync.entities, **options)

    @_offloaded(Memory.ask)
    async def aask(self, question: str, **options: Any) -> Answer:
        return await self._run(self.sync.ask, question, **options)

    @_offloaded(Memory.consolidate)
    async def aconsolidate(self, **options: Any) -> ConsolidationReport:
        return await self._run(self.sync.consolidate, **options)

    # --- context, sessions, learning ------------------------------------------------------
    @_offloaded(Memory.context)
    async def acontext(self, query: str | None = None, **options: Any) -> Context:
        return await self._run(self.sync.context, query, **options)

    abuild_context = acontext

    @_offloaded(Memory.record_turn)
    async def arecord_turn(self, role: str, content: str, **options: Any) -> Turn:
        return await self._run(self.sync.record_turn, role, content, **options)

    @_offloaded(Memory.add_message)
    async def aadd_message(self, message: Any, **options: Any) -> Turn:
        return await self._run(self.sync.add_message, message, **options)

    @_offloaded(Memory.get_history)
    async def aget_history(self, session_id: str | None = None, limit: int = 50, **options: Any
                           ) -> list[Turn]:  # fmt: skip
        return await self._run(self.sync.get_history, session_id, limit, **options)

    @_offloaded(Memory.list_sessions)
    async def alist_sessions(self, **scope: Any) -> list[tuple[str, int]]:
        return await self._run(self.sync.list_sessions, **scope)

    @_offloaded(Memory.add_working)
    async def aadd_working(self, content: str, **options: Any) -> WriteResult:
        return await self._run(self.sync.add_working, content, **options)

    @_offloaded(Memory.working_memory)
    async def aworking_memory(self, session_id: str | None = None, **options: Any
                              ) -> list[MemoryRecord]:  # fmt: skip
        return await self._run(self.sync.working_memory, session_id, **options)

    @_offloaded(Memory.summarize_session)
    async def asummarize_session(self, session_id: str | None = None, **options: Any
                                 ) -> WriteResult:  # fmt: skip
        return await self._run(self.sync.summarize_session, session_id, **options)

    @_offloaded(Memory.learn)
    async def alearn(self, messages: Any, **options: Any) -> list[WriteResult]:
        return await self._run(self.sync.learn, messages, **options)

    # --- maintenance --------------------------------------------------------------------
    @_offloaded(Memory.stats)
    async def astats(self, **options: Any) -> dict[str, Any]:
        return await self._run(self.sync.stats, **options)

    @_offloaded(Memory.maintain)
    async def amaintain(self, **options: Any) -> MaintenanceReport:
        return await self._run(self.sync.maintain, **options)

    @_offloaded(Memory.gc)
    async def agc(self, **options: Any) -> dict[str, Any]:
        return await self._run(self.sync.gc, **options)

    @_offloaded(Memory.export)
    async def aexport(self, target: Any, **options: Any) -> int:
        return await self._run(self.sync.export, target, **options)

    @_offloaded(Memory.import_)
    async def aimport_(self, source: Any, **options: Any) -> ImportReport:
        return await self._run(self.sync.import_, source, **options)

    @_offloaded(Memory.reset)
    async def areset(self) -> int:
        return await self._run(self.sync.reset)

    @_offloaded(Memory.reindex)
    async def areindex(self, **options: Any) -> int:
        return await self._run(self.sync.reindex, **options)

    # --- events (no I/O on the loop: subscribing only registers a callback) ---------------
    def subscribe(self, callback: Callable[[Event], Any], types: Any = None) -> str:
        """:meth:`Memory.subscribe`; callbacks run in the worker thread of the write."""
        return self.sync.subscribe(callback, types)

    def unsubscribe(self, token: str) -> bool:
        return self.sync.unsubscribe(token)
