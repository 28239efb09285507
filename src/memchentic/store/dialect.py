"""What the two backends' SQL differs in, so that the rest is written once.

The store's shared SQL (:mod:`.filters`, :mod:`.tables`) is written with ``?`` for
each parameter, in the SQL both engines read alike; a :class:`Dialect` renders it
for one engine (its parameter marker, its spelling of a list of values and of a
memory's tags) and converts the values that cross the boundary (timestamps,
flags, JSON) and the rows that cross it (records; edges and versions are read
alike from those values).
``sqlite_rows.SQLITE`` and ``postgres_rows.POSTGRES`` are the two.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from ..metadata_filter import Condition
from ..record import Edge, MemoryRecord, Version
from .filters import AllTags, AnyOf, MemoryFilter, Meta, clauses
from .metadata_sql import render


class Dialect(ABC):
    """One engine's spelling of the shared SQL."""

    #: The backend's name (``sqlite``, ``postgres``).
    name: str
    #: The literals a condition that every row (no row) passes is written as.
    true: str
    false: str
    #: The memories table's integer key (``rowid``, ``key``): it grows with each
    #: insert and is what ``memory_entities.key`` (and the vector table) names.
    key: str
    #: A row of the memories' columns (``tables.COLUMNS`` order) as a record.
    record: Callable[[Any], MemoryRecord]

    @abstractmethod
    def sql(self, text: str) -> str:
        """Shared SQL (``?`` parameters) as this engine reads it."""

    @abstractmethod
    def value(self, value: Any) -> Any:
        """A parameter as this engine stores it (timestamps, flags)."""

    @abstractmethod
    def read_time(self, value: Any) -> datetime | None:
        """A stored timestamp as an aware datetime."""

    @abstractmethod
    def json(self, value: Any, field: str = "metadata") -> Any:
        """A JSON parameter (``field`` names it in an error)."""

    @abstractmethod
    def read_json(self, value: Any) -> Any:
        """A stored JSON value as Python values."""

    @abstractmethod
    def any_of(
        self, column: str, values: Sequence[Any], negate: bool = False
    ) -> tuple[str, list[Any]]:
        """``column`` holds one of ``values`` (``negate``: none of them), as shared SQL."""

    @abstractmethod
    def all_tags(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        """The memory ``alias`` carries every one of ``tags``, as shared SQL."""

    @abstractmethod
    def metadata_condition(self, alias: str, cond: Condition) -> tuple[str, list[Any]]:
        """One condition of a metadata filter on ``alias``, as shared SQL."""

    @abstractmethod
    def decayed(self, alias: str) -> str:
        """Shared SQL, true when the memory ``alias`` was last used (updated or
        recalled) at least ``? * (confidence - ?)`` days before the time ``?``; its
        three parameters come in the order (the time, days per unit of confidence,
        the floor). The engines' date arithmetic differs; this is all of it."""

    def edge(self, row: Sequence[Any]) -> Edge:
        """A row of ``tables.EDGE_COLUMNS`` as an edge."""
        edge_id, source, target, kind, strength, created_at, metadata = row
        when = self.read_time(created_at)
        assert when is not None
        meta = self.read_json(metadata) if metadata else {}
        return Edge(edge_id, source, target, kind, strength, when, meta)

    def version(self, row: Sequence[Any]) -> Version:
        """A row of ``tables.VERSION_COLUMNS`` as a version."""
        memory_id, number, op, actor, at, changes, snapshot = row
        when = self.read_time(at)
        assert when is not None
        return Version(memory_id, number, op, actor, when, self.read_json(changes),
                       self.read_json(snapshot) if snapshot else None)  # fmt: skip

    def where(self, flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
        """The SQL condition and parameters for a filter (always a valid expression),
        in this engine's SQL."""
        text, params = self.condition(flt, alias)
        return self.sql(text), params

    def condition(self, flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
        """:meth:`where` as shared SQL, for a statement rendered whole."""
        found = clauses(flt)
        if found is None:
            return self.false, []
        parts: list[str] = []
        params: list[Any] = []
        for clause in found:
            if isinstance(clause, AnyOf):
                text, values = self.any_of(f"{alias}.{clause.column}", clause.values, clause.negate)
            elif isinstance(clause, AllTags):
                text, values = self.all_tags(alias, clause.tags)
            elif isinstance(clause, Meta):
                text, values = render(clause.node, alias, self.metadata_condition)
            else:
                text, values = clause.text.format(a=alias), [self.value(v) for v in clause.params]
            parts.append(text)
            params.extend(values)
        return " AND ".join(parts) or self.true, params
