"""The local model on ONNX Runtime, and a model loaded only when a call embeds.

* ONNX Runtime's vectors are torch's (cosine at least 0.9999 on varied texts), so
  a store built with torch needs no reindex; the identity is unchanged.
* The export is made once, kept with the SHA-256 of the weights, and made again
  when the weights change or the export is damaged; it says so on a terminal.
* Where ONNX Runtime cannot load, torch runs it, with one warning in the log.
* Opening a store, listing, counting, getting, exporting and checking load no
  model (neither torch nor onnxruntime is imported), on both backends; a search
  runs without torch once the export exists.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memchentic import Embedder, Memory
from memchentic.embed import get_embedder
from memchentic.embed import onnx_model as onnx_module
from memchentic.embed.local import DEFAULT_LOCAL_MODEL, INT8_SUFFIX, LocalEmbedder
from memchentic.embed.local import local_available as _local_available
from memchentic.errors import EmbedderError, EmbedderMismatchError, ValidationError
from memchentic.settings import Settings

SRC = Path(__file__).resolve().parents[1] / "src"
MODULES = ("torch", "onnxruntime", "sentence_transformers", "transformers")
needs_local = pytest.mark.skipif(
    not (_local_available() and onnx_module.onnx_runtime_available()),
    reason="memchentic[local] (with onnxruntime) not installed",
)

#: ~50 texts: short, long (beyond 256 tokens: truncated), CJK, emoji, accents,
#: code, numbers, whitespace around, one token
TEXTS = [
    "Sam likes spicy food a lot.",
    "Sam does not like spicy food.",
    "Where did I park the car yesterday?",
    "What is my cat's name?",
    "a",
    "?",
    "   padded with spaces on both sides   ",
    "\tTabs\tand\nnew lines\n",
    "The production deployment runs every Friday afternoon at 3pm UTC.",
    "I moved from Berlin to Lisbon in March 2023 for a new job at a fintech startup.",
    "东京是日本的首都，也是世界上人口最多的城市之一。",
    "日本語のテキストです。東京に住んでいます。",
    "서울은 대한민국의 수도입니다.",
    "🎉🎉 party time 🥳 with 🍕 and 🍺",
    "👍",
    "Ünïcödé àccents: café, naïve, Zürich, São Paulo, Kraków.",
    "Привет, как дела? Я живу в Москве.",
    "مرحبا بكم في دبي",
    "def add(a: int, b: int) -> int:\n    return a + b",
    "SELECT id, name FROM users WHERE created_at > now() - interval '1 day';",
    "https://example.com/path?query=1&other=two#fragment",
    "3.14159 2.71828 1.41421 1234567890",
    "user: I'm allergic to peanuts, please remember that.",
    "assistant: Noted, I will avoid suggesting recipes with peanuts.",
    "The meeting with Dr. O'Neil was moved to Tuesday.",
    "ALL CAPS SHOUTING TEXT ABOUT THE WEATHER",
    "mixed CASE with CamelCaseWords and snake_case_words",
    "The quick brown fox jumps over the lazy dog. " * 3,
    "word " * 300,  # 300 tokens and more: truncated at 256
    " ".join(f"token{i}" for i in range(400)),
    "Long story. " + "My sister visited last summer and we hiked the coast. " * 40,
    "我喜欢吃辣的食物。" * 60,
    "🙂" * 300,
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
    "Remind me to call mom on her birthday, June 14th.",
    "The API rate limit is 100 requests per minute per key.",
    "I prefer dark mode in every editor I use.",
    "My favourite book is 'The Left Hand of Darkness' by Ursula K. Le Guin.",
    "Kubernetes pods keep restarting because of OOMKilled errors.",
    "We decided to use PostgreSQL with pgvector for the embeddings.",
    "\u200b zero-width space inside \u200b",
    "emoji and text 😀 mixed 🚀 with 中文 and English",
    "— dashes – and “quotes” and ‘single’ ones…",
    "1. first\n2. second\n3. third",
    "Hello",
    "hello",
    "HELLO!!!",
    "The weather in Paris is sunny today, 24°C.",
    "I have two dogs, Rex and Bella, and a cat named Miso.",
    "Note to self: the wifi password is on the fridge.",
]


class _StandIn(Embedder):
    """Writes as the local model would record itself, without a model: one-hot rows."""

    name = "local"
    model = DEFAULT_LOCAL_MODEL
    dimension = 384

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, int(hashlib.sha1(text.encode()).hexdigest(), 16) % self.dimension] = 1.0
        return out


def _run(code: str, **env: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; its last line of output, parsed as JSON."""
    full = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", **env}
    done = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------
# The same vectors as torch
# ---------------------------------------------------------------------------------------


@needs_local
def test_onnx_vectors_equal_torch_vectors() -> None:
    assert len(TEXTS) >= 50
    onnx = LocalEmbedder()
    torch_ = LocalEmbedder(runtime="torch")
    assert onnx.identity == torch_.identity == f"{DEFAULT_LOCAL_MODEL}:384"
    a, b = onnx.embed_batch(TEXTS), torch_.embed_batch(TEXTS)
    assert onnx.runtime == "onnx" and torch_.runtime == "torch"
    cosines = np.sum(a * b, axis=1)
    assert cosines.min() >= 0.9999, [TEXTS[i][:40] for i in np.where(cosines < 0.9999)[0]]
    # one at a time (no batch padding) gives the same rows
    single = np.vstack([onnx.embed(t) for t in TEXTS[:8]])
    np.testing.assert_allclose(single, a[:8], atol=1e-5)


@needs_local
def test_onnx_truncates_as_sentence_transformers() -> None:
    """MiniLM reads its first 256 tokens (sentence_bert_config.json), as torch does: a
    text and the same text with more words after its 256th token embed alike."""
    spec = onnx_module.read_spec(Path(LocalEmbedder().model_path))
    assert spec is not None and spec.max_tokens == 256 and spec.exportable
    base = " ".join(f"word{i}" for i in range(300))
    e = LocalEmbedder()
    longer, shorter = e.embed_batch([base + " and a different ending entirely", base])
    assert float(longer @ shorter) > 0.99999


@needs_local
def test_int8_is_opt_in_with_its_own_identity() -> None:
    e = get_embedder("local-int8", Settings())
    assert e.model == DEFAULT_LOCAL_MODEL + INT8_SUFFIX and e.dimension == 384
    assert e.name == "local-int8"  # what `memchentic serve` hands its workers
    fp32 = LocalEmbedder().embed_batch(TEXTS[:20])
    int8 = e.embed_batch(TEXTS[:20])
    cosines = np.sum(fp32 * int8, axis=1)
    assert cosines.mean() > 0.98 and not np.allclose(fp32, int8, atol=1e-4)
    with pytest.raises(ValidationError, match="int8"):
        LocalEmbedder(int8=True, runtime="torch")


# ---------------------------------------------------------------------------------------
# The export: once, checked by the weights' SHA-256, said on a terminal
# ---------------------------------------------------------------------------------------


@pytest.fixture
def fake_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Path]]:
    """A model folder with weights, and an exporter that records its calls."""
    source = tmp_path / "model"
    source.mkdir()
    (source / "model.safetensors").write_bytes(b"weights v1")
    exports: list[Path] = []

    def export(src: Path, target: Path) -> None:
        exports.append(target)
        target.write_bytes(b"onnx of " + (src / "model.safetensors").read_bytes())

    monkeypatch.setattr(onnx_module, "_export", export)
    return source, exports


def test_export_once_and_again_when_the_weights_change(
    fake_source: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    source, exports = fake_source
    cache = tmp_path / "cache"
    path = onnx_module.ensure_export(source, cache)
    assert path.read_bytes() == b"onnx of weights v1" and len(exports) == 1
    info = json.loads((path.parent / "onnx.json").read_text())
    assert info["weights_sha256"] == hashlib.sha256(b"weights v1").hexdigest()
    assert onnx_module.ensure_export(source, cache) == path and len(exports) == 1
    weights = source / "model.safetensors"
    os.utime(weights, ns=(1, 1))  # touched, the same bytes: kept
    assert onnx_module.ensure_export(source, cache) == path and len(exports) == 1
    weights.write_bytes(b"weights v2")  # other weights: exported again
    os.utime(weights, ns=(1, 1))  # even where the size and time alone would not tell
    weights.write_bytes(b"weights v3")
    os.utime(weights, ns=(1, 1))
    assert onnx_module.ensure_export(source, cache).read_bytes() == b"onnx of weights v3"
    assert len(exports) == 2
    path.write_bytes(b"cut")  # a damaged export (another size): exported again
    assert onnx_module.ensure_export(source, cache).read_bytes() == b"onnx of weights v3"
    assert len(exports) == 3


def test_export_says_so_on_a_terminal(
    fake_source: tuple[Path, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _ = fake_source

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    onnx_module.ensure_export(source, tmp_path / "tty")
    assert "exporting the local model to ONNX" in screen.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    onnx_module.ensure_export(source, tmp_path / "pipe")
    assert piped.getvalue() == ""  # not a terminal: the log only


def test_default_threads_are_a_few_cores() -> None:
    assert 1 <= onnx_module.default_threads() <= 4


@needs_local
def test_threads_set_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCHENTIC_LOCAL_EMBEDDER_THREADS", "1")
    from memchentic.settings import load_settings

    e = get_embedder("local", load_settings())
    e.embed("a b c")
    spec = onnx_module.read_spec(Path(e.model_path))
    assert spec is not None
    path = onnx_module.ensure_export(spec.folder, e.cache_dir)
    session = onnx_module.shared_encoder(path, spec, 1).session
    assert session.get_session_options().intra_op_num_threads == 1
    assert session.get_session_options().inter_op_num_threads == 1
    np.testing.assert_allclose(e.embed("a b c"), LocalEmbedder(threads=2).embed("a b c"),
                               atol=1e-5)  # fmt: skip


# ---------------------------------------------------------------------------------------
# Falling back to torch
# ---------------------------------------------------------------------------------------


@needs_local
def test_falls_back_to_torch_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from memchentic.embed import local as local_module

    def broken(*_args: object, **_kwargs: object) -> Path:
        raise EmbedderError("onnxruntime cannot load here")

    monkeypatch.setattr(local_module, "ensure_export", broken)
    monkeypatch.setattr(local_module, "_FELL_BACK", False)
    reference = LocalEmbedder(runtime="torch").embed("Sam likes spicy food")
    with caplog.at_level(logging.WARNING, logger="memchentic.embed.local"):
        first, second = LocalEmbedder(), LocalEmbedder()
        vector = first.embed("Sam likes spicy food")
        second.embed("again")
    assert first.runtime == second.runtime == "torch"
    np.testing.assert_allclose(vector, reference, atol=1e-6)
    warnings = [r for r in caplog.records if "runs on torch" in r.getMessage()]
    assert len(warnings) == 1 and "cannot load here" in warnings[0].getMessage()
    with pytest.raises(EmbedderError, match="cannot load here"):  # int8: no torch twin
        LocalEmbedder(int8=True).embed("x")


@needs_local
def test_a_cache_folder_it_cannot_write_falls_back_to_torch(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    e = LocalEmbedder(cache_dir=not_a_folder)
    vector = e.embed("Sam likes spicy food")
    assert e.runtime == "torch"
    np.testing.assert_allclose(vector, LocalEmbedder().embed("Sam likes spicy food"), atol=1e-5)


# ---------------------------------------------------------------------------------------
# Nothing loaded that a call does not need
# ---------------------------------------------------------------------------------------


def test_open_list_stats_get_load_no_model(make_mem: object) -> None:
    """A store built with the local model opens, lists, counts, gets and exports
    without loading it; the embedder check compares identities (no weights)."""
    made = make_mem("lazy", embedder=_StandIn())  # type: ignore[operator]
    added = made.add("Sam likes spicy food")
    mem = make_mem("lazy", embedder=None)  # type: ignore[operator]
    assert isinstance(mem.embedder, LocalEmbedder)
    assert mem.get(added.id) is not None
    assert [r.id for r in mem.list()] == [added.id]
    mem.stats()
    mem.export(io.StringIO())
    assert not mem.embedder.loaded
    with pytest.raises(EmbedderMismatchError, match="--embedder local-int8"):
        make_mem("lazy", embedder=LocalEmbedder(int8=True))  # type: ignore[operator]


_COMMANDS = """
import json, sys
from typer.testing import CliRunner
from memchentic import Memory
from memchentic.cli import app
store, mid = sys.argv[1], sys.argv[2]
codes = [CliRunner().invoke(app, [*args, "--store", store]).exit_code for args in
         (["list"], ["stats"], ["get", mid], ["export", "-"], ["check"], ["keys", "list"])]
with Memory(store) as mem:
    assert mem.embedder.model == "sentence-transformers/all-MiniLM-L6-v2"
    mem.get(mid)
    mem.list()
print(json.dumps([codes, [m for m in MODULES if m in sys.modules]]))
"""


def test_commands_that_embed_nothing_load_no_model(stores: object, make_mem: object) -> None:
    """list, stats, get, export, check, keys and Memory() import neither torch nor
    onnxruntime (in a fresh process), on both backends."""
    mem = make_mem("cli", embedder=_StandIn())  # type: ignore[operator]
    mid = mem.add("Sam likes spicy food").id
    mem.close()
    location = stores.location("cli")  # type: ignore[attr-defined]
    code = f"MODULES = {MODULES!r}\n" + _COMMANDS
    full = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code, location, mid], env=full,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    codes, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert codes == [0] * 6
    assert loaded == []


@needs_local
def test_search_runs_without_torch_once_exported(tmp_path: Path) -> None:
    LocalEmbedder().embed("export it now")  # the export exists (default cache)
    with Memory(str(tmp_path / "s.db"), embedder=_StandIn()) as mem:
        mem.add("Sam likes spicy food")
    code = (
        "import json, sys; from memchentic import Memory\n"
        f"with Memory({str(tmp_path / 's.db')!r}) as mem:\n"
        "    hits = mem.search('what food does Sam like?')\n"
        "    runtime = mem.embedder.runtime\n"
        f"print(json.dumps([len(hits), runtime, [m for m in {MODULES!r} if m in sys.modules]]))"
    )
    hits, runtime, loaded = _run(code)
    assert hits == 1 and runtime == "onnx"
    assert loaded == ["onnxruntime"]
