"""Short-term memory (DESIGN section 7): sessions of turns, working memory and
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
  ``SECRET_POLICY=allow``): refusing a turn would break the conversation log.
"""

from __future__ import annotations

import builtins
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from . import validation as check
from .context.sections import WORKING_TYPE, session_summary_slot
from .errors import NamespaceError, ValidationError
from .ids import new_id
from .mixins import as_memory
from .record import MemoryRecord, Turn, WriteResult
from .write.secrets import redact_value, scan_value

if TYPE_CHECKING:
    from .memory import Memory

DEFAULT_SESSION_PREFIX = "default:"
MAX_SESSION_ID_CHARS = 200
MAX_ROLE_CHARS = 32


class Summarizer(Protocol):
    """Turns a session's turns into the text of its summary memory."""

    name: str

    def summarize(self, turns: Sequence[Turn]) -> str: ...


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# fmt: off
_STOPWORDS = frozenset({
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing",
    "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my",
    "no", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over",
    "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under",
    "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while",
    "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yes", "ok", "okay",
    "sure", "thanks", "thank", "please", "hi", "hello", "hey",
})
# fmt: on


class ExtractiveSummarizer:
    """Keeps the session's most representative sentences, in their order.

    Every sentence of every turn is scored by how frequent its content words are
    across the session (Luhn's method): ``sum(freq(word)) / sqrt(words)``, with
    user sentences weighted ``user_weight`` (they state the facts). The best
    ``sentences`` are kept, each clipped at ``max_sentence_chars``, and written
    as ``role: sentence`` after a line naming the session and counting its turns.
    Deterministic.
    """

    name = "extractive"

    def __init__(
        self, sentences: int = 6, *, max_sentence_chars: int = 300, user_weight: float = 1.5
    ) -> None:
        if sentences < 1:
            raise ValidationError("sentences", "must be at least 1")
        self.sentences = sentences
        self.max_sentence_chars = max_sentence_chars
        self.user_weight = user_weight

    def summarize(self, turns: Sequence[Turn]) -> str:
        pieces: list[tuple[str, str, list[str]]] = []
        for turn in turns:
            for sentence in _SENTENCE.split(turn.content):
                text = " ".join(sentence.split())
                words = [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]
                if text and words:
                    pieces.append((turn.role, text, words))
        freq = Counter(w for _, _, words in pieces for w in set(words))

        def score(i: int) -> float:
            role, _, words = pieces[i]
            value = sum(freq[w] for w in set(words)) / math.sqrt(len(words))
            return value * (self.user_weight if role == "user" else 1.0)

        chosen = sorted(sorted(range(len(pieces)), key=lambda i: (-score(i), i))[: self.sentences])
        roles = Counter(t.role for t in turns)
        counts = ", ".join(f"{r} {n}" for r, n in sorted(roles.items()))
        lines = [f"Session {turns[0].session_id}, {len(turns)} turns ({counts})."]
        for i in chosen:
            role, text, _ = pieces[i]
            if len(text) > self.max_sentence_chars:
                text = text[: self.max_sentence_chars - 1].rstrip() + "…"
            lines.append(f"{role}: {text}")
        return "\n".join(lines)


def check_session_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("session_id", "must be a non-empty string")
    if len(value) > MAX_SESSION_ID_CHARS:
        raise ValidationError("session_id", f"at most {MAX_SESSION_ID_CHARS} characters")
    return check.identifier(value, "session_id")  # no NUL or other control characters


def resolve_session_id(mem: Memory, session_id: str | None, user_id: str | None) -> str:
    """The session id, or the caller's default session ``default:<user>``."""
    if session_id is not None:
        return check_session_id(session_id)
    if user_id is not None:
        who = user_id
    elif mem.principal.trusted:
        who = mem.settings.default_user_id
    else:
        who = mem.principal.name
    return check_session_id(f"{DEFAULT_SESSION_PREFIX}{who}")


def turn_read_namespace(
    mem: Memory, user_id: str | None, agent_id: str | None, namespace: str | None
) -> tuple[bool, str | None]:
    """Which turns a read may see: ``(visible, namespace)``; ``namespace`` None means
    every namespace (the trusted local principal naming no scope)."""
    if mem.principal.trusted and namespace is None and user_id is None and agent_id is None:
        return True, None
    try:
        ns = mem._write_namespace(namespace, user_id, agent_id)
    except NamespaceError:  # unknown names read as empty, like forbidden ones
        return False, None
    return mem.access.can_read(mem.principal, ns), ns


class SessionMixin:
    """Methods of ``Memory`` for sessions: turns, working memory, summaries."""

    #: The summariser of :meth:`summarize_session`; None = :class:`ExtractiveSummarizer`
    #: with ``SESSION_SUMMARY_SENTENCES``. Set it on an instance to plug in another.
    summarizer: Summarizer | None = None

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
        mem = as_memory(self)
        if not isinstance(role, str) or not role.strip() or len(role) > MAX_ROLE_CHARS:
            raise ValidationError("role", f"must be a non-empty string of <= {MAX_ROLE_CHARS}")
        check.identifier(role, "role")
        text = check.content(content, mem.settings)
        meta = check.metadata(metadata, mem.settings)
        if mem.settings.secret_policy != "allow":  # redacted, never refused (the docstring)
            text = redact_value(text) if scan_value(text) else text
            meta = redact_value(meta) if scan_value(meta) else meta
        sid = resolve_session_id(mem, session_id, user_id)
        ns = mem._write_namespace(namespace, user_id, agent_id)
        if not mem.access.can_write(mem.principal, ns, WORKING_TYPE):
            raise NamespaceError("namespace", "you cannot write to this namespace")
        at = mem._now(now)
        turn = Turn(new_id(int(at.timestamp() * 1000)), sid, ns, role.strip().lower(), text, at,
                    meta)  # fmt: skip
        mem.store.add_turn(turn)
        return turn

    def add_message(self, message: Mapping[str, Any], **options: Any) -> Turn:
        """Append a chat message ``{"role": ..., "content": ..., "metadata": ...}``;
        ``options`` as for :meth:`record_turn` (``session_id``, ``user_id``, ...)."""
        mem = as_memory(self)
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise ValidationError("message", "must be a mapping with 'role' and 'content'")
        if "metadata" in message:
            options.setdefault("metadata", message["metadata"])
        return mem.record_turn(message["role"], message["content"], **options)

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
        mem = as_memory(self)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("limit", "must be a whole number >= 1")
        sid = resolve_session_id(mem, session_id, user_id)
        visible, ns = turn_read_namespace(mem, user_id, agent_id, namespace)
        return mem.store.turns(sid, namespace=ns, limit=limit) if visible else []

    def list_sessions(
        self, *, user_id: str | None = None, namespace: str | None = None
    ) -> builtins.list[tuple[str, int]]:
        """``(session id, turns)`` of the sessions the caller can see, latest first."""
        mem = as_memory(self)
        if user_id is None and namespace is None:
            spaces = mem.access.readable(mem.principal, None)
        else:
            visible, ns = turn_read_namespace(mem, user_id, None, namespace)
            if not visible:
                return []
            spaces = None if ns is None else [ns]
        return [] if spaces == [] else mem.store.sessions(namespaces=spaces)

    def add_working(
        self,
        content: str,
        *,
        session_id: str | None = None,
        key: str | None = None,
        **options: Any,
    ) -> WriteResult:
        """Remember something for this session only (type ``working``); with ``key``, a
        second write of the same key replaces the first. Expires after
        ``WORKING_MEMORY_TTL_DAYS`` unless ``ttl_days`` or ``permanent`` say otherwise."""
        mem = as_memory(self)
        sid = resolve_session_id(mem, session_id, options.get("user_id"))
        if key is not None:
            options["slot_key"] = f"session:{sid}:working:{key}"
        if "ttl_days" not in options and "permanent" not in options:
            ttl = mem.settings.working_memory_ttl_days
            options["permanent"] = ttl == 0
            options["ttl_days"] = ttl or None
        return mem.add(content, type=WORKING_TYPE, session_id=sid, **options)

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
        """The newest ``limit`` (default ``CONTEXT_SECTION_LIMIT``) live working memories
        of a session, oldest first."""
        mem = as_memory(self)
        sid = resolve_session_id(mem, session_id, user_id)
        flt = mem._read_filter(user_id=user_id, agent_id=agent_id, namespace=namespace,
                                now=mem._now(now), types=[WORKING_TYPE])  # fmt: skip
        if flt.namespaces == []:
            return []
        found = [
            r
            for r in mem.store.list_memories(flt, limit=10_000, newest_first=True)
            if r.session_id == sid
        ]
        return sorted(found[: limit or mem.settings.context_section_limit], key=_created)

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
        mem = as_memory(self)
        sid = resolve_session_id(mem, session_id, user_id)
        ns = mem._write_namespace(namespace, user_id, agent_id)
        if not mem.access.can_write(mem.principal, ns, "summary"):
            raise NamespaceError("namespace", "you cannot write to this namespace")
        turns = mem.store.turns(sid, namespace=ns, limit=mem.settings.session_summary_max_turns)
        if not turns:
            return WriteResult("refused", None, [], reason="empty session")
        chosen = (
            summarizer
            or mem.summarizer
            or ExtractiveSummarizer(mem.settings.session_summary_sentences)
        )
        text = chosen.summarize(turns)
        result = mem.add(
            text, type="summary", slot_key=session_summary_slot(sid), session_id=sid,
            namespace=ns, user_id=user_id, agent_id=agent_id, title=f"Session {sid}",
            metadata={"session_id": sid, "turns": len(turns), "last_turn": turns[-1].id,
                      "summarizer": getattr(chosen, "name", type(chosen).__name__)},
            now=now,
        )  # fmt: skip
        if result.ok:
            mem.bus.emit(
                "session.summarized", actor=mem.access.actor(mem.principal), namespace=ns,
                memory_id=result.id, session_id=sid, turns=len(turns), status=result.status,
            )  # fmt: skip
        return result


def _created(record: MemoryRecord) -> tuple[str, str]:
    return (record.created_at.isoformat() if record.created_at else "", record.id)
