"""Near spellings of a word, for the keyword stage's fuzzy path (issue 33, item 4):
a rare query word that no memory holds (a name spelled another way: Mohammed /
Muhammad, Kathryn / Katherine, Theo / Theodore; a word a memory misspelled) is
matched through the words of the store's vocabulary spelled nearly like it.

Pure functions over a word and a vocabulary of words (a store would give the
terms of its keyword index and their document frequencies); the store's lookup
and the pipeline's use of the variants are hooks elsewhere. Three ways a word is
near another, each named in :data:`REASONS`:

- ``edit``: at most :func:`edit_budget` insertions, deletions, substitutions or
  transpositions of adjacent letters (Damerau-Levenshtein, optimal string
  alignment), a budget that grows with the word;
- ``prefix``: one word begins the other, the shorter of at least
  :data:`MIN_PREFIX` letters and at least :data:`MIN_PREFIX_SHARE` of the longer
  (a short name: ``Kath`` / ``Katherine``, ``Theo`` / ``Theodore``; a clipped
  word: ``physio`` / ``physiotherapist``);
- ``ngram``: character trigrams of the padded words with a Dice similarity of
  at least :data:`MIN_NGRAM` (a long name with more errors than the budget).

A *name* (the query wrote it capitalised) is where spellings vary most, so it
gets all three from :data:`MIN_WORD` letters on, an edit for every three
letters and a half (1 from 4 letters, 2 from 7). Other words are read as
written: short common words are one edit from many others (``cook`` / ``book``),
so only words of :data:`MIN_PLAIN_WORD` letters or more get variants, one edit
(two from 10 letters) or a prefix of at least :data:`MIN_PLAIN_PREFIX` letters,
never trigrams. Stopwords are never variants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .text import STOPWORDS

#: The ways a variant is near a word, in the order they are tried.
REASONS = ("edit", "prefix", "ngram")
#: Shortest name that gets a variant at all (shorter words are too ambiguous).
MIN_WORD = 4
#: Shortest word other than a name that gets a variant.
MIN_PLAIN_WORD = 7
#: Shortest prefix that stands for a longer word other than a name.
MIN_PLAIN_PREFIX = 5
#: Shortest prefix that stands for a longer word (``Kat`` for ``Katherine``: no).
MIN_PREFIX = 4
#: Share of the longer word a prefix must cover.
MIN_PREFIX_SHARE = 0.4
#: Least Dice similarity of character trigrams for the ``ngram`` reason.
MIN_NGRAM = 0.6
#: Most variants a word gets (the nearest first, then the most frequent).
MAX_VARIANTS = 3


@dataclass(frozen=True, slots=True)
class Variant:
    """A word of the vocabulary spelled nearly like the asked word: why, and how
    near (1.0 = the same word)."""

    word: str
    reason: str
    similarity: float


def edit_budget(word: str, *, name: bool = True) -> int:
    """Edits allowed between ``word`` and a variant. A name: 0 under 4 letters, 1
    under 7, then 2. Another word: 0 under 7 letters, 1 under 10, then 2."""
    n = len(word)
    if name:
        return 0 if n < MIN_WORD else 1 if n < 7 else 2
    return 0 if n < MIN_PLAIN_WORD else 1 if n < 10 else 2


def edit_distance(a: str, b: str, bound: int) -> int:
    """Damerau-Levenshtein distance (optimal string alignment) of ``a`` and ``b``,
    or ``bound + 1`` as soon as it exceeds ``bound`` (the cost stays linear in the
    word for a small bound)."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > bound:
            return bound + 1
        prev2, prev = prev, cur
    return min(prev[-1], bound + 1)


def trigrams(word: str) -> set[str]:
    """The character trigrams of ``word`` padded with a space on each side."""
    padded = f" {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def ngram_similarity(a: str, b: str) -> float:
    """Dice similarity of the padded trigrams of ``a`` and ``b`` (0 to 1)."""
    ta, tb = trigrams(a), trigrams(b)
    return 2 * len(ta & tb) / (len(ta) + len(tb)) if ta and tb else 0.0


def _prefix(a: str, b: str, least: int) -> bool:
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    share = len(short) >= MIN_PREFIX_SHARE * len(long_)
    return len(short) >= least and share and long_.startswith(short)


def nearness(word: str, other: str, *, name: bool = True) -> Variant | None:
    """How ``other`` is near ``word`` (both lower-case), or ``None`` if it is not
    (or is the same word, or a stopword); ``name``: ``word`` is a name."""
    if other == word or other in STOPWORDS or len(word) < MIN_WORD:
        return None
    if not (word.isalpha() and other.isalpha()):  # numbers and codes need exact matches
        return None
    budget = edit_budget(word, name=name)
    if budget and len(other) >= MIN_WORD - 1:
        distance = edit_distance(word, other, budget)
        if distance <= budget:
            return Variant(other, "edit", 1.0 - distance / max(len(word), len(other)))
    if _prefix(word, other, MIN_PREFIX if name else MIN_PLAIN_PREFIX):
        return Variant(other, "prefix", min(len(word), len(other)) / max(len(word), len(other)))
    if name and len(other) >= MIN_WORD:
        similarity = ngram_similarity(word, other)
        if similarity >= MIN_NGRAM:
            return Variant(other, "ngram", similarity)
    return None


def variants(
    word: str,
    vocabulary: Iterable[str] | Mapping[str, int],
    *,
    name: bool = True,
    limit: int = MAX_VARIANTS,
) -> list[Variant]:
    """The words of ``vocabulary`` spelled nearly like ``word`` (a name unless
    ``name`` is false), the nearest first (ties: the more frequent, when
    ``vocabulary`` maps words to document frequencies; then alphabetical); at
    most ``limit``."""
    word = word.lower()
    freqs = vocabulary if isinstance(vocabulary, Mapping) else dict.fromkeys(vocabulary, 0)
    found = [v for other in freqs if (v := nearness(word, other, name=name)) is not None]
    found.sort(key=lambda v: (-v.similarity, -freqs[v.word], v.word))
    return found[:limit]
