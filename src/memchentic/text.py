"""Text as every layer sees it: the words of a query as every keyword backend sees
them (plain words, never syntax), a path as a folder prefix, and the keyword
weight of a word (IDF). The store and retrieval both build on these, so they
live below both."""

from __future__ import annotations

import math
import re

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

#: Most words a keyword query keeps (the longest ones win).
MAX_QUERY_WORDS = 32


def query_words(text: str, *, max_words: int = MAX_QUERY_WORDS) -> list[str]:
    """Lower-cased words of ``text`` in order, duplicates and stopwords removed
    (stopwords kept when nothing else is left); at most ``max_words``."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
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
