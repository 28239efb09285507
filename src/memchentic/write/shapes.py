"""Statements of a status and of liking (docs/design.md, section 4).

- A **status** is one value of an attribute of its own: "The claim is under review"
  then "The claim is approved" is an update; the status words
  (:data:`~memchentic.write.relations.STATUS_WORDS`) count as values after a form
  of "be" or "get" ("is approved", "got approved", "'s fixed").
- **Liking** is one attribute with opposite values: "loves sushi" then "hates
  sushi" (or "can't stand sushi") is an update; "can't stand mushrooms" and
  "really doesn't like mushrooms" say the same.

Both compare what else the two statements say: only when it is the same (the same
subject and object) does the status or the feeling decide.
"""

from __future__ import annotations

from collections.abc import Sequence

from .relations import DISLIKING, LIKING, STATUS_WORDS
from .words import Token, stem

__all__ = ["status_or_liking"]



def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_BE_GET = _words("is are was were be been being get gets got 's become became am has have had")
_MODALS = _words("can could will would")
#: Words that may stand between "is" and the status ("is now approved", "is under review").
_BETWEEN = _words("""now under in on being been finally officially all fully still
    currently back not a an just""")
_LIKING = frozenset(stem(w) for w in LIKING)
_DISLIKING = frozenset(stem(w) for w in DISLIKING)
_STAND = "stand"


def _status(toks: Sequence[Token]) -> tuple[frozenset[str], frozenset[str]] | None:
    """(status words, what else it says) when ``toks`` state a status."""
    found: set[int] = set()
    for i, tok in enumerate(toks):
        if tok.text.lower() not in STATUS_WORDS:
            continue
        j = i - 1
        while j >= 0 and toks[j].text.lower() in _BETWEEN:
            j -= 1
        if j >= 0 and toks[j].text.lower() in _BE_GET:
            found.add(i)
    if not found:
        return None
    status = frozenset(toks[i].text.lower() for i in found)
    rest = frozenset(t.key for i, t in enumerate(toks)
                     if i not in found and not t.function and not t.negation)  # fmt: skip
    return status, rest


def _feeling(toks: Sequence[Token], negated: bool) -> tuple[int, frozenset[str]] | None:
    """(+1 likes / -1 dislikes, what else it says) when ``toks`` state a liking."""
    sign = 0
    skip: set[int] = set()
    for i, tok in enumerate(toks):
        if tok.key in _LIKING:
            sign = 1
            skip.add(i)
        elif tok.key in _DISLIKING:
            sign = -1
            skip.add(i)
        elif tok.key == _STAND and i > 0 and toks[i - 1].negation:
            sign = -1  # "can't stand": dislikes
            skip.update((i, i - 1))
            negated = not negated
            if i > 1 and toks[i - 2].text.lower() in _MODALS:
                skip.add(i - 2)
    if not sign:
        return None
    rest = frozenset(t.key for i, t in enumerate(toks)
                     if i not in skip and not t.function and not t.negation)  # fmt: skip
    return (-sign if negated else sign), rest


def status_or_liking(a: Sequence[Token], b: Sequence[Token], negated_a: bool,
                     negated_b: bool) -> tuple[str, str] | None:  # fmt: skip
    """(relation, rule) when both state a status, or both a liking, of one thing; None
    otherwise (the general rules decide)."""
    sa, sb = _status(a), _status(b)
    if sa is not None and sb is not None and _same(sa[1], sb[1]) and negated_a == negated_b:
        if sa[0] == sb[0]:
            return "duplicate", "duplicate:status"
        return "update", "update:status"
    fa, fb = _feeling(a, negated_a), _feeling(b, negated_b)
    if fa is not None and fb is not None and _same(fa[1], fb[1]):
        if fa[0] == fb[0]:
            return None  # the same feeling: the general rules (a paraphrase or the same)
        return "update", "update:antonym"
    return None


def _same(a: frozenset[str], b: frozenset[str]) -> bool:
    """What else two statements say is the same: at most one word apart, most shared
    ("I hate olives, weirdly" / "I love olives")."""
    return len(a ^ b) <= 1 and len(a & b) >= 1
