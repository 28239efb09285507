"""Shared fixtures: a fresh store per test, a deterministic embedder with chosen
vectors, and the real local model (loaded once per session)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from memchentic import Embedder, HashEmbedder, Memory, Settings
from memchentic.embed.base import normalise_rows


class TableEmbedder(Embedder):
    """Known texts get the vectors we choose; any other text falls back to hashing.
    Registered like any embedder; lets a test control cosine similarities exactly."""

    name = "table"
    model = "test-table"

    def __init__(self, table: Mapping[str, Sequence[float]] | None = None, dimension: int = 8):
        self.dimension = dimension
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in (table or {}).items()}
        self._fallback = HashEmbedder(dimension=dimension)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self.table[t] if t in self.table else self._fallback.embed(t) for t in texts]
        return normalise_rows(np.vstack(rows))


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def mem(db_path: Path, settings: Settings) -> Iterator[Memory]:
    m = Memory(path=db_path, embedder="hash", settings=settings)
    yield m
    m.close()


@pytest.fixture(scope="session")
def local_embedder() -> Embedder:
    from memchentic.embed.local import LocalEmbedder, local_available

    if not local_available():
        pytest.skip("the local embedder ([local] extra) is not installed")
    return LocalEmbedder()


@pytest.fixture
def local_mem(tmp_path: Path, local_embedder: Embedder) -> Iterator[Memory]:
    m = Memory(path=tmp_path / "local.db", embedder=local_embedder)
    yield m
    m.close()
