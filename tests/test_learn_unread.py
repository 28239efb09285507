"""Nothing said is dropped in silence (issue 45, item 3): a user's message the rule
extractor reads nothing in, whether in another language or English with no statement
the rules know, is kept as written (as mem0's ``infer=False`` keeps a message), a
record of what was said with ``extraction: none`` and the reason in its metadata;
and every fact of mem0's own quickstart conversation is kept. Through mem0's ``add``
and through ``learn``, on both backends."""

from __future__ import annotations

import pytest

from memchentic import Memory
from memchentic.learn import RuleExtractor, to_messages
from memchentic.mem0 import Memory as Mem0Memory

#: Self-statements the English rules cannot read, with a word to search them by.
OTHER_LANGUAGES = [
    ("chinese", "我叫小明，我住在上海。我对花生过敏。", "花生"),
    ("german", "Ich heiße Anna und wohne in Berlin. Ich bin allergisch gegen Nüsse.", "Berlin"),
    ("spanish", "Me llamo Lucía, vivo en Madrid y soy alérgica a los cacahuetes.", "Madrid"),
]
#: mem0's quickstart conversation (docs.mem0.ai, "Quickstart"), as mem0 spells it.
QUICKSTART = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about a thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I’m not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest "
                                     "sci-fi movies in the future."},
]  # fmt: skip
QUICKSTART_FACTS = {
    ("Wants to watch a movie tonight", "goal", None),
    ("Is not a big fan of thriller movies", "preference", "opinion:thriller_movies"),
    ("Loves sci-fi movies", "preference", "opinion:sci_fi_movies"),
}


def _unread(metadata: dict, reason: str) -> bool:
    return (metadata.get("extraction"), metadata.get("reason"), metadata.get("role")) == (
        "none", reason, "user")  # fmt: skip


@pytest.mark.parametrize(("language", "text", "word"), OTHER_LANGUAGES)
def test_mem0_add_keeps_a_message_in_another_language_as_written(
    mem: Memory, language: str, text: str, word: str
):
    m = Mem0Memory(memory=mem)
    added = m.add([{"role": "user", "content": text}], user_id="lin")
    assert [r["event"] for r in added["results"]] == ["ADD"], (language, added)
    assert added["results"][0]["memory"] == text
    kept = m.get_all(user_id="lin")["results"]
    assert [r["memory"] for r in kept] == [text]
    assert _unread(kept[0]["metadata"], "language"), kept[0]["metadata"]
    assert kept[0]["metadata"]["source"] == "learn"
    found = m.search(word, user_id="lin")["results"]
    assert [r["memory"] for r in found] == [text]


@pytest.mark.parametrize(("language", "text", "word"), OTHER_LANGUAGES)
def test_learn_keeps_a_message_in_another_language_as_written(
    mem: Memory, language: str, text: str, word: str
):
    results = mem.learn([{"role": "user", "content": text},
                         {"role": "assistant", "content": "Verstanden / 好的 / Entendido"}],
                        user_id="lin", session_id="s1")  # fmt: skip
    assert [r.status for r in results] == ["added"], language
    record = mem.get(results[0].id)
    assert record.content == text and record.session_id == "s1"
    assert _unread(record.metadata, "language"), record.metadata
    assert record.expires_at is None  # a record of what was said: RECORD_DEFAULT_TTL_DAYS, 0
    assert [h.id for h in mem.search(word, user_id="lin")] == [record.id]
    # the assistant's message is not the user's statement: not kept
    assert [r.content for r in mem.list(user_id="lin")] == [text]


def test_english_with_no_statement_the_rules_know_is_kept_as_no_fact(mem: Memory):
    text = "My sister Ana has a dog called Bruno."
    results = mem.learn(text, user_id="kai")
    assert [r.status for r in results] == ["added"]
    record = mem.get(results[0].id)
    assert record.content == text and _unread(record.metadata, "no-fact")


def test_a_message_the_rules_read_is_not_kept_twice(mem: Memory):
    results = mem.learn("I live in Oslo. The fjords are lovely.", user_id="kai")
    assert [mem.get(r.id).content for r in results] == ["Lives in Oslo"]
    assert mem.learn("  ...  ", user_id="kai") == []  # no word: nothing to keep


def test_a_secret_in_an_unread_message_is_redacted_not_stored_or_refused(mem: Memory):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = f"Mein GitHub-Token ist {token} und ich wohne in Wien."
    results = mem.learn(text, user_id="eva")
    assert [r.status for r in results] == ["added"]
    record = mem.get(results[0].id)
    assert token not in record.content and "Wien" in record.content
    assert _unread(record.metadata, "language")


def test_the_rule_extractor_says_why_it_kept_a_message_as_written():
    found = RuleExtractor().extract(to_messages(["Je m'appelle Marie et j'habite à Paris.",
                                                 "What's the weather like?"]))  # fmt: skip
    assert [(e.content, e.metadata["reason"]) for e in found] == [
        ("Je m'appelle Marie et j'habite à Paris.", "language"),
        ("What's the weather like?", "no-fact"),
    ]
    assert RuleExtractor(keep_unread=False).extract(to_messages("What's the weather?")) == []


@pytest.mark.parametrize("apostrophe", ["'", "’"])
def test_every_fact_of_mem0s_quickstart_is_kept(apostrophe: str):
    messages = [{**m, "content": m["content"].replace("’", apostrophe)} for m in QUICKSTART]
    found = RuleExtractor().extract(to_messages(messages))
    assert {(e.content, e.type, e.slot_key) for e in found} == QUICKSTART_FACTS
    assert not any(e.metadata for e in found)  # all read: none kept as written


def test_mem0_add_of_the_quickstart_keeps_every_fact(mem: Memory):
    m = Mem0Memory(memory=mem)
    added = m.add(QUICKSTART, user_id="alice", metadata={"category": "movie_recommendations"})
    assert {r["memory"] for r in added["results"]} == {c for c, _, _ in QUICKSTART_FACTS}
    found = m.search("thriller movies", user_id="alice")["results"]
    assert found[0]["memory"] == "Is not a big fan of thriller movies"
    assert found[0]["metadata"]["category"] == "movie_recommendations"
    # a later change of mind replaces the opinion in place (its slot)
    m.add([{"role": "user", "content": "I'm a huge fan of thriller movies now"}], user_id="alice")
    opinions = [r["memory"] for r in m.get_all(user_id="alice")["results"]
                if "thriller" in r["memory"]]  # fmt: skip
    assert opinions == ["Is a huge fan of thriller movies"]
