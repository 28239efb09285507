"""Events (docs/design.md, section 8): persisted in the store, delivered to subscribers.

Every event names the namespace it concerns; a subscriber made by an identity
only receives events of namespaces that identity can read at delivery time,
and :meth:`EventBus.read` applies the same rule to the stored log. Payloads
carry ids, statuses and counts, never memory content, so deleting a memory
leaves nothing of it in the log. A failing subscriber is logged and skipped:
it never breaks a write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import validation as check
from .clock import utcnow
from .errors import ValidationError
from .ids import new_id
from .record import Event

if TYPE_CHECKING:
    from .access import AccessPolicy, Principal
    from .store.base import Store

log = logging.getLogger("memchentic.events")

EVENT_TYPES: tuple[str, ...] = (
    "memory.added",
    "memory.updated",
    "memory.deduplicated",
    "memory.dropped",
    "memory.deleted",
    "memory.searched",
    "memory.extracted",
    "memory.managed",
    "memory.pinned",
    "memory.unpinned",
    "memory.restored",
    "memory.consolidated",
    "context.built",
    "session.summarized",
    "history.appended",
)

Callback = Callable[[Event], Any]


@dataclass(frozen=True, slots=True)
class _Subscription:
    token: str
    callback: Callback
    types: frozenset[str] | None
    principal: Principal


def check_types(types: Sequence[str] | None) -> frozenset[str] | None:
    if types is None:
        return None
    if isinstance(types, str):
        types = [types]
    unknown = sorted(set(types) - set(EVENT_TYPES))
    if unknown:
        raise ValidationError("types", f"unknown event types: {', '.join(unknown)}")
    return frozenset(types)


class EventBus:
    """Persists events and fans them out to subscribers, under the access rules."""

    def __init__(self, store: Store, access: AccessPolicy) -> None:
        self.store = store
        self.access = access
        self._subs: list[_Subscription] = []
        self._lock = threading.Lock()

    def subscribe(
        self, callback: Callback, principal: Principal, types: Sequence[str] | None = None
    ) -> str:
        if not callable(callback):
            raise ValidationError("callback", "must be callable")
        sub = _Subscription(new_id(), callback, check_types(types), principal)
        with self._lock:
            self._subs.append(sub)
        return sub.token

    def unsubscribe(self, token: str) -> bool:
        with self._lock:
            before = len(self._subs)
            self._subs = [s for s in self._subs if s.token != token]
            return len(self._subs) < before

    def emit(
        self,
        type_: str,
        *,
        actor: str,
        namespace: str | None,
        memory_id: str | None = None,
        along: Callable[[], None] | None = None,
        **payload: Any,
    ) -> Event:
        return self.emit_many(actor, [(type_, namespace, memory_id, payload)], along=along)[0]

    def emit_many(
        self,
        actor: str,
        items: Sequence[tuple[str, str | None, str | None, dict[str, Any]]],
        *,
        along: Callable[[], None] | None = None,
    ) -> list[Event]:
        """Persist several events (type, namespace, memory id, payload) in one
        transaction, then deliver each, in order. ``along``: store writes to make
        in the same transaction (one commit instead of two; delivery waits for it)."""
        if not items:
            return []
        now = utcnow()
        events = [
            Event(new_id(), type_, now, actor, namespace, memory_id, dict(payload))
            for type_, namespace, memory_id, payload in items
        ]
        if along is None:
            self.store.add_events(events)
        else:
            with self.store.write():
                along()
                self.store.add_events(events)
        with self._lock:
            subs = list(self._subs)
        if not subs:
            return events
        for event in events:
            for sub in subs:
                if sub.types is not None and event.type not in sub.types:
                    continue
                if not self._visible(sub.principal, event.namespace):
                    continue
                try:
                    sub.callback(event)
                except Exception:  # a subscriber must never break a write
                    log.exception("event subscriber failed on %s", event.type)
        return events

    def _visible(self, principal: Principal, namespace: str | None) -> bool:
        if principal.trusted:
            return True
        return namespace is not None and self.access.can_read(principal, namespace)

    def read(
        self,
        principal: Principal,
        *,
        since: str | None = None,
        types: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[Event]:
        since = check.optional_identifier(since, "since")
        namespaces = self.access.readable(principal, None)
        wanted = check_types(types)
        return self.store.events(
            namespaces=namespaces,
            since=since,
            types=sorted(wanted) if wanted else None,
            limit=limit,
        )
