"""The ``memchentic`` command line, in the style of sqlite-utils: each command opens
the store, calls one method of :class:`~memchentic.memory.Memory` (or of the store,
for the trusted-only commands), and prints the result as a table (or as plain JSON
with ``--json``).

Exit codes: 0 success, 1 not found (and ``import --strict`` with bad lines),
2 invalid input or an unusable store (``error: <message>`` on stderr).

Imports point one way: this module creates the app and registers every group;
each group module (:mod:`.memories`, :mod:`.directory`, :mod:`.graph`,
:mod:`.context`, :mod:`.server`, :mod:`.migrate`, :mod:`.maint`) imports only
:mod:`.runtime`, :mod:`.output` and :mod:`.options`, never this module or another group.
"""

from __future__ import annotations

from typing import Annotated

import typer

from . import context, directory, graph, maint, memories, migrate, server
from .memories import RRF_SIGNALS
from .runtime import TRUSTED_ONLY, confine

__all__ = ["RRF_SIGNALS", "TRUSTED_ONLY", "app"]

app = typer.Typer(
    name="memchentic",
    help="Long-term memory for AI agents: remember, search, revise and forget memories.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"memchentic {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
    as_identity: Annotated[
        str | None,
        typer.Option(
            "--as", help="Run as this identity (NAME or agent:NAME) under the access rules."
        ),
    ] = None,
) -> None:
    """Long-term memory for AI agents: remember, search, revise and forget memories.

    Example: memchentic add "Sam prefers green tea" --user sam --type preference
    """
    confine(ctx, as_identity)
    _configure_logs()


def _configure_logs() -> None:
    """``LOG_FORMAT=json``: the command's log lines as JSON (docs/observability.md)."""
    import pydantic

    from ..logs import configure
    from ..settings import Settings

    try:
        configure(Settings().log_format)
    except pydantic.ValidationError:  # the command itself says what is wrong
        return


for _group in (memories, directory, graph, context, server, migrate, maint):
    _group.register(app)
