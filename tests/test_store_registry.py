"""Backends are chosen by their location's scheme through ``register_store``, the
hook a third party would use (docs/backends.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memchentic import ValidationError
from memchentic.settings import Settings
from memchentic.store import STORES, Store, open_store, register_store
from memchentic.store.sqlite import SQLiteStore


def test_the_builtin_backends_are_registered():
    assert {"sqlite", "postgresql", "postgres"} <= set(STORES)


def test_a_plain_path_and_sqlite_urls_open_sqlite(tmp_path: Path):
    for location in (str(tmp_path / "a.db"), f"sqlite://{tmp_path / 'b.db'}"):
        store = open_store(location, Settings())
        try:
            assert isinstance(store, SQLiteStore)
        finally:
            store.close()


def test_a_registered_scheme_opens_its_backend(tmp_path: Path):
    opened: list[str] = []

    def factory(location: str, settings: Settings) -> Store:
        opened.append(location)
        return SQLiteStore(tmp_path / "mine.db")

    register_store("mine", factory)
    try:
        store = open_store("mine://anywhere", Settings())
        store.close()
        assert opened == ["mine://anywhere"]
    finally:
        STORES.pop("mine", None)


@pytest.mark.parametrize("location", ["nosuch://x", "", "   ", ":memory:"])
def test_an_unknown_scheme_or_location_names_the_store(location: str):
    with pytest.raises(ValidationError) as err:
        open_store(location, Settings())
    assert err.value.field == "store"


@pytest.mark.parametrize("scheme", ["", "  ", "a://b"])
def test_a_scheme_must_be_a_name(scheme: str):
    with pytest.raises(ValidationError):
        register_store(scheme, lambda location, settings: None)  # type: ignore[arg-type,return-value]
