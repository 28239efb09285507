"""Bad input: a clear error naming the field, and nothing already stored lost or changed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memchentic import (
    EmbedderMismatchError,
    HashEmbedder,
    Memory,
    NamespaceError,
    NotAStoreError,
    Settings,
    ValidationError,
)


@pytest.fixture
def seeded(mem: Memory):
    res = mem.add("Anchor memory that must survive", user_id="alice", tags=["keep"])
    return mem, res.id


def _unchanged(mem: Memory, memory_id: str) -> None:
    (only,) = mem.list(include_expired=True)
    assert only.id == memory_id and only.content == "Anchor memory that must survive"
    assert [v.op for v in mem.history(memory_id)] == ["add"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   \n\t "}, "content"),
        ({"content": "x" * (64 * 1024 + 1)}, "content"),
        ({"content": "ok", "confidence": math.nan}, "confidence"),
        ({"content": "ok", "confidence": 1.5}, "confidence"),
        ({"content": "ok", "confidence": -0.1}, "confidence"),
        ({"content": "ok", "importance": 2}, "importance"),
        ({"content": "ok", "namespace": "nonsense"}, "namespace"),
        ({"content": "ok", "namespace": "user:"}, "namespace"),
        ({"content": "ok", "namespace": "team:x"}, "namespace"),
        ({"content": "ok", "namespace": "user:a b"}, "namespace"),
        ({"content": "ok", "user_id": "bad id with spaces"}, "user_id"),
        ({"content": "ok", "kind": "note"}, "kind"),
        ({"content": "ok", "tags": "not-a-list"}, "tags"),
        ({"content": "ok", "tags": [""]}, "tags"),
        ({"content": "ok", "metadata": {"x": object()}}, "metadata"),
        ({"content": "ok", "metadata": ["a"]}, "metadata"),
        ({"content": "ok", "type": ""}, "type"),
        ({"content": "ok", "created_at": "yesterday-ish"}, "created_at"),
        ({"content": "ok", "on_duplicate": "merge"}, "on_duplicate"),
    ],
)
def test_bad_writes_name_the_field_and_change_nothing(seeded, kwargs, field):
    mem, anchor = seeded
    kwargs = dict(kwargs)  # the parameter is shared by every backend's run
    content = kwargs.pop("content")
    with pytest.raises(ValidationError) as err:
        mem.add(content, **kwargs)
    assert err.value.field == field
    assert field in str(err.value)
    _unchanged(mem, anchor)


def test_content_at_the_limit_is_accepted(mem: Memory):
    assert mem.add("é" * (32 * 1024)).status == "added"  # 64 KiB of UTF-8 exactly


def test_malformed_namespace_is_a_namespace_error(mem: Memory):
    with pytest.raises(NamespaceError):
        mem.search("x", namespace="::")


def test_limit_errors_and_clamps(seeded):
    mem, anchor = seeded
    for bad in (0, -3):
        with pytest.raises(ValidationError) as err:
            mem.search("anchor", limit=bad)
        assert err.value.field == "limit"
    assert len(mem.search("anchor", limit=10_000)) == 1
    _unchanged(mem, anchor)


def test_unknown_profile(seeded):
    mem, anchor = seeded
    with pytest.raises(ValidationError) as err:
        mem.search("anchor", profile="pagerank")
    assert err.value.field == "profile" and "rrf" in str(err.value)
    _unchanged(mem, anchor)


@pytest.mark.parametrize(
    "evil",
    ["'; DROP TABLE memories; --", 'Robert"); DELETE FROM vectors;--', "%", "_", "\\", "' OR 1=1"],
)
def test_sql_metacharacters_in_every_text_field(seeded, evil):
    mem, anchor = seeded
    res = mem.add(f"note {evil}", title=evil, tags=[evil], metadata={evil: evil},
                  path_hint=evil, repo=evil, slot_key=evil, type="note")  # fmt: skip
    stored = mem.get(res.id)
    assert (stored.title, stored.tags, stored.metadata) == (evil, [evil], {evil: evil})
    assert (stored.path_hint, stored.repo, stored.slot_key) == (evil, evil, evil)
    mem.search(evil, tags=[evil], repo=evil, path_hint=evil)
    assert mem.get(anchor).content == "Anchor memory that must survive"
    assert len(mem.list(include_expired=True)) == 2


def test_empty_query_is_an_error(mem: Memory):
    with pytest.raises(ValidationError) as err:
        mem.search("   ")
    assert err.value.field == "query"


def test_revise_with_bad_content_changes_nothing(seeded):
    mem, anchor = seeded
    with pytest.raises(ValidationError) as err:
        mem.revise(anchor, "")
    assert err.value.field == "content"
    with pytest.raises(ValidationError) as err:
        mem.revise(anchor, "fine", colour="blue")
    assert err.value.field == "colour"
    _unchanged(mem, anchor)


def test_relate_validation(seeded):
    mem, anchor = seeded
    other = mem.add("Another memory entirely different").id
    cases = [
        ((anchor, other, "likes", 0.5), "kind"),
        ((anchor, other, "supports", 1.5), "strength"),
        ((anchor, other, "supports", math.nan), "strength"),
        ((anchor, anchor, "supports", 0.5), "target"),
    ]
    for args, field in cases:
        with pytest.raises(ValidationError) as err:
            mem.relate(*args)
        assert err.value.field == field
    assert mem.edges(anchor) == []


def test_a_file_that_is_not_a_store(tmp_path: Path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(NotAStoreError):
        Memory(path=junk, embedder="hash")
    assert junk.read_bytes().startswith(b"this is not sqlite")


def test_a_sqlite_file_of_another_application(tmp_path: Path):
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY)")
    with pytest.raises(NotAStoreError):
        Memory(path=other, embedder="hash")
    with sqlite3.connect(other) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    assert tables == ["accounts"]


def test_a_store_of_another_embedder_dimension(make_mem):
    with make_mem("dim", embedder=HashEmbedder(dimension=384)) as m:
        kept = m.add("Built with 384 dimensions").id
    with pytest.raises(EmbedderMismatchError) as err:
        make_mem("dim", embedder=HashEmbedder(dimension=64))
    assert "384" in str(err.value) and "reindex" in str(err.value)
    with make_mem("dim", embedder=HashEmbedder(dimension=384)) as m:
        assert m.get(kept).content == "Built with 384 dimensions"


def test_settings_reject_bad_values():
    with pytest.raises(ValueError, match="rrf_k|RRF_K"):
        Settings(rrf_k=-1)
