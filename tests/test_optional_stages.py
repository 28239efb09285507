"""Opt-in stages of the read path: the query router and the reranker."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memchentic import Settings
from memchentic.retrieval.router import route


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("When did Ana move to Berlin?", "temporal"),
        ("What food does Ana like?", "preference"),
        ("Tell me about the trip to Peru", "narrative"),
        ("What is Ana's employer?", "fact"),
    ],
)
def test_router_classifies_queries(query: str, kind: str):
    assert route(query)[0] == kind


def test_router_boosts_matching_types_only_when_enabled(make_mem):
    texts = [("Ana likes green tea", "preference"), ("Ana likes green tea fields", "fact")]
    for enabled in (False, True):
        with make_mem(f"r{enabled}", settings=Settings(memory_selroute_enabled=enabled)) as m:
            ids = {t: m.add(c, type=t).id for c, t in texts}
            hits = m.search("what does Ana like", include_trace=True)
            by_id = {h.id: h for h in hits}
            if enabled:
                assert by_id[ids["preference"]].trace["route"] == pytest.approx(1.2)
                assert by_id[ids["fact"]].trace["route"] == 1.0
                assert hits[0].id == ids["preference"]
            else:
                assert all("route" not in h.trace for h in hits)


class LengthReranker:
    """Prefers shorter texts: easy to predict, unlike the fused order."""

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        return [1.0 / len(t) for t in texts]


def test_reranker_reorders_when_enabled(make_mem):
    s = Settings(memory_reranker_enabled=True)
    with make_mem(settings=s, reranker=LengthReranker()) as m:
        long = m.add("Bruno's favourite band is Radiohead and he saw them live twice in Lisbon")
        short = m.add("Bruno likes bands")
        hits = m.search("Bruno favourite band Radiohead", include_trace=True)
        assert [h.id for h in hits] == [short.id, long.id]
        assert "pre_rerank_score" in hits[0].trace and hits[0].score == hits[0].trace["rerank"]


def test_enabling_the_reranker_without_one_is_a_clear_error(make_mem):
    from memchentic import ValidationError

    with pytest.raises(ValidationError) as err:
        make_mem(settings=Settings(memory_reranker_enabled=True))
    assert err.value.field == "reranker"
