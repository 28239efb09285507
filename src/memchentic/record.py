"""The memory record and the small value types around it (docs/design.md, section 1).

Also the vocabulary: known types with their meaning, the type aliases, the
edge kinds, the tiers and read intents (section 5), and the write statuses.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from .choices import EDGE_KINDS as EDGE_KINDS  # the vocabulary lives in choices
from .choices import KINDS as KINDS
from .choices import EdgeKind as EdgeKind
from .choices import Intent as Intent
from .choices import Kind as Kind
from .clock import to_text
from .errors import ValidationError

#: Known types and what each is for. Types are free strings; these are documented.
KNOWN_TYPES: dict[str, str] = {
    "semantic": "general knowledge: something true about the world or the user",
    "episodic": "something that happened, at a time (a turn, an event)",
    "emotional": "how someone felt about something",
    "reflective": "a conclusion drawn from experience",
    "charter": "a group's founding rules (one per group)",
    "skill": "how to do something (alias: procedural)",
    "instruction": "a standing instruction to the agent",
    "resource": "a pointer to a document, file, URL or tool",
    "decision": "a choice that was made, with its reason",
    "policy": "a rule that must be followed",
    "protocol": "an agreed way two parties interact",
    "fact": "a plain fact",
    "preference": "what someone likes or wants",
    "summary": "a summary of a session or a body of memories",
    "goal": "something someone wants to achieve",
    "procedure": "ordered steps",
    "strategy": "an approach that works",
    "working": "short-lived working memory of a session",
    "entity": "a person, place, project or thing",
    "relation": "how two entities relate",
    "parametric": "a setting or parameter value",
    "feedback": "feedback received on work",
    "insight": "a non-obvious learning",
    "note": "anything else",
}
GENERAL_TYPES: tuple[str, ...] = ("semantic", "episodic", "emotional", "reflective")
TYPE_ALIASES: dict[str, str] = {"procedural": "skill"}
DEFAULT_TYPE = "semantic"
#: The polarity of a memory that negates nothing (a negation is -1; a custom
#: classifier may use other values).
AFFIRMATIVE = 1

#: Which body a read shows, in order of preference (docs/design.md, section 5).
INTENT_ORDER: dict[str, tuple[str, ...]] = {
    "preview": ("tier_l0", "tier_l1", "content"),
    "default": ("tier_l1", "content", "tier_l0"),
    "full": ("content", "tier_l1", "tier_l0"),
}
#: The older ``tier=`` selector, mapped onto intents.
TIER_TO_INTENT: dict[str, str] = {"l0": "preview", "l1": "default", "l2": "full"}

WriteStatus = Literal[
    "added", "updated", "reinforced", "merged", "superseded", "refused", "revised", "deleted"
]


def normalise_type(value: str | None) -> str:
    """Lower-case, trimmed, aliases resolved; ``None`` gives the default type."""
    if value is None:
        return DEFAULT_TYPE
    if not isinstance(value, str):
        raise ValidationError("type", "must be a string")
    text = value.strip().lower()
    if not text:
        raise ValidationError("type", "must not be empty")
    if len(text) > 64 or not all(ch.isalnum() or ch in "_-." for ch in text):
        raise ValidationError("type", "letters, digits, '_', '-' or '.', at most 64 characters")
    return TYPE_ALIASES.get(text, text)


def resolve_intent(intent: str | None, tier: str | None = None) -> str:
    """The read intent, from ``intent=`` or the deprecated ``tier=`` selector."""
    if tier is not None:
        key = str(tier).strip().lower()
        if key not in TIER_TO_INTENT:
            raise ValidationError("tier", "must be one of L0, L1, L2")
        warnings.warn(
            "tier= is deprecated; use intent='preview'|'default'|'full'",
            DeprecationWarning,
            stacklevel=3,
        )
        return TIER_TO_INTENT[key]
    if intent is None:
        return "default"
    if intent not in INTENT_ORDER:
        raise ValidationError("intent", "must be one of preview, default, full")
    return intent


@dataclass(slots=True)
class MemoryRecord:
    """One memory. ``content`` is the full body (tier L2)."""

    id: str
    namespace: str
    content: str
    kind: str = "entry"
    type: str = DEFAULT_TYPE
    title: str | None = None
    tier_l0: str | None = None
    tier_l1: str | None = None
    tags: list[str] = field(default_factory=list)
    path_hint: str | None = None
    repo: str | None = None
    entities: list[str] = field(default_factory=list)
    slot_key: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    confidence: float = 1.0
    reinforcement: int = 1
    importance: float = 0.5
    polarity: int = AFFIRMATIVE
    pinned: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    recall_count: int = 0
    last_recalled_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The memory that replaced this one (a ``supersedes`` edge points here).
    superseded_by: str | None = None

    def text(self, intent: str = "default") -> str:
        """The body for a read intent, falling back to the next tier when empty."""
        for attr in INTENT_ORDER[intent]:
            value = getattr(self, attr)
            if value:
                return str(value)
        return self.content

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def held_at(self, when: datetime) -> bool:
        """True in the world at ``when``: ``valid_from`` (else ``created_at``) <= ``when``
        < ``valid_to`` (the ``as_of`` rule of every read)."""
        start = self.valid_from or self.created_at
        return (start is None or start <= when) and (self.valid_to is None or when < self.valid_to)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: datetimes as ISO 8601 text; lists and dicts are copies.

        Written out field by field, in field order (``dataclasses.asdict``
        deep-copies through ``copy.deepcopy``; a loop over the fields with type
        checks on each took four times as long, and a bulk write snapshots every
        record)."""
        return {
            "id": self.id, "namespace": self.namespace, "content": self.content,
            "kind": self.kind, "type": self.type, "title": self.title,
            "tier_l0": self.tier_l0, "tier_l1": self.tier_l1, "tags": _plain_copy(self.tags),
            "path_hint": self.path_hint, "repo": self.repo,
            "entities": _plain_copy(self.entities), "slot_key": self.slot_key,
            "user_id": self.user_id, "agent_id": self.agent_id, "session_id": self.session_id,
            "confidence": self.confidence, "reinforcement": self.reinforcement,
            "importance": self.importance, "polarity": self.polarity, "pinned": self.pinned,
            "created_at": _time(self.created_at), "updated_at": _time(self.updated_at),
            "valid_from": _time(self.valid_from), "valid_to": _time(self.valid_to),
            "expires_at": _time(self.expires_at), "recall_count": self.recall_count,
            "last_recalled_at": _time(self.last_recalled_at),
            "metadata": _plain_copy(self.metadata), "superseded_by": self.superseded_by,
        }  # fmt: skip


def _time(value: datetime | None) -> Any:
    return to_text(value) if isinstance(value, datetime) else value


def _plain_copy(value: Any) -> Any:
    """A copy of nested lists and dicts (the JSON shapes metadata holds)."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):  # (a tuple of types: faster than list | tuple)
        return [_plain_copy(v) for v in value]
    return value


def dated_dict(obj: Any) -> dict[str, Any]:
    """``dataclasses.asdict`` of a record with its times as ISO text (the wire form)."""
    out = asdict(obj)
    for key, value in out.items():
        if isinstance(value, datetime):
            out[key] = to_text(value)
    return out


@dataclass(slots=True, frozen=True)
class Edge:
    """A typed, weighted link from ``source`` to ``target``."""

    id: str
    source: str
    target: str
    kind: str
    strength: float
    created_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)


@dataclass(slots=True, frozen=True)
class Version:
    """One change to a memory: who, when, what (``changes``: field -> [before, after])."""

    memory_id: str
    version: int
    op: str
    actor: str
    at: datetime
    changes: dict[str, Any]
    snapshot: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)


@dataclass(slots=True)
class WriteResult:
    """What a write did: ``status`` and the ids involved."""

    status: str
    id: str | None
    ids: list[str] = field(default_factory=list)
    reason: str | None = None
    similarity: float | None = None
    memory: MemoryRecord | None = None
    #: Edges added by ``auto_edges=True``.
    edges: list[Edge] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status != "refused"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "id": self.id,
            "ids": list(self.ids),
            "reason": self.reason,
            "similarity": self.similarity,
            "edges": [e.to_dict() for e in self.edges],
        }


@dataclass(slots=True)
class SearchHit:
    """One search result: the memory, its score, its body for the read intent, its trace."""

    memory: MemoryRecord
    score: float
    text: str
    trace: dict[str, float] | None = None
    #: Its place in a thread of statements of one attribute, when another member is
    #: shown too: ``role`` (``current`` or ``earlier``), ``others`` (the ids it
    #: outranks, or the current one), ``rule`` and ``sure`` (what linked them), and
    #: ``pulled`` (brought in as the newer value of a hit). docs/writes.md.
    thread: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return self.memory.id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "score": self.score, "text": self.text}
        out["memory"] = self.memory.to_dict()
        if self.trace is not None:
            out["trace"] = dict(self.trace)
        if self.thread is not None:
            out["thread"] = dict(self.thread)
        return out


@dataclass(slots=True, frozen=True)
class Event:
    """Something that happened to a memory (docs/design.md, section 8), persisted by the store.
    ``namespace`` decides who may see it, like a memory."""

    id: str
    type: str
    at: datetime
    actor: str
    namespace: str | None
    memory_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)


@dataclass(slots=True, frozen=True)
class Turn:
    """One message of a session (short-term memory)."""

    id: str
    session_id: str
    namespace: str
    role: str
    content: str
    at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dated_dict(self)
