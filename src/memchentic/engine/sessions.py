"""Short-term memory (docs/design.md, section 7): sessions of turns, working memory and
session summaries.

- A turn (``record_turn`` / ``add_message``) is stored in the caller's scope by the
  same rules as a write (``user_id``, ``agent_id``, ``namespace``, or an identity's
  private namespace), so only those who can read that namespace see it.
- Without a session id, each user gets the session ``default:<user_id>`` (the
  identity's name for an identity, ``DEFAULT_USER_ID`` for the local user).
- Working memory is memories of type ``working`` that carry the session id; they
  expire after ``WORKING_MEMORY_TTL_DAYS`` unless told otherwise. Session ids
  never filter search: they choose what the session sections of a context show.
- ``summarize_session`` writes one ``summary`` memory per session and namespace,
  under the slot ``session:<id>:summary``, so running it again replaces it.
  The default summariser is extractive (no model): :class:`ExtractiveSummarizer`.
- Secrets in turns (content and metadata) are redacted (unless
  ``SECRET_POLICY=allow``): refusing a turn would break the conversation log. The
  turn's metadata says what was redacted (``redacted``: the kinds,
  ``redacted_count``: how many), never the secret itself.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .. import validation as check
from ..context.sections import WORKING_TYPE, session_summary_slot
from ..errors import NamespaceError, ValidationError
from ..ids import new_id
from ..learn.summaries import ExtractiveSummarizer, Summarizer
from ..record import MemoryRecord, Turn, WriteResult
from ..write.secrets import apply_policy, redaction_note
from .gate import Gate, now_of
from .parts import Parts

if TYPE_CHECKING:
    from ..store.filters import MemoryFilter

DEFAULT_SESSION_PREFIX = "default:"
MAX_SESSION_ID_CHARS = 200
MAX_ROLE_CHARS = 32


def check_session_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("session_id", "must be a non-empty string")
    if len(value) > MAX_SESSION_ID_CHARS:
        raise ValidationError("session_id", f"at most {MAX_SESSION_ID_CHARS} characters")
    return check.identifier(value, "session_id")  # no NUL or other control characters


def resolve_session_id(gate: Gate, session_id: str | None, user_id: str | None) -> str:
    """The session id, or the caller's default session ``default:<user>``."""
    if session_id is not None:
        return check_session_id(session_id)
    if user_id is not None:
        who = user_id
    elif gate.principal.trusted:
        who = gate.parts.settings.default_user_id
    else:
        who = gate.principal.name
    return check_session_id(f"{DEFAULT_SESSION_PREFIX}{who}")


def turn_read_namespace(
    gate: Gate, user_id: str | None, agent_id: str | None, namespace: str | None
) -> tuple[bool, str | None]:
    """Which turns a read may see: ``(visible, namespace)``; ``namespace`` None means
    every namespace (the trusted local principal naming no scope)."""
    if gate.principal.trusted and namespace is None and user_id is None and agent_id is None:
        return True, None
    try:
        ns = gate.write_namespace(namespace, user_id, agent_id)
    except NamespaceError:  # unknown names read as empty, like forbidden ones
        return False, None
    return gate.can_read(ns), ns


class Sessions:
    """Methods of ``Memory`` for sessions: turns, working memory, summaries.
    ``add``: the write path's (working memory and summaries are memories)."""

    def __init__(
        self,
        parts: Parts,
        gate: Gate,
        *,
        add: Callable[..., WriteResult],
        record_turn: Callable[..., Turn] | None = None,
    ) -> None:
        self.parts = parts
        self.gate = gate
        self.add = add
        self._record_turn = record_turn or self.record_turn  # as ``Memory`` runs it (traced)
        #: The summariser of :meth:`summarize_session`; None = :class:`ExtractiveSummarizer`
        #: with ``SESSION_SUMMARY_SENTENCES`` (``Memory.summarizer`` sets it).
        self.summarizer: Summarizer | None = None

    def record_turn(
        self,
        role: str,
        content: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        now: datetime | str | None = None,
    ) -> Turn:
        """Append one message (``role``: user, assistant, system, tool, ...) to a session."""
        if not isinstance(role, str) or not role.strip() or len(role) > MAX_ROLE_CHARS:
            raise ValidationError("role", f"must be a non-empty string of <= {MAX_ROLE_CHARS}")
        check.identifier(role, "role")
        text = check.content(content, self.parts.settings)
        meta = check.metadata(metadata, self.parts.settings)
        if self.parts.settings.secret_policy != "allow":  # redacted, never refused (the docstring)
            said = SimpleNamespace(content=text, metadata=meta)
            found = apply_policy(said, "redact", ("content", "metadata"))
            if found:  # the kinds and how many, never the secret (issue 31, item 6)
                text, meta = said.content, {**said.metadata, **redaction_note(found)}
        sid = resolve_session_id(self.gate, session_id, user_id)
        ns = self.gate.write_namespace(namespace, user_id, agent_id)
        if not self.gate.can_write(ns, WORKING_TYPE):
            raise NamespaceError("namespace", "you cannot write to this namespace")
        at = now_of(now)
        turn = Turn(new_id(int(at.timestamp() * 1000)), sid, ns, role.strip().lower(), text, at,
                    meta)  # fmt: skip
        self.gate.add_turn(turn)
        return turn

    def add_message(self, message: Mapping[str, Any], **options: Any) -> Turn:
        """Append a chat message ``{"role": ..., "content": ..., "metadata": ...}``;
        ``options`` as for :meth:`record_turn` (``session_id``, ``user_id``, ...)."""
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise ValidationError("message", "must be a mapping with 'role' and 'content'")
        if "metadata" in message:
            options.setdefault("metadata", message["metadata"])
        return self._record_turn(message["role"], message["content"], **options)

    def get_history(
        self,
        session_id: str | None = None,
        limit: int = 50,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
    ) -> builtins.list[Turn]:
        """The last ``limit`` turns of a session that the caller can see, oldest first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("limit", "must be a whole number >= 1")
        sid = resolve_session_id(self.gate, session_id, user_id)
        visible, ns = turn_read_namespace(self.gate, user_id, agent_id, namespace)
        return self.gate.turns(sid, namespace=ns, limit=limit) if visible else []

    def list_sessions(
        self, *, user_id: str | None = None, namespace: str | None = None
    ) -> builtins.list[tuple[str, int]]:
        """``(session id, turns)`` of the sessions the caller can see, latest first."""
        if user_id is None and namespace is None:
            spaces = self.gate.readable_namespaces(None)
        else:
            visible, ns = turn_read_namespace(self.gate, user_id, None, namespace)
            if not visible:
                return []
            spaces = None if ns is None else [ns]
        return [] if spaces == [] else self.gate.sessions(namespaces=spaces)

    def add_working(
        self,
        content: str,
        *,
        session_id: str | None = None,
        key: str | None = None,
        **options: Any,
    ) -> WriteResult:
        """Remember something for this session only (type ``working``); with ``key``, a
        second write of the same key replaces the first (an empty or blank ``key``
        is a :class:`ValidationError` naming ``key``). Expires after
        ``WORKING_MEMORY_TTL_DAYS`` unless ``ttl_days`` or ``permanent`` say otherwise."""
        sid = resolve_session_id(self.gate, session_id, options.get("user_id"))
        if key is not None:
            prefix = f"session:{sid}:working:"
            # checked under the caller's name: the slot key it becomes is ours; an
            # empty or blank key is an error, never "no key" (a new memory each time)
            check.scope_value(key, "key")
            key = check.optional_text(key, "key", max(1, check.SLOT_KEY_CHARS - len(prefix)))
            options["slot_key"] = f"{prefix}{key}"
        if "ttl_days" not in options and "permanent" not in options:
            ttl = self.parts.settings.working_memory_ttl_days
            options["permanent"] = ttl == 0
            options["ttl_days"] = ttl or None
        return self.add(content, type=WORKING_TYPE, session_id=sid, **options)

    def working_memory(
        self,
        session_id: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        limit: int | None = None,
        now: datetime | str | None = None,
    ) -> builtins.list[MemoryRecord]:
        """The newest ``limit`` (default ``CONTEXT_SECTION_LIMIT``, at most
        ``LIST_MAX_LIMIT``) live working memories of a session, oldest first; read by
        session, each namespace taking its turn (:func:`session_working`)."""
        count = self.parts.settings.context_section_limit if limit is None else (
            check.page_limit(limit, self.parts.settings))  # fmt: skip
        sid = resolve_session_id(self.gate, session_id, user_id)
        flt = self.gate.read_filter(user_id=user_id, agent_id=agent_id, namespace=namespace,
                                now=now_of(now))  # fmt: skip
        own = self.gate.own_namespace
        return sorted(session_working(self.gate, flt, sid, count, own), key=_created)

    def summarize_session(
        self,
        session_id: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        summarizer: Summarizer | None = None,
        now: datetime | str | None = None,
    ) -> WriteResult:
        """Write (or replace) the session's ``summary`` memory from its last
        ``SESSION_SUMMARY_MAX_TURNS`` turns in the caller's scope; ``refused`` with
        reason ``empty session`` when it has none."""
        sid = resolve_session_id(self.gate, session_id, user_id)
        ns = self.gate.write_namespace(namespace, user_id, agent_id)
        if not self.gate.can_write(ns, "summary"):
            raise NamespaceError("namespace", "you cannot write to this namespace")
        turns = self.gate.turns(
            sid, namespace=ns, limit=self.parts.settings.session_summary_max_turns
        )
        if not turns:
            return WriteResult("refused", None, [], reason="empty session")
        chosen = (
            summarizer
            or self.summarizer
            or ExtractiveSummarizer(self.parts.settings.session_summary_sentences)
        )
        text = chosen.summarize(turns)
        result = self.add(
            text, type="summary", slot_key=session_summary_slot(sid), session_id=sid,
            namespace=ns, user_id=user_id, agent_id=agent_id, title=f"Session {sid}",
            metadata={"session_id": sid, "turns": len(turns), "last_turn": turns[-1].id,
                      "summarizer": getattr(chosen, "name", type(chosen).__name__)},
            now=now,
        )  # fmt: skip
        if result.ok:
            self.gate.emit(
                "session.summarized", namespace=ns,
                memory_id=result.id, session_id=sid, turns=len(turns), status=result.status,
            )  # fmt: skip
        return result


def session_working(
    gate: Gate, flt: MemoryFilter, session_id: str, limit: int, first: str | None = None
) -> builtins.list[MemoryRecord]:
    """The newest ``limit`` live working memories of a session that pass ``flt``.

    Read by session (``MemoryFilter.session_id``, along ``ix_memories_working``), one
    namespace at a time, never as a window of the newest working memories: writers
    of a shared namespace could push a session's own out of such a window (issue 32,
    item 3). When more than ``limit`` are found, the namespaces take turns, newest
    first in each, ``first`` (the caller's own namespace) first, so one namespace
    cannot crowd out another's either."""
    if flt.namespaces == [] or limit < 1:
        return []
    by_session = replace(flt, types=[WORKING_TYPE], session_id=session_id)
    spaces: builtins.list[Sequence[str] | None] = [None]
    if flt.namespaces is not None:
        ordered = sorted(dict.fromkeys(flt.namespaces), key=lambda ns: ns != first)
        spaces = [[ns] for ns in ordered]
    found = [
        gate.list_memories(replace(by_session, namespaces=ns), limit=limit, newest_first=True)
        for ns in spaces
    ]
    chosen: builtins.list[MemoryRecord] = []
    for rank in range(max(map(len, found))):
        chosen.extend(rows[rank] for rows in found if rank < len(rows))
    return chosen[:limit]


def _created(record: MemoryRecord) -> tuple[str, str]:
    return (record.created_at.isoformat() if record.created_at else "", record.id)
