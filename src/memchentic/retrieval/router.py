"""The optional query router (``MEMORY_SELROUTE_ENABLED``): classify a query as
fact, preference, temporal or narrative, and boost the memory types that answer
that kind of question. Rules only; off by default."""

from __future__ import annotations

import re

ROUTES: dict[str, tuple[re.Pattern[str], frozenset[str]]] = {
    "temporal": (
        re.compile(
            r"\b(when|what time|what date|how long ago|since when|last (week|month|year|time)"
            r"|yesterday|ago|before|after|during|recently)\b",
            re.I,
        ),
        frozenset({"episodic", "summary", "decision"}),
    ),
    "preference": (
        re.compile(
            r"\b(prefer|preference|like|likes|favou?rite|enjoy|love|hate|dislike|want|"
            r"rather)\b",
            re.I,
        ),
        frozenset({"preference", "emotional", "instruction"}),
    ),
    "narrative": (
        re.compile(r"\b(tell me about|story|what happened|how did|describe|explain why)\b", re.I),
        frozenset({"episodic", "summary", "reflective", "insight"}),
    ),
}
FACT_TYPES = frozenset({"fact", "semantic", "entity", "relation", "decision", "resource"})


def route(query: str) -> tuple[str, frozenset[str]]:
    """The query's kind and the memory types it favours (``fact`` when nothing else fits)."""
    for name, (pattern, types) in ROUTES.items():
        if pattern.search(query):
            return name, types
    return "fact", FACT_TYPES
