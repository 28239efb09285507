"""The event operations: ``subscribe``, ``unsubscribe`` and ``events`` (every service
emits into the bus through its :class:`~memchentic.engine.gate.Gate`)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from .. import validation as check
from ..record import Event
from .gate import Gate
from .parts import Parts


class Events:
    """What this principal may see of the event log, live or stored."""

    def __init__(self, parts: Parts, gate: Gate) -> None:
        self.parts = parts
        self.gate = gate

    def subscribe(
        self, callback: Callable[[Event], Any], types: Sequence[str] | None = None
    ) -> str:
        """Call ``callback(event)`` for each event this principal may see; returns a token."""
        return self.parts.bus.subscribe(callback, self.gate.principal, types)

    def unsubscribe(self, token: str) -> bool:
        return self.parts.bus.unsubscribe(token)

    def events(
        self, *, since: str | None = None, types: Sequence[str] | None = None, limit: int = 100
    ) -> builtins.list[Event]:
        """Stored events after the event id ``since``, oldest first, that this principal may see."""
        limit = check.page_limit(limit, None)  # a negative LIMIT would mean "all"
        return self.parts.bus.read(self.gate.principal, since=since, types=types, limit=limit)
