"""The core memory commands: add, search, get, list, revise, delete (forget),
history, gc, export, import, reindex and stats; each calls one method of
:class:`~memchentic.Memory`."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from .. import metadata_filter
from ..choices import DUPLICATE_POLICIES, KINDS, PROFILES, spoken
from ..errors import ValidationError
from ..memory import Memory
from ..record import MemoryRecord, SearchHit
from .options import (
    AgentOpt,
    AsOfOpt,
    FilterOpt,
    IncludeExpiredOpt,
    IncludeSupersededOpt,
    JsonOpt,
    KindOpt,
    MemoryIdArg,
    NamespaceOpt,
    TagsOpt,
    TypesOpt,
    UserOpt,
)
from .output import (
    clip,
    echo_json,
    err,
    fields_table,
    format_number,
    format_value,
    gc_line,
    new_table,
    out,
    print_write,
    progress_bar,
)
from .runtime import file_errors, opens_memory, stdin_or, write_by_id


def _filters(text: str | None) -> dict[str, Any] | None:
    """``--filter``'s JSON object; text that is not JSON at all is refused as such, with
    the parser's reason and position (the bounds on its size and nesting first)."""
    try:
        return metadata_filter.loads(text, "filter")
    except ValidationError as exc:
        if text is None or exc.rule != "must be a JSON object":
            raise
        try:
            json.loads(text)
        except json.JSONDecodeError as bad:
            raise ValidationError(
                "filter", f"is not valid JSON: {bad.msg} at line {bad.lineno} column "
                f"{bad.colno} (character {bad.pos + 1})",
            ) from None  # fmt: skip
        raise


#: The signals of the rrf profile, shown as columns by ``search --trace``.
RRF_SIGNALS: tuple[str, ...] = ("match", "freshness", "path", "confidence", "usage")
#: Extra trace keys worth a column when present (query router, reranker).
EXTRA_SIGNALS: tuple[str, ...] = ("route", "rerank")
#: Trace keys of the second ranking stage's factors (``retrieval.rerank``).
SECOND_STAGE_PREFIX = "rerank_"


def _trace_columns(hits: Sequence[SearchHit]) -> list[str]:
    keys: list[str] = []
    for hit in hits:
        for key in hit.trace or {}:
            if key not in keys:
                keys.append(key)
    if all(k in keys for k in RRF_SIGNALS):
        # the second stage's factors that moved some hit: without them the score
        # would not be the product of the columns shown
        second = [k for k in keys if k.startswith(SECOND_STAGE_PREFIX)
                  and any((h.trace or {}).get(k, 1.0) != 1.0 for h in hits)]  # fmt: skip
        return [*RRF_SIGNALS, *(k for k in EXTRA_SIGNALS if k in keys), *second]
    return [k for k in keys if k != "score"]


def _change(name: str, pair: Any) -> str:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        return f"{name}: {clip(format_value(pair[0]), 30)} -> {clip(format_value(pair[1]), 30)}"
    return name


def _records_table(records: Sequence[MemoryRecord]) -> Table:
    table = new_table()
    table.add_column("id", no_wrap=True)
    table.add_column("type")
    table.add_column("namespace")
    table.add_column("updated", no_wrap=True)
    table.add_column("text", overflow="fold")
    for r in records:
        updated = r.updated_at.strftime("%Y-%m-%d %H:%M") if r.updated_at else ""
        table.add_row(r.id, r.type, r.namespace, updated, Text(clip(r.text())))
    return table


@opens_memory
def add(
    mem: Memory,
    text: Annotated[str, typer.Argument(help="The memory's content ('-' reads stdin).")],
    type_: Annotated[str | None, typer.Option("--type", help="Type, e.g. preference.")] = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    namespace: NamespaceOpt = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help=f"{spoken(KINDS)} (default: entry).")
    ] = None,
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
        typer.Option("--on-duplicate", help=f"{spoken(DUPLICATE_POLICIES)} (default: settings)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember one memory; prints what happened (added, refused, ...) and the id.

    Example: memchentic add "Sam prefers green tea" --user sam --type preference --tag drinks
    """
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
        "permanent": permanent or None,
    }
    options: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    content = stdin_or(text)
    result = mem.add(content, **options)
    print_write(result, as_json)


@opens_memory
def search(
    mem: Memory,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: UserOpt = None,
    agent: AgentOpt = None,
    namespace: NamespaceOpt = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="How many hits (default: settings, 20).")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option("--profile", help=f"{spoken(PROFILES)} (default: settings)."),
    ] = None,
    type_: TypesOpt = None,
    kind: KindOpt = None,
    tag: TagsOpt = None,
    path: Annotated[
        str | None, typer.Option("--path", help="Boost memories about this file path.")
    ] = None,
    repo: Annotated[str | None, typer.Option("--repo", help="Only this repo's memories.")] = None,
    include_expired: IncludeExpiredOpt = False,
    include_superseded: IncludeSupersededOpt = False,
    as_of: AsOfOpt = None,
    filter_: FilterOpt = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold", help="Only hits at least this close in meaning (cosine, 0..1)."
        ),
    ] = None,
    trace: Annotated[
        bool, typer.Option("--trace", help="Show the ranking signals of each hit.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Search memories, best first: rank, score, id, type and text.

    Example: memchentic search "what does Sam drink" --user sam --limit 5 --trace
    """
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
        kind=kind,
        include_expired=include_expired,
        include_superseded=include_superseded,
        as_of=as_of,
        include_trace=trace,
        filters=_filters(filter_),
        threshold=threshold,
    )
    if as_json:
        echo_json([hit.to_dict() for hit in hits])
        return
    if not hits:
        err().print(Text("no memories found", style="dim"))
        return
    signals = _trace_columns(hits) if trace else []
    table = new_table()
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("id", no_wrap=True)
    table.add_column("type")
    for name in signals:
        table.add_column(name, justify="right")
    table.add_column("text", overflow="fold")
    for rank, hit in enumerate(hits, start=1):
        values = [format_number((hit.trace or {}).get(name, "")) for name in signals]
        table.add_row(
            str(rank), f"{hit.score:.4f}", hit.id, hit.memory.type, *values, Text(clip(hit.text))
        )
    out().print(table)


@opens_memory
def get(
    mem: Memory,
    memory_id: MemoryIdArg,
    as_json: JsonOpt = False,
) -> None:
    """Show one memory with all its fields (counts as a recall).

    Example: memchentic get 01JB7Q3W5V8N2C4D6F8G0H1J2K --json
    """
    record = mem.get(memory_id)
    if as_json:
        echo_json(record.to_dict())
    else:
        out().print(fields_table(record.to_dict()))


@opens_memory
def list_(
    mem: Memory,
    user: UserOpt = None,
    agent: AgentOpt = None,
    namespace: NamespaceOpt = None,
    type_: TypesOpt = None,
    kind: KindOpt = None,
    tag: TagsOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.")] = 100,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many first.")] = 0,
    include_expired: IncludeExpiredOpt = False,
    include_superseded: IncludeSupersededOpt = False,
    as_of: AsOfOpt = None,
    filter_: FilterOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List memories in scope, newest first.

    Example: memchentic list --user sam --type preference --limit 20
    """
    records = mem.list(
        user_id=user,
        agent_id=agent,
        namespace=namespace,
        type=type_ or None,
        kind=kind,
        tags=tag or None,
        limit=limit,
        offset=offset,
        include_expired=include_expired,
        include_superseded=include_superseded,
        as_of=as_of,
        filters=_filters(filter_),
    )
    if as_json:
        echo_json([r.to_dict() for r in records])
    elif not records:
        err().print(Text("no memories", style="dim"))
    else:
        out().print(_records_table(records))


@opens_memory
def revise(
    mem: Memory,
    memory_id: MemoryIdArg,
    text: Annotated[str, typer.Argument(help="The new content ('-' reads stdin).")],
    as_json: JsonOpt = False,
) -> None:
    """Replace a memory's content (keeps its id; the old text stays in its history).

    Example: memchentic revise 01JB7Q3W5V8N2C4D6F8G0H1J2K "Sam now prefers coffee"
    """
    content = stdin_or(text)
    result = mem.revise(memory_id, content)
    print_write(result, as_json)


delete = write_by_id(
    Memory.delete,
    """Forget a memory completely (its history keeps a tombstone). Alias: forget.

    Example: memchentic delete 01JB7Q3W5V8N2C4D6F8G0H1J2K
    """,
)
restore_memory = write_by_id(
    Memory.restore,
    """Bring a superseded (or expired) memory back live; the newer one stays live too.

    Undoes an automatic supersession: list, search and context show the memory
    again, and its history records who restored it. (`memchentic restore` restores
    a backup.)

    Example: memchentic restore-memory 01JB7Q3W5V8N2C4D6F8G0H1J2K
    """,
)


@opens_memory
def history(
    mem: Memory,
    memory_id: MemoryIdArg,
    as_json: JsonOpt = False,
) -> None:
    """Every version of a memory, oldest first: who changed what, when.

    Example: memchentic history 01JB7Q3W5V8N2C4D6F8G0H1J2K
    """
    versions = mem.history(memory_id)
    if as_json:
        echo_json([v.to_dict() for v in versions])
        return
    table = new_table()
    table.add_column("version", justify="right")
    table.add_column("op")
    table.add_column("actor")
    table.add_column("at", no_wrap=True)
    table.add_column("changes", overflow="fold")
    for v in versions:
        changes = "; ".join(_change(name, pair) for name, pair in v.changes.items())
        at = v.at.isoformat(timespec="seconds")
        table.add_row(str(v.version), v.op, v.actor, at, Text(changes))
    out().print(table)


@opens_memory
def gc(
    mem: Memory,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be deleted.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete memories expired long ago and ones whose confidence decayed away.

    Example: memchentic gc --dry-run
    """
    report = mem.gc(dry_run=dry_run)
    if as_json:
        echo_json(report)
        return
    expired, decayed = report["expired"], report["decayed"]
    console = out()
    console.print(f"{gc_line(report, dry_run)} ({len(expired)} expired, {len(decayed)} decayed)")
    for reason, ids in (("expired", expired), ("decayed", decayed)):
        for memory_id in ids:
            console.print(f"  {reason} {memory_id}")


@opens_memory
def export(
    mem: Memory,
    file: Annotated[str, typer.Argument(metavar="FILE", help="Output file; '-' is stdout.")],
    vectors: Annotated[
        bool, typer.Option("--vectors/--no-vectors", help="Include the embedding vectors.")
    ] = True,
) -> None:
    """Export every memory, edge and version as JSON Lines (lossless).

    Example: memchentic export backup.jsonl --no-vectors
    """
    with file_errors("write", file):
        lines = mem.export(sys.stdout if file == "-" else file, vectors=vectors)
    where = "stdout" if file == "-" else file
    console = err() if file == "-" else out()
    console.print(Text(f"exported {lines} lines to {where}"))


@opens_memory
def import_(
    mem: Memory,
    file: Annotated[str, typer.Argument(metavar="FILE", help="An export file; '-' is stdin.")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Any bad line: import nothing, exit 1.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Import an export; bad lines are reported with their numbers and skipped.

    Existing ids are skipped. Exit code 1 when --strict and a line is bad.

    Example: memchentic import backup.jsonl --strict
    """
    with file_errors("read", file):
        report = mem.import_(sys.stdin if file == "-" else file, strict=strict)
    console = err()
    for number, message in report.errors:
        console.print(Text(f"line {number}: {message}", style="yellow"))
    refused = strict and bool(report.errors)
    if as_json:
        echo_json(report.to_dict())
    elif not refused:
        out().print(
            f"imported {report.memories} memories, {report.edges} edges, "
            f"{report.versions} versions ({report.skipped} skipped, "
            f"{len(report.errors)} bad lines)"
        )
    if refused:
        console.print(
            Text(f"error: {len(report.errors)} bad lines; nothing imported (--strict)", "red")
        )
        raise typer.Exit(1)


@opens_memory(check_embedder=False)
def reindex(mem: Memory) -> None:
    """Re-embed every memory with --embedder and record the new model in the store.

    Needed after changing the embedder or its dimension: the store refuses to open
    with another embedder until it is reindexed.

    Example: memchentic reindex --embedder local
    """
    with progress_bar("re-embedding") as progress:
        task = progress.add_task("reindex", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        count = mem.reindex(progress=advance)
    out().print(f"reindexed {count} memories with {mem.embedder.identity}")


@opens_memory
def stats(
    mem: Memory,
    user: UserOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Counts: memories (live, expired, superseded), edges, versions, by type and kind.

    Example: memchentic stats --json
    """
    report = mem.stats(user_id=user, namespace=namespace)
    if as_json:
        echo_json(report)
    else:
        out().print(fields_table(report))


def register(app: typer.Typer) -> None:
    for name, command in (("add", add), ("search", search), ("get", get), ("list", list_),
                          ("revise", revise), ("delete", delete),
                          ("restore-memory", restore_memory)):  # fmt: skip
        app.command(name)(command)
    app.command(
        "forget",
        help="Alias of delete: forget a memory completely (its history keeps a tombstone).\n\n"
        "Example: memchentic forget 01JB7Q3W5V8N2C4D6F8G0H1J2K",
    )(delete)
    for name, command in (("history", history), ("gc", gc), ("export", export),
                          ("import", import_), ("reindex", reindex), ("stats", stats)):  # fmt: skip
        app.command(name)(command)
