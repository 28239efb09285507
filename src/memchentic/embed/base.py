"""The embedder interface: one abstract method, ``embed_batch``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


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
