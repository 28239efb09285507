"""Row mapping and filter SQL for the SQLite store (kept apart to keep ``sqlite.py`` short)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from ..clock import from_text, to_text
from ..record import Edge, MemoryRecord, Version
from ..text import folder
from .base import MemoryFilter

#: Columns in insert order (``rowid`` is assigned by SQLite).
COLUMNS: tuple[str, ...] = (
    "id", "namespace", "kind", "type", "content", "title", "tier_l0", "tier_l1", "tags",
    "path_hint", "repo", "entities", "slot_key", "user_id", "agent_id", "session_id",
    "confidence", "reinforcement", "importance", "polarity", "pinned", "created_at",
    "updated_at", "valid_from", "valid_to", "expires_at", "recall_count",
    "last_recalled_at", "superseded_by", "metadata",
)  # fmt: skip
SELECT_COLUMNS = ", ".join(f"m.{c}" for c in COLUMNS)


#: ``json.dumps(value, ensure_ascii=False)``, without building an encoder a call.
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_quote = json.encoder.encode_basestring  # what that encoder quotes strings with


def to_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, with shortcuts for what most rows
    hold: empty lists and dicts, and lists of strings (tags, entities)."""
    kind = type(value)
    if kind is list:
        if all(type(item) is str for item in value):
            return "[" + ", ".join(map(_quote, value)) + "]"
    elif kind is dict and not value:
        return "{}"
    return _ENCODER.encode(value)


def record_params(record: MemoryRecord) -> tuple[Any, ...]:
    """The record's values in :data:`COLUMNS` order (written out: on every insert)."""
    r = record
    return (
        r.id, r.namespace, r.kind, r.type, r.content, r.title, r.tier_l0, r.tier_l1,
        to_json(r.tags), r.path_hint, r.repo, to_json(r.entities), r.slot_key, r.user_id,
        r.agent_id, r.session_id, float(r.confidence), int(r.reinforcement),
        float(r.importance), int(r.polarity), 1 if r.pinned else 0, to_text(r.created_at),
        to_text(r.updated_at), to_text(r.valid_from), to_text(r.valid_to),
        to_text(r.expires_at), int(r.recall_count), to_text(r.last_recalled_at),
        r.superseded_by, to_json(r.metadata),
    )  # fmt: skip


def _json(text: str | None, empty: type[list[Any]] | type[dict[str, Any]]) -> Any:
    # Most rows hold no tags, entities or metadata: skip the parser for those.
    return empty() if not text or text in ("[]", "{}") else json.loads(text)


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def row_to_record(row: sqlite3.Row | tuple[Any, ...]) -> MemoryRecord:
    """A row in :data:`COLUMNS` order as a record (on every search's candidates:
    unpacked by position, not through a dict)."""
    (id_, namespace, kind, type_, content, title, tier_l0, tier_l1, tags, path_hint, repo,
     entities, slot_key, user_id, agent_id, session_id, confidence, reinforcement,
     importance, polarity, pinned, created_at, updated_at, valid_from, valid_to, expires_at,
     recall_count, last_recalled_at, superseded_by, metadata) = row  # fmt: skip
    return MemoryRecord(
        id=id_, namespace=namespace, content=content, kind=kind, type=type_, title=title,
        tier_l0=tier_l0, tier_l1=tier_l1, tags=_json(tags, list), path_hint=path_hint,
        repo=repo, entities=_json(entities, list), slot_key=slot_key, user_id=user_id,
        agent_id=agent_id, session_id=session_id, confidence=confidence,
        reinforcement=reinforcement, importance=importance, polarity=polarity,
        pinned=bool(pinned), created_at=_time(created_at), updated_at=_time(updated_at),
        valid_from=_time(valid_from), valid_to=_time(valid_to), expires_at=_time(expires_at),
        recall_count=recall_count, last_recalled_at=_time(last_recalled_at),
        metadata=_json(metadata, dict), superseded_by=superseded_by,
    )  # fmt: skip


def row_to_edge(row: tuple[Any, ...]) -> Edge:
    edge_id, source, target, kind, strength, created_at, metadata = row
    created = from_text(created_at)
    assert created is not None
    return Edge(edge_id, source, target, kind, strength, created, json.loads(metadata or "{}"))


def row_to_version(row: tuple[Any, ...]) -> Version:
    memory_id, version, op, actor, at, changes, snapshot = row
    when = from_text(at)
    assert when is not None
    return Version(
        memory_id,
        version,
        op,
        actor,
        when,
        json.loads(changes),
        json.loads(snapshot) if snapshot else None,
    )


def where(flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    """The SQL condition and parameters for a filter (always a valid expression)."""
    a = alias
    parts: list[str] = []
    params: list[Any] = []

    def any_of(column: str, values: Any) -> None:
        values = list(values)
        parts.append(f"{a}.{column} IN ({', '.join('?' * len(values))})")
        params.extend(values)

    if flt.namespaces is not None:
        if not flt.namespaces:
            return "0", []
        any_of("namespace", flt.namespaces)
    if flt.types:
        any_of("type", flt.types)
    if flt.kinds:
        any_of("kind", flt.kinds)
    for tag in flt.tags or ():
        parts.append(f"EXISTS (SELECT 1 FROM json_each({a}.tags) WHERE json_each.value = ?)")
        params.append(tag)
    if flt.path_hint is not None:
        # A memory applies when its path hint is empty or lies on the same path, by
        # whole segments (signals.paths_match): equal, its hint a folder of the
        # query's path, or the query's path a folder of its hint.
        q = flt.path_hint
        parts.append(
            f"({a}.path_hint IS NULL OR {a}.path_hint = '' OR {a}.path_hint = ? OR "
            f"substr(?, 1, length({a}.path_hint) + 1) = {a}.path_hint || '/' OR "
            f"(substr({a}.path_hint, -1) = '/' AND substr(?, 1, length({a}.path_hint)) "
            f"= {a}.path_hint) OR substr({a}.path_hint, 1, length(?)) = ?)"
        )
        params.extend([q, q, q, folder(q), folder(q)])
    if flt.repo is not None:
        parts.append(f"({a}.repo IS NULL OR {a}.repo = '' OR {a}.repo = ?)")
        params.append(flt.repo)
    if flt.user_id is not None:
        parts.append(f"{a}.user_id = ?")
        params.append(flt.user_id)
    if flt.agent_id is not None:
        parts.append(f"({a}.agent_id IS NULL OR {a}.agent_id = ?)")
        params.append(flt.agent_id)
    if flt.slot_prefix is not None:
        parts.append(f"substr({a}.slot_key, 1, length(?)) = ?")
        params.extend([flt.slot_prefix, flt.slot_prefix])
    if not flt.include_expired and flt.now is not None:
        parts.append(f"({a}.expires_at IS NULL OR {a}.expires_at > ?)")
        params.append(to_text(flt.now))
    if not flt.include_superseded and flt.as_of is None:
        parts.append(f"{a}.superseded_by IS NULL")
    elif not flt.include_superseded:  # as of then: unless what superseded it did not
        # hold then (graph/supersession.py; issue 20, item 12)
        parts.append(
            f"({a}.superseded_by IS NULL OR NOT EXISTS (SELECT 1 FROM memories sup "
            f"WHERE sup.id = {a}.superseded_by AND "
            "COALESCE(sup.valid_from, sup.created_at) <= ? AND "
            "(sup.valid_to IS NULL OR sup.valid_to > ?)))"
        )
        params.extend([to_text(flt.as_of)] * 2)
    if flt.as_of is not None:
        when = to_text(flt.as_of)
        parts.append(
            f"(COALESCE({a}.valid_from, {a}.created_at) <= ? AND "
            f"({a}.valid_to IS NULL OR {a}.valid_to > ?))"
        )
        params.extend([when, when])
    if flt.pinned is not None:
        parts.append(f"{a}.pinned = ?")
        params.append(1 if flt.pinned else 0)
    if flt.created_after is not None:
        parts.append(f"{a}.created_at >= ?")
        params.append(to_text(flt.created_after))
    if flt.created_before is not None:
        parts.append(f"{a}.created_at < ?")
        params.append(to_text(flt.created_before))
    if flt.exclude_ids:
        parts.append(f"{a}.id NOT IN ({', '.join('?' * len(flt.exclude_ids))})")
        params.extend(flt.exclude_ids)
    return (" AND ".join(parts) or "1"), params
