"""Row mapping and filter SQL for the PostgreSQL store (kept apart to keep
``postgres.py`` short). Mirrors ``sqlite_rows.py`` with native types: timestamps
are ``timestamptz``, lists and objects ``jsonb``, flags ``boolean``."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from functools import partial
from typing import Any

from psycopg.types.json import Jsonb

from ..errors import ValidationError
from ..record import Edge, MemoryRecord, Version
from ..text import folder
from .base import MemoryFilter

#: Columns in insert order (``key`` is assigned by PostgreSQL, ``tsv`` by the store).
COLUMNS: tuple[str, ...] = (
    "id", "namespace", "kind", "type", "content", "title", "tier_l0", "tier_l1", "tags",
    "path_hint", "repo", "entities", "slot_key", "user_id", "agent_id", "session_id",
    "confidence", "reinforcement", "importance", "polarity", "pinned", "created_at",
    "updated_at", "valid_from", "valid_to", "expires_at", "recall_count",
    "last_recalled_at", "superseded_by", "metadata",
)  # fmt: skip
SELECT_COLUMNS = ", ".join(f"m.{c}" for c in COLUMNS)
EDGE_COLUMNS = "id, source, target, kind, strength, created_at, metadata"
VERSION_COLUMNS = "memory_id, version, op, actor, at, changes, snapshot"
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


def index_text(text: str | None) -> str:
    """Text as the keyword index reads it: the words the query side sees
    (:func:`memchentic.text.query_words` splits on the same ``\\w+``),
    so file names, e-mail addresses and combining marks tokenise alike on both
    sides instead of as the PostgreSQL parser's compound tokens."""
    return " ".join(_WORD.findall(text)) if text else ""


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


def tsv_params(record: MemoryRecord) -> tuple[str, str, str]:
    """The title, body and tag text of a record's keyword entry."""
    return index_text(record.title), index_text(record.content), index_text(" ".join(record.tags))


def row_to_record(row: tuple[Any, ...]) -> MemoryRecord:
    data = dict(zip(COLUMNS, row, strict=True))
    for name in _TIME_FIELDS:
        data[name] = utc(data[name])
    data["tags"] = list(data["tags"] or [])
    data["entities"] = list(data["entities"] or [])
    data["metadata"] = dict(data["metadata"] or {})
    return MemoryRecord(**data)


def row_to_edge(row: tuple[Any, ...]) -> Edge:
    edge_id, source, target, kind, strength, created_at, metadata = row
    return Edge(edge_id, source, target, kind, strength, utc(created_at), metadata or {})  # type: ignore[arg-type]


def row_to_version(row: tuple[Any, ...]) -> Version:
    memory_id, version, op, actor, at, changes, snapshot = row
    return Version(memory_id, version, op, actor, utc(at), changes, snapshot)  # type: ignore[arg-type]


def where(flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    """The SQL condition and parameters for a filter (always a valid expression)."""
    a = alias
    parts: list[str] = []
    params: list[Any] = []
    if flt.namespaces is not None:
        if not flt.namespaces:
            return "FALSE", []
        parts.append(f"{a}.namespace = ANY(%s)")
        params.append(list(flt.namespaces))
    if flt.types:
        parts.append(f"{a}.type = ANY(%s)")
        params.append(list(flt.types))
    if flt.kinds:
        parts.append(f"{a}.kind = ANY(%s)")
        params.append(list(flt.kinds))
    if flt.tags:  # every tag: jsonb containment (the GIN index answers it)
        parts.append(f"{a}.tags @> %s")
        params.append(Jsonb(list(dict.fromkeys(flt.tags))))
    if flt.path_hint is not None:
        # A memory applies when its path hint is empty or lies on the same path, by
        # whole segments (signals.paths_match): equal, its hint a folder of the
        # query's path, or the query's path a folder of its hint.
        q = flt.path_hint
        parts.append(
            f"({a}.path_hint IS NULL OR {a}.path_hint = '' OR {a}.path_hint = %s OR "
            f"left(%s, length({a}.path_hint) + 1) = {a}.path_hint || '/' OR "
            f"(right({a}.path_hint, 1) = '/' AND left(%s, length({a}.path_hint)) "
            f"= {a}.path_hint) OR left({a}.path_hint, length(%s)) = %s)"
        )
        params.extend([q, q, q, folder(q), folder(q)])
    if flt.repo is not None:
        parts.append(f"({a}.repo IS NULL OR {a}.repo = '' OR {a}.repo = %s)")
        params.append(flt.repo)
    if flt.user_id is not None:
        parts.append(f"{a}.user_id = %s")
        params.append(flt.user_id)
    if flt.agent_id is not None:
        parts.append(f"({a}.agent_id IS NULL OR {a}.agent_id = %s)")
        params.append(flt.agent_id)
    if flt.slot_prefix is not None:
        parts.append(f"left({a}.slot_key, length(%s)) = %s")
        params.extend([flt.slot_prefix, flt.slot_prefix])
    if not flt.include_expired and flt.now is not None:
        parts.append(f"({a}.expires_at IS NULL OR {a}.expires_at > %s)")
        params.append(flt.now)
    if not flt.include_superseded and flt.as_of is None:
        parts.append(f"{a}.superseded_by IS NULL")
    elif not flt.include_superseded:  # as of then: unless what superseded it did not
        # hold then (graph/supersession.py; issue 20, item 12)
        parts.append(
            f"({a}.superseded_by IS NULL OR NOT EXISTS (SELECT 1 FROM memories sup "
            f"WHERE sup.id = {a}.superseded_by AND "
            "COALESCE(sup.valid_from, sup.created_at) <= %s AND "
            "(sup.valid_to IS NULL OR sup.valid_to > %s)))"
        )
        params.extend([flt.as_of, flt.as_of])
    if flt.as_of is not None:
        parts.append(
            f"(COALESCE({a}.valid_from, {a}.created_at) <= %s AND "
            f"({a}.valid_to IS NULL OR {a}.valid_to > %s))"
        )
        params.extend([flt.as_of, flt.as_of])
    if flt.pinned is not None:
        parts.append(f"{a}.pinned = %s")
        params.append(bool(flt.pinned))
    if flt.created_after is not None:
        parts.append(f"{a}.created_at >= %s")
        params.append(flt.created_after)
    if flt.created_before is not None:
        parts.append(f"{a}.created_at < %s")
        params.append(flt.created_before)
    if flt.exclude_ids:
        parts.append(f"NOT ({a}.id = ANY(%s))")
        params.append(list(flt.exclude_ids))
    return (" AND ".join(parts) or "TRUE"), params
