"""The learning service: ``learn`` (extract memories from
a conversation) and ``manage`` (apply a list of memory operations in one call)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .. import validation as check
from ..errors import MemchenticError, ValidationError
from ..learn.base import Extractor, Message, to_messages
from ..learn.openai_chat import OpenAIChatExtractor
from ..learn.rules import RuleExtractor
from ..llm import ChatClient
from ..record import Turn, WriteResult
from ..settings import Settings
from .gate import Gate
from .parts import Parts

#: Operation names ``manage`` accepts, with their aliases (mem0 and LangMem spellings).
MANAGE_OPS: dict[str, str] = {
    "add": "add", "create": "add", "insert": "add",
    "revise": "revise", "update": "revise", "edit": "revise",
    "delete": "delete", "forget": "delete", "remove": "delete",
    "none": "none", "noop": "none", "keep": "none",
}  # fmt: skip


def default_extractor(settings: Settings) -> tuple[Extractor, bool]:
    """The chat extractor when ``CHAT_BASE_URL`` is set, else the rules; and whether
    the caller owns it (and must close it)."""
    client = ChatClient.from_settings(settings)
    if client is None:
        return RuleExtractor(), False
    return OpenAIChatExtractor(client), True


class Learning:
    """Conversations and lists of operations turned into writes, through the write
    path's ``add``, ``add_many``, ``revise`` and ``delete`` (passed in)."""

    def __init__(
        self,
        parts: Parts,
        gate: Gate,
        *,
        add: Callable[..., WriteResult],
        add_many: Callable[..., builtins.list[WriteResult]],
        revise: Callable[..., WriteResult],
        delete: Callable[[str], WriteResult],
    ) -> None:
        self.parts = parts
        self.gate = gate
        self.add = add
        self.add_many = add_many
        self.revise = revise
        self.delete = delete
        #: The extractor of :meth:`learn`; None = a chat model when ``CHAT_BASE_URL``
        #: is set, else :class:`~memchentic.learn.rules.RuleExtractor`.
        self.extractor: Extractor | None = None

    def learn(
        self,
        messages: str | Iterable[str | Mapping[str, Any] | Turn | Message],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        extractor: Extractor | None = None,
        metadata: Mapping[str, Any] | None = None,
        now: datetime | str | None = None,
    ) -> builtins.list[WriteResult]:
        """Extract memories from a conversation and write each one through the normal
        write path (slots, duplicates, contradictions, secrets); returns the write
        results in order. ``messages``: strings (user messages), ``{"role", "content"}``
        mappings or turns (``get_history()``). ``metadata``: added to every memory
        found (beside ``source`` and ``extractor``, which it cannot replace).

        Limits (each a :class:`~memchentic.errors.LimitError` naming the setting, before
        anything is written): ``LEARN_MAX_LINES`` and ``LEARN_MAX_CHARS`` of all the
        messages together, ``MAX_WRITES_PER_CALL`` memories found."""
        msgs = to_messages(messages)
        s = self.parts.settings
        check.within(sum(m.content.count("\n") + 1 for m in msgs), s.learn_max_lines,
                     "messages", "LEARN_MAX_LINES", "lines")  # fmt: skip
        check.within(sum(len(m.content) for m in msgs), s.learn_max_chars, "messages",
                     "LEARN_MAX_CHARS", "characters")  # fmt: skip
        owned = False
        chosen = extractor or self.extractor
        if chosen is None:
            chosen, owned = default_extractor(self.parts.settings)
        try:
            found = chosen.extract(msgs)
        finally:
            close = getattr(chosen, "close", None)
            if owned and close is not None:
                close()
        if not found:
            return []
        check.within(len(found), s.max_writes_per_call, "messages", "MAX_WRITES_PER_CALL",
                     "memories written")  # fmt: skip
        name = getattr(chosen, "name", type(chosen).__name__)
        scope = {"user_id": user_id, "agent_id": agent_id, "session_id": session_id,
                 "namespace": namespace, "now": now}  # fmt: skip
        common = {k: v for k, v in scope.items() if v is not None}
        extra = check.metadata(metadata, s) if metadata is not None else {}
        items = [item.to_options(name) for item in found]
        for options in items:
            options["metadata"] = {**extra, **options["metadata"]}
        results = self.add_many(items, **common)
        fallback = self.gate.write_namespace(namespace, user_id, agent_id)
        for result in results:
            ns = result.memory.namespace if result.memory is not None else fallback
            self.gate.emit("memory.extracted", namespace=ns, memory_id=result.id,
                           status=result.status, extractor=name)  # fmt: skip
        return results

    def manage(
        self,
        operations: Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        session_id: str | None = None,
    ) -> builtins.list[WriteResult]:
        """Apply memory operations in order, in one call (an agent's "manage memories"
        tool): ``{"op": "add", "content": ..., **add options}``, ``{"op": "revise",
        "id": ..., "content": ..., **changes}``, ``{"op": "delete", "id": ...}`` and
        ``{"op": "none"}`` (aliases: create, update, forget, noop, ...).

        Every operation is checked before any is applied (a malformed one raises
        :class:`ValidationError` and nothing changes). Then each runs as its own
        write; one that fails (a memory not found or not writable, a bad field) is
        reported as ``refused`` with the reason, and the others still run.
        The scope options apply to adds that name none of their own. At most
        ``MAX_WRITES_PER_CALL`` operations (else :class:`~memchentic.errors.LimitError`)."""
        ops = _sequence(operations)
        check.within(len(ops), self.parts.settings.max_writes_per_call, "operations",
                     "MAX_WRITES_PER_CALL", "operations")  # fmt: skip
        planned = [_plan(i, op) for i, op in enumerate(ops)]
        scope = {"user_id": user_id, "agent_id": agent_id, "namespace": namespace,
                 "session_id": session_id}  # fmt: skip
        common = {k: v for k, v in scope.items() if v is not None}
        results: list[WriteResult] = []
        for name, fields in planned:
            result, ns = self._apply_operation(name, fields, common)
            results.append(result)
            if name != "none":
                self.gate.emit("memory.managed", namespace=ns, memory_id=result.id, op=name,
                               status=result.status)  # fmt: skip
        return results

    def _apply_operation(
        self, name: str, fields: dict[str, Any], common: dict[str, Any]
    ) -> tuple[WriteResult, str | None]:
        memory_id = fields.pop("id", None)
        try:
            if name == "add":
                options = {**common, **fields} if not _scoped(fields) else fields
                result = self.add(options.pop("content"), **options)
                ns = result.memory.namespace if result.memory else None
                return result, ns or self.gate.write_namespace(
                    options.get("namespace"), options.get("user_id"), options.get("agent_id")
                )
            if name == "none":
                return WriteResult("skipped", memory_id, [memory_id] if memory_id else []), None
            ns = self.gate.visible(memory_id).namespace
            if name == "revise":
                return self.revise(memory_id, fields.pop("content", None), **fields), ns
            return self.delete(memory_id), ns
        except MemchenticError as exc:
            return WriteResult("refused", memory_id, [], reason=f"{exc.code}: {exc}"), None


def _sequence(operations: Any) -> Sequence[Any]:
    if isinstance(operations, str | bytes | Mapping) or not isinstance(operations, Sequence):
        raise ValidationError("operations", "must be a list of {'op': ...} mappings")
    return operations


def _scoped(fields: Mapping[str, Any]) -> bool:
    return any(fields.get(k) is not None for k in ("user_id", "agent_id", "namespace"))


def _plan(index: int, op: Any) -> tuple[str, dict[str, Any]]:
    """Check one operation's shape; returns (canonical op name, its other fields)."""
    where = f"operations[{index}]"
    if not isinstance(op, Mapping):
        raise ValidationError(where, "must be a mapping with an 'op'")
    name = MANAGE_OPS.get(str(op.get("op", "")).strip().lower())
    if name is None:
        raise ValidationError(where, f"op must be one of {', '.join(sorted(set(MANAGE_OPS)))}")
    fields = {k: v for k, v in op.items() if k != "op"}
    if name == "add" and not isinstance(fields.get("content"), str):
        raise ValidationError(where, "add needs 'content'")
    if name in ("revise", "delete"):
        if not isinstance(fields.get("id"), str) or not fields["id"]:
            raise ValidationError(where, f"{name} needs the memory 'id'")
        check.identifier(fields["id"], f"{where}.id")
        if name == "delete" and set(fields) - {"id"}:
            raise ValidationError(where, "delete takes only 'id'")
    if "memory_id" in fields:
        raise ValidationError(where, "name the memory with 'id'")
    return name, fields
