"""Writes: add, revise, improve, delete (docs/design.md, section 4)."""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from .. import validation as check
from ..access.policy import CHARTER_TYPE, slot_right
from ..clock import as_utc, utcnow
from ..errors import ForbiddenError, NamespaceError, NotFoundError, ValidationError
from ..ids import new_id
from ..lifetime import initial_expiry
from ..record import MemoryRecord, WriteResult, normalise_type
from ..store.filters import by_agent
from ..write.resolve import EPISODIC, diff, record_version, resolve_many
from ..write.secrets import (
    RECORD_FIELDS,
    apply_policy,
    effective_policy,
    kinds_of,
    police_record,
    redaction_note,
    redaction_reason,
)
from ..write.statements import memory_embedding_text
from .gate import Gate, now_of
from .parts import Parts
from .quotas import check_revival, check_working_cap


@dataclass(slots=True)
class _Prepared:
    record: MemoryRecord
    text_for_embedding: str
    refusal: WriteResult | None = None
    #: What redaction did (``redacted:KIND,... (N)``), reported in the result's reason.
    redacted: str | None = None


#: Metadata keys that name who said a memory (read by the speaker cue, too).
SPEAKER_KEYS = ("role", "speaker")


def records_speech(type_: str, on_duplicate: str, metadata: Mapping[str, Any]) -> bool:
    """Whether a write records what was said (a logged turn) rather than knowledge:
    an ``episodic`` memory, a write with ``on_duplicate="keep"`` (per call or
    ``DUPLICATE_POLICY``), or one whose metadata names its speaker (a non-empty
    ``role`` or ``speaker``: how ``record_turn`` callers and mem0's ``infer=False``
    log messages through ``add``). The first two are what
    :func:`memchentic.write.resolve.is_record_of_speech` calls a record of speech.

    Such a write has a secret redacted rather than being refused, and its default
    lifetime is ``RECORD_DEFAULT_TTL_DAYS`` (issue 31, items 6 and 8)."""
    if type_ == EPISODIC or on_duplicate == "keep":
        return True
    return any(isinstance(metadata.get(k), str) and metadata[k].strip() for k in SPEAKER_KEYS)


class Writes:
    """The write path: every write is validated, policed for secrets, embedded, then
    resolved against its neighbours inside one store transaction."""

    def __init__(
        self,
        parts: Parts,
        gate: Gate,
        *,
        add_many: Callable[..., builtins.list[WriteResult]] | None = None,
        delete: Callable[..., WriteResult] | None = None,
    ) -> None:
        self.parts = parts
        self.gate = gate
        # the operations this service runs itself, as ``Memory`` runs them (traced)
        self._add_many = add_many or self.add_many
        self._delete = delete or self.delete

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
        return self._add_many([{"content": content, **options}])[0]

    remember = add

    def add_many(
        self, items: Iterable[str | Mapping[str, Any]], **common: Any
    ) -> builtins.list[WriteResult]:
        """Remember several memories with one batched embedding call; each item is a
        string or a mapping of :meth:`add` options (``common`` applies to all); at most
        ``MAX_WRITES_PER_CALL`` items (else :class:`LimitError`, nothing written)."""
        items = list(items)
        check.within(len(items), self.parts.settings.max_writes_per_call, "items",
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
            on_duplicate = self.gate.duplicate_policy(policies[-1])
            prepared.append(self._prepare(**options, _scopes=scopes, _on_duplicate=on_duplicate))
        if not prepared:
            return []
        todo = [p for p in prepared if p.refusal is None]
        vectors = (
            self.parts.embedder.embed_batch([p.text_for_embedding for p in todo])
            if todo
            else np.zeros((0, self.parts.embedder.dimension), dtype=np.float32)
        )
        by_id = {p.record.id: v for p, v in zip(todo, vectors, strict=True)}
        actor = self.gate.actor  # once a call
        contexts = [
            self.gate.write_context(prep.record.created_at or utcnow(), policy, link=link,
                                    actor=actor)
            for prep, policy, link in zip(prepared, policies, linking, strict=True)
        ]  # fmt: skip
        with self.gate.write():
            self._check_slots([p.record for p in todo], scopes)
            check_working_cap(self.gate, [p.record for p in todo], utcnow())
            resolved = iter(resolve_many([
                (ctx, prep.record, by_id[prep.record.id])
                for prep, ctx in zip(prepared, contexts, strict=True) if prep.refusal is None
            ]))  # fmt: skip
            results = [
                prep.refusal if prep.refusal is not None else next(resolved) for prep in prepared
            ]
        for prep, result in zip(prepared, results, strict=True):
            if prep.redacted is not None:  # what was redacted, beside the rule that decided
                result.reason = "; ".join(filter(None, (result.reason, prep.redacted)))
        pending: list[tuple[str, str, str, dict[str, object]]] = []
        for prep, ctx, result in zip(prepared, contexts, results, strict=True):
            pending.extend(ctx.pending)
            pending.append(_write_event(prep.record, result))
        self.gate.emit_many(pending)
        return results

    def _check_slots(
        self, records: Sequence[MemoryRecord], scopes: dict[tuple[Any, ...], Any]
    ) -> None:
        """A keyed write changes the memory its slot holds: refused whole
        (:class:`ForbiddenError`, nothing stored) when the caller may not write that
        memory (a group's charter under any key). Inside the write's transaction."""
        if self.gate.principal.trusted:
            return
        for record in records:
            if not record.slot_key:
                continue
            held = self.gate.find_slot(record.namespace, record.slot_key)
            if held is None:
                continue
            if (held.namespace, held.type) not in scopes:
                scopes[held.namespace, held.type] = self.gate.can_write(held.namespace, held.type)
            if not scopes[held.namespace, held.type]:
                raise ForbiddenError(held.id)

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
        _on_duplicate: str = "refuse",
    ) -> _Prepared:
        s = self.parts.settings
        text = check.content(content, s)
        scopes = {} if _scopes is None else _scopes
        where = (namespace, user_id, agent_id)
        if where not in scopes:
            scopes[where] = self.gate.write_namespace(namespace, user_id, agent_id)
        ns = scopes[where]
        if where == (None, None, None) and ns == self.gate.own_namespace:
            # An identity's write to its own namespace is by that user or agent.
            owner, _, name = ns.partition(":")
            if owner == "user":
                user_id = name
            elif owner == "agent":
                agent_id = name
        type_ = normalise_type(type)
        if (ns, type_) not in scopes:
            scopes[ns, type_] = self.gate.can_write(ns, type_)
        if not scopes[ns, type_]:
            raise NamespaceError("namespace", "you cannot write to this namespace")
        if type_ == CHARTER_TYPE:
            slot_key = CHARTER_TYPE  # one charter per group: a new one replaces it
        elif (right := slot_right(ns, slot_key, type_)) != type_:
            if (ns, right) not in scopes:
                scopes[ns, right] = self.gate.can_write(ns, right)
            if not scopes[ns, right]:
                raise ForbiddenError(
                    str(slot_key), f"slot_key: {slot_key!r} holds the group's {right}; only "
                    f"the group's admins write it",
                )  # fmt: skip
        clock = now_of(now)
        created = as_utc(created_at, "created_at") or clock
        meta = check.metadata(metadata, s)
        speech = records_speech(type_, _on_duplicate, meta)
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
            slot_key=check.optional_text(slot_key, "slot_key", check.SLOT_KEY_CHARS),
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
                speech=speech,
            ),  # fmt: skip
            metadata=meta,
        )
        check.validity(record.valid_from, record.valid_to)
        given = check.entities(entities)
        record.entities = given or []  # scanned with the other fields
        policy = effective_policy(secrets, s.secret_policy, trusted=self.gate.principal.trusted,
                                  speech=speech)  # fmt: skip
        refusal, redacted = _apply_secret_policy(record, policy)
        if refusal is not None:
            return _Prepared(record, "", refusal)
        record.polarity = self.parts.polarity.polarity(record.content)
        if given is None:
            record.entities = self._entities(record)
        # Unicode forms and invisible characters embed alike
        text = memory_embedding_text(record.title, record.content)
        return _Prepared(record, text, redacted=redacted)

    def revise(self, memory_id: str, content: str | None = None, **changes: Any) -> WriteResult:
        """Edit a memory (content and other fields); moves ``updated_at`` (resets its age)
        and brings an expired memory back."""
        now = now_of(changes.pop("now", None))
        with self.gate.write():
            old = self.gate.writable(memory_id)
            new = self._changed(old, content, changes)
            new.updated_at = now
            if new.expires_at is not None:
                new.expires_at = max(
                    new.expires_at, initial_expiry(now, self.parts.settings) or now
                )
            check_revival(self.gate, old, new, now)  # an expired one, or one retyped
            vector = None
            if new.content != old.content or new.title != old.title:
                new.polarity = self.parts.polarity.polarity(new.content)
                if "entities" not in changes:
                    new.entities = self._entities(new)
                vector = self.parts.embedder.embed(memory_embedding_text(new.title, new.content))
            self.gate.update(new, vector)
            ctx = self.gate.write_context(now)
            record_version(ctx, new.namespace, new.id, "revise", diff(old, new))
        self.gate.flush(ctx, ("memory.updated", new.namespace, new.id, {"status": "revised"}))
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
        when = now_of(now)
        with self.gate.write():
            old = self.gate.writable(memory_id)
            new = self._changed(old, None, changes)
            self.gate.update(new)
            ctx = self.gate.write_context(when)
            record_version(ctx, new.namespace, new.id, "improve", diff(old, new))
        self.gate.flush(ctx, ("memory.updated", new.namespace, new.id, {"status": "improved"}))
        return WriteResult("updated", new.id, [new.id], memory=new)

    def _changed(
        self, old: MemoryRecord, content: str | None, changes: dict[str, Any]
    ) -> MemoryRecord:
        s = self.parts.settings
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
        speech = records_speech(new.type, "", new.metadata)  # a logged turn is redacted
        police_record(new, effective_policy(None, s.secret_policy, trusted=True, speech=speech),
                      changed)  # fmt: skip
        return new

    def _retyped(self, old: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        """A change of type is a write of the new type, under the rules of ``add``: only
        a group's admins write its ``charter``, and a group has one (issue 20, item 3)."""
        if not self.gate.can_write(old.namespace, new.type):
            raise NamespaceError("type", f"you cannot write {new.type} memories here")
        if new.type == CHARTER_TYPE:
            current = self.gate.find_slot(old.namespace, CHARTER_TYPE)
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
        with self.gate.write():
            record = self.gate.writable(memory_id)
            if _due is not None and not _due(record):
                return WriteResult("kept", memory_id, [memory_id])
            self.gate.delete(record)
            tomb: dict[str, list[object]] = {"namespace": [record.namespace, None]}
            ctx = self.gate.write_context(now)
            record_version(ctx, record.namespace, memory_id, "delete", tomb)
        self.gate.flush(ctx, ("memory.deleted", record.namespace, memory_id, {}))
        return WriteResult("deleted", memory_id, [memory_id])

    forget = delete

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        """Forget every memory of one scope, and nothing outside it; returns how many.

        At least one of ``user_id`` (that user's namespace), ``agent_id`` (that
        agent's memories: its namespace, or written by it), ``session_id`` or
        ``namespace`` is required; given together, a memory must match all. Only
        memories the caller may delete go; each is deleted as :meth:`delete` does
        (a tombstone version, a ``memory.deleted`` event). Emptying the whole store
        is :meth:`reset`, for the trusted local principal only."""
        if user_id is None and agent_id is None and session_id is None and namespace is None:
            raise ValidationError(
                "scope", "delete_all needs user_id, agent_id, session_id or namespace"
            )
        for field, value in (
            ("user_id", user_id),
            ("agent_id", agent_id),
            ("session_id", session_id),
            ("namespace", namespace),
        ):
            check.scope_value(value, field)  # "" is an error, never "no scope"
        sid = check.optional_text(session_id, "session_id", 256)
        flt = self.gate.read_filter(
            user_id=user_id, agent_id=agent_id, namespace=namespace, now=utcnow(),
            include_expired=True, include_superseded=True,
        )  # fmt: skip
        if flt.namespaces == []:
            return 0
        doomed = [
            r.id for r in self.gate.iter_memories(flt)
            if (sid is None or r.session_id == sid)
            and (agent_id is None or by_agent(r, agent_id))
            and self.gate.can_write(r.namespace, r.type)
        ]  # fmt: skip
        deleted = 0
        for memory_id in doomed:
            try:
                deleted += self._delete(memory_id).status == "deleted"
            except NotFoundError:  # deleted meanwhile
                continue
        return deleted

    def _entities(self, record: MemoryRecord) -> builtins.list[str]:
        text = " ".join(filter(None, (record.title, record.content)))
        return self.parts.entity_extractor.extract(text)[:64]

    def pin(self, memory_id: str) -> WriteResult:
        """Pin a memory: it goes in the stable part of every context that can see it."""
        return self._set_pinned(memory_id, True)

    def unpin(self, memory_id: str) -> WriteResult:
        """Undo :meth:`pin`."""
        return self._set_pinned(memory_id, False)

    def _set_pinned(self, memory_id: str, value: bool) -> WriteResult:
        """Change only ``pinned`` (not ``updated_at``: pinning does not make a memory
        fresher); a version and ``memory.pinned`` / ``memory.unpinned`` record it."""
        now = now_of(None)
        with self.gate.write():
            old = self.gate.writable(memory_id)
            if old.pinned == value:
                state = "pinned" if value else "not pinned"
                return WriteResult("updated", old.id, [old.id], reason=f"already {state}",
                                   memory=old)  # fmt: skip
            new = replace(old, pinned=value)
            self.gate.update(new)
            ctx = self.gate.write_context(now)
            record_version(ctx, new.namespace, new.id, "pin" if value else "unpin",
                           diff(old, new))  # fmt: skip
        event = "memory.pinned" if value else "memory.unpinned"
        self.gate.flush(ctx, (event, new.namespace, new.id, {}))
        return WriteResult("updated", new.id, [new.id], memory=new)

    def restore(self, memory_id: str, *, now: datetime | str | None = None) -> WriteResult:
        """Bring a superseded (or expired) memory back live: undo an automatic decision.

        The ``supersedes`` edges that hide it are removed, so list, search, recall and
        context show it again; the memory that superseded it stays live too (delete
        it to undo the write entirely). An expired memory gets a fresh expiry, as a
        new write of it would (``revise`` revives it too, but edits). A version
        ``restore`` (who, when, the ``superseded_by`` / ``expires_at`` it undid) and a
        ``memory.restored`` event record it. Status ``restored`` (``ids``: it, then
        the newer memories the caller can see), or ``unchanged`` when it is neither
        superseded nor expired. The caller must be able to write the memory; one it
        cannot see is a :class:`NotFoundError` (issue 31, item 7). A working memory
        made live again counts against ``WORKING_MEMORY_MAX_PER_IDENTITY`` as a new
        one would, for the identity that first wrote it (refused over it)."""
        when = now_of(now)
        with self.gate.write():
            old = self.gate.writable(memory_id)
            hiding = [e for e in self.gate.edges(old.id, kind="supersedes") if e.target == old.id]
            expired = old.is_expired(when)
            if not (old.superseded_by or hiding or expired):
                return WriteResult("unchanged", old.id, [old.id],
                                   reason="not superseded or expired", memory=old)  # fmt: skip
            new = replace(old, superseded_by=None)
            if expired:
                new.expires_at = initial_expiry(
                    when, self.parts.settings, speech=records_speech(old.type, "", old.metadata)
                )
            check_revival(self.gate, old, new, when)  # live again: within the cap
            for edge in hiding:
                self.gate.delete_edge(edge.id)
            self.gate.update(new)
            ctx = self.gate.write_context(when)
            record_version(ctx, new.namespace, new.id, "restore", diff(old, new))
        undone = [name for name, done in (("superseded", old.superseded_by or hiding),
                                          ("expired", expired)) if done]  # fmt: skip
        newer = dict.fromkeys([e.source for e in hiding] + [old.superseded_by or ""])
        shown = list(self.gate.readable_many([i for i in newer if i]))
        self.gate.flush(ctx, ("memory.restored", new.namespace, new.id, {"undone": undone}))
        return WriteResult("restored", new.id, [new.id, *sorted(shown)],
                           reason="restore:" + ",".join(undone), memory=new)  # fmt: skip


def _apply_secret_policy(
    record: MemoryRecord, policy: str, fields: Sequence[str] = RECORD_FIELDS
) -> tuple[WriteResult | None, str | None]:
    """Secrets in ``fields`` (every field a write sets), docs/design.md, section 4, step 5: a
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


ADD_OPTIONS = frozenset(
    {n for n in inspect.signature(Writes._prepare).parameters if not n.startswith("_")}
    | {"on_duplicate", "auto_edges"}
) - {"self"}


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
