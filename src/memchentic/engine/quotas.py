"""What one identity may hold where others read: the cap of working memory in a
shared namespace (issue 32, item 3).

Working memory is read by session, one namespace at a time (``sessions.session_working``),
so a writer of a group can no longer push anyone's private working memory out of
view. This cap bounds what one identity can pile into a namespace it shares with
others: at most ``WORKING_MEMORY_MAX_PER_IDENTITY`` live (not expired, not
superseded) working memories that it wrote (the actor of their version 1), in
each namespace but the caller's own. The trusted local principal has no cap.

Every change that makes a working memory live is checked, not only a new one:
``add`` (a keyed write into a slot whose memory is expired, superseded or of
another type revives it), ``restore``, ``revise`` (of an expired memory, or to
type ``working``), ``delete_edge`` of a ``supersedes`` edge, and ``import``. A
change over the cap is refused whole, before anything is stored, as ``add``
refuses (docs/decisions.md says why refused and not the oldest evicted); a
revived memory counts against the identity that first wrote it, whoever revives
it, so a revival can never take anyone past the cap.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..context.sections import WORKING_TYPE
from ..errors import ValidationError
from ..record import MemoryRecord
from ..store.filters import MemoryFilter

if TYPE_CHECKING:
    from .gate import Gate

#: The setting of the cap, as the error names it.
WORKING_CAP_SETTING = "WORKING_MEMORY_MAX_PER_IDENTITY"


def counted(record: MemoryRecord | None, now: datetime) -> bool:
    """Whether ``record`` counts against the cap now: a live working memory."""
    return (
        record is not None
        and record.type == WORKING_TYPE
        and record.superseded_by is None
        and not record.is_expired(now)
    )


def writer_of(gate: Gate, record: MemoryRecord) -> str:
    """Who first wrote ``record`` (the actor of its version 1), else the caller."""
    first = next((v for v in gate.versions(record.id) if v.version == 1), None)
    return first.actor if first is not None else gate.actor


def check_working_cap(gate: Gate, records: Sequence[MemoryRecord], now: datetime) -> None:
    """Refuse (a :class:`ValidationError` on ``namespace`` naming the setting) writes
    that would take an identity over its cap of working memories in a shared
    namespace. A keyed write whose slot holds a live working memory replaces it in
    place and adds none (a superseded one stays superseded); one whose slot holds
    an expired memory, or one of another type, revives it, for the identity that
    first wrote it. The caller holds ``store.write()``, so the count
    and the write agree."""
    if gate.principal.trusted:
        return
    own = gate.own_namespace
    adding: Counter[tuple[str, str]] = Counter()
    for record in records:
        if record.type != WORKING_TYPE or record.namespace == own or record.is_expired(now):
            continue
        existing = gate.find_slot(record.namespace, record.slot_key) if record.slot_key else None
        if existing is not None and (counted(existing, now) or existing.superseded_by):
            continue  # counted already, or it stays superseded
        writer = gate.actor if existing is None else writer_of(gate, existing)
        adding[record.namespace, writer] += 1
    _check(gate, adding, now)


def check_revival(gate: Gate, old: MemoryRecord, new: MemoryRecord, now: datetime) -> None:
    """Refuse a change of one memory from ``old`` to ``new`` that makes it a live
    working memory over the cap of the identity that first wrote it."""
    if gate.principal.trusted or new.namespace == gate.own_namespace:
        return
    if counted(new, now) and not counted(old, now):
        _check(gate, Counter({(new.namespace, writer_of(gate, new)): 1}), now)


class CapTally:
    """The cap over a run of new memories of the caller's that get their version 1
    only at the end (``import``): each namespace is counted once, then here."""

    def __init__(self, gate: Gate, now: datetime) -> None:
        self.gate = gate
        self.now = now
        self.held: dict[str, int] = {}

    def take(self, record: MemoryRecord) -> None:
        """Count ``record``, a new memory; a :class:`ValidationError` over the cap."""
        gate = self.gate
        if gate.principal.trusted or record.namespace == gate.own_namespace:
            return
        if not counted(record, self.now):
            return
        namespace = record.namespace
        if namespace not in self.held:
            self.held[namespace] = _held(gate, namespace, gate.actor, self.now)
        cap = gate.parts.settings.working_memory_max_per_identity
        if self.held[namespace] + 1 > cap:
            raise _over(cap, "you hold", self.held[namespace])
        self.held[namespace] += 1


def _held(gate: Gate, namespace: str, writer: str, now: datetime) -> int:
    mine = MemoryFilter(namespaces=[namespace], now=now, types=[WORKING_TYPE],
                        written_by=writer)  # fmt: skip
    return gate.count(mine)


def _over(cap: int, who: str, held: int) -> ValidationError:
    return ValidationError(
        "namespace",
        f"at most {cap} live working memories per identity in a shared namespace "
        f"({WORKING_CAP_SETTING}); {who} {held} here: delete some or let them expire",
    )


def _check(gate: Gate, adding: Counter[tuple[str, str]], now: datetime) -> None:
    cap = gate.parts.settings.working_memory_max_per_identity
    for (namespace, writer), count in adding.items():
        held = _held(gate, namespace, writer, now)
        if held + count > cap:
            who = "you hold" if writer == gate.actor else "the identity that wrote it holds"
            raise _over(cap, who, held)
