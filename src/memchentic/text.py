"""Text as every layer sees it: the words of a query as every keyword backend sees
them (plain words, never syntax), a path as a folder prefix, and the keyword
weight of a word (IDF). The store and retrieval both build on these, so they
live below both."""

from __future__ import annotations

import functools
import math
import re
import threading
from typing import Any

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


#: The languages a store's keyword index can stem in (``KEYWORD_LANGUAGE``): the
#: snowball stemmers of both PostgreSQL and the ``snowballstemmer`` package.
KEYWORD_LANGUAGES = (
    "danish", "dutch", "english", "finnish", "french", "german", "hungarian", "italian",
    "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "turkish",
)  # fmt: skip

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


def keyword_text(text: str, language: str = "english") -> str:
    """``text`` as the keyword index reads it (and a query is read): each run of CJK
    characters becomes its overlapping character bigrams (黄山旅游 -> 黄山 山旅 旅游,
    as Lucene's CJK analyzer does; a lone character stays itself), so a word of
    two characters matches inside a sentence that has no spaces. In a store of
    another ``language`` than English each other word becomes its snowball stem
    in that language, lower-cased (the index's own English stemmer then reads
    the stems, on both sides alike). English text without CJK is returned
    unchanged (the same string), so English stores index as before."""
    if not text:
        return text
    if CJK_RUN.search(text) is not None:
        text = CJK_RUN.sub(_bigrams, text)
    if language != "english":
        text = _WORD.sub(lambda m: _stem(m.group(0), language), text)
    return text


#: Most words a keyword query keeps (the longest ones win).
MAX_QUERY_WORDS = 32


def query_words(
    text: str, *, max_words: int = MAX_QUERY_WORDS, language: str = "english"
) -> list[str]:
    """Lower-cased words of ``text`` in order, duplicates and stopwords removed
    (stopwords kept when nothing else is left); at most ``max_words``. CJK runs
    give their bigrams, and in another ``language`` than English words their
    stems (:func:`keyword_text`), as the keyword index holds them."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(keyword_text(text, language).lower()):
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
