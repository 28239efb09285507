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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
        """mem0 also takes ``user_id``/``agent_id``/``run_id`` inside ``filters``."""
        rest = dict(filters or {})
        for key in ("user_id", "agent_id", "run_id"):
            if ids.get(key) is None and isinstance(rest.get(key), str):
                ids[key] = rest.pop(key)
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
    ) -> dict[str, Any]:
        """Remember a conversation: extracted memories (``infer=True``) or the messages."""
        if prompt is not None:
            raise ValidationError("prompt", "is not supported: memchentic's extractor has none")
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
        return {"results": [
            {"id": r.id, "memory": r.memory.content if r.memory else None,
             "event": EVENTS.get(r.status, "NONE")}
            for r in results if r.status != "refused" and r.id is not None
        ]}  # fmt: skip

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
    ) -> dict[str, Any]:
        ids, rest = self._scope(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        hits = self.engine.search(
            query, user_id=ids["user_id"], agent_id=ids["agent_id"], limit=limit,
            filters=self._filters(ids["run_id"], rest), threshold=threshold,
        )  # fmt: skip
        return {"results": [item(h.memory, h.score) for h in hits]}

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
    ) -> dict[str, Any]:
        ids, rest = self._scope(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        records = self.engine.list(
            user_id=ids["user_id"], agent_id=ids["agent_id"], limit=limit,
            filters=self._filters(ids["run_id"], rest),
        )  # fmt: skip
        return {"results": [item(r) for r in records]}

    def update(self, memory_id: str, data: str) -> dict[str, Any]:
        self.engine.revise(memory_id, data)
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
