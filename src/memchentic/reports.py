"""What the engine's operations return beyond records (:mod:`memchentic.record`):
neighbours, answers, and the reports of consolidation, upkeep and import. Every
face returns these same types (the library, ``AsyncMemory``, the HTTP clients)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .record import MemoryRecord


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A memory reached from another: how far, and through what."""

    memory: MemoryRecord
    depth: int
    via: str  # "edge:<kind>" or "entity:<name>"
    from_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.memory.id, "depth": self.depth, "via": self.via,
                "from": self.from_id, "memory": self.memory.to_dict()}  # fmt: skip


@dataclass(slots=True)
class ConsolidationReport:
    dry_run: bool
    clusters: list[dict[str, Any]] = field(default_factory=list)

    @property
    def merged(self) -> int:
        return sum(len(c["merged"]) for c in self.clusters)

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "clusters": self.clusters, "merged": self.merged}


@dataclass(frozen=True, slots=True)
class Passage:
    citation: int
    memory: MemoryRecord
    score: float
    via: str  # "search" or "edge:<kind>" / "entity:<name>" (one hop)

    def to_dict(self) -> dict[str, Any]:
        return {"citation": self.citation, "id": self.memory.id, "text": self.memory.content,
                "score": self.score, "via": self.via}  # fmt: skip


@dataclass(slots=True)
class Answer:
    question: str
    passages: list[Passage] = field(default_factory=list)
    answer: str | None = None
    #: False when no memory is evidence for the question (then ``answer`` says so).
    answerable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer,
                "answerable": self.answerable,
                "passages": [p.to_dict() for p in self.passages]}  # fmt: skip


@dataclass(slots=True)
class MaintenanceReport:
    """What ``maintain()`` did (or, with ``dry_run``, would do)."""

    dry_run: bool
    gc: dict[str, Any]
    #: The consolidation report; None when this Memory has no ``consolidate``.
    consolidation: dict[str, Any] | None = None
    #: One entry per session considered: session id, namespace, status, summary id.
    summaries: list[dict[str, Any]] = field(default_factory=list)
    #: Events deleted; None when not pruned (dry run, identity, or retention 0).
    events_pruned: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "gc": self.gc,
            "consolidation": self.consolidation,
            "summaries": list(self.summaries),
            "events_pruned": self.events_pruned,
        }


@dataclass
class ImportReport:
    memories: int = 0
    edges: int = 0
    versions: int = 0
    skipped: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "errors": [{"line": n, "error": e} for n, e in self.errors]}
