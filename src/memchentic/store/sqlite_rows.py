"""Row mapping and the SQL dialect of the SQLite store (kept apart to keep
``sqlite.py`` short)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..clock import from_text, to_text
from ..metadata_filter import Condition
from ..record import MemoryRecord
from .base import RankRow
from .dialect import Dialect
from .metadata_sql import sqlite_condition
from .tables import COLUMNS as COLUMNS  # re-exported: the rows of this backend
from .tables import SELECT_COLUMNS as SELECT_COLUMNS

#: ``json.dumps(value, ensure_ascii=False)``, without building an encoder a call.
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_quote = json.encoder.encode_basestring  # what that encoder quotes strings with
#: ``json.dumps(value, ensure_ascii=False, default=str)``, for payloads and metadata.
_payload_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


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


#: The columns of a :class:`RankRow`, in its order.
RANK_COLUMNS = (
    "m.session_id, m.updated_at, m.kind, m.type, m.reinforcement, m.recall_count, m.path_hint, "
    "m.namespace, m.created_at"
)
RANK_WIDTH = 9


def rank_row(row: Sequence[Any], at: int) -> RankRow:
    """The RankRow in ``row`` from column ``at`` on (RANK_COLUMNS, then maybe a
    vector blob)."""
    session, updated, kind, type_, reinforcement, recalls, path, namespace, created = row[
        at : at + RANK_WIDTH
    ]
    blob = row[at + RANK_WIDTH] if len(row) > at + RANK_WIDTH else None
    vector = np.frombuffer(blob, dtype=np.float32) if blob is not None else None
    return RankRow(session, from_text(updated), kind, type_, reinforcement, recalls, path,
                   namespace, from_text(created), vector)  # fmt: skip


class SQLiteDialect(Dialect):
    """SQLite: ``?`` parameters, timestamps as ``clock.to_text`` (text that sorts in
    time order), flags as 0 and 1, JSON as text, lists of values spelled out."""

    name = "sqlite"
    true = "1"
    false = "0"
    key = "rowid"
    record = staticmethod(row_to_record)

    def sql(self, text: str) -> str:
        return text

    def value(self, value: Any) -> Any:
        if isinstance(value, bool):
            return 1 if value else 0
        return to_text(value) if isinstance(value, datetime) else value

    def read_time(self, value: Any) -> datetime | None:
        return from_text(value)

    def json(self, value: Any, field: str = "metadata") -> Any:
        return _payload_json(value)

    def read_json(self, value: Any) -> Any:
        return json.loads(value)

    def any_of(
        self, column: str, values: Sequence[Any], negate: bool = False
    ) -> tuple[str, list[Any]]:
        marks = ", ".join("?" * len(values))
        return f"{column} {'NOT IN' if negate else 'IN'} ({marks})", list(values)

    def metadata_condition(self, alias: str, cond: Condition) -> tuple[str, list[Any]]:
        return sqlite_condition(alias, cond)

    def decayed(self, alias: str) -> str:
        # julianday: days, a core function (no math extension)
        last_use = f"MAX({alias}.updated_at, COALESCE({alias}.last_recalled_at, ''))"
        return f"julianday(?) - julianday({last_use}) >= ? * ({alias}.confidence - ?)"

    def all_tags(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        one = f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE json_each.value = ?)"
        return " AND ".join([one] * len(tags)), list(tags)


SQLITE = SQLiteDialect()
#: The SQL condition and parameters for a filter (:meth:`Dialect.where`).
where = SQLITE.where
