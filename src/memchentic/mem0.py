"""mem0's calls on memchentic: port a mem0 program by changing its import.

    from memchentic.mem0 import Memory          # was: from mem0 import Memory
    m = Memory()
    m.add([{"role": "user", "content": "I love sci-fi movies"}], user_id="alice")
    m.search("what movies does alice like", user_id="alice")["results"]

    from memchentic.mem0 import MemoryClient    # was: from mem0 import MemoryClient
    client = MemoryClient(host="http://127.0.0.1:8077", api_key="mck_...")

The answers have mem0's shapes (``{"results": [...]}``, items with ``id``, ``memory``,
``score``, ``metadata``, ``created_at``, ...), built from memchentic's own operations,
so the write path (updates, contradictions, secrets), the ranking and the access
rules are memchentic's. How each call maps is in docs/migrating-from-mem0.md:

- ``add(messages, infer=True)`` extracts memories with :meth:`memchentic.Memory.learn`
  (the rules, or the chat model when ``CHAT_BASE_URL`` is set); ``infer=False`` stores
  each user and assistant message as it is, with its ``role`` in metadata: a record
  of what was said, so a secret in it is redacted rather than refused and it keeps
  ``RECORD_DEFAULT_TTL_DAYS`` (docs/writes.md).
- ``run_id`` is the session id of what is written, and is kept in ``metadata["run_id"]``
  so that reads can select it (memchentic's own search never filters by session).
- ``delete_all`` deletes exactly its scope and refuses an empty one; ``reset`` is for
  the trusted local principal.
- The platform client's habits are taken too: ``version="v1"|"v2"`` (one search
  here, whatever the version), ``output_format="v1.0"`` (a bare list, mem0's older
  answer) or ``"v1.1"`` (``{"results": [...]}``, the default), ``top_k`` for
  ``limit``, ``update(memory_id, text=..., metadata=...)``, and ``filters`` in the v2
  shape, ``{"AND": [{"user_id": "alice"}, {...}]}`` or ``{"OR": [{"user_id":
  "alice"}]}``, whose ``user_id``/``agent_id``/``run_id`` terms become the scope.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from . import validation as check
from .clock import to_text
from .errors import NotFoundError, ValidationError
from .record import MemoryRecord

if TYPE_CHECKING:
    from .client import Client
    from .memory import Memory as EmbeddedMemory

#: What a write's status is called in mem0's answers.
EVENTS = {
    "added": "ADD", "superseded": "ADD", "updated": "UPDATE", "revised": "UPDATE",
    "merged": "NONE", "reinforced": "NONE", "deleted": "DELETE", "kept": "NONE",
}  # fmt: skip
_HISTORY_EVENTS = {"add": "ADD", "revise": "UPDATE", "improve": "UPDATE", "delete": "DELETE"}
#: Roles ``infer=False`` stores (mem0 keeps no system messages as memories).
STORED_ROLES = ("user", "assistant")
#: The scope ids mem0 takes as arguments and inside ``filters``.
SCOPE_IDS = ("user_id", "agent_id", "run_id")
#: mem0's API versions (the platform client's ``version=``): one search here.
VERSIONS = ("v1", "v2")
#: mem0's answer shapes: ``v1.0`` a bare list, ``v1.1`` ``{"results": [...]}``.
OUTPUT_FORMATS = ("v1.0", "v1.1")


#: What the adapter runs on: the embedded engine or the HTTP client (the operation
#: table keeps their methods alike).
Engine: TypeAlias = "EmbeddedMemory | Client"


def _messages(messages: Any) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence) or not messages:
        raise ValidationError("messages", "must be a string, a message or a list of messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            raise ValidationError(f"messages[{i}]", "must be {'role': ..., 'content': '...'}")
        out.append({"role": str(m.get("role", "user")), "content": m["content"]})
    return out


def item(record: MemoryRecord, score: float | None = None) -> dict[str, Any]:
    """One memory as mem0 shows it."""
    meta = dict(record.metadata)
    out: dict[str, Any] = {
        "id": record.id,
        "memory": record.content,
        "metadata": meta,
        "created_at": to_text(record.created_at) if record.created_at else None,
        "updated_at": to_text(record.updated_at) if record.updated_at else None,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "run_id": meta.get("run_id", record.session_id),
    }
    if score is not None:
        out["score"] = score
    return out


def _output_format(
    output_format: str | None, version: str | None = None
) -> Callable[[list[dict[str, Any]]], dict[str, Any] | list[dict[str, Any]]]:
    """How an answer is shaped: ``v1.0`` a bare list, else ``{"results": [...]}``
    (``version``, the platform API's, is checked and changes nothing)."""
    if version is not None and version not in VERSIONS:
        raise ValidationError("version", f"must be one of {', '.join(VERSIONS)}")
    if output_format is not None and output_format not in OUTPUT_FORMATS:
        raise ValidationError("output_format", f"must be one of {', '.join(OUTPUT_FORMATS)}")
    if output_format == "v1.0":
        return lambda results: results
    return lambda results: {"results": results}


def _scope_term(term: Any) -> tuple[str, str] | None:
    """``{"user_id": "alice"}`` (or ``{"user_id": {"eq": "alice"}}``) as ("user_id",
    "alice"); None for any other term."""
    if not isinstance(term, Mapping) or len(term) != 1:
        return None
    ((key, value),) = term.items()
    if key not in SCOPE_IDS:
        return None
    if isinstance(value, Mapping) and set(value) == {"eq"}:
        value = value["eq"]
    return (key, value) if isinstance(value, str) else None


def _set_scope(ids: dict[str, str | None], key: str, value: str, where: str) -> None:
    if ids.get(key) is not None and ids[key] != value:
        raise ValidationError(where, f"says {value!r} where {key}={ids[key]!r} was given")
    ids[key] = value


def _no_scope_left(node: Any, where: str) -> None:
    """A ``user_id`` or ``agent_id`` the scope could not take (several values, inside an
    ``OR`` or a ``NOT``) would filter on metadata and match nothing: refused instead.
    (``run_id`` is kept in metadata, so it filters like any key.)"""
    if isinstance(node, list):
        for i, part in enumerate(node):
            _no_scope_left(part, f"{where}[{i}]")
    elif isinstance(node, Mapping):
        for key, value in node.items():
            if key in ("user_id", "agent_id", "app_id"):
                raise ValidationError(
                    f"{where}.{key}", "a scope is one user_id or agent_id, given as an argument, "
                    "a key of filters or a term of its AND (memchentic has no app_id)",
                )  # fmt: skip
            _no_scope_left(value, f"{where}.{key}")


class _Adapter:
    def __init__(self, engine: Engine) -> None:
        #: The memchentic engine (or client) every call runs on.
        self.engine = engine

    # --- scope ----------------------------------------------------------------------
    @staticmethod
    def _filters(run_id: str | None, filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
        parts = [dict(filters)] if filters else []
        if run_id is not None:
            parts.append({"run_id": run_id})
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else {"AND": parts}

    @staticmethod
    def _scope(filters: Mapping[str, Any] | None, **ids: str | None) -> tuple[dict, Any]:
        """mem0 also takes ``user_id``/``agent_id``/``run_id`` inside ``filters``: as
        keys (``{"user_id": "alice"}``), or as terms of a v2 ``AND`` (or of an ``OR``
        of that one term). The rest filters on metadata."""
        if filters is not None and not isinstance(filters, Mapping):
            raise ValidationError("filters", "must be a mapping")
        rest = dict(filters or {})
        for key in SCOPE_IDS:
            if isinstance(rest.get(key), str):
                _set_scope(ids, key, rest.pop(key), f"filters.{key}")
        for op in ("AND", "OR"):
            terms = rest.get(op)
            if not isinstance(terms, list):
                continue
            kept = []
            for i, term in enumerate(terms):
                found = _scope_term(term)
                if found is None:
                    kept.append(term)
                elif op == "OR" and len(terms) > 1:
                    raise ValidationError(
                        f"filters.OR[{i}].{found[0]}", "an OR of a scope with other terms is "
                        "not supported: one user or agent per call; AND it, or call once each",
                    )  # fmt: skip
                else:
                    _set_scope(ids, found[0], found[1], f"filters.{op}[{i}].{found[0]}")
            if kept:
                rest[op] = kept
            else:
                del rest[op]
        _no_scope_left(rest, "filters")
        return ids, rest or None

    # --- mem0's calls ---------------------------------------------------------------
    def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        prompt: str | None = None,
        version: str | None = None,
        output_format: str | None = None,
    ) -> dict[str, Any] | list[dict[str, Any]]:
        """Remember a conversation: extracted memories (``infer=True``) or the messages."""
        if prompt is not None:
            raise ValidationError("prompt", "is not supported: memchentic's extractor has none")
        shape = _output_format(output_format, version)
        msgs = _messages(messages)
        meta = {**(metadata or {}), **({"run_id": run_id} if run_id is not None else {})}
        if infer:
            results = self.engine.learn(msgs, user_id=user_id, agent_id=agent_id,
                                        session_id=run_id, metadata=meta or None)  # fmt: skip
        else:
            scope = {"user_id": user_id, "agent_id": agent_id, "session_id": run_id}
            items = [{"content": m["content"], "metadata": {**meta, "role": m["role"]}}
                     for m in msgs if m["role"] in STORED_ROLES]  # fmt: skip
            common: dict[str, Any] = {k: v for k, v in scope.items() if v is not None}
            results = self.engine.add_many(items, **common) if items else []
        return shape([
            {"id": r.id, "memory": r.memory.content if r.memory else None,
             "event": EVENTS.get(r.status, "NONE")}
            for r in results if r.status != "refused" and r.id is not None
        ])  # fmt: skip

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        version: str | None = None,
        output_format: str | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any] | list[dict[str, Any]]:
        shape = _output_format(output_format, version)
        ids, rest = self._scope(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        hits = self.engine.search(
            query, user_id=ids["user_id"], agent_id=ids["agent_id"],
            limit=top_k if top_k is not None else limit,
            filters=self._filters(ids["run_id"], rest), threshold=threshold,
        )  # fmt: skip
        return shape([item(h.memory, h.score) for h in hits])

    def get(self, memory_id: str) -> dict[str, Any] | None:
        try:
            return item(self.engine.get(memory_id))
        except NotFoundError:
            return None

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 100,
        version: str | None = None,
        output_format: str | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any] | list[dict[str, Any]]:
        shape = _output_format(output_format, version)
        ids, rest = self._scope(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        records = self.engine.list(
            user_id=ids["user_id"], agent_id=ids["agent_id"],
            limit=top_k if top_k is not None else limit,
            filters=self._filters(ids["run_id"], rest),
        )  # fmt: skip
        return shape([item(r) for r in records])

    def update(
        self,
        memory_id: str,
        data: str | None = None,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """New content (``data``, or the platform client's ``text``) and/or metadata."""
        if data is not None and text is not None and data != text:
            raise ValidationError("text", "give the new content once: data or text")
        content = data if data is not None else text
        if content is None and metadata is None:
            raise ValidationError("text", "update needs the new text or metadata")
        changes = {"metadata": dict(metadata)} if metadata is not None else {}
        self.engine.revise(memory_id, content, **changes)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, Any]:
        self.engine.delete(memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        """Delete the memories of exactly this scope; at least one id is required."""
        if user_id is None and agent_id is None and run_id is None:
            raise ValidationError("scope", "delete_all needs user_id, agent_id or run_id")
        check.scope_value(run_id, "run_id")  # mem0's name for it, before the engine's
        self.engine.delete_all(user_id=user_id, agent_id=agent_id, session_id=run_id)
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        out = []
        for v in self.engine.history(memory_id):
            old, new = (v.changes.get("content") or [None, None])[:2]
            if v.op == "add" and new is None and v.snapshot:
                new = v.snapshot.get("content")
            out.append({
                "id": f"{v.memory_id}:{v.version}", "memory_id": v.memory_id,
                "old_memory": old, "new_memory": new,
                "event": _HISTORY_EVENTS.get(v.op, v.op.upper()),
                "created_at": to_text(v.at), "updated_at": None,
                "is_deleted": v.op == "delete", "actor_id": v.actor, "role": None,
            })  # fmt: skip
        return out

    def reset(self) -> None:
        self.engine.reset()

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> _Adapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Memory(_Adapter):
    """mem0's ``Memory`` on an embedded memchentic store.

    ``Memory()`` opens the default store; ``Memory(path=..., embedder=...)`` or
    ``Memory(memory=existing)`` take memchentic's options; :meth:`from_config` takes a
    mapping of them (mem0's provider sections have no meaning here and are refused).
    """

    def __init__(self, memory: Any = None, **options: Any) -> None:
        from .memory import Memory as Embedded

        self._owns = memory is None
        super().__init__(memory if memory is not None else Embedded(**options))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Memory:
        known = {"path", "store", "embedder", "settings"}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValidationError(
                "config", f"unknown keys {unknown}: memchentic takes {sorted(known)}"
            )
        return cls(**dict(config))

    def close(self) -> None:
        if self._owns:
            super().close()


class MemoryClient(_Adapter):
    """mem0's ``MemoryClient`` on a memchentic server (``memchentic serve``)."""

    def __init__(self, api_key: str | None = None, host: str = "http://127.0.0.1:8077",
                 **options: Any) -> None:  # fmt: skip
        from .client import Client

        super().__init__(Client(host, api_key, **options))
