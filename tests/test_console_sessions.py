"""Issue 20 item 7: the console's security headers and its server-side sessions.

Through a real server: every answer carries ``nosniff``, ``Referrer-Policy`` and
framing refusals; console pages carry a Content-Security-Policy with no inline
script, and render none. The session cookie holds a random id, never the API key;
signing out ends the session on the server (a replayed cookie is refused), and so
does revoking the key. Then the session table itself (``ConsoleSessions``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

from memchentic import Memory  # noqa: E402
from memchentic.server.auth import KeyRing  # noqa: E402
from memchentic.server.sessions import ConsoleSessions  # noqa: E402

from .live_server import Live, live_server  # noqa: E402

COOKIE = "memchentic_console"
API_CSP = "default-src 'none'; frame-ancestors 'none'"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("console-sessions")) as server:
        yield server


def _browser(live: Live) -> httpx.Client:
    """A browser on the console: its form posts carry the console's ``Origin``."""
    client = live.http(None, follow_redirects=False)
    client.headers["Origin"] = live.url
    return client


def _sign_in(live: Live, secret: str, **headers: str) -> tuple[httpx.Client, httpx.Response]:
    client = _browser(live)
    response = client.post("/console/login", data={"key": secret}, headers=headers)
    assert response.status_code == 303, response.text
    return client, response


def _csp(response: httpx.Response) -> dict[str, str]:
    policy = response.headers["content-security-policy"]
    return {p.split()[0]: p.strip() for p in policy.split(";") if p.strip()}


def test_console_pages_send_a_strict_policy_and_no_inline_script(live: Live):
    client, _ = _sign_in(live, live.keys["alice"])
    mid = live.mem.for_identity("alice").add("Alice's desk is by the window").id
    pages = ["/console/login", "/console", "/console/search?q=desk", "/console/events",
             f"/console/memories/{mid}", f"/console/memories/{mid}/graph"]  # fmt: skip
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        csp = _csp(response)
        assert csp["default-src"] == "default-src 'none'"
        assert csp["script-src"] == "script-src 'self'"
        assert csp["style-src"] == "style-src 'self'"
        assert csp["frame-ancestors"] == "frame-ancestors 'none'"
        assert csp["form-action"] == "form-action 'self'"
        assert "unsafe-inline" not in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        # no referrer leaves the console; its own posts keep Origin for the CSRF check
        assert response.headers["referrer-policy"] == "same-origin"
        # what the policy would block must not be there: inline script, handlers, styles
        html = response.text
        assert re.findall(r"<script(?![^>]*\bsrc=)", html) == [], path
        assert re.findall(r"\son[a-z]+\s*=", html) == [], path
        assert re.findall(r"\sstyle\s*=|<style", html) == [], path
    script = client.get("/console/static/events.js")
    assert script.status_code == 200 and script.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in script.headers["content-security-policy"]


def test_every_api_answer_sends_the_headers(live: Live):
    alice, anonymous = live.http("alice"), live.http()
    answers = [
        anonymous.get("/healthz"), anonymous.get("/openapi.json"), anonymous.get("/v1/memories"),
        alice.get("/v1/memories"), alice.get("/v1/memories/01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
        alice.post("/v1/memories", json={"content": "x" * (3 * 1024 * 1024)}),
        anonymous.post("/mcp", json={}),
    ]  # fmt: skip
    assert [a.status_code for a in answers] == [200, 200, 401, 200, 404, 413, 401]
    for answer in answers:
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["content-security-policy"] == API_CSP


def test_the_cookie_holds_a_session_id_not_the_key(live: Live):
    secret = live.keys["alice"]
    client, response = _sign_in(live, secret)
    header = response.headers["set-cookie"]
    session = client.cookies[COOKIE]
    assert secret not in header and session != secret and not session.startswith("mck_")
    assert "HttpOnly" in header and "SameSite=strict" in header and "Path=/console" in header
    assert "Secure" not in header  # plain HTTP here
    stored = repr(live.mem.store.console_sessions())
    assert session not in stored and secret not in stored  # hashes only
    assert client.get("/console").status_code == 200
    # the session id does not open the API as a bearer key
    as_bearer = live.http().get("/v1/me", headers={"Authorization": f"Bearer {session}"})
    assert as_bearer.status_code == 401
    # and the raw key as a cookie no longer signs anyone in
    forged = _browser(live)
    forged.cookies.set(COOKIE, secret, path="/console")
    assert forged.get("/console").headers["location"] == "/console/login"


def test_the_cookie_is_secure_over_https(live: Live):
    # uvicorn trusts X-Forwarded-Proto from loopback: the app sees https
    behind_tls = {"X-Forwarded-Proto": "https", "Origin": live.url.replace("http:", "https:")}
    _, response = _sign_in(live, live.keys["bob"], **behind_tls)
    assert "Secure" in response.headers["set-cookie"]


def test_sign_out_ends_the_session_on_the_server(live: Live):
    client, _ = _sign_in(live, live.keys["bob"])
    session = client.cookies[COOKIE]
    cross = client.post("/console/logout", headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403
    assert client.get("/console").status_code == 200  # a forged sign-out changed nothing
    out = client.post("/console/logout")
    assert out.status_code == 303 and out.headers["location"] == "/console/login"
    replay = _browser(live)
    replay.cookies.set(COOKIE, session, path="/console")
    for path in ("/console", "/console/events"):
        assert replay.get(path).headers["location"] == "/console/login"
    assert replay.get("/console/events/stream").status_code == 401
    refused = replay.post("/console/memories", data={"content": "Bob posts after signing out"})
    assert refused.status_code == 303 and refused.headers["location"] == "/console/login"
    assert not [m for m in live.mem.list(namespace="user:bob") if "signing out" in m.content]


def test_revoking_the_key_ends_its_console_sessions(live: Live):
    ring = KeyRing(live.mem.store)
    key, record = ring.create(identity="alice", name="console-revoke")
    first, _ = _sign_in(live, key)
    second, _ = _sign_in(live, key)
    assert first.get("/console").status_code == second.get("/console").status_code == 200
    assert ring.revoke(record.id)
    for client in (first, second):
        assert client.get("/console").headers["location"] == "/console/login"
    assert "console-revoke" not in first.get("/console/login").text


def test_sessions_end_when_they_expire_and_are_bounded_per_key(make_mem: Callable[..., Memory]):
    mem = make_mem()  # the session table lives in the store: both backends
    mem.directory.create_identity("alice")
    ring = KeyRing(mem.store)
    sessions = ConsoleSessions(ring, hours=1.0, per_key=2)
    key, record = ring.create(identity="alice")
    assert sessions.open("mck_not-a-key") is None
    a, b, c = (sessions.open(key) for _ in range(3))
    assert a and b and c and len({a, b, c}) == 3
    assert sessions.key(a) is None  # the oldest beyond SERVER_CONSOLE_SESSIONS_PER_KEY went
    assert sessions.key(b) == sessions.key(c) == record
    # a session past its end is refused
    for entry in mem.store.console_sessions():  # in their own table since migration 12
        mem.store.save_console_session(entry._replace(expires_at="2000-01-01T00:00:00.000000+00:00"))
    assert sessions.key(b) is None and sessions.key(c) is None
    # the next sign-in prunes expired sessions and those of revoked keys
    other, other_record = ring.create(identity="alice", name="other")
    kept = sessions.open(other)
    assert ring.revoke(other_record.id)
    assert sessions.key(kept) is None
    fresh = sessions.open(key)
    assert fresh and len(mem.store.console_sessions()) == 1
    assert sessions.close(fresh) and not sessions.close(fresh)
    assert sessions.key(fresh) is None
    for junk in (None, "", "x" * 10_000):
        assert sessions.key(junk) is None


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no Origin, no Referer
        {"Origin": "null"},
        {"Origin": "https://{host}"},  # another scheme
        {"Origin": "http://{hostname}:1"},  # another port
        {"Origin": "http://{hostname}"},  # the default port: another origin
        {"Origin": "http://evil.example"},
        {"Referer": "http://evil.example/console"},
        {"Origin": "http://{host}.evil.example"},
    ],
)
def test_a_post_from_anywhere_but_the_consoles_own_origin_is_refused(
    live: Live, headers: dict[str, str]
) -> None:
    """Issue 32, item 12: the Origin check let through posts with no ``Origin`` and
    compared only the host; scheme and port count too."""
    host = live.url.removeprefix("http://")
    hostname = host.split(":")[0]
    client, _ = _sign_in(live, live.keys["bob"])
    del client.headers["Origin"]
    sent = {k: v.format(host=host, hostname=hostname) for k, v in headers.items()}
    text = f"Bob posts from elsewhere {sorted(sent.items())}"
    refused = client.post("/console/memories", data={"content": text}, headers=sent)
    assert refused.status_code == 403
    assert not [m for m in live.mem.list(namespace="user:bob") if m.content == text]
    # the same post from the console itself: by Origin, or by a same-origin Referer
    for own in ({"Origin": live.url}, {"Referer": f"{live.url}/console"}):
        accepted = client.post("/console/memories", data={"content": f"{text} {own}"},
                               headers=own)  # fmt: skip
        assert accepted.status_code == 303, accepted.text
