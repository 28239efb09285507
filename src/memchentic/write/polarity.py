"""Polarity of a statement: +1, or -1 when it is negated. Rules by default; any
object with ``polarity(text) -> int`` (an NLI model, an LLM) can replace them."""

from __future__ import annotations

import re
from typing import Protocol

NEGATION_CUES = (
    r"not", r"never", r"no longer", r"no more", r"don'?t", r"doesn'?t", r"didn'?t",
    r"isn'?t", r"aren'?t", r"wasn'?t", r"weren'?t", r"won'?t", r"wouldn'?t", r"can'?t",
    r"cannot", r"couldn'?t", r"shouldn'?t", r"hasn'?t", r"haven'?t", r"hadn'?t",
    r"stopped", r"quit", r"gave up", r"no", r"none", r"nobody", r"nothing", r"neither",
    r"nor", r"without",
)  # fmt: skip
_CUES = re.compile(r"(?<![\w'])(?:" + "|".join(NEGATION_CUES) + r")(?![\w'])|n't\b", re.IGNORECASE)


class PolarityClassifier(Protocol):
    def polarity(self, text: str) -> int: ...


class RulePolarity:
    """-1 when the text holds an odd number of negation cues ("not", "never",
    "no longer", "doesn't", "stopped", "quit", ...), else +1."""

    def polarity(self, text: str) -> int:
        normalised = text.replace("\u2019", "'")
        count = len(_CUES.findall(normalised))
        return -1 if count % 2 else 1
