"""Polarity of a statement: +1, or -1 when it is negated. Rules by default; any
object with ``polarity(text) -> int`` (an NLI model, an LLM) can replace them.

The cues are declared once, in :mod:`memchentic.write.relations`: plain negation
("not", "never", "n't") and the verbs of a stop ("quit", "gave up", "moved away
from", "cancelled", "switched off", "no longer", ...; issue 31, item 4).
"""

from __future__ import annotations

import re
from typing import Protocol

from .relations import NEGATION_CUES, left_is_a_stop
from .words import text_cache

#: The cues as one pattern, any spacing between their words ("left" is read in
#: context: :func:`~memchentic.write.relations.left_is_a_stop`).
#: The alternatives are grouped by their first letter, in their order inside each group
#: ("no longer" before "no"): only one group can match at a place, so the pattern
#: matches what the flat list of alternatives would, in a third of the time.
_PATTERNS: dict[str, list[str]] = {}
for _pattern in (r"\s+".join(map(re.escape, c.split())) for c in NEGATION_CUES if c != "left"):
    _PATTERNS.setdefault(_pattern[0], []).append(_pattern[1:])
_CUES = re.compile(
    r"(?<![\w'])(?:"
    + "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in _PATTERNS.items())
    + r")(?![\w'])|n't\b",
    re.IGNORECASE,
)
#: Words of ASCII text that can begin a cue: text holding none of them, and no "n't",
#: has no cue, so the pattern (about 30 us for a 200-character text) need not run.
_CUE_STARTS = frozenset(cue.split()[0] for cue in NEGATION_CUES)
_WORDS = re.compile(r"[\w']+")


@text_cache(maxsize=4096)  # a write's text is read again by the rules (its normal form)
def negation_cues(text: str) -> int:
    """How many negation cues ``text`` holds (``\u2019`` read as an apostrophe)."""
    normalised = text.replace("\u2019", "'")
    if normalised.isascii():  # ASCII only: lower() and the pattern's case folding agree
        lowered = normalised.lower()
        if "n't" not in lowered and _CUE_STARTS.isdisjoint(_WORDS.findall(lowered)):
            return 0
    found = _CUES.findall(normalised)
    return len(found) + (1 if left_is_a_stop(normalised) is not None else 0)


def cue_spans(text: str) -> list[tuple[int, int, str]]:
    """Where the negation cues of ``text`` are: (start, end, the cue lower-cased and
    single-spaced), in order of position."""
    normalised = text.replace("\u2019", "'")
    found = [(m.start(), m.end(), " ".join(m.group(0).lower().split()))
             for m in _CUES.finditer(normalised)]  # fmt: skip
    left = left_is_a_stop(normalised)
    if left is not None:
        found.append((left.start(), left.start() + 4, "left"))
    return sorted(found)


__all__ = ["NEGATION_CUES", "PolarityClassifier", "RulePolarity", "cue_spans", "negation_cues"]


class PolarityClassifier(Protocol):
    def polarity(self, text: str) -> int: ...


class RulePolarity:
    """-1 when the text holds an odd number of negation cues ("not", "never",
    "no longer", "doesn't", "stopped", "quit", "cancelled", ...), else +1."""

    def polarity(self, text: str) -> int:
        return -1 if negation_cues(text) % 2 else 1
