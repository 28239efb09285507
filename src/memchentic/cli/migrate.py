"""``memchentic migrate --from STORE --to STORE`` (see :mod:`memchentic.store_copy`)."""

from __future__ import annotations

from contextlib import ExitStack, closing
from pathlib import Path
from typing import Annotated

import typer

from ..errors import EmbedderMismatchError
from ..settings import Settings
from ..store import Store, open_store
from ..store_copy import KINDS, MigrationReport, migrate
from .options import JsonOpt
from .output import echo_json, fail, new_table, out, progress_bar
from .runtime import embedder_mismatch, trusted

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


def _open_source(location: str, cfg: Settings) -> Store:
    if "://" not in location or location.startswith("sqlite://"):
        path = Path(location.removeprefix("sqlite://")).expanduser()
        if not path.exists():  # never create an empty source by opening it
            fail(f"no store at {path}")
    return open_store(location, cfg)


def _show(report: MigrationReport) -> None:
    table = new_table()
    for column in ("what", "source", "copied", "already there", "missing"):
        table.add_column(column, justify="left" if column == "what" else "right")
    for kind, row in report.to_dict()["kinds"].items():
        table.add_row(kind, *(str(row[k]) for k in ("source", "copied", "skipped", "missing")))
    out().print(table)


def _check_embedder(src: Store, name: str, cfg: Settings) -> None:
    found = embedder_mismatch(src, name, cfg)
    if found is not None:
        model, dimension, embedder = found
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
    with trusted(target) as (cfg, location), ExitStack() as stores:
        src = stores.enter_context(closing(_open_source(source, cfg)))
        if embedder is not None:
            _check_embedder(src, embedder, cfg)
        dst = stores.enter_context(closing(open_store(location, cfg)))
        with progress_bar("{task.description:<12}", transient=as_json) as bar:
            tasks = {k: bar.add_task(k, total=None) for k in KINDS if k != "vectors"}

            def advance(kind: str, done: int, total: int) -> None:
                bar.update(tasks[kind], completed=done, total=total)

            report = migrate(src, dst, batch=batch, progress=advance)
    if as_json:
        echo_json(report.to_dict())
    else:
        _show(report)
    if not report.ok:
        missing = ", ".join(f"{n} {k}" for k, n in report.missing.items() if n)
        fail(f"verification failed: the target lacks {missing}", 1)
    if not as_json:
        out().print(f"verified: every item of {src.location} is in {dst.location}")


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate_command)
