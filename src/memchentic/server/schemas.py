"""Request and response bodies of the HTTP API (pydantic), so ``/openapi.json``
describes every route. Requests forbid unknown fields (a typo is a 422, not a
silently ignored option); the library still validates every value. Times are
ISO 8601 text, UTC when no offset is given."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field

from .. import metadata_filter
from ..choices import (
    DuplicatePolicy,
    EdgeKind,
    IdentityKind,
    Intent,
    Kind,
    Profile,
    Role,
    SecretPolicy,
)
from ..record import MemoryRecord, WriteResult
from ..reports import Answer

Unit = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Time = Annotated[str, Field(max_length=64, description="ISO 8601 date or time")]
Text = Annotated[str, Field(max_length=1024)]
#: An optional query parameter of text, bounded like :data:`Text`.
OptText = Annotated[str | None, Query(max_length=1024)]
Names = Annotated[list[Text], Field(max_length=256)]
Metadata = dict[str, Any]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Scope(_Strict):
    """Where a call reads or writes (docs/design.md, section 2); an identity key with no scope
    uses the identity's private namespace for writes and everything it can read."""

    user_id: Text | None = None
    agent_id: Text | None = None
    namespace: Text | None = None


class _WriteOptions(Scope):
    """What a write may say besides its content (:class:`memchentic.args.AddOptions`):
    shared by a memory and a working-memory item."""

    kind: Kind | None = None
    title: str | None = None
    tags: Names | None = None
    metadata: Metadata | None = None
    confidence: Unit | None = None
    importance: Unit | None = None
    ttl_days: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] | None = None
    permanent: bool | None = None
    expires_at: Time | None = None
    created_at: Time | None = None
    valid_from: Time | None = None
    valid_to: Time | None = None
    path_hint: Text | None = None
    repo: Text | None = None
    entities: Names | None = None
    tier_l0: str | None = None
    tier_l1: str | None = None
    pinned: bool | None = None
    on_duplicate: DuplicatePolicy | None = None
    auto_edges: bool | None = None
    secrets: SecretPolicy | None = Field(
        None,
        description="Secret policy of this write; only an admin key may make it looser "
        "than the server's SECRET_POLICY (refuse > redact > allow), else a 422.",
    )


class AddRequest(_WriteOptions):
    """One memory to remember; every field but ``content`` is optional."""

    content: str
    type: Text | None = None
    slot_key: Text | None = None
    session_id: Text | None = None


class AddManyRequest(_Strict):
    #: At most MAX_WRITES_PER_CALL (the library checks it: a 413 naming the setting).
    items: Annotated[list[AddRequest], Field(min_length=1)]


class ReviseRequest(_Strict):
    """Fields to change; ``null`` clears an optional field."""

    content: str | None = None
    title: str | None = None
    tags: Names | None = None
    metadata: Metadata | None = None
    type: Text | None = None
    confidence: Unit | None = None
    importance: Unit | None = None
    valid_from: Time | None = None
    valid_to: Time | None = None
    path_hint: Text | None = None
    repo: Text | None = None
    tier_l0: str | None = None
    tier_l1: str | None = None
    entities: Names | None = None
    pinned: bool | None = None
    expires_at: Time | None = None


class ImproveRequest(_Strict):
    confidence: Unit | None = None
    importance: Unit | None = None
    valid_from: Time | None = None
    valid_to: Time | None = None


class SearchRequest(Scope):
    query: str
    limit: Annotated[int, Field(ge=1, le=1000)] | None = None
    profile: Profile | None = None
    type: Text | Names | None = None
    kind: Kind | None = None
    tags: Names | None = None
    path_hint: Text | None = None
    repo: Text | None = None
    include_expired: bool = False
    include_superseded: bool = False
    as_of: Time | None = None
    include_trace: bool = False
    intent: Intent | None = None
    tier: Text | None = Field(
        None,
        deprecated=True,
        description="The older selector of the body: L0, L1 or L2 (as intent preview, "
        "default or full); use intent.",
    )
    #: On metadata (``memchentic.metadata_filter``): checked by the library.
    filters: dict[str, Any] | None = None
    threshold: Unit | None = None


class RecallRequest(Scope):
    entity: Text
    limit: Annotated[int, Field(ge=1, le=1000)] | None = None
    as_of: Time | None = None


class RelateRequest(_Strict):
    source: Text
    target: Text
    kind: EdgeKind
    strength: Unit = 1.0
    metadata: Metadata | None = None


class ContextRequest(Scope):
    query: str | None = None
    session_id: Text | None = None
    budget_tokens: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] | None = None
    recent_turns: Annotated[int, Field(ge=0, le=10_000)] | None = None
    as_of: Time | None = None


class TurnRequest(Scope):
    role: Text
    content: str
    session_id: Text | None = None
    metadata: Metadata | None = None


class WorkingRequest(_WriteOptions):
    """Something for one session only (type ``working``); a second write with the same
    ``key`` in the session replaces the first. Expires after WORKING_MEMORY_TTL_DAYS
    unless ``ttl_days`` or ``permanent`` say otherwise."""

    content: str
    session_id: Text | None = None
    key: Text | None = None


class SummarizeRequest(Scope):
    session_id: Text | None = None


class LearnRequest(Scope):
    messages: str | list[str | dict[str, Any]]
    session_id: Text | None = None
    metadata: Metadata | None = None


class DeleteAllRequest(Scope):
    """One scope (at least one field); ``delete_all`` never deletes everything."""

    session_id: Text | None = None


class CountOut(BaseModel):
    deleted: int


class ManageRequest(Scope):
    operations: list[dict[str, Any]]  # at most MAX_WRITES_PER_CALL (checked by manage)
    session_id: Text | None = None


class AskRequest(Scope):
    question: str
    limit: Annotated[int, Field(ge=1, le=100)] = 10


class ConsolidateRequest(_Strict):
    user_id: Text | None = None
    namespace: Text | None = None
    dry_run: bool = False


class MaintenanceRequest(_Strict):
    dry_run: bool = False


class IdentityRequest(_Strict):
    name: Text
    kind: IdentityKind = "user"


class RenameRequest(_Strict):
    name: Text


class TeamRequest(_Strict):
    name: Text
    admins: Names = []
    members: Names = []


class MemberRequest(_Strict):
    identity: Text
    role: Role = "member"
    active: bool = True


class GrantRequest(_Strict):
    namespace: Text
    grantee: Text


# --- responses ------------------------------------------------------------------------


class MemoryOut(BaseModel):
    """A memory (docs/design.md, section 1); times are ISO 8601 UTC."""

    id: str
    namespace: str
    content: str
    kind: str
    type: str
    title: str | None = None
    tier_l0: str | None = None
    tier_l1: str | None = None
    tags: list[str] = []
    path_hint: str | None = None
    repo: str | None = None
    entities: list[str] = []
    slot_key: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    confidence: float
    reinforcement: int
    importance: float
    polarity: int
    pinned: bool
    created_at: str | None = None
    updated_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    expires_at: str | None = None
    recall_count: int = 0
    last_recalled_at: str | None = None
    metadata: Metadata = {}
    superseded_by: str | None = None


class EdgeOut(BaseModel):
    id: str
    source: str
    target: str
    kind: str
    strength: float
    created_at: str
    metadata: Metadata = {}


class WriteOut(BaseModel):
    """What a write did: ``added``, ``updated``, ``merged``, ``reinforced``,
    ``superseded``, ``refused``, ``revised`` or ``deleted``, with the ids involved."""

    status: str
    id: str | None
    ids: list[str] = []
    reason: str | None = None
    similarity: float | None = None
    edges: list[EdgeOut] = []
    memory: MemoryOut | None = None


class HitOut(BaseModel):
    """A search hit: the body for the read intent, the score and (on request) the
    signals that made it."""

    id: str
    score: float
    text: str
    memory: MemoryOut
    trace: dict[str, float] | None = None
    #: Its place in a thread of statements of one attribute (docs/writes.md).
    thread: dict[str, Any] | None = None


class VersionOut(BaseModel):
    memory_id: str
    version: int
    op: str
    actor: str
    at: str
    changes: Metadata
    snapshot: Metadata | None = None


class EventOut(BaseModel):
    id: str
    type: str
    at: str
    actor: str
    namespace: str | None
    memory_id: str | None = None
    payload: Metadata = {}


class TurnOut(BaseModel):
    id: str
    session_id: str
    namespace: str
    role: str
    content: str
    at: str
    metadata: Metadata = {}


class SessionOut(BaseModel):
    session_id: str
    turns: int


class DeletedOut(BaseModel):
    deleted: bool


def write_out(result: WriteResult) -> dict[str, Any]:
    """A write result with the memory it produced (the library's ``to_dict`` leaves it out)."""
    out = result.to_dict()
    out["memory"] = result.memory.to_dict() if result.memory is not None else None
    return out


def answer_out(answer: Answer) -> dict[str, Any]:
    """An answer whose passages also carry their memory (``Passage.to_dict`` names only
    its id and text), so a client rebuilds the library's ``Passage``."""
    out = answer.to_dict()
    for passage, shown in zip(answer.passages, out["passages"], strict=True):
        shown["memory"] = passage.memory.to_dict()
    return out


def memory_out(record: MemoryRecord) -> dict[str, Any]:
    return record.to_dict()


def options(model: BaseModel, *, keep_nulls: bool = False) -> dict[str, Any]:
    """The fields a request set, as keyword arguments for the library. Nulls mean
    "the default" except where ``keep_nulls`` (a revision clearing a field)."""
    if keep_nulls:
        return model.model_dump(exclude_unset=True)
    return model.model_dump(exclude_none=True)


def json_filters(text: str | None) -> dict[str, Any] | None:
    """A metadata filter given as JSON in a query string; bad JSON names ``filters``
    (size and nesting checked before parsing: :func:`memchentic.metadata_filter.loads`)."""
    return metadata_filter.loads(text, "filters")
