"""How close two words are in meaning, from MiniLM's vocabulary (DESIGN section 4).

A changed word that is a near synonym ("near" / "close", "afraid" / "scared",
"short" / "brief") does not make a new statement. Whether it is one is read from
word vectors, not from a growing lexicon:

- ``static``: the rows of the static embedder's table (:mod:`memchentic.embed.static`),
  MiniLM's own token states distilled once; used when that table is already built
  in the cache (nothing is built here: a write never waits for a build);
- ``tokens``: else MiniLM's input token embeddings, read from the packaged model's
  weights (no transformer: one tensor), noisier, so the bar is higher;
- none: without the packaged model, no pair is a synonym here (the declared
  synonyms of :data:`~memchentic.write.relations.SYNONYMS` still are).

A word of several WordPiece tokens is the mean of their rows. Each word's vector is
worked out once per process; the source is chosen once, so the decision is the same
for every write of a process.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SYNONYM_BAR", "similarity", "source"]

#: The cosine from which two words of one source are near synonyms: on the static
#: table, synonyms measured 0.60-0.94 ("near/close" 0.60, "kids/children" 0.94) and
#: words of one kind with other meanings 0.24-0.51 ("tea/coffee" 0.40,
#: "approved/rejected" 0.51); input token rows are noisier ("tea/coffee" 0.45).
#: Antonyms and words of one kind score as high as synonyms ("older/younger" 0.73,
#: "fast/slow" 0.79): :mod:`.align` rules those out by their form and by
#: :data:`~memchentic.write.relations.CONTRASTS` before a score is read.
SYNONYM_BAR = {"static": 0.58, "tokens": 0.66}

_lock = threading.Lock()
_loaded: dict[str, tuple[str, np.ndarray | None, Any]] = {}


def _cache_dir() -> Path:
    configured = os.environ.get("EMBEDDER_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memchentic"


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
    built = sorted(_cache_dir().glob("static-minilm-l6-v2-*/vectors.npy"))
    for vectors in reversed(built):
        try:
            table = np.load(vectors, mmap_mode="r", allow_pickle=False)
            tokenizer = Tokenizer.from_file(str(vectors.parent / "tokenizer.json"))
        except (OSError, ValueError, Exception):  # a damaged table: the next source
            continue
        return "static", table, _plain(tokenizer)
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
    """Where word vectors come from in this process: "static", "tokens" or "none"."""
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
