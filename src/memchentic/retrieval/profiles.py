"""Ranking profiles as declarative presets: each names a scorer built from the
pure signals, and every scorer returns its score with the trace of its signals.

    rrf           match x freshness x path x confidence x usage        (default)
    conversation  rrf, with speakers also read from "Name: text" transcript lines
    cosine_decay  min(1, cosine x decayed_confidence) [+ keyword boost]
    hybrid        wv x cosine + wk x keyword coverage + wr x recency + wi x importance

A profile also carries every parameter a search ranks with (:class:`Knobs`,
issue 35 item 4): the named ones take the settings' (:func:`resolve`), a caller
may pass a tuned one (:meth:`SearchProfile.tuned`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from ..clock import age_days
from ..errors import ValidationError
from ..record import MemoryRecord
from ..settings import Settings
from ..store.base import RankRow
from . import cues, signals
from .knobs import Knobs


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


#: A context's knobs when none are given: those of its ``settings``, else the defaults.
_OF_SETTINGS = Knobs()


@dataclass(frozen=True, slots=True)
class ScoringContext:
    """What a scorer reads besides the candidate: the time asked, the query's
    cues and the profile's :class:`Knobs`."""

    now: datetime
    #: Where ``knobs`` come from when none are given (a context built from settings).
    settings: Settings | None = None
    path_hint: str | None = None
    #: Lower-cased words of the query (for the speaker cue).
    query_words: frozenset[str] = frozenset()
    #: Dates the query names, as [start, end) (for the date cue).
    query_dates: tuple[tuple[datetime, datetime], ...] = ()
    #: The ranking parameters; by default those of ``settings`` (else the defaults).
    knobs: Knobs = _OF_SETTINGS

    def __post_init__(self) -> None:
        if self.knobs is _OF_SETTINGS and self.settings is not None:
            object.__setattr__(self, "knobs", Knobs.of(self.settings))


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
    k, m = ctx.knobs, c.memory
    speaker = cues.speaker_of(m.content, m.metadata, prefix=prefix_speakers)
    age = age_days(ctx.now, m.updated_at)
    parts = {
        "match": signals.match((c.vector_rank, c.keyword_rank), k.rrf_k),
        "freshness": signals.freshness(age, k.recency_half_life_days),
        "path": signals.path_factor(signals.paths_match(m.path_hint, ctx.path_hint), k.path_boost),
        "confidence": signals.confidence_factor(m.kind, m.reinforcement, k.guide_confidence_weight),
        "usage": signals.usage(m.recall_count, k.usage_weight),
        # Extra signals: each is exactly 1 when it does not apply.
        "speaker": signals.boost_factor(
            bool(ctx.query_words)
            and cues.names_speaker(ctx.query_words, speaker, roles=k.role_persons),
            k.speaker_boost,
        ),
        "date": signals.boost_factor(
            cues.in_any(m.valid_from or m.created_at, ctx.query_dates), k.date_boost
        ),
        "horizon": signals.horizon(age, k.recency_half_life_days, k.episodic_recency_days)
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
    knobs = ctx.knobs
    if not rows:
        return []
    k, half_life = knobs.rrf_k, knobs.recency_half_life_days
    vr = np.array([r or 0 for r in vector_ranks], dtype=np.float64)
    kr = np.array([r or 0 for r in keyword_ranks], dtype=np.float64)
    with np.errstate(divide="ignore"):
        score = np.where(vr > 0, 1.0 / (k + vr), 0.0) + np.where(kr > 0, 1.0 / (k + kr), 0.0)
    now = ctx.now
    age = np.array([age_days(now, row.updated_at) for row in rows], dtype=np.float64)
    score *= 1.0 / (1.0 + age / half_life)  # freshness
    if ctx.path_hint:
        matches = [signals.paths_match(row.path_hint, ctx.path_hint) for row in rows]
        score *= np.where(matches, 1.0 + knobs.path_boost, 1.0)
    guide = np.array([row.kind == "guide" for row in rows])
    if guide.any():
        reinforcement = np.array([row.reinforcement for row in rows], dtype=np.float64)
        score *= np.where(guide, 1.0 + knobs.guide_confidence_weight * reinforcement, 1.0)
    recalls = np.array([row.recall_count for row in rows], dtype=np.float64)
    score *= 1.0 + knobs.usage_weight * np.log1p(np.maximum(recalls, 0.0))
    score *= spread_rrf(ctx)  # the speaker and date cues at their largest
    own = knobs.episodic_recency_days
    if own > 0 and own != half_life:
        episodic = np.array([row.type in EPISODIC_TYPES for row in rows])
        if episodic.any():
            score *= np.where(episodic, (1.0 + age / half_life) / (1.0 + age / own), 1.0)
    return score.tolist()


def spread_rrf(ctx: ScoringContext) -> float:
    """How far below its :func:`bound_rrf` a score can fall, as a ratio: the cues
    the bound takes at their largest (each is 1 or ``1 + boost``)."""
    k = ctx.knobs
    spread = 1.0
    if ctx.query_words:
        spread *= max(1.0, 1.0 + k.speaker_boost)
    if ctx.query_dates:
        spread *= max(1.0, 1.0 + k.date_boost)
    return spread


def score_cosine_decay(c: Candidate, ctx: ScoringContext) -> float:
    k, m = ctx.knobs, c.memory
    age = age_days(ctx.now, m.created_at)
    decay = signals.decay(age, k.decay_half_life_days)
    decayed = m.confidence * decay
    base = min(1.0, max(0.0, c.cosine) * decayed)
    boost = k.keyword_boost * c.coverage if k.keyword_boost_enabled else 0.0
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
    k, m = ctx.knobs, c.memory
    age = age_days(ctx.now, m.updated_at)
    recency = signals.decay(age, k.recency_half_life_days)
    parts = {
        "vector": k.hybrid_vector_weight * max(0.0, c.cosine),
        "keyword": k.hybrid_keyword_weight * c.coverage,
        "recency": k.hybrid_recency_weight * recency,
        "importance": k.hybrid_importance_weight * m.importance,
    }
    c.trace.update(
        cosine=c.cosine,
        keyword_coverage=c.coverage,
        age_days=age,
        recency_decay=recency,
        vector_rank=_rank_value(c.vector_rank),
        keyword_rank=_rank_value(c.keyword_rank),
        **{f"{name}_part": v for name, v in parts.items()},
    )
    return sum(parts.values())


@dataclass(frozen=True, slots=True)
class SearchProfile:
    """A ranking preset: how the first stage scores (``scorer``, ``bound``, ...)
    and every parameter the search ranks with (``knobs``).

    The named profiles below are recipes without knobs: a search takes the
    engine's settings' (:func:`resolve`). A caller tunes one as a value and
    passes it where a profile name is accepted::

        mem.search("...", profile=RRF.tuned(rrf_k=30, rerank=False))
        mem.search("...", profile=resolve("rrf", mem.settings).tuned(rerank_depth=20))
    """

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
    #: The ranking parameters; None: those of the settings a search runs under.
    knobs: Knobs | None = None

    def tuned(self, **changes: Any) -> SearchProfile:
        """This profile with its knobs changed (:meth:`Knobs.tuned`); a recipe's
        knobs start from the documented defaults (not the environment's)."""
        return replace(self, knobs=(self.knobs or Knobs()).tuned(**changes))

    def with_knobs(self, knobs: Knobs) -> SearchProfile:
        return replace(self, knobs=knobs)


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
    """The named recipe (knobs from the settings a search runs under), or the profile given."""
    if isinstance(name, SearchProfile):
        return name
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise ValidationError("profile", f"must be one of {', '.join(PROFILES)}") from None


def knobs_of(profile: SearchProfile, settings: Settings | None = None) -> Knobs:
    """The knobs ``profile`` ranks with: its own, else those of ``settings``
    (else the documented defaults)."""
    if profile.knobs is not None:
        return profile.knobs
    return Knobs.of(settings) if settings is not None else Knobs()


def resolve(choice: str | SearchProfile, settings: Settings | None = None) -> SearchProfile:
    """The profile a search ranks with, knobs and all: a name, or a recipe
    without knobs, takes those of ``settings`` (so the ``SEARCH_*`` settings tune
    the named profiles); a tuned profile is itself."""
    profile = get_profile(choice)
    if profile.knobs is not None:
        return profile
    return profile.with_knobs(knobs_of(profile, settings))
