"""The options and arguments every command group shares: one definition each.

The bottom of :mod:`memchentic.cli`: it imports nothing of the package but the
lists of allowed values (:mod:`memchentic.choices`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..choices import KINDS, spoken

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
IncludeSupersededOpt = Annotated[
    bool,
    typer.Option("--include-superseded", help="Also show memories a newer one replaced."),
]
KindOpt = Annotated[str | None, typer.Option("--kind", help=f"Only this kind: {spoken(KINDS)}.")]
AsOfOpt = Annotated[
    str | None,
    typer.Option("--as-of", metavar="TIME", help="As of this ISO 8601 time: what held then."),
]
FilterOpt = Annotated[
    str | None,
    typer.Option(
        "--filter",
        metavar="JSON",
        help='On metadata, as HTTP\'s filters: \'{"project": "kiln"}\', with operators '
        '\'{"stars": {"gte": 4}}\'.',
    ),
]
