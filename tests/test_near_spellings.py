"""Near spellings for the keyword stage's fuzzy path (issue 33, item 4): typos,
names spelled several ways and short forms of names, each found by a named
reason within a bound; numbers, codes and short words never get variants."""

from __future__ import annotations

from memchentic.text_fuzzy import (
    edit_budget,
    edit_distance,
    nearness,
    ngram_similarity,
    variants,
)

VOCABULARY = {"katherine": 3, "kath": 9, "mohammed": 2, "received": 1, "theo": 5,
              "theodore": 1, "jon": 4, "inv": 2, "2024": 3, "recipe": 1}  # fmt: skip


def test_edit_distance_counts_transpositions_and_stops_at_its_bound():
    assert edit_distance("recieved", "received", 2) == 1  # one transposition
    assert edit_distance("muhammad", "mohammed", 2) == 2
    assert edit_distance("kathryn", "katherine", 2) == 3  # over the bound: bound + 1
    assert edit_distance("abc", "abcdefgh", 1) == 2
    assert [edit_budget(w) for w in ("jon", "kath", "muhamad", "katherine")] == [0, 1, 2, 2]


def test_ngram_similarity_is_one_for_the_same_word_and_zero_for_strangers():
    assert ngram_similarity("biscuit", "biscuit") == 1.0
    assert ngram_similarity("biscuit", "marathon") == 0.0
    assert 0.5 < ngram_similarity("colour", "color") < 1.0


def test_variants_of_typos_names_and_short_forms():
    assert [(v.word, v.reason) for v in variants("Muhammad", VOCABULARY)] == [("mohammed", "edit")]
    assert [(v.word, v.reason) for v in variants("recieved", VOCABULARY)] == [("received", "edit")]
    assert [(v.word, v.reason) for v in variants("Kathryn", VOCABULARY)] == [("kath", "prefix")]
    assert [v.word for v in variants("Theodore", VOCABULARY)] == ["theo"]  # itself is excluded
    assert [v.word for v in variants("Katherine", VOCABULARY)] == ["kath"]


def test_short_words_numbers_and_codes_get_no_variants():
    assert variants("John", {"jon": 4}) == [variants("John", {"jon": 4})[0]]  # 4 letters: 1 edit
    assert variants("Jo", VOCABULARY) == []
    assert variants("2025", VOCABULARY) == []
    assert nearness("inv2", "inv") is None
    assert nearness("recipes", "recipe") is not None
    assert len(variants("kathe", {f"kath{c}": 1 for c in "abcdefgh"}, limit=3)) == 3
