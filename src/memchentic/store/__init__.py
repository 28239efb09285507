"""Stores: one interface (``base.Store``), one module per backend.

A backend is chosen by the scheme of the store's location, through the same hook a
third party would use (docs/backends.md)::

    register_store("mystore", lambda location, settings: MyStore(location))
    open_store("mystore://somewhere", settings)

``sqlite`` (also a plain path, the default) and ``postgresql`` (``postgres``) are
registered below.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import ValidationError
from ..settings import Settings
from .base import MemoryFilter, Store, StoreStats
from .conninfo import is_libpq_string
from .keywords import Budgets, bind_language, bind_rules

#: Builds a store from its location (the whole path or URL) and the settings.
StoreFactory = Callable[[str, Settings], Store]

#: Scheme -> factory; ``sqlite``, ``postgresql`` and ``postgres`` are registered below.
STORES: dict[str, StoreFactory] = {}


def register_store(scheme: str, factory: StoreFactory) -> StoreFactory:
    """Make ``factory`` open the locations ``scheme://...`` in :func:`open_store`.

    Schemes are lower-case; registering an existing scheme replaces it. Returns the
    factory unchanged.
    """
    if not isinstance(scheme, str) or not scheme.strip() or "://" in scheme:
        raise ValidationError("scheme", "must be a non-empty scheme name, such as 'sqlite'")
    if not callable(factory):
        raise ValidationError("factory", "must be callable with a location and Settings")
    STORES[scheme.strip().lower()] = factory
    return factory


#: What a file name must not hold: a credential written as ``keyword=value``.
_CREDENTIAL = re.compile(r"(?:password|sslpassword|passfile)\s*=", re.IGNORECASE)


def open_store(location: str, settings: Settings) -> Store:
    """Open the store at a path or URL: ``sqlite:///path`` (a plain path is SQLite,
    the default) or ``postgresql://user@host/db`` (optionally ``?schema=NAME``; needs
    the ``[postgres]`` extra and the pgvector extension on the server), or a libpq
    keyword/value string (``host=db dbname=mem user=me password=...``), or the scheme
    of any backend given to :func:`register_store`.

    A plain path that holds a credential (``password=``) is refused, never created:
    it is a connection string mistyped, and a file would carry the secret in its name."""
    if not isinstance(location, str) or not location.strip():
        raise ValidationError("store", "must be a file path or a store URL")
    if "://" in location:
        scheme = location.partition("://")[0]
    else:
        scheme = "postgresql" if is_libpq_string(location) else "sqlite"
    if scheme == "sqlite" and _CREDENTIAL.search(location):
        raise ValidationError(
            "store", "holds a password= but is no connection string: write it as "
            "postgresql://user:PASSWORD@host/db or host=... dbname=... user=... password=...",
        )  # fmt: skip
    factory = STORES.get(scheme)
    if factory is None:
        raise ValidationError("store", "must be a file path, sqlite:///path or postgresql://...")
    store = factory(location, settings)
    bind_language(store, settings.keyword_language)  # before any memory is written
    bind_rules(store)
    return store


def budgets(settings: Settings) -> Budgets:
    """The search's budgets, alike on every backend."""
    return {
        "common_term_docs": settings.search_common_term_docs,
        "common_window": settings.search_common_window,
        "exact_vector_rows": settings.search_exact_vector_rows,
        "title_weight": settings.search_title_weight,
        "isolated_scan_rows": settings.search_isolated_scan_rows,
    }


def _open_sqlite(location: str, settings: Settings) -> Store:
    if location == ":memory:":
        raise ValidationError("store", "':memory:' is not supported; use a temporary file")
    from .sqlite import SQLiteStore

    return SQLiteStore(
        location.removeprefix("sqlite://"),
        secure_delete=settings.secure_delete,
        statement_timeout=settings.statement_timeout_seconds,
        **budgets(settings),
    )


def _open_postgres(location: str, settings: Settings) -> Store:
    try:
        from .postgres import PostgresStore
    except ImportError as exc:
        raise ValidationError(
            "store", "PostgreSQL needs the [postgres] extra: pip install 'memchentic[postgres]'"
        ) from exc
    return PostgresStore(
        location, statement_timeout=settings.statement_timeout_seconds, **budgets(settings)
    )


register_store("sqlite", _open_sqlite)
register_store("postgresql", _open_postgres)
register_store("postgres", _open_postgres)

__all__ = [
    "STORES",
    "MemoryFilter",
    "Store",
    "StoreFactory",
    "StoreStats",
    "is_libpq_string",
    "open_store",
    "register_store",
]
