"""The engine's core: what every operation shares.

:class:`Core` holds the engine's parts (settings, store, embedder, access policy,
event bus, the write-time classifiers) and the steps every service takes: the
clock (``_now``), the read scope (``_read_filter``), access to one memory
(``_visible``, ``_writable``), the write scope (``_write_namespace``), a write's
context and its events (``_ctx``, ``_flush``), recall counting (``_touch``). The
services (:mod:`memchentic.engine.writes`, ``reads``, ``graph``, ``sessions``,
``context``, ``learning``, ``upkeep``) are subclasses that each add one group of
operations; :class:`memchentic.Memory` combines them. The operations are listed in
:mod:`memchentic.operations`.
"""

from __future__ import annotations

import builtins
import copy
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Self

from .. import validation as check
from ..access import TRUSTED, AccessPolicy, Principal, read_scope, scope_namespace
from ..access.directory import Directory
from ..access.namespaces import check_identifier
from ..clock import as_utc, utcnow
from ..embed import Embedder, check_embedder_name, get_embedder
from ..errors import (
    EmbedderMismatchError,
    ForbiddenError,
    NamespaceError,
    NotFoundError,
    ValidationError,
)
from ..events import EventBus
from ..graph.entities import EntityExtractor, RuleEntities
from ..lifetime import renewed_expiry, should_count_recall
from ..metadata_filter import parse as parse_filters
from ..record import Event, MemoryRecord, WriteResult
from ..retrieval import pipeline
from ..settings import Settings, load_settings
from ..store import open_store
from ..store.base import MemoryFilter, Store
from ..write.auto_edges import EdgeClassifier, RuleEdges
from ..write.polarity import PolarityClassifier, RulePolarity
from ..write.resolve import WriteContext
from ..write.resolvers import Resolver, default_resolver
from ..write.secrets import (
    RECORD_FIELDS,
    apply_policy,
    kinds_of,
    redaction_note,
    redaction_reason,
)


class Core:
    """The engine's parts, the steps its operations share, and the event operations
    (``subscribe``, ``unsubscribe``, ``events``), which every service emits into."""

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
        self.settings = settings or load_settings()
        self.principal = principal
        self.access = access or AccessPolicy()
        self.polarity = polarity or RulePolarity()
        self.entity_extractor = entities or RuleEntities()
        self.edge_classifier = edge_classifier or RuleEdges(
            self.settings.auto_edge_related_similarity, self.settings.auto_edge_supports_similarity
        )
        self.reranker = reranker
        #: Decides what a new entry is to its neighbours (DESIGN section 4, step 3).
        self.resolver = resolver or default_resolver(self.settings)
        self._owns_resolver = resolver is None
        if self.settings.memory_reranker_enabled and reranker is None:
            raise ValidationError(
                "reranker", "MEMORY_RERANKER_ENABLED needs a reranker: Memory(reranker=...)"
            )
        check_embedder_name(embedder, self.settings)
        if isinstance(store, Store):
            self.store = store
        else:
            self.store = open_store(
                str(store or path or self.settings.default_store), self.settings
            )
        self._owns_store = not isinstance(store, Store)
        try:
            # no embedder named: the one the store was built with (if it is built in)
            recorded = self.store.get_meta("embedding_model")
            self.embedder = get_embedder(embedder, self.settings, recorded)
            self.access.bind(self.store)
            self.bus = EventBus(self.store, self.access)
            if check_embedder:
                self._check_embedder()
        except BaseException:
            self.close()
            raise

    # --- lifecycle --------------------------------------------------------------------
    def _check_embedder(self) -> None:
        model = self.store.get_meta("embedding_model")
        dim = self.store.get_meta("embedding_dimension")
        if model is None:
            with self.store.write():
                self.store.set_meta("embedding_model", self.embedder.model)
                self.store.set_meta("embedding_dimension", str(self.embedder.dimension))
            return
        if model != self.embedder.model or int(dim or 0) != self.embedder.dimension:
            raise EmbedderMismatchError(
                f"the store {self.store.location} was built with embedder {model} "
                f"(dimension {dim}) but is opened with {self.embedder.model} (dimension "
                f"{self.embedder.dimension}); open it with the same embedder or run "
                f"`memchentic reindex --embedder {self.embedder.name}`"
            )

    def close(self) -> None:
        close_resolver = getattr(self.resolver, "close", None)
        if self._owns_resolver and close_resolver is not None:
            close_resolver()
        if self._owns_store:
            self.store.close()

    @property
    def directory(self) -> Directory:
        """Identities, groups, orgs and grants, as this principal may manage them."""
        return Directory(self.store, self.access, self.principal, self.settings)

    def as_identity(self, name: str) -> Self:
        """A view of this memory that runs every call as the identity ``name``
        (``alice``, ``user:alice`` or ``agent:sophie``) under the access rules.
        On the trusted local principal an unknown name creates that identity."""
        kind, key = self._identity_key(name)
        if self.store.find_identity(key, kind) is None:
            self.directory.create_identity(key, kind)
        return self.for_identity(name)

    def for_identity(self, name: str) -> Self:
        """Like :meth:`as_identity` but never creates: an unknown identity is an error
        (what servers use: a request never creates identities)."""
        kind, key = self._identity_key(name)
        identity = self.store.find_identity(key, kind)
        if identity is None:
            raise ValidationError("identity", f"unknown identity: {name}")
        view = copy.copy(self)
        view.principal = Principal(identity.name, trusted=False, identity_id=identity.id)
        view._owns_store = view._owns_resolver = False  # the parent closes them
        return view

    def _identity_key(self, name: str) -> tuple[str, str]:
        if not self.principal.trusted:
            raise ValidationError("identity", "only the trusted local principal can switch")
        if not isinstance(name, str):
            raise ValidationError("identity", "must be NAME, user:NAME or agent:NAME")
        kind, _, key = name.partition(":") if ":" in name else ("user", "", name)
        if kind not in ("user", "agent"):
            raise ValidationError("identity", "must be NAME, user:NAME or agent:NAME")
        return kind, check.identifier(key, "identity")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- scope and access ---------------------------------------------------------------
    def _now(self, now: datetime | str | None) -> datetime:
        return as_utc(now, "now") or utcnow()

    def _read_filter(
        self,
        *,
        user_id: str | None,
        agent_id: str | None,
        namespace: str | None,
        now: datetime,
        filters: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> MemoryFilter:
        """What a read made with this scope may see. ``agent_id`` alone: that agent's
        memories in every namespace the caller may read (its own namespace, and the
        memories it wrote for users); with ``user_id``: that agent's memories and
        the user's shared ones (the same with ``namespace``). ``filters``: on metadata
        (:mod:`memchentic.metadata_filter`)."""
        if agent_id is not None and user_id is None and namespace is None:
            requested = None
            fields["by_agent"] = check_identifier("agent_id", agent_id)
        else:
            requested = read_scope(namespace=namespace, user_id=user_id, agent_id=agent_id)
        namespaces = self.access.readable(self.principal, requested)
        if agent_id is not None and (user_id is not None or namespace is not None):
            # that agent's memories and the agent-less (shared) ones of the namespace,
            # never another agent's: with ``namespace`` as with ``user_id`` (issue 32,
            # item 11; delete_all narrows further, to the agent's own)
            fields["agent_id"] = check_identifier("agent_id", agent_id)
        fields.setdefault("isolated", not self.principal.trusted)
        fields["metadata"] = parse_filters(filters, max_terms=self.settings.filter_max_terms)
        return MemoryFilter(namespaces=namespaces, now=now, **fields)

    def _visible(self, memory_id: str) -> MemoryRecord:
        """The memory, or NotFoundError: also when the caller may not read it."""
        record = self.store.get(check.identifier(memory_id, "id"))
        if record is None or not self.access.can_read(self.principal, record.namespace):
            raise NotFoundError(memory_id)
        return record

    def _writable(self, memory_id: str) -> MemoryRecord:
        record = self._visible(memory_id)
        if not self.access.can_write(self.principal, record.namespace, record.type):
            raise ForbiddenError(memory_id)
        return record

    def _ctx(self, now: datetime, on_duplicate: str | None = None) -> WriteContext:
        return WriteContext(self.store, self.settings, self.access.actor(self.principal), now,
                            self._duplicate_policy(on_duplicate),
                            resolver=self.resolver)  # fmt: skip

    def _duplicate_policy(self, on_duplicate: Any) -> str:
        policy = on_duplicate or self.settings.duplicate_policy
        if policy not in ("refuse", "reinforce", "keep"):
            raise ValidationError("on_duplicate", "must be one of refuse, reinforce, keep")
        return policy

    def _write_namespace(
        self, namespace: str | None, user_id: str | None, agent_id: str | None
    ) -> str:
        """Canonical namespace of a write; an identity's default is its private one."""
        default = self.access.default_namespace(self.principal)
        if namespace is None and user_id is None and agent_id is None and default:
            return default
        ns = scope_namespace(
            namespace=namespace, user_id=user_id, agent_id=agent_id,
            default_user=self.settings.default_user_id,
        )  # fmt: skip
        canonical = self.access.resolve(ns, strict=not self.principal.trusted)
        if canonical is None:  # unknown names answer like forbidden ones
            raise NamespaceError("namespace", "you cannot write to this namespace")
        return canonical

    def _flush(self, ctx: WriteContext, *extra: tuple[str, str, str, dict[str, object]]) -> None:
        """Emit the events of a committed write."""
        self.bus.emit_many(self.access.actor(self.principal), [*ctx.pending, *extra])
        ctx.pending.clear()

    def _apply_secret_policy(
        self, record: MemoryRecord, policy: str, fields: Sequence[str] = RECORD_FIELDS
    ) -> tuple[WriteResult | None, str | None]:
        """Secrets in ``fields`` (every field a write sets), DESIGN 4, step 5: a
        ``refused`` result, or redacted in place with the reason to report
        (``redacted:KIND,... (N)``; the kinds in ``metadata["redacted"]``, how many
        spans in ``metadata["redacted_count"]``, never the secret itself)."""
        found = apply_policy(record, policy, fields)
        if not found:
            return None, None
        if policy == "refuse":
            refusal = WriteResult("refused", None, [], reason="secret:" + ",".join(kinds_of(found)))
            return refusal, None
        record.metadata = {**record.metadata, **redaction_note(found)}
        return None, redaction_reason(found)

    def _entities(self, record: MemoryRecord) -> builtins.list[str]:
        text = " ".join(filter(None, (record.title, record.content)))
        return self.entity_extractor.extract(text)[:64]

    def _touch(self, records: Sequence[MemoryRecord], now: datetime) -> None:
        """Count a recall (debounced) and slide the expiry of each returned memory.

        An expired memory is left as it is: opening or listing it (``get``,
        ``include_expired=True``) neither revives it nor counts as a use; only
        ``revise`` brings it back (DESIGN section 6; issue 20, item 10)."""
        updates = []
        for r in records:
            if r.is_expired(now):
                continue
            if not should_count_recall(r.last_recalled_at, now, self.settings):
                continue
            expires = renewed_expiry(r.expires_at, r.created_at or now, now, self.settings)
            updates.append((r.id, r.recall_count + 1, now, expires))
        self.store.touch(updates)

    # --- events ---------------------------------------------------------------------
    def subscribe(
        self, callback: Callable[[Event], Any], types: Sequence[str] | None = None
    ) -> str:
        """Call ``callback(event)`` for each event this principal may see; returns a token."""
        return self.bus.subscribe(callback, self.principal, types)

    def unsubscribe(self, token: str) -> bool:
        return self.bus.unsubscribe(token)

    def events(
        self, *, since: str | None = None, types: Sequence[str] | None = None, limit: int = 100
    ) -> builtins.list[Event]:
        """Stored events after the event id ``since``, oldest first, that this principal may see."""
        limit = check.page_limit(limit, None)  # a negative LIMIT would mean "all"
        return self.bus.read(self.principal, since=since, types=types, limit=limit)
