"""The package's layers only point down, and no modules import each other in a loop.

Read from the source (an AST walk: every ``import``, also those inside functions and
under ``TYPE_CHECKING``), nothing is imported. The layers, lowest first:

    base    the record, text, settings, clock, errors, embedders, result types
    store   the backends
    domain  access, retrieval, write, graph, learning, context, events
    engine  the core and its services, Memory, the operation table, store jobs
    faces   AsyncMemory, the HTTP clients, the server, the CLI, the integrations,
            the package itself
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memchentic"

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({
        "choices", "clock", "embed", "errors", "file_lock", "identity", "ids", "lifetime", "llm",
        "metadata_filter",
        "logs", "record", "reports", "settings", "text", "tracing", "validation",
    })),
    ("store", frozenset({"store"})),
    ("domain", frozenset({"access", "context", "events", "graph", "learn", "retrieval", "write"})),
    ("engine", frozenset({"args", "backup", "engine", "memory", "operations", "store_copy"})),
    ("faces", frozenset({"", "aclient", "aio", "cli", "client", "integrations", "mem0", "server",
                         "wire"})),
)  # fmt: skip


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(["memchentic", *parts])] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """The package's modules ``name`` imports, with the line of each import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module
                       for a in node.names]  # fmt: skip
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno


GRAPH = {name: dict(_imports(name, path)) for name, path in MODULES.items()}


def layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for index, (_, members) in enumerate(LAYERS):
        if top in members:
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_import_runs_up_the_layers() -> None:
    upward = [
        f"{MODULES[source].relative_to(PACKAGE.parent)}:{line} ({LAYERS[layer_of(source)][0]}) "
        f"imports {target} ({LAYERS[layer_of(target)][0]})"
        for source, targets in GRAPH.items()
        for target, line in targets.items()
        if layer_of(target) > layer_of(source)
    ]
    assert upward == []


def _circles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    assert _circles() == []


@pytest.mark.parametrize("broken", ["upward", "circle"])
def test_the_checks_see_what_they_forbid(broken: str) -> None:
    """The walk is not blind: an upward import and a loop planted in the graph are found."""
    saved = {k: dict(v) for k, v in GRAPH.items()}
    try:
        if broken == "upward":
            GRAPH["memchentic.record"]["memchentic.memory"] = 1
            with pytest.raises(AssertionError):
                test_no_import_runs_up_the_layers()
        else:
            GRAPH["memchentic.engine.gate"]["memchentic.engine.writes"] = 1
            assert any("memchentic.engine.gate" in group for group in _circles())
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_modules_stay_small() -> None:
    """Every module is under about 600 lines (issue 23: a module a reader can hold)."""
    long = {str(path.relative_to(PACKAGE)): n for path in MODULES.values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 620}  # fmt: skip
    assert long == {}
