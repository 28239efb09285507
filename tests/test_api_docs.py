"""The API reference pages of the server: Swagger UI at ``/docs`` and ReDoc at
``/redoc``, served from the server itself (the ``fastapi-offline`` package's copies
of their files), readable without a key, under a policy that allows nothing from
another origin. Then both pages in headless Chromium with every request that would
leave the server refused: Swagger UI lists ``POST /v1/search`` and runs it with a
key given to "Authorize"; ReDoc renders."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi")

from fastapi.routing import APIRoute  # noqa: E402

from memchentic.server.headers import API_CSP, CONSOLE_CSP  # noqa: E402

from .live_server import Live, live_server  # noqa: E402
from .test_console import CHROMIUM_ARGS, _chromium  # noqa: E402

PAGES = ("/docs", "/redoc")
TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("api-docs")) as server:
        yield server


def _assets(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]*)"', page)


@pytest.mark.parametrize("path", PAGES)
def test_the_page_loads_only_its_own_files_and_needs_no_key(live: Live, path: str):
    anonymous = live.http()
    response = anonymous.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "http" not in response.text  # no URL to another host, in an attribute or a script
    assets = _assets(response.text)
    assert assets and all(url.startswith("/docs/static/") for url in assets)
    for url in assets:
        asset = anonymous.get(url)
        assert asset.status_code == 200 and len(asset.content) > 0
        wanted = TYPES[url[url.rindex(".") :]]
        assert asset.headers["content-type"].split(";")[0] == wanted, url
    assert anonymous.get("/openapi.json").status_code == 200  # what the page reads
    assert anonymous.post("/v1/search", json={"query": "x"}).status_code == 401


@pytest.mark.parametrize("path", PAGES)
def test_the_page_policy_allows_its_own_origin_and_its_nonce_only(live: Live, path: str):
    anonymous = live.http()
    first, second = anonymous.get(path), anonymous.get(path)
    policy = first.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)
    assert nonce is not None
    assert nonce.group(1) not in second.text  # a fresh one for every answer
    for directive in ("default-src 'none'", f"script-src 'self' 'nonce-{nonce.group(1)}'",
                      "connect-src 'self'", "frame-ancestors 'none'"):  # fmt: skip
        assert directive in policy
    assert "unsafe" not in policy and "http" not in policy and "*" not in policy
    mark = f' nonce="{nonce.group(1)}"'
    tags = re.findall(r"<(?:script|style)([^>]*)>", first.text)  # each one: a local file or
    assert mark in tags  # an inline block that carries the nonce
    assert all(t == mark or t.startswith(' src="/docs/static/') for t in tags)
    assert first.headers["x-frame-options"] == "DENY"
    assert first.headers["x-content-type-options"] == "nosniff"


def test_other_answers_keep_their_policies(live: Live):
    anonymous = live.http(follow_redirects=False)
    for path in ("/openapi.json", "/docs/static/swagger-ui.css", "/healthz"):
        assert anonymous.get(path).headers["content-security-policy"] == API_CSP
    assert anonymous.get("/console/login").headers["content-security-policy"] == CONSOLE_CSP


def test_the_spec_lists_every_route(live: Live):
    spec = live.http().get("/openapi.json").json()
    assert spec["info"]["title"] == "memchentic"
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    from memchentic.server import routes_admin, routes_memories, routes_sessions, sse

    routes = {("/healthz", "get")} | {
        (route.path, method.lower())
        for module in (routes_memories, routes_sessions, sse, routes_admin)
        for route in module.router.routes
        if isinstance(route, APIRoute) and route.include_in_schema
        for method in route.methods
    }
    listed = {(path, method) for path, item in spec["paths"].items() for method in item}
    assert routes == listed
    assert ("/v1/search", "post") in listed and not {"/docs", "/redoc"} & set(spec["paths"])


def test_the_pages_in_chromium(live: Live):
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    alice = live.mem.for_identity("alice")
    alice.add("Alice's favourite editor is Helix")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            viewport = {"width": 1280, "height": 900}
            context = browser.new_context(base_url=live.url, viewport=viewport)
            context.set_default_timeout(15_000)
            left: list[str] = []  # requests for anything but this server, refused

            def only_the_server(route: object) -> None:
                url = route.request.url  # type: ignore[attr-defined]
                if url.startswith(live.url + "/") or url.startswith("blob:" + live.url):
                    route.continue_()  # type: ignore[attr-defined]
                else:
                    left.append(url)
                    route.abort()  # type: ignore[attr-defined]

            context.route("**/*", only_the_server)
            refused: dict[str, list[str]] = {path: [] for path in PAGES}

            page = context.new_page()
            page.on("console", lambda m: refused["/docs"].append(m.text)
                    if "Content Security Policy" in m.text else None)  # fmt: skip
            page.goto("/docs")
            search = page.locator(".opblock-post", has=page.locator("[data-path='/v1/search']"))
            search.wait_for()
            assert page.locator(".opblock").count() >= 40  # every operation, by tag
            page.click("button.authorize")  # the key, for the calls "Try it out" makes
            page.fill(".auth-container input", live.keys["alice"])
            page.click(".auth-container button.authorize")
            page.click("button.btn-done")
            search.locator(".opblock-summary").click()
            search.locator("button.try-out__btn").click()
            search.locator("textarea.body-param__text").fill('{"query": "which editor"}')
            search.locator("button.execute").click()
            answer = search.locator(".live-responses-table tr.response .response-col_status").first
            answer.wait_for()
            assert answer.inner_text().strip() == "200"
            body = search.locator(".live-responses-table tr.response .microlight").first
            assert "Helix" in body.inner_text()

            redoc = context.new_page()
            redoc.on("console", lambda m: refused["/redoc"].append(m.text)
                     if "Content Security Policy" in m.text else None)  # fmt: skip
            redoc.goto("/redoc")
            redoc.locator("h1", has_text="memchentic").wait_for()
            redoc.locator("[role=menuitem]", has_text="Search").first.wait_for()
            redoc.fill("input[placeholder='Search...']", "search memories")  # its worker
            redoc.locator("[role=search] li", has_text="Search").first.wait_for()
        finally:
            browser.close()
    assert left == []
    assert refused["/docs"] == []
    # ReDoc injects a scrollbar stylesheet before it is told the nonce (unused: it is
    # set to native scrollbars) and shows a "by Redocly" logo from a CDN: both refused
    assert all("inline style" in m or "cdn.redoc.ly" in m for m in refused["/redoc"])
