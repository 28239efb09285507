"""Complete deletes: nothing of a deleted memory resurfaces anywhere."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import numpy as np
import pytest

from memchentic import Memory, NotFoundError
from memchentic.store.base import MemoryFilter


def test_nothing_of_a_deleted_memory_resurfaces(mem: Memory):
    keep = mem.add("Xavier maintains the Zanzibar gateway")
    gone = mem.add("Yolanda audits the Zanzibar ledger every quarter")
    mem.relate(keep.id, gone.id, "related_to", 0.5)
    assert "yolanda" in mem.entities()
    vec = mem.store.vectors([gone.id])[gone.id]

    mem.delete(gone.id)

    flt = MemoryFilter.everything(
        now=datetime.now(UTC), include_expired=True, include_superseded=True
    )
    with pytest.raises(NotFoundError):
        mem.get(gone.id)
    assert gone.id not in {h.id for h in mem.search("Yolanda audits ledger quarter")}
    assert gone.id not in {i for i, _ in mem.store.keyword_search("Yolanda ledger", 10, flt)}
    assert gone.id not in {i for i, _ in mem.store.vector_search(np.asarray(vec), 10, flt)}
    assert mem.store.vectors([gone.id]) == {}
    assert mem.edges(keep.id) == []
    assert "yolanda" not in mem.entities()
    assert mem.recall(entity="Yolanda") == []
    out = io.StringIO()
    mem.export(out)
    assert "Yolanda" not in out.getvalue()
    assert gone.id not in out.getvalue()
    # the history keeps one tombstone, without content
    (tomb,) = mem.history(gone.id)
    assert (
        tomb.op == "delete"
        and tomb.snapshot is None
        and "Yolanda" not in json.dumps(tomb.to_dict())
    )
    # the raw keyword index holds no trace of the words either
    assert _raw_index_terms(mem, ["yolanda", "ledger", "audit"]) == []


def _raw_index_terms(mem: Memory, terms: list[str]) -> list[str]:
    """Which of ``terms`` the backend's own keyword index tables still hold."""
    if hasattr(mem.store, "conn"):  # SQLite: the FTS5 vocabulary
        marks = ", ".join("?" * len(terms))
        rows = mem.store.conn.execute(
            f"SELECT term FROM memories_fts_terms WHERE term IN ({marks})", terms
        ).fetchall()
        return [r[0] for r in rows]
    with mem.store.connection() as conn:  # PostgreSQL: the term table and every tsvector
        rows = conn.execute(
            "SELECT term FROM term_docs WHERE term = ANY(%s) UNION "
            "SELECT word FROM ts_stat('SELECT tsv FROM memories') WHERE word = ANY(%s)",
            (terms, terms),
        ).fetchall()
    return [r[0] for r in rows]


def test_delete_of_a_missing_memory_is_not_found(mem: Memory):
    with pytest.raises(NotFoundError) as err:
        mem.delete("01NOSUCHMEMORY0000000000000")
    assert "not found" in str(err.value)


def test_forget_is_delete(mem: Memory):
    res = mem.add("Zed's cat is called Miso")
    assert mem.forget(res.id).status == "deleted"
    assert mem.list() == []
