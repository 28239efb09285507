"""CLI: ``memchentic migrate --from STORE --to STORE`` (see :mod:`memchentic.migrate`).

Registered on the main app by ``cli.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .cli import JsonOpt, _echo_json, _err, _fail, _out, _settings, _table
from .embed import get_embedder
from .errors import EmbedderMismatchError, MemchenticError
from .migrate import KINDS, MigrationReport, migrate
from .store import open_store
from .store.base import Store

FromOpt = Annotated[
    str,
    typer.Option(
        "--from", metavar="PATH_OR_URL", help="The store to copy: a path, sqlite:///path or "
        "postgresql://... URL.", show_default=False,
    ),
]  # fmt: skip
ToOpt = Annotated[
    str | None,
    typer.Option(
        "--to", "--store", metavar="PATH_OR_URL", help="The store to copy into (created when "
        "missing). Default: $MEMCHENTIC_STORE_URL, else $MEMCHENTIC_HOME/memory.db.",
        show_default=False,
    ),
]  # fmt: skip
EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder", metavar="NAME", help="The embedder the target will be opened with: "
        "refuse the copy when the source's vectors come from another. Default: no check.",
        show_default=False,
    ),
]  # fmt: skip
BatchOpt = Annotated[int, typer.Option("--batch", min=1, help="Items per transaction.")]


def _open_source(location: str) -> Store:
    if "://" not in location or location.startswith("sqlite://"):
        path = Path(location.removeprefix("sqlite://")).expanduser()
        if not path.exists():  # never create an empty source by opening it
            _fail(f"no store at {path}")
    return open_store(location, _settings())


def _show(report: MigrationReport) -> None:
    table = _table()
    for column in ("what", "source", "copied", "already there", "missing"):
        table.add_column(column, justify="left" if column == "what" else "right")
    for kind, row in report.to_dict()["kinds"].items():
        table.add_row(kind, *(str(row[k]) for k in ("source", "copied", "skipped", "missing")))
    _out().print(table)


def _check_embedder(src: Store, name: str) -> None:
    embedder = get_embedder(name, _settings())
    model, dimension = src.get_meta("embedding_model"), src.get_meta("embedding_dimension")
    if model is not None and (model, int(dimension or 0)) != (
        embedder.model,
        embedder.dimension,
    ):
        raise EmbedderMismatchError(
            f"the source {src.location} was built with {model} (dimension {dimension}), "
            f"not {embedder.model} (dimension {embedder.dimension}); migrate, then run "
            f"`memchentic reindex --embedder {name}` on the target"
        )


def migrate_command(
    source: FromOpt,
    target: ToOpt = None,
    batch: BatchOpt = 500,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy every memory (with its vector as stored), edge, version, identity, group,
    org, membership, grant, event and session turn from one store into another,
    with a progress bar; then check that every item arrived. Resumable: run it
    again after an interruption and it copies only what is missing.

    Example: memchentic migrate --from ~/.memchentic/memory.db --to postgresql://db/mem
    """
    try:
        src = _open_source(source)
        try:
            if embedder is not None:
                _check_embedder(src, embedder)
            dst = open_store(target or _settings().default_store, _settings())
        except BaseException:
            src.close()
            raise
        try:
            with Progress(
                TextColumn("{task.description:<12}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=_err(),
                transient=as_json,
            ) as bar:
                tasks = {k: bar.add_task(k, total=None) for k in KINDS if k != "vectors"}

                def advance(kind: str, done: int, total: int) -> None:
                    bar.update(tasks[kind], completed=done, total=total)

                report = migrate(src, dst, batch=batch, progress=advance)
        finally:
            src.close()
            dst.close()
    except MemchenticError as exc:
        _fail(str(exc))
    if as_json:
        _echo_json(report.to_dict())
    else:
        _show(report)
    if not report.ok:
        missing = ", ".join(f"{n} {k}" for k, n in report.missing.items() if n)
        _fail(f"verification failed: the target lacks {missing}", 1)
    if not as_json:
        _out().print(f"verified: every item of {src.location} is in {dst.location}")


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate_command)
