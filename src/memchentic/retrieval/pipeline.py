"""The search pipeline (docs/design.md, section 3):

    query -> filter -> candidates (vector kNN + keywords, over-fetched)
          -> fuse and adjust (the profile's scorer) -> optional route
          -> second stage (``SEARCH_RERANK``, ``rerank.py``) -> optional reranker -> top limit

No backend names here: candidates come from the store interface.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from .. import tracing
from ..record import MemoryRecord
from ..settings import Settings
from ..store.base import MemoryFilter, RankRow, Store, stored_cosines
from . import context, cues, rerank, signals
from .knobs import Knobs
from .profiles import Candidate, ScoringContext, SearchProfile, knobs_of
from .router import route


class Reranker(Protocol):
    """Scores (query, text) pairs; higher is better. Plug in a cross-encoder or an LLM."""

    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search: the query and its vector, what may be read, how many, and the
    profile it ranks with (its knobs, else those of the settings ``run`` gets)."""

    query: str
    vector: np.ndarray
    flt: MemoryFilter
    limit: int
    profile: SearchProfile
    now: datetime
    path_hint: str | None = None


def gather(store: Store, req: SearchRequest, settings: Settings | None = None) -> list[Candidate]:
    """Candidates from both stages, with their ranks and similarities.

    Each stage fetches ``max(limit x fetch_multiplier, candidate_floor)`` (the
    profile's :class:`Knobs`; ``settings``' for a profile without its own). With
    ``context_weight`` > 0, the adjacent memories of the same session join the
    candidates and each stage's list is ordered by the stage score plus that
    weight times the best adjacent score (``signals.with_context``).
    """
    knobs = knobs_of(req.profile, settings)
    return _assemble(store, req, knobs, _stages(store, req, knobs))


@dataclass(slots=True)
class _Stages:
    fetch: int
    by_vector: list[tuple[str, float]]
    by_keyword: list[tuple[str, float]]
    #: The RankRow of candidates whose row a stage read (see ``Store.vector_search``).
    rows: dict[str, RankRow]
    #: ``by_keyword`` as a map: id -> keyword score.
    keyword: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.keyword = dict(self.by_keyword)

    def ids(self) -> list[str]:
        return list(dict.fromkeys([i for i, _ in self.by_vector] + [i for i, _ in self.by_keyword]))


#: Threads that run keyword stages beside vector stages (stores with concurrent
#: reads): as many as searches that may run at once in a busy server process (the
#: store's connection pool is what limits them).
STAGE_THREADS = 16
_stage_threads: ThreadPoolExecutor | None = None
_stage_threads_lock = threading.Lock()


def _stage_pool() -> ThreadPoolExecutor:
    global _stage_threads
    with _stage_threads_lock:
        if _stage_threads is None:
            _stage_threads = ThreadPoolExecutor(STAGE_THREADS, "memchentic-stage")
        return _stage_threads


def _forget_stage_pool() -> None:
    """In a forked child: the parent's pool object came along, its threads did not
    (a task submitted to it would never run), so the child starts its own."""
    global _stage_threads, _stage_threads_lock
    _stage_threads = None
    _stage_threads_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_stage_pool)


def _stages(store: Store, req: SearchRequest, knobs: Knobs) -> _Stages:
    """Both stages' candidates. On a store with concurrent reads (a server
    database) the keyword stage runs on another thread and connection while this
    one runs the vector stage: the server works on both at once."""
    fetch = max(req.limit * knobs.fetch_multiplier, knobs.candidate_floor)
    rows: dict[str, RankRow] = {}
    keyword_rows: dict[str, RankRow] = {}
    if not store.concurrent_reads():
        found = _vector_stage(store, req, fetch, rows)
        by_keyword = _keyword_stage(store, req, fetch, keyword_rows)
    else:
        pending = _stage_pool().submit(
            tracing.in_context(_keyword_stage), store, req, fetch, keyword_rows
        )
        try:
            found = _vector_stage(store, req, fetch, rows)
        finally:  # the keyword stage ends (or fails) before this call does
            wait([pending])
        by_keyword = pending.result()
    rows.update(keyword_rows)
    by_vector = [(i, cosine) for i, cosine in found if cosine > knobs.min_similarity]
    return _Stages(fetch, by_vector, by_keyword, rows)


def _vector_stage(
    store: Store, req: SearchRequest, fetch: int, rows: dict[str, RankRow]
) -> list[tuple[str, float]]:
    with tracing.span("memchentic.search.vector", {"memchentic.fetch": fetch}) as span:
        found = store.vector_search(req.vector, fetch, req.flt, rows)
        span.set_attribute("memchentic.candidates", len(found))
        return found


def _keyword_stage(
    store: Store, req: SearchRequest, fetch: int, rows: dict[str, RankRow]
) -> list[tuple[str, float]]:
    with tracing.span("memchentic.search.keyword", {"memchentic.fetch": fetch}) as span:
        found = store.keyword_search(req.query, fetch, req.flt, rows, query_vector=req.vector)
        span.set_attribute("memchentic.candidates", len(found))
        return found


def _true_cosines(
    store: Store,
    req: SearchRequest,
    stages: _Stages,
    ids: list[str],
    rows: Mapping[str, RankRow] | None = None,
) -> dict[str, float]:
    """Each id's cosine: from the vector stage, else (keyword-only candidates and
    neighbours) the one a stage computed, or from its stored vector: the one a
    stage handed over (or ``rows``, the RankRows read since), or looked up."""
    rows = stages.rows if rows is None else rows
    found = dict(stages.by_vector)
    missing = sorted(i for i in ids if i not in found)  # one order on every path
    for i in missing:
        if (row := rows.get(i)) is not None and row.cosine is not None:
            found[i] = row.cosine
    missing = [i for i in missing if i not in found]
    carried = [(i, row.vector) for i in missing
               if (row := rows.get(i)) is not None and row.vector is not None]  # fmt: skip
    if carried:
        values = stored_cosines([vector for _, vector in carried], req.vector)
        found.update(zip([i for i, _ in carried], values, strict=True))
    rest = [i for i in missing if i not in found]
    if rest:
        found.update(store.similarities(req.vector, rest))
    return found


@dataclass(slots=True)
class _Ranked:
    """Stage scores with context and the ranks they give, per id."""

    vector_context: dict[str, float]
    keyword_context: dict[str, float]
    vector_rank: dict[str, int]
    keyword_rank: dict[str, int]


def _rank(
    ids: list[str],
    stages: _Stages,
    cosines: dict[str, float],
    adjacent: dict[str, list[str]] | None,
    knobs: Knobs,
) -> _Ranked:
    keyword = stages.keyword
    if adjacent:  # by score with context, best first, then by id (sorts are stable)
        near = _neighbour_index(ids, adjacent)
        vctx = _with_context(ids, cosines, near, knobs.context_weight)
        kctx = _with_context(ids, keyword, near, knobs.context_weight)
        floor = knobs.min_similarity
        by_id = sorted(ids)
        vector_order = sorted([i for i in by_id if vctx[i] > floor],
                              key=vctx.__getitem__, reverse=True)[: stages.fetch]  # fmt: skip
        keyword_order = sorted([i for i in by_id if kctx[i] > 0],
                               key=kctx.__getitem__, reverse=True)[: stages.fetch]  # fmt: skip
    else:  # with_context of no neighbours: the own score
        vctx = {i: cosines.get(i, 0.0) for i in ids}
        kctx = {i: keyword.get(i, 0.0) for i in ids}
        present = set(ids)
        vector_order = [i for i, _ in stages.by_vector if i in present]
        keyword_order = [i for i, _ in stages.by_keyword if i in present]
    if keyword_order and knobs.keyword_min_ratio > 0:
        # A keyword match scoring a sliver of the best one (only common words in
        # common) is not evidence: its rank would be noise in the fusion.
        floor = knobs.keyword_min_ratio * kctx[keyword_order[0]]
        keyword_order = [i for i in keyword_order if kctx[i] >= floor]
    return _Ranked(
        vctx, kctx,
        {memory_id: rank for rank, memory_id in enumerate(vector_order, start=1)},
        {memory_id: rank for rank, memory_id in enumerate(keyword_order, start=1)},
    )  # fmt: skip


def _neighbour_index(
    ids: list[str], adjacent: Mapping[str, list[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Where in ``ids`` each one's neighbours are (at most two, each one of ``ids``);
    ``len(ids)`` where it has no neighbour there."""
    at = {memory_id: k for k, memory_id in enumerate(ids)}
    first, second = np.full(len(ids), len(ids)), np.full(len(ids), len(ids))
    for k, memory_id in enumerate(ids):
        if near := adjacent.get(memory_id):
            first[k] = at[near[0]]
            if len(near) > 1:
                second[k] = at[near[1]]
    return first, second


def _with_context(
    ids: list[str],
    scores: Mapping[str, float],
    near: tuple[np.ndarray, np.ndarray],
    weight: float,
) -> dict[str, float]:
    """Each id's score with context (``signals.with_context``), all at once."""
    own = np.array([scores.get(i, 0.0) for i in ids] + [-np.inf])  # -inf: no neighbour
    first, second = near
    best = np.maximum(own[first], own[second])
    values = np.where(first < len(ids), signals.with_context_many(own[:-1], best, weight),
                      own[:-1])  # fmt: skip
    return dict(zip(ids, values.tolist(), strict=True))


def _candidate(
    memory: MemoryRecord, ranked: _Ranked, cosines: dict[str, float], keyword: dict[str, float]
) -> Candidate:
    i = memory.id
    return Candidate(
        memory, vector_rank=ranked.vector_rank.get(i), keyword_rank=ranked.keyword_rank.get(i),
        cosine=cosines.get(i, 0.0), keyword_score=keyword.get(i, 0.0),
        vector_context=ranked.vector_context[i], keyword_context=ranked.keyword_context[i],
    )  # fmt: skip


def _neighbours(
    store: Store,
    req: SearchRequest,
    knobs: Knobs,
    ids: list[str],
    rows: Mapping[str, RankRow | MemoryRecord],
) -> context.Neighbourhood:
    """:func:`context.neighbours` of the candidates ``ids`` (``rows``: theirs)."""
    points = [(r.namespace, r.session_id, r.created_at) for i in ids
              if (r := rows[i]).session_id and r.created_at is not None]  # fmt: skip
    gap = timedelta(hours=knobs.context_gap_hours)
    return context.neighbours(store, req.flt, ids, points, gap)


def _assemble(store: Store, req: SearchRequest, knobs: Knobs, stages: _Stages) -> list[Candidate]:
    """Every candidate, loaded whole."""
    records = store.get_many(stages.ids())
    adjacent: dict[str, list[str]] | None = None
    if knobs.context_weight > 0 and records:
        hood = _neighbours(store, req, knobs, list(records), records)
        if hood.added:
            records.update(store.get_many(hood.added))
        adjacent = {i: [o for o in hood.adjacent.get(i, ()) if o in records] for i in records}
    ids = list(records)
    cosines = _true_cosines(store, req, stages, ids)
    ranked = _rank(ids, stages, cosines, adjacent, knobs)
    keyword = stages.keyword
    candidates = [
        _candidate(records[i], ranked, cosines, keyword)
        for i in ids if i in ranked.vector_rank or i in ranked.keyword_rank
    ]  # fmt: skip
    if req.profile.needs_coverage and candidates:
        _add_coverage(store, req.query, candidates)
    return candidates


def _rank_rows(
    store: Store, stages: _Stages, ids: list[str], *, vectors: bool = False
) -> dict[str, RankRow]:
    """The RankRow of each of ``ids`` found: those a stage read, then the others
    (with ``vectors``, with their stored vectors: one read, not two)."""
    rows = {i: row for i in ids if (row := stages.rows.get(i)) is not None}
    if len(rows) < len(ids):
        rows.update(store.rank_rows([i for i in ids if i not in rows], vectors=vectors))
    return rows


#: Whole records the bounded path loads and scores per step.
_BOUNDED_STEP = 8
#: Slack on a bound (its factors multiply in another order than the score's).
_BOUND_SLACK = 1e-9


def _bounded(
    store: Store, req: SearchRequest, knobs: Knobs, stages: _Stages, ctx: ScoringContext
) -> list[Candidate] | None:
    """The candidates that can make the top ``limit``, scored; None when the
    profile has no bound (then :func:`_assemble` loads them all).

    Gives the same top ``limit`` as scoring every candidate: the ranks come from
    the same stage lists, conversation context and cosines, each candidate's
    score is bounded from a few columns (:class:`RankRow`), and candidates are
    loaded and scored in order of their bound until the next bound is under the
    ``limit``-th score. Adjacent memories join as ids with their RankRow, as
    :func:`_assemble` would add them; context changes the ranks only, and the
    bound reads the ranks, so it stays exact.
    """
    bound = req.profile.bound
    if bound is None or req.profile.needs_coverage:
        return None
    wanted = stages.ids()
    rows = _rank_rows(store, stages, wanted)
    ids = [i for i in wanted if i in rows]
    adjacent: dict[str, list[str]] | None = None
    if knobs.context_weight > 0 and ids:
        hood = _neighbours(store, req, knobs, ids, rows)
        adjacent = hood.adjacent
        if hood.added:
            rows.update(_rank_rows(store, stages, hood.added, vectors=True))
            ids += [i for i in hood.added if i in rows]
            if len(ids) < len(adjacent):  # some vanished since the stages ran
                adjacent = {i: [o for o in adjacent[i] if o in rows] for i in ids}
    cosines = _true_cosines(store, req, stages, ids, rows)
    ranked = _rank(ids, stages, cosines, adjacent, knobs)
    keyword = stages.keyword
    ranked_ids = [i for i in ids if i in ranked.vector_rank or i in ranked.keyword_rank]
    values = bound(
        [ranked.vector_rank.get(i) for i in ranked_ids],
        [ranked.keyword_rank.get(i) for i in ranked_ids],
        [rows[i] for i in ranked_ids],
        ctx,
    )
    bounds = sorted(zip(values, ranked_ids, strict=True), key=lambda item: (-item[0], item[1]))
    # The first step loads every candidate that can rank: the top ``limit`` by bound
    # score at least their ``limit``-th bound / spread, and a bound under that
    # cannot reach them. (The loop goes on if rows vanished since the stages ran.)
    first = max(_BOUNDED_STEP, 2 * req.limit)
    if req.profile.spread is not None and len(bounds) >= req.limit:
        floor = bounds[req.limit - 1][0] / req.profile.spread(ctx) * (1 - _BOUND_SLACK)
        first = sum(1 for value, _ in bounds if value >= floor)
    scored: list[Candidate] = []
    best: list[float] = []  # scores so far, best first
    at = 0
    while at < len(bounds):
        if len(best) >= req.limit and bounds[at][0] * (1 + _BOUND_SLACK) < best[req.limit - 1]:
            break
        size = first if at == 0 else max(_BOUNDED_STEP, 2 * req.limit - len(best))
        step = [i for _, i in bounds[at : at + size]]
        at += len(step)
        records = store.get_many(step)
        for memory_id in step:
            if memory_id not in records:  # deleted since the stages ran
                continue
            cand = _candidate(records[memory_id], ranked, cosines, keyword)
            cand.score = req.profile.scorer(cand, ctx)
            scored.append(cand)
            best.append(cand.score)
        best.sort(reverse=True)
    return scored


def _add_coverage(store: Store, query: str, candidates: list[Candidate]) -> None:
    pairs, freqs, total = store.term_stats(query)
    weights = {term: signals.idf(freqs.get(term, 0), max(total, 1)) for _, term in pairs}
    for cand in candidates:
        text = " ".join(filter(None, (cand.memory.title, cand.memory.content)))
        cand.coverage = signals.keyword_coverage(set(store.index_terms(text)), weights)


def _second_stage(
    req: SearchRequest, knobs: Knobs, ranked: list[Candidate], depth: int
) -> list[Candidate]:
    """The first ``depth`` of ``ranked`` (best first) reordered by the second
    stage's signals (``rerank.SIGNALS``); the rest after them, as they were."""
    head = ranked[:depth]
    rerank.rescore(head, rerank.query_cues(req.query), knobs.rerank_weights(),
                   role_gate=knobs.rerank_role_gate)  # fmt: skip
    head.sort(key=lambda c: (-c.score, c.memory.id))
    return head + ranked[depth:]


def run(
    store: Store,
    req: SearchRequest,
    settings: Settings | None = None,
    *,
    reranker: Reranker | None = None,
) -> list[Candidate]:
    """Scored, ordered candidates, at most ``req.limit``.

    Everything that ranks them comes from ``req`` and its profile's
    :class:`Knobs`; ``settings`` only lends its knobs to a profile that carries
    none (a named recipe: ``profiles.resolve``)."""
    knobs = knobs_of(req.profile, settings)
    if req.profile.knobs is None:
        req = replace(req, profile=req.profile.with_knobs(knobs))
    stages = _stages(store, req, knobs)
    ctx = ScoringContext(
        now=req.now,
        path_hint=req.path_hint,
        query_words=frozenset(cues.words(req.query)),
        query_dates=tuple(cues.query_dates(req.query, req.now if knobs.relative_dates else None)),
        knobs=knobs,
    )
    rescored = knobs.route or (
        reranker is not None and knobs.reranker
    )  # both change scores after the profile's: every candidate counts
    second = knobs.rerank and req.profile.rerank
    depth = knobs.rerank_depth if second else req.limit
    # the second stage needs its first `depth` exact, the answer its first `limit`
    head_req = replace(req, limit=max(req.limit, depth))
    with tracing.span("memchentic.search.rank", {"memchentic.profile": req.profile.name}) as span:
        candidates = None if rescored else _bounded(store, head_req, knobs, stages, ctx)
        if candidates is None:
            candidates = _assemble(store, req, knobs, stages)
            for cand in candidates:
                cand.score = req.profile.scorer(cand, ctx)
        if knobs.route:
            kind, favoured = route(req.query)
            boost = 1.0 + knobs.route_boost
            for cand in candidates:
                factor = boost if cand.memory.type in favoured else 1.0
                cand.trace["route"] = factor
                cand.score *= factor
        candidates.sort(key=lambda c: (-c.score, c.memory.id))
        span.set_attribute("memchentic.candidates", len(candidates))
    if second and candidates:
        with tracing.span("memchentic.search.second_stage", {"memchentic.depth": depth}):
            candidates = _second_stage(req, knobs, candidates, depth)
    if reranker is not None and knobs.reranker and candidates:
        head = candidates[: req.limit * knobs.fetch_multiplier]
        with tracing.span("memchentic.search.rerank", {"memchentic.candidates": len(head)}):
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
