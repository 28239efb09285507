"""memchentic served: the HTTP API, the MCP server and the web console
(``pip install 'memchentic[server]'``; run with ``memchentic serve``).

``create_app`` is imported on first use, so ``memchentic.server.auth`` (API keys,
used by the CLI) works without the server's dependencies installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(name)
