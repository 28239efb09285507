"""The graph: ``consolidate``, ``neighbors`` and ``ask``; each calls one method of
:class:`~memchentic.Memory`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..memory import Memory
from .options import JsonOpt, MemoryIdArg, NamespaceOpt, UserOpt
from .output import echo_json, new_table, out
from .runtime import opens_memory


@opens_memory(json_last=True)
def consolidate(
    mem: Memory,
    user: UserOpt = None,
    namespace: NamespaceOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report the clusters, change nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fold clusters of near-duplicate entries into their strongest member.

    Example: memchentic consolidate --user alice --dry-run
    """
    report = mem.consolidate(user_id=user, namespace=namespace, dry_run=dry_run)
    if as_json:
        echo_json(report.to_dict())
        return
    for cluster in report.clusters:
        typer.echo(f"{cluster['namespace']}: keep {cluster['kept']}, merge "
                   f"{', '.join(cluster['merged'])}")  # fmt: skip
    verb = "would merge" if dry_run else "merged"
    typer.echo(f"{verb} {report.merged} memories in {len(report.clusters)} clusters")


@opens_memory(json_last=True)
def neighbors(
    mem: Memory,
    memory_id: MemoryIdArg,
    depth: Annotated[int, typer.Option("--depth", help="Hops, 1 to 3.")] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Memories connected to one memory through edges and shared entities.

    Example: memchentic neighbors 01J... --depth 2
    """
    found = mem.neighbors(memory_id, depth)
    if as_json:
        echo_json([n.to_dict() for n in found])
        return
    table = new_table("depth", "via", "id", "text")
    for n in found:
        table.add_row(str(n.depth), n.via, n.memory.id, n.memory.content[:80])
    out().print(table)


@opens_memory(json_last=True)
def ask(
    mem: Memory,
    question: Annotated[str, typer.Argument(help="The question.")],
    user: UserOpt = None,
    namespace: NamespaceOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Passages from search.")] = 10,
    as_json: JsonOpt = False,
) -> None:
    """Answer from memory: cited passages, and an answer when CHAT_BASE_URL is set.

    Example: memchentic ask "Where does Maya live?" --user maya
    """
    result = mem.ask(question, user_id=user, namespace=namespace, limit=limit)
    if as_json:
        echo_json(result.to_dict())
        return
    if result.answer:
        typer.echo(result.answer + "\n")
    for p in result.passages:
        typer.echo(f"[{p.citation}] {p.memory.content}  ({p.via}, {p.score:.2f})")


def register(app: typer.Typer) -> None:
    app.command("consolidate")(consolidate)
    app.command("neighbors")(neighbors)
    app.command("ask")(ask)
