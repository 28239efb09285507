"""memchentic: long-term memory for AI agents."""

from __future__ import annotations

from .aio import AsyncMemory
from .client import AsyncClient, Client
from .context import Context
from .embed import Embedder, HashEmbedder, get_embedder, register_embedder
from .errors import (
    AuthError,
    EmbedderError,
    EmbedderMismatchError,
    ForbiddenError,
    LimitError,
    MemchenticError,
    NamespaceError,
    NotAStoreError,
    NotFoundError,
    SchemaTooNewError,
    ServerError,
    StoreCorruptError,
    StoreError,
    ValidationError,
)
from .memory import Memory
from .record import Edge, MemoryRecord, SearchHit, Version, WriteResult
from .settings import Settings

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "AsyncMemory",
    "AuthError",
    "Client",
    "Context",
    "Edge",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "ForbiddenError",
    "HashEmbedder",
    "LimitError",
    "MemchenticError",
    "Memory",
    "MemoryRecord",
    "NamespaceError",
    "NotAStoreError",
    "NotFoundError",
    "SchemaTooNewError",
    "SearchHit",
    "ServerError",
    "Settings",
    "StoreCorruptError",
    "StoreError",
    "ValidationError",
    "Version",
    "WriteResult",
    "__version__",
    "get_embedder",
    "register_embedder",
]
