"""``memchentic.AsyncClient`` against a real server: the methods of ``Client``,
awaited, with the same types, the same errors and the same access rules (issue 23)."""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from memchentic import (  # noqa: E402
    AsyncClient,
    Client,
    MemoryRecord,
    NamespaceError,
    NotFoundError,
    SearchHit,
    ValidationError,
    WriteResult,
)
from memchentic.client import AsyncRemoteDirectory, RemoteDirectory  # noqa: E402
from memchentic.errors import AuthError, ServerError  # noqa: E402
from memchentic.identity import Identity  # noqa: E402
from memchentic.operations import OPERATIONS, REMOTE_ONLY  # noqa: E402
from memchentic.reports import (  # noqa: E402
    Answer,
    ConsolidationReport,
    MaintenanceReport,
    Passage,
)

from .live_server import Live, live_server  # noqa: E402

T = TypeVar("T")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("aclient"), mcp=False, console=False) as server:
        yield server


def run(live: Live, who: str, script: Callable[[AsyncClient], Awaitable[T]]) -> T:
    """``script`` on an AsyncClient holding ``who``'s key, in a fresh event loop."""

    async def main() -> T:
        async with AsyncClient(live.url, live.keys[who]) as client:
            return await script(client)

    return asyncio.run(main())


def test_write_search_and_ask_return_the_library_types(live: Live):
    async def script(c: AsyncClient) -> dict[str, Any]:
        fact = await c.add("The gym locker code is kept in the blue notebook", type="fact")
        batch = await c.add_many(["The blue notebook sits on the hall shelf", "Tea at four"])
        hits = await c.search("where is the locker code kept", limit=3)
        answer = await c.ask("Where is the gym locker code kept?")
        return {"fact": fact, "batch": batch, "hits": hits, "answer": answer}

    got = run(live, "alice", script)
    fact = got["fact"]
    assert isinstance(fact, WriteResult) and fact.status == "added"
    assert isinstance(fact.memory, MemoryRecord) and fact.memory.namespace == "user:alice"
    assert [r.status for r in got["batch"]] == ["added", "added"]
    assert all(isinstance(h, SearchHit) for h in got["hits"])
    assert got["hits"][0].id == fact.id
    answer = got["answer"]
    assert isinstance(answer, Answer) and answer.answerable
    first = answer.passages[0]
    assert isinstance(first, Passage) and isinstance(first.memory, MemoryRecord)
    assert (first.citation, first.memory.id, first.via) == (1, fact.id, "search")
    assert first.memory.content == "The gym locker code is kept in the blue notebook"
    # the same answer as the library gives alice directly
    local = live.mem.for_identity("alice").ask("Where is the gym locker code kept?")
    assert [(p.citation, p.memory.id, p.via) for p in answer.passages] == [
        (p.citation, p.memory.id, p.via) for p in local.passages
    ]
    assert (answer.answer, answer.answerable) == (local.answer, local.answerable)


def test_upkeep_returns_reports(live: Live):
    async def script(c: AsyncClient) -> tuple[Any, Any, Any]:
        await c.add("Dana's bike is red")
        return await c.maintain(dry_run=True), await c.consolidate(dry_run=True), await c.gc()

    report, consolidated, collected = run(live, "alice", script)
    assert isinstance(report, MaintenanceReport) and report.dry_run is True
    assert isinstance(report.gc, dict) and report.gc.get("dry_run") is True
    assert report.events_pruned is None  # a dry run prunes nothing
    assert isinstance(consolidated, ConsolidationReport) and consolidated.dry_run is True
    assert consolidated.merged == 0
    assert isinstance(collected, dict) and collected.get("dry_run") is False


def test_working_memory_is_the_callers_own(live: Live):
    async def alice(c: AsyncClient) -> list[MemoryRecord]:
        first = await c.add_working("Focus: the invoice bug", session_id="w1", key="focus")
        second = await c.add_working("Focus: the login bug", session_id="w1", key="focus")
        await c.add_working("Draft reply is in the scratch file", session_id="w1")
        assert (first.status, second.status, second.id) == ("added", "updated", first.id)
        return await c.working_memory("w1")

    mine = run(live, "alice", alice)
    assert [r.content for r in mine] == [
        "Focus: the login bug", "Draft reply is in the scratch file",
    ]  # fmt: skip
    assert {(r.type, r.session_id, r.namespace) for r in mine} == {("working", "w1", "user:alice")}

    async def bob(c: AsyncClient) -> dict[str, Any]:
        found: dict[str, Any] = {
            "own": await c.working_memory("w1"),
            "alice's": await c.working_memory("w1", namespace="user:alice"),
        }
        with pytest.raises(NamespaceError) as refused:
            await c.add_working("Bob was here", session_id="w1", namespace="user:alice")
        found["refused"] = refused.value.field
        return found

    seen = run(live, "bob", bob)
    assert seen == {"own": [], "alice's": [], "refused": "namespace"}
    # exactly what the library lets bob see
    as_bob = live.mem.for_identity("bob")
    assert as_bob.working_memory("w1", namespace="user:alice") == []
    assert [r.id for r in live.mem.for_identity("alice").working_memory("w1")] == [
        r.id for r in mine
    ]


def test_errors_are_the_library_exceptions(live: Live):
    with Client(live.url, live.keys["bob"]) as bob:
        hidden = bob.add("Bob's spare key is under the mat").id
    assert hidden is not None

    async def script(c: AsyncClient) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with pytest.raises(NotFoundError) as missing:
            await c.get(hidden)
        out["not_found"] = (missing.value.code, str(missing.value))
        with pytest.raises(ValidationError) as bad:
            await c.add("x", confidence=3)
        out["invalid"] = bad.value.field
        with pytest.raises(ServerError) as admin_only:
            await c.directory.create_identity("mallory")
        out["admin_only"] = (admin_only.value.code, admin_only.value.status)
        return out

    got = run(live, "alice", script)
    with pytest.raises(NotFoundError) as local:
        live.mem.for_identity("alice").get(hidden)
    assert got == {
        "not_found": ("not_found", str(local.value)),
        "invalid": "confidence",
        "admin_only": ("admin_required", 403),
    }

    async def stranger() -> None:
        async with AsyncClient(live.url, "mck_not-a-key") as c:
            await c.list()

    with pytest.raises(AuthError):
        asyncio.run(stranger())


def test_sessions_events_export_and_directory(live: Live, tmp_path: Path):
    async def script(c: AsyncClient) -> dict[str, Any]:
        out: dict[str, Any] = {}
        await c.record_turn("user", "Where did I leave my umbrella?", session_id="t1")
        await c.add_message({"role": "assistant", "content": "In the hallway."}, session_id="t1")
        out["turns"] = [(t.role, t.content) for t in await c.get_history("t1")]
        out["sessions"] = dict(await c.list_sessions()).get("t1")
        stream = c.stream_events(types=["memory.added"])
        waiting = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.5)
        mark = await c.add("Alice's umbrella is in the hallway")
        event = await asyncio.wait_for(waiting, 10)
        await stream.aclose()
        out["streamed"] = (event.type, event.memory_id == mark.id, event.namespace)
        logged = await c.events(types=["memory.added"], limit=1000)
        out["logged"] = mark.id in [e.memory_id for e in logged]
        out["exported"] = await c.export(tmp_path / "out.jsonl")
        out["me"] = (await c.me())["key"]["principal"]
        return out

    got = run(live, "alice", script)
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert got.pop("exported") == len(lines) > 1
    assert got == {
        "turns": [("user", "Where did I leave my umbrella?"), ("assistant", "In the hallway.")],
        "sessions": 2,
        "streamed": ("memory.added", True, "user:alice"),
        "logged": True,
        "me": "user:alice",
    }

    async def admin(c: AsyncClient) -> list[Identity]:
        await c.directory.create_identity("erin", "agent")
        return await c.directory.identities()

    names = {i.name for i in run(live, "admin", admin)}
    assert {"alice", "bob", "erin"} <= names


def _public(cls: type) -> dict[str, Any]:
    return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("_")}


def test_the_async_client_has_the_methods_and_parameters_of_the_client():
    sync, aio = _public(Client), _public(AsyncClient)
    assert set(sync) - {"close"} == set(aio) - {"aclose"}
    for name, method in sync.items():
        if name == "close" or isinstance(method, property):
            continue
        twin = aio[name]
        params = inspect.signature(method).parameters
        assert params == inspect.signature(twin).parameters, name
        hints, twin_hints = typing.get_type_hints(method), typing.get_type_hints(twin)
        if name == "stream_events":  # Iterator[Event] / AsyncIterator[Event]
            assert inspect.isasyncgenfunction(twin)
            assert typing.get_args(hints.pop("return")) == typing.get_args(twin_hints.pop("return"))
        else:
            assert inspect.iscoroutinefunction(twin), name
        assert hints == twin_hints, name
    for op in OPERATIONS:
        names = (op.name, *op.aliases) if op.remote else ()
        for face in (Client, AsyncClient):
            for n in names:
                returns = typing.get_type_hints(getattr(face, n))["return"]
                assert returns == op.returns, (face.__name__, n)
            if not op.remote:
                assert not hasattr(face, op.name), (face.__name__, op.name)
    assert set(REMOTE_ONLY) <= set(aio)
    directory, async_directory = _public(RemoteDirectory), _public(AsyncRemoteDirectory)
    assert set(directory) == set(async_directory)
    for name, method in directory.items():
        twin = async_directory[name]
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(method).parameters == inspect.signature(twin).parameters, name
        assert typing.get_type_hints(method) == typing.get_type_hints(twin), name
