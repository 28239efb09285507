"""Write path (DESIGN section 4): types, slots, duplicates, guides, contradictions, secrets."""

from __future__ import annotations

import random
import re

import pytest

from memchentic import Memory, Settings
from memchentic.write.polarity import _CUES, NEGATION_CUES, negation_cues

from .conftest import TableEmbedder


def _vec(*xs: float) -> list[float]:
    return list(xs) + [0.0] * (8 - len(xs))


def test_type_is_normalised(mem: Memory):
    assert mem.add("How to deploy: run make deploy", type="Procedural").memory.type == "skill"
    assert mem.add("Ivan likes tea", type="  PREFERENCE ").memory.type == "preference"
    assert mem.add("Something general").memory.type == "semantic"


def test_slot_key_updates_in_place_and_keeps_history(mem: Memory):
    first = mem.add("Judy lives in Lisbon", slot_key="profile.location", user_id="judy")
    second = mem.add("Judy lives in Porto", slot_key="profile.location", user_id="judy")
    assert second.status == "updated" and second.id == first.id
    record = mem.get(first.id)
    assert record.content == "Judy lives in Porto"
    assert [h["content"] for h in record.metadata["history"]] == ["Judy lives in Lisbon"]
    assert len(mem.list(user_id="judy")) == 1
    assert [h.id for h in mem.search("Judy lives", user_id="judy")] == [first.id]
    ops = [v.op for v in mem.history(first.id)]
    assert ops == ["add", "slot_update"]
    # the same key in another namespace is another slot
    other = mem.add("Judy's twin lives in Faro", slot_key="profile.location", user_id="twin")
    assert other.status == "added"


def test_keyed_writes_never_merge_by_similarity(mem: Memory):
    a = mem.add("Ken prefers dark mode", slot_key="pref.theme")
    b = mem.add("Ken prefers dark mode", slot_key="pref.editor_theme")
    assert a.status == b.status == "added" and a.id != b.id


def test_near_duplicate_entry_is_refused_with_the_existing_id(mem: Memory):
    first = mem.add("Leo's standup is at 9:30 every weekday", user_id="leo")
    again = mem.add("Leo's standup is at 9:30 every weekday.", user_id="leo")
    assert again.status == "refused" and again.id == first.id
    assert again.reason == "duplicate:exact" and again.similarity >= 0.92  # issue 31, item 7
    assert len(mem.list(user_id="leo")) == 1


def test_near_duplicates_in_other_namespaces_are_not_duplicates(mem: Memory):
    mem.add("Standup is at 9:30", user_id="a")
    assert mem.add("Standup is at 9:30", user_id="b").status == "added"


def test_reinforce_policy_and_keep(make_mem):
    base_text, close, twin = (
        "Bob is allergic to cats", "Bob has an allergy to cats", "Bob is allergic to cats!"
    )
    emb = TableEmbedder({base_text: _vec(1, 0), close: _vec(1, 0.45), twin: _vec(1, 0.01)})
    m = make_mem("r", embedder=emb)
    try:
        base = m.add(base_text)
        # a paraphrase (other content words, the same values) at cosine 0.912: under
        # NEAR_DUP (0.92), over dedup (0.9)
        assert m.add(close).status == "added"
        m.delete(m.list()[0].id)
        res = m.add(close, on_duplicate="reinforce")
        assert res.status == "reinforced" and res.id == base.id
        assert m.get(base.id).reinforcement == 2
        kept = m.add(twin, on_duplicate="keep")
        assert kept.status == "added" and kept.id != base.id
    finally:
        m.close()


def test_duplicate_policy_setting(make_mem):
    m = make_mem("p", settings=Settings(duplicate_policy="reinforce"))
    try:
        a = m.add("Mia drinks oat milk")
        assert m.add("Mia drinks oat milk").status == "reinforced"
        assert m.get(a.id).reinforcement == 2
    finally:
        m.close()


def test_conversation_turns_are_kept_as_they_are(mem: Memory):
    turns = ["user: hi", "user: hi", "user: hi"]
    results = mem.add_many(turns, type="episodic", on_duplicate="keep", session_id="s1")
    assert [r.status for r in results] == ["added"] * 3
    assert len({r.id for r in results}) == 3


def test_guides_merge_and_reinforce(mem: Memory):
    g = mem.add("Always run migrations inside a transaction", kind="guide", ttl_days=10)
    again = mem.add("Always run migrations inside a transaction", kind="guide", ttl_days=60)
    assert again.status == "merged" and again.id == g.id
    merged = mem.get(g.id)
    assert merged.reinforcement == 2
    assert merged.expires_at > g.memory.expires_at  # renewed
    third = mem.add("Always run migrations inside a transaction!", kind="guide")
    assert third.status == "merged" and mem.get(g.id).reinforcement == 3
    assert [v.op for v in mem.history(g.id)] == ["add", "merge", "merge"]


def test_contradiction_supersedes_with_the_real_model(local_mem: Memory):
    old = local_mem.add("Sam likes spicy food a lot.", user_id="sam")
    new = local_mem.add("Sam does not like spicy food a lot.", user_id="sam")
    assert new.status == "superseded"
    assert new.ids == [new.id, old.id]
    assert [h.id for h in local_mem.search("spicy food", user_id="sam")] == [new.id]
    assert [r.id for r in local_mem.list(user_id="sam")] == [new.id]
    chain = local_mem.list(user_id="sam", include_superseded=True)
    assert {r.id for r in chain} == {old.id, new.id}
    edges = local_mem.edges(new.id)
    assert [(e.source, e.target, e.kind) for e in edges] == [(new.id, old.id, "supersedes")]


def test_near_duplicate_with_the_real_model(local_mem: Memory):
    a = local_mem.add("Nina's flight to Oslo leaves at 7am on Friday.")
    b = local_mem.add("Nina's flight to Oslo leaves at 7 am on Friday.")
    assert b.status == "refused" and b.id == a.id


def test_polarity_is_derived(mem: Memory):
    assert mem.add("Omar drinks coffee").memory.polarity == 1
    assert mem.add("Omar no longer drinks tea").memory.polarity == -1
    assert mem.add("Omar doesn't smoke").memory.polarity == -1
    assert mem.add("Omar quit his job").memory.polarity == -1


def test_negation_cues_count_what_the_pattern_finds() -> None:
    """The word-set shortcut for ASCII text without cues gives the pattern's count
    on every text: cues in any case, inside and around other words, split by other
    spacing, with apostrophes, and text the shortcut must leave to the pattern."""
    rng = random.Random(5)
    pieces = [
        "not", "NOT", "nOt", "note", "knot", "no", "No", "nope", "no longer", "no  longer",
        "No Longer", "gave up", "gave  up", "gave", "up", "quit", "quite", "stopped",
        "don't", "dont", "DON'T", "don't've", "mustn't", "n't", "'not'", "not_yet",
        "without", "withouts", "can't", "cannot", "won't", "nor", "neither", "none",
        "nothing", "nobody", "isn't", "mightn't", "coffee", "tea", "Omar", "42", "x_1",
        "\u017ftopped", "\u0130sn't", "caf\u00e9", "don\u2019t", "no\u2019", "\u2019",
        ",", ".", "!", "-", "'", "''", "(", ")", "\n", "\t",
    ]  # fmt: skip
    seps = [" ", "", "  ", "-", "'", ", ", "\n"]
    texts = ["".join(rng.choice(pieces) + rng.choice(seps) for _ in range(rng.randint(1, 12)))
             for _ in range(4000)]  # fmt: skip
    for text in texts:
        assert negation_cues(text) == len(_CUES.findall(text.replace("\u2019", "'"))), text
    assert sum(1 for t in texts if negation_cues(t)) > 1000  # both branches ran
    assert sum(1 for t in texts if not negation_cues(t)) > 200
    # the shortcut derives words from the cues: they must stay plain words
    assert all(re.fullmatch(r"[a-z]+(?: [a-z]+)*", cue) for cue in NEGATION_CUES)


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefghijkl",
        "password: hunter2!x",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
        "postgres://admin:s3cr3t@db.internal:5432/app",
    ],
)
def test_secrets_are_refused_by_default(mem: Memory, secret: str):
    res = mem.add(f"Deploy notes: {secret}")
    assert res.status == "refused" and res.reason.startswith("secret:")
    assert mem.list() == []
    assert mem.search("Deploy notes") == []


def test_secrets_can_be_redacted(mem: Memory):
    res = mem.add("The CI token is ghp_abcdefghijklmnopqrstuvwxyz0123456789AB ok",
                  secrets="redact")  # fmt: skip
    assert res.status == "added"
    stored = mem.get(res.id)
    assert "ghp_" not in stored.content and "[REDACTED:github_token]" in stored.content
    assert stored.metadata["redacted"] == ["github_token"]
    assert mem.store.keyword_search("ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", 5, _all()) == []
    assert [h.id for h in mem.search("CI token")] == [res.id]


def test_ordinary_talk_about_passwords_is_not_a_secret(mem: Memory):
    assert mem.add("Pat forgot the password again and reset it").status == "added"
    assert mem.add("The password is stored in the team vault").status == "added"


def test_write_result_reports_what_happened(mem: Memory):
    res = mem.add("Quinn owns the payments service", user_id="q")
    assert res.status == "added" and res.ids == [res.id] and res.ok
    assert res.to_dict()["status"] == "added"


def test_add_many_embeds_in_one_batch(make_mem):
    class Counting(TableEmbedder):
        calls = 0

        def embed_batch(self, texts):
            Counting.calls += 1
            return super().embed_batch(texts)

    m = make_mem("b", embedder=Counting(dimension=384))
    try:
        results = m.add_many([f"fact number {i} about topic {i * 7}" for i in range(50)])
        assert Counting.calls == 1
        assert sum(r.status == "added" for r in results) == 50
    finally:
        m.close()


def test_add_many_refuses_duplicates_within_the_batch(mem: Memory):
    results = mem.add_many(["Rita plays the cello", "Rita plays the cello"])
    assert [r.status for r in results] == ["added", "refused"]


def _all():
    from datetime import UTC, datetime

    from memchentic.store.base import MemoryFilter

    return MemoryFilter.everything(now=datetime.now(UTC))
