"""The TypeScript client (``clients/typescript``, issue 34, item 4) stays true to the
server: its ``src/schema.ts`` is what ``scripts/gen_ts_schema.py`` writes from the
app's OpenAPI document now (regenerated here in memory, like
``docs/api-reference.md``), and it offers every remote operation of the table under
its camelCase name, calling that operation's route."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memchentic.operations import OPERATIONS, REMOTE_ONLY

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "typescript"
CLIENT = PACKAGE / "src" / "client.ts"
SCHEMA = PACKAGE / "src" / "schema.ts"

ROUTE = re.compile(r'"(GET|POST|PATCH|PUT|DELETE)",\s*["`](/v1/[^"`?]*)["`]')
DELEGATE = re.compile(r"this\.(\w+)\(")
PARAM = re.compile(r"\$\{[^}]*\}")


def _generator() -> ModuleType:
    path = ROOT / "scripts" / "gen_ts_schema.py"
    spec = importlib.util.spec_from_file_location("gen_ts_schema", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part.title() for part in rest)


def _methods() -> dict[str, str]:
    """The body of each method of the ``Memchentic`` class, by name."""
    text = CLIENT.read_text(encoding="utf-8")
    start = text.index("export class Memchentic")
    end = text.index("\n}\n", start)
    found: dict[str, str] = {}
    current = None
    for line in text[start:end].splitlines():
        head = re.match(r"  (?:async \*|async |\*)?(\w+)\(", line)
        if head and not line.startswith("   "):
            current = head.group(1)
            found[current] = ""
        if current:
            found[current] += line + "\n"
    return found


def _route(methods: dict[str, str], name: str, seen: tuple[str, ...] = ()) -> str | None:
    """``METHOD /v1/path`` (path parameters as ``{}``) that method ``name`` calls,
    following a delegation (``remember`` -> ``add``)."""
    body = methods.get(name, "")
    found = ROUTE.search(body)
    if found:
        path = PARAM.sub("{}", found.group(2))
        return f"{found.group(1)} {path}"
    for other in DELEGATE.findall(body):
        if other in methods and other not in seen and other != name:
            route = _route(methods, other, (*seen, name))
            if route:
                return route
    return None


def _normal(http: str) -> str:
    method, path = http.split(" ", 1)
    return f"{method} /v1{re.sub(r'{[^}]*}', '{}', path)}"


def test_the_schema_file_is_up_to_date():
    fresh = _generator().render()
    assert SCHEMA.read_text(encoding="utf-8") == fresh, (
        "clients/typescript/src/schema.ts is stale: run python scripts/gen_ts_schema.py"
    )


def test_the_schema_has_every_route_of_the_table():
    schema = SCHEMA.read_text(encoding="utf-8")
    for op in OPERATIONS:
        if op.remote and op.http:
            method, path = op.http.split(" ", 1)
            assert f'"{method} /v1{path}": {{' in schema, op.name


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.remote], ids=lambda op: op.name)
def test_every_remote_operation_is_a_method_calling_its_route(op):
    methods = _methods()
    for name in (op.name, *op.aliases):
        assert camel(name) in methods, f"the TypeScript client lacks {camel(name)} ({name})"
        assert _route(methods, camel(name)) == _normal(op.http), camel(name)


def test_the_remote_only_methods_are_there():
    methods = _methods()
    for name in REMOTE_ONLY:
        assert camel(name) in methods, camel(name)
    assert _route(methods, "streamEvents") == "GET /v1/events"
    assert _route(methods, "me") == "GET /v1/me"


def test_local_only_operations_are_left_out():
    methods = _methods()
    for op in OPERATIONS:
        if not op.remote:
            assert camel(op.name) not in methods, op.name


def test_the_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch):
    generator = _generator()
    stale = tmp_path / "schema.ts"
    stale.write_text("// old\n", encoding="utf-8")
    monkeypatch.setattr(generator, "TARGET", stale)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0
