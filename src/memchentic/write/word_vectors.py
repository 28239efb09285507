"""How close two words are in meaning, from MiniLM's vocabulary (docs/design.md, section 4).

A changed word that is a near synonym ("near" / "close", "afraid" / "scared",
"short" / "brief") does not make a new statement. Whether it is one is read from
word vectors, not from a growing lexicon:

- ``tokens``: MiniLM's input token embeddings, read from the packaged model's
  weights (no transformer: one tensor, its shared direction removed);
- none: without the packaged model, no pair is a synonym here (the declared
  synonyms of :data:`~memchentic.write.relations.SYNONYMS` still are).

The static embedder's table (:mod:`memchentic.embed.static`) would read a little
better, but whether it is built depends on the machine's cache: a write's decision
must not, so it is not read here.

A word of several WordPiece tokens is the mean of their rows. Each word's vector is
worked out once per process; the source is chosen once, so the decision is the same
for every write of a process.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["SYNONYM_BAR", "similarity", "source"]

#: The cosine from which two words of one source are near synonyms: input token rows
#: put words of one kind with other meanings up to about 0.5 ("tea/coffee" 0.45).
#: Antonyms and words of one kind score as high as synonyms ("older/younger" 0.73,
#: "fast/slow" 0.79): :mod:`.align` rules those out by their form and by
#: :data:`~memchentic.write.relations.CONTRASTS` before a score is read.
SYNONYM_BAR = {"tokens": 0.66}

_lock = threading.Lock()
_loaded: dict[str, tuple[str, np.ndarray | None, Any]] = {}


def _load() -> tuple[str, np.ndarray | None, Any]:
    """(source name, table, tokenizer), once per process."""
    with _lock:
        if "table" not in _loaded:
            _loaded["table"] = _read()
        return _loaded["table"]


def _read() -> tuple[str, np.ndarray | None, Any]:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return "none", None, None
    try:
        from safetensors import safe_open

        from ..embed.local import bundled_model_path

        folder = bundled_model_path()
        with safe_open(str(folder / "model.safetensors"), "numpy") as weights:
            table = np.asarray(weights.get_tensor("embeddings.word_embeddings.weight"),
                               dtype=np.float32)  # fmt: skip
        table = table - table.mean(axis=0)  # the shared direction says nothing of meaning
        return "tokens", table, _plain(Tokenizer.from_file(str(folder / "tokenizer.json")))
    except Exception:  # no packaged model, or one without that tensor
        return "none", None, None


def _plain(tokenizer: Any) -> Any:
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def source() -> str:
    """Where word vectors come from in this process: "tokens" or "none"."""
    return _load()[0]


@lru_cache(maxsize=8192)
def _vector(word: str) -> np.ndarray | None:
    name, table, tokenizer = _load()
    if table is None:
        return None
    ids = tokenizer.encode(word.lower(), add_special_tokens=False).ids
    if not ids:
        return None
    row = np.asarray(table[ids], dtype=np.float64).mean(axis=0)
    norm = float(np.linalg.norm(row))
    return row / norm if norm > 0 else None


def similarity(a: str, b: str) -> float:
    """The cosine of two words' vectors (0 when either has none)."""
    va, vb = _vector(a), _vector(b)
    if va is None or vb is None:
        return 0.0
    return float(va @ vb)
