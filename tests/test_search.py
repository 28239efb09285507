"""Search: read-your-writes, filters, limits, profiles, traces and query safety."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memchentic import Memory, ValidationError

from .conftest import TableEmbedder


def test_a_memory_is_searchable_the_moment_add_returns(mem: Memory):
    for i in range(30):
        mem.add(f"filler note number {i} about gardening tomatoes", user_id="u")
    res = mem.add("The deploy key rotation happens every Tuesday", user_id="u")
    hits = mem.search("when does deploy key rotation happen", user_id="u", limit=3)
    assert hits[0].id == res.id


def test_search_sees_writes_of_another_process_store_handle(make_mem):
    a = make_mem("shared")
    b = make_mem("shared")
    try:
        assert b.search("zebra migration", limit=5) == []
        res = a.add("Zebra migration season starts in July")
        assert [h.id for h in b.search("zebra migration", limit=5)] == [res.id]
        a.delete(res.id)
        assert b.search("zebra migration", limit=5) == []
    finally:
        a.close()
        b.close()


def test_trace_has_every_signal_of_every_hit(mem: Memory):
    mem.add("Alice prefers short answers", user_id="alice")
    mem.add("Alice likes long walks", user_id="alice")
    hits = mem.search("short answers", user_id="alice", include_trace=True)
    assert hits
    for hit in hits:
        for key in ("match", "freshness", "path", "confidence", "usage", "score"):
            assert key in hit.trace
        assert hit.trace["score"] == pytest.approx(hit.score)
    assert mem.search("short answers", user_id="alice")[0].trace is None


def test_namespaces_are_kept_apart(mem: Memory):
    mem.add("Alice's locker code is in the blue notebook", user_id="alice")
    bob = mem.add("Bob's locker is next to the window", user_id="bob")
    hits = mem.search("locker", user_id="bob")
    assert [h.id for h in hits] == [bob.id]
    assert all(h.memory.namespace == "user:bob" for h in hits)


def test_agent_scope_sees_its_own_and_the_users_shared_memories(mem: Memory):
    shared = mem.add("Carol is vegetarian", user_id="carol")
    mine = mem.add("Carol asked the cooking agent for vegetarian pasta",
                   user_id="carol", agent_id="cook")  # fmt: skip
    other = mem.add("Carol asked the travel agent about vegetarian restaurants",
                    user_id="carol", agent_id="travel")  # fmt: skip
    ids = {h.id for h in mem.search("vegetarian", user_id="carol", agent_id="cook")}
    assert shared.id in ids and mine.id in ids and other.id not in ids
    assert len(mem.search("vegetarian", user_id="carol")) == 3


def test_filters_by_type_tags_repo_and_path(mem: Memory):
    a = mem.add("Run the linter before pushing", type="instruction", tags=["ci", "lint"],
                repo="api", path_hint="src/api")  # fmt: skip
    b = mem.add("Run the tests before pushing", type="procedural", tags=["ci"], repo="web")
    c = mem.add("Pushing on Fridays is discouraged", type="policy")
    q = "before pushing"
    assert {h.id for h in mem.search(q, type="instruction")} == {a.id}
    assert {h.id for h in mem.search(q, type="skill")} == {b.id}  # alias normalised
    assert {h.id for h in mem.search(q, tags=["ci", "lint"])} == {a.id}
    assert {h.id for h in mem.search(q, tags=["ci"])} == {a.id, b.id}
    # repo and path keep matching memories and general ones (no repo / no path)
    assert {h.id for h in mem.search(q, repo="api")} == {a.id, c.id}
    assert {h.id for h in mem.search(q, path_hint="src/web")} == {b.id, c.id}


def test_path_hints_match_whole_segments_in_the_filter_and_the_boost(mem: Memory):
    """Issue 20, item 13: path hints matched as string prefixes (``src/a`` matched
    ``src/api``). They match by whole segments, in the store filter and the boost."""
    folder = mem.add("Keep the auth handlers thin", path_hint="src/a").id
    slash = mem.add("Keep the auth helpers pure", path_hint="src/a/").id
    file = mem.add("Keep the auth module documented", path_hint="src/a/b.py").id
    api = mem.add("Keep the auth endpoints versioned", path_hint="src/api").id
    general = mem.add("Keep the auth code reviewed").id
    q = "keep the auth"

    def found(path: str) -> set[str]:
        return {h.id for h in mem.search(q, path_hint=path, limit=10)}

    assert found("src/a") == {folder, slash, file, general}
    assert found("src/a/b.py") == {folder, slash, file, general}
    assert found("src/a/c.py") == {folder, slash, general}
    assert found("src/api") == {api, general}
    assert found("src/api/x.py") == {api, general}
    assert found("src") == {folder, slash, file, api, general}
    assert found("src/ap") == {general}
    assert found("src/a/b") == {folder, slash, general}  # b is not b.py
    boosted = {h.id: h.trace["path"] for h in
               mem.search(q, path_hint="src/a", limit=10, include_trace=True)}  # fmt: skip
    assert boosted == {folder: pytest.approx(1.15), slash: pytest.approx(1.15),
                       file: pytest.approx(1.15), general: 1.0}  # fmt: skip


def test_path_hint_boosts_matching_memories(mem: Memory):
    a = mem.add("Use the retry helper for HTTP calls", path_hint="src/net")
    b = mem.add("Use the retry helper for HTTP calls in jobs", path_hint="src")
    hits = mem.search("retry helper HTTP", path_hint="src/net/client.py", include_trace=True)
    by_id = {h.id: h for h in hits}
    assert by_id[a.id].trace["path"] == pytest.approx(1.15)
    assert by_id[b.id].trace["path"] == pytest.approx(1.15)
    other = mem.search("retry helper HTTP", path_hint="docs", include_trace=True)
    assert other == []  # both hints are on another path


def test_expired_memories_leave_search_but_include_expired_finds_them(mem: Memory):
    res = mem.add("The staging password rotates weekly", ttl_days=1)
    later = datetime.now(UTC) + timedelta(days=2)
    assert mem.search("staging rotates weekly", now=later) == []
    found = mem.search("staging rotates weekly", now=later, include_expired=True)
    assert [h.id for h in found] == [res.id]


def test_as_of_uses_validity(mem: Memory):
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    old = mem.add("Dana works at Initech", valid_from=t0, valid_to=t0 + timedelta(days=365))
    new = mem.add("Dana works at Globex", valid_from=t0 + timedelta(days=365))
    then = {h.id for h in mem.search("Dana works", as_of=t0 + timedelta(days=100))}
    assert then == {old.id}
    now = {h.id for h in mem.search("Dana works", as_of=t0 + timedelta(days=500))}
    assert now == {new.id}


def test_valid_to_before_valid_from_is_refused_by_every_write(mem: Memory):
    """Issue 20, item 12: ``add`` and ``improve`` accepted a validity that ends before
    it begins (and no ``as_of`` could ever find such a memory)."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    before = t0 - timedelta(days=1)
    bad_writes = [
        lambda: mem.add("Ezra rents the loft", valid_from=t0, valid_to=before),
        lambda: mem.add("Ezra rented the loft", created_at=t0, valid_to=before),  # from created
        lambda: mem.add_many([{"content": "Ezra rents a flat", "valid_from": t0,
                               "valid_to": before}]),  # fmt: skip
    ]
    for write in bad_writes:
        with pytest.raises(ValidationError) as err:
            write()
        assert err.value.field == "valid_to" and "valid_from" in str(err.value)
    assert mem.list(include_expired=True) == []
    ok = mem.add("Ezra rents the studio", valid_from=t0, valid_to=t0 + timedelta(days=30))
    assert mem.add("Ezra visited once", valid_from=t0, valid_to=t0).status == "added"
    for change in [
        lambda: mem.improve(ok.id, valid_to=before),
        lambda: mem.improve(ok.id, valid_from=t0 + timedelta(days=31)),
        lambda: mem.revise(ok.id, valid_to=before),
    ]:
        with pytest.raises(ValidationError) as err:
            change()
        assert err.value.field == "valid_to"
    (managed,) = mem.manage([{"op": "revise", "id": ok.id, "valid_to": before.isoformat()}])
    assert managed.status == "refused" and "valid_to" in managed.reason
    kept = mem.get(ok.id, touch=False)
    assert (kept.valid_from, kept.valid_to) == (t0, t0 + timedelta(days=30))
    assert [v.op for v in mem.history(ok.id)] == ["add"]


def test_as_of_holds_for_list_recall_and_context(mem: Memory):
    """Issue 20, item 12: ``as_of`` worked in search only."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    then, later = t0 + timedelta(days=100), t0 + timedelta(days=500)
    job = mem.add("Dana works at Initech as a welder", type="fact", entities=["Dana"],
                  valid_from=t0, valid_to=t0 + timedelta(days=365)).id  # fmt: skip
    home = mem.add("Dana lives in Lisbon near the river", type="fact", entities=["Dana"],
                   valid_from=t0 + timedelta(days=365), pinned=True).id  # fmt: skip
    assert {r.id for r in mem.list()} == {job, home}
    assert [r.id for r in mem.list(as_of=then)] == [job]
    assert [r.id for r in mem.list(as_of=later.isoformat())] == [home]
    assert [h.id for h in mem.recall(entity="Dana", as_of=then)] == [job]
    assert [h.id for h in mem.recall(entity="Dana", as_of=later)] == [home]
    assert {h.id for h in mem.recall(entity="Dana")} == {job, home}
    past = mem.context("Where does Dana work and live?", as_of=then)
    assert {i.id for i in past.items} == {job}  # the pinned one did not hold yet
    present = mem.context("Where does Dana work and live?", as_of=later)
    assert {i.id for i in present.items} == {home}
    assert {i.id for i in mem.context("Where does Dana work and live?").items} == {job, home}
    with pytest.raises(ValidationError) as err:
        mem.list(as_of="not a date")
    assert err.value.field == "as_of"


def test_as_of_reads_what_held_then_across_a_supersession(mem: Memory):
    """A read as of a time follows ``supersedes`` only to memories that held then: the
    old job is what list, search, recall and context show as of a date before the new
    one began (issue 20, item 12)."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    then, later = t0 + timedelta(days=100), t0 + timedelta(days=500)
    old = mem.add("Omar works at Initech", entities=["Omar"], on_duplicate="keep",
                  valid_from=t0, valid_to=t0 + timedelta(days=365)).id  # fmt: skip
    new = mem.add("Omar works at Globex", entities=["Omar"], on_duplicate="keep",
                  valid_from=t0 + timedelta(days=365)).id  # fmt: skip
    if mem.get(old, touch=False).superseded_by is None:  # however the write resolved it
        mem.relate(new, old, "supersedes")
    assert mem.get(old, touch=False).superseded_by == new
    assert [r.id for r in mem.list()] == [new]
    for as_of, held in [(then, old), (later, new)]:
        assert [r.id for r in mem.list(as_of=as_of)] == [held]
        assert [h.id for h in mem.search("Omar works", as_of=as_of)] == [held]
        assert [h.id for h in mem.recall(entity="Omar", as_of=as_of)] == [held]
        assert {i.id for i in mem.context("where does Omar work", as_of=as_of).items} == {held}
    assert [h.id for h in mem.search("Omar works")] == [new]


def test_limit_default_and_clamp(mem: Memory):
    mem.add_many(
        [f"note {i} about the quarterly roadmap review" for i in range(130)], on_duplicate="keep"
    )
    assert len(mem.search("quarterly roadmap")) == 20
    assert len(mem.search("quarterly roadmap", limit=500)) == 100
    with pytest.raises(ValidationError) as err:
        mem.search("quarterly roadmap", limit=0)
    assert err.value.field == "limit"


@pytest.mark.parametrize("profile", ["rrf", "cosine_decay", "hybrid"])
def test_every_profile_ranks_the_obvious_answer_first(mem: Memory, profile: str):
    target = mem.add("Eve's favourite programming language is Rust")
    mem.add("The office coffee machine is broken again")
    mem.add("Quarterly taxes are due in April")
    hits = mem.search("favourite programming language", profile=profile, include_trace=True)
    assert hits[0].id == target.id
    assert hits[0].trace["score"] == pytest.approx(hits[0].score)


def test_profile_from_settings(make_mem):
    from memchentic import Settings

    m = make_mem(settings=Settings(search_profile="cosine_decay"))
    try:
        m.add("Frank collects vintage maps")
        hit = m.search("vintage maps", include_trace=True)[0]
        assert "decayed_confidence" in hit.trace
    finally:
        m.close()


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "star*", "a AND b", "NEAR(x y)", "-minus", "col:umn", "(paren",
     "x OR", "''; DROP TABLE memories; --", "%_\\", "NOT", "^caret", "{braces}"],
)  # fmt: skip
def test_full_text_syntax_is_searched_as_plain_words(mem: Memory, query: str):
    res = mem.add(f"Literal text with {query} inside")
    hits = mem.search(query)
    assert res.id in {h.id for h in hits}
    assert mem.list()  # the table is intact


def test_huge_query_is_refused_with_the_limit(mem: Memory):
    """Issue 9: over MAX_QUERY_CHARS is a clear error, not a silent cut."""
    res = mem.add("Grace maintains the billing service")
    with pytest.raises(ValidationError, match="at most 8192 characters"):
        mem.search("billing service " + "word " * 25_000)  # ~125 KB
    hits = mem.search("billing service " + "word " * 1_500)  # under the limit
    assert res.id in {h.id for h in hits}


@pytest.mark.parametrize("text", ["Café crème 🍰 at Zoë's", "مرحبا بالعالم", "e\u0301te\u0301"])
def test_unicode_round_trips_and_is_found(mem: Memory, text: str):
    res = mem.add(text)
    assert mem.get(res.id).content == text
    assert res.id in {h.id for h in mem.search(text)}


def test_title_weighs_more_than_body(make_mem):
    emb = TableEmbedder()
    m = make_mem("t", embedder=emb)
    try:
        body = m.add("notes: we discussed the kubernetes upgrade plan at length")
        titled = m.add("assorted notes from monday", title="kubernetes upgrade")
        ranked = m.store.keyword_search("kubernetes upgrade", 10, _all())
        assert [i for i, _ in ranked] == [titled.id, body.id]
    finally:
        m.close()


def test_search_counts_a_recall_debounced(mem: Memory):
    res = mem.add("Heidi's birthday is in March")
    t = datetime.now(UTC)
    mem.search("Heidi birthday", now=t)
    mem.search("Heidi birthday", now=t + timedelta(hours=1))
    assert mem.get(res.id, touch=False).recall_count == 1
    mem.search("Heidi birthday", now=t + timedelta(hours=7))
    assert mem.get(res.id, touch=False).recall_count == 2


def test_keyword_only_and_vector_only_candidates_both_rank(make_mem):
    emb = TableEmbedder({"q": [1, 0, 0, 0, 0, 0, 0, 0], "meaning only": [1, 0, 0, 0, 0, 0, 0, 0]})
    m = make_mem("k", embedder=emb)
    try:
        a = m.add("meaning only")
        hits = m.search("q", include_trace=True)
        assert hits[0].id == a.id
        assert hits[0].trace["vector_rank"] == 1 and hits[0].trace["keyword_rank"] == 0
    finally:
        m.close()


def _all():
    from memchentic.store.base import MemoryFilter

    return MemoryFilter.everything(now=datetime.now(UTC))


def test_keyword_stage_ranks_the_rarest_words_within_budget_at_any_size(make_mem):
    """However small the store, when a query's words match more rows than
    SEARCH_COMMON_WINDOW, the keyword stage keeps the rarest words while their
    matches fit, and a word that alone matches more ranks its newest matches (both
    backends; a ranked full-text query costs time in proportion to its matches)."""
    from memchentic import Settings
    from memchentic.store.base import MemoryFilter

    settings = Settings(search_common_window=10)  # common_term_docs stays 20,000
    m = make_mem(settings=settings)
    every = {"alpha": 2, "beta": 3, "gamma": 12, "delta": 15}  # 30, 20, 5 and 4 rows
    texts = [
        " ".join(w for w, n in every.items() if i % n == 0) + f" row {i}" for i in range(60)
    ]
    ids = [r.id for r in m.add_many(texts, on_duplicate="keep")]
    found = m.store.keyword_search("alpha beta gamma delta", 100, MemoryFilter.everything())
    # delta and gamma (9 rows) fit the window of 10; beta (20 more) would not
    expected = {ids[i] for i in range(60) if i % 12 == 0 or i % 15 == 0}
    assert {i for i, _ in found} == expected and len(found) == 8
    assert found[0][0] == ids[0]  # the one row holding both ranked words
    newest = m.store.keyword_search("beta", 100, MemoryFilter.everything())
    assert {i for i, _ in newest} == {ids[i] for i in range(0, 60, 3)[-10:]}
