"""``docs/cookbook.md`` shows real commands: every ``memchentic ...`` command in its
shell and JSON snippets names an existing command and only that command's
options, and every JSON snippet parses."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import typer.main

from memchentic.cli import app

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cookbook.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def _commands() -> list[list[str]]:
    """Each ``memchentic`` command line of the page, as its arguments."""
    found = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["claude"]:  # claude mcp add NAME -- memchentic ...
                words = words[words.index("--") + 1 :] if "--" in words else []
            if words[:1] == ["memchentic"]:
                found.append(words[1:])
    for block in _blocks("json"):
        for server in json.loads(block)["mcpServers"].values():
            if server.get("command", "").endswith("memchentic"):
                found.append(server["args"])
    return found


def test_every_json_snippet_parses():
    assert len(_blocks("json")) >= 2
    for block in _blocks("json"):
        json.loads(block)


def test_every_command_and_option_exists():
    root = typer.main.get_command(app)
    commands = _commands()
    assert {c[0] for c in commands} >= {"mcp", "serve", "search"}
    for words in commands:
        command: Any = root  # typer's own click: groups have get_command
        rest = list(words)
        while hasattr(command, "get_command") and rest and not rest[0].startswith("-"):
            sub = command.get_command(None, rest.pop(0))
            assert sub is not None, words
            command = sub
        options = {name for param in command.params for name in getattr(param, "opts", [])}
        for word in rest:
            if word.startswith("--"):
                assert word in options, f"{' '.join(words)}: {word} is not an option"
