"""CLI for integrity and backups: ``check``, ``backup`` and ``restore``.

They work on the store itself, as the trusted local principal (never ``--as``), and
need no embedder: a logical backup or restore uses the one the store recorded.
``--embedder`` (every command takes it) makes ``check`` and ``backup`` also verify
that the store was built with that embedder.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.text import Text

from .cli import (
    EmbedderOpt,
    JsonOpt,
    StoreOpt,
    _echo_json,
    _err,
    _fail,
    _out,
    _settings,
)
from .errors import MemchenticError
from .settings import Settings
from .store import open_store
from .store.base import Store

ForceOpt = Annotated[
    bool, typer.Option("--force", help="Replace a store that already holds memories.")
]


@contextmanager
def _trusted(store: str | None) -> Iterator[tuple[Settings, str]]:
    """Settings and the store location; memchentic errors become ``error: ...``
    (``--as`` is refused before: ``cli.TRUSTED_ONLY``)."""
    settings = _settings()
    try:
        yield settings, store or settings.default_store
    except MemchenticError as exc:
        _fail(str(exc))


@contextmanager
def _opened(settings: Settings, location: str) -> Iterator[Store]:
    opened = open_store(location, settings)
    try:
        yield opened
    finally:
        opened.close()


def _embedder_problem(opened: Store, name: str | None, settings: Settings) -> str | None:
    """Why the store does not match the embedder ``name`` (None: it does, or no name)."""
    if name is None:
        return None
    from .embed import get_embedder

    wanted = get_embedder(name, settings)
    model, dim = opened.get_meta("embedding_model"), opened.get_meta("embedding_dimension")
    if model is None or (model, int(dim or 0)) == (wanted.model, wanted.dimension):
        return None
    return f"the store was built with {model}:{dim}, not {wanted.identity}"


def _print_check(report: dict[str, Any]) -> None:
    out = _out()
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items())
    version = f"schema {report['schema_version']}"
    out.print(f"{report['backend']} store {report['location']} ({version}): {counts}")
    for name, status in report["checks"].items():
        style = {"ok": "green", "failed": "red"}.get(status, "dim")
        out.print(Text(f"  {status:<8}", style=style) + Text(name))
    for problem in report["problems"]:
        out.print(Text(f"problem: {problem}", style="red"))
    out.print("clean" if report["ok"] else f"{len(report['problems'])} problems")


def check(as_json: JsonOpt = False, store: StoreOpt = None, embedder: EmbedderOpt = None) -> None:
    """Verify the store: schema version, rows, vectors, keyword and vector indexes,
    orphan edges, versions and entity links (with --embedder: that the store was
    built with it). Exit code 1 when a check fails.

    Example: memchentic check --json
    """
    with _trusted(store) as (settings, location), _opened(settings, location) as opened:
        report = opened.check()
        problem = _embedder_problem(opened, embedder, settings)
    if embedder is not None:
        report["checks"]["embedder"] = "failed" if problem else "ok"
    if problem:
        report["problems"].append(f"embedder: {problem}")
        report["ok"] = False
    if as_json:
        _echo_json(report)
    else:
        _print_check(report)
    if not report["ok"]:
        raise typer.Exit(1)


def backup(
    dest: Annotated[str, typer.Argument(metavar="DEST", help="The backup file to create.")],
    logical: Annotated[
        bool,
        typer.Option("--logical", help="JSON Lines (any backend) instead of a SQLite copy."),
    ] = False,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Check a SQLite copy when done.")
    ] = True,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Back the store up to a new file while it stays in use (one consistent state).

    SQLite: a copy of the database through SQLite's online backup API (everything);
    --logical (and PostgreSQL): the JSON Lines export of memories, vectors, edges
    and versions.

    Example: memchentic backup ~/backups/memory-2025-06-01.db
    """
    from .backup import backup as run_backup

    with _trusted(store) as (settings, location), _opened(settings, location) as opened:
        problem = _embedder_problem(opened, embedder, settings)
        if problem:
            _fail(problem)
        result = run_backup(opened, dest, settings, logical=logical, verify=verify)
    if as_json:
        _echo_json(result.to_dict())
        return
    _out().print(
        f"backed up {result.memories} memories to {result.path} "
        f"({result.method}, {result.bytes} bytes)"
    )
    if result.check is not None:
        _out().print("verified: clean" if result.check["ok"] else "verified: PROBLEMS")
        if not result.check["ok"]:
            _print_check(result.check)
            raise typer.Exit(1)


def restore(
    source: Annotated[str, typer.Argument(metavar="SRC", help="A file made by backup.")],
    force: ForceOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Restore a backup into the store, then check it. Refuses a store that already
    holds memories unless --force (which replaces them).

    A SQLite backup into a SQLite store is copied whole; a JSON Lines backup (or a
    SQLite one into PostgreSQL) is imported in one transaction: all or nothing.
    --embedder is needed only when the backup has memories without vectors.

    Example: memchentic restore ~/backups/memory-2025-06-01.db --store restored.db
    """
    from .backup import restore as run_restore
    from .embed import get_embedder

    with _trusted(store) as (settings, location):
        chosen = get_embedder(embedder, settings) if embedder else None
        result = run_restore(source, location, settings, force=force, embedder=chosen)
    if as_json:
        _echo_json(result.to_dict())
    else:
        replaced = f", replacing {result.replaced}" if result.replaced else ""
        _out().print(
            f"restored {result.memories} memories into {result.target} ({result.method}{replaced})"
        )
        if not result.check["ok"]:
            _print_check(result.check)
    if not result.check["ok"]:
        _err().print(Text("error: the restored store does not pass check", style="red"))
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("backup")(backup)
    app.command("restore")(restore)
