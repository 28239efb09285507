"""Embedders: hashing, local (real model), OpenAI (against a real local HTTP server),
and the registry."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memchentic.embed as embed_pkg
from memchentic.embed import (
    EMBEDDERS,
    Embedder,
    HashEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    get_embedder,
    local_available,
    register_embedder,
)
from memchentic.errors import EmbedderError, ValidationError
from memchentic.settings import Settings

SRC = Path(embed_pkg.__file__).resolve().parents[2]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------------------
# HashEmbedder
# ---------------------------------------------------------------------------------------


def test_hash_identity_and_shape() -> None:
    e = HashEmbedder(dimension=128)
    assert (e.name, e.model, e.dimension) == ("hash", "hash-v1", 128)
    assert e.identity == "hash-v1:128"
    m = e.embed_batch(["one text", "another text", "a third"])
    assert m.shape == (3, 128)
    assert m.dtype == np.float32
    assert HashEmbedder().dimension == 384


def test_hash_unit_norm_and_empty_is_zero() -> None:
    e = HashEmbedder()
    m = e.embed_batch(["Sam likes spicy food", "", "   \n\t", "?!", "x"])
    norms = np.linalg.norm(m, axis=1)
    assert norms[0] == pytest.approx(1.0, abs=1e-5)
    assert norms[4] == pytest.approx(1.0, abs=1e-5)
    assert np.all(m[1] == 0) and np.all(m[2] == 0) and np.all(m[3] == 0)
    assert e.embed_batch([]).shape == (0, 384)


def test_hash_deterministic_within_and_across_processes() -> None:
    text = "Deploys happen on Fridays; Ünïcode wörds too 123"
    e = HashEmbedder()
    vec = e.embed(text)
    assert np.array_equal(vec, HashEmbedder().embed(text))
    code = (
        "import sys; from memchentic.embed.hashing import HashEmbedder; "
        "sys.stdout.write(HashEmbedder().embed(sys.argv[1]).tobytes().hex())"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, text],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout == vec.tobytes().hex()


def test_hash_similarity_follows_shared_words() -> None:
    e = HashEmbedder()
    a, b, c = e.embed_batch(
        [
            "the user prefers dark mode in the editor",
            "user prefers the dark mode editor theme",
            "quarterly revenue grew in the european market",
        ]
    )
    assert cosine(a, b) > 0.5
    assert cosine(a, b) > cosine(a, c) + 0.3
    assert abs(cosine(e.embed("apples bananas"), e.embed("kernel scheduler"))) < 0.2
    # sub-word overlap through character trigrams
    assert cosine(e.embed("deployment"), e.embed("deploy")) > 0.05
    # case-insensitive
    assert np.array_equal(e.embed("Hello World"), e.embed("hello world"))


def test_hash_is_fast() -> None:
    e = HashEmbedder()
    texts = [
        f"note {i}: user {i % 37} prefers tabs over spaces in repo {i % 101}" for i in range(10_000)
    ]
    start = time.perf_counter()
    m = e.embed_batch(texts)
    elapsed = time.perf_counter() - start
    assert m.shape == (10_000, 384)
    assert elapsed < 5.0, f"10k texts took {elapsed:.2f}s"


def test_hash_rejects_bad_dimension() -> None:
    with pytest.raises(ValidationError) as info:
        HashEmbedder(dimension=2)
    assert info.value.field == "dimension"


# ---------------------------------------------------------------------------------------
# A real OpenAI-compatible embeddings server
# ---------------------------------------------------------------------------------------

SECRET = "sk-test-SECRET-do-not-leak-0123456789"


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic vector for a text (not normalised, so the client must normalise)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(dim) * 3.0).tolist()


class FakeEmbeddingServer(ThreadingHTTPServer):
    """Speaks ``POST /v1/embeddings``; records every request; behaviour is adjustable."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.native_dim = 12
        self.fail_statuses: list[int] = []  # consumed one per request, before succeeding
        self.always_status: int | None = None
        self.wrong_size = False
        self.wrong_count = False
        self.bad_json = False
        self.reverse = True  # answer out of order (with correct indexes)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: FakeEmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        srv = self.server
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with srv.lock:
            srv.requests.append(
                {"path": self.path, "headers": dict(self.headers.items()), "body": body}
            )
            status = srv.always_status
            if status is None and srv.fail_statuses:
                status = srv.fail_statuses.pop(0)
        if self.path != "/v1/embeddings":
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        if status is not None:
            # A hostile server echoing the credentials: the client must not repeat them.
            echo = {"error": {"message": "boom", "auth": self.headers.get("Authorization")}}
            self._send(status, json.dumps(echo).encode())
            return
        if srv.bad_json:
            self._send(200, b"<html>surprise</html>", "text/html")
            return
        inputs = body["input"]
        dim = body.get("dimensions", srv.native_dim)
        if srv.wrong_size:
            dim += 1
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, dim)}
            for i, text in enumerate(inputs)
        ]
        if srv.wrong_count:
            data = data[:-1]
        if srv.reverse:
            data.reverse()
        answer = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        self._send(200, json.dumps(answer).encode())


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    srv = FakeEmbeddingServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


def expected(texts: list[str], dim: int) -> np.ndarray:
    m = np.asarray([fake_vector(t, dim) for t in texts], dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_openai_batches_and_keeps_order(server: FakeEmbeddingServer) -> None:
    texts = [f"text number {i}" for i in range(7)]
    with OpenAIEmbedder(server.base_url, model="emb-small", dimension=12, batch_size=3) as e:
        assert (e.name, e.model, e.dimension) == ("openai", "emb-small", 12)
        m = e.embed_batch(texts)
    assert m.shape == (7, 12) and m.dtype == np.float32
    np.testing.assert_allclose(m, expected(texts, 12), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    bodies = [r["body"] for r in server.requests]
    assert [b["input"] for b in bodies] == [texts[0:3], texts[3:6], texts[6:7]]
    assert all(b["model"] == "emb-small" and b["dimensions"] == 12 for b in bodies)
    assert all(r["path"] == "/v1/embeddings" for r in server.requests)


def test_openai_blank_texts_are_zero_rows_and_not_sent(server: FakeEmbeddingServer) -> None:
    e = OpenAIEmbedder(server.base_url + "/", dimension=12)  # trailing slash is fine
    m = e.embed_batch(["", "hello", "  "])
    assert np.all(m[0] == 0) and np.all(m[2] == 0)
    np.testing.assert_allclose(m[1], expected(["hello"], 12)[0], atol=1e-6)
    assert [r["body"]["input"] for r in server.requests] == [["hello"]]
    assert e.embed_batch(["", " "]).shape == (2, 12)
    assert len(server.requests) == 1
    e.close()


def test_openai_authorization_header(server: FakeEmbeddingServer) -> None:
    OpenAIEmbedder(server.base_url, api_key=SECRET, dimension=12).embed("hi")
    OpenAIEmbedder(server.base_url, dimension=12).embed("hi")
    with_key, without_key = (
        {k.lower(): v for k, v in r["headers"].items()} for r in server.requests
    )
    assert with_key["authorization"] == f"Bearer {SECRET}"
    assert "authorization" not in without_key
    assert SECRET not in repr(OpenAIEmbedder(server.base_url, api_key=SECRET, dimension=3))


def test_openai_probes_dimension_when_not_given(server: FakeEmbeddingServer) -> None:
    server.native_dim = 20
    e = OpenAIEmbedder(server.base_url, model="m")
    assert e.dimension == 20
    assert e.identity == "m:20"
    assert len(server.requests) == 1
    probe = server.requests[0]["body"]
    assert probe["input"] == ["dimension probe"] and "dimensions" not in probe
    assert e.embed_batch(["a", "b"]).shape == (2, 20)
    assert "dimensions" not in server.requests[1]["body"]


def test_openai_500_fails_after_retries_without_leaking_key(
    server: FakeEmbeddingServer,
) -> None:
    e = OpenAIEmbedder(server.base_url, api_key=SECRET, dimension=12, backoff=0.01)
    server.always_status = 500
    with pytest.raises(EmbedderError) as info:
        e.embed("hello")
    message = str(info.value)
    assert "500" in message
    assert f"{server.base_url}/embeddings" in message
    assert SECRET not in message
    assert SECRET not in repr(info.value.to_dict())
    assert len(server.requests) == 3


def test_openai_retries_then_succeeds(server: FakeEmbeddingServer) -> None:
    e = OpenAIEmbedder(server.base_url, dimension=12, backoff=0.01)
    server.fail_statuses = [503, 429]
    np.testing.assert_allclose(e.embed("x"), expected(["x"], 12)[0], atol=1e-6)
    assert len(server.requests) == 3


def test_openai_4xx_is_not_retried(server: FakeEmbeddingServer) -> None:
    e = OpenAIEmbedder(server.base_url, api_key=SECRET, dimension=12, backoff=0.01)
    server.always_status = 401
    with pytest.raises(EmbedderError, match="401") as info:
        e.embed("x")
    assert SECRET not in str(info.value)
    assert len(server.requests) == 1


def test_openai_probe_failure_raises_at_construction(server: FakeEmbeddingServer) -> None:
    server.always_status = 502
    with pytest.raises(EmbedderError, match="502"):
        OpenAIEmbedder(server.base_url, backoff=0.01)


def test_openai_wrong_vector_size(server: FakeEmbeddingServer) -> None:
    e = OpenAIEmbedder(server.base_url, dimension=12)
    server.wrong_size = True
    with pytest.raises(EmbedderError, match="13 dimensions, expected 12"):
        e.embed_batch(["a", "b"])


def test_openai_wrong_count_and_bad_json(server: FakeEmbeddingServer) -> None:
    e = OpenAIEmbedder(server.base_url, dimension=12)
    server.wrong_count = True
    with pytest.raises(EmbedderError, match="1 embeddings for 2 inputs"):
        e.embed_batch(["a", "b"])
    server.wrong_count = False
    server.bad_json = True
    with pytest.raises(EmbedderError, match="not JSON"):
        e.embed("a")


def test_openai_connection_error() -> None:
    # a port that was free a moment ago: nothing listens there
    srv = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    host, port = srv.server_address[:2]
    srv.server_close()
    with pytest.raises(EmbedderError) as info:
        OpenAIEmbedder(f"http://{host}:{port}/v1", api_key=SECRET, backoff=0.01, timeout=2.0)
    assert f"{port}/v1/embeddings" in str(info.value)
    assert SECRET not in str(info.value)


# ---------------------------------------------------------------------------------------
# LocalEmbedder (the real bundled model)
# ---------------------------------------------------------------------------------------

needs_local = pytest.mark.skipif(not local_available(), reason="memchentic[local] not installed")


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # loading must be warning-free
        return LocalEmbedder()


@needs_local
def test_local_identity_and_unit_rows(local: LocalEmbedder) -> None:
    assert local.name == "local"
    assert local.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert local.dimension == 384
    m = local.embed_batch(["Sam likes spicy food a lot.", "Deploys happen on Fridays.", ""])
    assert m.shape == (3, 384) and m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m[:2], axis=1), 1.0, atol=1e-5)
    assert np.all(m[2] == 0)


@needs_local
def test_local_semantics(local: LocalEmbedder) -> None:
    likes, dislikes, food, deploy = local.embed_batch(
        [
            "Sam likes spicy food a lot.",
            "Sam does not like spicy food a lot.",
            "Sam enjoys eating hot chili dishes.",
            "The production deployment runs every Friday afternoon.",
        ]
    )
    assert cosine(likes, dislikes) > 0.85
    assert cosine(likes, food) > cosine(likes, deploy) + 0.2
    assert cosine(food, deploy) < 0.3


@needs_local
def test_local_model_is_shared(local: LocalEmbedder) -> None:
    start = time.perf_counter()
    again = LocalEmbedder()
    assert time.perf_counter() - start < 1.0
    np.testing.assert_allclose(again.embed("same model"), local.embed("same model"), atol=1e-6)
    assert again._backend is local._backend


@needs_local
def test_local_threads_come_from_the_setting_and_do_not_change_vectors() -> None:
    """On torch (LOCAL_EMBEDDER_RUNTIME=torch), LOCAL_EMBEDDER_THREADS sets torch's
    intra-op threads (process-wide, so in a child process) when the model loads; 0
    leaves torch's default. The vectors are the same either way. (ONNX Runtime's
    threads: tests/test_local_onnx.py.)"""
    code = (
        "import json, torch; from memchentic.embed import get_embedder; "
        "from memchentic.settings import load_settings; default = torch.get_num_threads(); "
        "e = get_embedder('local', load_settings()); v = e.embed('a b c').tolist(); "
        "print(json.dumps([default, torch.get_num_threads(), v]))"
    )
    runs = {}
    for value in ("0", "1"):
        env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1",
               "MEMCHENTIC_LOCAL_EMBEDDER_THREADS": value,
               "MEMCHENTIC_LOCAL_EMBEDDER_RUNTIME": "torch"}  # fmt: skip
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)  # fmt: skip
        runs[value] = json.loads(out.stdout.strip().splitlines()[-1])
    default, unchanged, vector = runs["0"]
    assert unchanged == default
    _, one, same = runs["1"]
    assert one == 1
    np.testing.assert_allclose(same, vector, atol=1e-5)


@needs_local
@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_local_bad_threads_is_validation_error(threads: Any) -> None:
    with pytest.raises(ValidationError, match="threads"):
        LocalEmbedder(threads=threads)


@needs_local
def test_local_bad_path_is_embedder_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError):
        LocalEmbedder(model_path=tmp_path / "no-such-model")


def test_local_available_does_not_import_torch() -> None:
    code = (
        "import sys; from memchentic.embed import local_available, LocalEmbedder; "
        "local_available(); print('torch' in sys.modules, 'httpx' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------


def test_get_embedder_by_name() -> None:
    settings = Settings(embedder=None, hash_embedding_dimension=64)
    e = get_embedder("hash", settings)
    assert isinstance(e, HashEmbedder) and e.dimension == 64
    assert isinstance(get_embedder("HASH", settings), HashEmbedder)
    assert set(EMBEDDERS) >= {"hash", "local", "openai"}


def test_get_embedder_openai_from_settings(server: FakeEmbeddingServer) -> None:
    settings = Settings(
        openai_base_url=server.base_url,
        openai_api_key=SECRET,
        openai_embedding_model="my-model",
        openai_embedding_dimension=12,
    )
    e = get_embedder("openai", settings)
    assert isinstance(e, OpenAIEmbedder)
    assert (e.model, e.dimension) == ("my-model", 12)
    e.embed("ping")
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"


@needs_local
def test_get_embedder_local(local: LocalEmbedder) -> None:
    e = get_embedder("local", Settings(embedder=None))
    assert isinstance(e, LocalEmbedder) and e.identity == local.identity
    e.embed("loaded now")
    assert e._backend is local._backend


def test_get_embedder_unknown_name() -> None:
    with pytest.raises(ValidationError) as info:
        get_embedder("word2vec", Settings(embedder=None))
    assert info.value.field == "embedder"
    assert info.value.rule == (
        "must be one of hash, local, minilm, local-int8, openai, static or an Embedder object"
    )
    with pytest.raises(ValidationError):
        get_embedder(42, Settings(embedder=None))  # type: ignore[arg-type]


def test_get_embedder_passes_objects_through() -> None:
    e = HashEmbedder(dimension=32)
    assert get_embedder(e, Settings(embedder="openai")) is e


def test_get_embedder_default_uses_settings() -> None:
    assert isinstance(get_embedder(None, Settings(embedder="hash")), HashEmbedder)


def test_get_embedder_default_without_local_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_pkg, "local_available", lambda: False)
    with pytest.warns(RuntimeWarning, match="not installed"):
        e = get_embedder(None, Settings(embedder=None))
    assert isinstance(e, HashEmbedder)


def test_get_embedder_default_prefers_local(monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = HashEmbedder(dimension=16)
    monkeypatch.setattr(embed_pkg, "local_available", lambda: True)
    monkeypatch.setitem(EMBEDDERS, "local", lambda settings: sentinel)
    assert get_embedder(None, Settings(embedder=None)) is sentinel


class _Constant(Embedder):
    name = "constant"
    model = "constant-v1"

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def embed_batch(self, texts: Any) -> np.ndarray:
        return np.ones((len(texts), self.dimension), dtype=np.float32) / np.sqrt(self.dimension)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    before = dict(EMBEDDERS)
    try:
        yield
    finally:
        EMBEDDERS.clear()
        EMBEDDERS.update(before)


def test_register_embedder(clean_registry: None) -> None:
    register_embedder("Constant", lambda s: _Constant(s.hash_embedding_dimension))
    e = get_embedder("constant", Settings(hash_embedding_dimension=16))
    assert isinstance(e, _Constant) and e.dimension == 16
    assert isinstance(get_embedder(None, Settings(embedder="constant")), _Constant)
    with pytest.raises(ValidationError, match="constant"):
        get_embedder("nope", Settings())
    register_embedder("broken", lambda s: "not an embedder")  # type: ignore[arg-type,return-value]
    with pytest.raises(EmbedderError, match="not an Embedder"):
        get_embedder("broken", Settings())
    with pytest.raises(ValidationError):
        register_embedder("", lambda s: _Constant(8))
