"""The arguments of each operation, as values (issue 35, item 3; docs/design.md, section 9).

One frozen class per row of the operation table (:mod:`memchentic.operations`
names it): its fields are the parameters of the :class:`~memchentic.Memory`
method, with the same names, kinds and defaults (``tests/test_faces.py`` checks
each class against ``inspect.signature``), so the faces read what an operation
takes from here instead of writing it again. A face that offers only part of an
operation says which fields it leaves out, and why, in that test.

Where ``Memory`` takes free keywords (``add(content, **options)``), the class
spells them out after ``first_option``; ``None`` there means "not given" (the
engine's default applies), except for :class:`ReviseArgs`, where ``None`` clears
a field and :data:`UNSET` leaves it alone. :meth:`Args.kwargs` gives the keyword
arguments of the call. The keyword options the faces take (``**options``) are typed
once per operation in :mod:`memchentic.args.keywords`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ..choices import DuplicatePolicy, Kind, SecretPolicy

if TYPE_CHECKING:
    from ..embed.base import Embedder
    from ..learn.base import Extractor, Message
    from ..learn.summaries import Summarizer
    from ..llm import ChatClient
    from ..record import Event, Turn
    from ..retrieval.profiles import SearchProfile


class Unset(enum.Enum):
    """The type of :data:`UNSET`: "leave this field as it is" (a revision)."""

    UNSET = "UNSET"


UNSET = Unset.UNSET


class Args:
    """What every argument class can do."""

    __slots__ = ()

    #: The first of the fields ``Memory`` takes as free keywords, if any.
    first_option: ClassVar[str | None] = None
    #: Those fields (from ``first_option`` on, in the class's own order).
    options: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        first = vars(cls).get("first_option")
        if first is not None:
            own = [n for n, t in vars(cls).get("__annotations__", {}).items()
                   if n != "_" and "ClassVar" not in str(t)]  # fmt: skip
            cls.options = frozenset(own[own.index(first) :])

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every field's name, in order."""
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    def kwargs(self) -> dict[str, Any]:
        """The call's keyword arguments: every parameter, and each option given (an
        option left at its default is not passed, so the engine's own applies)."""
        found = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name not in self.options or value is not f.default:
                found[f.name] = value
        return found


# --- the operations, in the order of the table ------------------------------------------
@dataclass(frozen=True, slots=True)
class AddOptions(Args):
    """The options of :meth:`Memory.add` (also the common options of
    :meth:`Memory.add_many`); ``None`` is "not given": the engine's default."""

    _: KW_ONLY
    type: str | None = None
    kind: Kind | None = None
    title: str | None = None
    tags: Sequence[str] | None = None
    metadata: Mapping[str, Any] | None = None
    slot_key: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    namespace: str | None = None
    confidence: float | None = None
    importance: float | None = None
    ttl_days: float | None = None
    permanent: bool | None = None
    expires_at: datetime | str | None = None
    created_at: datetime | str | None = None
    valid_from: datetime | str | None = None
    valid_to: datetime | str | None = None
    path_hint: str | None = None
    repo: str | None = None
    entities: Sequence[str] | None = None
    tier_l0: str | None = None
    tier_l1: str | None = None
    pinned: bool | None = None
    secrets: SecretPolicy | None = None
    now: datetime | str | None = None
    on_duplicate: DuplicatePolicy | None = None
    auto_edges: bool | None = None
    first_option: ClassVar[str] = "type"


@dataclass(frozen=True, slots=True)
class AddArgs(AddOptions):
    """The arguments of :meth:`Memory.add`."""

    content: str


@dataclass(frozen=True, slots=True)
class AddManyArgs(AddOptions):
    """The arguments of :meth:`Memory.add_many`."""

    items: Iterable[str | Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class ReviseArgs(Args):
    """The arguments of :meth:`Memory.revise`."""

    memory_id: str
    content: str | None = None
    _: KW_ONLY
    title: str | None | Unset = UNSET
    tags: Sequence[str] | None | Unset = UNSET
    metadata: Mapping[str, Any] | None | Unset = UNSET
    type: str | None | Unset = UNSET
    confidence: float | None | Unset = UNSET
    importance: float | None | Unset = UNSET
    valid_from: datetime | str | None | Unset = UNSET
    valid_to: datetime | str | None | Unset = UNSET
    path_hint: str | None | Unset = UNSET
    repo: str | None | Unset = UNSET
    tier_l0: str | None | Unset = UNSET
    tier_l1: str | None | Unset = UNSET
    entities: Sequence[str] | None | Unset = UNSET
    pinned: bool | None | Unset = UNSET
    expires_at: datetime | str | None | Unset = UNSET
    now: datetime | str | None | Unset = UNSET
    #: The names :meth:`Memory.revise` takes as ``**changes``, from this one on.
    first_option: ClassVar[str] = "title"


@dataclass(frozen=True, slots=True)
class ImproveArgs(Args):
    """The arguments of :meth:`Memory.improve`."""

    memory_id: str
    _: KW_ONLY
    confidence: float | None = None
    importance: float | None = None
    valid_from: datetime | str | None = None
    valid_to: datetime | str | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class DeleteArgs(Args):
    """The arguments of :meth:`Memory.delete`."""

    memory_id: str


@dataclass(frozen=True, slots=True)
class DeleteAllArgs(Args):
    """The arguments of :meth:`Memory.delete_all`."""

    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class PinArgs(Args):
    """The arguments of :meth:`Memory.pin`."""

    memory_id: str


@dataclass(frozen=True, slots=True)
class UnpinArgs(Args):
    """The arguments of :meth:`Memory.unpin`."""

    memory_id: str


@dataclass(frozen=True, slots=True)
class RestoreArgs(Args):
    """The arguments of :meth:`Memory.restore`."""

    memory_id: str
    _: KW_ONLY
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class ManageArgs(Args):
    """The arguments of :meth:`Memory.manage`."""

    operations: Sequence[Mapping[str, Any]]
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class SearchArgs(Args):
    """The arguments of :meth:`Memory.search`."""

    query: str
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    limit: int | None = None
    profile: str | SearchProfile | None = None
    type: str | Sequence[str] | None = None
    kind: str | None = None
    tags: Sequence[str] | None = None
    path_hint: str | None = None
    repo: str | None = None
    include_expired: bool = False
    include_superseded: bool = False
    as_of: datetime | str | None = None
    now: datetime | str | None = None
    include_trace: bool = False
    intent: str | None = None
    tier: str | None = None
    filters: Mapping[str, Any] | None = None
    threshold: float | None = None


@dataclass(frozen=True, slots=True)
class RecallArgs(Args):
    """The arguments of :meth:`Memory.recall`."""

    _: KW_ONLY
    entity: str
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    limit: int | None = None
    as_of: datetime | str | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class GetArgs(Args):
    """The arguments of :meth:`Memory.get`."""

    memory_id: str
    _: KW_ONLY
    now: datetime | str | None = None
    touch: bool = True


@dataclass(frozen=True, slots=True)
class ListArgs(Args):
    """The arguments of :meth:`Memory.list`."""

    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    type: str | Sequence[str] | None = None
    kind: str | None = None
    tags: Sequence[str] | None = None
    include_expired: bool = False
    include_superseded: bool = False
    limit: int | None = None
    offset: int = 0
    newest_first: bool = True
    as_of: datetime | str | None = None
    filters: Mapping[str, Any] | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class HistoryArgs(Args):
    """The arguments of :meth:`Memory.history`."""

    memory_id: str


@dataclass(frozen=True, slots=True)
class RelateArgs(Args):
    """The arguments of :meth:`Memory.relate`."""

    source: str
    target: str
    kind: str
    strength: float = 1.0
    _: KW_ONLY
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class DeleteEdgeArgs(Args):
    """The arguments of :meth:`Memory.delete_edge`."""

    edge_id: str


@dataclass(frozen=True, slots=True)
class EdgesArgs(Args):
    """The arguments of :meth:`Memory.edges`."""

    memory_id: str
    _: KW_ONLY
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class NeighborsArgs(Args):
    """The arguments of :meth:`Memory.neighbors`."""

    memory_id: str
    depth: int = 1
    _: KW_ONLY
    limit: int = 50


@dataclass(frozen=True, slots=True)
class EntitiesArgs(Args):
    """The arguments of :meth:`Memory.entities`."""

    _: KW_ONLY
    user_id: str | None = None
    namespace: str | None = None
    by_namespace: bool = False


@dataclass(frozen=True, slots=True)
class AskArgs(Args):
    """The arguments of :meth:`Memory.ask`."""

    question: str
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    limit: int = 10
    chat: ChatClient | None = None


@dataclass(frozen=True, slots=True)
class ConsolidateArgs(Args):
    """The arguments of :meth:`Memory.consolidate`."""

    _: KW_ONLY
    user_id: str | None = None
    namespace: str | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class RecordTurnArgs(Args):
    """The arguments of :meth:`Memory.record_turn`."""

    role: str
    content: str
    _: KW_ONLY
    session_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    metadata: Mapping[str, Any] | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class AddMessageArgs(Args):
    """The arguments of :meth:`Memory.add_message`."""

    message: Mapping[str, Any]
    _: KW_ONLY
    session_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    metadata: Mapping[str, Any] | None = None
    now: datetime | str | None = None
    #: The names :meth:`Memory.add_message` takes as ``**options``, from this one on.
    first_option: ClassVar[str] = "session_id"


@dataclass(frozen=True, slots=True)
class GetHistoryArgs(Args):
    """The arguments of :meth:`Memory.get_history`."""

    session_id: str | None = None
    limit: int = 50
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class ListSessionsArgs(Args):
    """The arguments of :meth:`Memory.list_sessions`."""

    _: KW_ONLY
    user_id: str | None = None
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class SummarizeSessionArgs(Args):
    """The arguments of :meth:`Memory.summarize_session`."""

    session_id: str | None = None
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    summarizer: Summarizer | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class AddWorkingArgs(Args):
    """The arguments of :meth:`Memory.add_working`."""

    content: str
    _: KW_ONLY
    session_id: str | None = None
    key: str | None = None
    kind: Kind | None = None
    title: str | None = None
    tags: Sequence[str] | None = None
    metadata: Mapping[str, Any] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    confidence: float | None = None
    importance: float | None = None
    ttl_days: float | None = None
    permanent: bool | None = None
    expires_at: datetime | str | None = None
    created_at: datetime | str | None = None
    valid_from: datetime | str | None = None
    valid_to: datetime | str | None = None
    path_hint: str | None = None
    repo: str | None = None
    entities: Sequence[str] | None = None
    tier_l0: str | None = None
    tier_l1: str | None = None
    pinned: bool | None = None
    secrets: SecretPolicy | None = None
    now: datetime | str | None = None
    on_duplicate: DuplicatePolicy | None = None
    auto_edges: bool | None = None
    #: The names :meth:`Memory.add_working` takes as ``**options``, from this one on.
    first_option: ClassVar[str] = "kind"


@dataclass(frozen=True, slots=True)
class WorkingMemoryArgs(Args):
    """The arguments of :meth:`Memory.working_memory`."""

    session_id: str | None = None
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    limit: int | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class ContextArgs(Args):
    """The arguments of :meth:`Memory.context`."""

    query: str | None = None
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    namespace: str | None = None
    budget_tokens: int | None = None
    limit: int | None = None
    recent_turns: int | None = None
    as_of: datetime | str | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class LearnArgs(Args):
    """The arguments of :meth:`Memory.learn`."""

    messages: str | Iterable[str | Mapping[str, Any] | Turn | Message]
    _: KW_ONLY
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    namespace: str | None = None
    extractor: Extractor | None = None
    metadata: Mapping[str, Any] | None = None
    now: datetime | str | None = None


@dataclass(frozen=True, slots=True)
class StatsArgs(Args):
    """The arguments of :meth:`Memory.stats`."""

    _: KW_ONLY
    user_id: str | None = None
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class GcArgs(Args):
    """The arguments of :meth:`Memory.gc`."""

    _: KW_ONLY
    now: datetime | str | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class MaintainArgs(Args):
    """The arguments of :meth:`Memory.maintain`."""

    _: KW_ONLY
    now: datetime | str | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class ExportArgs(Args):
    """The arguments of :meth:`Memory.export`."""

    target: Any
    _: KW_ONLY
    vectors: bool | None = None
    #: The names :meth:`Memory.export` takes as ``**kwargs``, from this one on.
    first_option: ClassVar[str] = "vectors"


@dataclass(frozen=True, slots=True)
class ImportArgs(Args):
    """The arguments of :meth:`Memory.import_`."""

    source: Any
    _: KW_ONLY
    strict: bool | None = None
    secrets: SecretPolicy | None = None
    #: The names :meth:`Memory.import_` takes as ``**kwargs``, from this one on.
    first_option: ClassVar[str] = "strict"


@dataclass(frozen=True, slots=True)
class ReindexArgs(Args):
    """The arguments of :meth:`Memory.reindex`."""

    _: KW_ONLY
    embedder: Embedder | None = None
    batch_size: int | None = None
    progress: Callable[[int, int], None] | None = None
    #: The names :meth:`Memory.reindex` takes as ``**kwargs``, from this one on.
    first_option: ClassVar[str] = "embedder"


@dataclass(frozen=True, slots=True)
class ResetArgs(Args):
    """The arguments of :meth:`Memory.reset`."""


@dataclass(frozen=True, slots=True)
class EventsArgs(Args):
    """The arguments of :meth:`Memory.events`."""

    _: KW_ONLY
    since: str | None = None
    types: Sequence[str] | None = None
    limit: int = 100


@dataclass(frozen=True, slots=True)
class SubscribeArgs(Args):
    """The arguments of :meth:`Memory.subscribe`."""

    callback: Callable[[Event], Any]
    types: Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class UnsubscribeArgs(Args):
    """The arguments of :meth:`Memory.unsubscribe`."""

    token: str
