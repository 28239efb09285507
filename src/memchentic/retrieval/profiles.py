"""Ranking profiles as declarative presets: each names a scorer built from the
pure signals, and every scorer returns its score with the trace of its signals.

    rrf           match x freshness x path x confidence x usage        (default)
    conversation  rrf, with speakers also read from "Name: text" transcript lines
    cosine_decay  min(1, cosine x decayed_confidence) [+ keyword boost]
    hybrid        wv x cosine + wk x keyword coverage + wr x recency + wi x importance
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ..clock import age_days
from ..errors import ValidationError
from ..record import MemoryRecord
from ..settings import Settings
from ..store.base import RankRow
from . import cues, signals


@dataclass(slots=True)
class Candidate:
    """A memory found by at least one candidate stage, with what each stage saw."""

    memory: MemoryRecord
    vector_rank: int | None = None
    keyword_rank: int | None = None
    cosine: float = 0.0
    keyword_score: float = 0.0
    coverage: float = 0.0
    #: Stage scores with conversation context (see ``signals.with_context``).
    vector_context: float = 0.0
    keyword_context: float = 0.0
    trace: dict[str, float] = field(default_factory=dict)
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class ScoringContext:
    now: datetime
    settings: Settings
    path_hint: str | None = None
    #: Lower-cased words of the query (for the speaker cue).
    query_words: frozenset[str] = frozenset()
    #: Dates the query names, as [start, end) (for the date cue).
    query_dates: tuple[tuple[datetime, datetime], ...] = ()


#: Types whose recency follows ``SEARCH_EPISODIC_RECENCY_DAYS`` (the horizon signal).
EPISODIC_TYPES = frozenset({"episodic"})

Scorer = Callable[[Candidate, ScoringContext], float]
#: Upper bounds of a scorer's scores: (vector ranks, keyword ranks, RankRows, context)
#: of many candidates -> one bound each (see ``bound_rrf``).
Bound = Callable[
    [Sequence[int | None], Sequence[int | None], Sequence[RankRow], ScoringContext], list[float]
]


def _rank_value(rank: int | None) -> float:
    return float(rank) if rank is not None else 0.0


def score_rrf(c: Candidate, ctx: ScoringContext, *, prefix_speakers: bool = False) -> float:
    s, m = ctx.settings, c.memory
    speaker = cues.speaker_of(m.content, m.metadata, prefix=prefix_speakers)
    age = age_days(ctx.now, m.updated_at)
    parts = {
        "match": signals.match((c.vector_rank, c.keyword_rank), s.rrf_k),
        "freshness": signals.freshness(age, s.search_recency_half_life_days),
        "path": signals.path_factor(
            signals.paths_match(m.path_hint, ctx.path_hint), s.search_path_boost
        ),
        "confidence": signals.confidence_factor(
            m.kind, m.reinforcement, s.search_guide_confidence_weight
        ),
        "usage": signals.usage(m.recall_count, s.memory_usage_score_weight),
        # Extra signals: each is exactly 1 when it does not apply.
        "speaker": signals.boost_factor(
            bool(ctx.query_words)
            and cues.names_speaker(ctx.query_words, speaker, roles=s.search_role_persons),
            s.search_speaker_boost,
        ),
        "date": signals.boost_factor(
            cues.in_any(m.valid_from or m.created_at, ctx.query_dates), s.search_date_boost
        ),
        "horizon": signals.horizon(
            age, s.search_recency_half_life_days, s.search_episodic_recency_days
        )
        if m.type in EPISODIC_TYPES
        else 1.0,
    }
    c.trace.update(
        vector_rank=_rank_value(c.vector_rank),
        keyword_rank=_rank_value(c.keyword_rank),
        cosine=c.cosine,
        keyword_score=c.keyword_score,
        vector_context=c.vector_context,
        keyword_context=c.keyword_context,
        age_days=age,
        **parts,
    )
    score = 1.0
    for value in parts.values():
        score *= value
    return score


def score_conversation(c: Candidate, ctx: ScoringContext) -> float:
    """:func:`score_rrf`, with the speaker of a memory that records none also read
    from a transcript line's ``"Name: "`` prefix."""
    return score_rrf(c, ctx, prefix_speakers=True)


def bound_rrf(
    vector_ranks: Sequence[int | None],
    keyword_ranks: Sequence[int | None],
    rows: Sequence[RankRow],
    ctx: ScoringContext,
) -> list[float]:
    """Upper bounds of :func:`score_rrf`, one per candidate, from its ranks and its
    :class:`RankRow`: every factor exactly, but the speaker and date cues (which
    read the content and dates) at their largest. Lets the pipeline load and
    score only the candidates that can still reach the top.

    Computed for all candidates at once, with the signals' own formulas on arrays
    (the same operations in the same order, so the same values up to the last
    bit of ``log1p``, which the pipeline's slack covers)."""
    s = ctx.settings
    if not rows:
        return []
    k, half_life = s.rrf_k, s.search_recency_half_life_days
    vr = np.array([r or 0 for r in vector_ranks], dtype=np.float64)
    kr = np.array([r or 0 for r in keyword_ranks], dtype=np.float64)
    with np.errstate(divide="ignore"):
        score = np.where(vr > 0, 1.0 / (k + vr), 0.0) + np.where(kr > 0, 1.0 / (k + kr), 0.0)
    now = ctx.now
    age = np.array([age_days(now, row.updated_at) for row in rows], dtype=np.float64)
    score *= 1.0 / (1.0 + age / half_life)  # freshness
    if ctx.path_hint:
        matches = [signals.paths_match(row.path_hint, ctx.path_hint) for row in rows]
        score *= np.where(matches, 1.0 + s.search_path_boost, 1.0)
    guide = np.array([row.kind == "guide" for row in rows])
    if guide.any():
        reinforcement = np.array([row.reinforcement for row in rows], dtype=np.float64)
        score *= np.where(guide, 1.0 + s.search_guide_confidence_weight * reinforcement, 1.0)
    recalls = np.array([row.recall_count for row in rows], dtype=np.float64)
    score *= 1.0 + s.memory_usage_score_weight * np.log1p(np.maximum(recalls, 0.0))
    score *= spread_rrf(ctx)  # the speaker and date cues at their largest
    own = s.search_episodic_recency_days
    if own > 0 and own != half_life:
        episodic = np.array([row.type in EPISODIC_TYPES for row in rows])
        if episodic.any():
            score *= np.where(episodic, (1.0 + age / half_life) / (1.0 + age / own), 1.0)
    return score.tolist()


def spread_rrf(ctx: ScoringContext) -> float:
    """How far below its :func:`bound_rrf` a score can fall, as a ratio: the cues
    the bound takes at their largest (each is 1 or ``1 + boost``)."""
    s = ctx.settings
    spread = 1.0
    if ctx.query_words:
        spread *= max(1.0, 1.0 + s.search_speaker_boost)
    if ctx.query_dates:
        spread *= max(1.0, 1.0 + s.search_date_boost)
    return spread


def score_cosine_decay(c: Candidate, ctx: ScoringContext) -> float:
    s, m = ctx.settings, c.memory
    age = age_days(ctx.now, m.created_at)
    decay = signals.decay(age, s.memory_decay_half_life_days)
    decayed = m.confidence * decay
    base = min(1.0, max(0.0, c.cosine) * decayed)
    boost = s.memory_hybrid_keyword_boost * c.coverage if s.memory_hybrid_enabled else 0.0
    c.trace.update(
        cosine=c.cosine,
        confidence=m.confidence,
        age_days=age,
        decay=decay,
        decayed_confidence=decayed,
        keyword_coverage=c.coverage,
        keyword_boost=boost,
        vector_rank=_rank_value(c.vector_rank),
        keyword_rank=_rank_value(c.keyword_rank),
    )
    return min(1.0, base + boost)


def score_hybrid(c: Candidate, ctx: ScoringContext) -> float:
    s, m = ctx.settings, c.memory
    age = age_days(ctx.now, m.updated_at)
    recency = signals.decay(age, s.search_recency_half_life_days)
    parts = {
        "vector": s.hybrid_vector_weight * max(0.0, c.cosine),
        "keyword": s.hybrid_keyword_weight * c.coverage,
        "recency": s.hybrid_recency_weight * recency,
        "importance": s.hybrid_importance_weight * m.importance,
    }
    c.trace.update(
        cosine=c.cosine,
        keyword_coverage=c.coverage,
        age_days=age,
        recency_decay=recency,
        vector_rank=_rank_value(c.vector_rank),
        keyword_rank=_rank_value(c.keyword_rank),
        **{f"{k}_part": v for k, v in parts.items()},
    )
    return sum(parts.values())


@dataclass(frozen=True, slots=True)
class SearchProfile:
    """A named ranking preset."""

    name: str
    scorer: Scorer
    #: Whether the scorer needs keyword coverage (IDF-weighted) of each candidate.
    needs_coverage: bool = False
    description: str = ""
    #: Upper bounds of the scores from the ranks and ``RankRow``s (see ``bound_rrf``);
    #: with them, the pipeline loads and scores only the candidates that can rank.
    bound: Bound | None = None
    #: With ``bound``: the largest ratio of a bound to its score (see ``spread_rrf``);
    #: the pipeline loads at once every candidate that can rank by that ratio.
    spread: Callable[[ScoringContext], float] | None = None
    #: Whether the second stage (``retrieval.rerank``, ``SEARCH_RERANK``) reorders
    #: this profile's first candidates: the fused-rank profiles, whose scores keep
    #: no trace of what the text says.
    rerank: bool = False


RRF = SearchProfile(
    "rrf", score_rrf, description="match x freshness x path x confidence x usage",
    bound=bound_rrf, spread=spread_rrf, rerank=True,
)  # fmt: skip
CONVERSATION = SearchProfile(
    "conversation", score_conversation,
    description="rrf, with speakers also read from transcript lines ('Name: text')",
    bound=bound_rrf, spread=spread_rrf, rerank=True,
)  # fmt: skip
COSINE_DECAY = SearchProfile(
    "cosine_decay",
    score_cosine_decay,
    needs_coverage=True,
    description="min(1, cosine x decayed_confidence)",
)
HYBRID = SearchProfile(
    "hybrid",
    score_hybrid,
    needs_coverage=True,
    description="weighted vector + keyword coverage + recency + importance",
)
PROFILES: dict[str, SearchProfile] = {p.name: p for p in (RRF, CONVERSATION, COSINE_DECAY, HYBRID)}


def get_profile(name: str | SearchProfile) -> SearchProfile:
    if isinstance(name, SearchProfile):
        return name
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise ValidationError("profile", f"must be one of {', '.join(PROFILES)}") from None
