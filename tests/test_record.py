"""The record's JSON form and its SQLite row: the shapes versions, events and rows store."""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memchentic.clock import to_text
from memchentic.record import MemoryRecord
from memchentic.store.sqlite_rows import COLUMNS, record_params, row_to_record, to_json

NOW = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def full_record() -> MemoryRecord:
    """A record with a distinct value in every field."""
    return MemoryRecord(
        id="01J0000000000000000000000A", namespace="user:ann", content="Ann moved to Oslo.",
        kind="guide", type="fact", title="move", tier_l0="l0", tier_l1="l1",
        tags=["home", "Ørsta"], path_hint="src/app", repo="acme/app", entities=["Ann", "Oslo"],
        slot_key="home", user_id="ann", agent_id="bot", session_id="s1", confidence=0.75,
        reinforcement=3, importance=0.25, polarity=-1, pinned=True, created_at=NOW,
        updated_at=NOW + timedelta(seconds=1), valid_from=NOW - timedelta(days=1),
        valid_to=NOW + timedelta(days=2), expires_at=NOW + timedelta(days=90),
        recall_count=4, last_recalled_at=NOW + timedelta(hours=1),
        metadata={"a": [1, {"b": "ü"}], "n": None}, superseded_by="01J0000000000000000000000B",
    )  # fmt: skip


def generic_to_dict(record: MemoryRecord) -> dict[str, object]:
    """The JSON form computed the slow, generic way, field by field."""
    out: dict[str, object] = {}
    for f in fields(MemoryRecord):
        value = getattr(record, f.name)
        out[f.name] = to_text(value) if isinstance(value, datetime) else json.loads(
            json.dumps(value)
        )  # fmt: skip
    return out


@pytest.mark.parametrize("record", [full_record(), MemoryRecord("x", "ns", "body")])
def test_to_dict_has_every_field_in_order(record: MemoryRecord):
    got = record.to_dict()
    assert list(got) == [f.name for f in fields(MemoryRecord)]
    assert got == generic_to_dict(record)


def test_to_dict_copies_lists_and_dicts():
    record = full_record()
    got = record.to_dict()
    got["tags"].append("x")  # type: ignore[attr-defined]
    got["metadata"]["a"][1]["b"] = "changed"  # type: ignore[index]
    assert record.tags == ["home", "Ørsta"]
    assert record.metadata["a"][1] == {"b": "ü"}


def test_time_text_is_utc_and_fixed_width():
    oslo = timezone(timedelta(hours=1))
    assert to_text(NOW) == "2026-03-04T05:06:07.891011+00:00"
    assert to_text(NOW.astimezone(oslo)) == to_text(NOW)
    assert to_text(NOW.replace(microsecond=0)) == "2026-03-04T05:06:07.000000+00:00"
    assert to_text(NOW.astimezone(oslo).replace(microsecond=0)) == to_text(
        NOW.replace(microsecond=0)
    )
    assert to_text(None) is None


@pytest.mark.parametrize(
    "value",
    [[], {}, ["a", "b"], ["é", 'quo"te', "back\\slash", "\n"], [1, "a"], ["a", ["b"]],
     {"k": [1.5, None, True]}, ("t",), "text", None, [float("nan")]],
)  # fmt: skip
def test_to_json_is_json_dumps(value: object):
    assert to_json(value) == json.dumps(value, ensure_ascii=False)


def test_record_params_follow_the_columns():
    record = full_record()
    params = dict(zip(COLUMNS, record_params(record), strict=True))
    snapshot = record.to_dict()
    for name in COLUMNS:
        expected = snapshot[name]
        if name in ("tags", "entities", "metadata"):
            expected = json.dumps(expected, ensure_ascii=False)
        elif name == "pinned":
            expected = 1
        assert params[name] == expected, name
    assert row_to_record(record_params(record)) == record
