"""The search pipeline (DESIGN section 3):

    query -> filter -> candidates (vector kNN + keywords, over-fetched)
          -> fuse and adjust (the profile's scorer) -> optional route / rerank -> top limit

No backend names here: candidates come from the store interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from ..settings import Settings
from ..store.base import MemoryFilter, Store
from . import context, cues, signals
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
    """Candidates from both stages, with their ranks and similarities.

    Each stage fetches ``max(limit x KNN_OVERFETCH_MULTIPLIER, SEARCH_CANDIDATE_FLOOR)``.
    With ``SEARCH_CONTEXT_WEIGHT`` > 0, the adjacent memories of the same session
    join the candidates and each stage's list is ordered by the stage score plus
    that weight times the best adjacent score (``signals.with_context``).
    """
    fetch = max(req.limit * settings.knn_overfetch_multiplier, settings.search_candidate_floor)
    by_vector = [
        (memory_id, cosine)
        for memory_id, cosine in store.vector_search(req.vector, fetch, req.flt)
        if cosine > settings.search_min_similarity
    ]
    by_keyword = store.keyword_search(req.query, fetch, req.flt)
    ids = list(dict.fromkeys([i for i, _ in by_vector] + [i for i, _ in by_keyword]))
    records = store.get_many(ids)
    cosines = dict(by_vector)
    keyword = dict(by_keyword)
    weight = settings.search_context_weight
    adjacent: dict[str, list[str]] = {}
    if weight > 0 and records:
        hood = context.neighbours(
            store, req.flt, list(records.values()),
            timedelta(hours=settings.search_context_gap_hours),
        )  # fmt: skip
        for memory_id in list(records):
            for other in hood.adjacent.get(memory_id, ()):
                records.setdefault(other, hood.rows[other])
        adjacent = {i: [o for o in hood.adjacent.get(i, ()) if o in records] for i in records}
    missing = [i for i in records if i not in cosines]
    if missing:  # keyword-only candidates (and neighbours) still get their true cosine
        vectors = store.vectors(missing)
        query = np.asarray(req.vector, dtype=np.float32)
        qnorm = float(np.linalg.norm(query)) or 1.0
        for memory_id, vec in vectors.items():
            norm = float(np.linalg.norm(vec)) or 1.0
            cosines[memory_id] = float(vec @ query) / (norm * qnorm)
    found = {i: Candidate(rec, cosine=cosines.get(i, 0.0)) for i, rec in records.items()}
    for memory_id, cand in found.items():
        near = adjacent.get(memory_id, ())
        cand.keyword_score = keyword.get(memory_id, 0.0)
        cand.vector_context = signals.with_context(
            cand.cosine, [cosines.get(o, 0.0) for o in near], weight
        )
        cand.keyword_context = signals.with_context(
            cand.keyword_score, [keyword.get(o, 0.0) for o in near], weight
        )
    if adjacent:
        vector_order = [
            i for i in sorted(found, key=lambda i: (-found[i].vector_context, i))
            if found[i].vector_context > settings.search_min_similarity
        ][:fetch]  # fmt: skip
        keyword_order = [
            i for i in sorted(found, key=lambda i: (-found[i].keyword_context, i))
            if found[i].keyword_context > 0
        ][:fetch]  # fmt: skip
    else:
        vector_order = [i for i, _ in by_vector if i in found]
        keyword_order = [i for i, _ in by_keyword if i in found]
    if keyword_order and settings.search_keyword_min_ratio > 0:
        # A keyword match scoring a sliver of the best one (only common words in
        # common) is not evidence: its rank would be noise in the fusion.
        floor = settings.search_keyword_min_ratio * found[keyword_order[0]].keyword_context
        keyword_order = [i for i in keyword_order if found[i].keyword_context >= floor]
    for rank, memory_id in enumerate(vector_order, start=1):
        found[memory_id].vector_rank = rank
    for rank, memory_id in enumerate(keyword_order, start=1):
        found[memory_id].keyword_rank = rank
    candidates = [c for c in found.values() if c.vector_rank or c.keyword_rank]
    if req.profile.needs_coverage and candidates:
        _add_coverage(store, req.query, candidates)
    return candidates


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
    ctx = ScoringContext(
        now=req.now,
        settings=settings,
        path_hint=req.path_hint,
        query_words=frozenset(cues.words(req.query)),
        query_dates=tuple(cues.query_dates(req.query)),
    )
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
