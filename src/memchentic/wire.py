"""The library's value types rebuilt from their JSON form (``to_dict``), as the HTTP
API sends them; and the exception an error answer stands for. Used by
:class:`~memchentic.Client` and :class:`~memchentic.AsyncClient` so a served memory
returns the same objects (and raises the same errors) as an embedded one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

from . import errors
from .clock import as_utc
from .context.model import Context, ContextItem, Section
from .record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from .reports import Answer, ConsolidationReport, MaintenanceReport, Neighbour, Passage

N = TypeVar("N", int, float)

_RECORD_FIELDS = {f.name for f in fields(MemoryRecord)}
_RECORD_TIMES = ("created_at", "updated_at", "valid_from", "valid_to", "expires_at",
                 "last_recalled_at")  # fmt: skip


def _time(value: Any) -> datetime:
    parsed = as_utc(value)
    if parsed is None:
        raise errors.ValidationError("time", "missing in the server's answer")
    return parsed


def record(data: dict[str, Any]) -> MemoryRecord:
    values = {k: v for k, v in data.items() if k in _RECORD_FIELDS}
    for name in _RECORD_TIMES:
        values[name] = as_utc(values.get(name), name)
    return MemoryRecord(**values)


def edge(data: dict[str, Any]) -> Edge:
    return Edge(data["id"], data["source"], data["target"], data["kind"], data["strength"],
                _time(data["created_at"]), dict(data.get("metadata") or {}))  # fmt: skip


def write_result(data: dict[str, Any]) -> WriteResult:
    memory = data.get("memory")
    return WriteResult(
        data["status"], data.get("id"), list(data.get("ids") or []), reason=data.get("reason"),
        similarity=data.get("similarity"), memory=record(memory) if memory else None,
        edges=[edge(e) for e in data.get("edges") or []],
    )  # fmt: skip


def hit(data: dict[str, Any]) -> SearchHit:
    return SearchHit(record(data["memory"]), data["score"], data["text"], data.get("trace"))


def version(data: dict[str, Any]) -> Version:
    return Version(data["memory_id"], data["version"], data["op"], data["actor"],
                   _time(data["at"]), data.get("changes") or {}, data.get("snapshot"))  # fmt: skip


def event(data: dict[str, Any]) -> Event:
    return Event(data["id"], data["type"], _time(data["at"]), data["actor"], data.get("namespace"),
                 data.get("memory_id"), data.get("payload") or {})  # fmt: skip


def turn(data: dict[str, Any]) -> Turn:
    return Turn(data["id"], data["session_id"], data["namespace"], data["role"], data["content"],
                _time(data["at"]), data.get("metadata") or {})  # fmt: skip


def context(data: dict[str, Any]) -> Context:
    def item(d: dict[str, Any]) -> ContextItem:
        return ContextItem(d["id"], d["text"], d["score"], d["section"], d.get("source", "memory"),
                           d.get("type"), bool(d.get("excerpt", False)), d.get("when"),
                           d.get("earlier"))  # fmt: skip

    sections = [Section(s["name"], s["title"], s["stable"], [item(i) for i in s["items"]])
                for s in data.get("sections") or []]  # fmt: skip
    return Context(
        data.get("query"), data["session_id"], sections,
        dropped=[item(i) for i in data.get("dropped") or []],
        budget_tokens=data.get("budget_tokens"), tokenizer=data.get("tokenizer", "estimate"),
        tokens=data.get("tokens", 0),
    )  # fmt: skip


def neighbour(data: dict[str, Any]) -> Neighbour:
    return Neighbour(record(data["memory"]), data["depth"], data["via"], data["from"])


def answer(data: dict[str, Any]) -> Answer:
    """An answer with its passages; each passage carries its memory (the HTTP API adds
    it to ``Answer.to_dict``, which names only the id and text)."""
    passages = [Passage(p["citation"], record(p["memory"]), p["score"], p["via"])
                for p in data.get("passages") or []]  # fmt: skip
    return Answer(data["question"], passages, data.get("answer"), data.get("answerable", True))


def consolidation_report(data: dict[str, Any]) -> ConsolidationReport:
    return ConsolidationReport(data["dry_run"], list(data.get("clusters") or []))


def maintenance_report(data: dict[str, Any]) -> MaintenanceReport:
    return MaintenanceReport(
        data["dry_run"], dict(data.get("gc") or {}), data.get("consolidation"),
        list(data.get("summaries") or []), data.get("events_pruned"),
    )  # fmt: skip


#: The class of each error code of the API that carries no more than a message (each
#: class names its own ``code``); a code no class here or in :func:`error` knows becomes
#: :class:`~memchentic.errors.ServerError`.
_SIMPLE: dict[str, type[errors.MemchenticError]] = {cls.code: cls for cls in (
    errors.StoreError, errors.NotAStoreError, errors.EmbedderMismatchError,
    errors.EmbedderError, errors.AuthError,
)}  # fmt: skip


def error(status: int, payload: Any) -> errors.MemchenticError:
    """The exception an error answer stands for (the library's own class when it has one)."""
    info = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(info, dict):
        return errors.ServerError(f"HTTP {status}", status=status)
    code = str(info.get("code", "error"))
    message = str(info.get("message", f"HTTP {status}"))
    exc: errors.MemchenticError
    if code == errors.LimitError.code:
        exc = _limit(info, message)
    elif code == errors.StoreTimeoutError.code:
        exc = _timeout(info, message)
    elif code in (errors.ValidationError.code, errors.NamespaceError.code):
        named = code == errors.NamespaceError.code
        invalid = errors.NamespaceError if named else errors.ValidationError
        exc = invalid(str(info.get("field", "")), str(info.get("rule", message)), message)
    elif code in (errors.NotFoundError.code, errors.ForbiddenError.code) and "id" in info:
        missing = code == errors.NotFoundError.code
        exc = (errors.NotFoundError if missing else errors.ForbiddenError)(str(info["id"]))
        exc.message = message
        exc.args = (message,)
    elif code in _SIMPLE:
        exc = _SIMPLE[code](message)
    else:
        exc = errors.ServerError(message, code=code, status=status)
    return exc


def _number(info: dict[str, Any], cast: Callable[[Any], N]) -> N:
    """``info["limit"]`` as ``cast`` makes it; 0 when missing or not a number."""
    try:
        return cast(info.get("limit", 0))
    except (TypeError, ValueError):
        return cast(0)


def _timeout(info: dict[str, Any], message: str) -> errors.StoreTimeoutError:
    limit = _number(info, float)
    exc = errors.StoreTimeoutError(limit, str(info.get("setting") or "STATEMENT_TIMEOUT_SECONDS"))
    exc.message = message
    exc.args = (message,)
    return exc


def _limit(info: dict[str, Any], message: str) -> errors.LimitError:
    limit = _number(info, int)
    exc = errors.LimitError(str(info.get("field", "")), str(info.get("setting", "")), limit, 0)
    exc.rule = str(info.get("rule", message))
    exc.message = message
    exc.args = (message,)
    return exc
