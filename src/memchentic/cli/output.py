"""How the commands print: the consoles, ``error:`` and exit codes, JSON, tables,
write results and progress bars.

Below every command group; it imports nothing of :mod:`memchentic.cli`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..record import WriteResult

TEXT_WIDTH = 80
PIPED_WIDTH = 160


def out() -> Console:
    """stdout; when piped, tables get room (``COLUMNS`` still wins) instead of 80 columns."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPED_WIDTH
    return console


def err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """``error: <message>`` on stderr and exit with ``code`` (2: invalid input or store)."""
    err().print(Text(f"error: {message}", style="red"))
    raise typer.Exit(code)


def warn(message: str) -> None:
    err().print(Text(f"warning: {message}", style="yellow"))


def echo_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))


def clip(text: str, width: int = TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def format_number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.4f}"


def format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def new_table(*columns: str) -> Table:
    """An empty table, with these plain columns when given."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        table.add_column(column)
    return table


def fields_table(data: Mapping[str, Any]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        if value is None or value == [] or value == {}:
            continue
        table.add_row(key, Text(format_value(value)))
    return table


def gc_line(report: Mapping[str, Any], dry_run: bool) -> str:
    """``deleted N memories`` (``would delete ...`` on a dry run): a gc report in short."""
    verb = "would delete" if dry_run else "deleted"
    return f"{verb} {len(report['expired']) + len(report['decayed'])} memories"


def write_line(result: WriteResult) -> Text:
    line = Text(result.status, style="red" if result.status == "refused" else "green")
    if result.id:
        line.append(f" {result.id}")
    details = [d for d in (result.reason,) if d]
    if result.similarity is not None:
        details.append(f"similarity {result.similarity:.4f}")
    others = [i for i in result.ids if i != result.id]
    if others:
        details.append("also " + ", ".join(others))
    if details:
        line.append(f" ({'; '.join(details)})", style="dim")
    return line


def print_write(result: WriteResult, as_json: bool) -> None:
    if as_json:
        echo_json(result.to_dict())
    else:
        out().print(write_line(result))


def progress_bar(label: str, *, transient: bool = False) -> Progress:
    """A progress bar on stderr: label, bar, done/total and the time so far."""
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err(),
        transient=transient,
    )
