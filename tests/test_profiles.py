"""A search profile carries its own knobs (issue 35, item 4): the named profiles
take the settings', a caller may pass a tuned profile object where a profile
name is accepted, and the pipeline reads no settings of its own."""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from dataclasses import FrozenInstanceError, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memchentic import Memory, Settings
from memchentic.retrieval import profiles
from memchentic.retrieval.knobs import SETTING, Knobs
from memchentic.retrieval.profiles import RRF, SearchProfile, resolve

NOW = datetime(2025, 6, 1, tzinfo=UTC)
RETRIEVAL = Path(profiles.__file__).parent
WORDS = ["river", "garden", "engine", "yoga", "coffee", "novel", "train", "piano"]
QUERIES = ["what did Ann say about the river and yoga?", "engine garden notes", "piano in May 2023"]


def _hits(mem: Memory, query: str, profile: str | SearchProfile) -> list[tuple[str, float, dict]]:
    """The second of two searches at the same time: the first counts a recall of
    its hits (the usage factor reads it), the second none (the recall debounce)."""
    for _ in range(2):
        hits = mem.search(query, user_id="u", limit=10, profile=profile, now=NOW,
                          include_trace=True)  # fmt: skip
    return [(h.memory.id, h.score, h.trace or {}) for h in hits]


def _notes(mem: Memory, seed: int = 0) -> None:
    rng = random.Random(seed)
    mem.add_many(
        [{"content": f"{rng.choice(['', 'Ann: '])}note {i} on {' and '.join(rng.sample(WORDS, 3))}"
          f"{rng.choice(['', ' in May 2023'])}", "user_id": "u",
          "metadata": {"speaker": rng.choice(["Ann", "Bob"])},
          "type": rng.choice(["semantic", "episodic"]), "path_hint": rng.choice([None, "docs"]),
          "created_at": NOW - timedelta(days=rng.uniform(0, 400))} for i in range(90)],
        on_duplicate="keep", permanent=True,
    )  # fmt: skip


# --- the value -------------------------------------------------------------------------
def test_every_knob_mirrors_a_setting_and_takes_its_documented_default() -> None:
    assert set(SETTING) == {f.name for f in fields(Knobs)}
    for name, setting in SETTING.items():
        assert getattr(Knobs(), name) == Settings.model_fields[setting].default, name
    assert Knobs.of(Settings()).rerank_role_gate == Knobs().rerank_role_gate


def test_knobs_are_read_from_settings_and_frozen() -> None:
    tuned = Settings(rrf_k=7, search_rerank_depth=25, search_rerank_answer_weight=0.4,
                     knn_overfetch_multiplier=5, memory_selroute_enabled=True)  # fmt: skip
    knobs = Knobs.of(tuned)
    assert (knobs.rrf_k, knobs.rerank_depth, knobs.fetch_multiplier) == (7, 25, 5)
    assert knobs.route
    assert knobs.rerank_weights()["answer"] == 0.4
    with pytest.raises(FrozenInstanceError):
        knobs.rrf_k = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        knobs.tuned(no_such_knob=1)


def test_the_settings_reach_the_named_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SEARCH_*`` (and the other ranking settings) tune the named profiles as
    before: from the environment or from code."""
    monkeypatch.setenv("RRF_K", "7")
    monkeypatch.setenv("SEARCH_RERANK_DEPTH", "30")
    for name in profiles.PROFILES:
        knobs = resolve(name, Settings()).knobs
        assert knobs is not None and (knobs.rrf_k, knobs.rerank_depth) == (7, 30)
    assert resolve("hybrid", Settings(hybrid_vector_weight=0.9)).knobs.hybrid_vector_weight == 0.9  # type: ignore[union-attr]
    # a recipe has no knobs of its own; a tuned profile keeps its own
    assert RRF.knobs is None and resolve(RRF, Settings(rrf_k=9)).knobs.rrf_k == 9  # type: ignore[union-attr]
    mine = RRF.tuned(rrf_k=3)
    assert resolve(mine, Settings(rrf_k=9)) is mine and mine.knobs.rrf_k == 3  # type: ignore[union-attr]
    assert RRF.tuned().knobs == Knobs()  # from the documented defaults, not the environment


def test_the_pipeline_reads_no_setting() -> None:
    """Only ``knobs.py`` reads a Settings' fields: every other retrieval module
    reads the request and its profile's knobs."""
    for path in sorted(RETRIEVAL.glob("*.py")):
        if path.name == "knobs.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                owner = node.value
                reads = (isinstance(owner, ast.Name) and owner.id == "settings") or (
                    isinstance(owner, ast.Attribute) and owner.attr == "settings"
                )
                assert not reads, f"{path.name}:{node.lineno} reads settings.{node.attr}"


# --- through the search -----------------------------------------------------------------
@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_a_profile_of_the_default_settings_ranks_as_the_name(
    make_mem: Callable[..., Memory], name: str
) -> None:
    """A profile object built from default settings (or tuned to nothing) gives
    exactly the ranking of its name: ids, scores and traces."""
    mem = make_mem(settings=Settings())
    _notes(mem)
    for query in QUERIES:
        named = _hits(mem, query, name)
        assert named
        assert _hits(mem, query, resolve(name, Settings())) == named
        assert _hits(mem, query, profiles.PROFILES[name].tuned()) == named


def test_a_memorys_settings_and_an_equal_profile_rank_alike(
    make_mem: Callable[..., Memory],
) -> None:
    """The same store searched by a Memory with tuned settings and by a default
    one with the profile of those settings: the same answer. The profile object
    wins over the engine's settings."""
    tuned = Settings(rrf_k=20, search_rerank_depth=5, search_speaker_boost=1.0, search_date_boost=2,
                     search_path_boost=0.5, search_context_weight=0.0)  # fmt: skip
    mem = make_mem("shared", settings=tuned)
    _notes(mem, seed=1)
    plain = make_mem("shared", settings=Settings())
    for query in QUERIES:
        by_settings = _hits(mem, query, "rrf")
        assert _hits(plain, query, resolve("rrf", tuned)) == by_settings
        assert _hits(plain, query, "rrf") != by_settings  # the knobs matter here
        assert _hits(mem, query, resolve("rrf", Settings())) == _hits(plain, query, "rrf")


def test_a_tuned_profile_changes_the_ranking(make_mem: Callable[..., Memory]) -> None:
    """An old memory that matches every word, and a new one that matches fewer:
    freshness puts the new one first; a profile with a very long half-life puts
    the better match first. The second stage off leaves no trace of it."""
    mem = make_mem()
    old, new = (r.id for r in mem.add_many([
        {"content": "harbour crane maintenance schedule", "user_id": "u",
         "created_at": NOW - timedelta(days=400)},
        {"content": "harbour crane", "user_id": "u", "created_at": NOW - timedelta(days=1)},
    ], on_duplicate="keep", permanent=True))  # fmt: skip
    query = "harbour crane maintenance schedule"
    assert [hit[0] for hit in _hits(mem, query, "rrf")] == [new, old]
    patient = RRF.tuned(recency_half_life_days=1e6)
    assert [hit[0] for hit in _hits(mem, query, patient)] == [old, new]
    plain = _hits(mem, query, RRF.tuned(rerank=False))
    assert plain and not any(k.startswith("rerank_") for _, _, trace in plain for k in trace)
    assert any(k.startswith("rerank_") for _, _, trace in _hits(mem, query, "rrf") for k in trace)
