"""The keyword stage's fuzzy path (issue 33, item 4), simulated bench-side: what
it would gain before the store and the pipeline get their hooks.

A query word that no memory's keywords hold (its index term has document
frequency 0: a typo, a name spelled another way) gets the terms of the store's
keyword vocabulary spelled nearly like its own term
(:func:`memchentic.text.near_spellings`: a bounded edit distance, a prefix,
character trigrams for names), and the keyword search runs with them as extra
words. Only the keyword stage sees them: the query's vector and the second
stage read the question as asked. :func:`fuzzy_keyword_search` patches the
SQLite store's ``keyword_search`` for the duration of a block (the store's
private ``_stems`` and ``_doc_freqs`` give its terms and their frequencies, and
its ``memories_fts_terms`` table the vocabulary), so any benchmark can run with
it (``bench/keyword_rules.py --fuzzy``, ``bench/own_sets.py --fuzzy``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from memchentic import text
from memchentic.store.sqlite_search import SQLiteSearch


def vocabulary(store: Any) -> dict[str, int]:
    """Every index term of ``store`` and the number of memories holding it."""
    rows = store.conn.execute("SELECT term, doc FROM memories_fts_terms WHERE doc > 0")
    return {str(term): int(doc) for term, doc in rows}


def names(query: str) -> set[str]:
    """The words ``query`` writes capitalised (lower-cased), but its first."""
    found = [m.group(0) for m in re.finditer(r"[^\W\d_]+", query)][1:]
    return {w.lower() for w in found if w[0].isupper()}


def fuzzy_query(store: Any, query: str) -> tuple[str, list[tuple[str, str, str]]]:
    """``query`` with the near terms of its unmatched words appended, and what was
    added: ``(word, term added, reason)``. A word the query capitalises is read as
    a name (:func:`memchentic.text.near_spellings`)."""
    words = [w for w in text.query_words(query) if w not in text.STOPWORDS]
    pairs = store._stems(words)
    freqs = store._doc_freqs(sorted({t for _, t in pairs}))
    missing = [(w, t) for w, t in pairs if not freqs.get(t)]
    if not missing:
        return query, []
    vocab = vocabulary(store)
    named = names(query)
    added = [(w, v.word, v.reason) for w, t in missing
             for v in text.near_spellings(t, vocab, name=w in named)]  # fmt: skip
    extra = list(dict.fromkeys(term for _, term, _ in added))
    return (f"{query} {' '.join(extra)}" if extra else query), added


@contextlib.contextmanager
def fuzzy_keyword_search() -> Iterator[list[tuple[str, str, str]]]:
    """SQLite stores' keyword search with the fuzzy path in the block; yields the
    list of every ``(word, term added, reason)``, for a trace of what it did."""
    plain = SQLiteSearch.keyword_search
    trace: list[tuple[str, str, str]] = []

    def keyword_search(self: Any, query: str, k: int, flt: Any, *args: Any, **kw: Any) -> Any:
        if not flt.isolated:
            query, added = fuzzy_query(self, query)
            trace.extend(added)
        return plain(self, query, k, flt, *args, **kw)

    SQLiteSearch.keyword_search = keyword_search  # type: ignore[method-assign]
    try:
        yield trace
    finally:
        SQLiteSearch.keyword_search = plain  # type: ignore[method-assign]
