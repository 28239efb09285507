"""The store a new backend implements is narrow (issue 35, item 2): a backend
subclasses ``SqlStore`` and implements its abstract methods, at most half of the
57 the store interface had; everything else the engine calls is written once, in
parts composed from the backend (docs/backends.md)."""

from __future__ import annotations

import re
from pathlib import Path

from memchentic.store.base import Store
from memchentic.store.sql_store import SqlStore
from memchentic.store.sqlite import SQLiteStore

DOCS = Path(__file__).resolve().parents[1] / "docs" / "backends.md"


def test_the_contract_is_at_most_28_methods():
    assert len(SqlStore.__abstractmethods__) <= 28


def test_the_contract_is_the_one_documented():
    section = DOCS.read_text(encoding="utf-8").split("## The contract")[1].split("\n## ")[0]
    listed = set(re.findall(r"^\| `(\w+)`", section, re.MULTILINE))
    assert listed == set(SqlStore.__abstractmethods__)


def test_sql_store_answers_every_other_method_of_the_interface():
    assert SqlStore.__abstractmethods__ <= Store.__abstractmethods__ | {
        "_rows", "_row", "_run", "_write_alone", "_stat_counts", "_size_bytes", "_delete_row",
    }  # fmt: skip
    assert not SQLiteStore.__abstractmethods__ and issubclass(SQLiteStore, SqlStore)


def test_both_backends_are_sql_stores():
    try:
        from memchentic.store.postgres import PostgresStore
    except ImportError:  # the [postgres] extra is not installed
        return
    assert issubclass(PostgresStore, SqlStore) and not PostgresStore.__abstractmethods__
