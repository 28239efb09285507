"""The context side of :class:`~memchentic.Memory`: ``context`` and ``pin``/``unpin``."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from .. import validation as check
from ..clock import as_utc
from ..errors import ValidationError
from ..mixins import as_memory
from ..record import WriteResult
from ..write.resolve import diff, record_version
from .builder import Request, build
from .model import Context

if TYPE_CHECKING:
    pass


def _whole(value: object, field: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(field, f"must be a whole number >= {minimum}")
    return value


class ContextMixin:
    """Methods of ``Memory`` that build prompt context (DESIGN section 7)."""

    def context(
        self,
        query: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        budget_tokens: int | None = None,
        limit: int | None = None,
        recent_turns: int | None = None,
        as_of: datetime | str | None = None,
        now: datetime | str | None = None,
    ) -> Context:
        """A block of memory for a prompt: up to sixteen sections, the stable part
        (instructions, profile, goals, pinned) first and byte-identical between calls
        while its memories do not change (see docs/context.md).

        :param query: what the prompt is about; relevant facts, episodes, knowledge and
            the rest come from one search for it (None or "": stable and session parts only).
        :param session_id: the session whose working memory, summary and recent turns
            are shown; default ``default:<user_id>``. It never filters the search.
        :param budget_tokens: keep the most important items whose rendered block fits;
            the others are listed in ``ctx.dropped``.
        :param limit: search hits to sort into sections (``CONTEXT_SEARCH_LIMIT``).
        :param recent_turns: turns of the session to show (``CONTEXT_RECENT_TURNS``).
        :param as_of: only memories that held then (``valid_from <= as_of < valid_to``),
            in every section, as in ``search``; turns are shown as they are.
        """
        mem = as_memory(self)
        if query is not None and not isinstance(query, str):
            raise ValidationError("query", "must be a string")
        if query is not None and query.strip():
            query = check.query(query, mem.settings)  # the rules of search
        req = Request(
            query, user_id, agent_id, namespace, session_id,
            budget_tokens=_whole(budget_tokens, "budget_tokens", 1),
            search_limit=_whole(limit, "limit", 1),
            recent_turns=_whole(recent_turns, "recent_turns", 0),
            as_of=as_utc(as_of, "as_of"),
        )  # fmt: skip
        return build(mem, req, mem._now(now))

    build_context = context

    def pin(self, memory_id: str) -> WriteResult:
        """Pin a memory: it goes in the stable part of every context that can see it."""
        return self._set_pinned(memory_id, True)

    def unpin(self, memory_id: str) -> WriteResult:
        """Undo :meth:`pin`."""
        return self._set_pinned(memory_id, False)

    def _set_pinned(self, memory_id: str, value: bool) -> WriteResult:
        """Change only ``pinned`` (not ``updated_at``: pinning does not make a memory
        fresher); a version and ``memory.pinned`` / ``memory.unpinned`` record it."""
        mem = as_memory(self)
        now = mem._now(None)
        with mem.store.write():
            old = mem._writable(memory_id)
            if old.pinned == value:
                state = "pinned" if value else "not pinned"
                return WriteResult("updated", old.id, [old.id], reason=f"already {state}",
                                   memory=old)  # fmt: skip
            new = replace(old, pinned=value)
            mem.store.update(new)
            ctx = mem._ctx(now)
            record_version(ctx, new.namespace, new.id, "pin" if value else "unpin",
                           diff(old, new))  # fmt: skip
        event = "memory.pinned" if value else "memory.unpinned"
        mem._flush(ctx, (event, new.namespace, new.id, {}))
        return WriteResult("updated", new.id, [new.id], memory=new)
