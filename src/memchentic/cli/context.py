"""Context, sessions, learning and upkeep: ``context``, ``pin``, ``unpin``, ``learn``,
``maintain`` and the ``session`` group; each calls one method of
:class:`~memchentic.Memory`."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.text import Text

from ..memory import Memory
from .options import AgentOpt, EmbedderOpt, JsonOpt, NamespaceOpt, StoreOpt, UserOpt
from .output import echo_json, err, gc_line, new_table, out, print_write, write_line
from .runtime import file_errors, memory, opens_memory, stdin_or, write_by_id

session_app = typer.Typer(help="Sessions: turns, history, summaries.", no_args_is_help=True)

SessionOpt = Annotated[
    str | None,
    typer.Option("--session", help="Session id. Default: default:<user>.", show_default=False),
]


@opens_memory
def context(
    mem: Memory,
    query: Annotated[str, typer.Argument(help="What the prompt is about ('' for none).")] = "",
    user: UserOpt = None,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    namespace: NamespaceOpt = None,
    budget: Annotated[
        int | None, typer.Option("--budget", help="Token budget of the block.", min=1)
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Search hits to sort into sections.", min=1)
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the context block for a prompt (stable part first, then what is relevant).

    Example: memchentic context "plan my trip" --user sam --budget 500
    """
    block = mem.context(query or None, user_id=user, agent_id=agent, session_id=session,
                        namespace=namespace, budget_tokens=budget, limit=limit)  # fmt: skip
    if as_json:
        echo_json(block.to_dict())
        return
    typer.echo(str(block))
    note = f"{block.tokens} tokens ({block.tokenizer})"
    if block.dropped:
        note += f", {len(block.dropped)} items dropped to fit {block.budget_tokens}"
    err().print(Text(note, style="dim"))


pin = write_by_id(
    Memory.pin,
    """Pin a memory: it goes in the stable part of every context.

    Example: memchentic pin 01J9Z3V6W7X8Y9Z0A1B2C3D4E5
    """,
)
unpin = write_by_id(
    Memory.unpin,
    """Unpin a memory.

    Example: memchentic unpin 01J9Z3V6W7X8Y9Z0A1B2C3D4E5
    """,
)


def _messages(source: str) -> Any:
    """A JSON list of messages (or strings), else the text as one user message."""
    text = sys.stdin.read() if source == "-" else _read(source)
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return data if isinstance(data, list) else text


def _read(path: str) -> str:
    with file_errors("read", path), open(path, encoding="utf-8") as handle:
        return handle.read()


def learn(
    ctx: typer.Context,
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="A JSON list of {role, content} messages, or plain text; '-' is stdin.",
        ),
    ],
    user: UserOpt = None,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Extract memories from a conversation and remember them.

    Uses a chat model when CHAT_BASE_URL is set, else the rule-based extractor,
    which keeps a message it cannot read (another language, or no statement it
    knows) as written, marked "kept as written".

    Example: echo "I live in Lisbon. Never use emojis." | memchentic learn - --user sam
    """
    messages = _messages(file)  # before the store: a bad file is the error to report
    with memory(ctx, store, embedder) as mem:
        results = mem.learn(messages, user_id=user, agent_id=agent, session_id=session,
                            namespace=namespace)  # fmt: skip
    if as_json:
        echo_json([r.to_dict() | {"content": r.memory.content if r.memory else None}
                   for r in results])  # fmt: skip
        return
    console = out()
    if not results:
        console.print("nothing to learn")
    for result in results:
        line = write_line(result)
        if result.memory is not None:
            line.append(f"  {result.memory.type}: {result.memory.content}", style="dim")
            if result.memory.metadata.get("extraction") == "none":  # learn/rules.py: unread
                line.append(f"  (kept as written: {result.memory.metadata.get('reason')})")
        console.print(line)


@opens_memory
def maintain(
    mem: Memory,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be done.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Upkeep in one call: gc, consolidation, session summaries, old events.

    Example: memchentic maintain --dry-run
    """
    report = mem.maintain(dry_run=dry_run).to_dict()
    if as_json:
        echo_json(report)
        return
    console = out()
    console.print(f"gc: {gc_line(report['gc'], dry_run)}")
    merged = (report["consolidation"] or {}).get("merged")
    console.print(f"consolidation: {'not available' if merged is None else f'{merged} merged'}")
    for entry in report["summaries"]:
        console.print(f"summary {entry['session_id']} ({entry['namespace']}): {entry['status']}")
    pruned = report["events_pruned"]
    console.print(f"events pruned: {'-' if pruned is None else pruned}")


# --- sessions ---------------------------------------------------------------------------------
@session_app.command("turn")
@opens_memory
def session_turn(
    mem: Memory,
    role: Annotated[str, typer.Argument(help="user, assistant, system or tool.")],
    text: Annotated[str, typer.Argument(help="The message ('-' reads stdin).")],
    user: UserOpt = None,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Append a message to a session.

    Example: memchentic session turn user "I moved to Lisbon" --user sam --session trip
    """
    content = stdin_or(text)
    turn = mem.record_turn(role, content, session_id=session, user_id=user,
                           agent_id=agent, namespace=namespace)  # fmt: skip
    if as_json:
        echo_json(turn.to_dict())
    else:
        out().print(f"recorded {turn.id} in {turn.session_id}")


@session_app.command("history")
@opens_memory
def session_history(
    mem: Memory,
    user: UserOpt = None,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    namespace: NamespaceOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Last N turns.", min=1)] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Show the last turns of a session, oldest first.

    Example: memchentic session history --user sam --session trip --limit 20
    """
    turns = mem.get_history(session, limit, user_id=user, agent_id=agent,
                            namespace=namespace)  # fmt: skip
    if as_json:
        echo_json([t.to_dict() for t in turns])
        return
    table = new_table()
    table.add_column("at", no_wrap=True)
    table.add_column("role")
    table.add_column("text", overflow="fold")
    for t in turns:
        table.add_row(t.at.strftime("%Y-%m-%d %H:%M"), t.role, Text(t.content))
    out().print(table)


@session_app.command("list")
@opens_memory
def session_list(
    mem: Memory,
    user: UserOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List sessions with their number of turns, latest first.

    Example: memchentic session list --user sam
    """
    found = mem.list_sessions(user_id=user, namespace=namespace)
    if as_json:
        echo_json([{"session_id": sid, "turns": n} for sid, n in found])
        return
    table = new_table("session", "turns")
    for sid, n in found:
        table.add_row(sid, str(n))
    out().print(table)


@session_app.command("summarize")
@opens_memory
def session_summarize(
    mem: Memory,
    user: UserOpt = None,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    namespace: NamespaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write (or replace) the session's summary memory.

    Example: memchentic session summarize --user sam --session trip
    """
    result = mem.summarize_session(session, user_id=user, agent_id=agent,
                                   namespace=namespace)  # fmt: skip
    print_write(result, as_json)


def register(app: typer.Typer) -> None:
    for name, command in (("context", context), ("pin", pin), ("unpin", unpin),
                          ("learn", learn), ("maintain", maintain)):  # fmt: skip
        app.command(name)(command)
    app.add_typer(session_app, name="session")
