"""The Python copies of the SQL's decisions on metadata filters agree with the SQL
(issue: ``True == 1`` in the isolated filter state).

The isolated search of the SQLite store keeps the rows a filter passed and answers
an *equal* filter with them; in Python ``{"flag": True} == {"flag": 1}`` and
``hash(True) == hash(1)``, so after ``filters={"flag": True}`` ran, ``{"flag": 1}``
got the memory whose flag is ``true``. The SQL tells them apart, and so does
:func:`memchentic.metadata_filter.matches`, the reference meaning.

Here, on generated values (booleans, integers, floats, nulls, strings of digits,
nested objects, lists, a missing key) and generated filters, each run after its
twins (the same filter with ``True``/``1``/``1.0``, ``False``/``0`` swapped, so a
cache keyed by a filter that equals it in Python is there to answer): the rows the
store's isolated path passes (cached on SQLite), the rows its plain SQL lists, and
:func:`matches` are the same rows, on both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memchentic import Memory
from memchentic.clock import utcnow
from memchentic.errors import ValidationError
from memchentic.metadata_filter import OPERATORS, RANGES, matches, parse
from memchentic.store.base import MemoryFilter

#: What the stored metadata holds at ``v`` and ``o.a``: every JSON type, and values
#: Python finds equal across types (True, 1, 1.0; False, 0).
STORED: list[Any] = [True, False, 1, 0, 1.0, 2.5, -3, 10**12, None, "1", "0", "true", "2.5",
                     "", "a", {"a": 1}, {"a": True}, [1, 2], [True], ["1"], [], [None]]  # fmt: skip
#: Operands a filter may take.
SCALARS: list[Any] = [True, False, 1, 0, 1.0, 0.0, 2, 2.5, -3, 10**12, None, "1", "0", "true",
                      "2.5", "", "a"]  # fmt: skip
#: Python-equal stand-ins of another JSON type (keyed by type too: as a dict's keys,
#: True and 1 are one key).
TWINS: dict[tuple[type, Any], list[Any]] = {
    (bool, True): [1, 1.0], (bool, False): [0, 0.0], (int, 1): [True, 1.0], (int, 0): [False, 0.0]
}  # fmt: skip


def _twins(value: Any) -> list[Any]:
    """``value``, then each way of swapping it for a Python-equal value of another type."""
    if isinstance(value, tuple | list):
        out = [list(value)]
        for i, item in enumerate(value):
            out += [[*value[:i], t, *value[i + 1 :]] for t in _twins(item)[1:]]
        return out
    if isinstance(value, dict):
        out = [value]
        for key, item in value.items():
            out += [{**value, key: t} for t in _twins(item)[1:]]
        return out
    if value is None or isinstance(value, str | float):
        return [value]
    return [value, *TWINS.get((type(value), value), [])]


@pytest.fixture
def stored(make_mem: Callable[..., Memory]) -> Iterator[tuple[Memory, dict[str, Any]]]:
    """alice's memories, one per stored value (at ``v`` and at ``o.a``), and one without
    either key: the Memory and each memory's metadata by id."""
    mem = make_mem()
    mem.directory.create_identity("alice")
    alice = mem.for_identity("alice")
    metadata: dict[str, Any] = {}
    for n, value in enumerate([*STORED, "missing"]):
        md = {} if value == "missing" else {"v": value, "o": {"a": value}, "n": n}
        got = alice.add(f"note {n} about the garden", metadata=md, on_duplicate="keep")
        assert got.id is not None
        metadata[str(got.id)] = md
    yield mem, metadata


def _passed(mem: Memory, filters: dict[str, Any]) -> tuple[set[str], set[str], MemoryFilter]:
    """The ids alice's isolated path passes (its vector stage: every visible row,
    the kept rows of an equal filter on SQLite) and those its SQL lists."""
    alice = mem.for_identity("alice")
    flt: MemoryFilter = alice._read_filter(  # type: ignore[attr-defined]
        user_id=None, agent_id=None, namespace=None, now=utcnow(), filters=filters
    )
    assert flt.isolated
    store: Any = mem.store
    vector = mem.embedder.embed("note about the garden")
    isolated = {memory_id for memory_id, _ in store.vector_search(vector, 100, flt)}
    listed = {r.id for r in store.list_memories(replace(flt, isolated=False), limit=100)}
    return isolated, listed, flt


def test_true_and_1_are_told_apart_after_a_filter_ran(
    stored: tuple[Memory, dict[str, Any]],
) -> None:
    mem, metadata = stored
    alice = mem.for_identity("alice")
    flag_true = {i for i, md in metadata.items() if md.get("v") is True}
    flag_one = {i for i, md in metadata.items() if md.get("v") == 1 and type(md["v"]) is not bool}
    assert len(flag_true) == 1 and len(flag_one) == 2  # 1 and 1.0 (equal as JSON numbers)
    for _ in range(2):
        got = alice.search("note garden", filters={"v": True}, limit=50)
        assert {h.id for h in got} == flag_true
    assert {h.id for h in alice.search("note garden", filters={"v": 1}, limit=50)} == flag_one
    assert {h.id for h in alice.search("note garden", filters={"v": True}, limit=50)} == flag_true
    for filters, wanted in (({"v": {"in": [True]}}, flag_true), ({"v": {"in": [1]}}, flag_one),
                            ({"v": {"ne": 1}}, set(metadata) - flag_one)):  # fmt: skip
        isolated, listed, _ = _passed(mem, filters)
        assert isolated == listed == {i for i in wanted if "v" in metadata[i] or "ne" in
                                      str(filters)}  # fmt: skip


def _condition() -> st.SearchStrategy[dict[str, Any]]:
    key = st.sampled_from(["v", "o.a", "o"])
    scalar = st.sampled_from(SCALARS)

    @st.composite
    def build(draw: Any) -> dict[str, Any]:
        op = draw(st.sampled_from(sorted(OPERATORS)))
        if op == "exists":
            value: Any = draw(st.booleans())
        elif op in ("in", "nin"):
            value = draw(st.lists(scalar, min_size=1, max_size=3))
        elif op in RANGES:
            value = draw(st.sampled_from([v for v in SCALARS if not isinstance(v, bool | None)]))
        else:
            value = draw(scalar)
        return {draw(key): value if op == "eq" and draw(st.booleans()) else {op: value}}

    return build()


FILTERS = st.recursive(
    _condition(),
    lambda inner: st.one_of(
        st.builds(lambda parts: {"AND": parts}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda parts: {"OR": parts}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda part: {"NOT": part}, inner),
    ),
    max_leaves=4,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(filters=FILTERS)
def test_the_isolated_path_the_sql_and_matches_agree_on_generated_filters(
    stored: tuple[Memory, dict[str, Any]], filters: dict[str, Any]
) -> None:
    mem, metadata = stored
    for twin in _twins(filters):
        try:
            parse(twin)
        except ValidationError:  # (exists takes true or false only)
            continue
        isolated, listed, flt = _passed(mem, twin)
        expected = {i for i, md in metadata.items() if matches(flt.metadata, md)}
        assert flt.metadata == parse(twin)
        assert listed == expected, twin
        assert isolated == expected, twin
