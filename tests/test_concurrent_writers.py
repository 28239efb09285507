"""Several processes writing overlapping facts into one namespace at once.

Four processes each make the same mix of writes: facts of their own, facts every
process writes (near-duplicates: exactly one may be stored), and updates of
shared slots (each update a new version of one memory). Afterwards nothing the
rules refuse was stored twice, no write was lost, and every version is there.
PostgreSQL gets 500 writes per process, SQLite a shorter run.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from memchentic import HashEmbedder, Memory

from .conftest import Stores, run_spawned

WORKERS = 4
WRITES = {"postgres": 500, "sqlite": 100}
SHARED_FACTS = 50
SLOTS = 20
#: Distinct words, so that different facts never look alike to the hashing embedder.
_SYLLABLES = ["ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "vu", "ze", "bo", "fi", "gu"]


def _word(n: int) -> str:
    """The ``n``-th of 13**4 distinct pseudo-words."""
    out = ""
    for _ in range(4):
        n, r = divmod(n, len(_SYLLABLES))
        out += _SYLLABLES[r]
    return out


def shared_fact(j: int) -> str:
    return " ".join(_word(20_000 + 3 * j + k) for k in range(3)).capitalize() + f" shared {j}"


def own_fact(worker: int, i: int) -> str:
    g = worker * 1000 + i
    return " ".join(_word(4 * g + k) for k in range(4)).capitalize() + f" by worker {worker}"


def plan(worker: int, writes: int) -> list[dict[str, str]]:
    """One worker's writes: a quarter shared facts, a fifth slot updates, the rest its own."""
    items: list[dict[str, str]] = []
    for i in range(writes):
        if i % 4 == 1:
            items.append({"content": shared_fact(i // 4 % SHARED_FACTS)})
        elif i % 5 == 2:
            slot = i % SLOTS
            items.append(
                {
                    "content": f"Slot {slot} holds value {worker}-{i}",
                    "slot_key": f"state.slot{slot}",
                }
            )
        else:
            items.append({"content": own_fact(worker, i)})
    return items


def _worker(location: str, worker: int, writes: int, out: str) -> None:
    with Memory(store=location, embedder=HashEmbedder()) as m, open(out, "w") as log:
        for item in plan(worker, writes):
            res = m.add(item["content"], user_id="team", slot_key=item.get("slot_key"))
            log.write(json.dumps({**item, "status": res.status, "id": res.id}) + "\n")


def test_concurrent_writers_never_duplicate_lose_or_skip_a_version(
    stores: Stores, backend: str, tmp_path: Path
):
    writes = WRITES[backend]
    location = stores.location("race")
    Memory(store=location, embedder=HashEmbedder()).close()  # create it once
    logs = [tmp_path / f"w{w}.jsonl" for w in range(WORKERS)]
    run_spawned(_worker, [(location, w, writes, str(logs[w])) for w in range(WORKERS)], 600)
    results = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    assert len(results) == WORKERS * writes

    with Memory(store=location, embedder=HashEmbedder()) as m:
        stored = {r.id: r for r in m.list(user_id="team", limit=100, include_expired=True)}
        offset = 100
        while True:  # list pages through every memory of the namespace
            page = m.list(user_id="team", limit=100, offset=offset, include_expired=True)
            if not page:
                break
            stored.update((r.id, r) for r in page)
            offset += 100
        by_content = Counter(r.content for r in stored.values())
        # no duplicate that the rules refuse: one memory per shared fact, one per slot
        facts = {shared_fact(j) for j in range(SHARED_FACTS)}
        written = {r["content"] for r in results if r["content"] in facts}
        assert all(by_content[f] == 1 for f in written)
        slots = Counter(r.slot_key for r in stored.values() if r.slot_key)
        assert slots and all(n == 1 for n in slots.values())
        # no lost write: every write's memory exists, with what was written (or refused)
        for r in results:
            assert r["id"] in stored, r
            if r["status"] == "added" and "slot_key" not in r:
                assert stored[r["id"]].content == r["content"]
        own = [r for r in results if " by worker " in r["content"]]
        assert all(r["status"] == "added" for r in own)
        assert len(stored) == len(own) + len(written) + len(slots)
        statuses = Counter(r["status"] for r in results if r["content"] in facts)
        assert statuses["added"] == len(written)
        assert statuses["refused"] == sum(1 for r in results if r["content"] in facts) - len(
            written
        )
        # every version present: each slot has 1 add + one slot_update per later write
        slot_writes: dict[str, int] = defaultdict(int)
        for r in results:
            if "slot_key" in r:
                slot_writes[r["id"]] += 1
        for memory_id, count in slot_writes.items():
            versions = m.history(memory_id)
            assert [v.version for v in versions] == list(range(1, count + 1))
            assert [v.op for v in versions] == ["add"] + ["slot_update"] * (count - 1)
            # the memory holds the last value written, the history the newest earlier
            # ones (bounded: SLOT_HISTORY_MAX_ENTRIES; the versions keep every one)
            history = stored[memory_id].metadata["history"]
            assert len(history) == min(count - 1, m.settings.slot_history_max_entries)
        for r in results:
            if r["status"] == "added" and "slot_key" not in r:
                assert [v.op for v in m.history(r["id"])] == ["add"]
