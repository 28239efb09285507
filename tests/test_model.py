"""Model-based testing (issue 9): a small in-memory reference model of the memory
semantics (DESIGN sections 2, 4 and 6), driven side by side with the real store by
hypothesis's stateful testing; any divergence fails.

The model covers add (near-duplicate refusal, contradiction supersedes, slot
update in place, guide merging), revise, delete, get, search, expiry and its
sliding renewal under a controllable clock (``now=``), gc, and the access rules
through ``as_identity`` views (private namespaces: stealth not-found, empty reads,
refused writes). Texts come from a small vocabulary whose vectors the test
chooses, so every similarity decision is known: per topic a base statement, a
paraphrase (cosine 0.96, the same words but a function word: a duplicate), a
cousin (0.86, one more word: a different memory) and a negation (0.90 to the base,
0.78 to the paraphrase: the same statement negated, a contradiction at any cosine
the resolver compares; 0.94 to the cousin: a contradiction by cosine).

Short variant: SQLite 100 runs of up to 40 steps, PostgreSQL 12 (when a server is
available). ``MEMCHENTIC_LONG_TESTS=1``: 1000 and 100 runs of up to 60 steps.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memchentic import Embedder, Memory, Settings
from memchentic.errors import NamespaceError, NotFoundError
from memchentic.store.base import MemoryFilter

LONG = os.environ.get("MEMCHENTIC_LONG_TESTS") == "1"
T0 = datetime(2031, 1, 1, tzinfo=UTC)
EVERYTHING = MemoryFilter(namespaces=None, include_expired=True, include_superseded=True)
TOPICS = 3
DIM = 3 * TOPICS + 2 * 2


def _unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def _vocabulary() -> dict[str, tuple[str, list[float]]]:
    """text -> (kind, vector): per topic four entries in three dimensions of their own,
    per guide topic two guides in two dimensions of their own."""
    table: dict[str, tuple[str, list[float]]] = {}

    def put(text: str, kind: str, at: int, values: list[float]) -> None:
        vector = [0.0] * DIM
        vector[at : at + len(values)] = values
        table[text] = (kind, vector)

    for t in range(TOPICS):
        at = 3 * t
        put(f"topic {t}: Sam likes tea", "entry", at, [1.0, 0.0, 0.0])
        put(f"topic {t}: Sam really likes tea", "entry", at, _unit(0.96, 0.28, 0.0))
        put(f"topic {t}: Sam likes green tea", "entry", at, _unit(0.86, 0.0, 0.5103))
        put(f"topic {t}: Sam does not like tea", "entry", at, _unit(0.9, -0.3, 0.3162))
    for g in range(2):
        at = 3 * TOPICS + 2 * g
        put(f"guide {g}: check the logs first", "guide", at, [1.0, 0.0])
        put(f"guide {g}: check the log files first", "guide", at, _unit(0.95, 0.3122))
    return table


VOCABULARY = _vocabulary()
ENTRIES = sorted(t for t, (kind, _) in VOCABULARY.items() if kind == "entry")
GUIDES = sorted(t for t, (kind, _) in VOCABULARY.items() if kind == "guide")


class VocabularyEmbedder(Embedder):
    """The vectors of :data:`VOCABULARY` (any other text is a test bug)."""

    name = "vocabulary"
    model = "test-vocabulary"
    dimension = DIM

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([VOCABULARY[t][1] for t in texts], dtype=np.float32)


def cosine(a: str, b: str) -> float:
    return float(np.dot(VOCABULARY[a][1], VOCABULARY[b][1]))


def polarity(text: str) -> int:
    return -1 if " not " in text else 1


def statement(text: str) -> str:
    """What ``text`` says, with function words and its negation taken out."""
    return text.replace("really ", "").replace("does not like", "likes")


@dataclass
class Row:
    """The model of one stored memory."""

    id: str
    namespace: str
    kind: str
    text: str
    slot: str | None
    created: datetime
    updated: datetime
    expires: datetime | None
    recalls: int = 0
    last_recalled: datetime | None = None
    superseded_by: str | None = None
    reinforcement: int = 1


ACTORS = st.sampled_from(["root", "alice", "bob"])
NAMESPACES = st.sampled_from(["user:alice", "user:bob"])
TTL = st.sampled_from([None, 0, 1, 10, 200])
STEPS = st.sampled_from([timedelta(hours=1), timedelta(hours=7), timedelta(days=3),
                         timedelta(days=40), timedelta(days=100)])  # fmt: skip
S = Settings()
#: Steps checked against the model, by backend (reported with -s).
CHECKED: dict[str, int] = {}
_SCHEMAS = itertools.count(1)


class MemoryMachine(RuleBasedStateMachine):
    """The store and the model, step by step."""

    ids = Bundle("ids")
    #: A PostgreSQL server URL: each run gets a schema of its own (None: SQLite).
    postgres_url: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="memchentic-model-")
        self.schema = f"model_{os.getpid()}_{next(_SCHEMAS)}"
        self.backend = "postgres" if self.postgres_url else "sqlite"
        location = os.path.join(self.tmp, "m.db")
        if self.postgres_url:
            sep = "&" if "?" in self.postgres_url else "?"
            location = f"{self.postgres_url}{sep}schema={self.schema}"
        self.mem = Memory(store=location, embedder=VocabularyEmbedder())
        self.views = {"root": self.mem, "alice": self.mem.as_identity("alice"),
                      "bob": self.mem.as_identity("bob")}  # fmt: skip
        self.now = T0
        self.rows: dict[str, Row] = {}

    def teardown(self) -> None:
        self.mem.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.postgres_url:
            import psycopg

            with psycopg.connect(self.postgres_url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

    # --- the rules of the model -----------------------------------------------------
    @staticmethod
    def can(actor: str, namespace: str) -> bool:
        return actor == "root" or namespace == f"user:{actor}"

    def live(self, row: Row) -> bool:
        return row.expires is None or row.expires > self.now

    def neighbours(self, namespace: str, kind: str, text: str) -> list[tuple[Row, float]]:
        """The write path's top 8: live, not superseded, same namespace and kind."""
        rows = [r for r in self.rows.values() if r.namespace == namespace and r.kind == kind
                and self.live(r) and r.superseded_by is None]  # fmt: skip
        scored = sorted(((r, cosine(text, r.text)) for r in rows), key=lambda p: (-p[1], p[0].id))
        return scored[: S.write_neighbours]

    def expiry(self, ttl: int | None) -> datetime | None:
        if ttl == 0:
            return None
        return self.now + timedelta(days=S.memory_default_ttl_days if ttl is None else ttl)

    def decide(self, namespace: str, text: str, slot: str | None) -> tuple[str, Row | None]:
        """(status, the existing row it concerns) of an add, per DESIGN section 4."""
        kind = VOCABULARY[text][0]
        if slot is not None:
            same = [r for r in self.rows.values() if r.namespace == namespace and r.slot == slot]
            return ("updated", same[0]) if same else ("added", None)
        near = self.neighbours(namespace, kind, text)
        if kind == "guide":
            if near and near[0][1] >= S.guide_merge_threshold:
                return "merged", near[0][0]
            return "added", None
        for row, cos in near:  # the nearest that is not another statement decides
            if cos < S.update_threshold:
                break
            same = statement(row.text) == statement(text)
            if polarity(row.text) != polarity(text):
                if same or cos >= S.contradiction_threshold:
                    return "superseded", row
            elif same or cos >= S.near_dup_threshold:
                return "refused", row
        return "added", None

    def touch(self, row: Row) -> None:
        """A recall: counted once per debounce window; the expiry slides, never shortens."""
        debounce = timedelta(hours=S.memory_ttl_touch_debounce_hours)
        if row.last_recalled is not None and self.now - row.last_recalled < debounce:
            return
        row.recalls += 1
        row.last_recalled = self.now
        if row.expires is not None:
            target = min(self.now + timedelta(days=S.memory_ttl_extend_days),
                         row.created + timedelta(days=S.memory_max_ttl_days))  # fmt: skip
            row.expires = max(row.expires, target)

    def forget(self, memory_id: str) -> None:
        del self.rows[memory_id]
        for row in self.rows.values():
            if row.superseded_by == memory_id:
                row.superseded_by = None

    # --- rules driving both -------------------------------------------------------------
    @rule(target=ids, actor=ACTORS, namespace=NAMESPACES,
          text=st.sampled_from(ENTRIES + GUIDES), ttl=TTL,
          slot=st.sampled_from([None, None, None, "profile.drink"]))  # fmt: skip
    def add(self, actor: str, namespace: str, text: str, ttl: int | None, slot: str | None):  # type: ignore[no-untyped-def]
        kind = VOCABULARY[text][0]
        call = {"namespace": namespace, "kind": kind, "slot_key": slot, "now": self.now,
                "ttl_days": ttl}  # fmt: skip
        if not self.can(actor, namespace):
            with pytest.raises(NamespaceError):
                self.views[actor].add(text, **call)
            return multiple()
        status, old = self.decide(namespace, text, slot)
        result = self.views[actor].add(text, **call)
        assert result.status == status, (result, status, old)
        if status == "refused":
            assert old is not None and result.id == old.id
            return multiple()
        if status == "merged":
            assert old is not None and result.id == old.id
            old.reinforcement += 1
            new_expiry = self.expiry(ttl)
            old.expires = None if old.expires is None or new_expiry is None else max(
                old.expires, new_expiry
            )  # fmt: skip
            return multiple()
        if status == "updated":
            assert old is not None and result.id == old.id
            old.text, old.updated = text, self.now  # the kind stays
            old.expires = self.expiry(ttl)
            return multiple()
        assert result.id is not None and result.id not in self.rows
        self.rows[result.id] = Row(result.id, namespace, kind, text, slot, self.now, self.now,
                                   self.expiry(ttl))  # fmt: skip
        if status == "superseded":
            assert old is not None and result.ids == [result.id, old.id]
            old.superseded_by = result.id
        return result.id

    @rule(actor=ACTORS, memory_id=ids, text=st.sampled_from(ENTRIES + GUIDES))
    def revise(self, actor: str, memory_id: str, text: str) -> None:
        row = self.rows.get(memory_id)
        if row is None or not self.can(actor, row.namespace):
            with pytest.raises(NotFoundError):
                self.views[actor].revise(memory_id, text, now=self.now)
            return
        result = self.views[actor].revise(memory_id, text, now=self.now)
        assert result.status == "revised"
        row.text, row.updated = text, self.now
        if row.expires is not None:
            row.expires = max(row.expires, self.now + timedelta(days=S.memory_default_ttl_days))

    @rule(actor=ACTORS, memory_id=consumes(ids))
    def delete(self, actor: str, memory_id: str) -> None:
        row = self.rows.get(memory_id)
        if row is None or not self.can(actor, row.namespace):
            with pytest.raises(NotFoundError):
                self.views[actor].delete(memory_id)
            return
        assert self.views[actor].delete(memory_id).status == "deleted"
        self.forget(memory_id)

    @rule(actor=ACTORS, memory_id=ids)
    def get(self, actor: str, memory_id: str) -> None:
        row = self.rows.get(memory_id)
        if row is None or not self.can(actor, row.namespace):
            with pytest.raises(NotFoundError):
                self.views[actor].get(memory_id, now=self.now)
            return
        assert self.views[actor].get(memory_id, now=self.now).content == row.text
        if self.live(row):  # opening an expired memory does not revive it
            self.touch(row)

    @rule(actor=ACTORS, namespace=st.sampled_from([None, "user:alice", "user:bob"]),
          query=st.sampled_from(ENTRIES + GUIDES))  # fmt: skip
    def search(self, actor: str, namespace: str | None, query: str) -> None:
        hits = self.views[actor].search(query, namespace=namespace, limit=100, now=self.now)
        ids = [h.id for h in hits]
        assert len(ids) == len(set(ids))
        for memory_id in ids:
            row = self.rows[memory_id]
            assert self.can(actor, row.namespace), "a hit the caller may not read"
            assert namespace in (None, row.namespace)
            assert self.live(row) and row.superseded_by is None, "an expired or superseded hit"
        for memory_id in ids:
            self.touch(self.rows[memory_id])

    @rule(step=STEPS)
    def advance_the_clock(self, step: timedelta) -> None:
        self.now += step

    @precondition(lambda self: bool(self.rows))
    @rule()
    def gc(self) -> None:
        report = self.mem.gc(now=self.now)
        expired_before = self.now - timedelta(days=S.memory_gc_retention_days)
        expected = set()
        for row in self.rows.values():
            if row.expires is not None and row.expires <= expired_before:
                expected.add(row.id)
            elif row.expires is not None:
                last = max(row.updated, row.last_recalled or row.updated)
                age = max(0.0, (self.now - last).total_seconds() / 86400)
                if 0.5 ** (age / S.memory_decay_half_life_days) < S.memory_decay_floor:
                    expected.add(row.id)
        assert set(report["expired"]) | set(report["decayed"]) == expected
        for memory_id in expected:
            self.forget(memory_id)

    # --- the invariant ------------------------------------------------------------------
    @invariant()
    def store_equals_model(self) -> None:
        CHECKED[self.backend] = CHECKED.get(self.backend, 0) + 1
        stored = {r.id: r for r in self.mem.store.iter_memories(EVERYTHING)}
        assert set(stored) == set(self.rows)
        for memory_id, row in self.rows.items():
            got = stored[memory_id]
            assert (got.content, got.namespace, got.kind, got.slot_key) == (
                row.text,
                row.namespace,
                row.kind,
                row.slot,
            )
            assert (got.expires_at, got.superseded_by) == (row.expires, row.superseded_by)
            assert (got.recall_count, got.reinforcement) == (row.recalls, row.reinforcement)


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=60 if LONG else 40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    print(f"\nmodel steps checked: {CHECKED}")


def test_sqlite_store_follows_the_model() -> None:
    run_state_machine_as_test(MemoryMachine, settings=_settings(1000 if LONG else 100))


def test_postgres_store_follows_the_model(request: pytest.FixtureRequest) -> None:
    try:
        url = request.getfixturevalue("postgres_url")
    except pytest.FixtureLookupError:
        pytest.skip("no PostgreSQL server fixture")

    class OnPostgres(MemoryMachine):
        postgres_url = url

    run_state_machine_as_test(OnPostgres, settings=_settings(100 if LONG else 12))
