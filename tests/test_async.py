"""AsyncMemory: the same results as the sync API, and the event loop never blocks."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

import memchentic
from memchentic import AsyncMemory, HashEmbedder, Memory
from memchentic.clock import utcnow
from memchentic.operations import OPERATIONS

FACTS = [
    "Sam lives in Lisbon near the river",
    "Sam prefers window seats on long flights",
    "Sam is allergic to peanuts",
    "Sam's sister Ana lives in Porto",
    "Sam runs every morning before work",
    "Sam works at Acme Robotics as an engineer",
    "Sam is learning Portuguese with a graded reader",
    "Sam's favourite food is grilled sardines",
    "Sam takes the train to Porto to visit Ana",
    "Sam does not like crowded hiking trails",
]
QUERIES = ["where does Sam live", "flights", "food allergy", "Porto", "running",
           "work", "language learning", "sardines", "train", "hiking"]  # fmt: skip


def _snapshot(hits: Sequence[memchentic.SearchHit]) -> list[tuple[str, float, str]]:
    return [(h.id, round(h.score, 12), h.text) for h in hits]


def test_fifty_concurrent_asearch_calls_match_the_sync_results(mem: Memory):
    mem.add_many(FACTS, user_id="sam")
    now = utcnow()
    for q in QUERIES:  # the first search of each memory counts a recall; settle that first
        mem.search(q, user_id="sam", now=now)
    expected = {q: _snapshot(mem.search(q, user_id="sam", now=now)) for q in QUERIES}
    amem = AsyncMemory(mem)
    calls = [QUERIES[i % len(QUERIES)] for i in range(50)]

    async def run() -> list[list[memchentic.SearchHit]]:
        return await asyncio.gather(*(amem.asearch(q, user_id="sam", now=now) for q in calls))

    results = asyncio.run(run())
    assert len(results) == 50
    for q, hits in zip(calls, results, strict=True):
        assert hits and _snapshot(hits) == expected[q]


class GatedEmbedder(HashEmbedder):
    """Blocks each embedding until the event loop has ticked: if a call ran on the
    loop itself, the heartbeat could never tick and the wait would fail."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(dimension=384)
        self.gate = gate
        self.waited = 0

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not self.gate.wait(timeout=30):
            raise AssertionError("the event loop was blocked: the heartbeat never ran")
        self.waited += 1
        return super().embed_batch(texts)


def test_the_event_loop_keeps_running_while_the_embedder_works(mem: Memory):
    gate = threading.Event()
    embedder = GatedEmbedder(gate)
    slow = Memory(store=mem.store, embedder=embedder, settings=mem.settings)
    amem = AsyncMemory(slow)
    ticks: list[int] = []

    async def heartbeat(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks.append(len(ticks))
            if len(ticks) >= 3:
                gate.set()
            await asyncio.sleep(0)

    async def run() -> tuple[str, int]:
        stop = asyncio.Event()
        beat = asyncio.create_task(heartbeat(stop))
        await amem.aadd("Sam keeps bees on the roof", user_id="sam")
        hits = await amem.asearch("bees", user_id="sam")
        stop.set()
        await beat
        return hits[0].id, len(ticks)

    found, count = asyncio.run(run())
    assert embedder.waited == 2 and count >= 3
    assert found == mem.search("bees", user_id="sam")[0].id


def test_async_methods_give_the_sync_results(mem: Memory):
    amem = AsyncMemory(mem)

    async def run() -> None:
        added = await amem.aadd("Sam's bike is a blue Brompton", user_id="sam")
        assert (await amem.aget(added.id)).content == "Sam's bike is a blue Brompton"
        learned = await amem.alearn("I live in Lisbon. Never use emojis.", user_id="sam")
        assert [r.status for r in learned] == ["added", "added"]
        turn = await amem.arecord_turn("user", "hello", user_id="sam", session_id="s")
        await amem.aadd_message({"role": "assistant", "content": "hi"}, user_id="sam",
                                session_id="s")  # fmt: skip
        history = await amem.aget_history("s", user_id="sam")
        assert [t.id for t in history][0] == turn.id and len(history) == 2
        summary = await amem.asummarize_session("s", user_id="sam")
        assert summary.status == "added"
        now = utcnow()
        actx = await amem.acontext("bike", user_id="sam", session_id="s", now=now)
        sctx = mem.context("bike", user_id="sam", session_id="s", now=now)
        assert str(actx) == str(sctx)
        built = await amem.abuild_context("bike", user_id="sam", session_id="s", now=now)
        assert str(built) == str(sctx)
        recalled = await amem.arecall(entity="Lisbon", user_id="sam")
        expected = mem.recall(entity="Lisbon", user_id="sam")
        assert [h.id for h in recalled] == [h.id for h in expected]
        managed = await amem.amanage([{"op": "delete", "id": added.id}])
        assert managed[0].status == "deleted"
        consolidated = await amem.aconsolidate(dry_run=True)
        assert consolidated.to_dict()["dry_run"] is True
        report = await amem.amaintain(dry_run=True)
        assert report.dry_run and report.consolidation is not None
        assert (await amem.apin(learned[0].id)).status == "updated"
        assert (await amem.aunpin(learned[0].id)).status == "updated"
        assert await amem.alist(user_id="sam", type="instruction")

    asyncio.run(run())


def test_async_reads_take_as_of(mem: Memory):
    """Issue 20, item 12: ``as_of`` in ``alist``, ``arecall`` and ``acontext`` too."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    then = t0 + timedelta(days=10)
    old = mem.add("Ines coached the chess club", type="fact", entities=["Ines"],
                  valid_from=t0, valid_to=t0 + timedelta(days=30)).id  # fmt: skip
    mem.add("Ines coaches the rowing team", type="fact", entities=["Ines"],
            valid_from=t0 + timedelta(days=30))  # fmt: skip
    amem = AsyncMemory(mem)

    async def run() -> tuple[list[str], list[str], set[str]]:
        listed = await amem.alist(as_of=then)
        recalled = await amem.arecall(entity="Ines", as_of=then)
        ctx = await amem.acontext("what does Ines coach", as_of=then)
        return [r.id for r in listed], [h.id for h in recalled], {i.id for i in ctx.items}

    assert asyncio.run(run()) == ([old], [old], {old})


def test_async_views_and_lifecycle(tmp_path):
    async def run() -> None:
        async with AsyncMemory(path=tmp_path / "a.db", embedder="hash") as amem:
            ana = amem.as_identity("ana")
            await ana.aadd("Ana's secret recipe uses saffron")
            assert await amem.asearch("saffron")  # the trusted view sees it
            bob = amem.as_identity("bob")
            assert await bob.asearch("saffron") == []
            seen = []
            token = amem.subscribe(seen.append, types=["memory.added"])
            await amem.aadd("Saffron is expensive", user_id="x")
            assert amem.unsubscribe(token) and len(seen) == 1

    asyncio.run(run())
    with pytest.raises(TypeError):
        AsyncMemory(Memory(path=tmp_path / "b.db", embedder="hash"), embedder="hash")


def test_async_memory_is_exported_with_documented_coroutines():
    """Every operation of the table (not a hand list): a coroutine documented as the
    sync method it runs. tests/test_faces.py checks the names and return types."""
    assert "AsyncMemory" in memchentic.__all__
    waited = [op for op in OPERATIONS if op.name not in ("subscribe", "unsubscribe")]
    assert len(waited) > 35
    for op in waited:
        for name in (op.name, *op.aliases):  # an alias is the same coroutine
            method = getattr(AsyncMemory, "a" + name)
            assert inspect.iscoroutinefunction(method), name
            assert (method.__doc__ or "").startswith(f"Async :meth:`Memory.{op.name}`"), name
