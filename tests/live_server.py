"""A real server for the server tests: uvicorn on a free loopback port, in a thread,
serving ``create_app`` over a fresh SQLite store with the hashing embedder, with
two identities (alice, bob) and three API keys (alice, bob, admin)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from memchentic import Memory


@dataclass
class Live:
    """A running server: its URL, the ``Memory`` it serves and a key per principal."""

    url: str
    mem: Memory
    keys: dict[str, str]
    clients: list[httpx.Client] = field(default_factory=list)

    def http(self, who: str | None = None, **kwargs: Any) -> httpx.Client:
        """An HTTP client for ``who`` (alice, bob, admin; None: no key)."""
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
        kwargs.setdefault("timeout", 30)
        client = httpx.Client(base_url=self.url, headers=headers, **kwargs)
        self.clients.append(client)
        return client


class ServerThread:
    """uvicorn running ``app`` in a daemon thread on 127.0.0.1, port chosen by the OS."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def seed(path: Path, *, embedder: str = "hash") -> tuple[Memory, dict[str, str]]:
    """A store with identities alice and bob and keys for them and an admin."""
    from memchentic.server.auth import KeyRing

    mem = Memory(store=str(path), embedder=embedder)
    mem.directory.create_identity("alice")
    mem.directory.create_identity("bob")
    ring = KeyRing(mem.store)
    keys = {
        "alice": ring.create(identity="alice")[0],
        "bob": ring.create(identity="bob")[0],
        "admin": ring.create(admin=True)[0],
    }
    return mem, keys


@contextmanager
def live_server(folder: Path, **app_options: Any) -> Iterator[Live]:
    """Serve a seeded store from ``folder`` for the duration of the block."""
    from memchentic.server import create_app

    mem, keys = seed(folder / "memory.db")
    thread = ServerThread(create_app(mem, **app_options))
    live = Live(thread.start(), mem, keys)
    try:
        yield live
    finally:
        for client in live.clients:
            client.close()
        thread.stop()
        mem.close()


def sse_messages(
    lines: Iterable[str], wanted: int, timeout: float | None = None
) -> list[dict[str, str]]:
    """Read SSE messages with data (``id``, ``event``, ``data``; comments and ``retry:``
    skipped) from ``lines`` until ``wanted`` have arrived; with ``timeout``, no line is
    read after that many seconds."""
    found: list[dict[str, str]] = []
    current: dict[str, str] = {}
    deadline = None if timeout is None else time.monotonic() + timeout
    for line in lines:
        if deadline is not None and time.monotonic() > deadline:
            break
        if not line:
            if "data" in current:
                found.append(current)
                if len(found) >= wanted:
                    break
            current = {}
            continue
        name, _, value = line.partition(":")
        if name:
            current[name] = value.strip()
    return found


def sse_events(
    response: httpx.Response, wanted: int, timeout: float = 10.0
) -> list[dict[str, str]]:
    """Read SSE messages from a streaming response until ``wanted`` have arrived (the
    response's read timeout bounds each wait)."""
    return sse_messages(response.iter_lines(), wanted, timeout)
