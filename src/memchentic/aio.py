"""``AsyncMemory``: the ``a``-prefixed async surface (DESIGN section 9).

It wraps one :class:`~memchentic.Memory` and adds only the waiting: each call
takes the sync method's parameters, spelled out as :mod:`memchentic.args` holds
them, and runs the sync method in a worker thread (:func:`asyncio.to_thread`), so
store queries, embedding and model calls never block the event loop, and results
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
from typing import Any, TypeVar

from . import args as a
from .choices import DuplicatePolicy, Kind, SecretPolicy
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
        self, content: str, *, type: str | None = None, kind: Kind | None = None,
        title: str | None = None, tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None, slot_key: str | None = None,
        user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        namespace: str | None = None, confidence: float | None = None,
        importance: float | None = None, ttl_days: float | None = None,
        permanent: bool | None = None, expires_at: datetime | str | None = None,
        created_at: datetime | str | None = None, valid_from: datetime | str | None = None,
        valid_to: datetime | str | None = None, path_hint: str | None = None,
        repo: str | None = None, entities: Sequence[str] | None = None,
        tier_l0: str | None = None, tier_l1: str | None = None, pinned: bool | None = None,
        secrets: SecretPolicy | None = None, now: datetime | str | None = None,
        on_duplicate: DuplicatePolicy | None = None, auto_edges: bool | None = None
    ) -> WriteResult:  # fmt: skip
        found = a.AddArgs(
            content, type=type, kind=kind, title=title, tags=tags, metadata=metadata,
            slot_key=slot_key, user_id=user_id, agent_id=agent_id, session_id=session_id,
            namespace=namespace, confidence=confidence, importance=importance, ttl_days=ttl_days,
            permanent=permanent, expires_at=expires_at, created_at=created_at,
            valid_from=valid_from, valid_to=valid_to, path_hint=path_hint, repo=repo,
            entities=entities, tier_l0=tier_l0, tier_l1=tier_l1, pinned=pinned, secrets=secrets,
            now=now, on_duplicate=on_duplicate, auto_edges=auto_edges
        )  # fmt: skip
        return await self._run(self.sync.add, **found.kwargs())

    aremember = aadd

    @_offloaded(Memory.add_many)
    async def aadd_many(
        self, items: Iterable[str | Mapping[str, Any]], *, type: str | None = None,
        kind: Kind | None = None, title: str | None = None, tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None, slot_key: str | None = None,
        user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        namespace: str | None = None, confidence: float | None = None,
        importance: float | None = None, ttl_days: float | None = None,
        permanent: bool | None = None, expires_at: datetime | str | None = None,
        created_at: datetime | str | None = None, valid_from: datetime | str | None = None,
        valid_to: datetime | str | None = None, path_hint: str | None = None,
        repo: str | None = None, entities: Sequence[str] | None = None,
        tier_l0: str | None = None, tier_l1: str | None = None, pinned: bool | None = None,
        secrets: SecretPolicy | None = None, now: datetime | str | None = None,
        on_duplicate: DuplicatePolicy | None = None, auto_edges: bool | None = None
    ) -> list[WriteResult]:  # fmt: skip
        found = a.AddManyArgs(
            list(items), type=type, kind=kind, title=title, tags=tags, metadata=metadata,
            slot_key=slot_key, user_id=user_id, agent_id=agent_id, session_id=session_id,
            namespace=namespace, confidence=confidence, importance=importance, ttl_days=ttl_days,
            permanent=permanent, expires_at=expires_at, created_at=created_at,
            valid_from=valid_from, valid_to=valid_to, path_hint=path_hint, repo=repo,
            entities=entities, tier_l0=tier_l0, tier_l1=tier_l1, pinned=pinned, secrets=secrets,
            now=now, on_duplicate=on_duplicate, auto_edges=auto_edges
        )  # fmt: skip
        return await self._run(self.sync.add_many, **found.kwargs())

    @_offloaded(Memory.revise)
    async def arevise(self, memory_id: str, content: str | None = None, **changes: Any
                      ) -> WriteResult:  # fmt: skip
        return await self._run(self.sync.revise, memory_id, content, **changes)

    @_offloaded(Memory.improve)
    async def aimprove(
        self, memory_id: str, *, confidence: float | None = None, importance: float | None = None,
        valid_from: datetime | str | None = None, valid_to: datetime | str | None = None,
        now: datetime | str | None = None
    ) -> WriteResult:  # fmt: skip
        found = a.ImproveArgs(
            memory_id, confidence=confidence, importance=importance, valid_from=valid_from,
            valid_to=valid_to, now=now
        )  # fmt: skip
        return await self._run(self.sync.improve, **found.kwargs())

    @_offloaded(Memory.delete)
    async def adelete(self, memory_id: str) -> WriteResult:
        found = a.DeleteArgs(memory_id)
        return await self._run(self.sync.delete, **found.kwargs())

    aforget = adelete

    @_offloaded(Memory.delete_all)
    async def adelete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None,
        session_id: str | None = None, namespace: str | None = None
    ) -> int:  # fmt: skip
        found = a.DeleteAllArgs(
            user_id=user_id, agent_id=agent_id, session_id=session_id, namespace=namespace
        )  # fmt: skip
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
        self, operations: Sequence[Mapping[str, Any]], *, user_id: str | None = None,
        agent_id: str | None = None, namespace: str | None = None, session_id: str | None = None
    ) -> list[WriteResult]:  # fmt: skip
        found = a.ManageArgs(
            operations, user_id=user_id, agent_id=agent_id, namespace=namespace,
            session_id=session_id
        )  # fmt: skip
        return await self._run(self.sync.manage, **found.kwargs())

    # --- reads ----------------------------------------------------------------------------
    @_offloaded(Memory.search)
    async def asearch(
        self, query: str, *, user_id: str | None = None, agent_id: str | None = None,
        namespace: str | None = None, limit: int | None = None,
        profile: str | SearchProfile | None = None, type: str | Sequence[str] | None = None,
        kind: str | None = None, tags: Sequence[str] | None = None, path_hint: str | None = None,
        repo: str | None = None, include_expired: bool = False, include_superseded: bool = False,
        as_of: datetime | str | None = None, now: datetime | str | None = None,
        include_trace: bool = False, intent: str | None = None, tier: str | None = None,
        filters: Mapping[str, Any] | None = None, threshold: float | None = None
    ) -> list[SearchHit]:  # fmt: skip
        found = a.SearchArgs(
            query, user_id=user_id, agent_id=agent_id, namespace=namespace, limit=limit,
            profile=profile, type=type, kind=kind, tags=tags, path_hint=path_hint, repo=repo,
            include_expired=include_expired, include_superseded=include_superseded, as_of=as_of,
            now=now, include_trace=include_trace, intent=intent, tier=tier, filters=filters,
            threshold=threshold
        )  # fmt: skip
        return await self._run(self.sync.search, **found.kwargs())

    @_offloaded(Memory.recall)
    async def arecall(
        self, *, entity: str, user_id: str | None = None, agent_id: str | None = None,
        namespace: str | None = None, limit: int | None = None,
        as_of: datetime | str | None = None, now: datetime | str | None = None
    ) -> list[SearchHit]:  # fmt: skip
        found = a.RecallArgs(
            entity=entity, user_id=user_id, agent_id=agent_id, namespace=namespace, limit=limit,
            as_of=as_of, now=now
        )  # fmt: skip
        return await self._run(self.sync.recall, **found.kwargs())

    @_offloaded(Memory.get)
    async def aget(
        self, memory_id: str, *, now: datetime | str | None = None, touch: bool = True
    ) -> MemoryRecord:  # fmt: skip
        found = a.GetArgs(memory_id, now=now, touch=touch)
        return await self._run(self.sync.get, **found.kwargs())

    @_offloaded(Memory.list)
    async def alist(
        self, *, user_id: str | None = None, agent_id: str | None = None,
        namespace: str | None = None, type: str | Sequence[str] | None = None,
        kind: str | None = None, tags: Sequence[str] | None = None, include_expired: bool = False,
        include_superseded: bool = False, limit: int | None = None, offset: int = 0,
        newest_first: bool = True, as_of: datetime | str | None = None,
        filters: Mapping[str, Any] | None = None, now: datetime | str | None = None
    ) -> list[MemoryRecord]:  # fmt: skip
        found = a.ListArgs(
            user_id=user_id, agent_id=agent_id, namespace=namespace, type=type, kind=kind,
            tags=tags, include_expired=include_expired, include_superseded=include_superseded,
            limit=limit, offset=offset, newest_first=newest_first, as_of=as_of, filters=filters,
            now=now
        )  # fmt: skip
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
        self, question: str, *, user_id: str | None = None, agent_id: str | None = None,
        namespace: str | None = None, limit: int = 10, chat: ChatClient | None = None
    ) -> Answer:  # fmt: skip
        found = a.AskArgs(
            question, user_id=user_id, agent_id=agent_id, namespace=namespace, limit=limit,
            chat=chat
        )  # fmt: skip
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
        self, role: str, content: str, *, session_id: str | None = None,
        user_id: str | None = None, agent_id: str | None = None, namespace: str | None = None,
        metadata: Mapping[str, Any] | None = None, now: datetime | str | None = None
    ) -> Turn:  # fmt: skip
        found = a.RecordTurnArgs(
            role, content, session_id=session_id, user_id=user_id, agent_id=agent_id,
            namespace=namespace, metadata=metadata, now=now
        )  # fmt: skip
        return await self._run(self.sync.record_turn, **found.kwargs())

    @_offloaded(Memory.add_message)
    async def aadd_message(
        self, message: Mapping[str, Any], *, session_id: str | None = None,
        user_id: str | None = None, agent_id: str | None = None, namespace: str | None = None,
        metadata: Mapping[str, Any] | None = None, now: datetime | str | None = None
    ) -> Turn:  # fmt: skip
        found = a.AddMessageArgs(
            message, session_id=session_id, user_id=user_id, agent_id=agent_id,
            namespace=namespace, metadata=metadata, now=now
        )  # fmt: skip
        return await self._run(self.sync.add_message, **found.kwargs())

    @_offloaded(Memory.get_history)
    async def aget_history(
        self, session_id: str | None = None, limit: int = 50, *, user_id: str | None = None,
        agent_id: str | None = None, namespace: str | None = None
    ) -> list[Turn]:  # fmt: skip
        found = a.GetHistoryArgs(
            session_id, limit, user_id=user_id, agent_id=agent_id, namespace=namespace
        )  # fmt: skip
        return await self._run(self.sync.get_history, **found.kwargs())

    @_offloaded(Memory.list_sessions)
    async def alist_sessions(
        self, *, user_id: str | None = None, namespace: str | None = None
    ) -> list[tuple[str, int]]:  # fmt: skip
        found = a.ListSessionsArgs(user_id=user_id, namespace=namespace)
        return await self._run(self.sync.list_sessions, **found.kwargs())

    @_offloaded(Memory.summarize_session)
    async def asummarize_session(
        self, session_id: str | None = None, *, user_id: str | None = None,
        agent_id: str | None = None, namespace: str | None = None,
        summarizer: Summarizer | None = None, now: datetime | str | None = None
    ) -> WriteResult:  # fmt: skip
        found = a.SummarizeSessionArgs(
            session_id, user_id=user_id, agent_id=agent_id, namespace=namespace,
            summarizer=summarizer, now=now
        )  # fmt: skip
        return await self._run(self.sync.summarize_session, **found.kwargs())

    @_offloaded(Memory.add_working)
    async def aadd_working(
        self, content: str, *, session_id: str | None = None, key: str | None = None,
        kind: Kind | None = None, title: str | None = None, tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None, user_id: str | None = None,
        agent_id: str | None = None, namespace: str | None = None,
        confidence: float | None = None, importance: float | None = None,
        ttl_days: float | None = None, permanent: bool | None = None,
        expires_at: datetime | str | None = None, created_at: datetime | str | None = None,
        valid_from: datetime | str | None = None, valid_to: datetime | str | None = None,
        path_hint: str | None = None, repo: str | None = None,
        entities: Sequence[str] | None = None, tier_l0: str | None = None,
        tier_l1: str | None = None, pinned: bool | None = None,
        secrets: SecretPolicy | None = None, now: datetime | str | None = None,
        on_duplicate: DuplicatePolicy | None = None, auto_edges: bool | None = None
    ) -> WriteResult:  # fmt: skip
        found = a.AddWorkingArgs(
            content, session_id=session_id, key=key, kind=kind, title=title, tags=tags,
            metadata=metadata, user_id=user_id, agent_id=agent_id, namespace=namespace,
            confidence=confidence, importance=importance, ttl_days=ttl_days, permanent=permanent,
            expires_at=expires_at, created_at=created_at, valid_from=valid_from,
            valid_to=valid_to, path_hint=path_hint, repo=repo, entities=entities, tier_l0=tier_l0,
            tier_l1=tier_l1, pinned=pinned, secrets=secrets, now=now, on_duplicate=on_duplicate,
            auto_edges=auto_edges
        )  # fmt: skip
        return await self._run(self.sync.add_working, **found.kwargs())

    @_offloaded(Memory.working_memory)
    async def aworking_memory(
        self, session_id: str | None = None, *, user_id: str | None = None,
        agent_id: str | None = None, namespace: str | None = None, limit: int | None = None,
        now: datetime | str | None = None
    ) -> list[MemoryRecord]:  # fmt: skip
        found = a.WorkingMemoryArgs(
            session_id, user_id=user_id, agent_id=agent_id, namespace=namespace, limit=limit,
            now=now
        )  # fmt: skip
        return await self._run(self.sync.working_memory, **found.kwargs())

    # --- context and learning -------------------------------------------------------------
    @_offloaded(Memory.context)
    async def acontext(
        self, query: str | None = None, *, user_id: str | None = None,
        agent_id: str | None = None, session_id: str | None = None, namespace: str | None = None,
        budget_tokens: int | None = None, limit: int | None = None,
        recent_turns: int | None = None, as_of: datetime | str | None = None,
        now: datetime | str | None = None
    ) -> Context:  # fmt: skip
        found = a.ContextArgs(
            query, user_id=user_id, agent_id=agent_id, session_id=session_id, namespace=namespace,
            budget_tokens=budget_tokens, limit=limit, recent_turns=recent_turns, as_of=as_of,
            now=now
        )  # fmt: skip
        return await self._run(self.sync.context, **found.kwargs())

    abuild_context = acontext

    @_offloaded(Memory.learn)
    async def alearn(
        self, messages: str | Iterable[str | Mapping[str, Any] | Turn | Message], *,
        user_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
        namespace: str | None = None, extractor: Extractor | None = None,
        metadata: Mapping[str, Any] | None = None, now: datetime | str | None = None
    ) -> list[WriteResult]:  # fmt: skip
        found = a.LearnArgs(
            messages, user_id=user_id, agent_id=agent_id, session_id=session_id,
            namespace=namespace, extractor=extractor, metadata=metadata, now=now
        )  # fmt: skip
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
