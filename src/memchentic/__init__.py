"""memchentic: long-term memory for AI agents."""

from __future__ import annotations

from .embed import Embedder, HashEmbedder, get_embedder, register_embedder
from .errors import (
    EmbedderError,
    EmbedderMismatchError,
    ForbiddenError,
    MemchenticError,
    NamespaceError,
    NotAStoreError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from .memory import Memory
from .record import Edge, MemoryRecord, SearchHit, Version, WriteResult
from .settings import Settings

__version__ = "0.1.0"

__all__ = [
    "Edge",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "ForbiddenError",
    "HashEmbedder",
    "MemchenticError",
    "Memory",
    "MemoryRecord",
    "NamespaceError",
    "NotAStoreError",
    "NotFoundError",
    "SearchHit",
    "Settings",
    "StoreError",
    "ValidationError",
    "Version",
    "WriteResult",
    "__version__",
    "get_embedder",
    "register_embedder",
]
