"""Candidates for untrusted callers (``MemoryFilter.isolated``) in the SQLite store.

FTS5's ``bm25()`` takes its word statistics from the whole index, so a score,
and the order it gives, would tell a caller something about memories in
namespaces it cannot read. For such callers the keyword stage ranks with BM25
statistics computed from the visible rows only, and the vector stage scans the
visible rows exactly whenever there are at most ``exact_vector_rows`` of them
(the approximate index is shared by every namespace).

Time is visibility too (issue 20, item 17): reading a word's matches in the shared
FTS5 index costs time in proportion to its matches in *every* namespace (about a
microsecond each), so a caller could time how common a word is in memories it
cannot read. A caller who sees at most ``isolated_scan_rows`` memories is answered
without the shared index: its visible rows are read through the namespace index
and matched here (:meth:`SQLiteIsolated._scan_visible`), so the work depends only
on what it may see. Above that, the index is used and the residual is documented
(docs/access.md, "Timing").
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..clock import to_text
from ..text import fts_phrase, keyword_text, query_words
from .base import MemoryFilter
from .isolated_cache import Visible, VisibleState, cache_of
from .keywords import SearchBudgets
from .sqlite_rows import where

#: BM25 constants (the same as FTS5's bm25()).
K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+", re.UNICODE)


class SQLiteIsolated(SearchBudgets):
    """Mixin for :class:`~memchentic.store.sqlite.SQLiteStore`."""

    @property
    def conn(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

    def _stems(  # by SQLiteSearch
        self, words: Sequence[str], *, cached: bool = True
    ) -> list[tuple[str, str]]:
        raise NotImplementedError

    def _keyword_isolated(self, query: str, k: int, flt: MemoryFilter) -> list[tuple[str, float]]:
        """BM25 over the visible rows only: document frequencies, document count and
        average length all come from rows passing ``flt``. At most ``common_window``
        matching rows (the newest) are ranked."""
        # The vector stage of the same search may have read the visible rows (asked
        # first: stemming new words writes to a temporary table).
        state = self._visible_state(flt)
        mark = None
        if state is not None:
            with state.lock:  # marks read under the lock only grow
                mark = self._memory_mark()
                state.catch_up_rows(mark, self._logged_rows)
        counted = None if state is None or mark is None else self._counted(state, flt, mark)
        pairs = self._stems(
            query_words(query, language=self.keyword_language, rules=self.keyword_rules),
            cached=False,  # (no word another caller searched makes this one faster)
        )
        if not pairs or k <= 0:
            return []
        cond, params = where(flt)
        # How many rows the caller sees decides the way (counted through the namespace
        # index, as the scan reads them): the scan's own rows when few, the index else.
        visible = counted if counted is not None else self._visible_count(flt)
        scanned = None
        if visible is not None and visible <= self.isolated_scan_rows:
            if state is not None and mark is not None:
                by_log = self._scan_by_log(state, pairs, flt, mark, k)
                if by_log is not None:
                    return by_log
            scanned = self._scan_visible(pairs, flt)
        if scanned is not None:
            rows, total = scanned
        elif state is not None and visible is not None:
            matched = self._matched_by_log(state, pairs, flt)
            if not matched:
                return []
            return _bm25(pairs, [(key, memory_id) for key, memory_id, _ in matched],
                         [doc for _, _, doc in matched], visible, k)  # fmt: skip
        else:
            match = " OR ".join(fts_phrase(w) for w in dict.fromkeys(w for w, _ in pairs))
            rows = self.conn.execute(
                "SELECT m.rowid, m.id, COALESCE(m.title, ''), m.content, m.tags "
                "FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
                f"WHERE memories_fts MATCH ? AND {cond} ORDER BY f.rowid DESC LIMIT ?",
                (match, *params, self.common_window),
            ).fetchall()
            self.keyword_index_searches += 1
            total = (
                visible if visible is not None else int(self.conn.execute(
                    f"SELECT COUNT(*) FROM memories m WHERE {cond}", params).fetchone()[0])
            )  # fmt: skip
        if not rows:
            return []
        docs = self._documents(rows, flt)
        return _bm25(pairs, [(row[0], row[1]) for row in rows], docs, total, k)

    def _matched_by_log(
        self, state: VisibleState, pairs: Sequence[tuple[str, str]], flt: MemoryFilter
    ) -> list[tuple[int, str, tuple[dict[str, float], int]]]:
        """The newest ``common_window`` visible rows matching a query word through the
        shared index, newest first, each ``(rowid, id, document)``: one statement
        reads their keys and ids (not their text); each row's document
        (:meth:`_doc_terms`) is the state's while the memory log names no change of
        the row since it was made (:meth:`VisibleState.catch_up_rows`, done by the
        caller), else made from its text, read with the filter."""
        cond, params = where(flt)
        match = " OR ".join(fts_phrase(w) for w in dict.fromkeys(w for w, _ in pairs))
        keys_json, ids_json = self.conn.execute(
            "SELECT json_group_array(k), json_group_array(i) FROM ("
            "SELECT m.rowid AS k, m.id AS i FROM memories_fts f "
            "JOIN memories m ON m.rowid = f.rowid "
            f"WHERE memories_fts MATCH ? AND {cond} ORDER BY f.rowid DESC LIMIT ?)",
            (match, *params, self.common_window),
        ).fetchone()  # one step: a row at a time would hand the interpreter's lock over
        self.keyword_index_searches += 1
        keys: list[int] = json.loads(keys_json)
        if not keys:
            return []
        ids: list[str] = json.loads(ids_json)
        docs = self._by_log(state, "documents", keys, flt, self._doc_terms)
        # (a row changed or moved out between the two reads is left out, as if the
        # search had read it a moment later)
        return [
            (key, memory_id, doc)
            for key, memory_id, doc in zip(keys, ids, docs, strict=True)
            if doc is not None
        ]

    def _by_log(
        self,
        state: VisibleState,
        kind: str,
        keys: Sequence[int],
        flt: MemoryFilter,
        analyse: Callable[[Sequence[tuple[str, str, str]]], list[Any]],
    ) -> list[Any]:
        """Each of ``keys``' analysis of this ``kind`` (``analyse`` of its title,
        content and tags): the state's while the memory log names no change of the
        row since it was made (:meth:`VisibleState.catch_up_rows`, done by the
        caller), else made from the text, read with the filter (None for a row no
        longer there)."""
        basis = (self.keyword_language, self.keyword_rules, self.title_weight)
        with state.lock:
            out, missing = state.documents(keys, basis, kind)
            mark = state.logged_at
        if not missing or mark is None:
            return out
        cond, params = where(flt)
        texts = {
            row[0]: tuple(row[1:])
            for start in range(0, len(missing), 500)
            for row in self.conn.execute(
                "SELECT m.rowid, COALESCE(m.title, ''), m.content, m.tags FROM memories m "
                f"WHERE m.rowid IN ({', '.join('?' * len(missing[start : start + 500]))}) "
                f"AND {cond}",
                (*missing[start : start + 500], *params),
            ).fetchall()
        }
        found = [key for key in missing if key in texts]
        # (a row whose text is unchanged, as after a search touched it, is not analysed
        # again: the analyses kept with their text answer)
        again = state.analysed(kind, [(key, texts[key]) for key in found], basis, analyse,
                               self.isolated_cache_rows)  # fmt: skip
        made = dict(zip(found, again, strict=True))
        state.keep_documents(mark, basis, list(made.items()), self.isolated_cache_rows, kind)
        return [value if value is not None else made.get(key)
                for key, value in zip(keys, out, strict=True)]  # fmt: skip

    def _scan_by_log(
        self,
        state: VisibleState,
        pairs: Sequence[tuple[str, str]],
        flt: MemoryFilter,
        mark: tuple[str | None, int],
        k: int,
    ) -> list[tuple[str, float]] | None:
        """:meth:`_scan_visible` and its BM25 from what the state keeps: the rows the
        filter passes as read at ``mark`` (:meth:`_visible_at`), each row's words and
        document kept by log (:meth:`_by_log`); None when the state holds no rows
        of the filter at ``mark``."""
        now = None if flt.include_expired or flt.now is None else to_text(flt.now)
        if flt.written_by is not None:
            return None
        visible = state.visible(replace(flt, now=None), mark, now)
        if visible is None:
            return None
        self.keyword_rows_scanned += len(visible.keys)
        terms = self._by_log(state, "terms", visible.keys, flt, self._terms_of)
        present = [
            (key, memory_id, t)
            for key, memory_id, t in zip(visible.keys, visible.ids, terms, strict=True)
            if t is not None
        ]
        matching = _matching(pairs, [t for _, _, t in present])
        rows = sorted(((present[i][0], present[i][1]) for i in matching), key=lambda r: -r[0])
        rows = rows[: self.common_window]
        if not rows:
            return []
        docs = self._by_log(state, "documents", [key for key, _ in rows], flt, self._doc_terms)
        kept = [(row, doc) for row, doc in zip(rows, docs, strict=True) if doc is not None]
        if not kept:
            return []
        return _bm25(pairs, [row for row, _ in kept], [doc for _, doc in kept],
                     len(visible.keys), k)  # fmt: skip

    def _memory_mark(self) -> tuple[str | None, int]:
        """The store's ``index_epoch`` and the memory log's position: what moves with
        every write of a memory, by any connection or process (and with a restore)."""
        epoch, seq = self.conn.execute(_MEMORY_POSITION).fetchone()
        return (None if epoch is None else str(epoch)), int(seq or 0)

    def _logged_rows(self, after: int, upto: int) -> list[int] | None:
        """Keys of the memories logged as changed in ``(after, upto]``; None when the
        log no longer holds every entry of that range (it keeps its newest)."""
        keys_json, count, first = self.conn.execute(
            "SELECT json_group_array(key), count(*), min(seq) FROM memory_log "
            "WHERE seq > ? AND seq <= ?",
            (after, upto),
        ).fetchone()
        if count != upto - after or (count and first != after + 1):
            return None
        keys: list[int] = json.loads(keys_json)
        return keys

    def _visible(self, state: VisibleState, flt: MemoryFilter, cap: int) -> Visible | None:
        """The keys and ids of the rows passing ``flt``, in the order its statement
        reads them (through the namespace index); None when more than ``cap`` do.

        Kept by the state of the caller's namespaces while no memory was written
        since, by anyone (the memory log's position and the store's epoch, read
        first), and the clock has not reached the earliest expiry among the rows;
        else read by one statement (one step: the keys and ids as JSON arrays)."""
        mark = self._memory_mark()
        return self._visible_at(state, flt, cap, mark)

    def _visible_at(
        self, state: VisibleState, flt: MemoryFilter, cap: int, mark: tuple[str | None, int]
    ) -> Visible | None:
        now = None if flt.include_expired or flt.now is None else to_text(flt.now)
        # Every other field is a column of the memory's own row or of others in
        # ``memories``, which the log covers; ``written_by`` reads ``versions``.
        key = replace(flt, now=None) if flt.written_by is None else None
        if key is not None and (found := state.visible(key, mark, now)) is not None:
            return found
        cond, params = where(flt)
        keys_json, ids_json, until, count = self.conn.execute(
            "SELECT json_group_array(k), json_group_array(i), min(e), count(*) FROM ("
            f"SELECT m.rowid AS k, m.id AS i, m.expires_at AS e FROM memories m WHERE {cond} "
            "LIMIT ?)",
            (*params, cap + 1),
        ).fetchone()
        if count > cap:
            return None
        found = Visible(mark, json.loads(keys_json), json.loads(ids_json), now,
                        None if now is None or until is None else str(until))  # fmt: skip
        if key is not None:
            state.keep_visible(key, found)
        return found

    def _counted(
        self, state: VisibleState, flt: MemoryFilter, mark: tuple[str | None, int]
    ) -> int | None:
        """How many rows pass ``flt`` as a search read them at ``mark`` (the vector
        stage of this one, usually); None when none did."""
        now = None if flt.include_expired or flt.now is None else to_text(flt.now)
        if flt.written_by is not None:
            return None
        found = state.visible(replace(flt, now=None), mark, now)
        return None if found is None else len(found.keys)

    def _visible_count(self, flt: MemoryFilter) -> int | None:
        """How many rows pass ``flt``, counted through the namespace index (work in
        proportion to the caller's rows); None without a namespace list."""
        if not flt.namespaces:
            return None
        cond, params = where(flt)
        return int(
            self.conn.execute(
                f"SELECT COUNT(*) FROM memories m INDEXED BY ix_memories_namespace WHERE {cond}",
                params,
            ).fetchone()[0]
        )

    def _scan_visible(
        self, pairs: Sequence[tuple[str, str]], flt: MemoryFilter
    ) -> tuple[list[Any], int] | None:
        """(the newest ``common_window`` visible rows that hold every term of some
        query word, newest first; the number of visible rows), found without the
        shared keyword index; None when the caller sees more than
        ``isolated_scan_rows`` memories (or no namespace list bounds what it sees).

        The rows are read through the namespace index only (``INDEXED BY``: a
        type or expiry index would walk other namespaces' rows); each row's index
        terms (:meth:`_terms_of`, made once per row and text and kept by the state
        of the caller's namespaces) are matched against the query's."""
        if not flt.namespaces:
            return None
        found = self._at_most(
            "SELECT m.rowid, m.id, COALESCE(m.title, ''), m.content, m.tags "
            "FROM memories m INDEXED BY ix_memories_namespace", flt, self.isolated_scan_rows
        )  # fmt: skip
        if found is None:
            return None
        self.keyword_rows_scanned += len(found)
        matching = [found[i] for i in _matching(pairs, self._per_row("terms", found, flt,
                                                                     self._terms_of))]  # fmt: skip
        matching.sort(key=lambda row: -row[0])
        return matching[: self.common_window], len(found)

    def _terms_of(self, texts: Sequence[tuple[str, str, str]]) -> list[frozenset[str]]:
        """The index terms of each row (title, content, tags), as the index's
        tokenizer makes them of its words; the words of all the rows tokenised
        together (:meth:`_stems`, not through the store's cache: what a row holds is
        no one else's business), once per row and text (the caller keeps them)."""
        # ("_x" stems as "x": the tokenizer splits at underscores as the index does)
        language, rules = self.keyword_language, self.keyword_rules
        words = [
            set(_WORD.findall(keyword_text(f"{title} {content} {tags}", language, rules).lower()))
            for title, content, tags in texts
        ]
        vocabulary = sorted(set().union(*words)) if words else []
        stems: dict[str, list[str]] = {}
        for start in range(0, len(vocabulary), 5000):
            for word, term in self._stems(vocabulary[start : start + 5000], cached=False):
                stems.setdefault(word, []).append(term)
        return [frozenset(t for w in row for t in stems.get(w, ())) for row in words]

    def _documents(
        self, rows: Sequence[Any], flt: MemoryFilter
    ) -> list[tuple[dict[str, float], int]]:
        """:meth:`_doc_terms` of ``rows`` (``rowid, id, title, content, tags``), those
        of rows analysed before with the same text taken from the state of the
        caller's namespaces."""
        return self._per_row("documents", rows, flt, self._doc_terms)

    def _per_row(
        self,
        kind: str,
        rows: Sequence[Any],
        flt: MemoryFilter,
        analyse: Callable[[Sequence[tuple[str, str, str]]], list[Any]],
    ) -> list[Any]:
        texts = [(title, content, tags) for _, _, title, content, tags in rows]
        state = self._visible_state(flt)
        if state is None:
            return analyse(texts)
        basis = (self.keyword_language, self.keyword_rules, self.title_weight)
        keyed = [(row[0], text) for row, text in zip(rows, texts, strict=True)]
        return state.analysed(kind, keyed, basis, analyse, self.isolated_cache_rows)

    def _doc_terms(
        self, rows: Sequence[tuple[str, str, str]]
    ) -> list[tuple[dict[str, float], int]]:
        """Index terms of each row with their weighted counts (title weighted), and
        each row's length in words; one tokenizer pass for all the rows' words."""
        language, rules = self.keyword_language, self.keyword_rules
        split = [
            [_WORD.findall(keyword_text(text, language, rules).lower()) for text in row]
            for row in rows
        ]
        vocabulary = sorted({w for fields in split for words in fields for w in words})
        stems: dict[str, str] = {}
        for start in range(0, len(vocabulary), 5000):
            stems.update(self._stems(vocabulary[start : start + 5000], cached=False))
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

    def _at_most(self, select: str, flt: MemoryFilter, cap: int) -> list[Any] | None:
        """The rows ``select`` finds among those ``flt`` shows, or None when more than
        ``cap`` do (no more than ``cap + 1`` rows are read)."""
        cond, params = where(flt)
        rows = self.conn.execute(f"{select} WHERE {cond} LIMIT ?", (*params, cap + 1)).fetchall()
        return None if len(rows) > cap else rows

    def _visible_state(self, flt: MemoryFilter) -> VisibleState | None:
        """The cached state of ``flt``'s namespaces (:mod:`.isolated_cache`), or None
        where none may be used: no namespace list, or inside a transaction (its reads
        could hold rows that are never committed)."""
        if not flt.namespaces or self.conn.in_transaction:
            return None
        return cache_of(self, self.isolated_cache_rows).state(flt.namespaces)

    def _vector_isolated(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[tuple[str, float]] | None:
        """Exact neighbours among the visible rows, or None when there are too many
        of them to scan (the caller then uses the shared index with its filter).

        The keys of the rows passing ``flt`` are :meth:`_visible_at`'s (kept while no
        memory was written; read through the namespace index, in the order the
        uncached statement reads them, without its join: a row without a vector,
        which a consistent store does not hold, is left out by the state); their
        vectors come from the state of the caller's
        namespaces, brought up to the vector log first (:meth:`VisibleState.catch_up`).
        One statement reads where both logs stand (under the state's lock: the
        positions it reads only grow)."""
        state = self._visible_state(flt)
        if state is None:
            return self._vector_isolated_read(vector, k, flt)
        with state.lock:
            epoch, seq, logged = self.conn.execute(_LOG_POSITIONS).fetchone()
            epoch = None if epoch is None else str(epoch)
            state.catch_up(epoch, int(seq or 0), self._logged_keys)
        visible = self._visible_at(state, flt, self.exact_vector_rows, (epoch, int(logged or 0)))
        if visible is None:
            return None
        if not visible.keys or k <= 0:
            return []
        ids = visible.ids
        with state.lock:
            # The rows in the order the statement gave them, as the uncached path
            # reads them: a product's last bit depends on a row's place in the matrix.
            matrix, row_norms, held = state.vectors(visible.keys, self._vectors_of)
        if held is not None:  # without a vector (deleted since its key was read)
            ids = [i for i, ok in zip(ids, held.tolist(), strict=True) if ok]
            if not ids:
                return []
        query = np.asarray(vector, dtype=np.float32)
        if matrix.shape[1] != query.shape[0]:
            return self._vector_isolated_read(vector, k, flt)
        norms = row_norms * (float(np.linalg.norm(query)) or 1.0)
        norms[norms == 0] = 1.0
        sims = (matrix @ query) / norms
        return _top(sims, ids, k)

    def _logged_keys(self, after: int, upto: int) -> list[int]:
        """Keys of the vectors logged as changed in ``(after, upto]``."""
        return [
            key
            for (key,) in self.conn.execute(
                "SELECT DISTINCT key FROM vector_log WHERE seq > ? AND seq <= ?", (after, upto)
            ).fetchall()
        ]

    def _vectors_of(self, keys: Sequence[int]) -> list[tuple[int, bytes]]:
        """The stored vectors of ``keys`` (rows without one are left out)."""
        out: list[tuple[int, bytes]] = []
        for start in range(0, len(keys), 4096):
            chunk = keys[start : start + 4096]
            out.extend(
                self.conn.execute(
                    f"SELECT rowid, embedding FROM vectors "
                    f"WHERE rowid IN ({', '.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            )
        return out

    def _vector_isolated_read(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[tuple[str, float]] | None:
        """:meth:`_vector_isolated` without the cache: the visible rows' vectors read
        through SQL (inside a transaction)."""
        rows = self._at_most(
            "SELECT m.id, v.embedding FROM memories m JOIN vectors v ON v.rowid = m.rowid",
            flt, self.exact_vector_rows
        )  # fmt: skip
        if rows is None:
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
        return _top(sims, ids, k)


#: Where the memory log stands: the store's index epoch and its last sequence number.
_MEMORY_POSITION = (
    "SELECT (SELECT value FROM meta WHERE key = 'index_epoch'), "
    "(SELECT seq FROM sqlite_sequence WHERE name = 'memory_log')"
)
#: Where the vector and memory logs stand: the store's index epoch and the last
#: sequence number of each.
_LOG_POSITIONS = (
    "SELECT (SELECT value FROM meta WHERE key = 'index_epoch'), "
    "(SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'), "
    "(SELECT seq FROM sqlite_sequence WHERE name = 'memory_log')"
)


def _bm25(
    pairs: Sequence[tuple[str, str]],
    rows: Sequence[tuple[int, str]],
    docs: Sequence[tuple[dict[str, float], int]],
    total: int,
    k: int,
) -> list[tuple[str, float]]:
    """BM25 of ``rows`` (rowid, id; each with its document) for the query's terms,
    with document frequencies and average length from ``docs`` and ``total`` rows
    seen; the ``k`` best, ties to the newest.

    Computed a term at a time over every row (numpy), each row's score the same
    float as the sum of its terms in the order of the set of terms: the same
    operations on the same doubles, in the same order, as a row at a time."""
    terms = {t for _, t in pairs}
    avg_len = sum(length for _, length in docs) / len(docs) or 1.0
    lengths = np.fromiter((length for _, length in docs), dtype=np.float64, count=len(docs))
    norm = K1 * (1 - B + B * lengths / avg_len)
    scores = np.zeros(len(docs), dtype=np.float64)
    first = np.ones(len(docs), dtype=bool)  # no term added yet (sum() starts at 0)
    counts = [doc for doc, _ in docs]
    for t in terms:  # the set's order, as the row-wise sum iterates it
        found = np.array([doc.get(t, math.nan) for doc in counts], dtype=np.float64)
        present = ~np.isnan(found)  # (a count is never NaN: a sum of title weights and 1)
        freq = int(present.sum())
        idf = math.log(1.0 + (total - freq + 0.5) / (freq + 0.5))
        if not freq:
            continue
        tf = np.where(present, found, 0.0)
        part = idf * tf * (K1 + 1) / (tf + norm)
        scores = np.where(present, np.where(first, part, scores + part), scores)
        first &= ~present
    keys = np.fromiter((rowid for rowid, _ in rows), dtype=np.int64, count=len(rows))
    order = np.lexsort((-keys, -scores))[:k]  # best first, ties to the newest
    values, unscored = scores.tolist(), first.tolist()
    return [(rows[i][1], 0 if unscored[i] else values[i]) for i in order.tolist()]


def _matching(pairs: Sequence[tuple[str, str]], terms: Sequence[frozenset[str]]) -> list[int]:
    """Which rows (by their index ``terms``) hold every term of some query word: work
    in proportion to the rows times the query's terms, whatever the rows hold."""
    wanted: dict[str, set[str]] = {}  # query word -> its terms
    for word, term in pairs:
        wanted.setdefault(word, set()).add(term)
    return [i for i, held in enumerate(terms)
            if any(needed <= held for needed in wanted.values())]  # fmt: skip


def _top(sims: np.ndarray, ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """The ``k`` best of ``ids`` by similarity, ties by id: the order a full sort by
    ``(-similarity, id)`` gives, sorting only the rows at or above the k-th best."""
    chosen: Sequence[int] = range(len(ids))
    if len(ids) > 4 * k and not np.isnan(sims).any():
        kth = -np.partition(-sims, k - 1)[k - 1]
        chosen = np.flatnonzero(sims >= kth).tolist()
    order = sorted(chosen, key=lambda i: (-float(sims[i]), ids[i]))[:k]
    return [(ids[i], float(sims[i])) for i in order]
