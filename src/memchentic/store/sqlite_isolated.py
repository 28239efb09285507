"""Candidates for untrusted callers (``MemoryFilter.isolated``) in the SQLite store.

FTS5's ``bm25()`` takes its word statistics from the whole index, so a score,
and the order it gives, would tell a caller something about memories in
namespaces it cannot read. For such callers the keyword stage ranks with BM25
statistics computed from the visible rows only, and the vector stage scans the
visible rows exactly whenever there are at most ``exact_vector_rows`` of them
(the approximate index is shared by every namespace).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..retrieval.text import fts_phrase, query_words
from .base import MemoryFilter
from .sqlite_rows import where

#: BM25 constants (the same as FTS5's bm25()).
K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+", re.UNICODE)


class SQLiteIsolated:
    """Mixin for :class:`~memchentic.store.sqlite.SQLiteStore`."""

    common_window: int
    exact_vector_rows: int
    title_weight: float

    @property
    def conn(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

    def _stems(self, words: Sequence[str]) -> list[tuple[str, str]]:  # provided by SQLiteStore
        raise NotImplementedError

    def _keyword_isolated(self, query: str, k: int, flt: MemoryFilter) -> list[tuple[str, float]]:
        """BM25 over the visible rows only: document frequencies, document count and
        average length all come from rows passing ``flt``. At most ``common_window``
        matching rows (the newest) are ranked."""
        pairs = self._stems(query_words(query))
        if not pairs or k <= 0:
            return []
        cond, params = where(flt)
        match = " OR ".join(fts_phrase(w) for w in dict.fromkeys(w for w, _ in pairs))
        rows = self.conn.execute(
            "SELECT m.rowid, m.id, COALESCE(m.title, ''), m.content, m.tags "
            "FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
            f"WHERE memories_fts MATCH ? AND {cond} ORDER BY f.rowid DESC LIMIT ?",
            (match, *params, self.common_window),
        ).fetchall()
        if not rows:
            return []
        total = int(self.conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {cond}", params)
                    .fetchone()[0])  # fmt: skip
        docs = self._doc_terms([(title, content, tags) for _, _, title, content, tags in rows])
        terms = {t for _, t in pairs}
        freqs = Counter(t for doc, _ in docs for t in terms if t in doc)
        avg_len = sum(length for _, length in docs) / len(docs) or 1.0
        idf = {
            t: math.log(1.0 + (total - freqs[t] + 0.5) / (freqs[t] + 0.5)) for t in terms
        }
        scored = []
        for (rowid, memory_id, *_), (tf, length) in zip(rows, docs, strict=True):
            norm = K1 * (1 - B + B * length / avg_len)
            score = sum(idf[t] * tf[t] * (K1 + 1) / (tf[t] + norm) for t in terms if t in tf)
            scored.append((score, rowid, memory_id))
        scored.sort(key=lambda item: (-item[0], -item[1]))
        return [(memory_id, score) for score, _, memory_id in scored[:k]]

    def _doc_terms(
        self, rows: Sequence[tuple[str, str, str]]
    ) -> list[tuple[dict[str, float], int]]:
        """Index terms of each row with their weighted counts (title weighted), and
        each row's length in words; one tokenizer pass for all the rows' words."""
        split = [[_WORD.findall(text.lower()) for text in row] for row in rows]
        vocabulary = sorted({w for fields in split for words in fields for w in words})
        stems: dict[str, str] = {}
        for start in range(0, len(vocabulary), 5000):
            stems.update(self._stems(vocabulary[start : start + 5000]))
        weights = (self.title_weight, 1.0, 1.0)
        out = []
        for fields in split:
            counts: dict[str, float] = defaultdict(float)
            for words, weight in zip(fields, weights, strict=True):
                for word in words:
                    if word in stems:
                        counts[stems[word]] += weight
            out.append((counts, sum(len(words) for words in fields)))
        return out

    def _vector_isolated(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[tuple[str, float]] | None:
        """Exact neighbours among the visible rows, or None when there are too many
        of them to scan (the caller then uses the shared index with its filter)."""
        cond, params = where(flt)
        rows = self.conn.execute(
            f"SELECT m.id, v.embedding FROM memories m JOIN vectors v ON v.rowid = m.rowid "
            f"WHERE {cond} LIMIT ?",
            (*params, self.exact_vector_rows + 1),
        ).fetchall()
        if len(rows) > self.exact_vector_rows:
            return None
        if not rows or k <= 0:
            return []
        ids: list[Any] = [r[0] for r in rows]
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        matrix = matrix.reshape(len(rows), -1)
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
        norms[norms == 0] = 1.0
        sims = (matrix @ query) / norms
        order = sorted(range(len(ids)), key=lambda i: (-float(sims[i]), ids[i]))[:k]
        return [(ids[i], float(sims[i])) for i in order]
