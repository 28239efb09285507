"""The truth set's files and loader (tests/data/truth_pairs.py): shape only.

Nothing here scores the set: ``bench/truth_set.py`` does, and the held-out part only
once a change is finished.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.truth_set import context_verdict, search_verdict
from memchentic.errors import ValidationError
from tests.data import truth_pairs
from tests.data.truth_pairs import CATEGORIES, EXPECTED, TruthPair, load, normalised, parse

#: The least each category holds, in each part.
MINIMUM = {"update": 130, "negation": 70, "duplicate": 110, "additive": 100,
           "distinct": 70, "record": 40}  # fmt: skip
PARTS = ("held_out", "tune")


def _part(name: str) -> list[TruthPair]:
    pairs = load(name)
    if not pairs:
        pytest.skip(f"no {name} part yet")
    return pairs


@pytest.mark.parametrize("part", PARTS)
def test_each_category_holds_its_minimum(part: str) -> None:
    counts = Counter(p.category for p in _part(part))
    assert {c: counts[c] for c in CATEGORIES if counts[c] < MINIMUM[c]} == {}
    assert sum(counts.values()) >= 520


@pytest.mark.parametrize("part", PARTS)
def test_each_category_is_phrased_ten_ways(part: str) -> None:
    styles: dict[str, set[str]] = {}
    for p in _part(part):
        styles.setdefault(p.category, set()).add(p.style)
    assert {c: len(s) for c, s in styles.items() if len(s) < 10} == {}


@pytest.mark.parametrize("part", PARTS)
def test_ids_are_unique_and_name_their_part(part: str) -> None:
    ids = [p.id for p in _part(part)]
    assert len(ids) == len(set(ids))
    assert {i[0] for i in ids} == {truth_pairs.PARTS[part]}


def test_no_pair_is_in_both_parts() -> None:
    held_out, tune = _part("held_out"), _part("tune")
    key = lambda p: (normalised(p.old), normalised(p.new))  # noqa: E731
    assert {key(p) for p in held_out} & {key(p) for p in tune} == set()
    assert {p.id for p in held_out} & {p.id for p in tune} == set()


def test_held_out_questions_domains_and_records() -> None:
    pairs = _part("held_out")
    for p in pairs:  # every update and negation asks its question
        assert p.question is not None or p.category not in ("update", "negation"), p.id
    assert sum(p.both for p in pairs if p.category == "additive") >= 40
    assert sum(p.style == "question" for p in pairs if p.category == "distinct") >= 15
    assert len({p.domain for p in pairs}) >= 12
    assert all(p.is_record for p in pairs if p.category == "record")
    assert {p.expected for p in pairs if p.category == "record"} == {"added"}


# --- the loader ------------------------------------------------------------------------
GOOD = {"id": "t0001", "category": "update", "style": "chat", "domain": "work",
        "old": "my manager is ana", "new": "my manager is bo now", "old_options": {},
        "new_options": {}, "question": "Who is my manager?", "now": "bo",
        "before": "ana"}  # fmt: skip


def _rows(*rows: dict[str, Any]) -> list[str]:
    return [json.dumps(r) for r in rows]


def test_a_good_row_loads_with_its_label() -> None:
    (pair,) = parse(_rows(GOOD), prefix="t")
    assert (pair.id, pair.expected, pair.now, pair.both) == ("t0001", "superseded", "bo", False)
    record = {**GOOD, "category": "record", "new_options": {"type": "episodic"}}
    for key in ("question", "now", "before"):
        del record[key]
    assert parse(_rows(record))[0].expected == EXPECTED["record"] == "added"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"category": "contradiction"}, "category"),
        ({"style": "shouting"}, "style"),
        ({"old": "  "}, "old"),
        ({"new": ""}, "new"),
        ({"new": None}, "new"),
        ({"new_options": {"on_dupe": "keep"}}, "new_options.on_dupe"),
        ({"old_options": {"metadata": "user"}}, "old_options.metadata"),
        ({"new_options": []}, "new_options"),
        ({"now": "carla"}, "now"),  # not in new
        ({"before": "dana"}, "before"),  # not in old
        ({"now": "my manager"}, "now"),  # in old too: it names nothing new
        ({"both": True}, "both"),  # only on additive pairs
        ({"category": "record"}, "new_options"),  # a record without a record marker
        ({"new_options": {"on_duplicate": "keep"}}, "new_options"),  # a marker elsewhere
        ({"old_options": {"metadata": {"role": "user"}}}, "old_options"),
        ({"colour": "blue"}, "colour"),
        ({"id": "h0001"}, "id"),  # the other part's prefix
    ],
)
def test_the_loader_rejects_a_bad_row(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse(_rows(GOOD, {**GOOD, "id": "t0002", **change}), source="tune.jsonl", prefix="t")
    assert caught.value.field == f"tune.jsonl:2 {field}"


def test_the_loader_rejects_missing_keys_duplicate_ids_and_bad_json() -> None:
    missing = {k: v for k, v in GOOD.items() if k != "domain"}
    without_before = {k: v for k, v in GOOD.items() if k != "before"}
    for rows, field in (
        (_rows(missing), "domain"),
        (_rows(without_before), "before"),  # question, now and before go together
        (_rows(GOOD, GOOD), "id"),
        (_rows({**GOOD, "category": "additive"}), "both"),  # additive with a question
    ):
        with pytest.raises(ValidationError) as caught:
            parse(rows, source="x")
        assert caught.value.field.endswith(f" {field}")
    with pytest.raises(ValidationError, match="x:1"):
        parse(["{not json"], source="x")
    with pytest.raises(ValidationError, match="part"):
        load("train")


def test_a_missing_part_loads_empty_and_a_bad_file_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(truth_pairs, "ROOT", tmp_path)
    assert load("tune") == []
    bad = {**GOOD, "id": "t0002", "old_options": {"x": 1}}
    (tmp_path / "tune.jsonl").write_text("\n".join(_rows(GOOD, bad)))
    with pytest.raises(ValidationError, match=r"tune\.jsonl:2"):
        load("tune")


# --- the bench's read-time verdicts ------------------------------------------------------
UPDATE = TruthPair(old="my manager is ana", new="my manager is bo now", category="update",
                   domain="work", question="Who is my manager?", now="bo now",
                   before="ana")  # fmt: skip
BOTH = TruthPair(old="I speak Welsh.", new="I speak Hindi.", category="additive",
                 domain="personal", question="Which languages?", now="Hindi",
                 before="Welsh", both=True)  # fmt: skip


def test_search_is_true_when_the_top_hit_holds_the_new_value() -> None:
    assert search_verdict(["My manager is Bo now", "my manager is ana"], UPDATE)
    assert not search_verdict(["my manager is ana", "my manager is bo now"], UPDATE)
    assert not search_verdict([], UPDATE)
    assert search_verdict(["x", "I speak Welsh.", "i speak hindi."], BOTH)
    assert not search_verdict(["I speak Hindi."], BOTH)


def test_context_is_true_when_the_old_value_is_absent_or_marked_earlier() -> None:
    new, old = "- [2026-03-02] my manager is bo now", "- [2026-01-10] my manager is ana"
    marked = "- [2026-01-10] (earlier, until 2026-03-02) my manager is ana"
    assert context_verdict(f"## Relevant facts\n{new}", UPDATE) == (True, False)
    assert context_verdict(f"## Relevant facts\n{new}\n{marked}", UPDATE) == (True, True)
    assert context_verdict(f"## Relevant facts\n{new}\n{old}", UPDATE) == (False, False)
    assert context_verdict(f"## Relevant facts\n{marked}\n{new}", UPDATE) == (False, False)
    assert context_verdict(f"## Relevant facts\n{old}", UPDATE) == (False, False)
    assert context_verdict("- I speak Hindi.\n- I speak Welsh.", BOTH) == (True, False)
    assert context_verdict("- I speak Hindi.", BOTH) == (False, False)
