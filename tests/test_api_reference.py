"""``docs/api-reference.md`` is what ``scripts/gen_api_reference.py`` writes from the
package as it is now: regenerated here in memory, so a change to the API that is
not regenerated fails; and it covers every public method of ``Memory``, every
operation and every exported name."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

import memchentic
from memchentic import Memory
from memchentic.operations import OPERATIONS

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api-reference.md"


def _generator() -> ModuleType:
    path = ROOT / "scripts" / "gen_api_reference.py"
    spec = importlib.util.spec_from_file_location("gen_api_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def _section(page: str, name: str) -> str:
    start = page.index(f"\n## `{name}`\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else len(page)]


def test_the_page_is_up_to_date():
    fresh = _generator().render()
    assert PAGE.read_text(encoding="utf-8") == fresh, (
        "docs/api-reference.md is stale: run python scripts/gen_api_reference.py"
    )


def test_every_public_method_of_memory_is_there():
    memory = _section(PAGE.read_text(encoding="utf-8"), "Memory")
    public = [
        name
        for name, attr in inspect.getmembers(Memory)
        if not name.startswith("_") and (inspect.isfunction(attr) or isinstance(attr, property))
    ]
    assert len(public) > 40
    for name in public:
        assert f"- `{name}(" in memory or f"- property `{name}`" in memory, name
    for op in OPERATIONS:  # and under the service that defines it
        group = memory.index(f"\n### {op.group}\n")
        assert memory.index(f"- `{op.name}(") > group, op.name


def test_every_exported_name_is_there():
    page = PAGE.read_text(encoding="utf-8")
    for name in memchentic.__all__:
        value = getattr(memchentic, name)
        if inspect.isclass(value):
            assert f"\n## `{name}`\n" in page, name
        elif inspect.isfunction(value):
            assert f"\n## `{name}()`\n" in page, name
        else:
            assert f"`{name}` ({type(value).__name__})" in page, name


def test_the_check_mode_reports_a_stale_page(tmp_path: Path, monkeypatch):
    generator = _generator()
    stale = tmp_path / "api-reference.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(generator, "TARGET", stale)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0
