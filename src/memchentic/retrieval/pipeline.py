"""The search pipeline (DESIGN section 3):

    query -> filter -> candidates (vector kNN + keywords, over-fetched)
          -> fuse and adjust (the profile's scorer) -> optional route / rerank -> top limit

No backend names here: candidates come from the store interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np

from ..settings import Settings
from ..store.base import MemoryFilter, Store
from . import signals
from .profiles import Candidate, ScoringContext, SearchProfile
from .router import route


class Reranker(Protocol):
    """Scores (query, text) pairs; higher is better. Plug in a cross-encoder or an LLM."""

    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    vector: np.ndarray
    flt: MemoryFilter
    limit: int
    profile: SearchProfile
    now: datetime
    path_hint: str | None = None


def gather(store: Store, req: SearchRequest, settings: Settings) -> list[Candidate]:
    """Candidates from both stages, with their ranks and similarities."""
    fetch = req.limit * settings.knn_overfetch_multiplier
    by_vector = [
        (memory_id, cosine)
        for memory_id, cosine in store.vector_search(req.vector, fetch, req.flt)
        if cosine > settings.search_min_similarity
    ]
    by_keyword = store.keyword_search(req.query, fetch, req.flt)
    ids = list(dict.fromkeys([i for i, _ in by_vector] + [i for i, _ in by_keyword]))
    records = store.get_many(ids)
    found: dict[str, Candidate] = {}
    for rank, (memory_id, cosine) in enumerate(by_vector, start=1):
        if memory_id in records:
            found[memory_id] = Candidate(records[memory_id], vector_rank=rank, cosine=cosine)
    for rank, (memory_id, score) in enumerate(by_keyword, start=1):
        if memory_id not in records:
            continue
        cand = found.setdefault(memory_id, Candidate(records[memory_id]))
        cand.keyword_rank, cand.keyword_score = rank, score
    missing = [c.memory.id for c in found.values() if c.vector_rank is None]
    if missing:  # keyword-only candidates still get their true cosine
        vectors = store.vectors(missing)
        query = np.asarray(req.vector, dtype=np.float32)
        qnorm = float(np.linalg.norm(query)) or 1.0
        for memory_id, vec in vectors.items():
            norm = float(np.linalg.norm(vec)) or 1.0
            found[memory_id].cosine = float(vec @ query) / (norm * qnorm)
    if req.profile.needs_coverage and found:
        _add_coverage(store, req.query, list(found.values()))
    return list(found.values())


def _add_coverage(store: Store, query: str, candidates: list[Candidate]) -> None:
    pairs, freqs, total = store.term_stats(query)
    weights = {term: signals.idf(freqs.get(term, 0), max(total, 1)) for _, term in pairs}
    for cand in candidates:
        text = " ".join(filter(None, (cand.memory.title, cand.memory.content)))
        cand.coverage = signals.keyword_coverage(set(store.index_terms(text)), weights)


def run(
    store: Store,
    req: SearchRequest,
    settings: Settings,
    *,
    reranker: Reranker | None = None,
) -> list[Candidate]:
    """Scored, ordered candidates, at most ``req.limit``."""
    candidates = gather(store, req, settings)
    ctx = ScoringContext(now=req.now, settings=settings, path_hint=req.path_hint)
    for cand in candidates:
        cand.score = req.profile.scorer(cand, ctx)
    if settings.memory_selroute_enabled:
        kind, favoured = route(req.query)
        for cand in candidates:
            factor = 1.0 + settings.memory_selroute_boost if cand.memory.type in favoured else 1.0
            cand.trace["route"] = factor
            cand.score *= factor
    candidates.sort(key=lambda c: (-c.score, c.memory.id))
    if reranker is not None and settings.memory_reranker_enabled and candidates:
        head = candidates[: req.limit * settings.knn_overfetch_multiplier]
        scores = list(reranker.rerank(req.query, [c.memory.content for c in head]))
        for cand, value in zip(head, scores, strict=True):
            cand.trace["rerank"] = float(value)
            cand.trace["pre_rerank_score"] = cand.score
            cand.score = float(value)
        head.sort(key=lambda c: (-c.score, c.memory.id))
        candidates = head
    for cand in candidates:
        cand.trace["score"] = cand.score
    return candidates[: req.limit]
