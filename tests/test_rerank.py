"""The second ranking stage (issue 33, item 1): each signal as a pure function,
and the stage on a store of each backend, where it lifts the memory that says
what the question asks above one the first stage liked better."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memchentic import Memory, Settings
from memchentic.record import MemoryRecord
from memchentic.retrieval import pipeline, profiles, rerank
from memchentic.retrieval.rerank import QueryCues, doc_text, query_cues
from memchentic.store.base import MemoryFilter
from memchentic.text import STOPWORDS

from .conftest import TableEmbedder

NOW = datetime(2025, 6, 1, tzinfo=UTC)
#: Content words (no stopwords), each its own folded form.
WORD = st.text(alphabet="abcdefghijklmnop", min_size=3, max_size=7).filter(
    lambda w: w not in STOPWORDS and rerank.fold(w) == w
)
IDF = {"lgbtq": 5.0, "support": 2.0, "group": 2.0, "caroline": 0.5}
ASK = "When did Caroline go to the LGBTQ support group?"


def cues(query: str = ASK, idf: dict[str, float] | None = None) -> QueryCues:
    return query_cues(query, IDF if idf is None else idf)


# --- the query's cues ------------------------------------------------------------------------
def test_fold_makes_forms_of_a_word_agree() -> None:
    assert rerank.fold("groups") == rerank.fold("group") == "group"
    assert rerank.fold("stories") == rerank.fold("story")
    assert rerank.fold("painted") == rerank.fold("paint")
    assert rerank.fold("Camping") == "camp"
    assert rerank.fold("glass") == "glass" and rerank.fold("is") == "is"


def test_long_words_sent_in_queries_are_not_remembered(make_mem: Callable[..., Memory]) -> None:
    """The stage remembers the folds of short words only: 40 searches of one distinct
    8,000-character word each (and a few short ones) add none of the long words to its
    caches (65,536 of them held a gigabyte), and a long word still folds as a short
    one does."""
    mem = make_mem()
    long_word = "Ferns" + "q" * 8000
    mem.add(f"Quentin waters the ferns and keeps {long_word} in a jar")
    before = rerank._fold.cache_info().currsize, rerank._folded_short.cache_info().currsize
    for i in range(40):
        mem.search(f"who waters the ferns {i:03d}{'z' * 8000}")
    after = rerank._fold.cache_info().currsize, rerank._folded_short.cache_info().currsize
    assert after[0] - before[0] <= 20 and after[1] - before[1] <= 20, (before, after)
    assert rerank.fold(long_word + "s") == rerank.fold(long_word) == long_word.lower()
    assert rerank.query_cues(f"where is {long_word}").terms == (long_word.lower(),)


def test_query_cues_read_words_weights_names_and_the_wh_type() -> None:
    q = cues()
    assert q.terms == ("caroline", "go", "lgbtq", "support", "group")
    assert q.weights["lgbtq"] == 5.0 and q.weights["caroline"] == 0.5
    assert q.weights["go"] == 5.0  # unknown to the store: as rare as the rarest
    assert q.entities == {"caroline", "lgbtq"}  # "When" starts the sentence
    assert q.answer == "time"


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who did Melanie meet at the park?", "person"),
        ("Whose birthday was it?", "person"),
        ("Where did they go hiking?", "place"),
        ("When did you adopt the dog?", "time"),
        ("What year did I move?", "time"),
        ("How many kids does Melanie have?", "number"),
        ("How long have I been learning piano?", "number"),
        ("What did Caroline paint?", None),
        ("Why did she quit?", None),
        ("I like tea", None),
    ],
)
def test_answer_kind_is_the_first_wh_phrase(question: str, kind: str | None) -> None:
    assert rerank.answer_kind(question) == kind


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        ("time", "We moved in 2019", True),
        ("time", "I saw it last week", True),
        ("time", "The party is on Saturday at 7 pm", True),
        ("time", "I met her on May 5", True),
        ("time", "I may go to the shop", False),
        ("number", "We have three dogs", True),
        ("number", "It cost 40 dollars", True),
        ("number", "We have dogs", False),
        ("place", "We went to Paris", True),
        ("place", "I stayed at home", True),
        ("place", "I like painting", False),
        ("person", "I went with my sister", True),
        ("person", "Then I met Jon and we talked", True),
        ("person", "I went with her", False),
    ],
)
def test_states_finds_what_a_text_says(kind: str, text: str, expected: bool) -> None:
    assert rerank.states(kind, text) is expected


# --- signals: bounds and the property each one measures --------------------------------------
@settings(max_examples=60, deadline=None)
@given(q=st.lists(WORD, min_size=1, max_size=6), d=st.lists(WORD, max_size=30))
def test_every_signal_is_between_0_and_1(q: list[str], d: list[str]) -> None:
    query = query_cues(" ".join(q), {w: 1.0 + len(w) for w in q})
    doc = doc_text(" ".join(d))
    for name, (fn, _) in rerank.SIGNALS.items():
        assert 0.0 <= fn(doc, query) <= 1.0 + 1e-12, name


@settings(max_examples=60, deadline=None)
@given(q=st.lists(WORD, min_size=2, max_size=6, unique=True))
def test_a_memory_that_says_the_query_scores_1_on_the_word_signals(q: list[str]) -> None:
    query = query_cues(" ".join(q), {w: 1.0 for w in q})
    doc = doc_text("so " + " ".join(q) + " indeed")
    assert rerank.coverage(doc, query) == pytest.approx(1.0)
    assert rerank.proximity(doc, query) == pytest.approx(1.0)  # 6 words fit in a window
    assert rerank.phrase(doc, query) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(q=st.lists(WORD, min_size=1, max_size=6, unique=True), d=st.lists(WORD, max_size=20))
def test_a_memory_sharing_no_word_scores_0(q: list[str], d: list[str]) -> None:
    query = query_cues(" ".join(q), {w: 2.0 for w in q})
    doc = doc_text(" ".join(w.upper() + "zz" for w in d))  # no word of the query
    assert rerank.coverage(doc, query) == rerank.proximity(doc, query) == 0.0
    assert rerank.phrase(doc, query) == 0.0


def test_coverage_weighs_rare_words_above_common_ones() -> None:
    rare = doc_text("I went to an LGBTQ meeting")
    common = doc_text("Caroline went to a meeting")
    assert rerank.coverage(rare, cues()) > rerank.coverage(common, cues())


def test_proximity_rewards_the_words_said_together() -> None:
    together = doc_text("the LGBTQ support group met today " + "filler " * 20 + "and so on")
    apart = doc_text("LGBTQ " + "filler " * 20 + "support " + "filler " * 20 + "group")
    q = cues()
    assert rerank.coverage(together, q) == rerank.coverage(apart, q)
    assert rerank.proximity(together, q) > rerank.proximity(apart, q) == 0.0


def test_phrase_rewards_the_query_word_pairs_in_order() -> None:
    q = cues()
    assert rerank.phrase(doc_text("a support group for LGBTQ people"), q) > 0
    assert rerank.phrase(doc_text("a group that gives support"), q) == 0.0


def test_entities_count_what_the_query_names_beyond_the_speaker() -> None:
    q = cues()  # names Caroline and LGBTQ
    assert rerank.entities(doc_text("I joined an LGBTQ group"), q) == 0.5
    assert rerank.entities(doc_text("Caroline joined an LGBTQ group"), q) == 1.0
    # Caroline said it: the speaker cue's part; what is left, LGBTQ, is there
    assert rerank.entities(doc_text("I joined an LGBTQ group", speaker="Caroline"), q) == 1.0
    assert rerank.entities(doc_text("I joined a group", speaker="Caroline"), q) == 0.0
    assert (
        rerank.entities(doc_text("Caroline joined", speaker="Caroline"), cues("Did Caroline?"))
        == 0.0
    )
    assert rerank.entities(doc_text("I joined an LGBTQ group"), cues("what did she say")) == 0.0


def test_the_people_who_speak_are_left_to_the_speaker_cue() -> None:
    """issue 33, item 1: in a chat between Caroline and Melanie, a question about
    Melanie is about what Melanie said; Caroline's turn that calls her by name
    gets nothing for it from the entities signal, while a third name counts."""

    def cand(i: str, text: str, speaker: str) -> profiles.Candidate:
        record = MemoryRecord(id=i, namespace="n", content=text, metadata={"speaker": speaker})
        return profiles.Candidate(record, score=1.0)

    head = [cand("a", "I painted a lake at dawn", "Melanie"),
            cand("b", "Melanie, your lake painting is lovely", "Caroline"),
            cand("c", "Jon painted with me", "Melanie")]  # fmt: skip
    rerank.rescore(head, cues("What did Melanie paint with Jon?"), {"entities": 1.0})
    assert [c.trace["rerank_entities"] for c in head] == [1.0, 1.0, 2.0]
    assert head[2].score == 2.0 and head[2].trace["first_stage_score"] == 1.0


def test_answer_needs_a_typed_question_and_a_memory_that_states_it() -> None:
    assert rerank.answer(doc_text("We went there last Friday"), cues()) == 1.0
    assert rerank.answer(doc_text("We went there together"), cues()) == 0.0
    assert rerank.answer(doc_text("We went there last Friday"), cues("what is it")) == 0.0


def test_a_factor_is_exactly_1_at_weight_0() -> None:
    doc = doc_text("The LGBTQ support group met last Friday", speaker="Caroline")
    assert set(rerank.factors(doc, cues(), {})) == {f"rerank_{n}" for n in rerank.SIGNALS}
    assert all(v == 1.0 for v in rerank.factors(doc, cues(), {}).values())
    on = rerank.factors(doc, cues(), {n: 0.5 for n in rerank.SIGNALS})
    assert all(1.0 < v <= 1.5 for v in on.values())


def test_the_stage_is_declared_once() -> None:
    """Each signal's weight is a Settings field; the fused-rank profiles take it."""
    fields = Settings.model_fields
    assert all(attr in fields for _, attr in rerank.SIGNALS.values())
    assert profiles.RRF.rerank and profiles.CONVERSATION.rerank
    assert not profiles.HYBRID.rerank and not profiles.COSINE_DECAY.rerank


# --- the stage on a store ----------------------------------------------------------------------
QUESTION = "Where did Melanie go camping with the kids?"
RIGHT = "Melanie: we went camping with the kids at Lake Tahoe, they loved it"
WRONG = "Melanie: the kids want new gear for camping"
NEAR = "Melanie: the weather was lovely"


def _store(make_mem: Callable[..., Memory], name: str, on: bool) -> Memory:
    """The first stage puts WRONG first: first by meaning, second by keywords;
    RIGHT is first by keywords and only third by meaning (NEAR is second)."""
    table = {QUESTION: [1, 0, 0], WRONG: [1, 0.05, 0], NEAR: [1, 0.3, 0], RIGHT: [1, 0.6, 0]}
    mem = make_mem(name, embedder=TableEmbedder(table, dimension=8),
                   settings=Settings(search_rerank=on))  # fmt: skip
    for text in (RIGHT, WRONG, NEAR):
        mem.add(text, user_id="u", type="episodic", metadata={"speaker": "Melanie"},
                on_duplicate="keep")  # fmt: skip
    return mem


def test_the_stage_lifts_the_memory_that_answers(make_mem: Callable[..., Memory]) -> None:
    """issue 33, item 1: off, the fused ranks put the memory that only shares a
    word first; on, the one holding the question's words together, the kids and
    a place, is first, and its trace names each of the stage's signals."""
    off = _store(make_mem, "off", False).search(QUESTION, user_id="u", include_trace=True)
    assert [h.memory.content for h in off][:1] == [WRONG]
    assert not any(k.startswith("rerank_") for k in off[0].trace)

    on = _store(make_mem, "on", True).search(QUESTION, user_id="u", include_trace=True)
    assert on[0].memory.content == RIGHT
    trace = on[0].trace
    assert {f"rerank_{n}" for n in rerank.SIGNALS} <= set(trace)
    assert trace["rerank_coverage"] > 1.0 and trace["rerank_answer"] > 1.0
    product = trace["first_stage_score"]
    for name in rerank.SIGNALS:
        product *= trace[f"rerank_{name}"]
    assert trace["score"] == pytest.approx(product)
    wrong = next(h for h in on if h.memory.content == WRONG)
    assert wrong.trace["first_stage_score"] > trace["first_stage_score"]


def test_the_stage_keeps_the_limit_and_leaves_other_profiles_alone(
    make_mem: Callable[..., Memory],
) -> None:
    mem = _store(make_mem, "limit", True)
    assert len(mem.search(QUESTION, user_id="u", limit=2)) == 2
    hybrid = mem.search(QUESTION, user_id="u", profile="hybrid", include_trace=True)
    assert not any(k.startswith("rerank_") for h in hybrid for k in h.trace)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_bounded_path_reorders_the_same_first_candidates_as_loading_every_one(
    make_mem: Callable[..., Memory], seed: int
) -> None:
    """With the stage on, the bounded loading must score the first ``depth``
    candidates exactly (not only the first ``limit``): the answer equals the one
    the full path gives (a query router of boost 0 forces it, changing nothing)."""
    import random

    rng = random.Random(seed)
    words = ["river", "garden", "engine", "yoga", "coffee", "novel", "train", "piano"]
    on = Settings(search_rerank=True, search_rerank_depth=30)
    mem = make_mem(settings=on)
    mem.add_many(
        [{"content": f"{rng.choice(['', 'Ann: '])}note {i} on {' and '.join(rng.sample(words, 3))}",
          "user_id": "u", "type": rng.choice(["semantic", "episodic"]),
          "created_at": NOW - timedelta(days=rng.uniform(0, 400))} for i in range(150)],
        on_duplicate="keep", permanent=True,
    )  # fmt: skip
    full = on.model_copy(update={"memory_selroute_enabled": True, "memory_selroute_boost": 0.0})
    flt = MemoryFilter(namespaces=["user:u"], now=NOW)
    for query in ("what did Ann say about the river and yoga?", "engine garden", "coffee"):
        req = pipeline.SearchRequest(query, mem.embedder.embed(query), flt, 5, profiles.RRF, NOW)
        bounded = pipeline.run(mem.store, req, on)
        every = pipeline.run(mem.store, req, full)
        assert [(c.memory.id, c.score) for c in bounded] == [(c.memory.id, c.score) for c in every]
        assert all("rerank_coverage" in c.trace for c in bounded)


def test_the_stage_reorders_only_its_depth_whatever_the_limit(
    make_mem: Callable[..., Memory],
) -> None:
    """issue 33, item 1: the stage reorders the first ``SEARCH_RERANK_DEPTH``
    candidates and leaves the rest where the first stage put them, so recall at
    the depth and past it is the first stage's (depth 5 here, limit 12)."""
    import random

    rng = random.Random(3)
    words = ["river", "garden", "engine", "yoga", "coffee", "novel", "train", "piano"]
    mem = make_mem(settings=Settings(search_rerank=False))
    mem.add_many(
        [{"content": f"note {i} on {' and '.join(rng.sample(words, 3))}", "user_id": "u",
          "created_at": NOW - timedelta(days=rng.uniform(0, 400))} for i in range(120)],
        on_duplicate="keep", permanent=True,
    )  # fmt: skip
    flt = MemoryFilter(namespaces=["user:u"], now=NOW)
    on = Settings(search_rerank=True, search_rerank_depth=5)
    for query in ("the river and yoga in the garden", "engine coffee piano"):
        req = pipeline.SearchRequest(query, mem.embedder.embed(query), flt, 12, profiles.RRF, NOW)
        first = [c.memory.id for c in pipeline.run(mem.store, req, mem.settings)]
        second = pipeline.run(mem.store, req, on)
        ids = [c.memory.id for c in second]
        assert len(ids) == 12 and ids[5:] == first[5:] and set(ids[:5]) == set(first[:5])
        assert all("rerank_coverage" in c.trace for c in second[:5])
        assert not any("rerank_coverage" in c.trace for c in second[5:])
