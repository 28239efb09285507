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
#: Words of ASCII text that can begin a cue (every spelling of the one-word cues,
#: and the first word of the others): text holding none of them, and no "n't",
#: has no cue, so the pattern (about 30 us for a 200-character text) need not run.
_CUE_STARTS = frozenset(
    word
    for cue in NEGATION_CUES
    for word in {cue.split()[0].replace("'?", "'"), cue.split()[0].replace("'?", "")}
)
_WORDS = re.compile(r"[\w']+")


def negation_cues(text: str) -> int:
    """How many negation cues ``text`` holds (``\u2019`` read as an apostrophe)."""
    normalised = text.replace("\u2019", "'")
    if normalised.isascii():  # ASCII only: lower() and the pattern's case folding agree
        lowered = normalised.lower()
        if "n't" not in lowered and _CUE_STARTS.isdisjoint(_WORDS.findall(lowered)):
            return 0
    return len(_CUES.findall(normalised))


class PolarityClassifier(Protocol):
    def polarity(self, text: str) -> int: ...


class RulePolarity:
    """-1 when the text holds an odd number of negation cues ("not", "never",
    "no longer", "doesn't", "stopped", "quit", ...), else +1."""

    def polarity(self, text: str) -> int:
        return -1 if negation_cues(text) % 2 else 1
