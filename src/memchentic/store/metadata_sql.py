"""A metadata filter (:mod:`memchentic.metadata_filter`) as SQL, for each engine.

The tree is walked once (:func:`render`); each engine spells one condition on one
key: SQLite reads the JSON text with ``json_type``/``json_extract``/``json_each``,
PostgreSQL the ``jsonb`` column with ``->``, ``jsonb_typeof`` and containment
(``@>``, which the GIN index on ``metadata`` serves). Every condition is a boolean
that is never NULL, so ``NOT``, ``ne`` and ``nin`` keep their reference meaning
(a missing key is not equal). ``tests/test_filters_and_scopes.py`` and
``tests/test_filter_hardening.py`` hold both engines against
:func:`memchentic.metadata_filter.matches`.

A path reaches into objects only, as the reference does: SQLite's ``$."a"."0"`` is
a key of an object, and PostgreSQL steps with ``-> 'key'`` (never ``#>``, which
would take ``0`` as an index into a list). An ``in``/``nin`` list costs one
statement parameter and one lookup per row whatever its length (SQLite:
``IN (SELECT value FROM json_each(?))``, PostgreSQL: ``= ANY(?::jsonb[])``), not
one OR'ed comparison per value.
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

    @abstractmethod
    def equal_any(self, values: list[Any]) -> Rendered:
        """Equal to one of ``values`` (two or more, of one kind: numbers or strings)."""

    def one_of(self, values: tuple[Any, ...]) -> Rendered:
        """Equal to one of ``values``: null and true/false each by their own test, the
        numbers and the strings each as one :meth:`equal_any` (a lookup per row)."""
        parts: list[Rendered] = []
        by_kind: dict[str, list[Any]] = {"number": [], "string": []}
        flags: list[Any] = []
        for value in values:
            kind = _kind(value)
            if kind in by_kind:
                if not any(_same_value(value, seen) for seen in by_kind[kind]):
                    by_kind[kind].append(value)
            elif not any(value is seen for seen in flags):
                flags.append(value)  # None, True, False
        parts.extend(self.equal(v) for v in flags)
        for same_kind in by_kind.values():
            if len(same_kind) == 1:
                parts.append(self.equal(same_kind[0]))
            elif same_kind:
                parts.append(self.equal_any(same_kind))
        text = parts[0][0] if len(parts) == 1 else "(" + " OR ".join(t for t, _ in parts) + ")"
        return text, [v for _, ps in parts for v in ps]

    def condition(self, op: str, want: Any) -> Rendered:
        if op == "exists":
            return self.exists(want)
        if op == "contains":
            return self.contains(want)
        if op in _SIGNS:
            return self.compare(_SIGNS[op], want)
        text, params = self.one_of(want) if op in ("in", "nin") else self.equal(want)
        return (f"NOT {text}" if op in ("ne", "nin") else text), params


def _same_value(a: Any, b: Any) -> bool:
    """Two values of one kind (numbers, or strings) that compare equal (1 and 1.0)."""
    return bool(a == b)


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

    def equal_any(self, values: list[Any]) -> Rendered:
        # an uncorrelated subquery: SQLite reads the list once into an index
        types = _SQLITE_TYPES[_kind(values[0])]
        return (
            f"(COALESCE(json_type({self.doc}, ?), '') IN {types} AND "
            f"json_extract({self.doc}, ?) IN (SELECT value FROM json_each(?)))",
            [self._path, self._path, json.dumps(values)],
        )


def sqlite_condition(alias: str, cond: Condition) -> Rendered:
    """One condition on SQLite's JSON text."""
    return SQLiteSpelling(alias, cond.path).condition(cond.op, cond.value)


# --- PostgreSQL ----------------------------------------------------------------------------
class PostgresSpelling(Spelling):
    """PostgreSQL's ``jsonb``: ``-> 'key'`` step by step (NULL for a missing key, and
    for a key asked of a list: ``#>`` would index the list), ``jsonb_typeof``, and
    containment (``@>``), which narrows through the GIN index before the typed check."""

    @property
    def _value(self) -> str:
        return "(" + self.doc + " -> ?::text" * len(self.path) + ")"

    @property
    def _steps(self) -> list[str]:
        """The parameters of one :attr:`_value`."""
        return list(self.path)

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
            [self._containing(value), *self._steps, json.dumps(value)],
        )

    def equal_any(self, values: list[Any]) -> Rendered:
        return self._any(values)

    def one_of(self, values: tuple[Any, ...]) -> Rendered:
        # jsonb equality tells null, true/false, numbers and strings apart itself
        return self._any(list(values)) if len(values) > 1 else self.equal(values[0])

    def _any(self, values: list[Any]) -> Rendered:
        # @> ANY: the GIN index serves it (a bitmap scan per value)
        return (
            f"({self.doc} @> ANY(?::jsonb[]) AND "
            f"COALESCE({self._value} = ANY(?::jsonb[]), false))",
            [[self._containing(v) for v in values], *self._steps,
             [json.dumps(v) for v in values]],
        )  # fmt: skip

    def exists(self, present: bool) -> Rendered:
        return f"{self._value} IS {'NOT ' if present else ''}NULL", self._steps

    def contains(self, value: Any) -> Rendered:
        steps = self._steps
        return (
            f"({self.doc} @> ?::jsonb AND COALESCE(jsonb_typeof({self._value}), '') = 'array' "
            f"AND {self._value} @> ?::jsonb)",
            [self._containing([value]), *steps, *steps, json.dumps([value])],
        )

    def compare(self, sign: str, bound: Any) -> Rendered:
        steps = self._steps
        if _kind(bound) == "number":
            kind, text = "number", f"({self._value} #>> '{{}}')::numeric"
        else:  # code-point order, as SQLite and Python compare strings
            kind, text = "string", f"({self._value} #>> '{{}}') COLLATE \"C\""
        return (
            f"(COALESCE(jsonb_typeof({self._value}), '') = '{kind}' AND {text} {sign} ?)",
            [*steps, *steps, bound],
        )


def postgres_condition(alias: str, cond: Condition) -> Rendered:
    """One condition on PostgreSQL's ``jsonb`` (``?`` parameters, rendered by the dialect)."""
    return PostgresSpelling(alias, cond.path).condition(cond.op, cond.value)
