"""An in-process nearest-neighbour index over stored vectors.

The rows' vectors in the database are the truth; this index is a cache of
them, keyed by the row's integer key, that a store keeps in step with a change
log (see ``sqlite.py``). Vectors are held unit-normalised in float32, in *lists*:
growable matrices of rows with their keys. The index has two forms:

* **flat** (up to ``exact_below`` vectors): one list, scanned whole by every
  search, so a small store's searches are exact;
* **IVF-Flat** (above): ``nlist`` lists around centroids from spherical k-means.
  A search ranks the centroids against the query and scans the ``nprobe``
  nearest lists, each with one product over its contiguous rows. An insert goes
  straight into the list of its nearest centroid and a removal moves the list's
  last row into the hole: nothing is deferred.

Why IVF and not a graph (usearch's HNSW, used before): an insert costs ``nlist``
dot products (one matrix product per batch) and a copy, where a graph insert is
a search of its own (usearch took about 2,200 vectors/s here, this index about
65,000/s, trainings included); and the rows stay exact float32, so the cosines
it returns are exact and a neighbour is missed only when its list is not probed,
a rate the index measures itself instead of assuming.

The parameters, measured with ``bench/vector_index.py`` (the corpus of
``bench/search_scale.py``: 384 dimensions, clustered like text embeddings):

* ``nlist`` = sqrt(N) at training (:data:`LISTS_PER_SQRT_N`). A search scans about
  ``nprobe x N / nlist`` rows; more lists (4 sqrt(N), N / 250) need
  proportionally more probes for the same recall, so scan hardly fewer rows,
  while every insert and re-bucketing costs ``nlist`` dot products.
* Training: :data:`KMEANS_ROUNDS` rounds of spherical k-means on a seeded sample of
  :data:`SAMPLE_PER_LIST` rows a list (more rounds or rows did not change recall),
  so the same changes in the same order give the same index. It is redone when
  the store has grown or shrunk :data:`RETRAIN_FACTOR` times since the last
  training, re-bucketing every row (a list's rows against the
  :data:`REBUCKET_CANDIDATES` new centroids nearest its old one), so that cost
  stays a fixed share of the inserts and the lists follow the data. It runs in the
  write that crosses the line: about 0.7 s at 85k vectors, 2 s at 340k, 8 s at 1M.
* ``nprobe`` is calibrated at each training rather than guessed: the index takes
  :data:`CALIBRATION_QUERIES` of its rows, moves each off the data by isotropic
  noise (:data:`CALIBRATION_NOISE`: cosine ~0.7 to its row), finds their true 10
  and 100 nearest rows and keeps the fewest probes that reach
  :data:`CALIBRATION_RECALL` of them. A search for ``k`` probes that many lists
  (interpolated on log k between 10 and 100, extrapolated past it, at least
  :data:`MIN_PROBE`), and more while they hold under :data:`ROWS_PER_RESULT` x
  ``k`` rows. On the corpus that is 5 to 10 lists (recall@10 0.995 or more at
  100k and 1M); on uniformly random vectors, which have no clusters to find, it
  is nearly all of them: recall holds, at the cost of a near-full scan.

It can also scan a given subset exactly, which the store uses when a filter
leaves few rows.
"""

from __future__ import annotations

import json
import math
import os
import threading
import zipfile
from collections.abc import Sequence
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import IO

import numpy as np

from ..file_lock import file_lock
from .ivf import (
    LISTS_PER_SQRT_N,
    RETRAIN_FACTOR,
    SAMPLE_PER_LIST,
    SEED,
    Lists,
    calibrate,
    kmeans,
    nearest,
    rebucket,
    top,
    unit_rows,
)

_FLOAT32 = np.dtype(np.float32).str
_UINT64 = np.dtype(np.uint64).str


def _file_lock(path: Path) -> AbstractContextManager[None]:
    """Serialise saving and loading of one index file across processes."""
    return file_lock(path.with_suffix(path.suffix + ".lock"))


class VectorIndex:
    """A thread-safe vector index: exact up to ``exact_below`` vectors, IVF-Flat above.

    Every change is applied at once (nothing is deferred); the write that takes the
    store past ``exact_below`` vectors, or :data:`RETRAIN_FACTOR` times past the
    size of the last training, trains the lists and re-buckets every vector. Going
    under half of ``exact_below`` makes the index flat (exact) again.
    """

    def __init__(self, dimension: int, *, exact_below: int = 20000) -> None:
        self.dimension = dimension
        self.exact_below = exact_below
        #: The change-log position this index reflects.
        self.applied_seq = 0
        self._saved: tuple[int, str] | None = None  # (seq, epoch) of the file on disk
        self._lock = threading.RLock()
        self._lists = Lists(dimension)
        self._trained = 0  # vectors at the last training; 0: flat

    def __len__(self) -> int:
        return len(self._lists)

    def upsert(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        """Insert or replace these keys' vectors (of a repeated key, the last wins)."""
        if not len(keys):
            return
        ints = [int(k) for k in keys]
        unit = unit_rows(vectors, self.dimension)
        if len(unit) != len(ints):
            raise ValueError(f"{len(ints)} keys but {len(unit)} vectors")
        if len(set(ints)) != len(ints):
            last = sorted({key: at for at, key in enumerate(ints)}.values())
            ints, unit = [ints[at] for at in last], unit[last]
        with self._lock:
            self._lists.remove(ints)  # a replaced vector may belong to another list
            self._lists.add(np.asarray(ints, dtype=np.uint64), unit)
            self._maybe_retrain()

    def remove(self, keys: Sequence[int]) -> None:
        """Drop these keys (missing ones are ignored)."""
        if not len(keys):
            return
        with self._lock:
            self._lists.remove(int(k) for k in keys)
            self._maybe_retrain()

    def flush(self) -> None:
        """Nothing to do: every change is applied when it is made (kept for callers)."""

    def _maybe_retrain(self) -> None:
        size, trained = len(self._lists), self._trained
        if not trained:
            if size > self.exact_below:
                self._retrain()
        elif (
            size <= self.exact_below // 2
            or size > RETRAIN_FACTOR * trained
            or size * RETRAIN_FACTOR < trained
        ):
            self._retrain()

    def _retrain(self) -> None:
        """Train lists for the vectors held now (or go flat) and re-bucket them all."""
        old, size = self._lists, len(self._lists)
        if size <= self.exact_below:
            new, labels = Lists(self.dimension), np.zeros(size, dtype=np.int64)
            self._trained = 0
        else:
            rng = np.random.default_rng([SEED, size])
            nlist = max(1, min(size, round(LISTS_PER_SQRT_N * math.sqrt(size))))
            picks = rng.choice(size, min(size, SAMPLE_PER_LIST * nlist), replace=False)
            sample = old.take_rows(np.sort(picks))
            centroids = kmeans(sample, nlist, rng)
            blocks = old.blocks()[0]
            if old.centroids is None:
                labels = np.concatenate([nearest(rows, centroids) for rows in blocks])
            else:
                labels = rebucket(blocks, old.centroids, centroids)
            probes = calibrate(sample, blocks, labels, centroids, rng)
            new = Lists(self.dimension, centroids, probes)
            self._trained = size
        old.move_into(new, labels)
        self._lists = new

    def search(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest keys with their cosine, best first (exact float32 cosines;
        past ``exact_below`` a key outside the probed lists can be missed)."""
        query = unit_rows(vector, self.dimension)[0]
        with self._lock:
            size = len(self._lists)
            if size == 0 or k <= 0:
                return []
            return self._lists.search(query, min(k, size))

    def search_many(
        self, vectors: np.ndarray, k: int, min_sim: float = -np.inf
    ) -> list[list[tuple[int, float]]]:
        """:meth:`search` for each row of ``vectors``, batched into matrix products
        (the same answers, up to float rounding of the dot products); with
        ``min_sim``, only the hits scoring at least that."""
        queries = unit_rows(vectors, self.dimension)
        with self._lock:
            size = len(self._lists)
            if size == 0 or k <= 0 or not len(queries):
                return [[] for _ in range(len(queries))]
            return self._lists.search_many(queries, min(k, size), min_sim)

    def scan(self, vector: np.ndarray, keys: Sequence[int], k: int) -> list[tuple[int, float]]:
        """Exact top ``k`` among ``keys`` (those present in the index)."""
        if not len(keys) or k <= 0:
            return []
        query = unit_rows(vector, self.dimension)[0]
        with self._lock:
            found, rows = self._lists.gather(keys)
        if not len(found):
            return []
        return top(found, np.einsum("ij,j->i", rows, query), k)

    # --- persistence --------------------------------------------------------------
    def save(self, path: Path, epoch: str) -> None:
        """Write the index and the change-log position it reflects (atomically).

        The file is an ``.npz``: ``keys`` and ``matrix`` (the rows, list by list),
        and for IVF also ``sizes`` (rows per list), ``centroids`` and ``state``
        (the calibrated probes and the size at training). Nothing is written when
        the file on disk already reflects this position.
        """
        with self._lock, _file_lock(path):
            if self._saved == (self.applied_seq, epoch) and path.exists():
                return
            tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
            side_path = path.with_suffix(path.suffix + ".json")
            tmp_side = side_path.with_suffix(f".{os.getpid()}.tmp")
            try:
                kind = self._write_npz(tmp)
                os.replace(tmp, path)
                side = {
                    "seq": self.applied_seq, "epoch": epoch, "dimension": self.dimension,
                    "format": kind,
                }  # fmt: skip
                tmp_side.write_text(json.dumps(side))
                os.replace(tmp_side, side_path)
            except BaseException:  # a full disk: leave no half-written file behind
                for leftover in (tmp, tmp_side):
                    with suppress(OSError):
                        leftover.unlink()
                raise
            self._saved = (self.applied_seq, epoch)

    def _write_npz(self, tmp: Path) -> str:
        """Stream the lists into ``tmp`` (no copy of the whole matrix in memory)."""
        lists = self._lists
        sizes = lists.sizes.tolist()
        small = {"keys": np.concatenate([k[:s] for k, s in zip(lists.keys, sizes, strict=True)])}
        if lists.centroids is not None:
            small["sizes"] = lists.sizes
            small["centroids"] = lists.centroids
            small["state"] = np.array([*lists.probes, self._trained], dtype=np.float64)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, array in small.items():
                with archive.open(name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)
            with archive.open("matrix.npy", "w", force_zip64=True) as member:
                header = {"descr": _FLOAT32, "fortran_order": False,
                          "shape": (len(lists), self.dimension)}  # fmt: skip
                np.lib.format.write_array_header_1_0(member, header)
                for rows, size in zip(lists.rows, sizes, strict=True):
                    member.write(rows[:size].data)
        return "flat" if lists.centroids is None else "ivf"

    @classmethod
    def load(
        cls, path: Path, epoch: str, dimension: int, *, exact_below: int
    ) -> VectorIndex | None:
        """The saved index, or None when missing, unreadable, of another epoch or
        dimension, or of an older format (an HNSW graph)."""
        side_path = path.with_suffix(path.suffix + ".json")
        try:
            with _file_lock(path):
                return cls._load_locked(path, side_path, epoch, dimension, exact_below)
        except OSError:
            return None

    @classmethod
    def _load_locked(
        cls, path: Path, side_path: Path, epoch: str, dimension: int, exact_below: int
    ) -> VectorIndex | None:
        try:
            side = json.loads(side_path.read_text())
            kind = side.get("format")
            if side.get("epoch") != epoch or side.get("dimension") != dimension:
                return None
            if kind not in ("flat", "ivf"):  # an HNSW graph: the store rebuilds
                return None
            index = cls(dimension, exact_below=exact_below)
            with zipfile.ZipFile(path) as archive:
                index._read_npz(archive, kind)
            index._maybe_retrain()  # exact_below may have changed
            index.applied_seq = int(side["seq"])
            index._saved = (index.applied_seq, epoch)
            return index
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            return None

    def _read_npz(self, archive: zipfile.ZipFile, kind: str) -> None:
        def small(name: str) -> np.ndarray:
            with archive.open(name + ".npy") as member:
                return np.asarray(np.lib.format.read_array(member, allow_pickle=False))

        keys = small("keys")
        if kind == "flat":
            lists, sizes = Lists(self.dimension), np.array([len(keys)])
        else:
            centroids, state, sizes = small("centroids"), small("state"), small("sizes")
            if centroids.shape != (len(sizes), self.dimension) or len(state) != 3:
                raise ValueError("bad index file")
            probes = (float(state[0]), float(state[1]))
            lists = Lists(self.dimension, centroids.astype(np.float32), probes)
            self._trained = int(state[2])
        if keys.dtype.str != _UINT64 or keys.ndim != 1 or int(sizes.sum()) != len(keys):
            raise ValueError("bad index file")
        with archive.open("matrix.npy") as member:
            _read_matrix_header(member, (len(keys), self.dimension))

            def read_rows(out: np.ndarray) -> None:
                data = member.read(out.nbytes)
                if len(data) != out.nbytes:
                    raise ValueError("truncated index file")
                out[:] = np.frombuffer(data, dtype=np.float32).reshape(out.shape)

            lists.fill(sizes.astype(np.int64), keys, read_rows)
        self._lists = lists


def _read_matrix_header(member: IO[bytes], shape: tuple[int, int]) -> None:
    version = np.lib.format.read_magic(member)
    read = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    got_shape, fortran, dtype = read(member)
    if tuple(got_shape) != shape or fortran or dtype.str != _FLOAT32:
        raise ValueError("bad index file")
