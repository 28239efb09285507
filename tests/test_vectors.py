"""The in-process vector index: exact when small, IVF-Flat past ``exact_below``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memchentic.store import ivf as ivf_params
from memchentic.store.vectors import VectorIndex

DIM = 48


def unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


def clustered(n: int, seed: int = 0, topics: int = 300) -> np.ndarray:
    """Unit vectors around topics of uneven sizes, like embeddings (not uniform noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, DIM))
    weights = rng.pareto(1.5, size=topics) + 1.0
    topic = rng.choice(topics, size=n, p=weights / weights.sum())
    return unit(centres[topic] + 0.6 * rng.standard_normal((n, DIM)))


def near(rows: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Queries: random rows moved a little (cosine ~0.9)."""
    rng = np.random.default_rng(seed)
    picked = rows[rng.integers(len(rows), size=count)]
    return unit(picked + 0.5 / np.sqrt(DIM) * rng.standard_normal(picked.shape))


def build(rows: np.ndarray, exact_below: int, batch: int = 1000) -> VectorIndex:
    index = VectorIndex(DIM, exact_below=exact_below)
    for start in range(0, len(rows), batch):
        index.upsert(range(start, min(len(rows), start + batch)), rows[start : start + batch])
    return index


def recall_at(index: VectorIndex, rows: np.ndarray, queries: np.ndarray, k: int) -> float:
    sims = queries @ rows.T
    truth = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    found = [{key for key, _ in index.search(q, k)} for q in queries]
    return float(np.mean([len(set(t.tolist()) & f) / k for t, f in zip(truth, found, strict=True)]))


def assert_same_answers(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> None:
    """Equal up to float rounding: cosines within 1e-5 place by place, so keys whose
    cosines tie that closely may swap places (or, at the k-th place, differ)."""
    assert len(a) == len(b)
    assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
    cos_a, cos_b = dict(a), dict(b)
    for key in cos_a.keys() & cos_b.keys():
        assert cos_a[key] == pytest.approx(cos_b[key], abs=1e-5)
    for key in cos_a.keys() ^ cos_b.keys():
        assert {**cos_a, **cos_b}[key] == pytest.approx(a[-1][1], abs=1e-5)


@pytest.fixture(scope="module")
def corpus() -> np.ndarray:
    return clustered(40_000)


@pytest.fixture(scope="module")
def ivf(corpus: np.ndarray) -> VectorIndex:
    return build(corpus, exact_below=2000)


def test_recall_at_10_against_an_exact_scan(ivf: VectorIndex, corpus: np.ndarray):
    assert ivf._lists.nlist > 1  # past exact_below: the IVF part answers
    assert recall_at(ivf, corpus, near(corpus, 200, seed=1), 10) >= 0.98


def test_recall_holds_when_calibration_looks_at_every_nth_row(monkeypatch):
    monkeypatch.setattr(ivf_params, "CALIBRATION_ROWS", 3000)  # as past 262,144 rows
    rows = clustered(20_000, seed=15)
    index = build(rows, exact_below=2000)
    assert recall_at(index, rows, near(rows, 200, seed=16), 10) >= 0.98


def test_recall_holds_on_vectors_without_structure():
    # uniform random vectors: nothing to cluster, so the calibrated nprobe grows
    rows = unit(np.random.default_rng(2).standard_normal((6000, DIM)))
    index = build(rows, exact_below=1000)
    assert recall_at(index, rows, near(rows, 100, seed=3), 10) >= 0.98


def test_cosines_are_exact(ivf: VectorIndex, corpus: np.ndarray):
    query = near(corpus, 1, seed=4)[0]
    for key, cosine in ivf.search(query, 20):
        assert cosine == pytest.approx(float(corpus[key] @ query), abs=1e-5)


def test_upsert_replaces_a_key_and_the_old_vector_is_no_longer_found():
    rows = clustered(5000, seed=5)
    index = build(rows, exact_below=1000)
    moved_to = rows[4000]  # key 7 now holds row 4000's vector
    index.upsert([7], moved_to[None, :])
    assert len(index) == 5000
    assert 7 not in {key for key, _ in index.search(rows[7], 5)}
    hits = dict(index.search(moved_to, 2))
    assert set(hits) == {7, 4000}
    assert hits[7] == pytest.approx(1.0, abs=1e-5)


def test_repeated_keys_in_one_upsert_keep_the_last_vector():
    rows = clustered(3, seed=6)
    index = VectorIndex(DIM)
    index.upsert([1, 2, 1], rows)
    assert len(index) == 2
    assert index.search(rows[2], 1)[0][0] == 1
    assert index.search(rows[0], 2)[0][1] < 0.999


@pytest.mark.parametrize("exact_below", [20_000, 1000], ids=["flat", "ivf"])
def test_remove_removes_and_ignores_missing_keys(exact_below: int):
    rows = clustered(5000, seed=7)
    index = build(rows, exact_below=exact_below)
    gone = list(range(0, 5000, 7))
    index.remove([*gone, 10**9])  # a key never added is ignored
    assert len(index) == 5000 - len(gone)
    for key in gone[:50]:
        assert key not in {k for k, _ in index.search(rows[key], 3)}
    assert index.scan(rows[0], gone, 5) == []
    kept = index.search(rows[1], 1)
    assert kept[0][0] == 1


@pytest.mark.parametrize("exact_below", [50_000, 2000], ids=["flat", "ivf"])
@pytest.mark.parametrize("k", [5, 120])
def test_search_many_equals_search_per_row(corpus: np.ndarray, exact_below: int, k: int):
    index = build(corpus[:10_000], exact_below=exact_below)
    queries = near(corpus[:10_000], 300, seed=8)
    batched = index.search_many(queries, k)
    assert len(batched) == len(queries)
    for query, many in zip(queries, batched, strict=True):
        assert_same_answers(many, index.search(query, k))


@pytest.mark.parametrize("exact_below", [50_000, 2000], ids=["flat", "ivf"])
@pytest.mark.parametrize("k", [5, 120])
def test_search_many_with_a_floor_finds_the_hits_over_it(
    corpus: np.ndarray, exact_below: int, k: int
):
    """``min_sim`` keeps what filtering the best ``k`` keeps (the bulk write check
    asks only for neighbours that close), queries with none getting none."""
    index = build(corpus[:10_000], exact_below=exact_below)
    queries = near(corpus[:10_000], 300, seed=8)
    plain = index.search_many(queries, k)
    for floor in (0.6, 0.85, 1.1):
        floored = index.search_many(queries, k, floor)
        kept = [[(key, sim) for key, sim in hits if sim >= floor] for hits in plain]
        assert sum(map(len, kept)) > 0 or floor > 1
        for got, want in zip(floored, kept, strict=True):
            assert all(sim >= floor for _, sim in got)
            assert_same_answers(got, want)


@pytest.mark.parametrize("k", [1, 8, 120, 3000])
def test_probe_plan_orders_the_lists_it_probes_like_a_full_sort(
    ivf: VectorIndex, corpus: np.ndarray, k: int
):
    """The plan sorts only the nearest lists (all of them when those would hold
    too few rows); the lists it probes are the first ones of the full order."""
    lists = ivf._lists
    queries = near(corpus, 200, seed=4)
    order, count = lists.probe_plan(queries, k)
    sims = queries @ lists.centroids.T
    full = np.argsort(-sims, axis=1, kind="stable")
    held = np.cumsum(lists.sizes[full], axis=1)
    want = np.minimum(
        np.maximum(lists.nprobe(k), (held < ivf_params.ROWS_PER_RESULT * k).sum(axis=1) + 1),
        lists.nlist,
    )
    assert count.tolist() == want.tolist()
    for row, full_row, n in zip(order, full, count.tolist(), strict=True):
        assert row[:n].tolist() == full_row[:n].tolist()
    assert order.shape[1] < lists.nlist  # (the rest were left unsorted)


def test_search_many_of_nothing():
    index = VectorIndex(DIM)
    assert index.search_many(np.zeros((2, DIM), np.float32), 3) == [[], []]
    index.upsert([1], np.ones((1, DIM)))
    assert index.search_many(np.empty((0, DIM), np.float32), 3) == []


def test_crossing_exact_below_keeps_every_vector_searchable():
    rows = clustered(3000, seed=9)
    index = VectorIndex(DIM, exact_below=400)
    for start in range(0, 3000, 250):  # trains past 400, retrains past 4x that
        index.upsert(range(start, start + 250), rows[start : start + 250])
        assert len(index) == start + 250
        for key in range(0, start + 250, 37):
            assert index.search(rows[key], 1)[0][0] == key
    index.remove(range(150, 3000))  # under half of exact_below: flat (exact) again
    assert len(index) == 150
    queries = near(rows[:150], 50, seed=10)
    assert recall_at(index, rows[:150], queries, 10) == 1.0


def test_scan_is_exact_among_the_given_keys(ivf: VectorIndex, corpus: np.ndarray):
    rng = np.random.default_rng(11)
    keys = rng.choice(len(corpus), 3000, replace=False)
    query = near(corpus, 1, seed=12)[0]
    found = ivf.scan(query, [*keys.tolist(), int(keys[0]), 10**9], 25)  # repeat, missing
    sims = corpus[keys] @ query
    want = keys[np.argsort(-sims)[:25]]
    assert [key for key, _ in found] == want.tolist()
    assert np.allclose([s for _, s in found], np.sort(sims)[::-1][:25], atol=1e-5)


def test_same_inputs_give_the_same_index(corpus: np.ndarray, ivf: VectorIndex):
    again = build(corpus, exact_below=2000)
    for query in near(corpus, 20, seed=13):
        assert again.search(query, 30) == ivf.search(query, 30)


@pytest.mark.parametrize("exact_below", [50_000, 2000], ids=["flat", "ivf"])
def test_save_and_load_give_the_same_answers(tmp_path: Path, corpus: np.ndarray, exact_below):
    index = build(corpus[:12_000], exact_below=exact_below)
    index.applied_seq = 42
    path = tmp_path / "index.vectors"
    index.save(path, "epoch-1")
    side = json.loads(path.with_suffix(".vectors.json").read_text())
    assert side["format"] == ("flat" if exact_below > 12_000 else "ivf")
    loaded = VectorIndex.load(path, "epoch-1", DIM, exact_below=exact_below)
    assert loaded is not None
    assert len(loaded) == len(index) and loaded.applied_seq == 42
    for query in near(corpus[:12_000], 30, seed=14):
        assert loaded.search(query, 50) == index.search(query, 50)
    # and it keeps working: changes after the load land where they should
    loaded.upsert([5], corpus[20_000][None, :])
    assert loaded.search(corpus[20_000], 1)[0][0] == 5


def test_load_gives_none_for_another_epoch_dimension_format_or_a_bad_file(
    tmp_path: Path, corpus: np.ndarray
):
    path = tmp_path / "index.vectors"
    assert VectorIndex.load(path, "e", DIM, exact_below=100) is None  # missing
    index = build(corpus[:500], exact_below=100)
    index.save(path, "e")
    assert VectorIndex.load(path, "other", DIM, exact_below=100) is None
    assert VectorIndex.load(path, "e", DIM + 1, exact_below=100) is None
    assert VectorIndex.load(path, "e", DIM, exact_below=100) is not None
    side_path = path.with_suffix(".vectors.json")
    side = json.loads(side_path.read_text())
    side_path.write_text(json.dumps({**side, "format": "hnsw"}))  # the old graph format
    assert VectorIndex.load(path, "e", DIM, exact_below=100) is None
    side_path.write_text(json.dumps(side))
    path.write_bytes(path.read_bytes()[:1000])  # truncated
    assert VectorIndex.load(path, "e", DIM, exact_below=100) is None


def test_a_loaded_flat_index_trains_when_exact_below_is_now_smaller(
    tmp_path: Path, corpus: np.ndarray
):
    path = tmp_path / "index.vectors"
    build(corpus[:3000], exact_below=10_000).save(path, "e")
    loaded = VectorIndex.load(path, "e", DIM, exact_below=1000)
    assert loaded is not None and loaded._lists.nlist > 1
    assert loaded.search(corpus[17], 1)[0][0] == 17


def test_search_many_passes_over_nan_rows_like_search(corpus: np.ndarray):
    """A NaN vector (an embedder's bad output) never crowds out real neighbours."""
    rows = corpus[:3000].copy()
    rows[::97] = np.nan
    index = build(rows, exact_below=50_000)
    queries = near(corpus[:3000], 50, seed=3)
    for query, many in zip(queries, index.search_many(queries, 8), strict=True):
        one = index.search(query, 8)
        assert [key for key, _ in many] == [key for key, _ in one]
        assert len(many) == 8 and all(np.isfinite(sim) for _, sim in many)
