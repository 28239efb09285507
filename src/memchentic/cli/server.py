"""Serving: ``serve`` (HTTP API, MCP over HTTP, web console), ``mcp`` (an MCP server
on stdio) and ``keys create | list | revoke`` (API keys).

``serve`` and ``mcp`` need the ``[server]`` extra; ``keys`` works without it.
"""

from __future__ import annotations

import logging
import os
from typing import Annotated

import typer
from rich.text import Text

from ..errors import MemchenticError
from .options import EmbedderOpt, JsonOpt, StoreOpt
from .output import echo_json, err, fail, new_table, out
from .runtime import memory, opened_store, settings

keys_app = typer.Typer(help="API keys of the HTTP API, MCP and console.", no_args_is_help=True)

#: Default port of ``memchentic serve``.
DEFAULT_PORT = 8077
SERVER_EXTRA = "the server needs its extra: pip install 'memchentic[server]'"


def _need_server() -> None:
    try:
        import fastapi  # noqa: F401
        import mcp  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        fail(SERVER_EXTRA)


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = DEFAULT_PORT,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="Processes sharing the store.")
    ] = 1,
    no_mcp: Annotated[bool, typer.Option("--no-mcp", help="Do not serve MCP at /mcp.")] = False,
    no_console: Annotated[
        bool, typer.Option("--no-console", help="Do not serve the web console.")
    ] = False,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Serve the HTTP API (/v1), MCP (/mcp) and the web console (/console).

    Requests need an API key: create one with `memchentic keys create`. With
    --workers N, N processes share the store (PostgreSQL for real load).

    Example: memchentic serve --port 8077 --workers 4
    """
    _need_server()
    import uvicorn

    from ..logs import json_line, uvicorn_config
    from ..server.app import SERVE_CONSOLE_ENV, SERVE_MCP_ENV
    from ..server.auth import KeyRing
    from ..server.threads import limit_blas_threads

    location = store or settings().default_store
    with memory(ctx, location, embedder) as mem:  # fail early: bad store, wrong embedder
        has_keys = bool(KeyRing(mem.store).list())
        embedder_name = mem.embedder.name
        shown = mem.store.location  # as stores show themselves: no password
    os.environ["MEMCHENTIC_STORE_URL"] = location
    os.environ["MEMCHENTIC_EMBEDDER"] = embedder_name
    if not settings().local_embedder_threads:
        # A server embeds for many requests at once, each on its own thread: one
        # intra-op thread per request keeps them from contending for the cores
        # (docs/server.md, "Embedder threads").
        os.environ["MEMCHENTIC_LOCAL_EMBEDDER_THREADS"] = "1"
    limit_blas_threads()  # and one BLAS thread, for this process and its workers
    os.environ[SERVE_MCP_ENV] = "0" if no_mcp else "1"
    os.environ[SERVE_CONSOLE_ENV] = "0" if no_console else "1"
    console = err()
    url = f"http://{host}:{port}"
    banner = (f"memchentic serving {shown} at {url}  (API {url}/v1, "
              f"console {url}/console, MCP {url}/mcp)")  # fmt: skip
    no_keys = "warning: no API keys yet: memchentic keys create --admin"
    log_config = uvicorn_config(settings().log_format)  # LOG_FORMAT=json: JSON lines
    if log_config is not None:
        typer.echo(json_line("memchentic.serve", banner), err=True)
        if not has_keys:
            typer.echo(json_line("memchentic.serve", no_keys, logging.WARNING), err=True)
    else:
        console.print(banner)
        if not has_keys:
            console.print(Text(no_keys, "yellow"))
    uvicorn.run(
        "memchentic.server.app:app_from_env", factory=True, host=host, port=port,
        workers=workers, log_level=log_level, timeout_graceful_shutdown=5,
        http="memchentic.server.nodelay:NoDelayHTTP",
        log_config=uvicorn.config.LOGGING_CONFIG if log_config is None else log_config,
    )  # fmt: skip


def mcp(
    ctx: typer.Context,
    identity: Annotated[
        str | None,
        typer.Option("--identity", help="Run as this identity (NAME or agent:NAME)."),
    ] = None,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Run an MCP server on stdin/stdout for an agent (Claude, Cursor, ...).

    Tools: remember, search, recall, revise, forget, relate, context, list_recent.
    Without --identity (or --as) it runs as the trusted local user.

    Example: memchentic mcp --identity agent:coder
    """
    if identity is not None and not identity.strip():
        fail("--identity: must name an identity (NAME or agent:NAME), not be empty")
    _need_server()
    from ..server.mcp_server import build_server

    with memory(ctx, store, embedder) as mem:
        try:
            view = mem.as_identity(identity) if identity is not None else mem
        except MemchenticError as exc:
            fail(str(exc))
        build_server(lambda _ctx: view).run("stdio")


# --- keys: the store alone (``--embedder`` is accepted, as by every command, and ignored) ---
@keys_app.command("create")
def keys_create(
    identity: Annotated[
        str | None,
        typer.Option("--identity", help="The key runs as this identity (NAME or agent:NAME)."),
    ] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="An admin key: administration, sees everything.")
    ] = False,
    name: Annotated[str | None, typer.Option("--name", help="A label for listings.")] = None,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API key and print it (only once: store it now). An identity that
    does not exist yet is created.

    Example: memchentic keys create --identity alice --name laptop
    """
    from ..access import TRUSTED, AccessPolicy
    from ..access.directory import Directory
    from ..server.auth import KeyRing

    if admin == (identity is not None):
        fail("give --identity NAME or --admin")
    with opened_store(store, "keys create") as (opened, _):
        if identity is not None:
            kind, _sep, key = identity.partition(":") if ":" in identity else ("user", "", identity)
            if opened.find_identity(key, kind) is None:
                directory = Directory(opened, AccessPolicy(opened), TRUSTED)
                made = directory.create_identity(key, kind)
                err().print(f"created identity {made.kind}:{made.name}")
        secret, record = KeyRing(opened).create(identity=identity, admin=admin, name=name)
    if as_json:
        echo_json({"key": secret, **record.to_dict()})
        return
    typer.echo(secret)
    err().print(f"API key {record.id} for {record.principal}: shown once, store it now")


@keys_app.command("list")
def keys_list(
    store: StoreOpt = None, embedder: EmbedderOpt = None, as_json: JsonOpt = False
) -> None:
    """List API keys (their ids and who they run as; never the keys).

    Example: memchentic keys list
    """
    from ..server.auth import KeyRing

    with opened_store(store, "keys list") as (opened, _):
        found = KeyRing(opened).list()
    if as_json:
        echo_json([k.to_dict() for k in found])
        return
    table = new_table("id", "name", "principal", "created")
    for k in found:
        table.add_row(k.id, k.name, k.principal, k.created_at[:19])
    out().print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (or the key).")],
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Revoke an API key: the next request with it gets a 401.

    Example: memchentic keys revoke 3f9a1c0d2b7e
    """
    from ..server.auth import KeyRing

    with opened_store(store, "keys revoke") as (opened, _):
        done = KeyRing(opened).revoke(key_id)
    if not done:
        fail(f"no API key with id {key_id}", 1)
    out().print(f"revoked {key_id}")


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("mcp")(mcp)
    app.add_typer(keys_app, name="keys")
