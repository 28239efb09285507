"""A dependency-free embedder: signed feature hashing of words, bigrams and trigrams.

The vectors carry no meaning beyond shared surface forms: two texts are similar
when they share words (or parts of words), unrelated texts sit near 0 cosine.
It is the fallback when no semantic model is installed, and the embedder of
choice for tests: fast, tiny and identical across processes and machines
(every feature is hashed with :func:`hashlib.blake2b`, never :func:`hash`, whose
value changes between Python runs).

Features of a text (lower-cased, split on unicode ``\\w+``):

* each word, weight 1;
* each pair of adjacent words, weight 0.5;
* the character 3-grams of each word padded as ``<word>``, together weight 0.5
  (each ``0.5 / sqrt(count)``), so ``deploy`` and ``deployment`` overlap.

Each feature adds ``±weight`` at ``blake2b(feature) mod dimension``; the sign is
another bit of the same hash, so collisions cancel out on average.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from memchentic.errors import ValidationError

from .base import Embedder, normalise_rows

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+")
_PERSON = b"memchentic-hv1"  # domain separation; part of the model identity "hash-v1"
_WORD_WEIGHT = 1.0
_BIGRAM_WEIGHT = 0.5
_TRIGRAM_TOTAL = 0.5


def _hash64(feature: str) -> int:
    """A stable 64-bit hash of a feature string."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, person=_PERSON).digest()
    return int.from_bytes(digest, "little")


def _slot(feature: str, dimension: int, weight: float) -> tuple[int, float]:
    """Index and signed weight of one feature."""
    h = _hash64(feature)
    sign = -1.0 if h >> 63 else 1.0
    return h % dimension, sign * weight


@lru_cache(maxsize=1 << 17)
def _word_features(word: str, dimension: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The word itself and its character 3-grams, as (indices, signed weights)."""
    slots = [_slot("w:" + word, dimension, _WORD_WEIGHT)]
    padded = f"<{word}>"
    grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
    if grams:
        each = _TRIGRAM_TOTAL / math.sqrt(len(grams))
        slots.extend(_slot("c:" + gram, dimension, each) for gram in grams)
    indices, weights = zip(*slots, strict=True)
    return indices, weights


@lru_cache(maxsize=1 << 17)
def _bigram_feature(first: str, second: str, dimension: int) -> tuple[int, float]:
    """One pair of adjacent words."""
    return _slot(f"b:{first} {second}", dimension, _BIGRAM_WEIGHT)


class HashEmbedder(Embedder):
    """Feature-hashing embedder; deterministic, no model, no dependencies beyond numpy.

    >>> e = HashEmbedder(dimension=64)
    >>> e.embed("hello world").shape
    (64,)
    """

    name = "hash"
    model = "hash-v1"

    def __init__(self, dimension: int = 384) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise ValidationError("dimension", "must be an integer of at least 8")
        self.dimension = dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; rows are unit length, zero for a text without any word."""
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not one string")
        dim = self.dimension
        count = len(texts)
        flat: list[int] = []
        weights: list[float] = []
        per_row = np.zeros(count, dtype=np.int64)
        for row, text in enumerate(texts):
            words = _WORD.findall(str(text).lower())
            if not words:
                continue
            start = len(flat)
            for word in words:
                indices, signed = _word_features(word, dim)
                flat.extend(indices)
                weights.extend(signed)
            for first, second in zip(words, words[1:], strict=False):
                index, weight = _bigram_feature(first, second, dim)
                flat.append(index)
                weights.append(weight)
            per_row[row] = len(flat) - start
        if not flat:
            return np.zeros((count, dim), dtype=np.float32)
        offsets = np.repeat(np.arange(count, dtype=np.int64) * dim, per_row)
        summed = np.bincount(
            np.asarray(flat, dtype=np.int64) + offsets,
            weights=np.asarray(weights, dtype=np.float64),
            minlength=count * dim,
        )
        return normalise_rows(summed.reshape(count, dim))

    def __repr__(self) -> str:
        return f"HashEmbedder(dimension={self.dimension})"
