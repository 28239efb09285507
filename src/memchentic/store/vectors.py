"""An in-process nearest-neighbour index over stored vectors.

The rows' vectors in the database are the truth; this index is a cache of
them, keyed by the row's integer key, that a store keeps in step with a change
log (see ``sqlite.py``). It has two parts, and every key lives in exactly one:

* a **flat** part: unit-normalised float32 rows in one numpy matrix, searched
  exactly (one matrix-vector product). A small store (up to ``exact_below``
  vectors) keeps everything here, so its searches are exact and its writes
  never pay for a graph;
* a **graph** part: an HNSW graph (usearch, cosine, half precision) built once
  the store outgrows ``exact_below``. New vectors still land in the flat part
  first and move into the graph in batches of :data:`FLUSH_AT` (one
  multi-threaded insert instead of one call per write).

A search asks both parts and merges; with ``exact_below`` vectors or fewer the
graph part is scanned exactly too. Scores it returns are approximate (the graph
holds half precision); stores re-score the final candidates from the stored
float32 vectors. It can also scan a given subset exactly, which the store uses
when a filter leaves few rows.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

#: Graph degree and build effort; with :data:`EXPANSION_SEARCH_MIN` they give
#: recall@10 >= 0.98 of an exact scan on clustered data (see bench/README.md).
CONNECTIVITY = 24
EXPANSION_ADD = 128
EXPANSION_SEARCH_MIN = 128
#: Vectors the flat part holds before they move into the graph in one batch.
FLUSH_AT = 1024


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise saving and loading of one index file across processes."""
    with open(path.with_suffix(path.suffix + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unit_rows(vectors: np.ndarray, dimension: int) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, dimension)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class _Flat:
    """Unit float32 rows in a growable matrix, with a key -> row map."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.keys = np.empty(0, dtype=np.uint64)
        self.matrix = np.empty((0, dimension), dtype=np.float32)
        self.size = 0
        self.slot: dict[int, int] = {}

    def __len__(self) -> int:
        return self.size

    def _grow(self, need: int) -> None:
        if need <= len(self.keys):
            return
        cap = max(need, 2 * len(self.keys), 1024)
        keys = np.empty(cap, dtype=np.uint64)
        matrix = np.empty((cap, self.dimension), dtype=np.float32)
        keys[: self.size] = self.keys[: self.size]
        matrix[: self.size] = self.matrix[: self.size]
        self.keys, self.matrix = keys, matrix

    def upsert(self, keys: Sequence[int], unit: np.ndarray) -> None:
        self._grow(self.size + len(keys))
        for key, row in zip(keys, unit, strict=True):
            at = self.slot.get(key)
            if at is None:
                at = self.slot[key] = self.size
                self.keys[at] = key
                self.size += 1
            self.matrix[at] = row

    def remove(self, keys: Sequence[int]) -> None:
        for key in keys:
            at = self.slot.pop(key, None)
            if at is None:
                continue
            last = self.size - 1
            if at != last:  # move the last row into the hole
                moved = int(self.keys[last])
                self.keys[at] = moved
                self.matrix[at] = self.matrix[last]
                self.slot[moved] = at
            self.size = last

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """All keys and rows, emptying the part."""
        keys, matrix = self.keys[: self.size].copy(), self.matrix[: self.size].copy()
        self.__init__(self.dimension)  # type: ignore[misc]
        return keys, matrix

    def search(self, unit_query: np.ndarray, k: int) -> list[tuple[int, float]]:
        if self.size == 0 or k <= 0:
            return []
        # einsum, not BLAS: a multi-threaded sgemv stalls badly when the cores are busy
        sims = np.einsum("ij,j->i", self.matrix[: self.size], unit_query)
        return _top(self.keys[: self.size], sims, k)


def _top(keys: np.ndarray, sims: np.ndarray, k: int) -> list[tuple[int, float]]:
    k = min(k, len(sims))
    top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    top = top[np.argsort(-sims[top], kind="stable")]
    return list(zip(keys[top].tolist(), sims[top].tolist(), strict=True))


class VectorIndex:
    """A thread-safe vector index: exact up to ``exact_below`` vectors, HNSW above.

    Up to ``exact_below`` vectors (*exact mode*) the flat part holds every vector
    and answers alone. Past half of that a *shadow* graph starts to fill in the
    background of the writes: each write lets at most two vectors' worth of graph
    inserts happen (in batches of :data:`FLUSH_AT`), so the graph is nearly
    complete when the store outgrows ``exact_below`` and no single write pays for
    building it. Past ``exact_below`` the flat part holds only the vectors not yet
    in the graph.
    """

    def __init__(self, dimension: int, *, exact_below: int = 20000) -> None:
        self.dimension = dimension
        self.exact_below = exact_below
        #: The change-log position this index reflects.
        self.applied_seq = 0
        self._saved: tuple[int, str] | None = None  # (seq, epoch) of the file on disk
        self._lock = threading.RLock()
        self._flat = _Flat(dimension)
        self._graph: Any = None  # a usearch Index (the shadow graph in exact mode)
        self._exact_mode = True  # the flat part holds every vector
        self._pending: set[int] = set()  # keys in the flat part, not in the graph
        self._credit = 0  # graph inserts the writes have paid for (exact mode)

    def _new_graph(self) -> Any:
        from usearch.index import Index

        return Index(
            ndim=self.dimension,
            metric="cos",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH_MIN,
        )

    def __len__(self) -> int:
        if self._exact_mode or self._graph is None:
            return len(self._flat)
        return len(self._flat) + len(self._graph)

    def upsert(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        if not len(keys):
            return
        keys = [int(k) for k in keys]
        unit = _unit_rows(vectors, self.dimension)
        with self._lock:
            self._remove_from_graph(keys)
            self._flat.upsert(keys, unit)
            if self._graph is not None:
                self._pending.update(keys)
            self._credit += 2 * len(keys)
            self._maybe_flush()

    def remove(self, keys: Sequence[int]) -> None:
        if not len(keys):
            return
        keys = [int(k) for k in keys]
        with self._lock:
            self._flat.remove(keys)
            self._remove_from_graph(keys)
            self._pending.difference_update(keys)

    def _remove_from_graph(self, keys: Sequence[int]) -> None:
        if self._graph is None or not len(self._graph):
            return
        arr = np.asarray(keys, dtype=np.uint64)
        present = arr[np.asarray(self._graph.contains(arr), dtype=bool).reshape(-1)]
        if len(present):
            self._graph.remove(present)

    def _maybe_flush(self) -> None:
        if not self._exact_mode:
            if len(self._pending) >= FLUSH_AT:
                self._flush(list(self._pending))
            return
        size = len(self._flat)
        if size <= self.exact_below // 2:
            return
        if self._graph is None:  # start the shadow graph: everything is pending
            self._graph = self._new_graph()
            self._pending = set(self._flat.slot)
            self._credit = 0
        if size > self.exact_below:  # outgrown: the graph takes over
            self._exact_mode = False
            self._flush(list(self._pending))
            self._flat = _Flat(self.dimension)  # every vector is in the graph now
        elif len(self._pending) >= FLUSH_AT and self._credit >= FLUSH_AT:
            batch = sorted(self._pending)[:FLUSH_AT]
            self._credit -= len(batch)
            self._flush(batch)

    def _flush(self, keys: list[int]) -> None:
        """Add these pending keys to the graph; past exact mode, drop them from the
        flat part."""
        if not keys:
            return
        rows = self._flat.matrix[[self._flat.slot[k] for k in keys]]
        self._graph.add(np.asarray(keys, dtype=np.uint64), rows, threads=0)
        self._pending.difference_update(keys)
        if not self._exact_mode:
            self._flat.remove(keys)

    def flush(self) -> None:
        """Move every pending vector into the graph (past exact mode)."""
        with self._lock:
            if not self._exact_mode:
                self._flush(list(self._pending))

    def search(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest keys with their (approximate) cosine, best first."""
        query = _unit_rows(vector, self.dimension)[0]
        with self._lock:
            size = len(self)
            if size == 0 or k <= 0:
                return []
            k = min(k, size)
            found = self._flat.search(query, k)
            graph = self._graph
            if not self._exact_mode and graph is not None and len(graph):
                graph.expansion_search = max(EXPANSION_SEARCH_MIN, k + k // 4)
                hits = graph.search(query, min(k, len(graph)), exact=size <= self.exact_below)
                found.extend(
                    (int(key), 1.0 - float(dist))
                    for key, dist in zip(hits.keys, hits.distances, strict=True)
                )
                found.sort(key=lambda item: -item[1])
        return found[:k]

    def scan(self, vector: np.ndarray, keys: Sequence[int], k: int) -> list[tuple[int, float]]:
        """Exact top ``k`` among ``keys`` (those present in the index)."""
        if not len(keys) or k <= 0:
            return []
        query = _unit_rows(vector, self.dimension)[0]
        arr = np.asarray(keys, dtype=np.uint64)
        parts_keys: list[np.ndarray] = []
        parts_rows: list[np.ndarray] = []
        with self._lock:
            flat = self._flat
            if flat.size:
                mask = np.isin(flat.keys[: flat.size], arr)
                parts_keys.append(flat.keys[: flat.size][mask])
                parts_rows.append(flat.matrix[: flat.size][mask])
            graph = self._graph
            if not self._exact_mode and graph is not None and len(graph):
                present = arr[np.asarray(graph.contains(arr), dtype=bool).reshape(-1)]
                if len(present):
                    got = graph.get(present, dtype=np.float32)
                    rows = np.stack(got) if isinstance(got, tuple) else np.asarray(got)
                    parts_keys.append(present)
                    parts_rows.append(_unit_rows(rows, self.dimension))
        if not parts_keys:
            return []
        all_keys = np.concatenate(parts_keys)
        if not len(all_keys):
            return []
        sims = np.einsum("ij,j->i", np.concatenate(parts_rows), query)
        return _top(all_keys, sims, k)

    # --- persistence --------------------------------------------------------------
    def save(self, path: Path, epoch: str) -> None:
        """Write the index and the change-log position it reflects (atomically).

        In exact mode the flat part is saved (a ``.npz`` of its rows; a shadow
        graph is not kept); past it, pending vectors move into the graph and the
        graph is saved. Nothing is written when the file on disk already reflects
        this position.
        """
        with self._lock, _file_lock(path):
            if self._saved == (self.applied_seq, epoch) and path.exists():
                return
            self.flush()
            tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
            if not self._exact_mode and self._graph is not None:
                self._graph.save(str(tmp))
                kind = "hnsw"
            else:
                with open(tmp, "wb") as handle:
                    np.savez(
                        handle,
                        keys=self._flat.keys[: self._flat.size],
                        matrix=self._flat.matrix[: self._flat.size],
                    )
                kind = "flat"
            os.replace(tmp, path)
            side = {
                "seq": self.applied_seq, "epoch": epoch, "dimension": self.dimension,
                "format": kind,
            }  # fmt: skip
            side_path = path.with_suffix(path.suffix + ".json")
            tmp_side = side_path.with_suffix(f".{os.getpid()}.tmp")
            tmp_side.write_text(json.dumps(side))
            os.replace(tmp_side, side_path)
            self._saved = (self.applied_seq, epoch)

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
            if side.get("format", "hnsw") == "flat":
                with np.load(path, allow_pickle=False) as data:
                    keys, matrix = data["keys"], data["matrix"]
                    if matrix.shape != (len(keys), dimension):
                        return None
                    index._flat.upsert(keys.tolist(), matrix.astype(np.float32))
            else:
                graph = index._new_graph()
                graph.load(str(path))
                if graph.ndim != dimension:
                    return None
                index._graph = graph
                index._exact_mode = False
            index.applied_seq = int(side["seq"])
            index._saved = (index.applied_seq, epoch)
            return index
        except (OSError, ValueError, KeyError, RuntimeError, EOFError):
            return None
