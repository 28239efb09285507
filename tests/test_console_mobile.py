"""The web console on a phone (issue 24, item 7): at a 390x844 viewport in headless
Chromium, no console page scrolls sideways, the navigation is there and tappable,
text is readable, a form submits, the graph's labels do not overlap (at 390 px and
on a desktop) and the events page says what it will show before anything happens.

Every assertion is on a measurement taken in the browser; the screenshots written
to ``tests/artifacts/`` (``console-mobile-*.png``) are evidence for a person."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("fastapi")

from memchentic.server.console.graph_layout import LABEL_FONT, Box, label_width, layout  # noqa: E402

from .live_server import Live, live_server  # noqa: E402
from .test_console import ARTIFACTS, CHROMIUM_ARGS, _chromium  # noqa: E402

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}
#: Tap targets (nav links, buttons, form fields) are at least this high, in CSS px.
TAP = 40
#: No text outside the graph drawing is smaller than this, in CSS px.
READABLE = 14

#: Long names on purpose: labels that would collide if drawn as they come.
TOPICS = [
    "Alice's deployment checklist for the payments service in production",
    "Alice prefers pull requests under four hundred lines with a written test plan",
    "The staging database is refreshed from a masked production snapshot every Monday",
    "Alice's on-call rotation starts on the first Tuesday of every other month",
    "Feature flags for the checkout redesign live in the flags service, not config files",
    "The payments service talks to the ledger through the internal gRPC gateway only",
    "Alice wants release notes written in plain language for the support team",
    "Load tests for the payments service run nightly against the staging cluster",
    "Alice keeps architecture decision records in the docs folder of each repository",
    "Rollbacks of the payments service need a second approver from the platform team",
    "The ledger's reconciliation job runs at two in the morning UTC every day",
    "Alice asked for dashboards of p99 latency per endpoint on the payments service",
    "Secrets for the payments service are rotated every ninety days by the vault job",
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("console-mobile")) as server:
        yield server


@pytest.fixture(scope="module")
def seeded(live: Live) -> dict[str, str]:
    """Memories that stress the layout: long titles, an unbroken token, many tags, and
    a neighbourhood of a dozen long-named memories around one centre."""
    alice = live.mem.for_identity("alice")
    long_token = "https://wiki.example.com/" + "very-long-path-segment/" * 8 + "index.html"
    wide = alice.add(
        f"Runbook for the payments service lives at {long_token}",
        title="The payments service runbook, its long link and everything else about it",
        type="procedure", tags=["payments", "runbook", "operations", "production", "oncall"],
    ).id  # fmt: skip
    ids = [alice.add(text, type="semantic", tags=["payments"]).id or "" for text in TOPICS]
    centre = ids[0]
    for i, other in enumerate(ids[1:11], start=1):  # ten neighbours of the centre...
        alice.relate(centre, other, "supports" if i % 2 else "related_to")
    for i, other in enumerate(ids[11:]):  # ...and two at two hops
        alice.relate(ids[1 + i], other, "related_to")
    return {"wide": wide or "", "centre": centre}


@pytest.fixture(scope="module")
def browser(live: Live) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def _context(browser: Any, live: Live, viewport: dict[str, int], *, signed_in: bool = True):
    context = browser.new_context(base_url=live.url, viewport=viewport)
    context.set_default_timeout(15_000)
    if signed_in:
        page = context.new_page()
        page.goto("/console/login")
        page.fill("#key", live.keys["alice"])
        page.click("#sign-in")
        page.wait_for_selector("#add-form")
        page.close()
    return context


def _pages(seeded: dict[str, str]) -> list[str]:
    return [
        "/console",
        "/console/search?q=payments+service+rollbacks",
        f"/console/memories/{seeded['wide']}",
        f"/console/memories/{seeded['centre']}",
        f"/console/memories/{seeded['centre']}/graph",
        "/console/events",
    ]


def _scroll_width(page: Any) -> int:
    return int(page.evaluate("() => document.scrollingElement.scrollWidth"))


#: Elements that hold text of their own, outside the graph drawing, and their size.
SMALL_TEXT = """(least) => Array.from(document.querySelectorAll('body *'))
  .filter(e => !e.closest('svg') && e.offsetParent !== null &&
          Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim()))
  .map(e => [e.tagName + (e.className ? '.' + e.className : ''),
             parseFloat(getComputedStyle(e).fontSize), e.textContent.trim().slice(0, 30)])
  .filter(([, size]) => size < least)"""

#: Visible tap targets (nav links, buttons, fields) lower than TAP px, or off the screen.
SMALL_TARGETS = """(least) => Array.from(document.querySelectorAll(
    'header a, header button, main button, main input, main select, main textarea, main summary'))
  .filter(e => e.offsetParent !== null)
  .map(e => [e.id || e.name || e.textContent.trim().slice(0, 20), e.getBoundingClientRect()])
  .filter(([, r]) => r.height < least || r.left < 0 || r.right > window.innerWidth)
  .map(([name, r]) => [name, Math.round(r.height), Math.round(r.left), Math.round(r.right)])"""


def test_no_console_page_scrolls_sideways_at_390(browser: Any, live: Live, seeded: dict[str, str]):
    anonymous = _context(browser, live, PHONE, signed_in=False)
    context = _context(browser, live, PHONE)
    try:
        page = anonymous.new_page()
        page.goto("/console/login")
        widths = {"/console/login": _scroll_width(page)}
        page = context.new_page()
        for path in _pages(seeded):
            page.goto(path)
            page.wait_for_load_state("domcontentloaded")
            widths[path] = _scroll_width(page)
        print("scrollWidth at 390 px:", widths)
        assert {path: width for path, width in widths.items() if width > PHONE["width"]} == {}
    finally:
        anonymous.close()
        context.close()


def test_text_is_readable_and_targets_are_tappable_at_390(
    browser: Any, live: Live, seeded: dict[str, str]
):
    context = _context(browser, live, PHONE)
    try:
        page = context.new_page()
        small: dict[str, Any] = {}
        for path in [*_pages(seeded), "/console/login"]:
            page.goto(path)
            page.wait_for_load_state("domcontentloaded")
            text = sorted({(tag, size) for tag, size, _ in page.evaluate(SMALL_TEXT, READABLE)})
            targets = page.evaluate(SMALL_TARGETS, TAP)
            if text or targets:
                small[path] = {"text": text, "targets": targets}
        print("small at 390 px:", small)
        assert small == {}
    finally:
        context.close()


def test_the_nav_is_reachable_and_a_form_submits_at_390(browser: Any, live: Live, seeded):
    context = _context(browser, live, PHONE)
    try:
        page = context.new_page()
        page.goto("/console")
        for link, path in [("#nav-search", "/console/search"), ("#nav-events", "/console/events"),
                           ("#nav-memories", "/console")]:  # fmt: skip
            target = page.locator(link)
            assert target.is_visible()
            box = target.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
            assert box["y"] + box["height"] <= PHONE["height"]  # on the first screen
            target.click()
            page.wait_for_url(f"**{path}")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "console-mobile-memories.png"), full_page=True)

        page.locator("#content").scroll_into_view_if_needed()
        page.fill("#content", "Alice reads the console on her phone on the train")
        page.fill("#tags", "phone, console")
        page.click("#add")
        page.wait_for_selector("#memory-content")
        assert "on her phone" in page.inner_text("#memory-content")
        assert page.inner_text("#status").startswith("added")
        assert _scroll_width(page) <= PHONE["width"]
    finally:
        context.close()


def _cross(a: Box, b: Box) -> bool:
    return a.left < b.right and b.left < a.right and a.top < b.bottom and b.top < a.bottom


def test_the_layout_places_labels_apart_without_a_browser():
    """Thirty neighbours (the console's most), long and wide (CJK) names: no two label
    boxes meet, none meets a node, all lie inside the drawing, and it is deterministic."""
    centre = SimpleNamespace(id="c", title=None, content=TOPICS[0])
    names = [*TOPICS, *(f"東京の会議室の予約は毎週月曜日に更新される {i}" for i in range(17))]
    memories = [SimpleNamespace(id=f"n{i}", title=None, content=names[i]) for i in range(30)]
    neighbours = [
        SimpleNamespace(memory=m, depth=1 if i < 14 else 2, via="edge:supports",
                        from_id="c" if i < 14 else f"n{i - 14}")
        for i, m in enumerate(memories)
    ]  # fmt: skip
    drawn = layout(centre, neighbours)
    assert drawn == layout(centre, neighbours)
    labels = [Box(n["lx"], n["ly"] - LABEL_FONT, n["lx"] + label_width(n["label"]),
                  n["ly"] - LABEL_FONT + LABEL_FONT * 1.35) for n in drawn["nodes"]]  # fmt: skip
    nodes = [Box(n["x"] - n["r"], n["y"] - n["r"], n["x"] + n["r"], n["y"] + n["r"])
             for n in drawn["nodes"]]  # fmt: skip
    assert len(labels) == 31 and all(len(n["label"]) <= 22 for n in drawn["nodes"])
    assert [(a, b) for a, b in itertools.combinations(labels, 2) if _cross(a, b)] == []
    assert [(a, b) for a in labels for b in nodes if _cross(a, b)] == []
    assert all(b.left >= 0 and b.right <= drawn["width"] and b.top >= 0
               and b.bottom <= drawn["height"] for b in labels + nodes)  # fmt: skip
    assert {n["full"] for n in drawn["nodes"]} == set(names)


LABEL_BOXES = """() => Array.from(document.querySelectorAll('svg#graph .label'))
  .map(e => { const r = e.getBoundingClientRect();
              return [e.textContent, r.left, r.top, r.right, r.bottom]; })"""


def _overlapping(boxes: list[list[Any]]) -> list[tuple[str, str]]:
    found = []
    for i, (a, al, at, ar, ab) in enumerate(boxes):
        for b, bl, bt, br, bb in boxes[i + 1 :]:
            if al < br and bl < ar and at < bb and bt < ab:
                found.append((a, b))
    return found


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "desktop"])
def test_graph_labels_do_not_overlap(browser: Any, live: Live, seeded, viewport):
    context = _context(browser, live, viewport)
    try:
        page = context.new_page()
        page.goto(f"/console/memories/{seeded['centre']}/graph")
        page.wait_for_selector("svg#graph circle")
        boxes = page.evaluate(LABEL_BOXES)
        # the centre, its twelve neighbours, and whatever shares an entity with them
        assert len(boxes) == page.locator("svg#graph circle").count() >= len(TOPICS)
        assert all(right > left and bottom > top for _, left, top, right, bottom in boxes)
        assert _overlapping(boxes) == []
        # every label names its memory in full on hover (a <title>), however it is cut
        titles = page.locator("svg#graph a > title").all_text_contents()
        assert set(TOPICS) <= set(titles) and len(titles) == len(boxes)
        assert _scroll_width(page) <= viewport["width"]
        ARTIFACTS.mkdir(exist_ok=True)
        name = "mobile" if viewport is PHONE else "desktop"
        page.screenshot(path=str(ARTIFACTS / f"console-{name}-graph.png"), full_page=True)
    finally:
        context.close()


def test_the_events_page_says_what_it_will_show_before_the_first_event(
    browser: Any, live: Live, seeded
):
    context = _context(browser, live, PHONE)
    try:
        page = context.new_page()
        page.goto("/console/events")
        waiting = page.locator("#events-empty")
        assert waiting.is_visible()  # there before the stream has even opened
        text = waiting.inner_text().lower()
        assert "namespaces" in text and "user:alice" in text and "waiting for the first" in text
        page.locator("#events-state", has_text="live").wait_for()
        assert waiting.is_visible()  # and while nothing has happened yet
        live.mem.for_identity("alice").add("Alice turned on notifications for the console")
        page.wait_for_selector("#events tr:has-text('memory.added')")
        assert not waiting.is_visible()  # the first event replaces it
    finally:
        context.close()
