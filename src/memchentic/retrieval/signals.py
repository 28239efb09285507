"""Ranking signals: small pure functions. The pipeline composes them; a trace is
the list of their outputs (docs/design.md, section 3)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

# ``idf`` and ``folder`` live in the low layer (the store uses them too); they stay
# importable here because the pipeline and its tests read them as signals.
from ..text import folder, idf

__all__ = [
    "boost_factor",
    "confidence_factor",
    "decay",
    "folder",
    "freshness",
    "horizon",
    "idf",
    "keyword_coverage",
    "match",
    "path_factor",
    "paths_match",
    "rrf",
    "usage",
    "with_context",
    "with_context_many",
]


def rrf(rank: int | None, k: float) -> float:
    """Reciprocal rank fusion term ``1 / (k + rank)`` (ranks start at 1; None = absent)."""
    if rank is None:
        return 0.0
    if rank < 1:
        raise ValueError("ranks start at 1")
    return 1.0 / (k + rank)


def match(ranks: Iterable[int | None], k: float) -> float:
    """Sum of RRF terms over the candidate lists a memory appears in."""
    return sum(rrf(rank, k) for rank in ranks)


def freshness(age_days: float, half_life_days: float) -> float:
    """``1 / (1 + age / H)``: 1 when new, 1/2 at H days."""
    return 1.0 / (1.0 + max(0.0, age_days) / half_life_days)


def path_factor(matches: bool, boost: float) -> float:
    return 1.0 + boost if matches else 1.0


def confidence_factor(kind: str, reinforcement: int, weight: float) -> float:
    """``1 + w x c`` for guides (c = reinforcement), 1 for entries."""
    return 1.0 + weight * reinforcement if kind == "guide" else 1.0


def usage(recall_count: int, weight: float) -> float:
    """``1 + W x ln(1 + recall_count)``."""
    return 1.0 + weight * math.log1p(max(0, recall_count))


def decay(age_days: float, half_life_days: float) -> float:
    """``exp(-ln2 / half_life x age)``; future (negative) ages do not decay."""
    return math.exp(-math.log(2) / half_life_days * max(0.0, age_days))


def keyword_coverage(doc_terms: set[str], query_idf: dict[str, float]) -> float:
    """IDF-weighted share of the query's terms present in a document (0..1)."""
    total = sum(query_idf.values())
    if total <= 0:
        return 0.0
    return sum(idf for term, idf in query_idf.items() if term in doc_terms) / total


def paths_match(memory_path: str | None, query_path: str | None) -> bool:
    """A memory's path hint matches when the two paths lie on one path, by whole
    segments: equal, or one is a folder holding the other (``src/a`` matches ``src/a``
    and ``src/a/b.py``, not ``src/api``; issue 20, item 13). The stores' path filter
    applies the same rule."""
    if not memory_path or not query_path:
        return False
    return (
        memory_path == query_path
        or query_path.startswith(folder(memory_path))
        or memory_path.startswith(folder(query_path))
    )


def boost_factor(applies: bool, boost: float) -> float:
    """``1 + boost`` when a cue applies to a memory, else exactly 1."""
    return 1.0 + boost if applies else 1.0


def horizon(age_days: float, half_life_days: float, type_half_life_days: float) -> float:
    """Stretches freshness's scale from H to H_t for a type with its own horizon:
    ``(1 + age/H) / (1 + age/H_t)``, so ``freshness x horizon = 1 / (1 + age/H_t)``.
    Exactly 1 when ``H_t`` is 0 (no own horizon), equal to H, or the age is 0."""
    if type_half_life_days <= 0 or type_half_life_days == half_life_days:
        return 1.0
    age = max(0.0, age_days)
    return (1.0 + age / half_life_days) / (1.0 + age / type_half_life_days)


def with_context(own: float, neighbours: Iterable[float], weight: float) -> float:
    """A candidate's stage score with its conversation context:
    ``own + weight x max(neighbour scores)`` (``own`` when there are none)."""
    best = max(neighbours, default=0.0)
    return own + weight * max(0.0, best)


def with_context_many(own: np.ndarray, best: np.ndarray, weight: float) -> np.ndarray:
    """:func:`with_context` of many candidates that have neighbours, ``best`` their
    best neighbour's score: the same operations on float64 arrays, so the same
    values."""
    return own + weight * np.maximum(0.0, best)
