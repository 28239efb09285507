"""The embedder interface: one abstract method, ``embed_batch``."""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np

V = TypeVar("V")


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors.

    Subclasses set ``name`` (the registry name: ``hash``, ``local``, ``openai``),
    ``model`` (the model identifier recorded in the store) and ``dimension``,
    and implement :meth:`embed_batch`.
    """

    name: str = "custom"
    model: str = "custom"
    dimension: int = 0

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; returns an array of shape ``(len(texts), dimension)``, float32,
        each row of unit length (a zero row only for a text with nothing to embed)."""

    def embed(self, text: str) -> np.ndarray:
        """One text; a vector of shape ``(dimension,)``."""
        return self.embed_batch([text])[0]

    @property
    def identity(self) -> str:
        """What the store records: ``model`` and ``dimension`` together."""
        return f"{self.model}:{self.dimension}"


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class LoadOnce(Generic[V]):
    """Process-wide values loaded on first use, each once: models and tables take
    seconds to load and every embedder of the same key shares one."""

    def __init__(self) -> None:
        self._values: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], V]) -> V:
        """The value of ``key``, loaded by ``load()`` the first time (under a lock)."""
        value = self._values.get(key)
        if value is not None:
            return value
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = load()
                self._values[key] = value
            return value

    def discard(self, key: Hashable) -> None:
        """Forget the value of ``key`` (the next :meth:`get` loads it again)."""
        with self._lock:
            self._values.pop(key, None)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/memchentic`` (``~/.cache/memchentic`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memchentic"
