"""The engine's parts: what every service works with, opened and closed in one place.

:class:`Parts` holds the settings, the store, the embedder, the access policy, the
event bus and the write-time classifiers (polarity, entities, edges, the resolver,
the reranker). It opens the store (or takes one), picks the embedder the store was
built with, checks that they agree, and closes what it opened. The services
(:mod:`memchentic.engine`) never reach the store from here: they go through the
:class:`~memchentic.engine.gate.Gate`, which holds the caller (docs/design.md, section 2).
"""

from __future__ import annotations

from pathlib import Path

from ..access import AccessPolicy
from ..embed import Embedder, check_embedder_name, get_embedder
from ..errors import EmbedderMismatchError, ValidationError
from ..events import EventBus
from ..graph.entities import EntityExtractor, RuleEntities
from ..retrieval import pipeline
from ..settings import Settings, load_settings
from ..store import open_store
from ..store.base import Store
from ..write.auto_edges import EdgeClassifier, RuleEdges
from ..write.polarity import PolarityClassifier, RulePolarity
from ..write.resolvers import Resolver, default_resolver


class Parts:
    """The engine's parts (one set per :class:`~memchentic.Memory`, shared by its
    identity views). Attributes may be replaced (``settings`` by tests, ``embedder``
    by ``reindex``): every service reads them here at each call."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        store: str | Store | None = None,
        embedder: str | Embedder | None = None,
        settings: Settings | None = None,
        access: AccessPolicy | None = None,
        polarity: PolarityClassifier | None = None,
        entities: EntityExtractor | None = None,
        edge_classifier: EdgeClassifier | None = None,
        reranker: pipeline.Reranker | None = None,
        resolver: Resolver | None = None,
        check_embedder: bool = True,
    ) -> None:
        self.settings = settings or load_settings()
        self.access = access or AccessPolicy()
        self.polarity = polarity or RulePolarity()
        self.entity_extractor = entities or RuleEntities()
        self.edge_classifier = edge_classifier or RuleEdges(
            self.settings.auto_edge_related_similarity, self.settings.auto_edge_supports_similarity
        )
        self.reranker = reranker
        #: Decides what a new entry is to its neighbours (docs/design.md, section 4, step 3).
        self.resolver = resolver or default_resolver(self.settings)
        self._owns_resolver = resolver is None
        if self.settings.memory_reranker_enabled and reranker is None:
            raise ValidationError(
                "reranker", "MEMORY_RERANKER_ENABLED needs a reranker: Memory(reranker=...)"
            )
        check_embedder_name(embedder, self.settings)
        if isinstance(store, Store):
            self.store = store
        else:
            self.store = open_store(
                str(store or path or self.settings.default_store), self.settings
            )
        self._owns_store = not isinstance(store, Store)
        try:
            # no embedder named: the one the store was built with (if it is built in)
            recorded = self.store.get_meta("embedding_model")
            self.embedder = get_embedder(embedder, self.settings, recorded)
            self.access.bind(self.store)
            self.bus = EventBus(self.store, self.access)
            if check_embedder:
                self.check_embedder()
        except BaseException:
            self.close()
            raise

    def check_embedder(self) -> None:
        """Record the embedder in a new store; refuse another one than the store's."""
        model = self.store.get_meta("embedding_model")
        dim = self.store.get_meta("embedding_dimension")
        if model is None:
            with self.store.write():
                self.store.set_meta("embedding_model", self.embedder.model)
                self.store.set_meta("embedding_dimension", str(self.embedder.dimension))
            return
        if model != self.embedder.model or int(dim or 0) != self.embedder.dimension:
            raise EmbedderMismatchError(
                f"the store {self.store.location} was built with embedder {model} "
                f"(dimension {dim}) but is opened with {self.embedder.model} (dimension "
                f"{self.embedder.dimension}); open it with the same embedder or run "
                f"`memchentic reindex --embedder {self.embedder.name}`"
            )

    def close(self) -> None:
        """Close what these parts opened (a store or resolver passed in stays open)."""
        close_resolver = getattr(self.resolver, "close", None)
        if self._owns_resolver and close_resolver is not None:
            close_resolver()
        if self._owns_store:
            self.store.close()
