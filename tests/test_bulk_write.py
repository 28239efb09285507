"""The bulk write path (``add_many``) decides exactly what one-by-one ``add`` calls
decide: same statuses, same memories referred to, same stored state, on every
backend. Batches are built to sit on the thresholds: duplicates (the same
statement in other function words), updates (a new port), contradictions
(negations) and other statements, inside the batch and against stored rows, at
cosines on both sides of the thresholds; slot keys, guides, several namespaces
and every duplicate policy."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memchentic import Memory
from memchentic.errors import ValidationError
from memchentic.record import WriteResult

from .conftest import TableEmbedder

DIM = 16


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


Items = list[dict[str, Any]]


_POLICIES = ("refuse", "refuse", "reinforce", "keep")


def _scenario(
    seed: int, policies: tuple[str, ...] = _POLICIES
) -> tuple[dict[str, list[float]], Items, Items]:
    """(vector table, items stored first, the batch): statements about a few
    services (a port, its negation, the same in other function words, another
    statement), each text a random step from its service's vector, so cosines fall
    on both sides of the 0.4 / 0.8 / 0.9 / 0.92 thresholds; each item's duplicate
    policy drawn from ``policies``."""
    rng = np.random.default_rng(seed)
    services = ("billing", "search", "auth", "mail")
    topics = [_unit(rng.standard_normal(DIM)) for _ in services]
    forms = (
        "The {s} service listens on port {p}",
        "{s} service listens on port {p}",
        "The {s} service does not listen on port {p}",
        "The {s} service writes its logs to {d}",
    )
    table: dict[str, list[float]] = {}

    def item(i: int, *, stored: bool) -> dict[str, Any]:
        topic = int(rng.integers(len(topics)))
        step = float(rng.choice([0.05, 0.2, 0.35, 0.6, 1.2]))
        form = forms[int(rng.integers(len(forms)))]
        text = form.format(
            s=services[topic], p=int(rng.choice([8000, 8001])),
            d=str(rng.choice(["disk", "syslog"])),
        )  # fmt: skip
        vector = _unit(topics[topic] + step * _unit(rng.standard_normal(DIM))).tolist()
        table.setdefault(text, vector)  # a text said again has its vector
        out: dict[str, Any] = {"content": text, "namespace": f"user:u{int(rng.integers(2))}"}
        roll = rng.random()
        if roll < 0.08:
            out["slot_key"] = f"slot{int(rng.integers(3))}"
        elif roll < 0.16:
            out["kind"] = "guide"
        out["on_duplicate"] = str(rng.choice(policies))
        return out

    stored = [item(i, stored=True) for i in range(25)]
    batch = [item(i, stored=False) for i in range(60)]
    return table, stored, batch


def _outcome(results: list[WriteResult], created: dict[str, str]) -> list[tuple]:
    """Statuses and the memories each result names, as the content that created them."""
    return [(r.status, r.reason, tuple(created.get(i, i) for i in r.ids)) for r in results]


def _created(mem: Memory) -> dict[str, str]:
    """Every memory stored, expired and superseded ones too: id -> content."""
    rows = mem.list(limit=500, include_expired=True, include_superseded=True)
    return {r.id: r.content for r in rows}


def _state(mem: Memory) -> list[tuple]:
    rows = mem.list(limit=500, include_expired=True, include_superseded=True)
    return sorted(
        (r.content, r.namespace, r.kind, r.reinforcement, r.slot_key or "",
         r.superseded_by is not None, len(mem.history(r.id)))
        for r in rows
    )  # fmt: skip


@pytest.mark.parametrize(
    ("seed", "policies"),
    [(1, _POLICIES), (2, _POLICIES), (3, _POLICIES), (4, _POLICIES), (5, ("keep",)),
     (6, ("keep",))],
)  # fmt: skip
def test_add_many_decides_like_one_by_one(
    make_mem: Callable[..., Memory], seed: int, policies: tuple[str, ...]
) -> None:
    """With every policy, and with writes that all keep duplicates (records of
    speech: inserted without any check)."""
    table, stored, batch = _scenario(seed, policies)
    one = make_mem("one", embedder=TableEmbedder(table, dimension=DIM))
    bulk = make_mem("bulk", embedder=TableEmbedder(table, dimension=DIM))
    for m in (one, bulk):
        m.add_many(stored)

    sequential = [one.add(**item) for item in batch]
    together = bulk.add_many(batch)

    assert _outcome(sequential, _created(one)) == _outcome(together, _created(bulk))
    assert _state(one) == _state(bulk)
    statuses = {r.status for r in together}
    # the scenario really exercises the paths it claims to
    if policies == ("keep",):  # records of speech: every one added as it is
        assert statuses <= {"added", "updated", "merged"}
        assert not any(r.superseded_by for r in bulk.list(limit=500, include_superseded=True))
    else:
        assert {"added", "refused", "superseded"} <= statuses
        assert statuses & {"reinforced", "updated", "merged"}


def test_add_many_bulk_rows_are_complete(make_mem: Callable[..., Memory]) -> None:
    """Rows written in bulk are searchable at once, have their first version, their
    entities and their events, like rows written one by one."""
    mem = make_mem()
    seen: list[str] = []
    mem.subscribe(lambda e: seen.append(e.type))
    texts = [f"Ada Lovelace wrote note {i} about engines and looms {i * 17}" for i in range(40)]
    results = mem.add_many(texts, user_id="ada")
    assert [r.status for r in results] == ["added"] * 40
    hits = mem.search("note 23 about engines and looms 391", user_id="ada", limit=3)
    assert hits[0].memory.id == results[23].id
    history = mem.history(results[5].id)
    assert [(v.version, v.op) for v in history] == [(1, "add")]
    assert history[0].snapshot is not None and history[0].snapshot["content"] == texts[5]
    assert "ada lovelace" in [e.lower() for e in mem.get(results[7].id).entities]
    assert seen.count("memory.added") == 40 and seen.count("history.appended") == 40


_MOMENTS = (
    "created_at", "updated_at", "valid_from", "expires_at", "last_recalled_at", "replaced_at",
)  # fmt: skip


def _stored(mem: Memory) -> dict[str, Any]:
    """Everything a write leaves behind, keyed by content instead of ids and times:
    the rows, each memory's versions (with their snapshots) and the event log."""
    rows = mem.list(limit=500, include_expired=True, include_superseded=True)
    named = {r.id: r.content for r in rows}

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k not in ("id", *_MOMENTS)}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return named.get(value, value) if isinstance(value, str) else value

    memories = {
        r.content: (
            plain(r.to_dict()),
            [(v.version, v.op, v.actor, plain(v.changes), plain(v.snapshot))
             for v in mem.history(r.id)],
        )
        for r in rows
    }  # fmt: skip
    events = [
        (e.type, e.actor, e.namespace, named.get(e.memory_id or ""), plain(e.payload))
        for e in mem.events(limit=10_000)
    ]
    return {"memories": memories, "events": events}


@pytest.mark.parametrize("seed", [1, 2])
def test_add_many_stores_what_add_stores(make_mem: Callable[..., Memory], seed: int) -> None:
    """Rows, versions with their snapshots, entities and events: the same, whether
    the batch goes through ``add_many`` or ``add`` one by one."""
    table, stored, batch = _scenario(seed)
    base = dict(table)
    for k, item in enumerate((*stored, *batch)):
        item["tags"] = ["t1", "ünï"] if len(item["content"]) % 2 else []
        item["metadata"] = {"n": len(item["content"]), "by": "Ada"}
        # each content unique (the rows are named by it below), the words the same:
        # spacing tells nothing, so a text said again is still the same statement
        text = item["content"]
        item["content"] = f"{text} with Ada Lovelace{' ' * (k + 1)}in src/engine.py"
        nudge = 1e-3 * np.random.default_rng(k).standard_normal(DIM)  # no exact ties
        table[item["content"]] = _unit(np.asarray(base[text]) + nudge).tolist()
    one = make_mem("one", embedder=TableEmbedder(table, dimension=DIM))
    bulk = make_mem("bulk", embedder=TableEmbedder(table, dimension=DIM))
    for item in stored:
        one.add(**item)
    bulk.add_many(stored)
    for item in batch:
        one.add(**item)
    bulk.add_many(batch)
    want, got = _stored(one), _stored(bulk)
    assert got["memories"] == want["memories"]
    assert got["events"] == want["events"]
    some = next(iter(got["memories"].values()))[0]
    assert {"ada lovelace", "src/engine.py"} <= {e.lower() for e in some["entities"]}


def test_add_many_checks_the_duplicate_policy(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem()
    for bad in ("merge", ["keep"]):
        with pytest.raises(ValidationError) as caught:
            mem.add_many(["first fact", {"content": "second fact", "on_duplicate": bad}])
        assert caught.value.field == "on_duplicate"
    assert mem.list() == []
    assert [r.status for r in mem.add_many(["a fact", "another"], on_duplicate="keep")] == [
        "added", "added",
    ]  # fmt: skip


@pytest.mark.parametrize("n", [1, 7, 300, 700])
def test_in_batch_check_equals_the_whole_square(n: int) -> None:
    """The in-batch check by blocks of the lower triangle finds, for each write, the
    k nearest earlier writes the whole product's lower triangle does."""
    from memchentic.write import resolve

    rng = np.random.default_rng(n)
    topics = rng.standard_normal((5, DIM))
    unit = topics[rng.integers(5, size=n)] + 0.3 * rng.standard_normal((n, DIM))
    unit = (unit / np.linalg.norm(unit, axis=1, keepdims=True)).astype(np.float32)
    namespaces = rng.integers(3, size=n)
    limits = rng.choice([0.78, 0.88, 0.9, 0.95, np.inf], size=n)
    floor = float(limits.min())
    sims = unit @ unit.T
    want: dict[int, list[int]] = {}
    for i in range(n):
        close = [(float(sims[i, j]), j) for j in range(i)
                 if namespaces[j] == namespaces[i] and sims[i, j] >= limits[i]]  # fmt: skip
        if close:
            want[i] = [j for _, j in sorted(close, key=lambda p: -p[0])[:8]]
    got = resolve._earlier_neighbours(unit, namespaces, limits, floor, 8)
    assert {i: [j for j, _ in pairs] for i, pairs in got.items()} == want
    assert n < 300 or 0 < len(want) < n  # both answers occur


def test_similar_many_reads_each_neighbours_columns(make_mem: Callable[..., Memory]) -> None:
    """The bulk check reads namespace, kind, polarity, supersession and expiry from
    the neighbour lookup itself (no record is loaded): each must be the stored one."""
    axis = [1.0, 0.0, 0.0, 0.0]
    table = {
        "Alice likes green tea": [1.0, 0.05, 0.0, 0.0],
        "Alice does not like green tea": [1.0, 0.0, 0.05, 0.0],
        "How to brew green tea": [1.0, 0.1, 0.1, 0.0],
        "Green tea was on sale last week": [1.0, 0.0, 0.0, 0.15],
        "The train leaves at noon": [0.0, 1.0, 0.0, 0.0],
    }
    mem = make_mem(embedder=TableEmbedder(table, dimension=DIM))
    liked = mem.add("Alice likes green tea", user_id="alice")
    negated = mem.add("Alice does not like green tea", user_id="alice")
    guide = mem.add("How to brew green tea", kind="guide", user_id="bob")
    past = datetime.now(UTC) - timedelta(days=1)
    expired = mem.add("Green tea was on sale last week", user_id="bob", expires_at=past)
    mem.add("The train leaves at noon", user_id="alice")
    assert negated.status == "superseded" and mem.get(liked.id).superseded_by == negated.id

    (found,) = mem.store.similar_many(np.array([_pad(axis)]), 8, 0.9)
    assert {n.id for n in found} == {liked.id, negated.id, guide.id, expired.id}  # not far
    assert [n.cosine for n in found] == sorted((n.cosine for n in found), reverse=True)
    for n in found:
        record = mem.get(n.id)
        assert (n.namespace, n.kind, n.polarity, n.superseded_by, n.expires_at) == (
            record.namespace, record.kind, record.polarity, record.superseded_by,
            record.expires_at,
        )  # fmt: skip
        assert n.cosine == pytest.approx(float(_unit(np.array(_pad(table[record.content])))[0]))
    assert {n.id: n.is_expired(datetime.now(UTC)) for n in found} == {
        liked.id: False, negated.id: False, guide.id: False, expired.id: True,
    }  # fmt: skip
    assert {n.polarity for n in found if n.id in (liked.id, negated.id)} == {1, -1}


def _pad(v: list[float]) -> list[float]:
    return v + [0.0] * (DIM - len(v))
