"""The IVF-Flat part of :class:`~.vectors.VectorIndex`: spherical k-means training,
the calibration of how many lists a search probes, and :class:`Lists`, the
growable per-list matrices that searches scan (the module ``vectors`` describes
the design and the measurements behind these parameters).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

#: Lists per sqrt(vectors) at training: nlist = sqrt(N).
LISTS_PER_SQRT_N = 1.0
#: k-means sample (rows per list) and rounds.
SAMPLE_PER_LIST = 32
KMEANS_ROUNDS = 4
#: Retrain once the store has grown or shrunk this many times since the last training.
RETRAIN_FACTOR = 4
#: Re-bucketing compares an old list's rows with this many new centroids, those
#: nearest to the list's old centroid (not with all of them).
REBUCKET_CANDIDATES = 64
#: Calibration of nprobe: queries (own rows plus noise of this norm) and the recall
#: to reach at k = 10 and k = 100.
CALIBRATION_QUERIES = 256
CALIBRATION_NOISE = 1.0
#: Rows searched for the calibration queries' true neighbours (at most; see calibrate).
CALIBRATION_ROWS = 1 << 18
CALIBRATION_RECALL = {10: 0.99, 100: 0.98}
#: Fewest lists a search probes.
MIN_PROBE = 4
#: And it probes more while the lists scanned hold fewer than this many rows a result.
ROWS_PER_RESULT = 2
#: Lists ordered beyond the probes a query needs (the rest are left unsorted).
PROBE_ORDER_SLACK = 8
#: Seed of the sampling in training and calibration (mixed with the vector count).
SEED = 0x5EED

_SLOT_BITS = 32  # a key's place: list << _SLOT_BITS | row within the list
_SLOT_MASK = (1 << _SLOT_BITS) - 1
_CHUNK_ROWS = 4096  # rows per matrix product in bulk assignment


def unit_rows(vectors: np.ndarray, dimension: int) -> np.ndarray:
    """``vectors`` as float32 rows of ``dimension``, each of norm 1 (zero rows stay 0)."""
    matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, dimension)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def top(keys: np.ndarray, sims: np.ndarray, k: int) -> list[tuple[int, float]]:
    k = min(k, len(sims))
    top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    top = top[np.argsort(-sims[top], kind="stable")]
    return list(zip(keys[top].tolist(), sims[top].tolist(), strict=True))


def nearest(rows: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid (by dot product)."""
    out = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), _CHUNK_ROWS):
        block = rows[start : start + _CHUNK_ROWS]
        out[start : start + len(block)] = np.argmax(block @ centroids.T, axis=1)
    return out


def kmeans(sample: np.ndarray, nlist: int, rng: np.random.Generator) -> np.ndarray:
    """Spherical k-means: unit centroids; an emptied list is reseeded from the sample."""
    centroids = sample[rng.choice(len(sample), nlist, replace=False)]
    columns = np.ascontiguousarray(sample.T)
    for _ in range(KMEANS_ROUNDS):
        labels = nearest(sample, centroids)
        # one bincount a dimension: faster than sorting the rows and np.add.reduceat
        sums = np.stack([np.bincount(labels, column, nlist) for column in columns], axis=1)
        empty = np.flatnonzero(np.bincount(labels, minlength=nlist) == 0)
        if len(empty):
            sums[empty] = sample[rng.choice(len(sample), len(empty), replace=False)]
        centroids = unit_rows(sums, sample.shape[1])
    return centroids


def rebucket(
    blocks: Sequence[np.ndarray], old_centroids: np.ndarray, centroids: np.ndarray
) -> np.ndarray:
    """Each row's nearest new centroid, for the rows of an older training's lists
    (``blocks``, list by list): a list's rows are compared with the
    :data:`REBUCKET_CANDIDATES` new centroids nearest to its old centroid only."""
    wanted = min(len(centroids), REBUCKET_CANDIDATES)
    near = np.argsort(-(old_centroids @ centroids.T), axis=1, kind="stable")[:, :wanted]
    labels = [np.empty(0, dtype=np.int64)]
    for lid, rows in enumerate(blocks):
        if len(rows):
            labels.append(near[lid][np.argmax(rows @ centroids[near[lid]].T, axis=1)])
    return np.concatenate(labels)


def _exacttop(queries: np.ndarray, blocks: Sequence[np.ndarray], depth: int) -> np.ndarray:
    """Each query's ``depth`` nearest rows, best first (exact), as indices into the
    rows of ``blocks`` one after the other.

    Each query's ``depth``-th best cosine among an evenly spread subset of the rows
    is a floor for its ``depth``-th best among all, so only rows at or above it
    need ranking (a full argpartition of every score is the slow part otherwise).
    """
    total = sum(len(rows) for rows in blocks)
    stride = max(1, total // max(depth, 4 * math.isqrt(depth * total)))
    sims = queries @ np.concatenate([rows[::stride] for rows in blocks]).T
    # (less a little: the same dot product may round differently in another product)
    floor = -np.partition(-sims, depth - 1, axis=1)[:, depth - 1] - 1e-4
    asker, found, score = [], [], []
    offset = 0
    for rows in blocks:
        for start in range(0, len(rows), 16 * _CHUNK_ROWS):
            sims = queries @ rows[start : start + 16 * _CHUNK_ROWS].T
            q, at = np.nonzero(sims >= floor[:, None])
            asker.append(q)
            found.append(at + (offset + start))
            score.append(sims[q, at])
        offset += len(rows)
    q, at, sim = np.concatenate(asker), np.concatenate(found), np.concatenate(score)
    order = np.lexsort((-sim, q))  # by query, best first
    q, at = q[order], at[order]
    rank = np.arange(len(q)) - np.searchsorted(q, np.arange(len(queries)))[q]
    return at[rank < depth].reshape(len(queries), depth)


def calibrate(
    sample: np.ndarray,
    blocks: Sequence[np.ndarray],
    labels: np.ndarray,
    centroids: np.ndarray,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Lists to probe for recall :data:`CALIBRATION_RECALL` at k = 10 and k = 100, for
    queries near rows of ``sample``; ``labels`` gives the list of each row of ``blocks``.

    Past :data:`CALIBRATION_ROWS` rows the neighbours are looked for among every
    n-th row only: a subset's 10 nearest lie further out than the whole's, so the
    probes that reach them are, if anything, more than needed.
    """
    dimension = sample.shape[1]
    picks = rng.choice(len(sample), min(len(sample), CALIBRATION_QUERIES), replace=False)
    noise = rng.standard_normal((len(picks), dimension), dtype=np.float32)
    noise *= CALIBRATION_NOISE / math.sqrt(dimension)
    queries = unit_rows(sample[picks] + noise, dimension)
    stride = -(-len(labels) // CALIBRATION_ROWS)
    if stride > 1:
        starts = np.cumsum([0, *(len(rows) for rows in blocks[:-1])]).tolist()
        labels = np.concatenate(
            [labels[at : at + len(rows) : stride] for at, rows in zip(starts, blocks, strict=True)]
        )
        blocks = [rows[::stride] for rows in blocks]
    truth = _exacttop(queries, blocks, min(100, len(labels)))
    order = np.argsort(-(queries @ centroids.T), axis=1, kind="stable")
    rank = np.empty_like(order)  # rank[q, list]: where that list comes in q's probe order
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(len(centroids)), order.shape), 1)
    needed = np.take_along_axis(rank, labels[truth], 1) + 1  # probes to reach each neighbour
    out = []
    for k, recall in CALIBRATION_RECALL.items():
        ranks = np.sort(needed[:, :k], axis=None)
        out.append(float(ranks[max(0, math.ceil(recall * len(ranks)) - 1)]))
    return out[0], out[1]


def _groups(labels: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """(label, start, stop) of each run of equal values in sorted ``labels``."""
    cuts = (np.flatnonzero(np.diff(labels)) + 1).tolist()
    starts, stops = [0, *cuts], [*cuts, len(labels)]
    if len(labels):
        yield from zip(labels[starts].tolist(), starts, stops, strict=True)


class Lists:
    """Unit float32 rows grouped in lists (one list and no centroids: flat).

    Each list is a growable matrix and its keys; ``where`` maps a key to its place
    (``list << 32 | row``). Rows are numbered list by list where a whole-index
    order is needed (training, saving).
    """

    def __init__(
        self,
        dimension: int,
        centroids: np.ndarray | None = None,
        probes: tuple[float, float] = (1.0, 1.0),
    ) -> None:
        self.dimension = dimension
        self.centroids = centroids
        #: Lists to probe for k = 10 and k = 100 (calibrated at training).
        self.probes = probes
        self.nlist = 1 if centroids is None else len(centroids)
        self.rows: list[np.ndarray] = [np.empty((0, dimension), np.float32)] * self.nlist
        self.keys: list[np.ndarray] = [np.empty(0, np.uint64)] * self.nlist
        self.sizes = np.zeros(self.nlist, dtype=np.int64)
        self.where: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.where)

    def blocks(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each list's rows and keys (views)."""
        sizes = self.sizes.tolist()
        return (
            [rows[:size] for rows, size in zip(self.rows, sizes, strict=True)],
            [keys[:size] for keys, size in zip(self.keys, sizes, strict=True)],
        )

    # --- building -------------------------------------------------------------------
    def _allocate(self, sizes: np.ndarray) -> None:
        """Empty lists with room for these sizes and a quarter more."""
        for lid, size in enumerate(sizes.tolist()):
            self.rows[lid] = np.empty((size + size // 4 + 8, self.dimension), np.float32)
            self.keys[lid] = np.empty(size + size // 4 + 8, np.uint64)
        self.sizes[:] = sizes

    def _index(self, keys: np.ndarray, labels: np.ndarray, slots: np.ndarray) -> None:
        places = (labels << _SLOT_BITS) | slots
        self.where = dict(zip(keys.tolist(), places.tolist(), strict=True))
        if len(self.where) != len(keys):
            raise ValueError("repeated keys")

    def fill(
        self, sizes: np.ndarray, keys: np.ndarray, read_rows: Callable[[np.ndarray], None]
    ) -> None:
        """Lists of these sizes with these keys (list by list); ``read_rows(out)`` fills
        each list's rows in turn."""
        self._allocate(sizes)
        offsets = np.cumsum(sizes) - sizes
        for lid, (offset, size) in enumerate(zip(offsets.tolist(), sizes.tolist(), strict=True)):
            read_rows(self.rows[lid][:size])
            self.keys[lid][:size] = keys[offset : offset + size]
        labels = np.repeat(np.arange(self.nlist), sizes)
        self._index(keys, labels, np.arange(len(keys)) - np.repeat(offsets, sizes))

    def move_into(self, new: Lists, labels: np.ndarray) -> None:
        """Copy every row into ``new``: row ``i`` (list by list) into list ``labels[i]``."""
        sizes = np.bincount(labels, minlength=new.nlist)
        new._allocate(sizes)
        order = np.argsort(labels, kind="stable")
        slots = np.empty(len(labels), dtype=np.int64)  # each row's place in its new list
        slots[order] = np.arange(len(labels)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        offset = 0
        blocks, key_blocks = self.blocks()
        for rows, keys in zip(blocks, key_blocks, strict=True):
            mine = labels[offset : offset + len(rows)]
            by_list = np.argsort(mine, kind="stable")
            for lid, start, stop in _groups(mine[by_list]):
                picked, first = by_list[start:stop], int(slots[offset + by_list[start]])
                # straight into place; mode "raise" would buffer the output first
                np.take(rows, picked, 0, new.rows[lid][first : first + stop - start], "clip")
                new.keys[lid][first : first + stop - start] = keys[picked]
            offset += len(rows)
        new._index(np.concatenate([np.empty(0, np.uint64), *key_blocks]), labels, slots)

    def _reserve(self, lid: int, need: int) -> None:
        cap = max(need, len(self.keys[lid]) * 3 // 2, 16)
        size = int(self.sizes[lid])
        rows = np.empty((cap, self.dimension), dtype=np.float32)
        keys = np.empty(cap, dtype=np.uint64)
        rows[:size] = self.rows[lid][:size]
        keys[:size] = self.keys[lid][:size]
        self.rows[lid], self.keys[lid] = rows, keys

    # --- changes --------------------------------------------------------------------
    def assign(self, unit: np.ndarray) -> np.ndarray:
        if self.centroids is None:
            return np.zeros(len(unit), dtype=np.int64)
        if len(unit) == 1:  # einsum, not BLAS: see search
            return np.argmax(np.einsum("ij,j->i", self.centroids, unit[0]), keepdims=True)
        return nearest(unit, self.centroids)

    def add(self, keys: np.ndarray, unit: np.ndarray) -> None:
        """Append rows for keys not in the lists (each key once)."""
        labels = self.assign(unit)
        order = np.argsort(labels, kind="stable")
        labels, keys, unit = labels[order], keys[order], unit[order]
        starts = np.flatnonzero(np.diff(labels, prepend=-1))
        counts = np.diff(starts, append=len(labels))
        lids, ends = labels[starts], self.sizes[labels[starts]]
        for lid, start, count, end in zip(
            lids.tolist(), starts.tolist(), counts.tolist(), ends.tolist(), strict=True
        ):
            if end + count > len(self.keys[lid]):
                self._reserve(lid, end + count)
            self.rows[lid][end : end + count] = unit[start : start + count]
            self.keys[lid][end : end + count] = keys[start : start + count]
        self.sizes[lids] += counts
        slots = np.arange(len(labels)) + np.repeat(ends - starts, counts)
        places = (labels << _SLOT_BITS) | slots
        self.where.update(zip(keys.tolist(), places.tolist(), strict=True))

    def remove(self, keys: Iterable[int]) -> None:
        where, sizes = self.where, self.sizes
        for key in keys:
            place = where.pop(key, None)
            if place is None:
                continue
            lid, slot = place >> _SLOT_BITS, place & _SLOT_MASK
            last = int(sizes[lid]) - 1
            if slot != last:  # move the list's last row into the hole
                list_keys = self.keys[lid]
                moved = int(list_keys[last])
                list_keys[slot] = moved
                self.rows[lid][slot] = self.rows[lid][last]
                where[moved] = place
            sizes[lid] = last

    # --- reading --------------------------------------------------------------------
    def take_rows(self, numbers: np.ndarray) -> np.ndarray:
        """The rows at these (sorted) numbers, counting list by list."""
        ends = np.cumsum(self.sizes)
        lids = np.searchsorted(ends, numbers, side="right")
        return self._rows_at(lids, numbers - (ends - self.sizes)[lids])[1]

    def _rows_at(self, lids: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keys and rows at these places (``lids`` sorted)."""
        found_keys = [np.empty(0, np.uint64)]
        found_rows = [np.empty((0, self.dimension), np.float32)]
        for lid, start, stop in _groups(lids):
            found_keys.append(self.keys[lid][slots[start:stop]])
            found_rows.append(self.rows[lid][slots[start:stop]])
        return np.concatenate(found_keys), np.concatenate(found_rows)

    def gather(self, keys: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The present ones of ``keys`` (each once) and their rows."""
        where = self.where
        places = np.fromiter((where.get(int(k), -1) for k in keys), np.int64, len(keys))
        places = np.unique(places[places >= 0])
        return self._rows_at(places >> _SLOT_BITS, places & _SLOT_MASK)

    def nprobe(self, k: int) -> int:
        at10, at100 = self.probes
        want = at10 + max(0.0, at100 - at10) * math.log10(k / 10) if k > 10 else at10
        return min(self.nlist, max(MIN_PROBE, math.ceil(want)))

    def probe_plan(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """For each query: the lists in probe order and how many of them to scan."""
        if self.centroids is None:
            return np.zeros((len(queries), 1), np.int64), np.ones(len(queries), np.int64)
        if len(queries) == 1:  # einsum, not BLAS: see search
            sims = np.einsum("ij,j->i", self.centroids, queries[0])[None, :]
        else:
            sims = queries @ self.centroids.T
        need = self.nprobe(k)
        order = None
        width = need + PROBE_ORDER_SLACK
        if width < self.nlist:  # order the nearest lists only (a full sort of every
            # list for every query of a bulk write's check cost a sixth of its time)
            near = np.argpartition(-sims, width - 1, axis=1)[:, :width]
            by_sim = np.argsort(-np.take_along_axis(sims, near, 1), axis=1, kind="stable")
            order = np.take_along_axis(near, by_sim, 1)
            held = np.cumsum(self.sizes[order], axis=1)
            if (held[:, -1] < ROWS_PER_RESULT * k).any():  # tiny lists: the full order
                order = None
        if order is None:
            order = np.argsort(-sims, axis=1, kind="stable")
            held = np.cumsum(self.sizes[order], axis=1)
        count = np.maximum(need, (held < ROWS_PER_RESULT * k).sum(axis=1) + 1)
        return order, np.minimum(count, self.nlist)

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        order, count = self.probe_plan(query[None, :], k)
        keys, sims = [], []
        for lid in order[0, : count[0]].tolist():
            size = int(self.sizes[lid])
            if size:
                keys.append(self.keys[lid][:size])
                # einsum, not BLAS: a multi-threaded sgemv stalls badly when the cores are busy
                sims.append(np.einsum("ij,j->i", self.rows[lid][:size], query))
        if not keys:
            return []
        return top(np.concatenate(keys), np.concatenate(sims), k)

    def search_many(
        self, queries: np.ndarray, k: int, min_sim: float = -np.inf
    ) -> list[list[tuple[int, float]]]:
        """:meth:`search` for each row of ``queries``, list by list: each probed list
        is scanned once, by one matrix product with the queries that probe it, and
        each query keeps its best ``k`` so far; with ``min_sim``, of the rows
        scoring at least that (the same hits as filtering the best ``k``).

        Only scores at or above a bar are ranked when every query of the product has
        one: ``min_sim``, its ``k``-th best so far or, in a large list, the ``k``-th
        best of an evenly spread subset of the list's scores, which rows under it
        cannot beat (an argpartition of every score of the flat index was most of
        the time of a bulk write's check). Otherwise, all the scores are ranked.
        """
        order, count = self.probe_plan(queries, k)
        best_sims = np.full((len(queries), k), -np.inf, dtype=np.float32)
        best_keys = np.zeros((len(queries), k), dtype=np.uint64)
        asker, step = np.nonzero(np.arange(order.shape[1])[None, :] < count[:, None])
        wanted = order[asker, step]
        by_list = np.argsort(wanted, kind="stable")
        for lid, start, stop in _groups(wanted[by_list]):
            size = int(self.sizes[lid])
            if not size:
                continue
            rows, keys = self.rows[lid][:size], self.keys[lid][:size]
            span = max(1, (1 << 22) // size)  # queries per product: at most 16 MiB of scores
            stride = size // max(k, 4 * math.isqrt(k * size))  # > 1: a sample has >= k
            for part in range(start, stop, span):
                who = asker[by_list[part : min(stop, part + span)]]  # each query once a list
                sims = queries[who] @ rows.T
                bar = best_sims[who].min(axis=1)
                bar[np.isnan(bar)] = -np.inf  # (NaN scores, of NaN vectors: rank them all)
                bar = np.maximum(bar, min_sim)
                if stride > 1:
                    open_ = np.flatnonzero(bar == -np.inf)
                    if len(open_):
                        sample = sims[open_, ::stride]  # a copy
                        sample[np.isnan(sample)] = -np.inf
                        bar[open_] = np.partition(sample, -k, axis=1)[:, -k]
                if bar.min() == -np.inf:
                    _rank_all(best_sims, best_keys, who, sims, keys)
                    continue
                at = np.flatnonzero(sims >= bar[:, None])  # (a 2-D nonzero is far slower)
                hits = np.divmod(at, size)
                _keep_best(best_sims, best_keys, who, who[hits[0]], sims.ravel()[at],
                           keys[hits[1]])  # fmt: skip
        order = np.argsort(-best_sims, axis=1, kind="stable")
        ranked_sims = np.take_along_axis(best_sims, order, 1)
        ranked_keys = np.take_along_axis(best_keys, order, 1)
        asked, at = np.nonzero(ranked_sims != -np.inf)  # query by query, best first
        out: list[list[tuple[int, float]]] = [[] for _ in range(len(queries))]
        for q, key, sim in zip(
            asked.tolist(), ranked_keys[asked, at].tolist(), ranked_sims[asked, at].tolist(),
            strict=True,
        ):  # fmt: skip
            out[q].append((key, sim))
        return out


def _rank_all(
    best_sims: np.ndarray, best_keys: np.ndarray, who: np.ndarray, sims: np.ndarray,
    keys: np.ndarray,
) -> None:  # fmt: skip
    """Keep the best ``k`` of the queries ``who``'s best so far and their ``sims``
    against ``keys`` (one argpartition of every score)."""
    k = best_sims.shape[1]
    sims = np.concatenate([best_sims[who], sims], axis=1)
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]  # < k: a kept one
    kept = np.take_along_axis(best_keys[who], np.minimum(top, k - 1), 1)
    best_keys[who] = np.where(top < k, kept, keys[np.maximum(top - k, 0)])
    best_sims[who] = np.take_along_axis(sims, top, 1)


def _descending(sims: np.ndarray) -> np.ndarray:
    """32-bit int64 keys that sort float32 ``sims`` best first (one int sort of
    ``query << 32 | key`` took a third of the time of a two-key lexsort)."""
    bits = sims.astype(np.float32).view(np.int32)
    ordered = bits ^ ((bits >> 31) & 0x7FFFFFFF)  # signed ints in the floats' order
    return 0x7FFFFFFF - ordered.astype(np.int64)


def _keep_best(
    best_sims: np.ndarray,
    best_keys: np.ndarray,
    who: np.ndarray,
    asker: np.ndarray,
    sims: np.ndarray,
    keys: np.ndarray,
) -> None:
    """Merge new hits (``asker[i]`` found ``keys[i]`` at ``sims[i]``) into the best
    ``k`` so far of the queries ``who``."""
    k = best_sims.shape[1]
    held = best_sims[who].ravel()
    mine = held != -np.inf
    q = np.concatenate([np.repeat(who, k)[mine], asker])
    s = np.concatenate([held[mine], sims])
    key = np.concatenate([best_keys[who].ravel()[mine], keys])
    order = np.argsort(q << 32 | _descending(s), kind="stable")  # by query, best first
    q, s, key = q[order], s[order], key[order]
    rank = np.arange(len(q)) - np.searchsorted(q, q)
    kept = rank < k
    best_sims[who] = -np.inf
    best_sims[q[kept], rank[kept]] = s[kept]
    best_keys[q[kept], rank[kept]] = key[kept]
