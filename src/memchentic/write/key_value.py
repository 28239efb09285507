"""Statements of the form "key: value" ("Upload limit: 25 MB.", docs/design.md, section 4).

Two of one key are one attribute: an update when the values differ, a duplicate
when they do not; another key is another attribute. A key that names a list
("Todo: ...", "Step 3: ...") or a value that is a sentence ("Ana: I moved to ...",
a conversation turn) or an exclamation or a question ("Jon: Thanks!") is no
attribute, and the general rules decide.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .relations import MANY_VALUED, SINGLE_VALUED_VERBS
from .words import Token, normalise, stem, text_cache, tokens

__all__ = ["key_value", "slug"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_VERBS = frozenset(stem(w) for w in SINGLE_VALUED_VERBS | MANY_VALUED)
_BE = _words("is are was were be been being get gets got become became")


def slug(word: str) -> str:
    """``word`` as a rule name's part: lower case, runs of other characters as "-"."""
    return re.sub(r"[^a-z0-9]+", "-", word.lower()).strip("-") or "value"


_KEY_VALUE = re.compile(r"^\s*([^:]{1,60}?)\s*:\s+(\S.*)$")
#: Longest value of a "key: value" line; a longer one is a sentence after a label.
_KEY_VALUE_WORDS = 4
#: Keys of notes that are lists, not attributes ("Todo: ...", "Idea: ...").
_LIST_KEYS = _words("todo task tasks idea ideas note notes reminder question tip example "
                    "update memo item step fact news")  # fmt: skip


def key_value(new: str, old: str) -> tuple[str, str] | None:
    """ "Key: value" statements of one key ("Upload limit: 25 MB." / "... 50 MB."):
    (relation, rule): an update when the values differ; another key is another
    attribute; None when either is no "key: value" statement (both normalised)."""
    pa, pb = _key_value_parts(new), _key_value_parts(old)
    if pa is None or pb is None:  # not "key: value", or its value is a sentence
        return None
    (key_a, value_a), (key_b, value_b) = pa, pb
    if len(key_a) > 5 or any(t.text.lower() in _LIST_KEYS for t in key_a):
        return None
    if any(any(ch.isdigit() for ch in t.text) for t in key_a):  # "Step 3: ...": a list
        return None
    if _has_verb(value_a) or _has_verb(value_b):  # "Sam: likes tea": a sentence
        return None
    if [t.key for t in key_a] != [t.key for t in key_b]:
        return "distinct", "distinct:attribute"
    if [t.key for t in value_a] == [t.key for t in value_b]:
        return "duplicate", "duplicate:exact"
    return "update", f"update:{slug(key_a[-1].text)}"


@text_cache(maxsize=4096)
def _key_value_parts(text: str) -> tuple[tuple[Token, ...], tuple[Token, ...]] | None:
    """The tokens of the key and of the value of a "key: value" text, or None (also
    when the value has more than ``_KEY_VALUE_WORDS`` tokens: a sentence after a label,
    as a conversation turn "Ana: ..." is)."""
    found = _KEY_VALUE.match(text)
    if found is None or _more_words_than(found.group(2), _KEY_VALUE_WORDS):
        return None
    if found.group(2).rstrip().endswith(("!", "?")):  # "Jon: Thanks!": an utterance
        return None
    value = tokens(found.group(2))
    if len(value) > _KEY_VALUE_WORDS:
        return None
    return tokens(found.group(1)), value


_WORD_CHARACTER = re.compile(r"\w")


def _more_words_than(text: str, n: int) -> bool:
    """Whether :func:`tokens` certainly finds more than ``n`` tokens in ``text``,
    without reading them: more than ``n`` parts between spaces hold a word character
    (each part holds a token of its own: no token spans a space, and contractions
    and possessives only split tokens)."""
    parts = 0
    for part in normalise(text).split():
        if _WORD_CHARACTER.search(part):
            parts += 1
            if parts > n:
                return True
    return False


def _has_verb(toks: Sequence[Token]) -> bool:
    return any(t.key in _VERBS or t.text.lower() in _BE or t.text.lower() in _HAVE_DO
               for t in toks)  # fmt: skip


_HAVE_DO = _words("has have had do does did")
