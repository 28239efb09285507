"""``Client`` and ``AsyncClient``: a served memchentic with the methods of
:class:`~memchentic.Memory`.

    from memchentic import Client, Memory
    mem = Memory()                                             # embedded
    mem = Client("http://127.0.0.1:8077", api_key="mck_...")   # served: same calls

    async with AsyncClient("http://127.0.0.1:8077", api_key="mck_...") as mem:
        hits = await mem.search("where does Dana live")      # the same, awaited

Calls return the library's own types (``WriteResult``, ``MemoryRecord``,
``SearchHit``, ``Edge``, ``Version``, ``Event``, ``Turn``, ``Context``, ``Answer``,
``ConsolidationReport``, ``MaintenanceReport``) and raise its own exceptions,
rebuilt from the JSON ``code`` of an error answer: a memory you may not see raises
``NotFoundError``, bad input ``ValidationError`` (with its ``field``); a refused
key raises ``AuthError``. Options are passed through to the server, which checks
them as the library does.

Layout (after httpx's ``BaseClient``): :mod:`._core` builds every request and
decodes every answer without I/O; :mod:`._sync` and :mod:`._async` only send.
"""

from __future__ import annotations

from ._async import AsyncClient, AsyncRemoteDirectory
from ._core import DEFAULT_TIMEOUT
from ._sync import Client, RemoteDirectory

__all__ = ["DEFAULT_TIMEOUT", "AsyncClient", "AsyncRemoteDirectory", "Client", "RemoteDirectory"]
