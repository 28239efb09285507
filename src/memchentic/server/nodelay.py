"""uvicorn's HTTP protocol with ``TCP_NODELAY`` on every connection.

With ``--workers N`` uvicorn binds the listening socket itself (protocol number
0), and asyncio only disables Nagle's algorithm on sockets whose protocol is
TCP; so each response (headers, then body) waited ~40 ms for the client's
delayed ACK. ``memchentic serve`` passes this class as uvicorn's ``http``.
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import suppress

from uvicorn.protocols.http.auto import AutoHTTPProtocol


class NoDelayHTTP(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """The protocol uvicorn would pick (httptools or h11), without Nagle's delay."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
