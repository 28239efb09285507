"""Embedders: turn texts into unit vectors, and the registry that picks one by name.

Built-ins:

* ``hash`` - :class:`HashEmbedder`, feature hashing, no dependencies, not semantic;
* ``local`` (or ``minilm``) - :class:`LocalEmbedder`, all-MiniLM-L6-v2 offline on
  ONNX Runtime (``memchentic[local]``); ``local-int8``: its int8 export, faster and
  a little less precise (opt-in; another identity, so a store is reindexed to it);
* ``static`` - :class:`StaticEmbedder`, a token table distilled from that MiniLM:
  about 100x faster, a little less precise (docs/embedders.md);
* ``openai`` - :class:`OpenAIEmbedder`, any OpenAI-compatible ``/embeddings`` endpoint.

A third party adds one with :func:`register_embedder`::

    register_embedder("mine", lambda settings: MyEmbedder(...))
    get_embedder("mine", settings)

Importing this package imports neither torch, onnxruntime nor httpx: a local
embedder loads its model at its first embedding, an OpenAI one httpx when built.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from memchentic.errors import EmbedderError, ValidationError

from .base import Embedder, normalise_rows
from .hashing import HashEmbedder
from .local import DEFAULT_LOCAL_MODEL, INT8_SUFFIX, LocalEmbedder, local_available
from .openai import OpenAIEmbedder
from .static import STATIC_MODEL, StaticEmbedder, static_available

if TYPE_CHECKING:
    from memchentic.settings import Settings

__all__ = [
    "EMBEDDERS",
    "RECORDED_MODELS",
    "Embedder",
    "EmbedderFactory",
    "HashEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "StaticEmbedder",
    "check_embedder_name",
    "get_embedder",
    "local_available",
    "normalise_rows",
    "register_embedder",
    "static_available",
]

#: Builds an embedder from the settings.
EmbedderFactory = Callable[["Settings"], Embedder]

#: Name -> factory; the built-in embedders are registered below.
EMBEDDERS: dict[str, EmbedderFactory] = {}


def register_embedder(name: str, factory: EmbedderFactory) -> EmbedderFactory:
    """Make ``factory`` available as ``name`` to :func:`get_embedder` (and ``EMBEDDER=name``).

    Names are lower-case; registering an existing name replaces it. Returns the
    factory unchanged.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("name", "must be a non-empty string")
    if not callable(factory):
        raise ValidationError("factory", "must be callable with a Settings argument")
    EMBEDDERS[name.strip().lower()] = factory
    return factory


def _hash_factory(settings: Settings) -> Embedder:
    return HashEmbedder(dimension=settings.hash_embedding_dimension)


def _local_factory(settings: Settings) -> Embedder:
    return LocalEmbedder(
        threads=settings.local_embedder_threads or None,
        runtime=settings.local_embedder_runtime,
        cache_dir=settings.embedder_cache_dir,
    )


def _local_int8_factory(settings: Settings) -> Embedder:
    return LocalEmbedder(
        threads=settings.local_embedder_threads or None,
        int8=True,
        cache_dir=settings.embedder_cache_dir,
    )


def _static_factory(settings: Settings) -> Embedder:
    return StaticEmbedder(cache_dir=settings.embedder_cache_dir)


def _openai_factory(settings: Settings) -> Embedder:
    return OpenAIEmbedder(
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key,
        model=settings.openai_embedding_model,
        dimension=settings.openai_embedding_dimension,
    )


register_embedder("hash", _hash_factory)
register_embedder("local", _local_factory)
register_embedder("minilm", _local_factory)
register_embedder("local-int8", _local_int8_factory)
register_embedder("openai", _openai_factory)
register_embedder("static", _static_factory)


#: The model identities the built-in local embedders record in a store -> their name,
#: so a store opened without naming an embedder keeps the one it was built with.
RECORDED_MODELS: dict[str, str] = {
    HashEmbedder.model: "hash",
    DEFAULT_LOCAL_MODEL: "local",
    DEFAULT_LOCAL_MODEL + INT8_SUFFIX: "local-int8",
    STATIC_MODEL: "static",
}


def _choices() -> str:
    return f"must be one of {', '.join(EMBEDDERS)} or an Embedder object"


def check_embedder_name(spec: str | Embedder | None, settings: Settings) -> None:
    """Refuse an unknown embedder name (``spec``, else ``settings.embedder``) before
    anything is opened or built."""
    name = spec if spec is not None else settings.embedder
    if isinstance(name, Embedder) or name is None:
        return
    if not isinstance(name, str) or name.strip().lower() not in EMBEDDERS:
        raise ValidationError("embedder", _choices())


def get_embedder(
    spec: str | Embedder | None, settings: Settings, recorded: str | None = None
) -> Embedder:
    """The embedder ``spec`` names.

    * an :class:`Embedder` object is returned as is;
    * a name is looked up in :data:`EMBEDDERS` (case-insensitive);
    * ``None`` means ``settings.embedder`` when set; else the built-in embedder whose
      model is ``recorded`` (the model a store was built with, :data:`RECORDED_MODELS`);
      else ``local`` when installed, else ``hash`` (with a :class:`RuntimeWarning`:
      search quality will be low).
    """
    if isinstance(spec, Embedder):
        return spec
    if spec is None:
        spec = settings.embedder or RECORDED_MODELS.get(recorded or "")
    if spec is None:
        if local_available():
            spec = "local"
        else:
            warnings.warn(
                "the local embedder is not installed (pip install 'memchentic[local]'); "
                "using the hashing embedder, so semantic search quality will be low",
                RuntimeWarning,
                stacklevel=2,
            )
            spec = "hash"
    if not isinstance(spec, str):
        raise ValidationError("embedder", _choices())
    factory = EMBEDDERS.get(spec.strip().lower())
    if factory is None:
        raise ValidationError("embedder", _choices())
    embedder = factory(settings)
    if not isinstance(embedder, Embedder):
        raise EmbedderError(
            f"the {spec!r} embedder factory returned {type(embedder).__name__}, not an Embedder"
        )
    return embedder
