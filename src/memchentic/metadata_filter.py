"""Filters on a memory's ``metadata``: what ``search``, ``list`` and ``get_all`` take as
``filters=`` (issue 24, item 2).

A filter is a mapping; each key is a metadata key (``"a.b"`` reaches into a nested
object) and each value is what the key must hold::

    {"category": "travel"}                          equality
    {"rating": {"gte": 4, "lt": 9}}                  a range (numbers, or dates as ISO text)
    {"status": {"in": ["open", "blocked"]}}          one of
    {"status": {"ne": "done"}}                       not equal (a missing key is not equal)
    {"labels": {"contains": "urgent"}}               a list holding the value
    {"reviewed": {"exists": True}}                   the key is present
    {"AND": [{...}, {...}]}, {"OR": [...]}, {"NOT": {...}}

Several keys in one mapping must all hold. Comparison is JSON-typed: ``1`` and ``1.0``
are equal, ``"1"`` and ``1`` are not, ``True`` is not ``1``; a range compares numbers
with numbers and strings (dates as ISO-8601 text, a ``datetime`` is written as UTC ISO
text) with strings, and a value of another type never matches. :func:`parse` checks a
filter and turns it into a tree every backend renders the same way; :func:`matches`
is the reference meaning of that tree, which the backends' SQL must agree with. A
dotted key reaches into objects only: ``"a.0"`` is the key ``"0"`` of the object
``a``, never the first item of a list ``a``.

A filter's cost is bounded before any SQL runs (issue 32): at most
:data:`MAX_CONDITIONS` conditions nested :data:`MAX_DEPTH` deep, lists of at most
:data:`MAX_LIST` values, and at most ``FILTER_MAX_TERMS`` terms in all (a condition
counts one, an ``in``/``nin`` list one per value). Operands are values every
backend can hold: whole numbers within 64 bits, finite numbers, text without lone
surrogates or NUL. A filter given as JSON text (:func:`loads`) is size- and
depth-checked before it is parsed, so no parser recursion can blow up.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

from .clock import as_utc, to_text
from .errors import LimitError, ValidationError

#: Operators a condition may use, and their meaning.
OPERATORS: dict[str, str] = {
    "eq": "equal", "ne": "not equal", "in": "one of a list", "nin": "none of a list",
    "gt": "greater", "gte": "greater or equal", "lt": "less", "lte": "less or equal",
    "contains": "a list holding the value", "exists": "the key is present (true/false)",
}  # fmt: skip
RANGES = frozenset({"gt", "gte", "lt", "lte"})
#: Most conditions one filter may hold, and how deep AND/OR/NOT may nest.
MAX_CONDITIONS = 64
MAX_DEPTH = 8
MAX_LIST = 256
#: Default of ``FILTER_MAX_TERMS``: terms of one filter, all levels together.
MAX_TERMS = 1024
#: Whole numbers an operand may be (what SQLite and PostgreSQL's bigint hold).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
#: Longest filter given as JSON text (``GET /v1/memories?filters=``), and its deepest
#: nesting: AND/OR take two levels each (``{"AND": [...]}``), a condition three.
MAX_JSON_CHARS = 16_384
MAX_JSON_DEPTH = 2 * MAX_DEPTH + 4
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,64}(?:\.[A-Za-z0-9_\-]{1,64}){0,7}$")

Scalar: TypeAlias = str | int | float | bool | None


@dataclass(frozen=True, slots=True, eq=False)
class Condition:
    """``metadata[path] <op> value``. Two conditions are equal (and hash alike) only
    when their operands are of the same JSON type too: in Python ``True == 1`` and
    ``hash(True) == hash(1)``, but a filter on ``true`` is not one on ``1``, and a
    cache keyed by filters (the rows a filter passed) must not answer one for the
    other."""

    path: tuple[str, ...]
    op: str
    value: Any

    def _key(self) -> tuple[Any, ...]:
        return self.path, self.op, typed(self.value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Condition):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def typed(value: Any) -> Any:
    """``value`` with the type of each of its scalars beside it: what tells ``True``,
    ``1`` and ``1.0`` apart when compared or hashed."""
    if isinstance(value, list | tuple):
        return "list", tuple(typed(v) for v in value)
    if isinstance(value, Mapping):
        return "object", tuple(sorted((str(k), typed(v)) for k, v in value.items()))
    return type(value).__name__, value


@dataclass(frozen=True, slots=True)
class All:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    part: Node


Node: TypeAlias = Condition | All | AnyOf | Not


def parse(
    filters: Mapping[str, Any] | None, field: str = "filters", max_terms: int = MAX_TERMS
) -> Node | None:
    """The checked tree of ``filters`` (None for no filter); a :class:`ValidationError`
    naming ``field`` and the rule for anything else, a :class:`LimitError` naming
    ``FILTER_MAX_TERMS`` for a filter of more than ``max_terms`` terms."""
    if filters is None:
        return None
    count = [0]
    node = _node(filters, field, 0, count)
    terms = _terms(node)
    if terms > max_terms:
        raise _too_many(field, max_terms, terms)
    return node


def _terms(node: Node) -> int:
    """A condition counts one, an ``in``/``nin`` list one per value (what its SQL
    costs per row); walked without recursion."""
    total, todo = 0, [node]
    while todo:
        here = todo.pop()
        if isinstance(here, Condition):
            total += len(here.value) if here.op in ("in", "nin") else 1
        elif isinstance(here, Not):
            todo.append(here.part)
        else:
            todo.extend(here.parts)
    return total


def _too_many(field: str, limit: int, got: int) -> LimitError:
    exc = LimitError(field, "FILTER_MAX_TERMS", limit, got)
    exc.rule = (
        f"at most {limit} terms in one filter (FILTER_MAX_TERMS; a condition counts one, "
        f"an in/nin list one per value), got {got}"
    )
    exc.message = f"{field}: {exc.rule}"
    exc.args = (exc.message,)
    return exc


def loads(text: str | None, field: str = "filters") -> dict[str, Any] | None:
    """A filter given as JSON text (a query string's ``filters``), or None. Its length
    and nesting are checked before it is parsed (a JSON parser recurses: 3,000
    ``[`` would exhaust Python's stack); then :func:`parse` checks the rest."""
    if text is None:
        return None
    if len(text) > MAX_JSON_CHARS:
        raise ValidationError(field, f"must be at most {MAX_JSON_CHARS} characters of JSON")
    depth = most = 0
    for run in _NOT_BRACKET.split(_JSON_STRING.sub("", text)):
        for bracket in run:
            depth += 1 if bracket in "[{" else -1
            if depth > most:
                most = depth
                if most > MAX_JSON_DEPTH:
                    raise ValidationError(field, f"must be nested at most {MAX_JSON_DEPTH} deep")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ValidationError(field, "must be a JSON object") from None
    if not isinstance(value, dict):
        raise ValidationError(field, "must be a JSON object")
    return value


def _node(value: Any, where: str, depth: int, count: list[int]) -> Node:
    if depth > MAX_DEPTH:
        raise ValidationError(where, f"AND/OR/NOT nest at most {MAX_DEPTH} deep")
    if not isinstance(value, Mapping) or not value:
        raise ValidationError(where, "must be a non-empty mapping of metadata keys")
    parts: list[Node] = []
    for key, wanted in value.items():
        if not isinstance(key, str):
            raise ValidationError(where, "keys must be strings")
        here = f"{where}.{_label(key)}"
        if key in ("AND", "OR"):
            if not isinstance(wanted, Sequence) or isinstance(wanted, str) or not wanted:
                raise ValidationError(here, "must be a non-empty list of filters")
            inner = tuple(_node(w, f"{here}[{i}]", depth + 1, count) for i, w in enumerate(wanted))
            parts.append(All(inner) if key == "AND" else AnyOf(inner))
        elif key == "NOT":
            parts.append(Not(_node(wanted, here, depth + 1, count)))
        else:
            if not _KEY.match(key):
                raise ValidationError(
                    here, "a metadata key is letters, digits, '_' or '-' (dots reach inside)"
                )
            parts.extend(_conditions(tuple(key.split(".")), wanted, here, count))
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _label(key: Any) -> str:
    """A caller's key as it may appear in an error's field: printable ASCII (a lone
    surrogate could not even be sent back as JSON), at most 80 characters."""
    text = str(key)
    if not text.isascii() or not text.isprintable():
        text = text.encode("ascii", "backslashreplace").decode("ascii")
    return text if len(text) <= 80 else text[:77] + "..."


def _conditions(path: tuple[str, ...], wanted: Any, where: str, count: list[int]) -> list[Node]:
    if isinstance(wanted, Mapping):
        if not wanted:
            raise ValidationError(where, "an operator mapping must not be empty")
        ops = dict(wanted)
    else:
        ops = {"eq": wanted}
    out: list[Node] = []
    for op, value in ops.items():
        count[0] += 1
        if count[0] > MAX_CONDITIONS:
            raise ValidationError(where, f"at most {MAX_CONDITIONS} conditions in one filter")
        if op not in OPERATORS:
            known = ", ".join(OPERATORS)
            raise ValidationError(f"{where}.{_label(op)}", f"unknown operator; use one of {known}")
        out.append(Condition(path, op, _operand(op, value, f"{where}.{op}")))
    return out


def _operand(op: str, value: Any, where: str) -> Any:
    if op == "exists":
        if not isinstance(value, bool):
            raise ValidationError(where, "must be true or false")
        return value
    if op in ("in", "nin"):
        if not isinstance(value, Sequence) or isinstance(value, str) or not value:
            raise ValidationError(where, "must be a non-empty list of values")
        if len(value) > MAX_LIST:
            raise ValidationError(where, f"at most {MAX_LIST} values")
        return tuple(_scalar(v, where) for v in value)
    if op in RANGES:
        if isinstance(value, datetime):
            return to_text(as_utc(value, where))
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValidationError(where, "a range takes a number, or a date as ISO text")
        return _scalar(value, where)
    return _scalar(value, where)


def _scalar(value: Any, where: str) -> Scalar:
    if isinstance(value, datetime):
        return to_text(as_utc(value, where))
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value, where)
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise ValidationError(where, "must be a whole number within 64 bits (-2**63..2**63-1)")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(where, "must be a finite number")
        return float(value)
    raise ValidationError(where, "must be a string, number, true/false or null")


def _text(value: str, where: str) -> str:
    """Text every backend can hold: valid Unicode (no lone surrogates), no NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(where, "must be valid Unicode text (no lone surrogates)") from None
    if "\x00" in value:
        raise ValidationError(where, "must not contain NUL characters")
    return str(value)


# --- the reference meaning ---------------------------------------------------------------
_MISSING = object()


def lookup(metadata: Mapping[str, Any], path: Sequence[str]) -> Any:
    """``metadata`` at ``path``, or a marker object when a step is missing."""
    value: Any = metadata
    for step in path:
        if not isinstance(value, Mapping) or step not in value:
            return _MISSING
        value = value[step]
    return value


def same(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value, never a bool against a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _ordered(stored: Any, bound: Any) -> bool:
    numbers = (int, float)
    if isinstance(stored, bool) or isinstance(bound, bool):
        return False
    if isinstance(bound, numbers):
        return isinstance(stored, numbers)
    return isinstance(stored, str) and isinstance(bound, str)


def _holds(cond: Condition, metadata: Mapping[str, Any]) -> bool:
    stored = lookup(metadata, cond.path)
    op, want = cond.op, cond.value
    if op == "exists":
        return (stored is not _MISSING) is want
    if op == "ne":
        return stored is _MISSING or not same(stored, want)
    if op == "nin":
        return stored is _MISSING or not any(same(stored, w) for w in want)
    if stored is _MISSING:
        return False
    if op == "eq":
        return same(stored, want)
    if op == "in":
        return any(same(stored, w) for w in want)
    if op == "contains":
        return isinstance(stored, list) and any(same(item, want) for item in stored)
    if not _ordered(stored, want):
        return False
    if op == "gt":
        return bool(stored > want)
    if op == "gte":
        return bool(stored >= want)
    if op == "lt":
        return bool(stored < want)
    return bool(stored <= want)


def matches(node: Node | None, metadata: Mapping[str, Any]) -> bool:
    """Whether a memory with ``metadata`` passes the filter ``node``."""
    if node is None:
        return True
    if isinstance(node, Condition):
        return _holds(node, metadata)
    if isinstance(node, All):
        return all(matches(p, metadata) for p in node.parts)
    if isinstance(node, AnyOf):
        return any(matches(p, metadata) for p in node.parts)
    return not matches(node.part, metadata)
