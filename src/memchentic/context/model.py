"""What :meth:`~memchentic.Memory.context` returns: a :class:`Context` of named
:class:`Section` objects holding :class:`ContextItem` objects.

``str(ctx)`` is the prompt block: a markdown heading per non-empty section, one
line per item, sections separated by a blank line, in the order of
:data:`~memchentic.context.sections.SECTIONS`. Scores and ids are never rendered
(but an excerpt names its memory's id, see :class:`ContextItem`). Items of the
dynamic sections are dated: newest first, each run of one date under a
``[2026-03-02]`` line (when it happened, else when it was said or written), and
an earlier statement of a thread says so (``(earlier, until 2026-04-10)``); the
stable part (``ctx.stable_prefix``) carries no dates, so it is byte-identical
between calls while its memories do not change.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces: one item, one line."""
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One line of a context.

    ``source`` is ``memory``, ``turn`` or ``edge``, and ``id`` the id of that
    memory, turn or edge; ``type`` is the memory's type, the turn's role or the
    edge's kind. ``score`` orders items inside their section and decides which
    are dropped first under a budget (it is never rendered). ``excerpt``: the
    text is a passage of the memory, not all of it; the text then says so and
    names the memory (``[excerpt of memory <id>] … passage …``), so the whole
    can be fetched with ``get(id)``.
    """

    id: str
    text: str
    score: float
    section: str
    source: str = "memory"
    type: str | None = None
    excerpt: bool = False
    #: The item's date (``YYYY-MM-DD``), rendered first; None in the stable part.
    when: str | None = None
    #: An earlier statement of a thread: the date of the statement that replaced it
    #: ("" when unknown); None for any other item.
    earlier: str | None = None

    def line(self) -> str:
        """The item's line under its date (:meth:`Section.render` writes the date once
        above a run of items of one date)."""
        head = ""
        if self.earlier is not None:
            head = f"(earlier, until {self.earlier}) " if self.earlier else "(earlier) "
        return f"- {head}{one_line(self.text)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Section:
    """A named section; ``stable`` sections form the cache-friendly prefix."""

    name: str
    title: str
    stable: bool
    items: list[ContextItem] = field(default_factory=list)

    def render(self) -> str:
        """``## Title`` and one line per item, each run of items of one date under a
        ``[date]`` line; the empty string when there are none."""
        if not self.items:
            return ""
        lines, dated = [f"## {self.title}"], None
        for item in self.items:
            if item.when is not None and item.when != dated:
                lines.append(f"[{item.when}]")
            dated = item.when
            lines.append(item.line())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "stable": self.stable,
            "items": [item.to_dict() for item in self.items],
        }

    def __len__(self) -> int:
        return len(self.items)


def render_sections(sections: Iterable[Section]) -> str:
    """The prompt block of these sections: empty ones are left out."""
    return "\n\n".join(text for text in (s.render() for s in sections) if text)


@dataclass(slots=True)
class Context:
    """A block of memory for a prompt, in sections (docs/design.md, section 7).

    ``dropped`` lists the items a budget left out, most important first (each
    names its section). ``tokens`` is the token count of ``str(ctx)`` by the
    counter named in ``tokenizer``; with ``budget_tokens`` it is never above it.
    """

    query: str | None
    session_id: str
    sections: list[Section]
    dropped: list[ContextItem] = field(default_factory=list)
    budget_tokens: int | None = None
    tokenizer: str = "estimate"
    tokens: int = 0

    def __str__(self) -> str:
        return render_sections(self.sections)

    @property
    def text(self) -> str:
        """The prompt block (same as ``str(ctx)``)."""
        return str(self)

    @property
    def stable_prefix(self) -> str:
        """The rendered stable part (instructions, profile, goals, pinned): ``str(ctx)``
        starts with it, and it does not depend on the query, the session or the clock."""
        return render_sections(s for s in self.sections if s.stable)

    def section(self, name: str) -> Section:
        for section in self.sections:
            if section.name == name:
                return section
        raise KeyError(name)

    __getitem__ = section

    def __iter__(self) -> Iterator[Section]:
        """The non-empty sections, in order."""
        return (s for s in self.sections if s.items)

    @property
    def items(self) -> Sequence[ContextItem]:
        return [item for s in self.sections for item in s.items]

    @property
    def memory_ids(self) -> list[str]:
        """Ids of the memories in the context, in rendering order (no duplicates)."""
        seen: dict[str, None] = {}
        for item in self.items:
            if item.source == "memory":
                seen.setdefault(item.id, None)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every section (empty ones too), the drops, the counts, the text."""
        return {
            "query": self.query,
            "session_id": self.session_id,
            "budget_tokens": self.budget_tokens,
            "tokens": self.tokens,
            "tokenizer": self.tokenizer,
            "sections": [s.to_dict() for s in self.sections],
            "dropped": [item.to_dict() for item in self.dropped],
            "text": str(self),
        }
