"""Reference retrievers for benchmarks, independent of the store and the pipeline:
BM25 (optionally Porter-stemmed, English stopwords dropped), dense cosine over
given vectors, and plain reciprocal rank fusion of ranked lists.

Used by the LoCoMo and LongMemEval benchmarks (``bench/locomo.py``,
``bench/longmemeval.py``) so that every figure of memchentic stands next to what
a textbook method gets on the same data, in the same run.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from memchentic.text import STOPWORDS

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric runs (as SQLite's unicode61 tokenizer splits)."""
    return _WORD.findall(text.lower())


class PorterStemmer:
    """Porter stems from SQLite FTS5's ``porter`` tokenizer (no extra package),
    cached per word."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:")
        self._conn.execute("CREATE VIRTUAL TABLE w USING fts5(x, tokenize='porter unicode61')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance')")
        self._cache: dict[str, str] = {}

    def stem_all(self, words: Iterable[str]) -> None:
        todo = sorted({w for w in words if w not in self._cache})
        if not todo:
            return
        with self._conn:
            self._conn.executemany(
                "INSERT INTO w(rowid, x) VALUES (?, ?)", list(enumerate(todo, start=1))
            )
            for doc, term in self._conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                self._cache.setdefault(todo[doc - 1], term)
            self._conn.execute("DELETE FROM w")
        for word in todo:  # a word the tokenizer splits or drops stays as it is
            self._cache.setdefault(word, word)

    def stem(self, word: str) -> str:
        if word not in self._cache:
            self.stem_all([word])
        return self._cache[word]

    def close(self) -> None:
        self._conn.close()


class BM25:
    """Okapi BM25 (k1 = 1.2, b = 0.75, the usual IDF ``ln(1 + (N - df + .5)/(df + .5))``)
    over a fixed list of documents; English stopwords dropped; optional stemming."""

    def __init__(
        self,
        docs: Sequence[str],
        *,
        stem: bool = False,
        k1: float = 1.2,
        b: float = 0.75,
        stopwords: frozenset[str] = STOPWORDS,
    ) -> None:
        self.k1, self.b, self.stopwords = k1, b, stopwords
        self._stemmer = PorterStemmer() if stem else None
        toks = [self._terms(d) for d in docs]
        self.n = len(docs)
        self.lengths = np.array([len(t) for t in toks], dtype=np.float64)
        self.avgdl = float(self.lengths.mean()) if self.n else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, terms in enumerate(toks):
            for term, tf in Counter(terms).items():
                self.postings.setdefault(term, []).append((i, tf))

    def _terms(self, text: str) -> list[str]:
        words = [w for w in tokens(text) if w not in self.stopwords]
        if self._stemmer is None:
            return words
        self._stemmer.stem_all(words)
        return [self._stemmer.stem(w) for w in words]

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float64)
        if not self.n:
            return out
        norm = self.k1 * (1 - self.b + self.b * self.lengths / (self.avgdl or 1.0))
        for term in dict.fromkeys(self._terms(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            df = len(posting)
            idf = math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))
            idx = np.fromiter((i for i, _ in posting), dtype=np.int64, count=df)
            tf = np.fromiter((f for _, f in posting), dtype=np.float64, count=df)
            out[idx] += idf * tf * (self.k1 + 1) / (tf + norm[idx])
        return out

    def rank(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents with a score above 0, best first."""
        return top_k(self.scores(query), k, positive_only=True)


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> list[int]:
    """Indices of the ``k`` highest scores, best first (ties: lower index first)."""
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    if positive_only:
        order = order[scores[order] > 0]
    return [int(i) for i in order]


def dense_rank(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` rows with the highest cosine to ``query``, best first."""
    rows = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    q = query / max(float(np.linalg.norm(query)), 1e-12)
    return top_k(rows @ q, k)


def rrf_fuse(lists: Sequence[Sequence[int]], k: int, rrf_k: float = 60.0) -> list[int]:
    """Plain reciprocal rank fusion: sum of ``1 / (rrf_k + rank)`` over the lists."""
    score: dict[int, float] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (rrf_k + rank)
    return [i for i, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


#: The baselines every benchmark runs next to memchentic, in the order printed.
NAMES = ("bm25", "bm25_stem", "dense", "rrf_bm25_stem_dense")


class Suite:
    """The baselines of :data:`NAMES` over one list of documents and their vectors
    (the vectors memchentic stored for the same texts)."""

    def __init__(self, docs: Sequence[str], vectors: np.ndarray) -> None:
        self.plain = BM25(docs)
        self.stemmed = BM25(docs, stem=True)
        self.vectors = vectors

    def rank(self, name: str, query: str, query_vector: np.ndarray, k: int) -> list[int]:
        """Indices of the ``k`` best documents for ``query`` by baseline ``name``."""
        if name == "bm25":
            return self.plain.rank(query, k)
        if name == "bm25_stem":
            return self.stemmed.rank(query, k)
        if name == "dense":
            return dense_rank(self.vectors, query_vector, k)
        if name == "rrf_bm25_stem_dense":
            deep = [self.stemmed.rank(query, 3 * k), dense_rank(self.vectors, query_vector, 3 * k)]
            return rrf_fuse(deep, k)
        raise ValueError(f"no baseline {name!r}; known: {', '.join(NAMES)}")
