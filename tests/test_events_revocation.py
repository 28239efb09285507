"""Issue 20 item 5: an open event stream ends once its key is revoked (or its console
session ends), through a real server and a real streaming client: nothing stored
after the revocation is delivered, and an idle stream notices within the re-check
interval (``SERVER_EVENTS_KEY_RECHECK_SECONDS``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

from memchentic.server.auth import KeyRing  # noqa: E402

from .live_server import Live, live_server, sse_messages  # noqa: E402

#: Each wait on the stream is bounded by this read timeout (a deadline, not a sleep).
READ_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("revocation"), mcp=False) as server:
        yield server


def _recheck(monkeypatch: pytest.MonkeyPatch, live: Live, seconds: float) -> None:
    monkeypatch.setattr(live.mem.settings, "server_events_key_recheck_seconds", seconds)


def _stream(live: Live, headers: dict[str, str]) -> httpx.Client:
    client = live.http(None, timeout=httpx.Timeout(READ_TIMEOUT, read=READ_TIMEOUT))
    client.headers.update(headers)
    return client


@contextmanager
def _started(
    client: httpx.Client, path: str = "/v1/events", **params: str
) -> Iterator[Iterator[str]]:
    """The lines of an open event stream, after its first message (``retry:``, sent
    once the stream has found its starting point)."""
    with client.stream("GET", path, params=params) as response:
        assert response.status_code == 200, response.read()
        lines = response.iter_lines()
        assert next(lines).startswith("retry:")
        yield lines


def _rest(lines: Iterator[str]) -> list[str]:
    """Every line until the server ends the stream (a read timeout fails the test)."""
    return list(lines)


def _new_key(live: Live, identity: str, name: str) -> tuple[str, Callable[[], bool]]:
    """A new API key of ``identity``: its secret and a function that revokes it."""
    ring = KeyRing(live.mem.store)
    key, record = ring.create(identity=identity, name=name)
    return key, lambda: ring.revoke(record.id)


def _keyed_stream(live: Live, identity: str, name: str) -> tuple[httpx.Client, Callable[[], bool]]:
    """A streaming client holding a new key of ``identity``, and the key's revocation."""
    key, revoke = _new_key(live, identity, name)
    return _stream(live, {"Authorization": f"Bearer {key}"}), revoke


def test_nothing_stored_after_a_revocation_is_streamed(live: Live, monkeypatch):
    # a re-check interval far longer than the test: only the check before each
    # delivered batch can stop the stream
    _recheck(monkeypatch, live, 3600)
    client, revoke = _keyed_stream(live, "alice", "stream-a")
    alice = live.mem.for_identity("alice")
    with _started(client, type="memory.added") as lines:
        before = alice.add("Alice's locker is number 12").id
        seen = sse_messages(lines, 1)
        assert [json.loads(m["data"])["memory_id"] for m in seen] == [before]
        assert revoke()
        after = alice.add("Alice's new locker code is 4711").id
        rest = _rest(lines)
    assert after and not any(after in line for line in rest)
    assert not any(line.startswith("data:") for line in rest)
    assert client.get("/v1/events").status_code == 401


def test_an_idle_stream_ends_within_the_recheck_interval(live: Live, monkeypatch):
    _recheck(monkeypatch, live, 0.05)
    client, revoke = _keyed_stream(live, "bob", "stream-b")
    with _started(client) as lines:
        assert revoke()
        rest = _rest(lines)  # ends long before the 15 s keepalive or the read timeout
    assert not any(line.startswith("data:") for line in rest)


def test_a_valid_key_keeps_its_stream(live: Live, monkeypatch):
    _recheck(monkeypatch, live, 0.05)  # re-checks many times; the key holds
    client, _ = _keyed_stream(live, "bob", "stream-c")
    bob = live.mem.for_identity("bob")
    with _started(client, type="memory.added") as lines:
        first = bob.add("Bob's train leaves at 7:40").id
        second = bob.add("Bob's return train leaves at 18:05").id
        seen = sse_messages(lines, 2)
    assert [json.loads(m["data"])["memory_id"] for m in seen] == [first, second]


def _console(live: Live, secret: str) -> tuple[httpx.Client, str]:
    """A console client signed in with ``secret`` and its session cookie."""
    client = live.http(None, follow_redirects=False, timeout=httpx.Timeout(READ_TIMEOUT))
    client.headers["Origin"] = live.url  # a browser's form posts from the console
    signed = client.post("/console/login", data={"key": secret})
    assert signed.status_code == 303, signed.text
    return client, client.cookies["memchentic_console"]


@pytest.mark.parametrize("how", ["sign-out", "revoke"])
def test_the_console_stream_ends_with_its_session(live: Live, monkeypatch, how: str):
    _recheck(monkeypatch, live, 0.05)
    key, revoke = _new_key(live, "alice", f"console-{how}")
    browser, session = _console(live, key)
    alice = live.mem.for_identity("alice")
    watcher = _stream(live, {"Cookie": f"memchentic_console={session}"})
    with _started(watcher, "/console/events/stream") as lines:
        before = alice.add("Alice parks on level 3").id
        seen = sse_messages(lines, 1)
        assert json.loads(seen[0]["data"])["memory_id"] == before
        if how == "sign-out":
            assert browser.post("/console/logout").status_code == 303
        else:
            assert revoke()
        after = alice.add("Alice now parks on level 5").id
        rest = _rest(lines)
    assert after and not any(after in line for line in rest)
    assert watcher.get("/console/events/stream").status_code == 401
