"""A search profile's ranking parameters as one frozen value (issue 35, item 4).

Every number and switch the pipeline and the scorers read is a field of
:class:`Knobs`; a :class:`~memchentic.retrieval.profiles.SearchProfile` carries
them, so a caller can tune a search without touching the settings (as graphiti's
search recipes are config values)::

    from memchentic.retrieval.profiles import RRF
    mem.search("...", profile=RRF.tuned(rrf_k=30, rerank_depth=20))

Each field but the newest is one setting's value (its name in :data:`SETTING`);
its default is that setting's documented default, and :meth:`Knobs.of` reads
them all from a :class:`~memchentic.settings.Settings`, which is how the named
profiles get theirs: the ``SEARCH_*`` settings keep tuning them (docs/design.md, section
11). A knob no setting mirrors yet keeps its default there.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..settings import Settings

__all__ = ["SETTING", "Knobs"]


def _knob(setting: str) -> Any:
    """A field that mirrors ``setting``: its default and (in ``metadata``) its name."""
    return field(default=Settings.model_fields[setting].default, metadata={"setting": setting})


@dataclass(frozen=True, slots=True)
class Knobs:
    """The ranking parameters of one profile: candidates, fusion, cues, the query
    router, the second stage and the plugged reranker. Each field's comment
    names the setting it mirrors."""

    # --- the candidate stages (``pipeline``) --------------------------------------------
    #: Each stage fetches ``max(limit x this, candidate_floor)`` (KNN_OVERFETCH_MULTIPLIER).
    fetch_multiplier: int = _knob("knn_overfetch_multiplier")
    #: SEARCH_CANDIDATE_FLOOR.
    candidate_floor: int = _knob("search_candidate_floor")
    #: Vector candidates need a cosine above this (SEARCH_MIN_SIMILARITY).
    min_similarity: float = _knob("search_min_similarity")
    #: Keyword candidates need this share of the best keyword score (SEARCH_KEYWORD_MIN_RATIO).
    keyword_min_ratio: float = _knob("search_keyword_min_ratio")
    #: Stage score + this x the best adjacent memory's score (SEARCH_CONTEXT_WEIGHT).
    context_weight: float = _knob("search_context_weight")
    #: SEARCH_CONTEXT_GAP_HOURS.
    context_gap_hours: float = _knob("search_context_gap_hours")

    # --- the first stage's scorers (``profiles``) -----------------------------------------
    #: RRF_K.
    rrf_k: float = _knob("rrf_k")
    #: H in freshness = 1 / (1 + age / H) (SEARCH_RECENCY_HALF_LIFE_DAYS).
    recency_half_life_days: float = _knob("search_recency_half_life_days")
    #: SEARCH_PATH_BOOST.
    path_boost: float = _knob("search_path_boost")
    #: SEARCH_GUIDE_CONFIDENCE_WEIGHT.
    guide_confidence_weight: float = _knob("search_guide_confidence_weight")
    #: MEMORY_USAGE_SCORE_WEIGHT.
    usage_weight: float = _knob("memory_usage_score_weight")
    #: SEARCH_SPEAKER_BOOST.
    speaker_boost: float = _knob("search_speaker_boost")
    #: SEARCH_DATE_BOOST.
    date_boost: float = _knob("search_date_boost")
    #: SEARCH_ROLE_PERSONS.
    role_persons: bool = _knob("search_role_persons")
    #: SEARCH_RELATIVE_DATES.
    relative_dates: bool = _knob("search_relative_dates")
    #: SEARCH_EPISODIC_RECENCY_DAYS.
    episodic_recency_days: float = _knob("search_episodic_recency_days")
    #: cosine_decay's half-life (MEMORY_DECAY_HALF_LIFE_DAYS).
    decay_half_life_days: float = _knob("memory_decay_half_life_days")
    #: cosine_decay's keyword boost on (MEMORY_HYBRID_ENABLED) and its weight
    #: (MEMORY_HYBRID_KEYWORD_BOOST).
    keyword_boost_enabled: bool = _knob("memory_hybrid_enabled")
    keyword_boost: float = _knob("memory_hybrid_keyword_boost")
    #: hybrid's weights (HYBRID_VECTOR_WEIGHT, HYBRID_KEYWORD_WEIGHT, ...).
    hybrid_vector_weight: float = _knob("hybrid_vector_weight")
    hybrid_keyword_weight: float = _knob("hybrid_keyword_weight")
    hybrid_recency_weight: float = _knob("hybrid_recency_weight")
    hybrid_importance_weight: float = _knob("hybrid_importance_weight")

    # --- after the scorer -----------------------------------------------------------------
    #: The query router and its boost (MEMORY_SELROUTE_ENABLED, MEMORY_SELROUTE_BOOST).
    route: bool = _knob("memory_selroute_enabled")
    route_boost: float = _knob("memory_selroute_boost")
    #: The second stage, for profiles it applies to (SEARCH_RERANK), and its depth
    #: (SEARCH_RERANK_DEPTH).
    rerank: bool = _knob("search_rerank")
    rerank_depth: int = _knob("search_rerank_depth")
    #: The second stage's signal weights (SEARCH_RERANK_<SIGNAL>_WEIGHT, ``rerank.SIGNALS``).
    rerank_coverage: float = _knob("search_rerank_coverage_weight")
    rerank_proximity: float = _knob("search_rerank_proximity_weight")
    rerank_phrase: float = _knob("search_rerank_phrase_weight")
    rerank_entities: float = _knob("search_rerank_entity_weight")
    rerank_answer: float = _knob("search_rerank_answer_weight")
    #: In a chat between a user and an assistant (memories whose speaker is a chat
    #: role, ``cues.ROLE_PERSONS``), when the query speaks of one of them (the
    #: speaker cue: "what did *I* say"), the word signals of the other role's
    #: turns count this much (1 = as much, 0 = not at all): a reply that restates
    #: the user's words is not evidence of what the user said or did.
    rerank_role_gate: float = _knob("search_rerank_role_gate")
    #: Whether a plugged reranker (``Memory(reranker=...)``) reorders the first
    #: ``limit x fetch_multiplier`` (MEMORY_RERANKER_ENABLED).
    reranker: bool = _knob("memory_reranker_enabled")

    @classmethod
    def of(cls, settings: Settings) -> Knobs:
        """The knobs as ``settings`` sets them."""
        return cls(**{name: getattr(settings, setting) for name, setting in SETTING.items()})

    def tuned(self, **changes: Any) -> Knobs:
        """A copy with ``changes`` (knob names) applied; an unknown name raises ``TypeError``."""
        return replace(self, **changes)

    def rerank_weights(self) -> dict[str, float]:
        """The second stage's weights by signal name (``rerank.SIGNALS``)."""
        return {
            "coverage": self.rerank_coverage,
            "proximity": self.rerank_proximity,
            "phrase": self.rerank_phrase,
            "entities": self.rerank_entities,
            "answer": self.rerank_answer,
        }


#: Each knob that mirrors a setting -> that setting.
SETTING: dict[str, str] = {f.name: f.metadata["setting"] for f in fields(Knobs) if f.metadata}
