"""Stores: one interface (``base.Store``), one module per backend."""

from __future__ import annotations

from ..errors import ValidationError
from ..settings import Settings
from .base import MemoryFilter, Store, StoreStats
from .keywords import Budgets, bind_language


def open_store(location: str, settings: Settings) -> Store:
    """Open the store at a path or URL: ``sqlite:///path`` (a plain path is SQLite,
    the default) or ``postgresql://user@host/db`` (optionally ``?schema=NAME``; needs
    the ``[postgres]`` extra and the pgvector extension on the server)."""
    if not isinstance(location, str) or not location.strip():
        raise ValidationError("store", "must be a file path or a store URL")
    budgets: Budgets = {  # the search's, alike on both backends
        "common_term_docs": settings.search_common_term_docs,
        "common_window": settings.search_common_window,
        "exact_vector_rows": settings.search_exact_vector_rows,
        "title_weight": settings.search_title_weight,
        "isolated_scan_rows": settings.search_isolated_scan_rows,
    }
    if location.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:
            raise ValidationError(
                "store", "PostgreSQL needs the [postgres] extra: pip install 'memchentic[postgres]'"
            ) from exc
        store: Store = PostgresStore(
            location, statement_timeout=settings.statement_timeout_seconds, **budgets
        )
        bind_language(store, settings.keyword_language)
        return store
    if "://" in location and not location.startswith("sqlite://"):
        raise ValidationError("store", "must be a file path, sqlite:///path or postgresql://...")
    if location == ":memory:":
        raise ValidationError("store", "':memory:' is not supported; use a temporary file")
    path = location.removeprefix("sqlite://")
    from .sqlite import SQLiteStore

    store = SQLiteStore(
        path,
        secure_delete=settings.secure_delete,
        statement_timeout=settings.statement_timeout_seconds,
        **budgets,
    )
    bind_language(store, settings.keyword_language)  # before any memory is written
    return store


__all__ = ["MemoryFilter", "Store", "StoreStats", "open_store"]
