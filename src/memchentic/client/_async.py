"""``AsyncClient``: the HTTP API on ``httpx.AsyncClient``, with the method names and
parameters of :class:`~memchentic.Client` (``await client.search(...)``); each
method sends the call that :mod:`._core` builds and returns what it decodes."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, Unpack

from .. import args as a
from ..args import keywords
from ..args.keywords import checked
from ..context.model import Context
from ..identity import Grant, Identity, Invitation, Membership, Team
from ..record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from ..reports import Answer, ConsolidationReport, MaintenanceReport, Neighbour
from . import _core as core
from ._core import DEFAULT_TIMEOUT, BaseClient, Call

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")


class AsyncClient(BaseClient):
    """:class:`~memchentic.Client` for asyncio: the same methods, awaited.

    :param url: the server, e.g. ``http://127.0.0.1:8077``.
    :param api_key: a key from ``memchentic keys create`` (calls run as its identity).
    :param timeout: seconds per request.
    :param transport: an ``httpx`` async transport (tests, proxies).
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        import httpx  # here, so that ``import memchentic`` stays free of it

        super().__init__(url, api_key, timeout)
        self._http = httpx.AsyncClient(transport=transport, **self._options)

    # --- plumbing: the only I/O ---------------------------------------------------------
    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call[T]) -> T:
        if call.local:
            return call.decode(None)
        return call.finish(await self._http.request(**call.request()))

    async def _lines(self, call: Call[None], **options: Any) -> AsyncIterator[str]:
        async with self._http.stream(**call.request(), **options) as response:
            if response.status_code >= 400:
                await response.aread()
                core.check(response)
            async for line in response.aiter_lines():
                yield line

    # --- writes -------------------------------------------------------------------------
    async def add(
        self, content: str, **options: Unpack[keywords.AddKeywords]
    ) -> WriteResult:  # fmt: skip
        """Remember one memory (options as for :meth:`Memory.add`)."""
        found = a.AddArgs(content, **checked(options, keywords.AddKeywords))
        return await self._send(core.add(found))

    remember = add

    async def add_many(
        self, items: Iterable[str | Mapping[str, Any]], **options: Unpack[keywords.AddKeywords]
    ) -> builtins.list[WriteResult]:  # fmt: skip
        """Remember several memories with one request (and one embedding batch)."""
        found = a.AddManyArgs(items, **checked(options, keywords.AddKeywords))
        return await self._send(core.add_many(found))

    async def revise(
        self, memory_id: str, content: str | None = None, **changes: Any
    ) -> WriteResult:
        """Edit a memory; moves ``updated_at``."""
        return await self._send(core.revise(memory_id, content, **changes))

    async def improve(
        self, memory_id: str, **options: Unpack[keywords.ImproveKeywords]
    ) -> WriteResult:  # fmt: skip
        """Adjust confidence, importance or validity without resetting the age."""
        found = a.ImproveArgs(memory_id, **checked(options, keywords.ImproveKeywords))
        return await self._send(core.improve(found))

    async def delete(self, memory_id: str) -> WriteResult:
        return await self._send(core.delete(memory_id))

    forget = delete

    async def delete_all(self, **scope: Unpack[keywords.SessionScopeKeywords]) -> int:
        """Forget every memory of exactly one scope (:meth:`Memory.delete_all`)."""
        return await self._send(core.delete_all(**checked(scope, keywords.SessionScopeKeywords)))

    async def pin(self, memory_id: str) -> WriteResult:
        return await self._send(core.pin(memory_id))

    async def unpin(self, memory_id: str) -> WriteResult:
        return await self._send(core.unpin(memory_id))

    async def restore(self, memory_id: str) -> WriteResult:
        """Bring a superseded or expired memory back live (:meth:`Memory.restore`)."""
        return await self._send(core.restore(memory_id))

    async def manage(
        self, operations: Sequence[Mapping[str, Any]],
        **scope: Unpack[keywords.SessionScopeKeywords]
    ) -> builtins.list[WriteResult]:  # fmt: skip
        """Apply ``add`` / ``revise`` / ``delete`` / ``none`` operations in order."""
        found = a.ManageArgs(operations, **checked(scope, keywords.SessionScopeKeywords))
        return await self._send(core.manage(found))

    # --- reads --------------------------------------------------------------------------
    async def search(
        self, query: str, *, profile: str | None = None, **options: Unpack[keywords.SearchKeywords]
    ) -> builtins.list[SearchHit]:  # fmt: skip
        """The memories that best answer ``query`` (options as for :meth:`Memory.search`)."""
        found = a.SearchArgs(query, profile=profile, **checked(options, keywords.SearchKeywords))
        return await self._send(core.search(found))

    async def recall(
        self, *, entity: str, **options: Unpack[keywords.RecallKeywords]
    ) -> builtins.list[SearchHit]:  # fmt: skip
        found = a.RecallArgs(entity=entity, **checked(options, keywords.RecallKeywords))
        return await self._send(core.recall(found))

    async def get(self, memory_id: str, *, touch: bool = True) -> MemoryRecord:
        """Open one memory; ``NotFoundError`` also when the key may not see it."""
        return await self._send(core.get(memory_id, touch=touch))

    async def list(
        self, **options: Unpack[keywords.ListKeywords]
    ) -> builtins.list[MemoryRecord]:  # fmt: skip
        """Memories in scope, newest first (filters as for :meth:`Memory.list`)."""
        found = a.ListArgs(**checked(options, keywords.ListKeywords))
        return await self._send(core.list_memories(found))

    async def history(self, memory_id: str) -> builtins.list[Version]:
        return await self._send(core.history(memory_id))

    # --- graph --------------------------------------------------------------------------
    async def relate(
        self, source: str, target: str, kind: str, strength: float = 1.0, *,
        metadata: Mapping[str, Any] | None = None
    ) -> Edge:  # fmt: skip
        return await self._send(core.relate(source, target, kind, strength, metadata=metadata))

    async def delete_edge(self, edge_id: str) -> bool:
        return await self._send(core.delete_edge(edge_id))

    async def edges(self, memory_id: str, *, kind: str | None = None) -> builtins.list[Edge]:
        return await self._send(core.edges(memory_id, kind=kind))

    async def neighbors(
        self, memory_id: str, depth: int = 1, *, limit: int = 50
    ) -> builtins.list[Neighbour]:
        return await self._send(core.neighbors(memory_id, depth, limit=limit))

    async def entities(
        self, *, user_id: str | None = None, namespace: str | None = None,
        by_namespace: bool = False
    ) -> dict[str, Any]:  # fmt: skip
        found = a.EntitiesArgs(user_id=user_id, namespace=namespace, by_namespace=by_namespace)
        return await self._send(core.entities(found))

    async def ask(
        self, question: str, **options: Unpack[keywords.AskKeywords]
    ) -> Answer:  # fmt: skip
        """Cited passages, and an answer when the server has a chat model."""
        found = a.AskArgs(question, **checked(options, keywords.AskKeywords))
        return await self._send(core.ask(found))

    async def consolidate(
        self, *, user_id: str | None = None, namespace: str | None = None, dry_run: bool = False
    ) -> ConsolidationReport:  # fmt: skip
        found = a.ConsolidateArgs(user_id=user_id, namespace=namespace, dry_run=dry_run)
        return await self._send(core.consolidate(found))

    # --- sessions -----------------------------------------------------------------------
    async def record_turn(
        self, role: str, content: str, **options: Unpack[keywords.MessageKeywords]
    ) -> Turn:  # fmt: skip
        found = a.RecordTurnArgs(role, content, **checked(options, keywords.MessageKeywords))
        return await self._send(core.record_turn(found))

    async def add_message(
        self, message: Mapping[str, Any], **options: Unpack[keywords.MessageKeywords]
    ) -> Turn:  # fmt: skip
        found = a.AddMessageArgs(message, **checked(options, keywords.MessageKeywords))
        return await self._send(core.add_message(found))

    async def get_history(
        self, session_id: str | None = None, limit: int = 50,
        **scope: Unpack[keywords.ScopeKeywords]
    ) -> builtins.list[Turn]:  # fmt: skip
        found = a.GetHistoryArgs(session_id, limit, **checked(scope, keywords.ScopeKeywords))
        return await self._send(core.get_history(found))

    async def list_sessions(
        self, *, user_id: str | None = None, namespace: str | None = None
    ) -> builtins.list[tuple[str, int]]:  # fmt: skip
        found = a.ListSessionsArgs(user_id=user_id, namespace=namespace)
        return await self._send(core.list_sessions(found))

    async def summarize_session(
        self, session_id: str | None = None, **scope: Unpack[keywords.ScopeKeywords]
    ) -> WriteResult:  # fmt: skip
        found = a.SummarizeSessionArgs(session_id, **checked(scope, keywords.ScopeKeywords))
        return await self._send(core.summarize_session(found))

    async def add_working(
        self, content: str, **options: Unpack[keywords.AddWorkingKeywords]
    ) -> WriteResult:  # fmt: skip
        """Remember something for this session only; a second write of the same ``key``
        replaces the first."""
        found = a.AddWorkingArgs(content, **checked(options, keywords.AddWorkingKeywords))
        return await self._send(core.add_working(found))

    async def working_memory(
        self, session_id: str | None = None, **options: Unpack[keywords.WorkingMemoryKeywords]
    ) -> builtins.list[MemoryRecord]:  # fmt: skip
        """The live working memories of a session that this key can read, oldest first."""
        found = checked(options, keywords.WorkingMemoryKeywords)
        return await self._send(core.working_memory(session_id, **found))

    # --- context and learning -----------------------------------------------------------
    async def context(
        self, query: str | None = None, **options: Unpack[keywords.ContextKeywords]
    ) -> Context:  # fmt: skip
        """A block of memory for a prompt; ``str(ctx)`` is the prompt text."""
        found = a.ContextArgs(query, **checked(options, keywords.ContextKeywords))
        return await self._send(core.context(found))

    build_context = context

    async def learn(
        self, messages: str | Iterable[str | Mapping[str, Any] | Turn],
        **options: Unpack[keywords.MessageKeywords]
    ) -> builtins.list[WriteResult]:  # fmt: skip
        found = a.LearnArgs(messages, **checked(options, keywords.MessageKeywords))
        return await self._send(core.learn(found))

    # --- upkeep -------------------------------------------------------------------------
    async def stats(
        self, *, user_id: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:  # fmt: skip
        found = a.StatsArgs(user_id=user_id, namespace=namespace)
        return await self._send(core.stats(found))

    async def gc(self, *, dry_run: bool = False) -> dict[str, Any]:
        return await self._send(core.gc(dry_run=dry_run))

    async def reset(self) -> int:
        """Empty the store of memories (an admin key: :meth:`Memory.reset`)."""
        return await self._send(core.reset())

    async def maintain(self, *, dry_run: bool = False) -> MaintenanceReport:
        return await self._send(core.maintain(dry_run=dry_run))

    async def export(self, target: str | Path | IO[str], *, vectors: bool = False) -> int:
        """Write every memory this key can read as JSON Lines; returns the lines written.
        (The file itself is written without waiting: lines arrive slower than they write.)"""
        if isinstance(target, str | Path):
            with open(target, "w", encoding="utf-8") as handle:  # noqa: ASYNC230
                return await self.export(handle, vectors=vectors)
        count = 0
        async for line in self._lines(core.export(vectors=vectors)):
            count += core.write_line(line, target)
        return count

    # --- events -------------------------------------------------------------------------
    async def events(
        self, *, since: str | None = None, types: Sequence[str] | None = None, limit: int = 100
    ) -> builtins.list[Event]:
        """Stored events after ``since`` that this key may see, oldest first."""
        return await self._send(core.events(since=since, types=types, limit=limit))

    async def stream_events(
        self, *, since: str | None = None, types: Sequence[str] | None = None
    ) -> AsyncIterator[Event]:
        """Events as they happen (server-sent events), until the caller stops iterating
        (``async for event in client.stream_events(...)``). ``since`` resumes after that
        event id (``"0"``: the whole log first)."""
        parser = core.EventLines()
        async for line in self._lines(core.stream_events(since=since, types=types),
                                      timeout=None):  # fmt: skip
            event = parser.feed(line)
            if event is not None:
                yield event

    # --- the key and the directory ------------------------------------------------------
    async def me(self) -> dict[str, Any]:
        """The key's record and the namespaces it can read."""
        return await self._send(core.me())

    @property
    def directory(self) -> AsyncRemoteDirectory:
        """Identities, groups, orgs and grants, as this key may manage them."""
        return AsyncRemoteDirectory(self)


class AsyncRemoteDirectory:
    """The methods of :class:`~memchentic.access.directory.Directory`, over HTTP (awaited)."""

    def __init__(self, client: AsyncClient) -> None:
        self._send = client._send

    async def identities(self, kind: str | None = None) -> list[Identity]:
        return await self._send(core.identities(kind))

    async def create_identity(self, name: str, kind: str = "user") -> Identity:
        return await self._send(core.create_identity(name, kind))

    async def rename_identity(self, key: str, new_name: str) -> Identity:
        return await self._send(core.rename_identity(key, new_name))

    async def teams(self, kind: str) -> list[Team]:
        return await self._send(core.teams(kind))

    async def create_group(
        self, name: str, *, admins: list[str] | None = None, members: list[str] | None = None
    ) -> Team:
        return await self._send(core.create_team("group", name, admins, members))

    async def create_org(
        self, name: str, *, admins: list[str] | None = None, members: list[str] | None = None
    ) -> Team:
        return await self._send(core.create_team("org", name, admins, members))

    async def rename_team(self, team: str, new_name: str) -> Team:
        return await self._send(core.rename_team(team, new_name))

    async def members(self, team: str) -> list[Membership]:
        return await self._send(core.members(team))

    async def add_member(
        self, team: str, identity: str, *, role: str = "member", active: bool = True
    ) -> Membership | Invitation:
        return await self._send(core.add_member(team, identity, role=role, active=active))

    async def invitations(
        self, *, kind: str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[Invitation]:
        return await self._send(core.invitations(kind=kind, limit=limit, offset=offset))

    async def team_invitations(
        self, team: str, *, limit: int | None = None, offset: int = 0
    ) -> list[Invitation]:
        return await self._send(core.team_invitations(team, limit=limit, offset=offset))

    async def withdraw(self, team: str, identity: str) -> bool:
        return await self._send(core.withdraw(team, identity))

    async def accept(self, team: str) -> Membership:
        return await self._send(core.accept(team))

    async def decline(self, team: str) -> bool:
        return await self._send(core.decline(team))

    async def remove_member(self, team: str, identity: str) -> bool:
        return await self._send(core.remove_member(team, identity))

    async def grant(self, namespace: str, grantee: str) -> Grant:
        return await self._send(core.grant(namespace, grantee))

    async def revoke(self, namespace: str, grantee: str) -> bool:
        return await self._send(core.revoke(namespace, grantee))

    async def grants(self, namespace: str | None = None) -> list[Grant]:
        return await self._send(core.grants(namespace))
