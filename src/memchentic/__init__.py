"""memchentic: long-term memory for AI agents."""

from __future__ import annotations

from .access import TRUSTED, AccessPolicy, Principal
from .access.directory import Directory
from .aio import AsyncMemory
from .args.keywords import (
    AddKeywords,
    AddWorkingKeywords,
    AskKeywords,
    ContextKeywords,
    ImproveKeywords,
    ListKeywords,
    MessageKeywords,
    RecallKeywords,
    ScopeKeywords,
    SearchKeywords,
    SessionScopeKeywords,
    WorkingMemoryKeywords,
)
from .client import AsyncClient, AsyncRemoteDirectory, Client, RemoteDirectory
from .context import Context, ContextItem, Section
from .embed import Embedder, HashEmbedder, get_embedder, register_embedder
from .errors import (
    AuthError,
    ChatError,
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
from .graph.entities import EntityExtractor
from .identity import Grant, Identity, Invitation, Membership, Team
from .learn import Extracted, Extractor, Message
from .learn.summaries import ExtractiveSummarizer, Summarizer
from .llm import ChatClient
from .memory import Memory
from .operations import OPERATIONS, Operation
from .record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from .reports import (
    Answer,
    ConsolidationReport,
    ImportReport,
    MaintenanceReport,
    Neighbour,
    Passage,
)
from .retrieval.knobs import Knobs
from .retrieval.pipeline import Reranker
from .retrieval.profiles import SearchProfile
from .settings import Settings
from .store import MemoryFilter, Store, StoreStats, open_store, register_store
from .write.auto_edges import EdgeClassifier
from .write.polarity import PolarityClassifier
from .write.resolvers import Decision, Resolver

__version__ = "0.1.0"

__all__ = [
    "OPERATIONS",
    "TRUSTED",
    "AccessPolicy",
    "AddKeywords",
    "AddWorkingKeywords",
    "Answer",
    "AskKeywords",
    "AsyncClient",
    "AsyncMemory",
    "AsyncRemoteDirectory",
    "AuthError",
    "ChatClient",
    "ChatError",
    "Client",
    "ConsolidationReport",
    "Context",
    "ContextItem",
    "ContextKeywords",
    "Decision",
    "Directory",
    "Edge",
    "EdgeClassifier",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "EntityExtractor",
    "Event",
    "Extracted",
    "ExtractiveSummarizer",
    "Extractor",
    "ForbiddenError",
    "Grant",
    "HashEmbedder",
    "Identity",
    "ImportReport",
    "ImproveKeywords",
    "Invitation",
    "Knobs",
    "LimitError",
    "ListKeywords",
    "MaintenanceReport",
    "Membership",
    "MemchenticError",
    "Memory",
    "MemoryFilter",
    "MemoryRecord",
    "Message",
    "MessageKeywords",
    "NamespaceError",
    "Neighbour",
    "NotAStoreError",
    "NotFoundError",
    "Operation",
    "Passage",
    "PolarityClassifier",
    "Principal",
    "RecallKeywords",
    "RemoteDirectory",
    "Reranker",
    "Resolver",
    "SchemaTooNewError",
    "ScopeKeywords",
    "SearchHit",
    "SearchKeywords",
    "SearchProfile",
    "Section",
    "ServerError",
    "SessionScopeKeywords",
    "Settings",
    "Store",
    "StoreCorruptError",
    "StoreError",
    "StoreStats",
    "Summarizer",
    "Team",
    "Turn",
    "ValidationError",
    "Version",
    "WorkingMemoryKeywords",
    "WriteResult",
    "__version__",
    "get_embedder",
    "open_store",
    "register_embedder",
    "register_store",
]
