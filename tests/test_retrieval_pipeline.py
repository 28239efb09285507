"""Pipeline-level effects of the retrieval improvements, through Memory.search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memchentic import Memory, Settings
from memchentic.store.base import stored_cosines

T0 = datetime(2024, 1, 10, 12, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def _chat(mem: Memory, session: str, when: datetime, lines: list[str]) -> list[str]:
    results = mem.add_many(
        [{"content": line, "created_at": when, "session_id": session} for line in lines],
        type="episodic", user_id="u", on_duplicate="keep", permanent=True,
    )  # fmt: skip
    return [r.id for r in results if r.id]


def _filler(mem: Memory) -> None:
    for day in range(12):
        _chat(mem, f"s{day}", T0 + timedelta(days=day), [
            f"Bob: day {day} was fine, lunch with coworkers and some emails",
            f"Ann: nice, I worked on the garden and read a novel on day {day}",
        ])  # fmt: skip


def test_an_answer_is_found_through_the_question_before_it(db_path):
    with Memory(path=db_path, embedder="hash", settings=Settings()) as mem:
        _filler(mem)
        ids = _chat(mem, "s-yoga", T0 + timedelta(days=30), [
            "Tim: How long do you usually hold the yoga pose?",
            "John: Typically 30 to 60 seconds, it builds strength.",
            "Tim: Cool, thanks for the tip!",
        ])  # fmt: skip
        hits = mem.search("How long does John hold the yoga pose?", user_id="u", now=NOW,
                          limit=5, include_trace=True)  # fmt: skip
        top = [h.memory.id for h in hits]
        assert ids[1] in top[:3]
        answer = next(h for h in hits if h.memory.id == ids[1])
        # "John: ..." is a transcript line: the default reads no speaker from it,
        # the conversation profile does (the query names John, who said it).
        assert answer.trace["speaker"] == 1.0
        assert answer.trace["keyword_context"] > answer.trace["keyword_score"]
        spoken = mem.search("How long does John hold the yoga pose?", user_id="u", now=NOW,
                            limit=5, include_trace=True, profile="conversation")  # fmt: skip
        assert next(h for h in spoken if h.memory.id == ids[1]).trace["speaker"] == 1.25
        assert next(h for h in spoken if h.memory.id == ids[0]).trace["speaker"] == 1.0
        without = Settings(search_context_weight=0.0)
        mem.settings = without
        plain = mem.search("How long does John hold the yoga pose?", user_id="u", now=NOW,
                           limit=5, include_trace=True)  # fmt: skip
        answer = next((h for h in plain if h.memory.id == ids[1]), None)
        assert answer is None or answer.trace["keyword_context"] == answer.trace["keyword_score"]


def test_the_speaker_and_role_a_writer_records_are_who_said_it(mem: Memory):
    when = T0 + timedelta(days=3)
    mem.add_many([
        {"content": "I finished my degree at Leeds in 2019", "metadata": {"role": "user"}},
        {"content": "You could study at Leeds or York", "metadata": {"role": "assistant"}},
        {"content": "Ann finished her degree at Leeds", "metadata": {"speaker": "Ann Lee"}},
    ], type="episodic", user_id="u", on_duplicate="keep", created_at=when)  # fmt: skip

    def speakers(query: str) -> dict[str, float]:
        hits = mem.search(query, user_id="u", include_trace=True, now=NOW)
        return {h.memory.content.split()[0]: h.trace["speaker"] for h in hits}

    assert speakers("Where did I finish my degree?") == {"I": 1.25, "You": 1.0, "Ann": 1.0}
    assert speakers("Which places did you suggest for a degree?") == {
        "I": 1.0, "You": 1.25, "Ann": 1.0}  # fmt: skip
    assert speakers("Where did Ann Lee finish a degree at Leeds?") == {
        "I": 1.0, "You": 1.0, "Ann": 1.25}  # fmt: skip
    mem.settings = Settings(search_role_persons=False)
    assert speakers("Where did I finish my degree?") == {"I": 1.0, "You": 1.0, "Ann": 1.0}


def test_a_relative_date_is_read_from_the_time_asked(mem: Memory):
    asked = datetime(2023, 5, 30, 12, tzinfo=UTC)
    for days in (20, 2, 1):
        mem.add(f"I baked bread with my sister, {days} days before", type="episodic",
                user_id="u", created_at=asked - timedelta(days=days))  # fmt: skip

    def dates(query: str) -> dict[str, float]:
        hits = mem.search(query, user_id="u", include_trace=True, now=asked)
        return {h.memory.content.split(", ")[1]: h.trace["date"] for h in hits}

    assert dates("What did I bake yesterday?") == {
        "20 days before": 1.0, "2 days before": 1.0, "1 days before": 1.5}  # fmt: skip
    assert dates("What did I bake a couple of days ago?") == {
        "20 days before": 1.0, "2 days before": 1.5, "1 days before": 1.5}  # fmt: skip
    mem.settings = Settings(search_relative_dates=False)
    assert set(dates("What did I bake yesterday?").values()) == {1.0}


def test_extra_signals_are_one_when_they_do_not_apply(mem: Memory):
    mem.add("Prefers green tea in the morning", user_id="u")
    hit = mem.search("green tea", user_id="u", include_trace=True)[0]
    t = hit.trace
    assert t["speaker"] == t["date"] == t["horizon"] == 1.0
    assert t["vector_context"] == t["cosine"] and t["keyword_context"] == t["keyword_score"]
    product = t["match"] * t["freshness"] * t["path"] * t["confidence"] * t["usage"]
    assert t["first_stage_score"] == product  # the second stage multiplies on (issue 33)


def test_date_named_in_the_query_lifts_memories_of_that_day(db_path):
    with Memory(path=db_path, embedder="hash") as mem:
        a = _chat(mem, "s1", datetime(2023, 6, 3, 10, tzinfo=UTC), ["Maria: started pottery"])
        b = _chat(mem, "s2", datetime(2023, 9, 3, 10, tzinfo=UTC), ["Maria: started pottery"])
        hits = mem.search("What did Maria start on 3 June, 2023?", user_id="u", now=NOW,
                          include_trace=True)  # fmt: skip
        by_id = {h.memory.id: h for h in hits}
        assert by_id[a[0]].trace["date"] == 1.5 and by_id[b[0]].trace["date"] == 1.0
        assert hits[0].memory.id == a[0]


def test_episodic_memories_keep_their_weight_for_years(db_path):
    with Memory(path=db_path, embedder="hash") as mem:
        old = mem.add("we hiked the red canyon trail", type="episodic", user_id="u",
                      created_at=NOW - timedelta(days=300), permanent=True)  # fmt: skip
        fact = mem.add("the red canyon trail is closed", user_id="u",
                       created_at=NOW - timedelta(days=300), permanent=True)  # fmt: skip
        hits = {h.memory.id: h for h in mem.search("red canyon trail", user_id="u", now=NOW,
                                                   include_trace=True)}  # fmt: skip
        ep, se = hits[old.id].trace, hits[fact.id].trace
        assert se["horizon"] == 1.0
        assert ep["freshness"] * ep["horizon"] == pytest.approx(1 / (1 + 300 / 3650))


def test_keyword_matches_on_common_words_only_do_not_enter_the_keyword_list(db_path):
    with Memory(path=db_path, embedder="hash") as mem:
        lines = [f"Ann: talked about topic number {i}" for i in range(30)]
        lines.append("Ann: my saxophone lesson was great")
        ids = _chat(mem, "s", T0, lines)
        hits = mem.search("Ann saxophone", user_id="u", now=NOW, include_trace=True, limit=40)
        ranked = [h for h in hits if h.trace["keyword_rank"] > 0]
        assert [h.memory.id for h in ranked][:1] == [ids[-1]]
        best = ranked[0].trace["keyword_context"]
        assert all(h.trace["keyword_context"] >= 0.25 * best for h in ranked)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounded_loading_ranks_exactly_like_scoring_every_candidate(make_mem, seed) -> None:
    """The rrf path loads and scores only the candidates whose bound can still reach
    the top; its answer (ids, order, scores, traces) equals scoring them all.
    Rows vary every factor the bound reads: age, guides and their reinforcement,
    recall counts, path hints, episodic type, and speaker and date cues."""
    import random

    from memchentic.retrieval import cues, pipeline
    from memchentic.retrieval.profiles import RRF, ScoringContext

    rng = random.Random(seed)
    # the first stage (the second, issue 33 item 1, reorders after it: test_rerank.py)
    mem = make_mem(settings=Settings(search_rerank=False))
    words = ["river", "garden", "engine", "yoga", "coffee", "novel", "train", "piano"]
    items = []
    for i in range(240):
        picked = rng.sample(words, 3)
        speaker = rng.choice(["", "Ann: ", "Bob: "])
        items.append({
            "content": f"{speaker}note {i} on {' and '.join(picked)} in May 2023",
            "kind": "guide" if rng.random() < 0.15 else "entry",
            "type": rng.choice(["semantic", "episodic", "preference"]),
            "path_hint": rng.choice([None, "src/app", "docs"]),
            "created_at": NOW - timedelta(days=rng.uniform(0, 400)),
            "user_id": "u",
        })  # fmt: skip
    results = mem.add_many(items, on_duplicate="keep", permanent=True)
    for r in results:  # guides reinforced, memories recalled, unevenly
        if r.id and rng.random() < 0.2:
            mem.store.touch([(r.id, rng.randint(1, 50), NOW, None)])
    queries = ["what did Ann say about the river and yoga?", "engine garden notes",
               "piano in May 2023", "coffee"]  # fmt: skip
    flt = mem._read_filter(user_id="u", agent_id=None, namespace=None, now=NOW,
                           include_superseded=True)  # fmt: skip
    get_many = mem.store.get_many
    loads: list[int] = []

    def counted(ids):
        loads.append(len(ids))
        return get_many(ids)

    for query in queries:
        for limit in (3, 10):
            req = pipeline.SearchRequest(query, mem.embedder.embed(query), flt, limit, RRF, NOW,
                                         rng.choice([None, "src/app/main.py"]))  # fmt: skip
            loads.clear()
            mem.store.get_many = counted  # type: ignore[method-assign]
            got = pipeline.run(mem.store, req, mem.settings)
            mem.store.get_many = get_many  # type: ignore[method-assign]
            # one load, of every candidate whose bound / spread reaches the limit-th bound
            assert len(loads) == 1 and limit <= loads[0]
            ctx = ScoringContext(NOW, mem.settings, req.path_hint,
                                 frozenset(cues.words(query)), tuple(cues.query_dates(query)))
            every = pipeline.gather(mem.store, req, mem.settings)
            for cand in every:
                cand.score = RRF.scorer(cand, ctx)
            every.sort(key=lambda c: (-c.score, c.memory.id))
            assert len(every) > 3 * limit  # the bound has candidates to skip
            assert loads[0] < len(every)  # and skips some
            assert [(c.memory.id, c.score) for c in got] == [
                (c.memory.id, c.score) for c in every[:limit]
            ]
            signals = [{k: v for k, v in c.trace.items() if k != "score"} for c in got]
            assert signals == [c.trace for c in every[:limit]]


def test_the_stages_hand_over_the_rank_rows_they_read(make_mem, settings) -> None:
    """The rows the stages fill (so the pipeline need not look them up again) are
    each hit's RankRow exactly as ``rank_rows`` reads it, whatever path a stage
    takes: unfiltered or filtered, rare words or a window of common ones."""
    from memchentic.store.base import MemoryFilter

    settings.search_common_term_docs = 20  # small thresholds: the common-word window
    settings.search_common_window = 15
    mem = make_mem(settings=settings)
    items = [
        {"content": f"shared words about harbour cranes, note {i} on topic {i % 9}",
         "kind": "guide" if i % 5 == 0 else "entry", "path_hint": "src/app" if i % 3 else None,
         "session_id": f"s{i % 4}" if i % 2 else None, "user_id": f"u{i % 2}",
         "type": "episodic" if i % 7 == 0 else "semantic"}
        for i in range(60)
    ]  # fmt: skip
    ids = [r.id for r in mem.add_many(items, on_duplicate="keep")]
    mem.store.touch([(i, n + 1, NOW, None) for n, i in enumerate(ids[::4])])
    namespaces = [mem._read_filter(user_id="u1", agent_id=None, namespace=None, now=NOW,
                                   include_superseded=True).namespaces]  # fmt: skip
    filters = [MemoryFilter.everything(now=NOW), MemoryFilter(namespaces=namespaces[0], now=NOW)]
    queries = ["harbour cranes", "note topic 4", "shared words"]
    checked = carried = 0
    for flt in filters:
        for query in queries:
            vector = mem.embedder.embed(query)
            for stage, arg, kwargs in (
                (mem.store.keyword_search, query, {}),
                (mem.store.keyword_search, query, {"query_vector": vector}),
                (mem.store.vector_search, vector, {}),
            ):
                rows: dict = {}
                hits = stage(arg, 20, flt, rows, **kwargs)  # type: ignore[operator]
                assert hits
                handed = [i for i, _ in hits if i in rows]
                expected = mem.store.rank_rows(handed)
                stored = mem.store.vectors(handed)
                for i in handed:
                    assert rows[i]._replace(vector=None, cosine=None) == expected[i]
                    if rows[i].vector is not None:  # a keyword stage's, for the cosine
                        assert np.array_equal(rows[i].vector, stored[i])
                        carried += 1
                    if rows[i].cosine is not None:  # or the cosine itself
                        exact = stored_cosines([stored[i]], vector)[0]
                        assert rows[i].cosine == pytest.approx(exact, abs=1e-6)
                        carried += 1
                checked += len(handed)
    assert checked > 0 and carried > 0  # the backend handed rows and vectors over


def test_keyword_only_hits_get_their_exact_cosine(make_mem, settings) -> None:
    """A hit that only the keyword stage found is ranked with its stored vector's
    cosine with the query, whichever way the backend hands it over."""
    settings.search_min_similarity = 0.99  # the vector stage finds none of these
    mem = make_mem(settings=settings)
    target = mem.add("the quartermaster logs zeppelin cargo manifests", user_id="u").id
    mem.add_many([{"content": f"notes about harbour cranes number {i}", "user_id": "u"}
                  for i in range(40)], on_duplicate="keep")  # fmt: skip
    query = "zeppelin"
    hits = mem.search(query, user_id="u", limit=50, include_trace=True)
    hit = next(h for h in hits if h.memory.id == target)
    assert hit.trace["keyword_rank"] >= 1 and hit.trace["vector_rank"] == 0
    stored = mem.store.vectors([target])[target]
    exact = stored_cosines([stored], mem.embedder.embed(query))[0]
    assert exact != 0.0
    assert hit.trace["cosine"] == pytest.approx(exact, abs=1e-6)


def test_rrf_bounds_are_the_scores_without_the_content_cues(make_mem, settings) -> None:
    """bound_rrf, computed on arrays, gives each candidate's exact score when the
    speaker and date cues cannot apply, and never less than the score when they can."""
    import random

    from memchentic.retrieval import cues, pipeline
    from memchentic.retrieval.profiles import RRF, ScoringContext, bound_rrf

    rng = random.Random(5)
    mem = make_mem(settings=settings)
    results = mem.add_many([
        {"content": f"{rng.choice(['Ann: ', ''])}log {i} about river yoga piano on 3 May 2023",
         "kind": "guide" if i % 4 == 0 else "entry", "path_hint": rng.choice([None, "src/app"]),
         "type": rng.choice(["episodic", "semantic"]), "user_id": "u",
         "created_at": NOW - timedelta(days=rng.uniform(0, 500))}
        for i in range(80)
    ], on_duplicate="keep", permanent=True)  # fmt: skip
    mem.store.touch([(r.id, rng.randint(0, 40), NOW, None) for r in results[::3]])
    flt = mem._read_filter(user_id="u", agent_id=None, namespace=None, now=NOW,
                           include_superseded=True)  # fmt: skip
    for boost in (0.0, 0.25):
        mem.settings.search_speaker_boost = boost
        for query in ("river yoga", "what did Ann say about piano on 3 May 2023?"):
            req = pipeline.SearchRequest(query, mem.embedder.embed(query), flt, 10, RRF, NOW,
                                         "src/app/x.py")  # fmt: skip
            ctx = ScoringContext(NOW, mem.settings, req.path_hint,
                                 frozenset(cues.words(query)), tuple(cues.query_dates(query)))
            every = pipeline.gather(mem.store, req, mem.settings)
            rows = mem.store.rank_rows([c.memory.id for c in every])
            bounds = bound_rrf([c.vector_rank for c in every], [c.keyword_rank for c in every],
                               [rows[c.memory.id] for c in every], ctx)  # fmt: skip
            scores = [RRF.scorer(c, ctx) for c in every]
            assert len(every) > 20
            assert all(b >= s * (1 - 1e-12) for b, s in zip(bounds, scores, strict=True))
            if boost == 0.0 and not ctx.query_dates:
                assert bounds == pytest.approx(scores, rel=1e-12)
