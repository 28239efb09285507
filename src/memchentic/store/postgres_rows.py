"""Row mapping and the SQL dialect of the PostgreSQL store (kept apart to keep
``postgres.py`` short). Mirrors ``sqlite_rows.py`` with native types: timestamps
are ``timestamptz``, lists and objects ``jsonb``, flags ``boolean``."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from psycopg.types.json import Jsonb

from ..errors import ValidationError
from ..metadata_filter import Condition
from ..record import MemoryRecord
from ..text import keyword_text
from .dialect import Dialect
from .metadata_sql import postgres_condition
from .tables import COLUMNS as COLUMNS  # re-exported: the rows of this backend
from .tables import EDGE_COLUMNS as EDGE_COLUMNS
from .tables import SELECT_COLUMNS as SELECT_COLUMNS
from .tables import VERSION_COLUMNS as VERSION_COLUMNS

_TIME_FIELDS = (
    "created_at", "updated_at", "valid_from", "valid_to", "expires_at", "last_recalled_at"
)  # fmt: skip
_JSON_FIELDS = ("tags", "entities", "metadata")
_WORD = re.compile(r"\w+", re.UNICODE)
_dumps = partial(json.dumps, ensure_ascii=False, default=str)


def jsonb(value: Any, field: str = "metadata") -> Jsonb:
    """A JSON parameter; PostgreSQL's ``jsonb`` cannot hold NUL characters."""
    text = _dumps(value)
    if "\\u0000" in text:
        raise ValidationError(field, "must not contain NUL characters")
    return Jsonb(value, dumps=_dumps)


def utc(value: datetime | None) -> datetime | None:
    """A timestamp as an aware UTC datetime (whatever zone the session answers in)."""
    return value.astimezone(UTC) if value is not None else None


def index_text(
    text: str | None, language: str = "english", rules: frozenset[str] | None = None
) -> str:
    """Text as the keyword index reads it: the words the query side sees
    (:func:`memchentic.text.query_words` splits on the same ``\\w+``),
    so file names, e-mail addresses and combining marks tokenise alike on both
    sides instead of as the PostgreSQL parser's compound tokens; CJK runs as
    their bigrams and the words of the keyword ``rules`` (the store's;
    :func:`memchentic.text.keyword_text`)."""
    return " ".join(_WORD.findall(keyword_text(text, language, rules))) if text else ""


def record_params(record: MemoryRecord) -> tuple[Any, ...]:
    values: dict[str, Any] = {name: getattr(record, name) for name in COLUMNS}
    values["tags"] = jsonb(list(record.tags), "tags")
    values["entities"] = jsonb(list(record.entities), "entities")
    values["metadata"] = jsonb(dict(record.metadata))
    values["confidence"] = float(record.confidence)
    values["importance"] = float(record.importance)
    values["reinforcement"] = int(record.reinforcement)
    values["polarity"] = int(record.polarity)
    values["recall_count"] = int(record.recall_count)
    values["pinned"] = bool(record.pinned)
    for name in ("content", "title", "tier_l0", "tier_l1", "path_hint", "repo", "slot_key"):
        if isinstance(values[name], str) and "\x00" in values[name]:
            raise ValidationError(name, "must not contain NUL characters")
    return tuple(values[c] for c in COLUMNS)


def tsv_params(
    record: MemoryRecord, language: str = "english", rules: frozenset[str] | None = None
) -> tuple[str, str, str]:
    """The title, body and tag text of a record's keyword entry (stemmed in the
    store's keyword ``language`` when it is not English, with its keyword ``rules``)."""
    return (
        index_text(record.title, language, rules),
        index_text(record.content, language, rules),
        index_text(" ".join(record.tags), language, rules),
    )


def row_to_record(row: tuple[Any, ...]) -> MemoryRecord:
    data = dict(zip(COLUMNS, row, strict=True))
    for name in _TIME_FIELDS:
        data[name] = utc(data[name])
    data["tags"] = list(data["tags"] or [])
    data["entities"] = list(data["entities"] or [])
    data["metadata"] = dict(data["metadata"] or {})
    return MemoryRecord(**data)


class PostgresDialect(Dialect):
    """PostgreSQL: ``%s`` parameters (so a literal ``%`` is doubled), native
    timestamps and flags, ``jsonb``, arrays for lists of values, and jsonb
    containment for tags (the GIN index answers it)."""

    name = "postgres"
    true = "TRUE"
    false = "FALSE"
    key = "key"
    record = staticmethod(row_to_record)

    @functools.lru_cache(maxsize=512)  # noqa: B019 (one instance, lives as long as the module)
    def sql(self, text: str) -> str:
        return text.replace("%", "%%").replace("?", "%s")

    def value(self, value: Any) -> Any:
        return value

    def read_time(self, value: Any) -> datetime | None:
        return utc(value)

    def json(self, value: Any, field: str = "metadata") -> Any:
        return jsonb(value, field)

    def read_json(self, value: Any) -> Any:
        return value

    def any_of(
        self, column: str, values: Sequence[Any], negate: bool = False
    ) -> tuple[str, list[Any]]:
        return (f"NOT ({column} = ANY(?))" if negate else f"{column} = ANY(?)"), [list(values)]

    def metadata_condition(self, alias: str, cond: Condition) -> tuple[str, list[Any]]:
        return postgres_condition(alias, cond)

    def decayed(self, alias: str) -> str:
        return (f"EXTRACT(EPOCH FROM ?::timestamptz - GREATEST({alias}.updated_at, "
                f"{alias}.last_recalled_at))::float8 >= ?::float8 * 86400 * "
                f"({alias}.confidence - ?::float8)")  # fmt: skip

    def all_tags(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{alias}.tags @> ?", [Jsonb(list(dict.fromkeys(tags)))]


POSTGRES = PostgresDialect()
#: The SQL condition and parameters for a filter (:meth:`Dialect.where`).
where = POSTGRES.where
