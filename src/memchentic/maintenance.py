"""Maintenance: garbage collection (DESIGN section 6) and re-embedding."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .clock import days
from .errors import NotFoundError
from .lifetime import decay_scan, decayed_confidence

if TYPE_CHECKING:
    from .embed import Embedder
    from .memory import Memory
    from .record import MemoryRecord


def gc(mem: Memory, now: datetime, *, dry_run: bool = False) -> dict[str, Any]:
    """Delete memories expired longer than ``MEMORY_GC_RETENTION_DAYS`` and non-permanent,
    unpinned memories whose decayed confidence (aged from their last use: update or
    recall) is under ``MEMORY_DECAY_FLOOR``. Returns what was (or would be) deleted.

    Safe to run beside writers and other gc runs: each deletion re-reads its memory
    inside the write transaction and skips it when it is gone or no longer due (a
    ``revise`` brought it back meanwhile)."""
    s = mem.settings
    expired_before = now - days(s.memory_gc_retention_days)
    found: dict[str, list[str]] = {"expired": [], "decayed": []}
    for record in mem.store.gc_candidates(expired_before, decay_scan(s, now)):
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
    mem: Memory, record: MemoryRecord, now: datetime, expired_before: datetime
) -> str | None:
    """``expired``, ``decayed`` or None (keep), for a memory the caller may delete."""
    s = mem.settings
    if not mem.access.can_write(mem.principal, record.namespace, record.type):
        return None
    if record.expires_at is not None and record.expires_at <= expired_before:
        return "expired"
    if record.expires_at is None or record.pinned:
        return None
    last_use = max(filter(None, (record.updated_at, record.last_recalled_at)))
    value = decayed_confidence(record.confidence, last_use, now, s.memory_decay_half_life_days)
    return "decayed" if value < s.memory_decay_floor else None


def reindex(
    mem: Memory,
    *,
    embedder: Embedder | None = None,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Re-embed every memory with ``embedder`` (default: the memory's own) and record
    the new model in the store. Returns how many memories were re-embedded."""
    from .store.base import MemoryFilter
    from .write.statements import memory_embedding_text

    target = embedder or mem.embedder
    everything = MemoryFilter(namespaces=None, include_expired=True, include_superseded=True)
    total = mem.store.count(everything)
    done = 0
    batch: list[tuple[str, str]] = []

    def flush() -> None:
        nonlocal done
        if not batch:
            return
        vectors = target.embed_batch([text for _, text in batch])
        mem.store.replace_vectors({mid: vec for (mid, _), vec in zip(batch, vectors, strict=True)})
        done += len(batch)
        batch.clear()
        if progress:
            progress(done, total)

    # One transaction: other processes never see vectors of two models side by side.
    with mem.store.write():
        for record in list(mem.store.iter_memories(everything)):
            batch.append((record.id, memory_embedding_text(record.title, record.content)))
            if len(batch) >= batch_size:
                flush()
        flush()
        mem.store.set_meta("embedding_model", target.model)
        mem.store.set_meta("embedding_dimension", str(target.dimension))
        mem.store.set_meta("index_epoch", str(time.time_ns()))
    mem.embedder = target
    return done
