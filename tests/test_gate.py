"""The engine is composed, and its services reach the store only through the gate
(issue 35, item 1).

- No service module of ``memchentic.engine`` names the store: no ``.store``
  attribute, no ``store`` parameter or variable, no ``getattr(x, "store")``; only
  ``gate.py`` (the way to it) and ``parts.py`` (which opens it) do.
- ``Memory`` inherits nothing: its MRO is ``(Memory, object)``.
- A ``MemoryFilter`` cannot mean "every namespace" by omission: ``namespaces`` has
  no default, and ``MemoryFilter.everything()`` says it by name.
- The gate refuses an every-namespace read to anyone but the trusted local principal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import memchentic
from memchentic import Memory, Principal
from memchentic.errors import ForbiddenError
from memchentic.store.base import MemoryFilter

ENGINE = Path(memchentic.__file__).parent / "engine"
#: The modules that may hold the store: the gate (the way to it) and the parts (its owner).
THE_WAY_IN = {"gate.py", "parts.py"}


def store_uses(source: str) -> list[str]:
    """Where ``source`` reaches a store other than through the gate: ``x.store``,
    a ``store`` parameter or name, ``getattr(x, "store")``, an import of ``Store``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr == "store":
            found.append(f"line {line}: .store")
        elif isinstance(node, ast.arg) and node.arg == "store":
            found.append(f"line {line}: parameter store")
        elif isinstance(node, ast.Name) and node.id == "store":
            found.append(f"line {line}: name store")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "store"
        ):
            found.append(f"line {line}: {node.func.id}(..., 'store')")
        elif isinstance(node, ast.ImportFrom) and any(a.name == "Store" for a in node.names):
            found.append(f"line {line}: imports Store")
    return found


def service_modules() -> list[Path]:
    return sorted(p for p in ENGINE.glob("*.py") if p.name not in THE_WAY_IN)


def test_the_engine_has_its_services_and_the_gate() -> None:
    names = {p.name for p in service_modules()}
    assert {"writes.py", "reads.py", "graph.py", "sessions.py", "context.py"} <= names
    assert all((ENGINE / name).exists() for name in THE_WAY_IN)


@pytest.mark.parametrize("path", service_modules(), ids=lambda p: p.name)
def test_no_service_reaches_the_store_but_through_the_gate(path: Path) -> None:
    assert store_uses(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "planted",
    [
        "def f(self):\n    return self.gate.parts.store.get('x')\n",
        "def f(store):\n    return store.get('x')\n",
        "def f(parts):\n    return getattr(parts, 'store').get('x')\n",
        "from ..store.base import MemoryFilter, Store\n",
        "def f(self):\n    store = self.parts\n    return store\n",
    ],
)
def test_the_walk_sees_what_it_forbids(planted: str) -> None:
    """The check is not blind: each way around the gate, planted, is found."""
    assert store_uses(planted) != []
    clean = "def f(self):\n    return self.gate.visible('x')\n"
    assert store_uses(clean) == []


def test_memory_inherits_nothing() -> None:
    assert Memory.__mro__ == (Memory, object)


def test_a_filter_cannot_mean_every_namespace_by_omission() -> None:
    with pytest.raises(TypeError):
        MemoryFilter()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        MemoryFilter(include_expired=True, include_superseded=True)  # type: ignore[call-arg]
    every = MemoryFilter.everything(include_expired=True)
    assert every.namespaces is None and every.include_expired
    assert MemoryFilter(namespaces=["user:ann"]).namespaces == ["user:ann"]


def test_no_module_of_the_package_builds_a_filter_without_naming_its_namespaces() -> None:
    """Belt and braces for the type: every ``MemoryFilter(...)`` in src/ names
    ``namespaces`` (or passes them on with ``**``); the rest say ``everything()``."""
    package = Path(memchentic.__file__).parent
    unnamed = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "MemoryFilter"
                and not node.args
                and not any(k.arg in ("namespaces", None) for k in node.keywords)
            ):
                unnamed.append(f"{path.relative_to(package)}:{node.lineno}")
    assert unnamed == []


def test_the_gate_refuses_an_every_namespace_read_to_an_identity(tmp_path: Path) -> None:
    with Memory(tmp_path / "gate.db", embedder="hash") as mem:
        mem.add("The trusted caller may read every namespace", user_id="ann")
        everything = MemoryFilter.everything(include_expired=True)
        assert len(mem._gate.list_memories(everything, limit=10)) == 1
        bob = mem.as_identity("bob")
        with pytest.raises(ForbiddenError):
            bob._gate.list_memories(everything, limit=10)
        with pytest.raises(ForbiddenError):
            bob._gate.count(everything)
        assert bob.list() == []  # its own reads are scoped by the gate's filter


def test_a_view_shares_the_parts_and_has_its_own_gate(tmp_path: Path) -> None:
    with Memory(tmp_path / "view.db", embedder="hash") as mem:
        view = mem.as_identity("carol")
        assert view.store is mem.store and view.settings is mem.settings
        assert view._gate is not mem._gate
        assert view.principal.name == "carol" and mem.principal.trusted
        view.close()  # the parent closes the parts: the memory still works
        assert mem.add("still open").status == "added"


def test_a_memorys_principal_cannot_be_swapped_behind_the_gates_back(tmp_path: Path) -> None:
    """The gate holds the caller: assigning ``principal`` on a Memory would leave the
    gate acting as before (a view that looks restricted and is not), so it is
    refused; a view of another identity is made with ``for_identity``."""
    with Memory(path=tmp_path / "m.db", embedder="hash") as mem:
        with pytest.raises(AttributeError, match="for_identity"):
            mem.principal = Principal("mallory", trusted=False)  # type: ignore[misc]
        assert mem.principal.trusted
        mem.directory.create_identity("alice")
        assert not mem.for_identity("alice").principal.trusted
