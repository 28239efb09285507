"""Integrity and backups: ``check``, ``backup`` and ``restore``.

They work on the store itself, as the trusted local principal (never ``--as``), and
need no embedder: a logical backup or restore uses the one the store recorded.
``--embedder`` (every command takes it) makes ``check`` and ``backup`` also verify
that the store was built with that embedder.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from ..embed import get_embedder
from ..settings import Settings
from ..store import Store
from .options import EmbedderOpt, JsonOpt, StoreOpt
from .output import echo_json, err, fail, out
from .runtime import embedder_mismatch, opened_store, trusted

ForceOpt = Annotated[
    bool, typer.Option("--force", help="Replace a store that already holds memories.")
]


def _embedder_problem(opened: Store, name: str | None, cfg: Settings) -> str | None:
    """Why the store does not match the embedder ``name`` (None: it does, or no name)."""
    found = embedder_mismatch(opened, name, cfg) if name is not None else None
    if found is None:
        return None
    model, dim, wanted = found
    return f"the store was built with {model}:{dim}, not {wanted.identity}"


def _print_check(report: dict[str, Any]) -> None:
    console = out()
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items())
    version = f"schema {report['schema_version']}"
    console.print(f"{report['backend']} store {report['location']} ({version}): {counts}")
    for name, status in report["checks"].items():
        style = {"ok": "green", "failed": "red"}.get(status, "dim")
        console.print(Text(f"  {status:<8}", style=style) + Text(name))
    for problem in report["problems"]:
        console.print(Text(f"problem: {problem}", style="red"))
    console.print("clean" if report["ok"] else f"{len(report['problems'])} problems")


def check(as_json: JsonOpt = False, store: StoreOpt = None, embedder: EmbedderOpt = None) -> None:
    """Verify the store: schema version, rows, vectors, keyword and vector indexes,
    orphan edges, versions and entity links (with --embedder: that the store was
    built with it). Exit code 1 when a check fails.

    Example: memchentic check --json
    """
    with opened_store(store, "check") as (opened, cfg):
        report = opened.check()
        problem = _embedder_problem(opened, embedder, cfg)
    if embedder is not None:
        report["checks"]["embedder"] = "failed" if problem else "ok"
    if problem:
        report["problems"].append(f"embedder: {problem}")
        report["ok"] = False
    if as_json:
        echo_json(report)
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
    from ..backup import backup as run_backup

    with opened_store(store, "backup") as (opened, cfg):
        problem = _embedder_problem(opened, embedder, cfg)
        if problem:
            fail(problem)
        result = run_backup(opened, dest, cfg, logical=logical, verify=verify)
    if as_json:
        echo_json(result.to_dict())
        return
    out().print(
        f"backed up {result.memories} memories to {result.path} "
        f"({result.method}, {result.bytes} bytes)"
    )
    if result.check is not None:
        out().print("verified: clean" if result.check["ok"] else "verified: PROBLEMS")
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
    from ..backup import restore as run_restore

    with trusted(store) as (cfg, location):
        chosen = get_embedder(embedder, cfg) if embedder else None
        result = run_restore(source, location, cfg, force=force, embedder=chosen)
    if as_json:
        echo_json(result.to_dict())
    else:
        replaced = f", replacing {result.replaced}" if result.replaced else ""
        out().print(
            f"restored {result.memories} memories into {result.target} ({result.method}{replaced})"
        )
        if not result.check["ok"]:
            _print_check(result.check)
    if not result.check["ok"]:
        err().print(Text("error: the restored store does not pass check", style="red"))
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("backup")(backup)
    app.command("restore")(restore)
