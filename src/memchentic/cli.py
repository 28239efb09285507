"""The ``memchentic`` command line, in the style of sqlite-utils: each command opens
the store, calls one method of :class:`~memchentic.memory.Memory`, and prints the
result as a table (or as plain JSON with ``--json``).

Exit codes: 0 success, 1 not found (and ``import --strict`` with bad lines),
2 invalid input or an unusable store (``error: <message>`` on stderr).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any, NoReturn

import pydantic
import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .errors import MemchenticError, NotFoundError
from .memory import Memory
from .record import MemoryRecord, SearchHit, WriteResult
from .settings import Settings

app = typer.Typer(
    name="memchentic",
    help="Long-term memory for AI agents: remember, search, revise and forget memories.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

#: The signals of the rrf profile, shown as columns by ``search --trace``.
RRF_SIGNALS: tuple[str, ...] = ("match", "freshness", "path", "confidence", "usage")
#: Extra trace keys worth a column when present (query router, reranker).
EXTRA_SIGNALS: tuple[str, ...] = ("route", "rerank")
TEXT_WIDTH = 80
PIPED_WIDTH = 160

# --- shared options (one definition each, reused by every command) --------------------

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="PATH_OR_URL",
        show_default=False,
        help="Store file, sqlite:///path or postgresql://... URL. Default: "
        "$MEMCHENTIC_STORE_URL, else "
        "$MEMCHENTIC_HOME/memory.db (~/.memchentic/memory.db).",
    ),
]
EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        metavar="NAME",
        show_default=False,
        help="hash, local or openai. Default: $MEMCHENTIC_EMBEDDER, else local when "
        "installed, else hash.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print plain JSON instead of a table.")]
UserOpt = Annotated[str | None, typer.Option("--user", help="User id (scope).")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id (scope).")]
NamespaceOpt = Annotated[
    str | None, typer.Option("--namespace", help="Namespace, e.g. user:sam or org:acme.")
]
TypesOpt = Annotated[
    list[str] | None,
    typer.Option("--type", help="Only memories of this type (repeatable).", show_default=False),
]
TagsOpt = Annotated[
    list[str] | None,
    typer.Option("--tag", help="Only memories carrying this tag (repeatable).", show_default=False),
]
IncludeExpiredOpt = Annotated[
    bool, typer.Option("--include-expired", help="Also show expired memories.")
]
MemoryIdArg = Annotated[str, typer.Argument(metavar="ID", help="The memory id.")]


# --- plumbing -------------------------------------------------------------------------


def _out() -> Console:
    """stdout; when piped, tables get room (``COLUMNS`` still wins) instead of 80 columns."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPED_WIDTH
    return console


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> NoReturn:
    _err().print(Text(f"error: {message}", style="red"))
    raise typer.Exit(code)


def _warn(message: str) -> None:
    _err().print(Text(f"warning: {message}", style="yellow"))


def _settings() -> Settings:
    try:
        return Settings()
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        _fail(f"invalid setting ({problems})")


@contextmanager
def _memory(
    store: str | None, embedder: str | None, *, check_embedder: bool = True
) -> Iterator[Memory]:
    """Open the store and turn memchentic errors into ``error: ...`` and an exit code."""
    settings = _settings()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            mem = Memory(
                store=store or settings.default_store,
                embedder=embedder,
                settings=settings,
                check_embedder=check_embedder,
            )
        for warning in caught:
            _warn(str(warning.message))
        with mem:
            acting = _acting_as()
            yield mem.as_identity(acting) if acting is not None else mem
    except NotFoundError as exc:
        _fail(str(exc), 1)
    except MemchenticError as exc:
        _fail(str(exc))


def _echo_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))


def _clip(text: str, width: int = TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.4f}"


def _value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_value(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _table() -> Table:
    return Table(box=box.SIMPLE_HEAD, pad_edge=False)


def _fields_table(data: Mapping[str, Any]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        if value is None or value == [] or value == {}:
            continue
        table.add_row(key, Text(_value(value)))
    return table


def _trace_columns(hits: Sequence[SearchHit]) -> list[str]:
    keys: list[str] = []
    for hit in hits:
        for key in hit.trace or {}:
            if key not in keys:
                keys.append(key)
    if all(k in keys for k in RRF_SIGNALS):
        return [*RRF_SIGNALS, *(k for k in EXTRA_SIGNALS if k in keys)]
    return [k for k in keys if k != "score"]


def _write_line(result: WriteResult) -> Text:
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


def _print_write(result: WriteResult, as_json: bool) -> None:
    if as_json:
        _echo_json(result.to_dict())
    else:
        _out().print(_write_line(result))


def _change(name: str, pair: Any) -> str:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        return f"{name}: {_clip(_value(pair[0]), 30)} -> {_clip(_value(pair[1]), 30)}"
    return name


def _records_table(records: Sequence[MemoryRecord]) -> Table:
    table = _table()
    table.add_column("id", no_wrap=True)
    table.add_column("type")
    table.add_column("namespace")
    table.add_column("updated", no_wrap=True)
    table.add_column("text", overflow="fold")
    for r in records:
        updated = r.updated_at.strftime("%Y-%m-%d %H:%M") if r.updated_at else ""
        table.add_row(r.id, r.type, r.namespace, updated, Text(_clip(r.text())))
    return table


# --- commands -------------------------------------------------------------------------


def _version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"memchentic {__version__}")
        raise typer.Exit()


#: The ``--as`` identity of the running invocation (None: the trusted local
#: principal); ``main`` sets it before any command runs.
_acting: ContextVar[str | None] = ContextVar("memchentic_cli_as", default=None)
#: Commands that work on the store itself, beyond the rights of any identity: the one
#: place that refuses them under ``--as`` (issue 20, item 6). Every other command runs
#: through the library as that identity, whose rules refuse what it may not do (the
#: directory commands included).
TRUSTED_ONLY: frozenset[str] = frozenset(
    {"keys", "reindex", "migrate", "serve", "check", "backup", "restore"}
)


def _acting_as() -> str | None:
    """The identity of ``--as``; None: the trusted local principal."""
    return _acting.get()


def _confine(ctx: typer.Context, as_identity: str | None) -> None:
    """Refuse an empty ``--as`` and the trusted-only commands under ``--as``."""
    _acting.set(None)
    if as_identity is None:
        return
    if not as_identity.strip():
        _fail("--as: must name an identity (NAME or agent:NAME), not be empty")
    command = ctx.invoked_subcommand
    if command in TRUSTED_ONLY:
        _fail(f"{command} runs as the local owner of the store; it is refused under --as")
    _acting.set(as_identity)


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
    _confine(ctx, as_identity)


@app.command()
def add(
    text: Annotated[str, typer.Argument(help="The memory's content ('-' reads stdin).")],
    type_: Annotated[str | None, typer.Option("--type", help="Type, e.g. preference.")] = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    namespace: NamespaceOpt = None,
    kind: Annotated[str | None, typer.Option("--kind", help="entry (default) or guide.")] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="A tag (repeatable).", show_default=False)
    ] = None,
    slot: Annotated[
        str | None, typer.Option("--slot", help="Slot key: a new value replaces the old.")
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="A short title.")] = None,
    ttl_days: Annotated[
        float | None, typer.Option("--ttl-days", help="Expire after N days.")
    ] = None,
    permanent: Annotated[bool, typer.Option("--permanent", help="Never expire.")] = False,
    confidence: Annotated[
        float | None, typer.Option("--confidence", help="0..1 (default 1).")
    ] = None,
    importance: Annotated[
        float | None, typer.Option("--importance", help="0..1 (default 0.5).")
    ] = None,
    on_duplicate: Annotated[
        str | None,
        typer.Option("--on-duplicate", help="refuse, reinforce or keep (default: settings)."),
    ] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Remember one memory; prints what happened (added, refused, ...) and the id.

    Example: memchentic add "Sam prefers green tea" --user sam --type preference --tag drinks
    """
    content = sys.stdin.read() if text == "-" else text
    given = {
        "type": type_,
        "user_id": user,
        "agent_id": agent,
        "namespace": namespace,
        "kind": kind,
        "tags": tag or None,
        "slot_key": slot,
        "title": title,
        "ttl_days": ttl_days,
        "confidence": confidence,
        "importance": importance,
        "on_duplicate": on_duplicate,
    }
    options: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if permanent:
        options["permanent"] = True
    with _memory(store, embedder) as mem:
        result = mem.add(content, **options)
    _print_write(result, as_json)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: UserOpt = None,
    agent: AgentOpt = None,
    namespace: NamespaceOpt = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="How many hits (default: settings, 20).")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile", help="rrf, conversation, cosine_decay or hybrid (default: settings)."
        ),
    ] = None,
    type_: TypesOpt = None,
    tag: TagsOpt = None,
    path: Annotated[
        str | None, typer.Option("--path", help="Boost memories about this file path.")
    ] = None,
    repo: Annotated[str | None, typer.Option("--repo", help="Only this repo's memories.")] = None,
    include_expired: IncludeExpiredOpt = False,
    trace: Annotated[
        bool, typer.Option("--trace", help="Show the ranking signals of each hit.")
    ] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Search memories, best first: rank, score, id, type and text.

    Example: memchentic search "what does Sam drink" --user sam --limit 5 --trace
    """
    with _memory(store, embedder) as mem:
        hits: Sequence[SearchHit] = mem.search(
            query,
            user_id=user,
            agent_id=agent,
            namespace=namespace,
            limit=limit,
            profile=profile,
            type=type_ or None,
            tags=tag or None,
            path_hint=path,
            repo=repo,
            include_expired=include_expired,
            include_trace=trace,
        )
    if as_json:
        _echo_json([hit.to_dict() for hit in hits])
        return
    if not hits:
        _err().print(Text("no memories found", style="dim"))
        return
    signals = _trace_columns(hits) if trace else []
    table = _table()
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("id", no_wrap=True)
    table.add_column("type")
    for name in signals:
        table.add_column(name, justify="right")
    table.add_column("text", overflow="fold")
    for rank, hit in enumerate(hits, start=1):
        values = [_number((hit.trace or {}).get(name, "")) for name in signals]
        table.add_row(
            str(rank), f"{hit.score:.4f}", hit.id, hit.memory.type, *values, Text(_clip(hit.text))
        )
    _out().print(table)


@app.command()
def get(
    memory_id: MemoryIdArg,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Show one memory with all its fields (counts as a recall).

    Example: memchentic get 01JB7Q3W5V8N2C4D6F8G0H1J2K --json
    """
    with _memory(store, embedder) as mem:
        record = mem.get(memory_id)
    if as_json:
        _echo_json(record.to_dict())
    else:
        _out().print(_fields_table(record.to_dict()))


@app.command("list")
def list_(
    user: UserOpt = None,
    agent: AgentOpt = None,
    namespace: NamespaceOpt = None,
    type_: TypesOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.")] = 100,
    include_expired: IncludeExpiredOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """List memories in scope, newest first.

    Example: memchentic list --user sam --type preference --limit 20
    """
    with _memory(store, embedder) as mem:
        records = mem.list(
            user_id=user,
            agent_id=agent,
            namespace=namespace,
            type=type_ or None,
            limit=limit,
            include_expired=include_expired,
        )
    if as_json:
        _echo_json([r.to_dict() for r in records])
    elif not records:
        _err().print(Text("no memories", style="dim"))
    else:
        _out().print(_records_table(records))


@app.command()
def revise(
    memory_id: MemoryIdArg,
    text: Annotated[str, typer.Argument(help="The new content ('-' reads stdin).")],
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Replace a memory's content (keeps its id; the old text stays in its history).

    Example: memchentic revise 01JB7Q3W5V8N2C4D6F8G0H1J2K "Sam now prefers coffee"
    """
    content = sys.stdin.read() if text == "-" else text
    with _memory(store, embedder) as mem:
        result = mem.revise(memory_id, content)
    _print_write(result, as_json)


@app.command()
def delete(
    memory_id: MemoryIdArg,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Forget a memory completely (its history keeps a tombstone). Alias: forget.

    Example: memchentic delete 01JB7Q3W5V8N2C4D6F8G0H1J2K
    """
    with _memory(store, embedder) as mem:
        result = mem.delete(memory_id)
    _print_write(result, as_json)


app.command(
    "forget",
    help="Alias of delete: forget a memory completely (its history keeps a tombstone).\n\n"
    "Example: memchentic forget 01JB7Q3W5V8N2C4D6F8G0H1J2K",
)(delete)


@app.command()
def history(
    memory_id: MemoryIdArg,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Every version of a memory, oldest first: who changed what, when.

    Example: memchentic history 01JB7Q3W5V8N2C4D6F8G0H1J2K
    """
    with _memory(store, embedder) as mem:
        versions = mem.history(memory_id)
    if as_json:
        _echo_json([v.to_dict() for v in versions])
        return
    table = _table()
    table.add_column("version", justify="right")
    table.add_column("op")
    table.add_column("actor")
    table.add_column("at", no_wrap=True)
    table.add_column("changes", overflow="fold")
    for v in versions:
        changes = "; ".join(_change(name, pair) for name, pair in v.changes.items())
        at = v.at.isoformat(timespec="seconds")
        table.add_row(str(v.version), v.op, v.actor, at, Text(changes))
    _out().print(table)


@app.command()
def gc(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be deleted.")
    ] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Delete memories expired long ago and ones whose confidence decayed away.

    Example: memchentic gc --dry-run
    """
    with _memory(store, embedder) as mem:
        report = mem.gc(dry_run=dry_run)
    if as_json:
        _echo_json(report)
        return
    expired, decayed = report["expired"], report["decayed"]
    verb = "would delete" if dry_run else "deleted"
    count = len(expired) + len(decayed)
    out = _out()
    out.print(f"{verb} {count} memories ({len(expired)} expired, {len(decayed)} decayed)")
    for reason, ids in (("expired", expired), ("decayed", decayed)):
        for memory_id in ids:
            out.print(f"  {reason} {memory_id}")


@app.command()
def export(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Output file; '-' is stdout.")],
    vectors: Annotated[
        bool, typer.Option("--vectors/--no-vectors", help="Include the embedding vectors.")
    ] = True,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Export every memory, edge and version as JSON Lines (lossless).

    Example: memchentic export backup.jsonl --no-vectors
    """
    with _memory(store, embedder) as mem:
        try:
            lines = mem.export(sys.stdout if file == "-" else file, vectors=vectors)
        except OSError as exc:
            _fail(f"cannot write {file}: {exc.strerror or exc}")
    where = "stdout" if file == "-" else file
    console = _err() if file == "-" else _out()
    console.print(Text(f"exported {lines} lines to {where}"))


@app.command("import")
def import_(
    file: Annotated[str, typer.Argument(metavar="FILE", help="An export file; '-' is stdin.")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Any bad line: import nothing, exit 1.")
    ] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Import an export; bad lines are reported with their numbers and skipped.

    Existing ids are skipped. Exit code 1 when --strict and a line is bad.

    Example: memchentic import backup.jsonl --strict
    """
    with _memory(store, embedder) as mem:
        try:
            report = mem.import_(sys.stdin if file == "-" else file, strict=strict)
        except OSError as exc:
            _fail(f"cannot read {file}: {exc.strerror or exc}")
    err = _err()
    for number, message in report.errors:
        err.print(Text(f"line {number}: {message}", style="yellow"))
    refused = strict and bool(report.errors)
    if as_json:
        _echo_json(report.to_dict())
    elif refused:
        pass
    else:
        _out().print(
            f"imported {report.memories} memories, {report.edges} edges, "
            f"{report.versions} versions ({report.skipped} skipped, "
            f"{len(report.errors)} bad lines)"
        )
    if refused:
        err.print(
            Text(f"error: {len(report.errors)} bad lines; nothing imported (--strict)", "red")
        )
        raise typer.Exit(1)


@app.command()
def reindex(
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Re-embed every memory with --embedder and record the new model in the store.

    Needed after changing the embedder or its dimension: the store refuses to open
    with another embedder until it is reindexed.

    Example: memchentic reindex --embedder local
    """
    with _memory(store, embedder, check_embedder=False) as mem:
        with Progress(
            TextColumn("re-embedding"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=_err(),
        ) as progress:
            task = progress.add_task("reindex", total=None)

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            count = mem.reindex(progress=advance)
        identity = mem.embedder.identity
    _out().print(f"reindexed {count} memories with {identity}")


@app.command()
def stats(
    user: UserOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Counts: memories (live, expired, superseded), edges, versions, by type and kind.

    Example: memchentic stats --json
    """
    with _memory(store, embedder) as mem:
        report = mem.stats(user_id=user, namespace=namespace)
    if as_json:
        _echo_json(report)
    else:
        _out().print(_fields_table(report))


def _register_subcommands() -> None:
    from . import cli_context, cli_directory, cli_graph, cli_maint, cli_migrate, cli_server

    cli_directory.register(app)
    cli_graph.register(app)
    cli_context.register(app)
    cli_server.register(app)
    cli_migrate.register(app)
    cli_maint.register(app)


_register_subcommands()
