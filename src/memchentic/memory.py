"""``Memory``: the embedded engine.

It holds the engine's :class:`~memchentic.engine.parts.Parts`, one
:class:`~memchentic.engine.gate.Gate` for its caller (the only way from a service to
the store), and the services of :mod:`memchentic.engine`, each built from (parts,
gate) and the operations it calls on the others. ``Memory`` offers one method per
row of :mod:`memchentic.operations`: each is the service's method (its signature
and docstring), run on this memory's service, and traced. Every call validates its
input, asks the gate, then runs the write path or the read path against the store.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from . import validation as check
from .access import TRUSTED, AccessPolicy, Principal
from .access.directory import Directory
from .choices import IDENTITY_KINDS
from .embed import Embedder
from .engine.context import ContextOps
from .engine.events import Events
from .engine.gate import Gate, now_of
from .engine.graph import Graph
from .engine.learning import Learning
from .engine.parts import Parts
from .engine.reads import Reads
from .engine.sessions import Sessions
from .engine.upkeep import Upkeep
from .engine.writes import Writes, _Prepared
from .errors import ValidationError
from .events import EventBus
from .graph.entities import EntityExtractor
from .learn.base import Extractor
from .learn.summaries import Summarizer
from .operations import OPERATIONS
from .retrieval import pipeline
from .settings import Settings
from .store.base import MemoryFilter, Store
from .tracing import traced_operation
from .write.auto_edges import EdgeClassifier
from .write.polarity import PolarityClassifier
from .write.resolvers import Resolver

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

#: Attributes of ``Memory`` that are its parts' (``mem.store``, ``mem.settings`` = ...).
_PARTS = frozenset({"store", "settings", "embedder", "bus", "access", "polarity",
                    "entity_extractor", "edge_classifier", "reranker", "resolver"})  # fmt: skip


def _on(
    service: str, method: Callable[Concatenate[S, P], R]
) -> Callable[Concatenate[Memory, P], R]:
    """``Memory``'s method for an operation: ``method`` run on the service held in the
    attribute ``service``, with its signature and docstring."""

    @functools.wraps(method)
    def run(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, service), *args, **kwargs)

    run.__qualname__ = f"Memory.{method.__name__}"
    run.__module__ = __name__
    return run


class Memory:
    """Long-term memory for an agent, embedded.

    :param path: store file (or ``store=`` a path or URL); default ``~/.memchentic/memory.db``.
    :param embedder: ``"local"``, ``"hash"``, ``"openai"`` or an :class:`Embedder`.
    :param settings: a :class:`Settings`; default: read from the environment.
    :param resolver: decides what a new entry is to its neighbours (duplicate,
        update, contradiction); default: the rules, or the chat model with
        ``WRITE_RESOLVER=chat`` (:mod:`memchentic.write.resolvers`).
    """

    # The parts, read and set through ``Memory`` (they live in ``Parts``).
    store: Store
    settings: Settings
    embedder: Embedder
    bus: EventBus
    access: AccessPolicy
    polarity: PolarityClassifier
    entity_extractor: EntityExtractor
    edge_classifier: EdgeClassifier
    reranker: pipeline.Reranker | None
    resolver: Resolver
    #: Who calls (the gate's): the trusted local principal, or an identity (a view).
    principal: Principal

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        store: str | Store | None = None,
        embedder: str | Embedder | None = None,
        settings: Settings | None = None,
        principal: Principal = TRUSTED,
        access: AccessPolicy | None = None,
        polarity: PolarityClassifier | None = None,
        entities: EntityExtractor | None = None,
        edge_classifier: EdgeClassifier | None = None,
        reranker: pipeline.Reranker | None = None,
        resolver: Resolver | None = None,
        check_embedder: bool = True,
    ) -> None:
        parts = Parts(
            path, store=store, embedder=embedder, settings=settings, access=access,
            polarity=polarity, entities=entities, edge_classifier=edge_classifier,
            reranker=reranker, resolver=resolver, check_embedder=check_embedder,
        )  # fmt: skip
        self._assemble(parts, principal, owns_parts=True)

    def _assemble(self, parts: Parts, principal: Principal, *, owns_parts: bool) -> None:
        """The gate and the services over ``parts``; the calls services make to each
        other are this memory's operations (so they are traced as operations)."""
        gate = Gate(parts, principal)
        self._parts, self._gate, self._owns_parts = parts, gate, owns_parts
        self._writes = Writes(parts, gate, add_many=self.add_many, delete=self.delete)
        self._reads = Reads(parts, gate)
        self._graph = Graph(parts, gate, search=self.search)
        self._sessions = Sessions(parts, gate, add=self.add, record_turn=self.record_turn)
        self._context = ContextOps(parts, gate, search=self.search, neighbors=self.neighbors)
        self._learning = Learning(parts, gate, add=self.add, add_many=self.add_many,
                                  revise=self.revise, delete=self.delete)  # fmt: skip
        self._upkeep = Upkeep(parts, gate, delete=self.delete, consolidate=self.consolidate,
                              summarize_session=self.summarize_session, gc=self.gc)  # fmt: skip
        self._events = Events(parts, gate)

    def __getattr__(self, name: str) -> Any:
        # only reached for names an instance lacks: the parts and the principal
        if name in _PARTS:
            return getattr(self.__dict__["_parts"], name)
        if name == "principal":
            return self.__dict__["_gate"].principal
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PARTS:  # every service reads its parts at each call
            setattr(self._parts, name, value)
        elif name == "principal":  # the gate's: set here, it would change nothing
            raise AttributeError("a memory's principal is fixed: use as_identity or for_identity")
        else:
            object.__setattr__(self, name, value)

    # --- lifecycle, views ---------------------------------------------------------------
    def close(self) -> None:
        """Close the store and resolver this memory opened (a view closes nothing: its
        parent does)."""
        if self._owns_parts:
            self._parts.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def directory(self) -> Directory:
        """Identities, groups, orgs and grants, as this principal may manage them."""
        return self._gate.directory()

    @property
    def summarizer(self) -> Summarizer | None:
        """The summariser of :meth:`summarize_session`; None = :class:`ExtractiveSummarizer`
        with ``SESSION_SUMMARY_SENTENCES``. Set it to plug in another."""
        return self._sessions.summarizer

    @summarizer.setter
    def summarizer(self, value: Summarizer | None) -> None:
        self._sessions.summarizer = value

    @property
    def extractor(self) -> Extractor | None:
        """The extractor of :meth:`learn`; None = a chat model when ``CHAT_BASE_URL`` is
        set, else :class:`~memchentic.learn.rules.RuleExtractor`."""
        return self._learning.extractor

    @extractor.setter
    def extractor(self, value: Extractor | None) -> None:
        self._learning.extractor = value

    def as_identity(self, name: str) -> Self:
        """A view of this memory that runs every call as the identity ``name``
        (``alice``, ``user:alice`` or ``agent:sophie``) under the access rules.
        On the trusted local principal an unknown name creates that identity."""
        kind, key = self._identity_key(name)
        if self._gate.find_identity(key, kind) is None:
            self.directory.create_identity(key, kind)
        return self.for_identity(name)

    def for_identity(self, name: str) -> Self:
        """Like :meth:`as_identity` but never creates: an unknown identity is an error
        (what servers use: a request never creates identities)."""
        kind, key = self._identity_key(name)
        identity = self._gate.find_identity(key, kind)
        if identity is None:
            raise ValidationError("identity", f"unknown identity: {name}")
        view = object.__new__(type(self))
        principal = Principal(identity.name, trusted=False, identity_id=identity.id)
        view._assemble(self._parts, principal, owns_parts=False)  # the parent closes them
        view.summarizer, view.extractor = self.summarizer, self.extractor
        return view

    def _identity_key(self, name: str) -> tuple[str, str]:
        if not self.principal.trusted:
            raise ValidationError("identity", "only the trusted local principal can switch")
        if not isinstance(name, str):
            raise ValidationError("identity", "must be NAME, user:NAME or agent:NAME")
        kind, _, key = name.partition(":") if ":" in name else ("user", "", name)
        if kind not in IDENTITY_KINDS:
            raise ValidationError("identity", "must be NAME, user:NAME or agent:NAME")
        return kind, check.identifier(key, "identity")

    # --- steps tests and tools reach (the gate's and the write path's) ---------------------
    def _read_filter(self, **scope: Any) -> MemoryFilter:
        """What a read with this scope may see (:meth:`Gate.read_filter`)."""
        return self._gate.read_filter(**scope)

    def _now(self, now: datetime | str | None) -> datetime:
        return now_of(now)

    def _prepare(self, content: str, **options: Any) -> _Prepared:
        """A write checked and built, not stored (:meth:`Writes._prepare`)."""
        return self._writes._prepare(content, **options)

    # --- the operations (memchentic.operations), one per row -----------------------------
    add = _on("_writes", Writes.add)
    remember = add
    add_many = _on("_writes", Writes.add_many)
    revise = _on("_writes", Writes.revise)
    improve = _on("_writes", Writes.improve)
    delete = _on("_writes", Writes.delete)
    forget = delete
    delete_all = _on("_writes", Writes.delete_all)
    pin = _on("_writes", Writes.pin)
    unpin = _on("_writes", Writes.unpin)
    restore = _on("_writes", Writes.restore)
    manage = _on("_learning", Learning.manage)
    learn = _on("_learning", Learning.learn)

    search = _on("_reads", Reads.search)
    get = _on("_reads", Reads.get)
    list = _on("_reads", Reads.list)
    history = _on("_reads", Reads.history)

    recall = _on("_graph", Graph.recall)
    relate = _on("_graph", Graph.relate)
    delete_edge = _on("_graph", Graph.delete_edge)
    edges = _on("_graph", Graph.edges)
    neighbors = _on("_graph", Graph.neighbors)
    entities = _on("_graph", Graph.entities)
    ask = _on("_graph", Graph.ask)
    consolidate = _on("_graph", Graph.consolidate)

    record_turn = _on("_sessions", Sessions.record_turn)
    add_message = _on("_sessions", Sessions.add_message)
    get_history = _on("_sessions", Sessions.get_history)
    list_sessions = _on("_sessions", Sessions.list_sessions)
    add_working = _on("_sessions", Sessions.add_working)
    working_memory = _on("_sessions", Sessions.working_memory)
    summarize_session = _on("_sessions", Sessions.summarize_session)

    context = _on("_context", ContextOps.context)
    build_context = context

    maintain = _on("_upkeep", Upkeep.maintain)
    stats = _on("_upkeep", Upkeep.stats)
    gc = _on("_upkeep", Upkeep.gc)
    export = _on("_upkeep", Upkeep.export)
    import_ = _on("_upkeep", Upkeep.import_)
    reset = _on("_upkeep", Upkeep.reset)
    reindex = _on("_upkeep", Upkeep.reindex)

    subscribe = _on("_events", Events.subscribe)
    unsubscribe = _on("_events", Events.unsubscribe)
    events = _on("_events", Events.events)


def _trace_operations() -> None:
    """Every operation of the table in a span (and timed for ``/metrics``): one place,
    so a new operation is traced when the table names it (:mod:`memchentic.tracing`)."""
    for op in OPERATIONS:
        method = getattr(Memory, op.name)
        traced = traced_operation(op.name, op.group, method)
        for name in (op.name, *op.aliases):
            setattr(Memory, name, traced)


_trace_operations()
