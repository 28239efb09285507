"""An in-process approximate nearest-neighbour index over stored vectors.

The rows' vectors in the database are the truth; this index is a cache of
them, keyed by the row's integer key, that a store keeps in step with a change
log (see ``sqlite.py``). It answers with HNSW (usearch, cosine, half
precision) and can scan a given subset exactly, which the store uses when a
filter leaves few rows. Scores it returns are approximate; stores re-score the
final candidates from the stored float32 vectors.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

#: Graph degree and build effort: recall@10 >= 0.98 of exact at 1M (see bench/).
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH_MIN = 128


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise saving and loading of one index file across processes."""
    with open(path.with_suffix(path.suffix + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class VectorIndex:
    """A thread-safe HNSW index with exact scans of small subsets."""

    def __init__(self, dimension: int, *, exact_below: int = 20000) -> None:
        from usearch.index import Index

        self.dimension = dimension
        self.exact_below = exact_below
        #: The change-log position this index reflects.
        self.applied_seq = 0
        self._lock = threading.RLock()
        self._index = Index(
            ndim=dimension,
            metric="cos",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH_MIN,
        )

    def __len__(self) -> int:
        return len(self._index)

    def upsert(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        if not len(keys):
            return
        arr = np.asarray(keys, dtype=np.uint64)
        with self._lock:
            present = [k for k in arr.tolist() if self._index.contains(k)]
            if present:
                self._index.remove(np.asarray(present, dtype=np.uint64))
            self._index.add(arr, np.asarray(vectors, dtype=np.float32), threads=0)

    def remove(self, keys: Sequence[int]) -> None:
        with self._lock:
            present = [k for k in keys if self._index.contains(k)]
            if present:
                self._index.remove(np.asarray(present, dtype=np.uint64))

    def search(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest keys with their (approximate) cosine, best first."""
        with self._lock:
            size = len(self._index)
            if size == 0 or k <= 0:
                return []
            k = min(k, size)
            exact = size <= self.exact_below
            self._index.expansion_search = max(EXPANSION_SEARCH_MIN, 2 * k)
            found = self._index.search(np.asarray(vector, dtype=np.float32), k, exact=exact)
        return [
            (int(key), 1.0 - float(dist))
            for key, dist in zip(found.keys, found.distances, strict=True)
        ]

    def scan(self, vector: np.ndarray, keys: Sequence[int], k: int) -> list[tuple[int, float]]:
        """Exact top ``k`` among ``keys`` (those present in the index)."""
        with self._lock:
            present = [key for key in keys if self._index.contains(key)]
            if not present:
                return []
            matrix = self._index.get(np.asarray(present, dtype=np.uint64))
        matrix = np.asarray(matrix, dtype=np.float32).reshape(len(present), self.dimension)
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        sims = (matrix @ np.asarray(vector, dtype=np.float32)) / norms
        k = min(k, len(present))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(present) else np.arange(len(present))
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(present[i], float(sims[i])) for i in top]

    # --- persistence --------------------------------------------------------------
    def save(self, path: Path, epoch: str) -> None:
        """Write the index and the change-log position it reflects (atomically)."""
        with self._lock, _file_lock(path):
            tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
            self._index.save(str(tmp))
            os.replace(tmp, path)
            side = {"seq": self.applied_seq, "epoch": epoch, "dimension": self.dimension}
            side_path = path.with_suffix(path.suffix + ".json")
            tmp_side = side_path.with_suffix(f".{os.getpid()}.tmp")
            tmp_side.write_text(json.dumps(side))
            os.replace(tmp_side, side_path)

    @classmethod
    def load(
        cls, path: Path, epoch: str, dimension: int, *, exact_below: int
    ) -> VectorIndex | None:
        """The saved index, or None when missing, unreadable or of another epoch."""
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
            if side.get("epoch") != epoch or side.get("dimension") != dimension:
                return None
            index = cls(dimension, exact_below=exact_below)
            index._index.load(str(path))
            index.applied_seq = int(side["seq"])
            return index
        except (OSError, ValueError, KeyError, RuntimeError):
            return None
