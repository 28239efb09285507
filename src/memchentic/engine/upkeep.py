"""The upkeep service: ``stats``, ``gc`` (docs/design.md, section 6), ``reindex``, export and
import (:mod:`.transfer`), and ``maintain()``: the periodic upkeep in one call, with
one report.

1. ``gc`` (docs/design.md, section 6): expired and decayed memories.
2. ``consolidate`` (the graph service's, passed in): near duplicates folded.
3. Session summaries: every session with at least ``SESSION_SUMMARY_MIN_TURNS`` turns
   whose summary is missing or older than its last turn is summarised again.
4. Events older than ``EVENTS_RETENTION_DAYS`` are pruned (trusted local principal
   only: the event log is shared; 0 keeps every event).

Each step runs only on what the caller may change; ``dry_run=True`` reports what
would happen and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..clock import days, utcnow
from ..context.sections import session_summary_slot
from ..embed import Embedder
from ..errors import NotFoundError, ValidationError
from ..lifetime import decay_scan, decayed_confidence
from ..record import MemoryRecord, WriteResult
from ..reports import ConsolidationReport, ImportReport, MaintenanceReport
from ..store.base import MemoryFilter
from ..write.statements import memory_embedding_text
from .gate import Gate, now_of
from .parts import Parts
from .transfer import export_jsonl, import_jsonl


class Upkeep:
    """Lifetime, statistics and whole-store jobs; ``delete`` (the write path's: gc
    deletes as a caller would), ``consolidate`` (the graph's) and
    ``summarize_session`` (the sessions') are passed in."""

    def __init__(
        self,
        parts: Parts,
        gate: Gate,
        *,
        delete: Callable[..., WriteResult],
        consolidate: Callable[..., ConsolidationReport],
        summarize_session: Callable[..., WriteResult],
        gc: Callable[..., dict[str, Any]] | None = None,
    ) -> None:
        self.parts = parts
        self.gate = gate
        self._gc = gc or self.gc  # as ``Memory`` runs it (traced)
        self.delete = delete
        self.consolidate = consolidate
        self.summarize_session = summarize_session

    def maintain(
        self, *, now: datetime | str | None = None, dry_run: bool = False
    ) -> MaintenanceReport:
        """Run gc, consolidation (when available), summary upkeep and event pruning;
        see :mod:`memchentic.engine.upkeep`."""
        when = now_of(now)
        report = MaintenanceReport(dry_run, self._gc(now=when, dry_run=dry_run))
        report.consolidation = self.consolidate(dry_run=dry_run).to_dict()
        report.summaries = _summaries(self, when, dry_run)
        retention = self.parts.settings.events_retention_days
        if self.gate.principal.trusted and retention > 0 and not dry_run:
            report.events_pruned = self.gate.prune_events(when - days(retention))
        return report

    def stats(self, *, user_id: str | None = None, namespace: str | None = None) -> dict[str, Any]:
        """Counts of the memories in scope (live, expired, superseded; by namespace,
        type and kind), edges, versions, vectors, the store's size, schema version and
        embedder, and ``keyword_language``: the language its keyword index stems in."""
        flt = self.gate.read_filter(
            user_id=user_id, agent_id=None, namespace=namespace, now=utcnow()
        )
        return {**self.gate.stats(flt).to_dict(), "keyword_language": self.gate.keyword_language}

    # Whole-store jobs are maintenance: no statement budget (STATEMENT_TIMEOUT_SECONDS).
    def gc(self, *, now: datetime | str | None = None, dry_run: bool = False) -> dict[str, Any]:
        with self.gate.unbudgeted():
            return _gc(self, now_of(now), dry_run=dry_run)

    def export(self, target: Any, **kwargs: Any) -> int:
        with self.gate.unbudgeted():
            return export_jsonl(self.gate, target, **kwargs)

    def import_(self, source: Any, **kwargs: Any) -> ImportReport:
        with self.gate.unbudgeted():
            return import_jsonl(self.gate, source, **kwargs)

    def reset(self) -> int:
        """Empty the store of memories: every memory with its vector, edges, entities
        and history (tombstones too) goes; identities, groups, grants, keys, session
        turns and the event log stay. Trusted local principal only; returns how many
        memories were removed. (One scope: :meth:`delete_all`.)"""
        if not self.gate.principal.trusted:
            raise ValidationError("principal", "only the trusted local principal can reset")
        everything = MemoryFilter.everything(include_expired=True, include_superseded=True)
        gone: list[tuple[str, str, str, dict[str, object]]] = []
        with self.gate.write():
            for record in list(self.gate.iter_memories(everything)):
                self.gate.delete(record)
                gone.append(("memory.deleted", record.namespace, record.id, {"reset": True}))
            for memory_id in {v.memory_id for v in self.gate.iter_versions()}:
                self.gate.purge_versions(memory_id)
        self.gate.emit_many(gone)
        return len(gone)

    def reindex(self, **kwargs: Any) -> int:
        """Re-embed every memory of the store (trusted local principal only)."""
        if not self.gate.principal.trusted:
            raise ValidationError("principal", "only the trusted local principal can reindex")
        with self.gate.unbudgeted():
            return _reindex(self, **kwargs)


def _summaries(mem: Upkeep, now: datetime, dry_run: bool) -> list[dict[str, Any]]:
    """Summarise the sessions whose summary is missing or behind their last turn."""
    s = mem.parts.settings
    out: list[dict[str, Any]] = []
    spaces = mem.gate.readable_namespaces(None)
    if spaces == []:
        return out
    for session_id, _ in mem.gate.sessions(namespaces=spaces):
        recent = mem.gate.turns(session_id, namespace=None, limit=s.session_summary_max_turns)
        for ns in sorted({t.namespace for t in recent}):
            if not mem.gate.can_write(ns, "summary"):
                continue
            turns = mem.gate.turns(session_id, namespace=ns, limit=s.session_summary_max_turns)
            entry: dict[str, Any] = {"session_id": session_id, "namespace": ns, "id": None}
            existing = mem.gate.find_slot(ns, session_summary_slot(session_id))
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


def _gc(mem: Upkeep, now: datetime, *, dry_run: bool = False) -> dict[str, Any]:
    """Delete memories expired longer than ``MEMORY_GC_RETENTION_DAYS`` and non-permanent,
    unpinned memories whose decayed confidence (aged from their last use: update or
    recall) is under ``MEMORY_DECAY_FLOOR``. Returns what was (or would be) deleted.

    Safe to run beside writers and other gc runs: each deletion re-reads its memory
    inside the write transaction and skips it when it is gone or no longer due (a
    ``revise`` brought it back meanwhile)."""
    s = mem.parts.settings
    expired_before = now - days(s.memory_gc_retention_days)
    found: dict[str, list[str]] = {"expired": [], "decayed": []}
    for record in mem.gate.gc_candidates(expired_before, decay_scan(s, now)):
        reason = _gc_reason(mem, record, now, expired_before)
        if reason is not None:
            found[reason].append(record.id)
    deleted = 0
    if not dry_run:
        for reason, ids in found.items():

            def due(record: MemoryRecord, why: str = reason) -> bool:
                return _gc_reason(mem, record, now, expired_before) == why

            for memory_id in list(ids):
                try:
                    result = mem.delete(memory_id, _due=due)
                except NotFoundError:  # deleted meanwhile (by its owner or another gc)
                    result = None
                if result is not None and result.status == "deleted":
                    deleted += 1
                else:
                    ids.remove(memory_id)
    return {"dry_run": dry_run, **found, "deleted": deleted}


def _gc_reason(
    mem: Upkeep, record: MemoryRecord, now: datetime, expired_before: datetime
) -> str | None:
    """``expired``, ``decayed`` or None (keep), for a memory the caller may delete."""
    s = mem.parts.settings
    if not mem.gate.can_write(record.namespace, record.type):
        return None
    if record.expires_at is not None and record.expires_at <= expired_before:
        return "expired"
    if record.expires_at is None or record.pinned:
        return None
    last_use = max(filter(None, (record.updated_at, record.last_recalled_at)))
    value = decayed_confidence(record.confidence, last_use, now, s.memory_decay_half_life_days)
    return "decayed" if value < s.memory_decay_floor else None


def _reindex(
    mem: Upkeep,
    *,
    embedder: Embedder | None = None,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Re-embed every memory with ``embedder`` (default: the memory's own) and record
    the new model in the store. Returns how many memories were re-embedded."""
    target = embedder or mem.parts.embedder
    everything = MemoryFilter.everything(include_expired=True, include_superseded=True)
    total = mem.gate.count(everything)
    done = 0
    batch: list[tuple[str, str]] = []

    def flush() -> None:
        nonlocal done
        if not batch:
            return
        vectors = target.embed_batch([text for _, text in batch])
        mem.gate.replace_vectors({mid: vec for (mid, _), vec in zip(batch, vectors, strict=True)})
        done += len(batch)
        batch.clear()
        if progress:
            progress(done, total)

    # One transaction: other processes never see vectors of two models side by side.
    with mem.gate.write():
        for record in list(mem.gate.iter_memories(everything)):
            batch.append((record.id, memory_embedding_text(record.title, record.content)))
            if len(batch) >= batch_size:
                flush()
        flush()
        mem.gate.set_meta("embedding_model", target.model)
        mem.gate.set_meta("embedding_dimension", str(target.dimension))
        mem.gate.set_meta("index_epoch", str(time.time_ns()))
    mem.parts.embedder = target
    return done
