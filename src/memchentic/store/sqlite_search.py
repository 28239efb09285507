"""Vector and keyword search of the SQLite store (the shared indexes; the isolated
searches of untrusted callers are :mod:`.sqlite_isolated`'s).

Vectors: each process keeps a :class:`~.vectors.VectorIndex` that replays the
``vector_log`` before it answers, so a search sees every committed write. Keywords:
FTS5's BM25 over the ``memories_fts`` index, the query's words stemmed by the
index's own tokenizer, document frequencies cached per write stamp.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..clock import from_text
from ..text import fts_phrase, query_words
from .base import MemoryFilter, RankRow, Similar
from .keywords import choose_words
from .sqlite_isolated import SQLiteIsolated
from .sqlite_rows import RANK_COLUMNS, RANK_WIDTH, rank_row, where
from .sqlite_state import MAX_ROWS, RankState, matcher, state_of
from .vectors import VectorIndex

#: Words whose index terms a store remembers (:meth:`SQLiteSearch._stems`), the least
#: recently used dropped first.
STEM_CACHE_WORDS = 100_000
#: Stands between two words in one document of the query tokenizer: a private-use
#: character, a token of its own there and never part of a word of ``\w``.
_BETWEEN = "\ue000"


class StemCache:
    """Words -> their index terms, at most ``limit`` of them, the least recently used
    dropped first (never all at once: a search's words cannot empty it)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._terms: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The known ones of ``words`` (each marked as just used)."""
        out: dict[str, tuple[str, ...]] = {}
        with self._lock:
            for word in words:
                terms = self._terms.get(word)
                if terms is not None:
                    self._terms.move_to_end(word)
                    out[word] = terms
        return out

    def put_many(self, found: dict[str, tuple[str, ...]]) -> None:
        with self._lock:
            self._terms.update(found)
            while len(self._terms) > self.limit:
                self._terms.popitem(last=False)

    def __len__(self) -> int:
        return len(self._terms)


class SQLiteSearch(SQLiteIsolated):
    """Mixin for :class:`~memchentic.store.sqlite.SQLiteStore`."""

    _index: VectorIndex | None
    _index_lock: threading.RLock

    if TYPE_CHECKING:  # provided by SQLiteStore

        @property
        def _index_path(self) -> Path: ...

        def write(self) -> AbstractContextManager[None]: ...

        def _by_ids(self, select: str, ids: Sequence[str]) -> Iterator[Any]: ...

    def _by_rowids(
        self,
        columns: str,
        keys: Sequence[int],
        cond: str = "1",
        params: Sequence[Any] = (),
        joined: str = "",
    ) -> Iterator[Any]:
        """``columns`` of ``memories m`` (and ``joined``) at these rowids that pass
        ``cond``, in chunks. ``NOT INDEXED``: the keys are looked up by rowid; left
        alone, the planner may pick a filter column's index instead and walk every
        row of the namespace."""
        for start in range(0, len(keys), 4096):
            chunk = keys[start : start + 4096]
            yield from self.conn.execute(
                f"SELECT {columns} FROM memories m NOT INDEXED {joined} "
                f"WHERE m.rowid IN ({', '.join('?' * len(chunk))}) AND {cond}",
                (*chunk, *params),
            ).fetchall()  # one call, not a step a row

    # --- vectors --------------------------------------------------------------------
    def _sync_index(self) -> VectorIndex | None:
        """Bring this process's index up to the committed vector log."""
        with self._index_lock:
            meta = dict(
                self.conn.execute(
                    "SELECT key, value FROM meta "
                    "WHERE key IN ('embedding_dimension', 'index_epoch')"
                ).fetchall()
            )
            dim_text = meta.get("embedding_dimension")
            if dim_text is None:
                return None
            epoch = meta.get("index_epoch") or ""
            dim = int(dim_text)
            index = self._index
            if index is None or index.dimension != dim or getattr(index, "epoch", None) != epoch:
                index = VectorIndex.load(
                    self._index_path, epoch, dim, exact_below=self.exact_vector_rows
                ) or VectorIndex(dim, exact_below=self.exact_vector_rows)
                index.epoch = epoch  # type: ignore[attr-defined]
                self._index = index
            changes = self.conn.execute(
                "SELECT seq, key, op FROM vector_log WHERE seq > ? ORDER BY seq",
                (index.applied_seq,),
            ).fetchall()
            if not changes:
                return index
            latest: dict[int, str] = {}
            for _, key, op in changes:
                latest[key] = op
            removed = [k for k, op in latest.items() if op == "delete"]
            upserted = [k for k, op in latest.items() if op == "upsert"]
            index.remove(removed)
            for start in range(0, len(upserted), 8192):
                chunk = upserted[start : start + 8192]
                if len(chunk) == 1:  # the common case: one write since the last search
                    rows = self.conn.execute(
                        "SELECT rowid, embedding FROM vectors WHERE rowid = ?", chunk
                    ).fetchall()
                else:
                    rows = self.conn.execute(
                        f"SELECT rowid, embedding FROM vectors "
                        f"WHERE rowid IN ({', '.join('?' * len(chunk))})",
                        chunk,
                    ).fetchall()
                keys = [r[0] for r in rows]
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                matrix = matrix.reshape(len(rows), dim)
                index.upsert(keys, matrix)
                if len(rows) < len(chunk):
                    index.remove(list(set(chunk) - set(keys)))
            index.applied_seq = changes[-1][0]
            return index

    def vector_search(
        self,
        vector: np.ndarray,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
    ) -> list[tuple[str, float]]:
        if flt.isolated and k > 0:  # untrusted caller: never through the shared graph
            visible = self._vector_isolated(vector, k, flt)
            if visible is not None:
                return visible
        index = self._sync_index()
        if index is None or k <= 0 or not len(index):
            return []
        cond, params = where(flt)
        query = np.asarray(vector, dtype=np.float32)
        # Few rows fail a filter with no namespace or field restriction (expired or
        # superseded ones): ask for a little more than k, not four times as many.
        fetch = k + max(8, k // 4) if flt.is_unrestricted() else k * 4
        # The rows read with the passing keys: RankRows are made of the k hits only.
        read: dict[int, Any] | None = None if rows is None else {}
        state = self._rank_state()
        match = None if state is None else matcher(flt)

        def passing_of(keys: list[int]) -> dict[int, str]:
            if state is not None and match is not None:
                return state.passing(keys, match, read)
            return self._passing(keys, cond, params, read=read)

        while True:
            found = index.search(query, fetch)
            passing = passing_of([key for key, _ in found])
            if len(passing) >= k or len(found) >= len(index):
                break
            allowed = self.conn.execute(
                f"SELECT m.rowid FROM memories m WHERE {cond} LIMIT ?",
                (*params, self.exact_vector_rows + 1),
            ).fetchall()
            if len(allowed) <= self.exact_vector_rows:  # few rows pass: scan them exactly
                found = index.scan(query, [r[0] for r in allowed], k)
                passing = passing_of([key for key, _ in found])
                break
            fetch *= 8
        # The index holds the exact float32 rows: its cosines are final.
        hits = [(passing[key], cosine, key) for key, cosine in found if key in passing]
        hits.sort(key=lambda item: (-item[1], item[0]))
        if rows is not None and read is not None:
            for memory_id, _, key in hits[:k]:
                got = read[key]
                rows[memory_id] = got if isinstance(got, RankRow) else rank_row(got, 2)
        return [(memory_id, cosine) for memory_id, cosine, _ in hits[:k]]

    def _rank_state(self) -> RankState | None:
        """This connection's :class:`~.sqlite_state.RankState`, current; None inside a
        transaction or for a large store (then the callers read SQL)."""
        index = self._index
        if index is not None and len(index) > MAX_ROWS:  # known large: not even a statement
            return None
        return state_of(self.conn, self._live_rows, self)

    def rank_rows(self, ids: Sequence[str], *, vectors: bool = False) -> dict[str, RankRow]:
        state = self._rank_state()
        if state is None:
            select = f"SELECT m.id, {RANK_COLUMNS} FROM memories m"
            if vectors:
                select = (f"SELECT m.id, {RANK_COLUMNS}, v.embedding FROM memories m "
                          "LEFT JOIN vectors v ON v.rowid = m.rowid")  # fmt: skip
            return {row[0]: rank_row(row, 1) for row in self._by_ids(select, ids)}
        found = state.found(ids)
        if not vectors:
            return {e.id: e.rank for e in found}
        keys = [e.key for e in found]
        blobs: dict[int, bytes] = {}
        for start in range(0, len(keys), 4096):
            chunk = keys[start : start + 4096]
            marks = ", ".join("?" * len(chunk))
            blobs.update(self.conn.execute(
                f"SELECT rowid, embedding FROM vectors WHERE rowid IN ({marks})", chunk
            ).fetchall())  # fmt: skip
        return {
            e.id: e.rank._replace(vector=np.frombuffer(blob, dtype=np.float32))
            if (blob := blobs.get(e.key)) is not None else e.rank
            for e in found
        }  # fmt: skip

    def similar_many(
        self,
        vectors: np.ndarray,
        k: int,
        min_cosine: float,
    ) -> list[list[Similar]]:
        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        index = self._sync_index()
        if index is None or not len(index) or k <= 0:
            return [[] for _ in range(len(queries))]
        close = index.search_many(queries, k, min_cosine)
        keys = list(dict.fromkeys(key for hits in close for key, _ in hits))
        facts = {
            key: row
            for key, *row in self._by_rowids(
                "m.rowid, m.id, m.namespace, m.kind, m.polarity, m.superseded_by, m.expires_at",
                keys,
            )
        }
        out: list[list[Similar]] = []
        for hits in close:
            found = []
            for key, cosine in hits:
                if (row := facts.get(key)) is not None:
                    memory_id, namespace, kind, polarity, superseded, expires = row
                    found.append(Similar(
                        memory_id, cosine, namespace, kind, polarity, superseded,
                        from_text(expires),
                    ))  # fmt: skip
            out.append(found)
        return out

    def _passing(
        self,
        keys: Sequence[int],
        cond: str,
        params: list[Any],
        rank_rows: dict[str, RankRow] | None = None,
        *,
        with_vectors: bool = False,
        read: dict[int, Sequence[Any]] | None = None,
    ) -> dict[int, str]:
        """The keys (rows) that pass the filter, with their ids; with ``rank_rows``,
        their :class:`RankRow` too (read from the same rows), with their vectors
        when ``with_vectors``; with ``read``, the rows themselves by key (their
        RankRow from column 2 on: :func:`rank_row`), for the caller to make the
        RankRows it needs."""
        out: dict[int, str] = {}
        columns, joined = "m.rowid, m.id", ""
        if read is not None:
            columns += f", {RANK_COLUMNS}"
            for row in self._by_rowids(columns, keys, cond, params):
                out[row[0]] = row[1]
                read[row[0]] = row
            return out
        if rank_rows is not None:
            columns += f", {RANK_COLUMNS}"
            if with_vectors:
                columns += ", v.embedding"
                joined = "LEFT JOIN vectors v ON v.rowid = m.rowid"
        rows = self._by_rowids(columns, keys, cond, params, joined)
        if rank_rows is None:
            out.update(rows)
            return out
        for row in rows:
            out[row[0]] = row[1]
            rank_rows[row[1]] = rank_row(row, 2)
        return out

    def replace_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        with self.write():
            self.conn.executemany(
                "UPDATE vectors SET embedding = ? "
                "WHERE rowid = (SELECT rowid FROM memories WHERE id = ?)",
                [(np.asarray(v, dtype=np.float32).tobytes(), mid) for mid, v in vectors.items()],
            )

    # --- keywords -------------------------------------------------------------------
    def index_terms(self, text: str) -> list[str]:
        words = query_words(
            text, max_words=10_000, language=self.keyword_language, rules=self.keyword_rules
        )
        return [term for _, term in self._stems(words)]

    def _stems(self, words: Sequence[str], *, cached: bool = True) -> list[tuple[str, str]]:
        """(word, index term) pairs, tokenised exactly as the keyword index does.

        With ``cached``, each word's terms are remembered (the tokenizer is fixed;
        the :data:`STEM_CACHE_WORDS` most recently used), so only words not seen
        before go through SQLite's tokenizer. An isolated caller's search passes
        False: what other callers' searches stemmed never makes it faster, so its
        time says nothing about which words were seen before.
        """
        if not words:
            return []
        if not cached:
            found = self._tokenize(list(dict.fromkeys(words)))
            return [(word, term) for word in words for term in found[word]]
        cache: StemCache | None = self.__dict__.get("_stem_cache")
        if cache is None:
            cache = self.__dict__.setdefault("_stem_cache", StemCache(STEM_CACHE_WORDS))
        known = cache.get_many(words)
        todo = list(dict.fromkeys(w for w in words if w not in known))
        if todo:
            found = self._tokenize(todo)
            cache.put_many(found)
            known.update(found)
        return [(word, term) for word in words for term in known[word]]

    def _tokenize(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        """Each of ``words`` (distinct) -> its index terms, in order: all of them one
        document of the query tokenizer, a marker token between two words (one
        insert and one read, at about a microsecond a word; a row a word took 40-190).
        Words holding the marker character go a row each."""
        plain = [w for w in words if _BETWEEN not in w]
        out: dict[str, tuple[str, ...]] = {}
        conn = self.conn
        if plain:
            conn.execute(
                "INSERT INTO temp.query_tokens(rowid, word) VALUES (1, ?)",
                (f" {_BETWEEN} ".join(plain),),
            )
            terms: list[list[str]] = [[] for _ in plain]
            at = 0
            for (term,) in conn.execute(
                "SELECT term FROM temp.query_terms WHERE doc = 1 ORDER BY offset"
            ):
                if term == _BETWEEN:
                    at += 1
                else:
                    terms[at].append(term)
            conn.execute("DELETE FROM temp.query_tokens")
            out.update(zip(plain, map(tuple, terms), strict=True))
        odd = [w for w in words if _BETWEEN in w]
        if odd:
            conn.executemany(
                "INSERT INTO temp.query_tokens(rowid, word) VALUES (?, ?)",
                list(enumerate(odd, start=1)),
            )
            found: dict[str, list[str]] = {w: [] for w in odd}
            rows = conn.execute("SELECT doc, term FROM temp.query_terms ORDER BY doc, offset")
            for doc, term in rows:
                found[odd[doc - 1]].append(term)
            conn.execute("DELETE FROM temp.query_tokens")
            out.update((word, tuple(terms)) for word, terms in found.items())
        return out

    def _write_stamp(self) -> int:
        """A counter that grows with every vector change (so with every memory
        added, re-embedded or deleted): how far cached statistics may have drifted."""
        row = self.conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'"
        ).fetchone()
        return int(row[0]) if row else 0

    def _doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Memories holding each term. Counting walks the term's whole posting list,
        so a large count is reused until the writes since could have moved it by
        more than 2% (small counts are always read afresh)."""
        if not terms:
            return {}
        cache: dict[str, tuple[int, int]] | None = getattr(self, "_df_cache", None)
        if cache is None or len(cache) > 100_000:
            cache = {}
            self._df_cache = cache
        stamp = self._write_stamp()
        out: dict[str, int] = {}
        todo: list[str] = []
        for term in terms:
            hit = cache.get(term)
            if hit is not None and 0 <= stamp - hit[1] <= hit[0] // 50:
                out[term] = hit[0]
            else:
                todo.append(term)
        if todo:
            rows = dict(
                self.conn.execute(
                    f"SELECT term, doc FROM memories_fts_terms WHERE term IN "
                    f"({', '.join('?' * len(todo))})",
                    todo,
                ).fetchall()
            )
            for term in todo:
                out[term] = int(rows.get(term, 0))
                cache[term] = (out[term], stamp)
        return {term: df for term, df in out.items() if df}

    def _live_rows(self) -> int:
        """About how many memories the store holds (exact to within 1%)."""
        stamp = self._write_stamp()
        hit: tuple[int, int] | None = getattr(self, "_rows_cache", None)
        if hit is not None and 0 <= stamp - hit[1] <= hit[0] // 100:
            return hit[0]
        count = int(self.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        self._rows_cache = (count, stamp)
        return count

    def term_stats(self, query: str) -> tuple[list[tuple[str, str]], dict[str, int], int]:
        pairs = self._stems(
            query_words(query, language=self.keyword_language, rules=self.keyword_rules)
        )
        freqs = self._doc_freqs(sorted({t for _, t in pairs}))
        total = int(self.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        return pairs, freqs, total

    def keyword_search(
        self,
        query: str,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
        *,
        query_vector: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 over the query's words, at a bounded cost.

        A ranked FTS5 query costs time in proportion to the rows its words match.
        Words found in no memory are skipped. Words in more than
        ``common_term_docs`` memories are *common*: left out when rarer words
        exist. Words are taken rarest first while the rows they match add up to at
        most ``common_window``; when even the rarest matches more, only the newest
        ``common_window`` of its matches (with the next rarest words while they add
        up to at most ``common_term_docs``) are ranked. This holds at any store
        size, as in the PostgreSQL store: in a 10k store the words of a long
        question matched about 6,000 rows, 11 ms of ranking (2-4 ms at 100k, where
        the budget applied).
        """
        if flt.isolated:  # untrusted caller: statistics of the visible rows only
            return self._keyword_isolated(query, k, flt)
        pairs = self._stems(
            query_words(query, language=self.keyword_language, rules=self.keyword_rules)
        )
        if not pairs or k <= 0:
            return []
        freqs = self._doc_freqs(sorted({t for _, t in pairs}))
        word_df, words, window_rows = choose_words(
            pairs, freqs, common_term_docs=self.common_term_docs, window=self.common_window
        )
        if not words:
            return []
        match = " OR ".join(fts_phrase(w) for w in words)
        if window_rows is not None:  # rank only the newest window_rows matches
            row = self.conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, window_rows - 1),
            ).fetchone()
            if row is not None:
                return self._rank_window(words, word_df, row[0], k, flt, rows)
        cond, params = where(flt)
        if not flt.is_unrestricted():  # filter every match: the filter may keep few
            # The vectors of the k best only (not of every match the sort sees).
            found = self.conn.execute(
                f"SELECT s.*, v.embedding FROM ("
                f"SELECT m.id, bm25(memories_fts, ?, 1.0, 1.0) AS score, {RANK_COLUMNS}, "
                f"m.rowid AS key FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
                f"WHERE memories_fts MATCH ? AND {cond} "
                f"ORDER BY score, m.rowid DESC LIMIT ?) s "
                f"LEFT JOIN vectors v ON v.rowid = s.key ORDER BY s.score, s.key DESC",
                (self.title_weight, match, *params, k),
            ).fetchall()
            if rows is not None:
                for row in found:
                    rows[row[0]] = rank_row((*row[: 2 + RANK_WIDTH], row[-1]), 2)
            return [(row[0], -float(row[1])) for row in found]
        # Most rows pass: rank inside FTS5 and look up only the best rows.
        fetch = k + max(16, k // 4)
        while True:
            top = self.conn.execute(
                "SELECT f.rowid, bm25(memories_fts, ?, 1.0, 1.0) AS score "
                "FROM memories_fts f WHERE memories_fts MATCH ? "
                "ORDER BY score, f.rowid DESC LIMIT ?",
                (self.title_weight, match, fetch),
            ).fetchall()
            passing = self._passing([key for key, _ in top], cond, params, rows, with_vectors=True)
            hits = [(passing[key], -float(score)) for key, score in top if key in passing]
            if len(hits) >= k or len(top) < fetch:
                return hits[:k]
            fetch *= 4

    def _rank_window(
        self,
        words: list[str],
        word_df: dict[str, int],
        window: int,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
    ) -> list[tuple[str, float]]:
        """Rank the matches from rowid ``window`` on (the newest ``common_window``) by
        the BM25 idf of the query words each holds.

        Only for queries of common words: FTS5's ``bm25()`` counts the rows holding
        each word by reading its whole posting list, at every query, a cost that
        grows with the store (40 ms for three words in a third of 1M rows), while
        each word's matches past ``window`` are found by a seek. Term frequency and
        length do not count here; among common words they would add little.
        """
        total = max(self._live_rows(), 1)
        scores: dict[int, float] = {}
        for word in words:
            df = word_df[word]
            idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
            for (key,) in self.conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid >= ?",
                (fts_phrase(word), window),
            ).fetchall():
                scores[key] = scores.get(key, 0.0) + idf
        ranked = sorted(scores, key=lambda key: (-scores[key], -key))
        cond, params = where(flt)
        step = k + max(16, k // 4) if flt.is_unrestricted() else len(ranked)
        hits: list[tuple[str, float]] = []
        for start in range(0, len(ranked), max(step, 1)):
            chunk = ranked[start : start + step]
            passing = self._passing(chunk, cond, params, rows, with_vectors=True)
            hits.extend((passing[key], scores[key]) for key in chunk if key in passing)
            if len(hits) >= k:
                break
        return hits[:k]
