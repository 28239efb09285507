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
from abc import ABC, abstractmethod
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


_SIGNS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


class Spelling(ABC):
    """One engine's primitives for a condition on ``{alias}.metadata`` at a path;
    :meth:`condition` turns an operator into them (written once for both)."""

    def __init__(self, alias: str, path: tuple[str, ...]) -> None:
        self.doc = f"{alias}.metadata"
        self.path = path

    @abstractmethod
    def equal(self, value: Any) -> Rendered: ...

    @abstractmethod
    def exists(self, present: bool) -> Rendered: ...

    @abstractmethod
    def contains(self, value: Any) -> Rendered: ...

    @abstractmethod
    def compare(self, sign: str, bound: Any) -> Rendered: ...

    def condition(self, op: str, want: Any) -> Rendered:
        if op == "exists":
            return self.exists(want)
        if op == "contains":
            return self.contains(want)
        if op in _SIGNS:
            return self.compare(_SIGNS[op], want)
        parts = [self.equal(v) for v in (want if op in ("in", "nin") else (want,))]
        text = parts[0][0] if len(parts) == 1 else "(" + " OR ".join(t for t, _ in parts) + ")"
        params = [v for _, ps in parts for v in ps]
        return (f"NOT {text}" if op in ("ne", "nin") else text), params


# --- SQLite ------------------------------------------------------------------------------
_SQLITE_TYPES = {"number": "('integer', 'real')", "string": "('text')"}


def _sqlite_equal(kind_sql: str, value_sql: str, want: Any) -> Rendered:
    kind = _kind(want)
    if kind == "null":
        return f"COALESCE({kind_sql}, '') = 'null'", []
    if kind == "bool":
        return f"COALESCE({kind_sql}, '') = '{'true' if want else 'false'}'", []
    return f"(COALESCE({kind_sql}, '') IN {_SQLITE_TYPES[kind]} AND {value_sql} = ?)", [want]


class SQLiteSpelling(Spelling):
    """SQLite's JSON text: ``json_type`` (NULL for a missing key), ``json_extract``."""

    @property
    def _path(self) -> str:
        return "$" + "".join(f'."{step}"' for step in self.path)

    def equal(self, value: Any) -> Rendered:
        kind_sql, value_sql = f"json_type({self.doc}, ?)", f"json_extract({self.doc}, ?)"
        text, params = _sqlite_equal(kind_sql, value_sql, value)
        return text, [self._path, *([self._path] if params else []), *params]

    def exists(self, present: bool) -> Rendered:
        return f"json_type({self.doc}, ?) IS {'NOT ' if present else ''}NULL", [self._path]

    def contains(self, value: Any) -> Rendered:
        inner, params = _sqlite_equal("j.type", "j.value", value)
        return (
            f"(COALESCE(json_type({self.doc}, ?), '') = 'array' AND EXISTS (SELECT 1 FROM "
            f"json_each({self.doc}, ?) j WHERE {inner}))",
            [self._path, self._path, *params],
        )

    def compare(self, sign: str, bound: Any) -> Rendered:
        types = _SQLITE_TYPES[_kind(bound)]
        return (
            f"(COALESCE(json_type({self.doc}, ?), '') IN {types} AND "
            f"json_extract({self.doc}, ?) {sign} ?)",
            [self._path, self._path, bound],
        )


def sqlite_condition(alias: str, cond: Condition) -> Rendered:
    """One condition on SQLite's JSON text."""
    return SQLiteSpelling(alias, cond.path).condition(cond.op, cond.value)


# --- PostgreSQL ----------------------------------------------------------------------------
class PostgresSpelling(Spelling):
    """PostgreSQL's ``jsonb``: ``#>`` (NULL for a missing key), ``jsonb_typeof``, and
    containment (``@>``), which narrows through the GIN index before the typed check."""

    @property
    def _value(self) -> str:
        return f"({self.doc} #> ?::text[])"

    def _containing(self, leaf: Any) -> str:
        """``{"a": {"b": leaf}}`` for ``metadata @> ...``."""
        doc: Any = leaf
        for step in reversed(self.path):
            doc = {step: doc}
        return json.dumps(doc)

    def equal(self, value: Any) -> Rendered:
        # jsonb equality is the meaning: numbers by value, true is not 1
        return (
            f"({self.doc} @> ?::jsonb AND COALESCE({self._value} = ?::jsonb, false))",
            [self._containing(value), list(self.path), json.dumps(value)],
        )

    def exists(self, present: bool) -> Rendered:
        return f"{self._value} IS {'NOT ' if present else ''}NULL", [list(self.path)]

    def contains(self, value: Any) -> Rendered:
        path = list(self.path)
        return (
            f"({self.doc} @> ?::jsonb AND COALESCE(jsonb_typeof({self._value}), '') = 'array' "
            f"AND {self._value} @> ?::jsonb)",
            [self._containing([value]), path, path, json.dumps([value])],
        )

    def compare(self, sign: str, bound: Any) -> Rendered:
        path = list(self.path)
        if _kind(bound) == "number":
            kind, text = "number", f"({self._value} #>> '{{}}')::numeric"
        else:  # code-point order, as SQLite and Python compare strings
            kind, text = "string", f"({self._value} #>> '{{}}') COLLATE \"C\""
        return (
            f"(COALESCE(jsonb_typeof({self._value}), '') = '{kind}' AND {text} {sign} ?)",
            [path, path, bound],
        )


def postgres_condition(alias: str, cond: Condition) -> Rendered:
    """One condition on PostgreSQL's ``jsonb`` (``?`` parameters, rendered by the dialect)."""
    return PostgresSpelling(alias, cond.path).condition(cond.op, cond.value)
