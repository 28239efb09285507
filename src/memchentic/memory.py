"""``Memory``: the embedded engine. Every call validates its input, asks the access
module, then runs the write path or the read path against the store."""

from __future__ import annotations

import builtins
import copy
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from . import validation as check
from .access import TRUSTED, AccessPolicy, Principal, read_scope, scope_namespace
from .access.directory import Directory
from .access.policy import CHARTER_TYPE
from .clock import as_utc, utcnow
from .context.mixin import ContextMixin
from .embed import Embedder, get_embedder
from .errors import (
    EmbedderMismatchError,
    ForbiddenError,
    NamespaceError,
    NotFoundError,
    ValidationError,
)
from .events import EventBus
from .graph import supersession
from .graph.auto_edges import EdgeClassifier, RuleEdges
from .graph.entities import EntityExtractor, RuleEntities
from .graph.mixin import GraphMixin
from .ids import new_id
from .learn.mixin import LearnMixin
from .lifetime import (
    initial_expiry,
    renewed_expiry,
    should_count_recall,
)
from .maintain import MaintainMixin
from .record import (
    Event,
    MemoryRecord,
    SearchHit,
    Version,
    WriteResult,
    normalise_type,
    resolve_intent,
)
from .retrieval import pipeline
from .retrieval.profiles import Candidate, SearchProfile, get_profile
from .sessions import SessionMixin
from .settings import Settings, load_settings
from .store import open_store
from .store.base import MemoryFilter, Store
from .write.polarity import PolarityClassifier, RulePolarity
from .write.resolve import WriteContext, diff, record_version, resolve_many
from .write.resolvers import Resolver, default_resolver
from .write.secrets import RECORD_FIELDS, apply_policy, effective_policy, kinds_of, police_record
from .write.statements import embedding_text, memory_embedding_text


@dataclass(slots=True)
class _Prepared:
    record: MemoryRecord
    text_for_embedding: str
    refusal: WriteResult | None = None


class Memory(GraphMixin, ContextMixin, SessionMixin, LearnMixin, MaintainMixin):
    """Long-term memory for an agent, embedded.

    :param path: store file (or ``store=`` a path or URL); default ``~/.memchentic/memory.db``.
    :param embedder: ``"local"``, ``"hash"``, ``"openai"`` or an :class:`Embedder`.
    :param settings: a :class:`Settings`; default: read from the environment.
    :param resolver: decides what a new entry is to its neighbours (duplicate,
        update, contradiction); default: the rules, or the chat model with
        ``WRITE_RESOLVER=chat`` (:mod:`memchentic.write.resolvers`).
    """

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
        self.embedder = get_embedder(embedder, self.settings)
        if isinstance(store, Store):
            self.store = store
        else:
            self.store = open_store(
                str(store or path or self.settings.default_store), self.settings
            )
        self._owns_store = not isinstance(store, Store)
        self.access.bind(self.store)
        self.bus = EventBus(self.store, self.access)
        if check_embedder:
            try:
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
        return Directory(self.store, self.access, self.principal)

    def as_identity(self, name: str) -> Memory:
        """A view of this memory that runs every call as the identity ``name``
        (``alice``, ``user:alice`` or ``agent:sophie``) under the access rules.
        On the trusted local principal an unknown name creates that identity."""
        kind, key = self._identity_key(name)
        if self.store.find_identity(key, kind) is None:
            self.directory.create_identity(key, kind)
        return self.for_identity(name)

    def for_identity(self, name: str) -> Memory:
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

    def __enter__(self) -> Memory:
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
        **fields: Any,
    ) -> MemoryFilter:
        requested = read_scope(namespace=namespace, user_id=user_id, agent_id=agent_id)
        namespaces = self.access.readable(self.principal, requested)
        if user_id is not None and agent_id is not None and namespace is None:
            fields["agent_id"] = agent_id  # that agent's memories and the user's shared ones
        fields.setdefault("isolated", not self.principal.trusted)
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

    # --- writes ------------------------------------------------------------------------
    def add(self, content: str, **options: Any) -> WriteResult:
        """Remember one memory; returns what happened (``added``, ``updated``, ``merged``,
        ``reinforced``, ``superseded`` or ``refused``) with the ids involved.

        Options: ``type``, ``kind`` (entry|guide), ``title``, ``tags``, ``metadata``,
        ``slot_key``, ``user_id``, ``agent_id``, ``session_id``, ``namespace``,
        ``confidence``, ``importance``, ``ttl_days``, ``permanent``, ``expires_at``,
        ``created_at``, ``valid_from``, ``valid_to``, ``path_hint``, ``repo``,
        ``entities``, ``tier_l0``, ``tier_l1``, ``pinned``, ``on_duplicate``
        (refuse|reinforce|keep), ``auto_edges`` (link to similar memories),
        ``secrets`` (refuse|redact|allow; an identity may only make ``SECRET_POLICY``
        stricter), ``now``.
        """
        return self.add_many([{"content": content, **options}])[0]

    remember = add

    def add_many(
        self, items: Iterable[str | Mapping[str, Any]], **common: Any
    ) -> builtins.list[WriteResult]:
        """Remember several memories with one batched embedding call; each item is a
        string or a mapping of :meth:`add` options (``common`` applies to all); at most
        ``MAX_WRITES_PER_CALL`` items (else :class:`LimitError`, nothing written)."""
        items = list(items)
        check.within(len(items), self.settings.max_writes_per_call, "items",
                     "MAX_WRITES_PER_CALL", "writes")  # fmt: skip
        prepared: list[_Prepared] = []
        policies: list[str | None] = []
        linking: list[bool] = []
        scopes: dict[tuple[Any, ...], Any] = {}  # access answers, once per call
        for item in items:
            options = {**common, **({"content": item} if isinstance(item, str) else item)}
            check.options(options, ADD_OPTIONS, "add")
            if "content" not in options:
                raise ValidationError("content", "is required")
            policies.append(options.pop("on_duplicate", None))
            linking.append(bool(options.pop("auto_edges", False)))
            prepared.append(self._prepare(**options, _scopes=scopes))
        if not prepared:
            return []
        todo = [p for p in prepared if p.refusal is None]
        vectors = (
            self.embedder.embed_batch([p.text_for_embedding for p in todo])
            if todo
            else np.zeros((0, self.embedder.dimension), dtype=np.float32)
        )
        by_id = {p.record.id: v for p, v in zip(todo, vectors, strict=True)}
        actor = self.access.actor(self.principal)  # once a call
        contexts = [
            WriteContext(
                self.store, self.settings, actor, prep.record.created_at or utcnow(),
                self._duplicate_policy(policy), self.edge_classifier if link else None,
                resolver=self.resolver,
            )
            for prep, policy, link in zip(prepared, policies, linking, strict=True)
        ]  # fmt: skip
        with self.store.write():
            resolved = iter(resolve_many([
                (ctx, prep.record, by_id[prep.record.id])
                for prep, ctx in zip(prepared, contexts, strict=True) if prep.refusal is None
            ]))  # fmt: skip
            results = [
                prep.refusal if prep.refusal is not None else next(resolved) for prep in prepared
            ]
        pending: list[tuple[str, str, str, dict[str, object]]] = []
        for prep, ctx, result in zip(prepared, contexts, results, strict=True):
            pending.extend(ctx.pending)
            pending.append(_write_event(prep.record, result))
        self.bus.emit_many(self.access.actor(self.principal), pending)
        return results

    def _prepare(
        self,
        content: str,
        *,
        type: str | None = None,  # noqa: A002 - the documented name
        kind: str = "entry",
        title: str | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        slot_key: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        confidence: float = 1.0,
        importance: float = 0.5,
        ttl_days: float | None = None,
        permanent: bool = False,
        expires_at: datetime | str | None = None,
        created_at: datetime | str | None = None,
        valid_from: datetime | str | None = None,
        valid_to: datetime | str | None = None,
        path_hint: str | None = None,
        repo: str | None = None,
        entities: Sequence[str] | None = None,
        tier_l0: str | None = None,
        tier_l1: str | None = None,
        pinned: bool = False,
        secrets: str | None = None,
        now: datetime | str | None = None,
        _scopes: dict[tuple[Any, ...], Any] | None = None,
    ) -> _Prepared:
        s = self.settings
        text = check.content(content, s)
        scopes = {} if _scopes is None else _scopes
        where = (namespace, user_id, agent_id)
        if where not in scopes:
            scopes[where] = self._write_namespace(namespace, user_id, agent_id)
        ns = scopes[where]
        type_ = normalise_type(type)
        if (ns, type_) not in scopes:
            scopes[ns, type_] = self.access.can_write(self.principal, ns, type_)
        if not scopes[ns, type_]:
            raise NamespaceError("namespace", "you cannot write to this namespace")
        if type_ == CHARTER_TYPE:
            slot_key = CHARTER_TYPE  # one charter per group: a new one replaces it
        clock = self._now(now)
        created = as_utc(created_at, "created_at") or clock
        record = MemoryRecord(
            id=new_id(int(created.timestamp() * 1000)),
            namespace=ns,
            content=text,
            kind=check.kind(kind),
            type=type_,
            title=check.optional_text(title, "title"),
            tier_l0=check.optional_text(tier_l0, "tier_l0", s.max_content_bytes),
            tier_l1=check.optional_text(tier_l1, "tier_l1", s.max_content_bytes),
            tags=check.tags(tags, s),
            path_hint=check.optional_text(path_hint, "path_hint"),
            repo=check.optional_text(repo, "repo"),
            slot_key=check.optional_text(slot_key, "slot_key", 256),
            user_id=user_id,
            agent_id=agent_id,
            session_id=check.optional_text(session_id, "session_id", 256),
            confidence=check.unit_interval(confidence, "confidence"),
            importance=check.unit_interval(importance, "importance"),
            pinned=bool(pinned),
            created_at=created,
            updated_at=created,
            valid_from=as_utc(valid_from, "valid_from") or created,
            valid_to=as_utc(valid_to, "valid_to"),
            expires_at=initial_expiry(  # from the time of the write, not a backdated created_at
                clock,
                s,
                ttl_days=ttl_days,
                permanent=permanent,
                expires_at=as_utc(expires_at, "expires_at"),
            ),  # fmt: skip
            metadata=check.metadata(metadata, s),
        )
        check.validity(record.valid_from, record.valid_to)
        given = check.entities(entities)
        record.entities = given or []  # scanned with the other fields
        policy = effective_policy(secrets, s.secret_policy, trusted=self.principal.trusted)
        refusal = self._apply_secret_policy(record, policy)
        if refusal is not None:
            return _Prepared(record, "", refusal)
        record.polarity = self.polarity.polarity(record.content)
        if given is None:
            record.entities = self._entities(record)
        # Unicode forms and invisible characters embed alike
        return _Prepared(record, memory_embedding_text(record.title, record.content))

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

    def _apply_secret_policy(
        self, record: MemoryRecord, policy: str, fields: Sequence[str] = RECORD_FIELDS
    ) -> WriteResult | None:
        """Secrets in ``fields`` (every field a write sets): a ``refused`` result, or
        redacted in place (their kinds in ``metadata["redacted"]``) (DESIGN 4, step 5)."""
        found = apply_policy(record, policy, fields)
        if not found:
            return None
        if policy == "refuse":
            return WriteResult("refused", None, [], reason="secret:" + ",".join(kinds_of(found)))
        record.metadata = {**record.metadata, "redacted": kinds_of(found)}
        return None

    def _entities(self, record: MemoryRecord) -> builtins.list[str]:
        text = " ".join(filter(None, (record.title, record.content)))
        return self.entity_extractor.extract(text)[:64]

    def revise(self, memory_id: str, content: str | None = None, **changes: Any) -> WriteResult:
        """Edit a memory (content and other fields); moves ``updated_at`` (resets its age)
        and brings an expired memory back."""
        now = self._now(changes.pop("now", None))
        with self.store.write():
            old = self._writable(memory_id)
            new = self._changed(old, content, changes)
            new.updated_at = now
            if new.expires_at is not None:
                new.expires_at = max(new.expires_at, initial_expiry(now, self.settings) or now)
            vector = None
            if new.content != old.content or new.title != old.title:
                new.polarity = self.polarity.polarity(new.content)
                if "entities" not in changes:
                    new.entities = self._entities(new)
                vector = self.embedder.embed(memory_embedding_text(new.title, new.content))
            self.store.update(new, vector)
            ctx = self._ctx(now)
            record_version(ctx, new.namespace, new.id, "revise", diff(old, new))
        self._flush(ctx, ("memory.updated", new.namespace, new.id, {"status": "revised"}))
        return WriteResult("revised", new.id, [new.id], memory=new)

    def improve(
        self,
        memory_id: str,
        *,
        confidence: float | None = None,
        importance: float | None = None,
        valid_from: datetime | str | None = None,
        valid_to: datetime | str | None = None,
        now: datetime | str | None = None,
    ) -> WriteResult:
        """Adjust confidence, importance or validity without resetting the memory's age."""
        changes: dict[str, Any] = {}
        if confidence is not None:
            changes["confidence"] = confidence
        if importance is not None:
            changes["importance"] = importance
        if valid_from is not None:
            changes["valid_from"] = valid_from
        if valid_to is not None:
            changes["valid_to"] = valid_to
        when = self._now(now)
        with self.store.write():
            old = self._writable(memory_id)
            new = self._changed(old, None, changes)
            self.store.update(new)
            ctx = self._ctx(when)
            record_version(ctx, new.namespace, new.id, "improve", diff(old, new))
        self._flush(ctx, ("memory.updated", new.namespace, new.id, {"status": "improved"}))
        return WriteResult("updated", new.id, [new.id], memory=new)

    def _changed(
        self, old: MemoryRecord, content: str | None, changes: dict[str, Any]
    ) -> MemoryRecord:
        s = self.settings
        allowed = {
            "title": lambda v: check.optional_text(v, "title"),
            "tags": lambda v: check.tags(v, s),
            "metadata": lambda v: check.metadata(v, s),
            "type": normalise_type,
            "confidence": lambda v: check.unit_interval(v, "confidence"),
            "importance": lambda v: check.unit_interval(v, "importance"),
            "valid_from": lambda v: as_utc(v, "valid_from"),
            "valid_to": lambda v: as_utc(v, "valid_to"),
            "path_hint": lambda v: check.optional_text(v, "path_hint"),
            "repo": lambda v: check.optional_text(v, "repo"),
            "tier_l0": lambda v: check.optional_text(v, "tier_l0", s.max_content_bytes),
            "tier_l1": lambda v: check.optional_text(v, "tier_l1", s.max_content_bytes),
            "entities": lambda v: check.entities(v) or [],
            "pinned": bool,
            "expires_at": lambda v: as_utc(v, "expires_at"),
        }
        updates: dict[str, Any] = {}
        for name, value in changes.items():
            if name not in allowed:
                raise ValidationError(name, "is not a field that can be revised")
            updates[name] = allowed[name](value)
        if content is not None:
            updates["content"] = check.content(content, s)
        new = replace(old, **updates)
        check.validity(new.valid_from, new.valid_to)
        if new.type != old.type:
            new = self._retyped(old, new)
        changed = [f for f in RECORD_FIELDS if f in updates]  # not what was stored before
        police_record(new, s.secret_policy, changed)
        return new

    def _retyped(self, old: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        """A change of type is a write of the new type, under the rules of ``add``: only
        a group's admins write its ``charter``, and a group has one (issue 20, item 3)."""
        if not self.access.can_write(self.principal, old.namespace, new.type):
            raise NamespaceError("type", f"you cannot write {new.type} memories here")
        if new.type == CHARTER_TYPE:
            current = self.store.find_slot(old.namespace, CHARTER_TYPE)
            if current is not None and current.id != old.id:
                raise ValidationError(
                    "type", f"the group already has a charter ({current.id}); revise that one"
                )
            return replace(new, slot_key=CHARTER_TYPE)
        if old.type == CHARTER_TYPE and old.slot_key == CHARTER_TYPE:
            return replace(new, slot_key=None)  # no longer the group's charter
        return new

    def delete(
        self, memory_id: str, *, _due: Callable[[MemoryRecord], bool] | None = None
    ) -> WriteResult:
        """Forget a memory completely: row, keyword index, vector, edges and entities.
        Its history keeps one tombstone version (no content). (``_due``, for gc: delete
        only when ``_due(memory)`` still holds inside the write; else status ``kept``.)"""
        now = utcnow()
        with self.store.write():
            record = self._writable(memory_id)
            if _due is not None and not _due(record):
                return WriteResult("kept", memory_id, [memory_id])
            self.store.delete(memory_id)
            self.store.purge_versions(memory_id)
            tomb: dict[str, list[object]] = {"namespace": [record.namespace, None]}
            ctx = self._ctx(now)
            record_version(ctx, record.namespace, memory_id, "delete", tomb)
        self._flush(ctx, ("memory.deleted", record.namespace, memory_id, {}))
        return WriteResult("deleted", memory_id, [memory_id])

    forget = delete

    # --- reads -------------------------------------------------------------------------
    def get(
        self, memory_id: str, *, now: datetime | str | None = None, touch: bool = True
    ) -> MemoryRecord:
        """Open one memory (also an expired one); counts as a recall."""
        record = self._visible(memory_id)
        if touch:
            self._touch([record], self._now(now))
        return record

    def history(self, memory_id: str) -> builtins.list[Version]:
        """Every version of a memory, oldest first (a deleted memory keeps its tombstone)."""
        if self.store.get(check.identifier(memory_id, "id")) is not None:
            self._visible(memory_id)
        versions = self.store.versions(memory_id)
        if not versions:
            raise NotFoundError(memory_id)
        if versions[-1].op == "delete":  # a tombstone keeps only where the memory lived
            namespace = versions[-1].changes.get("namespace", [None])[0]
            if namespace is None or not self.access.can_read(self.principal, namespace):
                raise NotFoundError(memory_id)
        return versions

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        type: str | Sequence[str] | None = None,  # noqa: A002
        kind: str | None = None,
        tags: Sequence[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = True,
        as_of: datetime | str | None = None,
        now: datetime | str | None = None,
    ) -> builtins.list[MemoryRecord]:
        """Memories in scope, newest first (expired and superseded ones only on request).
        ``limit``: 100 by default, at most ``LIST_MAX_LIMIT`` (page on with ``offset``).
        ``as_of``: only memories that held then (``valid_from <= as_of < valid_to``), as
        in :meth:`search`."""
        if limit is None:
            limit = min(100, self.settings.list_max_limit)
        limit = check.page_limit(limit, self.settings)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError("offset", "must be a whole number >= 0")
        flt = self._read_filter(
            user_id=user_id, agent_id=agent_id, namespace=namespace, now=self._now(now),
            types=_types(type), kinds=[check.kind(kind)] if kind else None,
            tags=check.tags(tags, self.settings) or None,
            include_expired=include_expired, include_superseded=include_superseded,
            as_of=as_utc(as_of, "as_of"),
        )  # fmt: skip
        return self.store.list_memories(flt, limit=limit, offset=offset, newest_first=newest_first)

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        limit: int | None = None,
        profile: str | SearchProfile | None = None,
        type: str | Sequence[str] | None = None,  # noqa: A002
        kind: str | None = None,
        tags: Sequence[str] | None = None,
        path_hint: str | None = None,
        repo: str | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        now: datetime | str | None = None,
        include_trace: bool = False,
        intent: str | None = None,
        tier: str | None = None,
    ) -> builtins.list[SearchHit]:
        """The memories that best answer ``query``, best first (DESIGN section 3)."""
        text = check.query(query, self.settings)
        count = check.limit(limit, self.settings)
        chosen = get_profile(profile or self.settings.search_profile)
        read_intent = resolve_intent(intent, tier)
        when = self._now(now)
        flt = self._read_filter(
            user_id=user_id, agent_id=agent_id, namespace=namespace, now=when,
            types=_types(type), kinds=[check.kind(kind)] if kind else None,
            tags=check.tags(tags, self.settings) or None,
            path_hint=check.optional_text(path_hint, "path_hint"),
            repo=check.optional_text(repo, "repo"), include_expired=include_expired,
            include_superseded=True, as_of=as_utc(as_of, "as_of"),
        )  # fmt: skip
        if flt.namespaces == []:
            return []
        req = pipeline.SearchRequest(
            text,
            self.embedder.embed(embedding_text(text)),
            flt,
            count,
            chosen,
            when,
            flt.path_hint,
        )
        ranked = pipeline.run(self.store, req, self.settings, reranker=self.reranker)
        if not include_superseded:  # a superseded hit stands for the tip of its chain
            shown = replace(flt, include_superseded=False)
            ranked = supersession.follow(self.store, ranked, _memory_of, _with_tip, shown, when)
        if include_trace:  # the trace says which hits replaced other memories
            for c in ranked:
                c.trace["supersedes"] = float(supersession.replaced(self.store, c.memory))
        self.bus.emit(
            "memory.searched", actor=self.access.actor(self.principal),
            namespace=self.access.default_namespace(self.principal), results=len(ranked),
            along=lambda: self._touch([c.memory for c in ranked], when),
        )  # fmt: skip
        return [
            SearchHit(c.memory, c.score, c.memory.text(read_intent),
                      dict(c.trace) if include_trace else None)
            for c in ranked
        ]  # fmt: skip

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

    # --- maintenance ---------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None, namespace: str | None = None) -> dict[str, Any]:
        flt = self._read_filter(user_id=user_id, agent_id=None, namespace=namespace, now=utcnow())
        return self.store.stats(flt).to_dict()

    def gc(self, *, now: datetime | str | None = None, dry_run: bool = False) -> dict[str, Any]:
        from .maintenance import gc

        return gc(self, self._now(now), dry_run=dry_run)

    def export(self, target: Any, **kwargs: Any) -> int:
        from .io import export_jsonl

        return export_jsonl(self, target, **kwargs)

    def import_(self, source: Any, **kwargs: Any) -> Any:
        from .io import import_jsonl

        return import_jsonl(self, source, **kwargs)

    def reindex(self, **kwargs: Any) -> int:
        """Re-embed every memory of the store (trusted local principal only)."""
        if not self.principal.trusted:
            raise ValidationError("principal", "only the trusted local principal can reindex")
        from .maintenance import reindex

        return reindex(self, **kwargs)


#: The options :meth:`Memory.add` knows (an unknown one is a ValidationError
#: listing these, not a TypeError naming ``_prepare``).
ADD_OPTIONS = frozenset(
    {*inspect.signature(Memory._prepare).parameters, "on_duplicate", "auto_edges"}
    - {"self", "_scopes"}
)


def _memory_of(cand: Candidate) -> MemoryRecord:
    return cand.memory


def _with_tip(cand: Candidate, tip: MemoryRecord, hops: int) -> Candidate:
    cand.memory = tip
    cand.trace["superseded_hops"] = float(hops)
    return cand


_STATUS_EVENTS = {
    "added": "memory.added",
    "superseded": "memory.added",
    "updated": "memory.updated",
    "merged": "memory.deduplicated",
    "reinforced": "memory.deduplicated",
}


def _write_event(
    record: MemoryRecord, result: WriteResult
) -> tuple[str, str, str, dict[str, object]]:
    """The event a write result announces (no content: ids and status only)."""
    payload: dict[str, object] = {"status": result.status, "ids": list(result.ids)}
    if result.status == "refused":
        kind = "memory.dropped" if (result.reason or "").startswith("secret") else (
            "memory.deduplicated"
        )  # fmt: skip
        payload["reason"] = result.reason
        return kind, record.namespace, result.id or record.id, payload
    return _STATUS_EVENTS[result.status], record.namespace, result.id or record.id, payload


def _types(value: str | Sequence[str] | None) -> builtins.list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    return [normalise_type(v) for v in values]
