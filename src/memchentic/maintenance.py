"""Maintenance: garbage collection (DESIGN section 6) and re-embedding."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .clock import days
from .lifetime import decay_floor_age_days, decayed_confidence

if TYPE_CHECKING:
    from .embed import Embedder
    from .memory import Memory


def gc(mem: Memory, now: datetime, *, dry_run: bool = False) -> dict[str, Any]:
    """Delete memories expired longer than ``MEMORY_GC_RETENTION_DAYS`` and non-permanent,
    unpinned memories whose decayed confidence (aged from their last use: update or
    recall) is under ``MEMORY_DECAY_FLOOR``. Returns what was (or would be) deleted."""
    s = mem.settings
    expired_before = now - days(s.memory_gc_retention_days)
    floor_age = decay_floor_age_days(s)
    decay_cutoff = now - days(floor_age) if floor_age != float("inf") else None
    expired: list[str] = []
    decayed: list[str] = []
    for record in mem.store.gc_candidates(expired_before, decay_cutoff):
        if not mem.access.can_write(mem.principal, record.namespace, record.type):
            continue
        if record.expires_at is not None and record.expires_at <= expired_before:
            expired.append(record.id)
            continue
        if record.expires_at is None or record.pinned:
            continue
        last_use = max(filter(None, (record.updated_at, record.last_recalled_at)))
        value = decayed_confidence(record.confidence, last_use, now, s.memory_decay_half_life_days)
        if value < s.memory_decay_floor:
            decayed.append(record.id)
    if not dry_run:
        for memory_id in expired + decayed:
            mem.delete(memory_id)
    return {
        "dry_run": dry_run,
        "expired": expired,
        "decayed": decayed,
        "deleted": 0 if dry_run else len(expired) + len(decayed),
    }


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
            text = f"{record.title}\n{record.content}" if record.title else record.content
            batch.append((record.id, text))
            if len(batch) >= batch_size:
                flush()
        flush()
        mem.store.set_meta("embedding_model", target.model)
        mem.store.set_meta("embedding_dimension", str(target.dimension))
        mem.store.set_meta("index_epoch", str(time.time_ns()))
    mem.embedder = target
    return done
