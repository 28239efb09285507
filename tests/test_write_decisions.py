"""Write-time decisions that need evidence (issue 31, items 1-5 and 7's reasons).

The labelled pairs of ``tests/data/write_pairs.py`` (six categories) are written
with the packaged MiniLM, each pair in a namespace of its own, through ``add``
and ``add_many`` on both backends and, for a sample, through the HTTP API; each
category must stay at or above its floor (the measured figure rounded down, and
never below either seed rule). The rules themselves are pure functions of the two
texts and their cosine, so the reasons, the stop verbs, the duplicates in another
order and the content words are also checked without a store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memchentic import Embedder, Memory
from memchentic.write.polarity import RulePolarity
from memchentic.write.relations import STOP_CUES
from memchentic.write.statements import Relation, Thresholds, judge, memory_embedding_text

from .data.write_pairs import CATEGORIES, PAIRS, WritePair

#: Per category, the share of pairs the default rules must get right with MiniLM
#: (measured on both backends and every path: 55/55, 50/50, 49/50, 50/50, 50/50,
#: 49/49; the one miss is a stop whose cosine, 0.39, is under UPDATE_THRESHOLD).
FLOORS = {
    "additive": 1.0, "distinct": 1.0, "negation": 0.98, "update": 1.0, "duplicate": 1.0,
    "record": 1.0,
}  # fmt: skip
T = Thresholds(near_duplicate=0.92, contradiction=0.8, floor=0.4)


def _write(mem: Memory, path: str, pairs: list[tuple[int, WritePair]]) -> dict[int, str]:
    def item(i: int, p: WritePair, which: str) -> dict[str, Any]:
        text, options = (p.old, p.old_options) if which == "old" else (p.new, p.new_options)
        return {"content": text, "user_id": f"pair{i}", **options}

    if path == "add":
        out = {}
        for i, p in pairs:
            mem.add(**item(i, p, "old"))
            out[i] = mem.add(**item(i, p, "new")).status
        return out
    mem.add_many([item(i, p, "old") for i, p in pairs])
    results = mem.add_many([item(i, p, "new") for i, p in pairs])
    return {i: r.status for (i, _), r in zip(pairs, results, strict=True)}


def _seeds(embedder: Embedder, pairs: list[WritePair]) -> tuple[Counter[str], Counter[str]]:
    """Right answers per category of seed rules A and B on the same vectors."""
    texts = [memory_embedding_text(None, t) for p in pairs for t in (p.old, p.new)]
    v = np.asarray(embedder.embed_batch(texts), dtype=np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    cosines = np.einsum("ij,ij->i", v[0::2], v[1::2])
    polarity = RulePolarity().polarity
    a: Counter[str] = Counter()
    b: Counter[str] = Counter()
    for p, c in zip(pairs, cosines, strict=True):
        a[p.category] += ("refused" if c >= 0.92 else "added") == p.expected
        flipped = polarity(p.old) != polarity(p.new)
        seed_b = "refused" if c >= 0.9 else "superseded" if c >= 0.8 and flipped else "added"
        b[p.category] += seed_b == p.expected
    return a, b


def test_the_labelled_set_is_big_and_varied() -> None:
    counts = Counter(p.category for p in PAIRS)
    assert len(PAIRS) >= 300 and set(counts) == set(CATEGORIES)
    assert min(counts.values()) >= 40, counts
    assert len({p.domain for p in PAIRS}) >= 6
    assert len({(p.old, p.new) for p in PAIRS}) == len(PAIRS)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["add", "add_many"])
def test_every_category_holds_its_floor(
    make_mem: Callable[..., Memory], local_embedder: Embedder, path: str
) -> None:
    """Issue 31, item 1: each category at or above its floor and no category below
    either seed rule, on both backends (the ``make_mem`` fixture) and both paths."""
    mem = make_mem(path, embedder=local_embedder)
    pairs = list(enumerate(PAIRS))
    got = _write(mem, path, pairs)
    right = Counter(p.category for i, p in pairs if got[i] == p.expected)
    total = Counter(p.category for p in PAIRS)
    seed_a, seed_b = _seeds(local_embedder, PAIRS)
    wrong = [(p.category, p.old, p.new, got[i]) for i, p in pairs if got[i] != p.expected]
    for category in CATEGORIES:
        share = right[category] / total[category]
        assert share >= FLOORS[category], (category, share, wrong)
        assert right[category] >= max(seed_a[category], seed_b[category]), category
    for i, p in pairs:  # a superseded old statement leaves the list; an added one stays
        live = {r.content for r in mem.list(user_id=f"pair{i}")}
        if got[i] == "superseded":
            assert live == {p.new}, (p.old, p.new, live)
        elif got[i] == "added":
            assert live == {p.old, p.new}, (p.old, p.new, live)


@pytest.mark.slow
def test_a_sample_through_http_gets_its_labels(
    make_mem: Callable[..., Memory], local_embedder: Embedder
) -> None:
    """The same decisions through ``POST /v1/memories`` (every fifth pair)."""
    from fastapi.testclient import TestClient

    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    mem = make_mem("http", embedder=local_embedder)
    key = KeyRing(mem.store).create(admin=True)[0]
    sample = list(enumerate(PAIRS))[::5]
    wrong = []
    with TestClient(create_app(mem), headers={"Authorization": f"Bearer {key}"}) as client:
        for i, p in sample:
            for text, options in ((p.old, p.old_options), (p.new, p.new_options)):
                body = {"content": text, "user_id": f"pair{i}", **options}
                response = client.post("/v1/memories", json=body)
                assert response.status_code == 200, response.text
            status = response.json()["status"]
            if status != p.expected:
                wrong.append((p.category, p.old, p.new, status))
    assert len(wrong) <= 1, wrong  # the one known miss may fall in the sample


@pytest.mark.parametrize(
    ("old", "new", "relation", "rule"),
    [
        ("Grafana runs on port 3000.", "Grafana runs on port 3100.", "update", "update:port"),
        ("We use Jira for bugs.", "We use Linear for bugs instead.", "update", "update:instead"),
        ("Upload limit: 25 MB.", "Upload limit: 50 MB.", "update", "update:limit"),
        ("Node 18 is what CI uses.", "Node 22 is what CI uses.", "update", "update:number"),
        ("I own two bikes.", "I own three bikes.", "update", "update:number"),
        ("Kofi smokes cigars.", "Kofi quit smoking cigars.", "contradiction", "negation:quit"),
        ("We use Jira.", "We moved away from Jira.", "contradiction", "negation:moved-away-from"),
        ("We deploy to GCP.", "We also deploy to Hetzner.", "distinct", "additive:also"),
        ("Sam speaks Greek.", "Sam speaks Italian.", "distinct", "additive:many-valued"),
        ("The job failed on 3 March.", "The job failed on 9 March.", "distinct", "event:dated"),
        ("Jo is allergic to goat's milk.", "Jo is allergic to cow's milk.", "distinct",
         "distinct:content-word"),
        ("Lena's favourite film is Alien.", "Lena's favourite dish is paella.", "distinct",
         "distinct:content-word"),
        ("On Sundays, Ravi cooks.", "Ravi cooks on Sundays.", "duplicate", "duplicate:reordered"),
        ("Kim is vegan.", "Just so you know, Kim is vegan.", "duplicate", "duplicate:filler"),
        ("I'm on call.", "I am on call.", "duplicate", "duplicate:exact"),
    ],
)  # fmt: skip
def test_each_decision_names_its_rule(old: str, new: str, relation: str, rule: str) -> None:
    """Issue 31, items 2-5 and 7: the decision and its rule, from the words alone
    (a high cosine: closeness never decides a refusal or a supersession)."""
    found = judge(new, old, 0.95, T)
    assert (found.relation.value, found.rule) == (relation, rule)


@pytest.mark.parametrize("cosine", [0.93, 0.99])
def test_a_content_word_makes_a_new_statement_whatever_the_cosine(cosine: float) -> None:
    """Issue 31, item 3: qualifiers and content words that are neither inflections
    nor synonyms of each other are never refused as duplicates."""
    for old, new in [
        ("Mia's older sister lives in Graz.", "Mia's younger sister lives in Graz."),
        ("The front door key is under the mat.", "The back door key is under the mat."),
        ("The invoice was paid in March.", "The invoice was sent in March."),
    ]:
        assert judge(new, old, cosine, T).relation is Relation.DISTINCT, (old, new)
    # inflections and declared synonyms are the same word
    assert judge("Likes Italian food", "Enjoys Italian food", cosine, T).relation is (
        Relation.DUPLICATE
    )


@pytest.mark.parametrize(
    "cue",
    ["quit", "left", "dropped", "cancelled", "gave up", "moved away from", "got rid of",
     "phased out", "discontinued", "abandoned", "stopped going to", "is no longer in",
     "switched off"],
)  # fmt: skip
def test_every_stop_verb_supersedes_what_it_stops(cue: str) -> None:
    """Issue 31, item 4: the declared stop verbs negate (polarity) and supersede the
    statement they stop, even with other words around them and a modest cosine."""
    old, new = "Sam is a member of the chess club.", f"Sam {cue} the chess club."
    if cue == "switched off":
        old, new = "The chess club's heating is switched on.", f"The chess club's heating is {cue}."
    assert RulePolarity().polarity(new) == -1
    found = judge(new, old, 0.75, T)
    assert found.relation is Relation.CONTRADICTION, (cue, found)
    assert found.rule.startswith("negation:")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The bank opens at 9.", "Lucas left the bank."),  # another subject
        ("Berlin is the capital of Germany.", "I left Berlin."),  # one shared word
        ("We use Jira for tickets.", "We stopped using Jira in 2019."),  # a new value
        ("Sam likes jazz.", "Sam quit."),  # nothing stopped that was stored
    ],
)
def test_a_stop_of_something_else_supersedes_nothing(old: str, new: str) -> None:
    """Strong evidence only (issue 31): a stop supersedes the statement it stops,
    not one that merely shares a word with it."""
    assert judge(new, old, 0.75, T).relation is Relation.DISTINCT


def test_stop_cues_are_declared_in_one_place() -> None:
    """The polarity rules and the decision read the same list (issue 31, item 4)."""
    from memchentic.write import polarity, relations

    assert set(STOP_CUES) <= set(polarity.NEGATION_CUES)
    assert polarity.NEGATION_CUES is relations.NEGATION_CUES
    # "left" is a stop as a verb, not as a side
    assert RulePolarity().polarity("Eva's left knee hurts.") == 1
    assert RulePolarity().polarity("Eva left the choir.") == -1


def test_the_result_and_the_history_name_the_rule(local_mem: Memory) -> None:
    """Issue 31, item 7: ``WriteResult.reason``, the supersedes edge and the version
    history of both memories name the rule that decided; so does an added write
    judged beside a close neighbour, and a refusal."""
    old = local_mem.add("Grafana runs on port 3000.", user_id="ops")
    new = local_mem.add("Grafana runs on port 3100.", user_id="ops")
    assert (new.status, new.reason) == ("superseded", "update:port")
    assert local_mem.history(old.id)[-1].changes["rule"] == [None, "update:port"]
    assert local_mem.history(new.id)[0].changes["rule"] == [None, "update:port"]
    assert local_mem.edges(new.id)[0].metadata["rule"] == "update:port"
    also = local_mem.add("Grafana also runs on port 3200.", user_id="ops")
    assert (also.status, also.reason) == ("added", "additive:also")
    again = local_mem.add("Basically, Grafana runs on port 3100.", user_id="ops")
    assert (again.status, again.reason, again.id) == ("refused", "duplicate:filler", new.id)
    first = local_mem.add("Nothing near this one is stored.", user_id="alone")
    assert (first.status, first.reason) == ("added", None)
    [bulk] = local_mem.add_many([{"content": "We also monitor Grafana's disk.", "user_id": "ops"}])
    assert bulk.status == "added" and bulk.reason is not None
