"""Auto-edges (docs/design.md, section 4, step 4; opt-in per write with ``auto_edges=True``):
classify how a new memory relates to its nearest neighbours and link them.

Rules by default (similarity and polarity); any object with
``classify(new, old, cosine) -> (kind, strength) | None`` can replace them.
"""

from __future__ import annotations

from typing import Protocol

from ..record import MemoryRecord


class EdgeClassifier(Protocol):
    def classify(
        self, new: MemoryRecord, old: MemoryRecord, cosine: float
    ) -> tuple[str, float] | None: ...


class RuleEdges:
    """Opposite polarity and similar: ``contradicts``; same polarity and very similar:
    ``supports``; similar: ``related_to``. Strength is the cosine similarity."""

    def __init__(self, related_at: float = 0.6, supports_at: float = 0.75) -> None:
        self.related_at = related_at
        self.supports_at = supports_at

    def classify(
        self, new: MemoryRecord, old: MemoryRecord, cosine: float
    ) -> tuple[str, float] | None:
        if cosine < self.related_at:
            return None
        strength = round(min(1.0, max(0.0, cosine)), 4)
        if new.polarity != old.polarity:
            return "contradicts", strength
        if cosine >= self.supports_at:
            return "supports", strength
        return "related_to", strength
