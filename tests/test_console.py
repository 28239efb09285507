"""The web console end to end in headless Chromium (Debian's ``chromium``, driven by
Playwright): sign in, add a memory, watch its event arrive, find it by search,
open its trace, its page and its graph. Screenshots go to ``tests/artifacts/``.

Plus the console's rules without a browser: sign-in required, cookie scope,
cross-site form posts refused."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402

from .live_server import Live, live_server  # noqa: E402

ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


def _chromium() -> str | None:
    return (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("console")) as server:
        yield server


def test_pages_need_a_signed_in_key(live: Live):
    anonymous = live.http(follow_redirects=False)
    anonymous.headers["Origin"] = live.url  # as a browser's form post from the console
    for path in ("/console", "/console/search?q=x", "/console/events", "/console/memories/x"):
        response = anonymous.get(path)
        assert response.status_code == 303 and response.headers["location"] == "/console/login"
    assert anonymous.get("/console/events/stream").status_code == 401
    bad = anonymous.post("/console/login", data={"key": "mck_nope"})
    assert bad.status_code == 200 and "not valid" in bad.text
    good = anonymous.post("/console/login", data={"key": live.keys["alice"]})
    cookie = good.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert anonymous.get("/console").status_code == 200
    assert anonymous.get("/v1/memories").status_code == 401  # the cookie is for pages only
    cross = anonymous.post("/console/memories", data={"content": "forged"},
                           headers={"Origin": "http://evil.example"})  # fmt: skip
    assert cross.status_code == 403
    assert live.mem.list() == []


def test_the_console_in_chromium(live: Live, monkeypatch: pytest.MonkeyPatch):
    # the events tab must notice the sign-out well within the page timeout
    monkeypatch.setattr(live.mem.settings, "server_events_key_recheck_seconds", 0.2)
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    ARTIFACTS.mkdir(exist_ok=True)

    def shot(page: object, name: str) -> None:
        page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"), full_page=True)  # type: ignore[attr-defined]

    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(
                base_url=live.url, viewport={"width": 1280, "height": 860}
            )
            context.set_default_timeout(15_000)
            blocked: list[str] = []  # the CSP must not block anything the console uses
            context.on("console", lambda m: blocked.append(m.text) if "Content Security Policy"
                       in m.text else None)  # fmt: skip
            page = context.new_page()
            page.goto("/console")
            assert page.url.endswith("/console/login")
            page.fill("#key", "mck_wrong")
            page.click("#sign-in")
            assert "not valid" in page.inner_text("#login-error")
            page.fill("#key", live.keys["alice"])
            page.click("#sign-in")
            page.wait_for_selector("#add-form")
            shot(page, "1-memories")

            events = context.new_page()  # the live events view, in a second tab
            events.goto("/console/events")
            # (a locator, not wait_for_function: the CSP refuses the eval that needs)
            events.locator("#events-state", has_text="live").wait_for()

            page.fill("#content", "Alice's favourite editor is Helix, with the default keymap")
            page.fill("#type", "preference")
            page.fill("#tags", "tools, editor")
            page.click("#add")
            page.wait_for_selector("#memory-content")
            assert "Helix" in page.inner_text("#memory-content")
            assert page.inner_text("#status").startswith("added")
            assert "add" in page.inner_text("#versions")
            shot(page, "2-memory")

            events.wait_for_selector("#events tr:has-text('memory.added')")
            shot(events, "3-events")

            page.click("#nav-search")
            page.fill("#q", "which editor does alice like")
            page.click("#search")
            hit = page.locator(".hit", has_text="Helix").first
            hit.wait_for()
            assert float(hit.locator(".score").inner_text()) > 0
            hit.locator("details.trace summary").click()
            signals = hit.locator("table.signals")
            signals.wait_for(state="visible")
            for name in ("match", "freshness", "usage"):
                assert name in signals.inner_text()
            shot(page, "4-search-trace")

            alice = live.mem.for_identity("alice")  # neighbours: an edge and a shared entity
            first = alice.list(tags=["editor"])[0]
            rust = alice.add("Helix is written in Rust and uses tree-sitter").id
            alice.relate(rust or "", first.id, "supports")
            alice.add("Alice configured Helix to use the onedark theme")

            hit.locator(".hit-head a").click()
            page.wait_for_selector("#graph-link")
            assert "supports" in page.inner_text("#edges")
            page.click("#graph-link")
            page.wait_for_selector("svg#graph circle")
            assert page.locator("svg#graph circle").count() >= 3
            shot(page, "5-graph")

            page.goto("/console?tag=editor")
            assert "Helix" in page.inner_text("#memories")
            page.goto("/console?tag=nothing-here")
            assert "Helix" not in page.inner_text("#memories")

            page.click("header form.who button")  # sign out: the session ends, both tabs
            page.wait_for_selector("#key")
            events.locator("#events-state", has_text="closed").wait_for()
            page.goto("/console")
            assert page.url.endswith("/console/login")
            assert blocked == []
        finally:
            browser.close()
    assert (ARTIFACTS / "console-4-search-trace.png").stat().st_size > 0


def test_a_memory_of_someone_else_is_not_found_in_the_console(live: Live):
    secret = live.mem.for_identity("bob").add("Bob's spare key is under the mat").id
    with httpx.Client(base_url=live.url, follow_redirects=True) as alice:
        alice.post("/console/login", data={"key": live.keys["alice"]},
                   headers={"Origin": live.url})  # fmt: skip
        page = alice.get(f"/console/memories/{secret}")
        assert page.status_code == 200 and f"memory not found: {secret}" in page.text
        found = alice.get("/console/search", params={"q": "spare key under the mat"})
        assert found.status_code == 200 and "Bob&#39;s spare key" not in found.text
        assert "Bob's spare key" not in found.text and secret not in found.text
