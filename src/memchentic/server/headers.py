"""Security headers on every answer of the server (docs/access.md, "The server").

Every response gets ``X-Content-Type-Options: nosniff`` and ``X-Frame-Options:
DENY``. Console pages (``/console``) get a Content-Security-Policy that allows only
the console's own script and stylesheet (no inline script or style, nothing from
another origin, no framing, forms post only to the console) and ``Referrer-Policy:
same-origin``: no referrer leaves the console, while its own form posts keep their
``Origin`` header, which the console's CSRF check reads (under ``no-referrer``
browsers send ``Origin: null``). The API reference pages (``/docs``, ``/redoc``)
set their own policy (``docs_csp``): their own origin only, like the console, plus
the inline blocks that carry the response's nonce and a ``blob:`` worker (ReDoc's
search). Everything else (JSON, SSE, MCP) gets
``default-src 'none'; frame-ancestors 'none'`` and ``Referrer-Policy: no-referrer``,
since it is never meant to render. A header a route set itself is left as it is.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The console's policy: its pages load /console/static/* and talk to their own origin.
CONSOLE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
#: Everything else is data, never a page.
API_CSP = "default-src 'none'; frame-ancestors 'none'"
COMMON = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"}
CONSOLE = {**COMMON, "Content-Security-Policy": CONSOLE_CSP, "Referrer-Policy": "same-origin"}
API = {**COMMON, "Content-Security-Policy": API_CSP, "Referrer-Policy": "no-referrer"}


def docs_csp(nonce: str) -> str:
    """The policy of an API reference page: the console's (scripts, styles, images
    and requests from its own origin only), plus the inline blocks that carry
    ``nonce`` (the page's bootstrap, and the ``<style>`` elements ReDoc's styled
    components inject at run time), plus a worker from a ``blob:`` URL the page's
    own script made (ReDoc's search index)."""
    inline = f"'self' 'nonce-{nonce}'"
    return (
        f"default-src 'none'; script-src {inline}; style-src {inline}; img-src 'self' data:; "
        "connect-src 'self'; worker-src blob:; form-action 'none'; frame-ancestors 'none'; "
        "base-uri 'none'"
    )


class SecurityHeaders:
    """ASGI middleware adding the headers above to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        console = path == "/console" or path.startswith("/console/")
        wanted = CONSOLE if console else API

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in wanted.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
