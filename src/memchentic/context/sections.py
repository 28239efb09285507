"""Which memories go in which section of a context (docs/design.md, section 7), declared once.

The order of :data:`SECTIONS` is the order of the prompt block: the stable part
(instructions, profile, goals, pinned) first, so prompt caches hit, then the
parts that depend on the query and the session. :data:`KEEP_ORDER` is a
different order: which sections a budget keeps first. docs/context.md explains
both tables.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SectionSpec:
    """One section: its key, its heading, and whether it belongs to the stable part."""

    name: str
    title: str
    stable: bool = False


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec("instructions", "Instructions", stable=True),
    SectionSpec("profile", "Profile", stable=True),
    SectionSpec("goals", "Goals", stable=True),
    SectionSpec("pinned", "Pinned", stable=True),
    SectionSpec("working_memory", "Working memory"),
    SectionSpec("relevant_facts", "Relevant facts"),
    SectionSpec("episodes", "Episodes"),
    SectionSpec("knowledge", "Knowledge"),
    SectionSpec("graph_relations", "Graph relations"),
    SectionSpec("procedures", "Procedures"),
    SectionSpec("skills", "Skills"),
    SectionSpec("lessons", "Lessons"),
    SectionSpec("decisions", "Decisions"),
    SectionSpec("links", "Links"),
    SectionSpec("session_summary", "Session summary"),
    SectionSpec("recent_turns", "Recent turns"),
)
SECTION_NAMES: tuple[str, ...] = tuple(s.name for s in SECTIONS)
STABLE_SECTIONS: tuple[str, ...] = tuple(s.name for s in SECTIONS if s.stable)

#: What a budget keeps first: every item of an earlier section before any item of a
#: later one (within a section, higher scores first). The stable part leads, so
#: what is kept of it never depends on the query.
KEEP_ORDER: tuple[str, ...] = (
    "instructions",
    "profile",
    "goals",
    "pinned",
    "working_memory",
    "relevant_facts",
    "session_summary",
    "recent_turns",
    "lessons",
    "procedures",
    "skills",
    "decisions",
    "episodes",
    "knowledge",
    "graph_relations",
    "links",
)

#: Types listed (not searched) into the stable part, whatever the query.
INSTRUCTION_TYPES: tuple[str, ...] = ("instruction", "charter", "policy")
GOAL_TYPES: tuple[str, ...] = ("goal",)
PREFERENCE_TYPES: tuple[str, ...] = ("preference",)
#: Slot keys under this prefix are the profile, whatever their type.
PROFILE_SLOT_PREFIX = "profile."
WORKING_TYPE = "working"
SUMMARY_TYPE = "summary"

#: Where a search hit goes, by type; any other type goes to :data:`DEFAULT_SECTION`.
TYPE_SECTIONS: dict[str, str] = {
    "fact": "relevant_facts",
    "semantic": "relevant_facts",
    "preference": "relevant_facts",  # only those not already in the profile
    "emotional": "relevant_facts",
    "entity": "relevant_facts",
    "parametric": "relevant_facts",
    "episodic": "episodes",
    "resource": "knowledge",
    "note": "knowledge",
    "strategy": "knowledge",
    "protocol": "knowledge",
    "summary": "knowledge",  # a past session's summary goes to episodes instead
    "relation": "graph_relations",
    "procedure": "procedures",
    "skill": "skills",
    "feedback": "lessons",
    "insight": "lessons",
    "reflective": "lessons",
    "decision": "decisions",
}
DEFAULT_SECTION = "knowledge"
#: Types a search hit never brings in: they have their own (stable or session) sections.
LISTED_TYPES: frozenset[str] = frozenset((*INSTRUCTION_TYPES, *GOAL_TYPES, WORKING_TYPE))


def session_summary_slot(session_id: str) -> str:
    """The slot key of a session's summary: re-summarising replaces it."""
    return f"session:{session_id}:summary"


def is_session_summary(slot_key: str | None) -> bool:
    return (
        slot_key is not None and slot_key.startswith("session:") and slot_key.endswith(":summary")
    )


def section_for_hit(type_: str, slot_key: str | None) -> str:
    """The section of a search hit of this type (and slot key)."""
    if type_ == SUMMARY_TYPE and is_session_summary(slot_key):
        return "episodes"
    return TYPE_SECTIONS.get(type_, DEFAULT_SECTION)
