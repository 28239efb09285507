"""Near spellings for the keyword stage's fuzzy path (issue 33, item 4): names
spelled several ways, short forms of names and words a memory misspelled, each
found by a named reason within a bound; short common words, numbers, codes and
stopwords never get variants."""

from __future__ import annotations

from memchentic.text import edit_budget, edit_distance, near_spellings, nearness, ngram_similarity

VOCABULARY = {"katherine": 3, "kath": 9, "mohammed": 2, "received": 1, "theo": 5,
              "theodore": 1, "jon": 4, "inv": 2, "2024": 3, "recipe": 1, "there": 7,
              "book": 4, "physio": 2}  # fmt: skip


def _found(word: str, *, name: bool = True) -> list[tuple[str, str]]:
    return [(v.word, v.reason) for v in near_spellings(word, VOCABULARY, name=name)]


def test_edit_distance_counts_transpositions_and_stops_at_its_bound():
    assert edit_distance("recieved", "received", 2) == 1  # one transposition
    assert edit_distance("muhammad", "mohammed", 2) == 2
    assert edit_distance("kathryn", "katherine", 2) == 3  # over the bound: bound + 1
    assert edit_distance("abc", "abcdefgh", 1) == 2
    assert [edit_budget(w) for w in ("jon", "kath", "muhamad", "katherine")] == [0, 1, 2, 2]
    assert [edit_budget(w, name=False) for w in ("cook", "physics", "accommodation")] == [0, 1, 2]


def test_ngram_similarity_is_one_for_the_same_word_and_zero_for_strangers():
    assert ngram_similarity("biscuit", "biscuit") == 1.0
    assert ngram_similarity("biscuit", "marathon") == 0.0
    assert 0.5 < ngram_similarity("colour", "color") < 1.0


def test_names_get_edits_prefixes_and_trigrams():
    assert _found("Muhammad") == [("mohammed", "edit")]
    assert _found("Kathryn") == [("kath", "prefix")]
    assert _found("Theodore") == [("theo", "prefix")]  # the word itself is not a variant
    assert _found("Katherine") == [("kath", "prefix")]
    assert _found("John") == [("jon", "edit")]


def test_other_words_need_length_and_never_get_stopwords():
    assert _found("recieved", name=False) == [("received", "edit")]
    assert _found("physiotherapist", name=False) == [("physio", "prefix")]
    assert _found("cook", name=False) == []  # one edit from "book", but short and common
    assert _found("three") == []  # "there" is a stopword
    assert _found("Kath", name=False) == []


def test_numbers_codes_and_short_words_get_no_variants():
    assert _found("Jo") == []
    assert _found("2025") == []
    assert nearness("inv2", "inv") is None
    assert nearness("recipes", "recipe") is not None
    assert len(near_spellings("kathe", {f"kath{c}": 1 for c in "abcdefgh"}, limit=3)) == 3
