"""Candidates from PostgreSQL: vectors with pgvector (HNSW, cosine) and keywords
with ``tsvector`` (title weight A, body B, tags C).

Vectors: a store of at most :data:`EXACT_SCAN_MAX` rows is scanned exactly, and
so are the visible rows of an ``isolated`` filter when there are at most
``exact_vector_rows`` of them (no dependence on rows the filter hides). Above,
the query orders by the HNSW operator: the planner uses the index
(``hnsw.ef_search`` raised to the over-fetch; on pgvector 0.8+ an iterative
scan, so filters still fill ``k``) or, for a selective filter, that filter's
index and an exact sort. Each candidate's cosine is pgvector's float32 cosine
distance of its stored vector (not of an index's copy), computed in the server
so that the vectors never travel.

Keywords: every query word is looked up as the index tokenises it (never parsed
as query syntax), and rows are ranked by the sum over words of
``idf(word) x ts_rank(weights, tsv, word)``, a BM25-like score that uses only the
document itself plus document frequencies (of the visible rows when the filter
is ``isolated``). Common words follow the SQLite store's budget.

An isolated caller who sees at most ``isolated_scan_rows`` memories is answered
from those rows alone: their keys are read first, and the keyword statements run
over them behind an optimisation fence (``OFFSET 0``), so the planner cannot reach
them through the shared ``tsvector`` index, whose cost follows every namespace's
matches (a timing oracle, issue 20 item 17; docs/access.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..text import idf, query_words
from .base import MemoryFilter, RankRow, Similar
from .keywords import SearchBudgets, choose_words
from .postgres_connect import EF_SEARCH_DEFAULT, PgConnections
from .postgres_rows import utc, where

#: HNSW graph degree and build effort: pgvector's degree, twice its build effort
#: (a graph built one insert at a time needs it: recall@10 0.94 -> 0.98 at 100k).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
#: Largest ``hnsw.ef_search`` (pgvector's cap); a search fetching more than the
#: connection's ``EF_SEARCH_DEFAULT`` rows raises it to the fetch for that query.
EF_SEARCH_MAX = 1000
#: Most rows scanned exactly. A distance scan in the server costs about a
#: microsecond a row (SQLite's in-process matrix is far cheaper, so its limit,
#: ``SEARCH_EXACT_VECTOR_ROWS``, applies here only when it is smaller).
EXACT_SCAN_MAX = 1000
#: Most rows a keyword query ranks (``SEARCH_COMMON_WINDOW`` when smaller): the
#: rarest words are kept while their matches add up to this, and a query of only
#: words more common ranks their newest this-many matches.
RANK_ROWS_MAX = 1000
#: Seconds the index dimension and row count are reused (see ``_vector_state``).
STATE_TTL_S = 1.0
_STEM_CACHE_MAX = 100_000
#: The columns of a :class:`RankRow`, in its order (read with the candidates).
RANK_COLUMNS = (
    "m.session_id, m.updated_at, m.kind, m.type, m.reinforcement, m.recall_count, m.path_hint, "
    "m.namespace, m.created_at"
)
RANK_WIDTH = 9


def keep_rank_rows(
    found: Sequence[Sequence[Any]], at: int, rows: dict[str, RankRow], *, distance: bool = False
) -> None:
    """Each found row's RankRow, from its columns ``at`` on (the id comes first):
    RANK_COLUMNS, then maybe the stored vector, or with ``distance`` its cosine
    distance from the query (NULL: not known)."""
    for row in found:
        session, updated, kind, type_, reinforcement, recalls, path, namespace, created = row[
            at : at + RANK_WIDTH
        ]
        last = row[at + RANK_WIDTH] if len(row) > at + RANK_WIDTH else None
        vector, cosine = last, None
        if distance:
            vector, cosine = None, None if last is None else cosine_of(float(last))
        rows[row[0]] = RankRow(session, utc(updated), kind, type_, reinforcement, recalls, path,
                               namespace, utc(created), vector, cosine)  # fmt: skip


def cosine_of(distance: float) -> float:
    """pgvector's cosine distance as a cosine; a zero vector's (NaN) as 0, as
    :func:`~memchentic.store.base.stored_cosines` gives."""
    return 1.0 - distance if distance == distance else 0.0


def _tsquery_word(terms: Sequence[str]) -> str:
    """A word's index terms as tsquery text: quoted lexemes, never operators."""
    quoted = ["'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms]
    return quoted[0] if len(quoted) == 1 else "(" + " & ".join(quoted) + ")"


class PostgresSearch(SearchBudgets, PgConnections):
    """Mixin for :class:`~memchentic.store.postgres.PostgresStore`."""

    _stem_cache: dict[str, tuple[str, ...]]
    _state_cache: tuple[float, int | None, int] | None = None

    # --- the vector index -------------------------------------------------------------
    def _index_dimension(self) -> int | None:
        row = self._row("SELECT value FROM meta WHERE key = 'vector_index_dimension'")
        return int(row[0]) if row else None

    def _ensure_vector_index(self, dimension: int) -> None:
        """An HNSW index for vectors of ``dimension`` (replacing one of another)."""
        self._state_cache = None
        # maintenance: building the index over every vector may take minutes
        with self.unbudgeted(), self.write(), self.connection() as conn:
            if self._index_dimension() == dimension:
                return
            conn.execute("DROP INDEX IF EXISTS ix_vectors_hnsw")
            conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
            # Partial: only vectors of this dimension are cast and indexed (others, such
            # as the row versions a reindex just replaced, are skipped, never an error).
            dim = int(dimension)
            conn.execute(
                f"CREATE INDEX ix_vectors_hnsw ON memory_vectors USING hnsw "
                f"((embedding::vector({dim})) vector_cosine_ops) "
                f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                f"WHERE vector_dims(embedding) = {dim}"
            )
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('vector_index_dimension', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(dimension),),
            )

    def replace_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        if not vectors:
            return
        rows = [(np.asarray(v, dtype=np.float32), mid) for mid, v in vectors.items()]
        self._state_cache = None
        with self.write(), self.connection() as conn:
            current = self._index_dimension()
            if current is not None and any(v.size != current for v, _ in rows):
                # Another model: drop the index now, set_meta builds the new one.
                conn.execute("DROP INDEX IF EXISTS ix_vectors_hnsw")
                conn.execute("DELETE FROM meta WHERE key = 'vector_index_dimension'")
            with conn.cursor() as cur:
                cur.executemany(
                    "UPDATE memory_vectors v SET embedding = %s FROM memories m "
                    "WHERE v.key = m.key AND m.id = %s",
                    rows,
                )

    # --- vector candidates --------------------------------------------------------------
    def _vector_state(self) -> tuple[int | None, int]:
        """(the vector index's dimension, the row count), read at most once a second:
        they choose between the index and an exact scan, where a moment's staleness
        costs nothing (this process's own index changes reset it at once)."""
        now = time.monotonic()
        cached = self._state_cache
        if cached is not None and now - cached[0] < STATE_TTL_S:
            return cached[1], cached[2]
        row = self._row(
            "SELECT (SELECT value FROM meta WHERE key = 'vector_index_dimension'), "
            "COALESCE((SELECT docs FROM term_docs WHERE term = ''), 0)"
        )
        dimension = int(row[0]) if row[0] is not None else None
        self._state_cache = (now, dimension, int(row[1]))
        return dimension, int(row[1])

    def vector_search(
        self,
        vector: np.ndarray,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
    ) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        dimension, total = self._vector_state()
        exact_rows = min(self.exact_vector_rows, EXACT_SCAN_MAX)
        cond, params = where(flt)
        fetch = k + max(8, k // 4)
        if dimension != query.size or total <= exact_rows:
            return self._rescore(self._exact(query, fetch, cond, params), k, rows)
        if flt.isolated and not flt.is_unrestricted():
            # Untrusted callers: the answer must not depend on rows they cannot see,
            # which a graph walk through those rows would; scan the visible rows
            # exactly up to SEARCH_EXACT_VECTOR_ROWS of them (as the SQLite store does).
            visible = self._row(
                f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {cond} LIMIT %s) s",
                (*params, self.exact_vector_rows + 1),
            )[0]
            if visible <= self.exact_vector_rows:
                return self._rescore(self._exact(query, fetch, cond, params), k, rows)
        # The planner picks the HNSW index, or for a selective filter the filter's own
        # index and an exact sort of the few rows that pass.
        found = self._approximate(query, dimension, fetch, cond, params)
        if len(found) < k:  # the graph ran dry before k rows passed: scan exactly
            found = self._exact(query, fetch, cond, params)
        return self._rescore(found, k, rows)

    def similar_many(
        self,
        vectors: np.ndarray,
        k: int,
        min_cosine: float,
    ) -> list[list[Similar]]:
        """One statement for the whole batch: each vector's ``k`` nearest rows by the
        HNSW index (or an exact scan in a small store), any namespace or state."""
        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        if not len(queries) or k <= 0:
            return [[] for _ in range(len(queries))]
        return self._similar_many(queries, k, min_cosine)

    def _similar_many(self, queries: np.ndarray, k: int, min_cosine: float) -> list[list[Similar]]:
        dimension, total = self._vector_state()
        size = int(queries.shape[1])
        cast = f"vector({size})"
        # The index (on a cast to the store's dimension) when there is one to use.
        indexed = dimension == size and total > min(self.exact_vector_rows, EXACT_SCAN_MAX)
        order = f"v.embedding::{cast} <=> q.v" if indexed else "v.embedding <=> q.v"
        # The batch travels as one flat real[] and is cut into vectors by the server.
        # Its cast is made once, in a materialised step: as an expression of each
        # row it would be made per vector under a generic plan (a prepared
        # statement's), 1,000 x 384,000 casts, over a minute a batch of 1,000.
        rows = self._rows(
            f"WITH a AS MATERIALIZED (SELECT %s::real[] AS flat), "
            f"q AS MATERIALIZED (SELECT i, (a.flat[(i - 1) * {size} + 1 : i * {size}])::{cast} "
            f"AS v FROM a, generate_series(1, %s) AS i) "
            f"SELECT q.i, s.* FROM q "
            f"CROSS JOIN LATERAL (SELECT m.id, {order} AS distance, m.namespace, m.kind, "
            f"m.polarity, m.superseded_by, m.expires_at FROM memory_vectors v "
            f"JOIN memories m ON m.key = v.key WHERE vector_dims(v.embedding) = {size} "
            f"ORDER BY {order} LIMIT %s) s",
            (queries.ravel().tolist(), len(queries), k),
        )
        out: list[list[Similar]] = [[] for _ in range(len(queries))]
        for i, memory_id, distance, namespace, kind, polarity, superseded, expires in rows:
            if 1.0 - float(distance) >= min_cosine:
                out[int(i) - 1].append(Similar(
                    memory_id, 1.0 - float(distance), namespace, kind, polarity, superseded,
                    utc(expires),
                ))  # fmt: skip
        for hits in out:
            hits.sort(key=lambda item: -item.cosine)
        return out

    def _exact(self, query: np.ndarray, fetch: int, cond: str, params: list[Any]) -> list[Any]:
        # An untyped ``embedding <=> q``: the index (on a cast) cannot serve it.
        return self._rows(
            f"SELECT m.id, v.embedding <=> %s AS distance, {RANK_COLUMNS} "
            f"FROM memories m JOIN memory_vectors v ON v.key = m.key "
            f"WHERE {cond} ORDER BY distance, m.id LIMIT %s",
            (query, *params, fetch),
            binary=True,
        )

    def _approximate(
        self, query: np.ndarray, dimension: int, fetch: int, cond: str, params: list[Any]
    ) -> list[Any]:
        cast = f"vector({int(dimension)})"
        sql = (
            f"SELECT m.id, v.embedding::{cast} <=> %s::{cast} AS distance, {RANK_COLUMNS} "
            f"FROM memory_vectors v JOIN memories m ON m.key = v.key "
            f"WHERE {cond} AND vector_dims(v.embedding) = {int(dimension)} "
            f"ORDER BY distance LIMIT %s"
        )
        args = (query, *params, fetch)
        with self.connection() as conn:
            if fetch <= EF_SEARCH_DEFAULT:  # the connection's own setting suffices
                return conn.execute(sql, args, binary=True).fetchall()
            with conn.transaction():  # a wider search for this query only
                conn.execute(
                    "SELECT set_config('hnsw.ef_search', %s, true)",
                    (str(min(EF_SEARCH_MAX, fetch)),),
                )
                return conn.execute(sql, args, binary=True).fetchall()

    @staticmethod
    def _rescore(
        found: list[Any], k: int, rows: dict[str, RankRow] | None
    ) -> list[tuple[str, float]]:
        """The final candidates (rows of id, cosine distance and the RankRow
        columns) with their cosines, best first (as SQLite orders them).

        The server's distance is pgvector's float32 cosine of the stored vector
        itself (not of an index's copy), so it is final: the stored vectors need
        not travel (1.5 KB a candidate); see :func:`cosine_of`."""
        if not found:
            return []
        if rows is not None:
            keep_rank_rows(found, 2, rows)
        scored = [(row[0], cosine_of(float(row[1]))) for row in found]
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[:k]

    # --- keywords -----------------------------------------------------------------------
    def index_terms(self, text: str) -> list[str]:
        words = query_words(
            text, max_words=10_000, language=self.keyword_language, rules=self.keyword_rules
        )
        return [term for _, term in self._stems(words)]

    def _stems(self, words: Sequence[str]) -> list[tuple[str, str]]:
        """(word, index term) pairs, tokenised exactly as the keyword index does
        (each word's terms are remembered: the configuration never changes)."""
        return self._stems_and_freqs(words, with_freqs=False)[0]

    def _stems_and_freqs(
        self, words: Sequence[str], *, with_freqs: bool = True
    ) -> tuple[list[tuple[str, str]], dict[str, int], int]:
        """:meth:`_stems`, with :meth:`_doc_freqs` of the terms when ``with_freqs``:
        one round trip (words not seen before are tokenised in the same statement
        that reads the statistics)."""
        if not words:
            return [], {}, 0
        cache = self._stem_cache
        if len(cache) > _STEM_CACHE_MAX:
            cache.clear()
        # a local view: another thread may clear the shared cache meanwhile
        known = {w: terms for w in words if (terms := cache.get(w)) is not None}
        todo = list(dict.fromkeys(w for w in words if w not in known))
        if not todo:
            pairs = [(word, term) for word in words for term in known[word]]
            if not with_freqs:
                return pairs, {}, 0
            return pairs, *self._doc_freqs(sorted({t for _, t in pairs}))
        tokens = (
            f"SELECT w.i, t.lexeme, t.positions[1] AS at FROM unnest(%s::text[]) "
            f"WITH ORDINALITY AS w (word, i) "
            f"CROSS JOIN LATERAL unnest(to_tsvector('{self._ts_config_literal}', w.word)) t"
        )
        if with_freqs:  # the new words' terms with their counts, then the known terms'
            rows = self._rows(
                f"SELECT n.i, n.lexeme, d.docs, n.at FROM ({tokens}) n "
                f"LEFT JOIN term_docs d ON d.term = n.lexeme "
                f"UNION ALL SELECT 0, term, docs, 0 FROM term_docs WHERE term = ANY(%s) "
                f"ORDER BY 1, 4",
                (todo, ["", *sorted({t for w in known for t in known[w]})]),
            )
        else:
            rows = self._rows(
                f"SELECT n.i, n.lexeme, NULL, n.at FROM ({tokens}) n ORDER BY 1, 4", (todo,)
            )
        found: dict[str, list[str]] = {w: [] for w in todo}
        counts: dict[str, int] = {}
        for i, lexeme, docs, _ in rows:
            if i:
                found[todo[i - 1]].append(lexeme)
            if docs:
                counts[lexeme] = int(docs)
        for word, lexemes in found.items():
            known[word] = cache[word] = tuple(lexemes)
        pairs = [(word, term) for word in words for term in known[word]]
        total = counts.pop("", 0)
        return pairs, counts, total

    @property
    def _ts_config_literal(self) -> str:
        return self._pg.ts_config.replace("'", "''")

    def _doc_freqs(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """Document frequency of each term (those in some memory) and the row count."""
        rows = self._rows("SELECT term, docs FROM term_docs WHERE term = ANY(%s)", (["", *terms],))
        freqs = {term: int(docs) for term, docs in rows if docs > 0}
        return {t: n for t, n in freqs.items() if t}, freqs.get("", 0)

    def _visible_rows(self, flt: MemoryFilter, cond: str, params: list[Any]) -> str | None:
        """For an isolated filter that lets at most ``isolated_scan_rows`` rows pass:
        those rows as a fenced subquery (``OFFSET 0``: the keyword conditions are
        checked on them, never through the shared index); else None."""
        if not flt.isolated or not flt.namespaces:
            return None
        keys = self._rows(
            f"SELECT m.key FROM memories m WHERE {cond} LIMIT %s",
            (*params, self.isolated_scan_rows + 1),
        )
        if len(keys) > self.isolated_scan_rows:
            return None
        self.keyword_rows_scanned += len(keys)
        listed = ",".join(str(int(row[0])) for row in keys)  # whole numbers only
        return f"(SELECT * FROM memories WHERE key = ANY('{{{listed}}}'::bigint[]) OFFSET 0)"

    def _visible_stats(
        self, terms: Sequence[str], cond: str, params: list[Any], source: str = "memories"
    ) -> tuple[dict[str, int], int]:
        """Like :meth:`_doc_freqs`, counting only rows that pass the filter."""
        total = int(self._row(f"SELECT count(*) FROM {source} m WHERE {cond}", params)[0])
        if not terms or not total:
            return {}, total
        queries = [_tsquery_word([t]) for t in terms]
        counts = ", ".join("count(*) FILTER (WHERE m.tsv @@ %s::tsquery)" for _ in terms)
        row = self._row(
            f"SELECT {counts} FROM {source} m WHERE m.tsv @@ %s::tsquery AND {cond}",
            (*queries, " | ".join(queries), *params),
        )
        return {t: int(n) for t, n in zip(terms, row, strict=True) if n}, total

    def term_stats(self, query: str) -> tuple[list[tuple[str, str]], dict[str, int], int]:
        return self._stems_and_freqs(
            query_words(query, language=self.keyword_language, rules=self.keyword_rules)
        )

    def _weights(self) -> list[float]:
        """ts_rank weights {D, C, B, A}: tags (C) and body (B) alike, the title above."""
        if self.title_weight >= 1.0:
            body, title = 1.0 / self.title_weight, 1.0
        else:
            body, title = 1.0, self.title_weight
        return [0.0, body, body, title]

    def keyword_search(
        self,
        query: str,
        k: int,
        flt: MemoryFilter,
        rows: dict[str, RankRow] | None = None,
        *,
        query_vector: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """Ranked keyword matches, at a cost bounded in large stores (the budget of
        :mod:`.keywords`, as in ``SQLiteStore.keyword_search``: rare words first,
        common words only alone, and then only over the newest ``common_window``
        matches). With
        ``query_vector``, the hits' RankRows carry their cosines (computed here),
        else their stored vectors."""
        cond, params = where(flt)
        if k <= 0 or cond == "FALSE":
            return []
        words = query_words(query, language=self.keyword_language, rules=self.keyword_rules)
        source = "memories"
        if flt.isolated:  # statistics of the rows the caller can see
            pairs = self._stems(words)
            source = self._visible_rows(flt, cond, params) or source
            if source == "memories":
                self.keyword_index_searches += 1
            freqs, total = self._visible_stats(sorted({t for _, t in pairs}), cond, params, source)
        else:
            pairs, freqs, total = self._stems_and_freqs(words)
        # Ranking costs about a microsecond a matching row in the server, whatever the
        # store's size: the word budget applies as soon as the matches exceed it, and
        # the window is at most RANK_ROWS_MAX rows.
        word_df, words, window_rows = choose_words(
            pairs, freqs, common_term_docs=self.common_term_docs,
            window=min(self.common_window, RANK_ROWS_MAX),
        )  # fmt: skip
        if not words:
            return []
        word_terms: dict[str, list[str]] = {}
        for word, term in pairs:
            word_terms.setdefault(word, []).append(term)
        queries = {w: _tsquery_word(word_terms[w]) for w in words}
        match = " | ".join(queries.values())
        window_sql: str = ""
        window_params: list[Any] = []
        if window_rows is not None:
            window_sql, window_params = self._window(
                match, window_rows, sum(word_df[w] for w in words), flt, source
            )
        score_sql = " + ".join("%s * ts_rank(%s::real[], m.tsv, %s::tsquery, 1)" for _ in words)
        weights = self._weights()
        score_params: list[Any] = []
        for w in words:
            score_params += [idf(word_df[w], max(total, 1)), weights, queries[w]]
        # The cosines (or stored vectors) of the k best, which the ranking needs,
        # computed after the sort so that it never carries them. Planned for its words each
        # time (no prepared statement): a generic plan cannot know they are rare and
        # intersects the match with the expiry index, 11 ms where 4.5 ms suffice at
        # 100k. A common-word window keeps the prepared plan, which intersects the
        # match with the key range: about 3 ms faster there than its custom plan,
        # which reads every row of the range.
        tail, tail_params = "v.embedding", []
        if query_vector is not None:  # NULL for a vector of another size (mid-reindex)
            q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
            tail = f"CASE WHEN vector_dims(v.embedding) = {q.size} THEN v.embedding <=> %s END"
            tail_params = [q]
        found = self._rows(
            f"SELECT s.id, s.score, {RANK_COLUMNS.replace('m.', 's.')}, {tail} FROM ("
            f"SELECT m.key, m.id, {score_sql} AS score, {RANK_COLUMNS} FROM {source} m "
            f"WHERE m.tsv @@ %s::tsquery {window_sql} AND {cond} "
            f"ORDER BY score DESC, m.key DESC LIMIT %s) s "
            f"LEFT JOIN memory_vectors v ON v.key = s.key ORDER BY s.score DESC, s.key DESC",
            (*tail_params, *score_params, match, *window_params, *params, k),
            binary=True,
            prepare=None if window_sql else False,
        )
        if rows is not None:
            keep_rank_rows(found, 2, rows, distance=query_vector is not None)
        return [(row[0], float(row[1])) for row in found]

    def _window(
        self, match: str, rows: int, matches: int, flt: MemoryFilter, source: str = "memories"
    ) -> tuple[str, list[Any]]:
        """The condition (SQL and parameters) that keeps (about) the newest ``rows``
        of ``matches`` matching rows; empty when all of them are kept.

        Finding the start exactly reads every match; keys grow with insertion, so
        the share of matches in the key range gives it for nothing, computed by the
        ranking statement itself from the current key range. For an isolated
        filter the visible matches are counted exactly instead (their spread over
        the key range depends on rows the caller cannot see).
        """
        if matches <= rows:
            return "", []
        if flt.isolated:
            cond, params = where(flt)
            row = self._row(
                f"SELECT m.key FROM {source} m WHERE m.tsv @@ %s::tsquery AND {cond} "
                f"ORDER BY m.key DESC OFFSET %s LIMIT 1",
                (match, *params, rows - 1),
            )
            return ("AND m.key >= %s", [int(row[0])]) if row else ("", [])
        # max - span + 1, span = ceil((max - min + 1) x rows / matches): the keys
        # holding about ``rows`` matches (an init plan: two index probes)
        return (
            "AND m.key >= (SELECT max(key) - ((max(key) - min(key) + 1) * %s + %s) / %s + 1 "
            "FROM memories)",
            [rows, matches - 1, matches],
        )
