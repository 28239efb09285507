"""Metadata filters: the checks of ``parse`` and the reference meaning ``matches``
(the backends' SQL is held against it in the conformance tests)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memchentic.errors import ValidationError
from memchentic.metadata_filter import All, AnyOf, Condition, Not, matches, parse

DOC = {
    "category": "travel",
    "rating": 4,
    "score": 0.5,
    "flag": True,
    "labels": ["urgent", "home"],
    "when": "2024-07-02T10:00:00Z",
    "owner": {"team": "ops", "level": 2},
    "empty": None,
}


def passes(filters: dict) -> bool:
    return matches(parse(filters), DOC)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"category": "travel"}, True),
        ({"category": "work"}, False),
        ({"rating": 4.0}, True),  # numbers by value
        ({"rating": "4"}, False),  # JSON-typed: a string is not a number
        ({"flag": True}, True),
        ({"flag": 1}, False),  # true is not 1
        ({"rating": True}, False),
        ({"empty": None}, True),
        ({"missing": None}, False),
        ({"rating": {"gte": 4, "lt": 5}}, True),
        ({"rating": {"gt": 4}}, False),
        ({"score": {"lte": 0.5}}, True),
        ({"category": {"gt": 3}}, False),  # a string never compares with a number
        ({"when": {"gte": "2024-07-01"}}, True),  # dates as ISO text
        ({"when": {"lt": datetime(2024, 7, 2, 9, tzinfo=UTC)}}, False),
        ({"category": {"in": ["work", "travel"]}}, True),
        ({"category": {"nin": ["work", "travel"]}}, False),
        ({"missing": {"nin": ["x"]}}, True),
        ({"category": {"ne": "work"}}, True),
        ({"missing": {"ne": "x"}}, True),  # a missing key is not equal
        ({"labels": {"contains": "urgent"}}, True),
        ({"labels": {"contains": "work"}}, False),
        ({"category": {"contains": "t"}}, False),  # contains is for lists
        ({"owner.team": "ops"}, True),
        ({"owner.level": {"gte": 2}}, True),
        ({"owner.none": {"exists": True}}, False),
        ({"owner": {"exists": True}}, True),
        ({"missing": {"exists": False}}, True),
        ({"category": "travel", "rating": 5}, False),  # keys of one mapping all hold
        ({"OR": [{"rating": 5}, {"category": "travel"}]}, True),
        ({"AND": [{"rating": 4}, {"NOT": {"flag": True}}]}, False),
        ({"NOT": {"category": "work"}}, True),
    ],
)
def test_the_reference_meaning(filters: dict, expected: bool) -> None:
    assert passes(filters) is expected


def test_the_tree_is_what_the_filter_says() -> None:
    tree = parse({"OR": [{"a": 1}, {"NOT": {"b": {"in": ["x", "y"]}}}], "c.d": {"gte": 2}})
    assert tree == All((
        AnyOf((Condition(("a",), "eq", 1), Not(Condition(("b",), "in", ("x", "y"))))),
        Condition(("c", "d"), "gte", 2),
    ))  # fmt: skip
    assert parse(None) is None


@pytest.mark.parametrize(
    ("filters", "field", "rule"),
    [
        ({"rating": {"between": [1, 2]}}, "filters.rating.between", "unknown operator"),
        ({"rating": {"gt": [1]}}, "filters.rating.gt", "a range takes a number"),
        ({"rating": {"gt": True}}, "filters.rating.gt", "a range takes a number"),
        ({"status": {"in": []}}, "filters.status.in", "non-empty list"),
        ({"status": {"in": "open"}}, "filters.status.in", "non-empty list"),
        ({"status": {"exists": "yes"}}, "filters.status.exists", "true or false"),
        ({"status": {}}, "filters.status", "must not be empty"),
        ({"status": {"eq": {"nested": 1}}}, "filters.status.eq", "must be a string, number"),
        ({"rating": float("nan")}, "filters.rating.eq", "finite"),
        ({"bad key!": 1}, "filters.bad key!", "a metadata key is"),
        ({"AND": {"a": 1}}, "filters.AND", "non-empty list of filters"),
        ({"OR": []}, "filters.OR", "non-empty list of filters"),
        ({"NOT": "a"}, "filters.NOT", "non-empty mapping"),
        ({}, "filters", "non-empty mapping"),
    ],
)
def test_bad_filters_name_the_field_and_the_rule(filters: dict, field: str, rule: str) -> None:
    with pytest.raises(ValidationError) as raised:
        parse(filters)
    assert raised.value.field == field
    assert rule in str(raised.value)


def test_a_filter_is_bounded() -> None:
    """A caller cannot make one filter arbitrarily costly."""
    with pytest.raises(ValidationError, match="at most 64 conditions"):
        parse({"OR": [{f"k{i}": i} for i in range(65)]})
    deep: dict = {"a": 1}
    for _ in range(9):
        deep = {"NOT": deep}
    with pytest.raises(ValidationError, match="nest at most"):
        parse(deep)
    with pytest.raises(ValidationError, match="at most 256 values"):
        parse({"a": {"in": list(range(257))}})
