"""The write rules' shortcuts read texts as the plain patterns do (issue 36, item 3).

Each shortcut (a needle before a pattern, a grouped pattern, a bound on the words
of a text) is checked against the straightforward reading it replaces, on the
labelled write pairs and on generated text that aims at the edges: case, curly
apostrophes, non-ASCII letters that fold to ASCII ones, contractions and cues at
the start, the end and across spaces."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memchentic.write import key_value, polarity, relations, summary, words
from tests.data.write_pairs import PAIRS

_PIECES = ("can't", "CAN'T", "won't", "Shan't", "doesn't", "don\u2019t", "cannot", "Cannot",
           "I'm", "i'M", "you're", "they've", "we'll", "she'd", "it's", "It\u2019s", "let's",
           "LET'S", "left", "LEFT the band", "left the", "the left", "turn left", "no", "No longer",
           "no  more", "never", "not", "n't", "nothing", "gave up", "GAVE\nUP", "quit", "stopped",
           "\u017fo", "\u212a", "\u0130t's", "caf\u00e9", "\u200b", "7am", "10 AM", "Ana:", "x:",
           "Port: 8000", ",", ".", "Dr.", "also", "too", "as well", "now", "instead", " ", "  ",
           "'", "''", "Ana's", "a's", "$5", "e.g.", "v1.2", "\u00c5",
           "\uff47\uff48\uff50")  # fmt: skip
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=12).map(" ".join) | st.text(max_size=40)
_CORPUS = [text for pair in PAIRS for text in (pair.old, pair.new)]


def _flat_cues() -> re.Pattern[str]:
    """The negation cue pattern before it was grouped by first letter."""
    patterns = (r"\s+".join(map(re.escape, c.split()))
                for c in relations.NEGATION_CUES if c != "left")  # fmt: skip
    return re.compile(r"(?<![\w'])(?:" + "|".join(patterns) + r")(?![\w'])|n't\b", re.IGNORECASE)


_FLAT = _flat_cues()
_CONTRACTIONS = [(re.compile(p, re.IGNORECASE), r) for p, r in relations.CONTRACTIONS]


def _expand_all(text: str) -> str:
    if "'" not in text:
        return text
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


def _same_reading(text: str) -> None:
    assert [m.span() for m in polarity._CUES.finditer(text)] == [
        m.span() for m in _FLAT.finditer(text)
    ]
    left = relations.left_is_a_stop(text)
    plain = relations._LEFT_AS_VERB.search(text)
    assert (left and left.span()) == (plain and plain.span())
    assert relations.expand_contractions(text) == _expand_all(text)
    for n in (0, 1, 4):
        if key_value._more_words_than(text, n):
            assert len(words.tokens(text)) > n


def test_the_labelled_pairs_are_read_alike() -> None:
    for text in _CORPUS:
        _same_reading(text)
        _same_reading(text.upper())


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_generated_text_is_read_alike(text: str) -> None:
    _same_reading(text)


def test_a_turn_with_a_long_value_is_no_key_value_statement() -> None:
    """ "Ana: ..." with a sentence after the name is not an attribute (and its value
    is not tokenised to learn it); a short value still is."""
    long = summary.summary("Ana: I went to the market with my sister on Sunday")
    short = summary.summary("Upload limit: 25 MB.")
    other = summary.summary("Upload limit: 50 MB.")
    assert key_value._key_value_parts(long.text) is None
    assert key_value.key_value(long.text, short.text) is None
    found = key_value.key_value(other.text, short.text)
    assert found == ("update", "update:limit")


def test_tokens_read_am_with_the_word_before() -> None:
    """The one word whose reading depends on the one before: cached facts of a word
    must not carry it over."""
    assert [t.value for t in words.tokens("I am at 10 am")] == [
        t.value for t in words.tokens("I am at 10 am")
    ]
    am = [t for t in words.tokens("I am here at 10 am") if t.text == "am"]
    assert [t.value for t in am] == [False, True]
    assert [t.function for t in am] == [True, False]
