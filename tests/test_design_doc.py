"""docs/design.md is the design the code cites: every citation in src names a section
(and a step) that the page has, every link of the page leads somewhere, and the
settings table states the defaults the code has.

Citations are read in both spellings while the code moves from one to the other:
"DESIGN section 3" and "docs/design.md, section 3" (also "sections 7 and 8",
"section 4, step 5", "steps 1-3", and a citation broken over two lines).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DESIGN = DOCS / "design.md"
SRC = ROOT / "src" / "memchentic"

#: What each section is about: the numbers are cited from the code, so a section
#: keeps its number.
TOPICS = {
    1: "record", 2: "access", 3: "search", 4: "write", 5: "tiers", 6: "lifetime",
    7: "context", 8: "events", 9: "surfaces", 10: "storage", 11: "settings",
}  # fmt: skip

_NUMBERS = r"\d+(?:\s*(?:,|-|to|and)\s*\d+)*"
#: A citation of the design, in the old spelling or the new one.
CITATION = re.compile(
    r"(?:\bDESIGN\b(?!\.)|docs/design\.md,)\s+(?:sections?\s+)?"
    rf"(?P<sections>{_NUMBERS})"
    rf"(?:,\s+steps?\s+(?P<steps>{_NUMBERS}))?"
)
#: Any mention of the old design file, cited or not.
MENTION = re.compile(r"\bDESIGN\b|docs/design\.md,")


def numbers(text: str) -> list[int]:
    """``"1 and 3"`` -> [1, 3]; ``"1-3"`` -> [1, 2, 3]."""
    out: list[int] = []
    for part in re.split(r"\s*(?:,|and)\s*", text.strip()):
        low, _, high = re.sub(r"\s*to\s*", "-", part).partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def flat(text: str) -> str:
    """Lines joined with one space, comment marks and indentation dropped, so a
    citation broken over two lines of a docstring or a comment reads whole."""
    return re.sub(r"\s*\n\s*(?:#+\s*)?", " ", text)


def citations(text: str) -> list[tuple[list[int], list[int]]]:
    """The (sections, steps) of every citation in ``text``."""
    return [
        (numbers(m["sections"]), numbers(m["steps"]) if m["steps"] else [])
        for m in CITATION.finditer(flat(text))
    ]


def sections(markdown: str) -> dict[int, str]:
    """``## N. Title`` headings: number -> the section's text up to the next ``## ``."""
    out: dict[int, str] = {}
    parts = re.split(r"^## ", markdown, flags=re.M)
    for part in parts[1:]:
        head = re.match(r"(\d+)\. ", part)
        if head:
            out[int(head[1])] = part
    return out


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    body = re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)  # no code blocks
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", body, flags=re.M)}


def src_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.fixture(scope="module")
def design() -> str:
    assert DESIGN.is_file(), "docs/design.md is the design the code cites"
    return DESIGN.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("(DESIGN section 3).", [([3], [])]),
        ("DESIGN sections 1 and 3: reads", [([1, 3], [])]),
        ("(DESIGN sections 7 and 8) ----", [([7, 8], [])]),
        ("(DESIGN section 4, step 3; issue 21)", [([4], [3])]),
        ("(DESIGN section 4, steps 1-3).", [([4], [1, 2, 3])]),
        ("fields, DESIGN 4, step 5: a", [([4], [5])]),
        ("(DESIGN section 4, last paragraphs;", [([4], [])]),
        ('"""Prompt context (DESIGN\n    section 7). Next', [([7], [])]),
        ("profiles (DESIGN section\n# 11). A knob", [([11], [])]),
        ("(docs/design.md, section 6)", [([6], [])]),
        ("(docs/design.md, sections 2 and 9)", [([2, 9], [])]),
        ("(docs/design.md, section 4, step 5)", [([4], [5])]),
        ("see docs/design.md for the rest", []),
    ],
)
def test_citations_are_read_in_both_spellings(text: str, found: list[tuple[list[int], list[int]]]):
    assert citations(text) == found


def test_the_sections_keep_their_numbers(design: str):
    found = sections(design)
    assert sorted(found) == sorted(TOPICS), "sections 1 to 11, each once"
    for number, topic in TOPICS.items():
        title = found[number].splitlines()[0].lower()
        assert topic in title, f"section {number} is about {topic}: {title!r}"


def test_every_citation_in_the_code_names_a_section_the_design_has(design: str):
    have = sections(design)
    cited, wrong, unreadable = 0, [], []
    for path in src_files():
        text = flat(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT)
        readable = {m.start() for m in CITATION.finditer(text)}
        unreadable += [f"{where}: {text[m.start():m.start() + 40]!r}"
                       for m in MENTION.finditer(text) if m.start() not in readable]  # fmt: skip
        for found, steps in citations(text):
            cited += 1
            for number in found:
                if number not in have:
                    wrong.append(f"{where}: section {number}")
                    continue
                listed = {int(n) for n in re.findall(r"^(\d+)\. ", have[number], flags=re.M)}
                wrong += [f"{where}: section {number}, step {s}" for s in steps if s not in listed]
    assert cited > 0, "the code cites the design"
    assert not unreadable, f"mentions of the design that are not a citation: {unreadable}"
    assert not wrong, f"citations of what docs/design.md does not have: {wrong}"


def test_every_link_of_the_design_leads_somewhere(design: str):
    links = re.findall(r"\]\(([^)\s]+)\)", design)
    assert links, "the design links the pages that own each topic"
    broken = []
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue  # http:, https:, mailto:
        target, _, anchor = link.partition("#")
        path = (DOCS / target).resolve() if target else DESIGN
        if not path.exists() or (
            anchor
            and path.suffix == ".md"
            and anchor not in anchors(path.read_text(encoding="utf-8"))
        ):
            broken.append(link)
    assert not broken, f"links of docs/design.md that lead nowhere: {broken}"


def test_each_section_names_the_docs_that_own_its_topic(design: str):
    owners = {
        2: "access.md", 3: "ranking.md", 4: "writes.md", 7: "context.md",
        9: "server.md", 10: "backends.md",
    }  # fmt: skip
    found = sections(design)
    for number, page in owners.items():
        assert f"]({page}" in found[number], f"section {number} links {page}"


def _settings_by_env_name() -> dict[str, object]:
    from memchentic.settings import Settings

    out: dict[str, object] = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names = [c for c in getattr(alias, "choices", []) if isinstance(c, str)]
        for env in names or [name.upper()]:
            out[env] = field.default
    return out


def _value(text: str) -> object:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def test_the_settings_table_states_the_defaults_of_the_code(design: str):
    defaults = _settings_by_env_name()
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| ([^|]+) \|", sections(design)[11], flags=re.M)
    assert len(rows) >= 30
    wrong = []
    for env, stated in rows:
        if env not in defaults:
            wrong.append(f"{env}: no such setting")
            continue
        want, got = _value(stated), defaults[env]
        if isinstance(want, bool | str):
            same = want == got
        else:
            same = isinstance(got, int | float) and float(got) == want
        if not same:
            wrong.append(f"{env}: the page says {stated.strip()}, the code {got!r}")
    assert not wrong, wrong


def test_every_setting_the_design_names_exists(design: str):
    defaults = _settings_by_env_name()
    named = set(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`", design))
    unknown = sorted(n for n in named if n not in defaults)
    assert not unknown, f"docs/design.md names settings the code does not have: {unknown}"


def test_the_design_states_the_design_not_its_history(design: str):
    assert not re.search(r"\bissues? \d+", design, flags=re.I), "history lives in the CHANGELOG"
