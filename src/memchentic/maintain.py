"""``Memory.maintain()``: the periodic upkeep in one call, with one report.

1. ``gc`` (DESIGN section 6): expired and decayed memories.
2. ``consolidate`` when this ``Memory`` has it (the graph side): near duplicates folded.
3. Session summaries: every session with at least ``SESSION_SUMMARY_MIN_TURNS`` turns
   whose summary is missing or older than its last turn is summarised again.
4. Events older than ``EVENTS_RETENTION_DAYS`` are pruned (trusted local principal
   only: the event log is shared; 0 keeps every event).

Each step runs only on what the caller may change; ``dry_run=True`` reports what
would happen and changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from .clock import days
from .context.sections import session_summary_slot
from .mixins import as_memory
from .reports import MaintenanceReport

if TYPE_CHECKING:
    from .memory import Memory


class MaintainMixin:
    """``maintain()`` on ``Memory``."""

    def maintain(
        self, *, now: datetime | str | None = None, dry_run: bool = False
    ) -> MaintenanceReport:
        """Run gc, consolidation (when available), summary upkeep and event pruning;
        see :mod:`memchentic.maintain`."""
        mem = as_memory(self)
        when = mem._now(now)
        report = MaintenanceReport(dry_run, mem.gc(now=when, dry_run=dry_run))
        consolidate = getattr(mem, "consolidate", None)
        if callable(consolidate):
            done = consolidate(dry_run=dry_run)
            report.consolidation = done.to_dict() if hasattr(done, "to_dict") else dict(done)
        report.summaries = _summaries(mem, when, dry_run)
        retention = mem.settings.events_retention_days
        if mem.principal.trusted and retention > 0 and not dry_run:
            report.events_pruned = mem.store.prune_events(when - days(retention))
        return report


def _summaries(mem: Memory, now: datetime, dry_run: bool) -> list[dict[str, Any]]:
    """Summarise the sessions whose summary is missing or behind their last turn."""
    s = mem.settings
    out: list[dict[str, Any]] = []
    spaces = mem.access.readable(mem.principal, None)
    if spaces == []:
        return out
    for session_id, _ in mem.store.sessions(namespaces=spaces):
        recent = mem.store.turns(session_id, namespace=None, limit=s.session_summary_max_turns)
        for ns in sorted({t.namespace for t in recent}):
            if not mem.access.can_write(mem.principal, ns, "summary"):
                continue
            turns = mem.store.turns(session_id, namespace=ns, limit=s.session_summary_max_turns)
            entry: dict[str, Any] = {"session_id": session_id, "namespace": ns, "id": None}
            existing = mem.store.find_slot(ns, session_summary_slot(session_id))
            if len(turns) < s.session_summary_min_turns:
                entry["status"] = "too short"
            elif existing is not None and existing.metadata.get("last_turn") == turns[-1].id:
                entry.update(status="current", id=existing.id)
            elif dry_run:
                entry.update(status="would summarize", id=existing.id if existing else None)
            else:
                result = mem.summarize_session(session_id, namespace=ns, now=now)
                entry.update(status=result.status, id=result.id)
            out.append(entry)
    return out
