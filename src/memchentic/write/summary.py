"""What the write rules read of one statement, worked out once per text
(docs/design.md, section 4)."""

from __future__ import annotations

from dataclasses import dataclass

from .grammar import discourse_core, ended_state, is_english, is_question
from .polarity import negation_cues
from .words import Token, expand_bare, normalise, stem, text_cache, tokens

__all__ = ["EMPHASIS", "Summary", "summary"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _stems(words: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in words)


@dataclass(frozen=True, slots=True)
class Summary:
    """What :func:`judge` reads of one text, worked out once per text."""

    text: str  # normalised, discourse fillers, asides, frames and hedges left out
    filler: bool  # a filler was left out
    tokens: tuple[Token, ...]
    keys: tuple[str, ...]
    values: frozenset[str]  # keys of values, negation aside
    content: frozenset[str]  # keys of the other words, function words aside
    negated: bool
    hedged: bool = False  # "i think", "probably": said with less certainty
    question: bool = False
    english: bool = True


@text_cache(maxsize=4096)
def summary(text: str) -> Summary:
    plain = normalise(text)
    core, hedged = discourse_core(plain)
    filler = core != plain
    core = expand_bare(core)  # "dont", "i'm off": the cues read the long form
    stopped = ended_state(core)
    core = stopped or core
    toks = tokens(core)
    return Summary(
        core,
        filler,
        toks,
        tuple(t.key for t in toks if t.key not in EMPHASIS),
        frozenset(t.key for t in toks if t.value and not t.negation),
        frozenset(t.key for t in toks if not t.value and not t.function) - EMPHASIS,
        (negation_cues(core) + (stopped is not None)) % 2 == 1,
        hedged,
        is_question(plain),
        is_english(plain),
    )


#: Words of emphasis that change no statement ("the API's actually written in Go").
EMPHASIS = _stems(_words("""really actually totally absolutely literally definitely honestly
    truly still mostly usually basically officially finally"""))
