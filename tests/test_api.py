"""The public surface: exports, settings from the environment, tiers, recall, edges."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import memchentic
from memchentic import Memory, NotFoundError, Settings


def test_all_is_sorted_and_complete():
    # ruff's RUF022 order: constants, then classes, then functions
    kind = lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n)  # noqa: E731
    assert memchentic.__all__ == sorted(memchentic.__all__, key=kind)
    for name in memchentic.__all__:
        assert hasattr(memchentic, name)
    public = {n for n in dir(memchentic) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(memchentic.__all__)


def test_settings_defaults_match_the_design():
    s = Settings()
    assert (s.rrf_k, s.search_recency_half_life_days, s.search_path_boost) == (60, 30, 0.15)
    assert (s.near_dup_threshold, s.search_default_limit, s.memory_usage_score_weight) == (
        0.92, 20, 0.05,
    )  # fmt: skip
    assert (s.memory_default_ttl_days, s.memory_ttl_extend_days, s.memory_max_ttl_days) == (
        90, 90, 730,
    )  # fmt: skip
    assert (s.memory_ttl_touch_debounce_hours, s.memory_decay_half_life_days) == (6, 30)
    assert (s.memory_decay_floor, s.knn_overfetch_multiplier) == (0.05, 3)
    assert not (s.memory_selroute_enabled or s.memory_hybrid_enabled or s.memory_reranker_enabled)
    assert (s.contradiction_threshold, s.dedup_threshold) == (0.8, 0.9)


def test_settings_read_plain_and_prefixed_names(monkeypatch):
    monkeypatch.setenv("RRF_K", "40")
    monkeypatch.setenv("NEAR_DUP_THRESHOLD", "0.95")
    monkeypatch.setenv("MEMCHENTIC_NEAR_DUP_THRESHOLD", "0.97")
    monkeypatch.setenv("MEMCHENTIC_MEMORY_SELROUTE_ENABLED", "true")
    s = Settings()
    assert s.rrf_k == 40
    assert s.near_dup_threshold == 0.97  # the prefixed name wins
    assert s.memory_selroute_enabled is True


def test_memchentic_home_sets_the_default_store(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMCHENTIC_HOME", str(tmp_path / "home"))
    with Memory(embedder="hash") as m:
        m.add("Stored in the home folder")
    assert (tmp_path / "home" / "memory.db").exists()


def test_default_store_is_under_dot_memchentic_not_the_shell_home(monkeypatch, tmp_path):
    """Issue 20, item 8: the ``home`` setting matched the shell's ``$HOME`` (environment
    names match without regard to case), so the default store was ``$HOME/memory.db``."""
    monkeypatch.delenv("MEMCHENTIC_HOME", raising=False)
    monkeypatch.delenv("MEMCHENTIC_STORE_URL", raising=False)
    monkeypatch.delenv("STORE_URL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Settings().default_store == str(tmp_path / ".memchentic" / "memory.db")
    assert Settings(home=tmp_path / "code").home_path == tmp_path / "code"
    with Memory(embedder="hash") as m:
        m.add("Stored in the default folder")
    assert (tmp_path / ".memchentic" / "memory.db").exists()
    assert not (tmp_path / "memory.db").exists()


def test_read_intents_pick_tiers_and_tier_warns(mem: Memory):
    full = "Long body " * 20
    res = mem.add(full, tier_l0="Preview line", tier_l1="Summary paragraph")
    bare = mem.add("Only a body here about Kestrel")
    hit = mem.search("long body", intent="preview")[0]
    assert hit.text == "Preview line"
    assert mem.search("long body")[0].text == "Summary paragraph"
    assert mem.search("long body", intent="full")[0].text == full
    assert mem.search("Kestrel", intent="preview")[0].text == bare.memory.content
    with pytest.warns(DeprecationWarning, match="tier"):
        assert mem.search("long body", tier="L0")[0].text == "Preview line"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mem.search("long body", intent="default")
    assert res.id


def test_recall_by_entity_is_newest_first_with_decayed_confidence(mem: Memory):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    a = mem.add("Priya joined the Atlas project", created_at=t0, user_id="u1")
    b = mem.add("Priya leads the Atlas design review", created_at=t0 + timedelta(days=30),
                user_id="u2", confidence=0.5)  # fmt: skip
    mem.add("Unrelated note about lunch", user_id="u1")
    now = t0 + timedelta(days=60)
    hits = mem.recall(entity="atlas", now=now)
    assert [h.id for h in hits] == [b.id, a.id]
    assert hits[0].score == pytest.approx(0.5 * 0.5)
    assert hits[1].score == pytest.approx(0.25)
    assert [h.id for h in mem.recall(entity="Priya", user_id="u1", now=now)] == [a.id]


def test_relate_edges_and_history(mem: Memory):
    a = mem.add("Ravi proposed moving to Postgres").id
    b = mem.add("The team chose Postgres for the new service").id
    edge = mem.relate(b, a, "derives_from", 0.8)
    assert [e.id for e in mem.edges(a)] == [edge.id] == [e.id for e in mem.edges(b)]
    assert mem.edges(a, kind="supports") == []
    with pytest.raises(NotFoundError):
        mem.relate(a, "01DOESNOTEXIST000000000000", "supports")
    with pytest.raises(NotFoundError):
        mem.history("01DOESNOTEXIST000000000000")


def test_stats_counts(mem: Memory):
    mem.add("Sofia likes jazz", user_id="s", type="preference")
    mem.add("Sofia plays bass", user_id="s")
    mem.add("Tom likes rock", user_id="t")
    stats = mem.stats()
    assert stats["memories"] == 3 and stats["by_namespace"] == {"user:s": 2, "user:t": 1}
    assert mem.stats(user_id="s")["memories"] == 2
    assert stats["embedder"] == "hash-v1:384"
    assert stats["keyword_language"] == "english"


def test_stats_say_the_stores_keyword_language(make_mem: Callable[..., Memory]):
    german = make_mem("de", settings=Settings(keyword_language="german"))
    assert german.stats()["keyword_language"] == "german"
    german.close()
    reopened = make_mem("de", settings=Settings(keyword_language="spanish"))
    assert reopened.stats()["keyword_language"] == "german"  # the store's, not the setting's
