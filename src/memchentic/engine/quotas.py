"""What one identity may hold where others read: the cap of working memory in a
shared namespace (issue 32, item 3).

Working memory is read by session, one namespace at a time (``sessions.session_working``),
so a writer of a group can no longer push anyone's private working memory out of
view. This cap bounds what one identity can pile into a namespace it shares with
others: at most ``WORKING_MEMORY_MAX_PER_IDENTITY`` live (not expired, not
superseded) working memories that it wrote, in each namespace but its own. A write
over it is refused whole, before anything is stored (docs/decisions.md says why
refused and not the oldest evicted). The trusted local principal has no cap.
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


def check_working_cap(gate: Gate, records: Sequence[MemoryRecord], now: datetime) -> None:
    """Refuse (a :class:`ValidationError` on ``namespace`` naming the setting) writes
    that would take the calling identity over its cap of working memories in a
    shared namespace. A keyed write whose slot exists replaces a memory in place and
    adds none. The caller holds ``store.write()``, so the count and the write agree."""
    if gate.principal.trusted:
        return
    own = gate.own_namespace
    adding: Counter[str] = Counter()
    for record in records:
        if record.type != WORKING_TYPE or record.namespace == own:
            continue
        if record.slot_key and gate.find_slot(record.namespace, record.slot_key):
            continue
        adding[record.namespace] += 1
    cap = gate.parts.settings.working_memory_max_per_identity
    actor = gate.actor
    for namespace, count in adding.items():
        mine = MemoryFilter(namespaces=[namespace], now=now, types=[WORKING_TYPE],
                            written_by=actor)  # fmt: skip
        held = gate.count(mine)
        if held + count > cap:
            raise ValidationError(
                "namespace",
                f"at most {cap} live working memories per identity in a shared namespace "
                f"({WORKING_CAP_SETTING}); you hold {held} here: delete some or let them "
                "expire",
            )
