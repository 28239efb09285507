"""What the docs tell a newcomer in the first hour matches the code (issue 45,
item 7): the MCP tools the cookbook lists are the server's, the LangMem snippet
indexes the field LangMem writes, and embedders.md quotes the README's current
figures and does not ask for an API key a local endpoint does without."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
README = DOCS.parent / "README.md"


def test_the_cookbook_lists_every_mcp_tool():
    pytest.importorskip("mcp")
    from memchentic.server.mcp_server import TOOLS

    cookbook = (DOCS / "cookbook.md").read_text(encoding="utf-8")
    listed = re.search(r"Two ways to run the (\w+) MCP tools \(([^)]*)\)", cookbook)
    assert listed is not None, "the cookbook's list of MCP tools"
    assert re.findall(r"`(\w+)`", listed.group(2)) == list(TOOLS)
    assert listed.group(1) == {9: "nine"}.get(len(TOOLS), str(len(TOOLS)))
    server = (DOCS / "server.md").read_text(encoding="utf-8")
    assert all(f"| `{tool}` |" in server for tool in TOOLS)


def test_the_langmem_snippet_indexes_what_langmem_writes():
    page = (DOCS / "integrations.md").read_text(encoding="utf-8")
    langmem = page[page.index("### LangMem") :]
    start = langmem.index("```python")
    snippet = langmem[start : langmem.index("```", start + 3)]
    assert 'index={"fields": ["content"]}' in snippet
    assert '["text"]' not in snippet


def test_embedders_md_quotes_the_readmes_figures_and_no_needless_key():
    page = (DOCS / "embedders.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    locomo = re.search(r"LoCoMo \(997 questions\) \| recall@1 \*\*[\d.]+\*\*, recall@10 "
                       r"\*\*([\d.]+)\*\*, MRR \*\*([\d.]+)\*\*", readme)  # fmt: skip
    lme = re.search(r"turn recall@10 \*\*([\d.]+)\*\*, MRR \*\*([\d.]+)\*\*", readme)
    assert locomo is not None and lme is not None, "the README's benchmark table"
    figures = page[page.index("## Figures") :]
    first = figures[figures.index("| LoCoMo, 997 questions | recall@10 |") :]
    assert first.split("|")[3].strip(" *") == locomo.group(1)
    assert f"**{locomo.group(2)}**" in figures and f"**{lme.group(1)}**" in figures
    assert f"**{lme.group(2)}**" in figures
    openai_row = next(line for line in page.splitlines() if line.startswith("| `openai` |"))
    assert "none for a local server" in openai_row
    assert "No `OPENAI_API_KEY` is needed" in page  # the local guide, which the row agrees with
