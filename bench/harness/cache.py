"""Vectors kept on disk by text hash, so a second run embeds nothing again."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memchentic import Embedder

#: Where the benchmarks keep vectors unless told otherwise (bench/results/ is ignored).
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "results" / "embeddings.sqlite"


class DiskCachedEmbedder(Embedder):
    """``inner``'s vectors, kept in a SQLite file by SHA-1 of model and text, and in
    memory for the run (queries asked again by every system and ablation).

    The same model identity as ``inner`` (name, model, dimension), so a store built
    through the cache is the store ``inner`` would build. ``path=None`` keeps the
    vectors in memory only."""

    def __init__(self, inner: Embedder, path: Path | str | None = DEFAULT_PATH) -> None:
        self.inner = inner
        self.name, self.model, self.dimension = inner.name, inner.model, inner.dimension
        self.db: sqlite3.Connection | None = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path)
            self.db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, b BLOB)")
        self.memo: dict[str, np.ndarray] = {}
        #: Texts embedded by ``inner`` in this run (a second run: 0).
        self.computed = 0

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.model}\0{text}".encode()).hexdigest()

    def _read(self, keys: list[str]) -> None:
        todo = [k for k in dict.fromkeys(keys) if k not in self.memo]
        if self.db is None:
            return
        for start in range(0, len(todo), 500):
            chunk = todo[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for k, b in self.db.execute(f"SELECT k, b FROM v WHERE k IN ({marks})", chunk):
                self.memo[k] = np.frombuffer(b, dtype=np.float32)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        keys = [self._key(t) for t in texts]
        self._read(keys)
        first: dict[str, int] = {}  # each text not yet known, once
        for i, k in enumerate(keys):
            if k not in self.memo:
                first.setdefault(k, i)
        todo = list(first.values())
        for start in range(0, len(todo), 256):
            part = todo[start : start + 256]
            vectors = np.asarray(self.inner.embed_batch([texts[i] for i in part]), np.float32)
            self.computed += len(part)
            for i, v in zip(part, vectors, strict=True):
                self.memo[keys[i]] = v
            if self.db is not None:
                self.db.executemany(
                    "INSERT OR REPLACE INTO v VALUES (?, ?)",
                    [(keys[i], v.tobytes()) for i, v in zip(part, vectors, strict=True)],
                )
                self.db.commit()
        return np.vstack([self.memo[k] for k in keys])

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class Stopwatch(Embedder):
    """``inner``'s vectors, with the seconds spent getting them (to subtract)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.model, self.dimension = inner.name, inner.model, inner.dimension
        self.seconds = 0.0

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        began = time.perf_counter()
        try:
            return self.inner.embed_batch(texts)
        finally:
            self.seconds += time.perf_counter() - began
