"""The static embedder (issue 25): a token table distilled from the packaged MiniLM.

The table is built once for this module into a temporary cache (about 40 s on
two cores), the way a user's first use builds it into ``~/.cache/memchentic``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memchentic import Memory
from memchentic.embed import (
    RECORDED_MODELS,
    StaticEmbedder,
    get_embedder,
    static_available,
)
from memchentic.embed import distill as distill_module
from memchentic.embed import static as static_module
from memchentic.embed.base import LoadOnce
from memchentic.embed.distill import DISTILL_VERSION, _pca, source_digest
from memchentic.embed.static import STATIC_MODEL
from memchentic.errors import EmbedderMismatchError, ValidationError
from memchentic.settings import Settings

from .data.statement_pairs import ADDED, PAIRS, REFUSED

pytestmark = pytest.mark.skipif(
    not static_available(), reason="the static embedder needs the [local] extra"
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedder-cache")


@pytest.fixture(scope="module")
def static(cache: Path) -> StaticEmbedder:
    return StaticEmbedder(cache_dir=cache)


@pytest.fixture
def settings(cache: Path) -> Settings:
    return Settings(embedder_cache_dir=str(cache))


def test_identity_shape_and_unit_rows(static: StaticEmbedder) -> None:
    assert (static.name, static.model, static.dimension) == ("static", STATIC_MODEL, 256)
    m = static.embed_batch(["Sam likes spicy food a lot.", "Deploys happen on Fridays.", "  ", ""])
    assert m.shape == (4, 256) and m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m[:2], axis=1), 1.0, atol=1e-5)
    assert not m[2:].any()  # nothing to embed: a zero row
    np.testing.assert_array_equal(static.embed("Deploys happen on Fridays."), m[1])
    with pytest.raises(TypeError):
        static.embed_batch("one string")  # type: ignore[arg-type]


def test_the_build_records_how_it_was_made(static: StaticEmbedder) -> None:
    from memchentic.embed.local import bundled_model_path

    info = static.info
    assert info["version"] == DISTILL_VERSION and info["dims"] == 256
    assert info["source_sha256"] == source_digest(bundled_model_path())
    assert info["tokens"] == static._tokenizer.get_vocab_size()


def test_semantics(static: StaticEmbedder) -> None:
    hiking, trekking, colour, port = static.embed_batch(
        [
            "I love hiking in the mountains",
            "We went trekking in the Alps last summer",
            "My favourite colour is blue",
            "The database listens on port 5432",
        ]
    )
    assert cosine(hiking, trekking) > cosine(hiking, colour) + 0.2
    assert cosine(hiking, trekking) > cosine(hiking, port) + 0.2


def test_it_reads_the_whole_text(static: StaticEmbedder) -> None:
    """MiniLM stops at 256 tokens (a later word changes nothing); the static table
    counts every token."""
    long = " ".join(["we talked about the weather and the garden"] * 60)  # 480 tokens
    plain, ending = static.embed_batch([long, long + " and then about submarines"])
    assert not np.array_equal(plain, ending)


def test_a_built_table_is_loaded_not_rebuilt(
    static: StaticEmbedder, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the table was rebuilt")

    monkeypatch.setattr(static_module, "build_static_model", refuse)
    monkeypatch.setattr(static_module, "_TABLES", LoadOnce())  # not the in-process copy
    again = StaticEmbedder(cache_dir=cache)
    texts = ["Alice moved to Porto", "The GUI runs on port 18080"]
    np.testing.assert_array_equal(again.embed_batch(texts), static.embed_batch(texts))


def test_concurrent_first_uses_build_the_table_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Path] = []
    release = threading.Event()

    def fake_build(source: Path, target: Path, **kwargs: Any) -> Path:
        built.append(target)
        release.wait(5)  # the others are waiting on the lock meanwhile
        target.mkdir(parents=True)
        np.save(target / "vectors.npy", np.zeros((1, 8), dtype=np.float32))
        return target

    monkeypatch.setattr(static_module, "build_static_model", fake_build)
    folders: list[Path] = []
    threads = [
        threading.Thread(target=lambda: folders.append(static_module._default_table(tmp_path)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(10)
    assert len(built) == 1 and len(folders) == 3 and len(set(folders)) == 1


def test_first_build_shows_progress_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first build takes minutes on a busy machine: a terminal is told, with a bar
    fed by the build (it used to print nothing for 170 s)."""
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    reports: list[tuple[int, int]] = []

    def fake_build(source: Path, target: Path, **kwargs: Any) -> Path:
        for done in (1024, 2048, 3000):
            kwargs["progress"](done, 3000)
            reports.append((done, 3000))
        target.mkdir(parents=True)
        np.save(target / "vectors.npy", np.zeros((1, 8), dtype=np.float32))
        return target

    monkeypatch.setattr(static_module, "build_static_model", fake_build)
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    static_module._default_table(tmp_path)
    assert reports == [(1024, 3000), (2048, 3000), (3000, 3000)]
    assert "building the static embedder's table" in screen.getvalue()


def test_pca_gives_the_same_axes_whatever_the_row_order() -> None:
    """An SVD's signs are arbitrary; the build fixes them, so a rebuild agrees."""
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((300, 24)) @ rng.standard_normal((24, 24))
    order = rng.permutation(300)
    a, b = _pca(matrix, 8), _pca(matrix[order], 8)
    np.testing.assert_allclose(a[order], b, atol=1e-8)
    assert a.shape == (300, 8)


def test_bad_model_path_and_bad_build_options(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as error:
        StaticEmbedder(model_path=tmp_path)
    assert error.value.field == "model_path"
    with pytest.raises(ValidationError) as error:
        distill_module.build_static_model(tmp_path, tmp_path / "out", dims=4)
    assert error.value.field == "dims"
    with pytest.raises(ValidationError) as error:
        distill_module.build_static_model(tmp_path, tmp_path / "out", sif=1.5)
    assert error.value.field == "sif"


def test_a_store_keeps_the_embedder_it_was_built_with(
    tmp_path: Path, settings: Settings, static: StaticEmbedder
) -> None:
    path = tmp_path / "s.db"
    with Memory(path=path, embedder="static", settings=settings) as mem:
        first = mem.add("The GUI runs on port 18080", user_id="ops")
        assert mem.store.get_meta("embedding_model") == STATIC_MODEL
    assert RECORDED_MODELS[STATIC_MODEL] == "static"
    with Memory(path=path, settings=settings) as mem:  # no embedder named
        assert mem.embedder.model == STATIC_MODEL
        assert [h.id for h in mem.search("which port does the GUI use?", user_id="ops")] == [
            first.id
        ]
    with pytest.raises(EmbedderMismatchError):
        Memory(path=path, embedder="hash", settings=settings)


def test_an_unknown_embedder_name_creates_no_store(tmp_path: Path) -> None:
    path = tmp_path / "never.db"
    with pytest.raises(ValidationError) as error:
        Memory(path=path, embedder="word2vec")
    assert error.value.field == "embedder"
    assert not path.exists()


def test_reindex_moves_a_store_to_the_static_embedder(
    tmp_path: Path, settings: Settings, static: StaticEmbedder
) -> None:
    path = tmp_path / "moved.db"
    with Memory(path=path, embedder="hash", settings=settings) as mem:
        kept = mem.add("Mia is learning to play the cello", user_id="mia")
        seen: list[tuple[int, int]] = []
        assert mem.reindex(embedder=static, progress=lambda d, t: seen.append((d, t))) == 1
        assert seen[-1] == (1, 1)
    with Memory(path=path, settings=settings) as mem:
        assert mem.embedder.model == STATIC_MODEL
        hits = mem.search("which instrument is Mia practising?", user_id="mia")
        assert [h.id for h in hits] == [kept.id]


def test_no_new_fact_is_refused(
    make_mem: Callable[..., Memory], static: StaticEmbedder
) -> None:
    """The labelled pairs of issue 21 with the static embedder: a paraphrase may be
    kept twice, but no update, contradiction or other statement is ever refused, and
    every update and negation supersedes."""
    mem = make_mem("static-pairs", embedder=static)
    for i, (first, second, label, _category) in enumerate(PAIRS):
        mem.add(first, user_id=f"pair{i}")
        got = mem.add(second, user_id=f"pair{i}").status
        if label == REFUSED:
            assert got in (REFUSED, ADDED), (first, second, got)
        else:
            assert got == label, (first, second, label, got)


def test_get_embedder_knows_static_and_minilm(settings: Settings) -> None:
    assert get_embedder("static", settings).model == STATIC_MODEL
    assert get_embedder(None, settings, recorded=STATIC_MODEL).model == STATIC_MODEL
    assert get_embedder("hash", settings, recorded=STATIC_MODEL).model == "hash-v1"


def _damage_nan(vectors: Path) -> None:
    table = np.load(vectors)
    np.save(vectors, np.full_like(table, np.nan))


def _damage_no_columns(vectors: Path) -> None:
    np.save(vectors, np.zeros((np.load(vectors).shape[0], 0), dtype=np.float32))


def _damage_truncate(vectors: Path) -> None:
    data = vectors.read_bytes()
    vectors.write_bytes(data[: len(data) // 3])


def _damage_one_value(vectors: Path) -> None:
    table = np.load(vectors)
    table[100, 3] += 0.5  # finite and the right shape: only the recorded digest knows
    np.save(vectors, table)


@pytest.mark.parametrize(
    "damage", [_damage_nan, _damage_no_columns, _damage_truncate, _damage_one_value]
)
def test_a_damaged_table_is_rebuilt_not_used(
    static: StaticEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: Callable[[Path], None],
) -> None:
    """Issue 32, item 7: a table of NaNs loaded silently (NaN vectors stored, search
    by keywords alone), a zero-column one failed at the first search, a truncated one
    failed until someone deleted the folder. Each is now found on load and rebuilt."""
    import shutil

    good = Path(static.model_path)
    folder = tmp_path / good.name
    shutil.copytree(good, folder)
    damage(folder / "vectors.npy")
    rebuilt: list[Path] = []

    def rebuild(source: Path, target: Path, **kwargs: Any) -> Path:
        rebuilt.append(target)
        shutil.copytree(good, target)  # as the real build, without its 40 s
        return target

    monkeypatch.setattr(static_module, "build_static_model", rebuild)
    monkeypatch.setattr(static_module, "_TABLES", LoadOnce())
    again = StaticEmbedder(cache_dir=tmp_path)
    assert rebuilt == [folder]
    texts = ["Alice moved to Porto", "The GUI runs on port 18080"]
    vectors = again.embed_batch(texts)
    assert again.dimension == static.dimension and np.isfinite(vectors).all()
    np.testing.assert_array_equal(vectors, static.embed_batch(texts))
    assert not [p for p in tmp_path.iterdir() if ".damaged-" in p.name]


def test_a_damaged_table_of_ones_own_is_a_clear_error(
    static: StaticEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table at ``model_path`` is the user's: never rebuilt or moved, refused."""
    import shutil

    from memchentic.errors import EmbedderError

    folder = tmp_path / "mine"
    shutil.copytree(static.model_path, folder)
    _damage_nan(folder / "vectors.npy")
    monkeypatch.setattr(static_module, "_TABLES", LoadOnce())
    with pytest.raises(EmbedderError, match="not finite"):
        StaticEmbedder(model_path=folder)
    assert (folder / "vectors.npy").is_file()


def test_the_build_records_the_tables_digest(static: StaticEmbedder) -> None:
    from memchentic.embed.distill import file_digest

    assert static.info["vectors_sha256"] == file_digest(Path(static.model_path) / "vectors.npy")
