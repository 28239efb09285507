"""Context for prompts (docs/design.md, section 7): the sections, the model, token counting.

``Memory.context(...)`` (see :mod:`memchentic.engine.context`) returns a
:class:`Context`; :mod:`memchentic.context.sections` declares which memories go in
which section and which sections a budget keeps first; docs/context.md explains it.
"""

from __future__ import annotations

from .model import Context, ContextItem, Section
from .sections import KEEP_ORDER, SECTION_NAMES, SECTIONS, STABLE_SECTIONS, SectionSpec
from .tokens import EstimateCounter, TokenCounter, get_counter

__all__ = [
    "KEEP_ORDER",
    "SECTIONS",
    "SECTION_NAMES",
    "STABLE_SECTIONS",
    "Context",
    "ContextItem",
    "EstimateCounter",
    "Section",
    "SectionSpec",
    "TokenCounter",
    "get_counter",
]
