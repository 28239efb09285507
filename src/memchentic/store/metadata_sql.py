"""A metadata filter (:mod:`memchentic.metadata_filter`) as SQL, for each engine.

The tree is walked once (:func:`render`); each engine spells one condition on one
key: SQLite reads the JSON text with ``json_type``/``json_extract``/``json_each``,
PostgreSQL the ``jsonb`` column with ``#>``, ``jsonb_typeof`` and containment
(``@>``, which the GIN index on ``metadata`` serves). Every condition is a boolean
that is never NULL, so ``NOT``, ``ne`` and ``nin`` keep their reference meaning
(a missing key is not equal). ``tests/test_filters_and_scopes.py`` holds both
engines against :func:`memchentic.metadata_filter.matches`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..metadata_filter import All, AnyOf, Condition, Node, Not

#: One condition as (shared SQL with ``?`` parameters, its parameters).
Rendered = tuple[str, list[Any]]
Spell = Callable[[str, Condition], Rendered]


def render(node: Node, alias: str, spell: Spell) -> Rendered:
    """``node`` as one SQL condition on ``{alias}.metadata``."""
    if isinstance(node, Condition):
        return spell(alias, node)
    if isinstance(node, Not):
        text, params = render(node.part, alias, spell)
        return f"NOT ({text})", params
    parts = [render(p, alias, spell) for p in node.parts]
    joiner = " AND " if isinstance(node, All) else " OR "
    assert isinstance(node, All | AnyOf)
    return "(" + joiner.join(t for t, _ in parts) + ")", [v for _, ps in parts for v in ps]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string"


# --- SQLite ------------------------------------------------------------------------------
_SQLITE_TYPES = {"number": "('integer', 'real')", "string": "('text')"}


def _sqlite_path(path: tuple[str, ...]) -> str:
    return "$" + "".join(f'."{step}"' for step in path)


def _sqlite_equal(kind_sql: str, value_sql: str, want: Any) -> Rendered:
    kind = _kind(want)
    if kind == "null":
        return f"COALESCE({kind_sql}, '') = 'null'", []
    if kind == "bool":
        return f"COALESCE({kind_sql}, '') = '{'true' if want else 'false'}'", []
    return f"(COALESCE({kind_sql}, '') IN {_SQLITE_TYPES[kind]} AND {value_sql} = ?)", [want]


def sqlite_condition(alias: str, cond: Condition) -> Rendered:
    """One condition on SQLite's JSON text."""
    doc, path = f"{alias}.metadata", _sqlite_path(cond.path)
    kind_sql, value_sql = f"json_type({doc}, ?)", f"json_extract({doc}, ?)"
    op, want = cond.op, cond.value

    def equal(value: Any) -> Rendered:
        text, params = _sqlite_equal(kind_sql, value_sql, value)
        return text, [path, *([path] if params else []), *params]

    if op == "exists":
        return f"{kind_sql} IS {'NOT ' if want else ''}NULL", [path]
    if op in ("eq", "ne"):
        text, params = equal(want)
        return (text if op == "eq" else f"NOT {text}"), params
    if op in ("in", "nin"):
        parts = [equal(v) for v in want]
        text = "(" + " OR ".join(t for t, _ in parts) + ")"
        return (text if op == "in" else f"NOT {text}"), [v for _, ps in parts for v in ps]
    if op == "contains":
        inner, params = _sqlite_equal("j.type", "j.value", want)
        return (
            f"(COALESCE({kind_sql}, '') = 'array' AND EXISTS (SELECT 1 FROM "
            f"json_each({doc}, ?) j WHERE {inner}))",
            [path, path, *params],
        )
    sign = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    types = _SQLITE_TYPES[_kind(want)]
    return f"(COALESCE({kind_sql}, '') IN {types} AND {value_sql} {sign} ?)", [path, path, want]


# --- PostgreSQL ----------------------------------------------------------------------------
def _pg_containing(path: tuple[str, ...], leaf: Any) -> str:
    """The JSON document ``{"a": {"b": leaf}}`` for ``metadata @> ...`` (the GIN index)."""
    doc: Any = leaf
    for step in reversed(path):
        doc = {step: doc}
    return json.dumps(doc)


def postgres_condition(alias: str, cond: Condition) -> Rendered:
    """One condition on PostgreSQL's ``jsonb`` (``?`` parameters, rendered by the dialect)."""
    doc, path = f"{alias}.metadata", list(cond.path)
    value_sql = f"({doc} #> ?::text[])"
    op, want = cond.op, cond.value

    def equal(value: Any) -> Rendered:
        # containment narrows through the index; the typed equality is the meaning
        # (jsonb equality: numbers by value, true is not 1)
        return (
            f"({doc} @> ?::jsonb AND COALESCE({value_sql} = ?::jsonb, false))",
            [_pg_containing(cond.path, value), path, json.dumps(value)],
        )

    if op == "exists":
        return f"{value_sql} IS {'NOT ' if want else ''}NULL", [path]
    if op in ("eq", "ne"):
        text, params = equal(want)
        return (text if op == "eq" else f"NOT {text}"), params
    if op in ("in", "nin"):
        parts = [equal(v) for v in want]
        text = "(" + " OR ".join(t for t, _ in parts) + ")"
        return (text if op == "in" else f"NOT {text}"), [v for _, ps in parts for v in ps]
    if op == "contains":
        return (
            f"({doc} @> ?::jsonb AND COALESCE(jsonb_typeof({value_sql}), '') = 'array' AND "
            f"{value_sql} @> ?::jsonb)",
            [_pg_containing(cond.path, [want]), path, path, json.dumps([want])],
        )
    sign = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    if _kind(want) == "number":
        return (
            f"(COALESCE(jsonb_typeof({value_sql}), '') = 'number' AND "
            f"({value_sql} #>> '{{}}')::numeric {sign} ?)",
            [path, path, want],
        )
    return (
        f"(COALESCE(jsonb_typeof({value_sql}), '') = 'string' AND "
        f"({value_sql} #>> '{{}}') COLLATE \"C\" {sign} ?)",
        [path, path, want],
    )
