"""Text as every layer sees it: the words of a query as every keyword backend sees
them (plain words, never syntax), the keyword rules for text as people write it,
near spellings of a word, a path as a folder prefix, and the keyword weight of
a word (IDF). The store and retrieval both build on these, so they
live below both."""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# the languages a store's keyword index can stem in (KEYWORD_LANGUAGE), re-exported
from .choices import KEYWORD_LANGUAGES as KEYWORD_LANGUAGES

#: English stopwords (the usual short list): dropped from keyword queries unless
#: the query holds nothing else.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "don",
        "doesn",
        "didn",
        "isn",
        "wasn",
        "aren",
        "weren",
        "won",
        "wouldn",
        "shouldn",
        "couldn",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
    ]
)

_WORD = re.compile(r"\w+", re.UNICODE)

#: A run of CJK characters (Han, Hiragana, Katakana, Hangul, and their
#: compatibility and half-width forms): text with no spaces between its words.
CJK_RUN = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0002fa1f]+"
)



_STEMMERS: dict[str, Any] = {}
_STEM_LOCK = threading.Lock()


@functools.lru_cache(maxsize=200_000)
def _stem(word: str, language: str) -> str:
    """``word``'s snowball stem in ``language`` (lower-cased); CJK bigrams unchanged."""
    lower = word.lower()
    if CJK_RUN.search(lower):
        return lower
    with _STEM_LOCK:  # a stemmer object keeps state while it stems
        stemmer = _STEMMERS.get(language)
        if stemmer is None:
            import snowballstemmer

            stemmer = _STEMMERS[language] = snowballstemmer.stemmer(language)
        return str(stemmer.stemWord(lower))


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


#: The keyword stage's rules for text as people write it (issue 33, item 4), each
#: named and applied in this order on both sides (what the index holds and what a
#: query asks), each adding words beside a token and keeping the token itself, so
#: text indexed without a rule still matches a query read with it:
#:
#: - ``identifiers``: a camelCase or PascalCase token of two words of three
#:   characters or more (``loadUserProfile``, ``XMLHttpRequest``; not ``LeBron``)
#:   is followed by its words (``load User Profile``); the
#:   tokenizers of both backends already split snake_case, SCREAMING_CASE,
#:   kebab-case and dotted paths at ``_ - .``;
#: - ``elongations``: a word with a letter said three times or more (``sooo``,
#:   ``yesss``, ``goood``) is followed by its forms with each such run once and
#:   twice (``so soo``, ``yes yess``, ``god good``): no word list says which is meant,
#:   and the form nobody writes matches nothing.
KEYWORD_RULES = ("identifiers", "elongations")

#: The rules :func:`keyword_text` applies by default: ``identifiers`` (it wins on
#: the technical set and changes nothing on LoCoMo or LongMemEval; figures in
#: docs/retrieval-quality.md). A store's keyword index must be read with the rules
#: it was written with (SQLite's triggers delete a memory's entries by analysing
#: its text again; other entries than were written leave the FTS5 index
#: malformed), so a store records its rules as it records its
#: ``keyword_language`` and passes them to every call (``store.keywords
#: .bind_rules``): a new store takes these, an existing one adopts them through
#: the migration ``m013_keyword_rules``, which rebuilds its index. Benchmarks set
#: it before any store is opened (``bench/keyword_rules.py``).
ACTIVE_KEYWORD_RULES: frozenset[str] = frozenset({"identifiers"})

#: A token (ASCII letters, digits, ``_``) with a lower-case letter or digit
#: before a capital, or a capital run before a capitalised word: camelCase,
#: PascalCase, XMLHttpRequest.
_CAMEL = re.compile(
    r"(?<![A-Za-z0-9_])[A-Za-z0-9_]*(?:[a-z0-9][A-Z]|[A-Z]{2}[a-z])[A-Za-z0-9_]*(?![A-Za-z0-9_])"
)
#: Each ASCII lower-case letter as ``a``, digit as ``d``, capital as ``A`` (the
#: rest kept): where :data:`_CAMEL` can match is where this spelling of a text
#: holds ``aA``, ``dA`` or ``AAa``, found by ``str.find`` at a fraction of a
#: regex scan's cost.
_CASE_SHAPE = str.maketrans(
    {**dict.fromkeys("abcdefghijklmnopqrstuvwxyz", "a"), **dict.fromkeys("0123456789", "d"),
     **dict.fromkeys("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "A")}
)  # fmt: skip
#: The words of an identifier: a capital run before a capitalised word, a
#: capitalised or lower-case word, a capital run, a number.
_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: The plural of an acronym: APIs, URLs.
_ACRONYMS = re.compile(r"[A-Z]{2,}s")
#: A word (letters only) with one letter three times or more in a row.
_ELONGATED = re.compile(r"\b[^\W\d_]*([^\W\d_])\1\1[^\W\d_]*\b")
_RUN = re.compile(r"([^\W\d_])\1{2,}")


def identifier_words(token: str) -> list[str]:
    """The words of a camelCase or PascalCase ``token`` (``loadUserProfile`` ->
    ``load User Profile``; ``XMLHttpRequest`` -> ``XML Http Request``); ``[]`` for
    a token that is not one: fewer than two words of three characters or more
    (``5K``, ``GoT``; a name behind a short particle: ``LeBron``, ``McDonald``), a
    name that starts with one lower-case letter (``iPhone``, ``eBay``), the plural
    of an acronym (``APIs``, ``DIYs``)."""
    if not _CAMEL.fullmatch(token) or _ACRONYMS.fullmatch(token):
        return []
    words = [p for part in token.split("_") for p in _IDENTIFIER_PART.findall(part)]
    if sum(len(w) > 2 for w in words) < 2 or (len(words[0]) == 1 and words[0].islower()):
        return []
    return words


def elongation_forms(word: str) -> list[str]:
    """The forms of an elongated ``word`` with each letter said three times or more
    once and twice (``sooo`` -> ``so soo``; ``goood`` -> ``god good``); ``[]`` when
    no letter is (or the word is that letter alone: ``zzz``, ``III``)."""
    if not _RUN.search(word) or _RUN.fullmatch(word):
        return []
    return list(dict.fromkeys([_RUN.sub(r"\1", word), _RUN.sub(r"\1\1", word)]))


_IDENTIFIER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _camel_tokens(text: str) -> list[tuple[int, int]]:
    """Where :data:`_CAMEL` matches in ``text`` (start, end), found from the cheap
    :data:`_CASE_SHAPE` scan and widened to the token around each hint: the same
    spans as ``_CAMEL.finditer``, without a regex pass over every character."""
    shape = text.translate(_CASE_SHAPE)
    hints = []
    for pattern in ("aA", "dA", "AAa"):
        at = shape.find(pattern)
        while at != -1:
            hints.append(at)
            at = shape.find(pattern, at + 1)
    spans: list[tuple[int, int]] = []
    end = 0
    for start in sorted(hints):
        if start < end:
            continue  # another hint of the token already taken
        end = start
        while start > 0 and text[start - 1] in _IDENTIFIER_CHARS:
            start -= 1
        while end < len(text) and text[end] in _IDENTIFIER_CHARS:
            end += 1
        spans.append((start, end))
    return spans


def _with_identifier_words(text: str) -> str:
    """``text`` with the words of each camelCase or PascalCase token after it."""
    parts: list[str] = []
    last = 0
    for start, end in _camel_tokens(text):
        token = text[start:end]
        if words := identifier_words(token):
            parts += [text[last:end], " ", " ".join(words)]
            last = end
    return "".join([*parts, text[last:]]) if parts else text


def _elongations(match: re.Match[str]) -> str:
    word = match.group(0)
    return " ".join([word, *elongation_forms(word)])


def keyword_rule_words(
    text: str, rules: frozenset[str] | None = None
) -> list[tuple[str, str, list[str]]]:
    """What each of ``rules`` (default :data:`ACTIVE_KEYWORD_RULES`) adds to
    ``text``'s keywords: ``(rule, token, words added)`` in order of the text (the
    trace of the rules)."""
    rules = ACTIVE_KEYWORD_RULES if rules is None else rules
    out: list[tuple[str, str, list[str]]] = []
    if "identifiers" in rules:
        for start, end in _camel_tokens(text):
            if words := identifier_words(text[start:end]):
                out.append(("identifiers", text[start:end], words))
    if "elongations" in rules:
        out += [("elongations", m.group(0), elongation_forms(m.group(0)))
                for m in _ELONGATED.finditer(text) if elongation_forms(m.group(0))]  # fmt: skip
    return out


def keyword_text(text: str, language: str = "english", rules: frozenset[str] | None = None) -> str:
    """``text`` as the keyword index reads it (and a query is read): the words the
    active :data:`KEYWORD_RULES` add follow their tokens (``loadUserProfile`` ->
    ``loadUserProfile load User Profile``, ``sooo`` -> ``sooo so soo``); each run
    of CJK characters becomes its overlapping character bigrams (黄山旅游 -> 黄山 山旅
    旅游, as Lucene's CJK analyzer does; a lone character stays itself), so a word
    of two characters matches inside a sentence that has no spaces. In a store of
    another ``language`` than English each other word becomes its snowball stem
    in that language, lower-cased (the index's own English stemmer then reads
    the stems, on both sides alike). Text no rule applies to, without CJK, is
    returned unchanged (the same string) in English. ``rules`` replaces the
    default rules (:data:`ACTIVE_KEYWORD_RULES`): a store passes the rules its
    index was written with."""
    if not text:
        return text
    rules = ACTIVE_KEYWORD_RULES if rules is None else rules
    if "identifiers" in rules:
        text = _with_identifier_words(text)  # the same string when none splits (iPhone)
    if "elongations" in rules and _RUN.search(text) is not None:
        plain = _ELONGATED.sub(_elongations, text)
        text = text if plain == text else plain  # zzz, www: the same string
    if CJK_RUN.search(text) is not None:
        text = CJK_RUN.sub(_bigrams, text)
    if language != "english":
        text = _WORD.sub(lambda m: _stem(m.group(0), language), text)
    return text


#: Most words a keyword query keeps (the longest ones win).
MAX_QUERY_WORDS = 32


def query_words(
    text: str,
    *,
    max_words: int = MAX_QUERY_WORDS,
    language: str = "english",
    rules: frozenset[str] | None = None,
) -> list[str]:
    """Lower-cased words of ``text`` in order, duplicates and stopwords removed
    (stopwords kept when nothing else is left); at most ``max_words``. CJK runs
    give their bigrams, in another ``language`` than English words their stems,
    and the keyword ``rules`` their words (:func:`keyword_text`), as the keyword
    index holds them."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(keyword_text(text, language, rules).lower()):
        word = match.group(0).strip("_")
        if word:
            seen.setdefault(word, None)
    words = list(seen)
    content = [w for w in words if w not in STOPWORDS]
    chosen = content or words
    if len(chosen) > max_words:
        keep = set(sorted(chosen, key=len, reverse=True)[:max_words])
        chosen = [w for w in chosen if w in keep]
    return chosen


def fts_phrase(word: str) -> str:
    """A word as an FTS5 string literal: quoted, so nothing in it is syntax."""
    return '"' + word.replace('"', '""') + '"'


def idf(doc_freq: int, doc_count: int) -> float:
    """BM25-style inverse document frequency, always > 0."""
    return math.log(1.0 + (doc_count - doc_freq + 0.5) / (doc_freq + 0.5))


def folder(path: str) -> str:
    """``path`` as a folder prefix: with one trailing ``/`` (``""`` stays ``""``)."""
    return path if not path or path.endswith("/") else path + "/"


# --- near spellings: the keyword stage's fuzzy path -----------------------------
# Near spellings of a word, for the keyword stage's fuzzy path (issue 33, item 4):
# a rare query word that no memory holds (a name spelled another way: Mohammed /
# Muhammad, Kathryn / Katherine, Theo / Theodore; a word a memory misspelled) is
# matched through the words of the store's vocabulary spelled nearly like it.
#
# Pure functions over a word and a vocabulary of words (a store would give the
# terms of its keyword index and their document frequencies); the store's lookup
# and the pipeline's use of the variants are hooks elsewhere. Three ways a word is
# near another, each named in :data:`FUZZY_REASONS`:
#
# - ``edit``: at most :func:`edit_budget` insertions, deletions, substitutions or
#   transpositions of adjacent letters (Damerau-Levenshtein, optimal string
#   alignment), a budget that grows with the word;
# - ``prefix``: one word begins the other, the shorter of at least
#   :data:`FUZZY_MIN_PREFIX` letters and at least :data:`FUZZY_MIN_PREFIX_SHARE` of the longer
#   (a short name: ``Kath`` / ``Katherine``, ``Theo`` / ``Theodore``; a clipped
#   word: ``physio`` / ``physiotherapist``);
# - ``ngram``: character trigrams of the padded words with a Dice similarity of
#   at least :data:`FUZZY_MIN_NGRAM` (a long name with more errors than the budget).
#
# A *name* (the query wrote it capitalised) is where spellings vary most, so it
# gets all three from :data:`FUZZY_MIN_WORD` letters on, an edit for every three
# letters and a half (1 from 4 letters, 2 from 7). Other words are read as
# written: short common words are one edit from many others (``cook`` / ``book``),
# so only words of :data:`FUZZY_MIN_PLAIN_WORD` letters or more get variants, one edit
# (two from 10 letters) or a prefix of at least :data:`FUZZY_MIN_PLAIN_PREFIX` letters,
# never trigrams. Stopwords are never variants.

#: The ways a variant is near a word, in the order they are tried.
FUZZY_REASONS = ("edit", "prefix", "ngram")
#: Shortest name that gets a variant at all (shorter words are too ambiguous).
FUZZY_MIN_WORD = 4
#: Shortest word other than a name that gets a variant.
FUZZY_MIN_PLAIN_WORD = 7
#: Shortest prefix that stands for a longer word other than a name.
FUZZY_MIN_PLAIN_PREFIX = 5
#: Shortest prefix that stands for a longer word (``Kat`` for ``Katherine``: no).
FUZZY_MIN_PREFIX = 4
#: Share of the longer word a prefix must cover.
FUZZY_MIN_PREFIX_SHARE = 0.4
#: Least Dice similarity of character trigrams for the ``ngram`` reason.
FUZZY_MIN_NGRAM = 0.6
#: Most variants a word gets (the nearest first, then the most frequent).
FUZZY_MAX_VARIANTS = 3


@dataclass(frozen=True, slots=True)
class NearSpelling:
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
        return 0 if n < FUZZY_MIN_WORD else 1 if n < 7 else 2
    return 0 if n < FUZZY_MIN_PLAIN_WORD else 1 if n < 10 else 2


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


def _is_prefix(a: str, b: str, least: int) -> bool:
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    share = len(short) >= FUZZY_MIN_PREFIX_SHARE * len(long_)
    return len(short) >= least and share and long_.startswith(short)


def nearness(word: str, other: str, *, name: bool = True) -> NearSpelling | None:
    """How ``other`` is near ``word`` (both lower-case), or ``None`` if it is not
    (or is the same word, or a stopword); ``name``: ``word`` is a name."""
    if other == word or other in STOPWORDS or len(word) < FUZZY_MIN_WORD:
        return None
    if not (word.isalpha() and other.isalpha()):  # numbers and codes need exact matches
        return None
    budget = edit_budget(word, name=name)
    if budget and len(other) >= FUZZY_MIN_WORD - 1:
        distance = edit_distance(word, other, budget)
        if distance <= budget:
            return NearSpelling(other, "edit", 1.0 - distance / max(len(word), len(other)))
    if _is_prefix(word, other, FUZZY_MIN_PREFIX if name else FUZZY_MIN_PLAIN_PREFIX):
        return NearSpelling(
            other, "prefix", min(len(word), len(other)) / max(len(word), len(other))
        )
    if name and len(other) >= FUZZY_MIN_WORD:
        similarity = ngram_similarity(word, other)
        if similarity >= FUZZY_MIN_NGRAM:
            return NearSpelling(other, "ngram", similarity)
    return None


def near_spellings(
    word: str,
    vocabulary: Iterable[str] | Mapping[str, int],
    *,
    name: bool = True,
    limit: int = FUZZY_MAX_VARIANTS,
) -> list[NearSpelling]:
    """The words of ``vocabulary`` spelled nearly like ``word`` (a name unless
    ``name`` is false), the nearest first (ties: the more frequent, when
    ``vocabulary`` maps words to document frequencies; then alphabetical); at
    most ``limit``."""
    word = word.lower()
    freqs = vocabulary if isinstance(vocabulary, Mapping) else dict.fromkeys(vocabulary, 0)
    found = [v for other in freqs if (v := nearness(word, other, name=name)) is not None]
    found.sort(key=lambda v: (-v.similarity, -freqs[v.word], v.word))
    return found[:limit]
