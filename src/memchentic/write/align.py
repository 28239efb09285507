"""Aligning two statements' words before they are compared (docs/design.md, section 4).

- :func:`orders`: other word orders of one statement that say the same: a leading
  adverbial moved to the end ("On Thursdays the newsletter goes out" -> "the
  newsletter goes out On Thursdays"), the sides of "is" swapped when one side is
  a single value ("Kwame is now the lead for v5" -> "now the lead for v5 is Kwame").
- :func:`pair_words`: the changed content words of one text paired with those of
  the other when they are one word misspelt (one edit apart, "ofice" / "office")
  or near synonyms by word vectors (:mod:`.word_vectors`: "afraid" / "scared").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from . import word_vectors
from .relations import CONTRASTS
from .words import Token

__all__ = ["orders", "pair_words", "typo"]

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_COPULA = _words("is are was were")
#: Words that open a fronted adverbial a statement can also end with.
_FRONTED = _words("on in at every from since by until after before during starting as")


def _renumbered(toks: Sequence[Token]) -> tuple[Token, ...]:
    return tuple(t._replace(position=i) for i, t in enumerate(toks))


@lru_cache(maxsize=2048)
def orders(toks: tuple[Token, ...]) -> tuple[tuple[Token, ...], ...]:
    """Other orders of ``toks`` that say the same (module docstring); none when there
    are none."""
    found: list[tuple[Token, ...]] = []
    n = len(toks)
    if n >= 4 and toks[0].text.lower() in _FRONTED:
        last = max((i for i in range(1, min(5, n - 2)) if toks[i].value), default=0)
        if last:
            found.append(_renumbered((*toks[last + 1 :], *toks[: last + 1])))
    for i, tok in enumerate(toks):
        if tok.text.lower() in _COPULA:
            left, right = toks[:i], toks[i + 1 :]
            content = [t for t in left if not t.function]
            if len(content) == 1 and content[0].value and len(right) >= 2:
                found.append(_renumbered((*right, tok, *left)))
            content = [t for t in right if not t.function]
            if len(content) == 1 and content[0].value and len(left) >= 2 and not found:
                found.append(_renumbered((*right, tok, *left)))
            break
    return tuple(found)


def typo(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one word, one misspelt: at most one edit apart (a
    letter added, dropped, changed, or two swapped), five letters or more, the same
    first letter."""
    if a == b or min(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 1 or a[0] != b[0]:
        return False
    if not (a.isalpha() and b.isalpha()):
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return len(a) >= 5
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] \
            and a[diff[1]] == b[diff[0]]  # fmt: skip
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


#: Most (added, removed) word pairs tried: the write path stays a few lookups long.
_MOST_PAIRS = 16


def pair_words(added: set[str], removed: set[str], surface: Mapping[str, str],
               synonyms: bool = True) -> tuple[set[str], set[str], str | None, dict[str, str]]:  # fmt: skip  # noqa: E501
    """(added, removed, how a pair was made: "typo", "synonym[-tokens]" or None, the
    pairs: added -> removed): each added word paired with a removed one it misspells or
    is a near synonym of (``surface``: a key's word as written, for its vector)."""
    left_added, left_removed = set(added), set(removed)
    how: str | None = None
    pairs: dict[str, str] = {}
    if len(added) * len(removed) > _MOST_PAIRS:  # texts that differ in many words: no
        return left_added, left_removed, how, pairs  # one swapped word makes them one
    for x in sorted(added):
        for y in sorted(left_removed):
            wx, wy = surface.get(x, x).lower(), surface.get(y, y).lower()
            if typo(wx, wy) or typo(x, y):
                left_added.discard(x)
                left_removed.discard(y)
                pairs[x] = y
                how = how or "typo"
                break
    if not synonyms or not left_added or not left_removed:
        return left_added, left_removed, how, pairs
    name = word_vectors.source()
    bar = word_vectors.SYNONYM_BAR.get(name)
    if bar is None:
        return left_added, left_removed, how, pairs
    for x in sorted(left_added):
        best, best_y = bar, None
        for y in sorted(left_removed):
            if _contrast(surface.get(x, x).lower(), surface.get(y, y).lower()):
                continue
            score = word_vectors.similarity(surface.get(x, x), surface.get(y, y))
            if score >= best:
                best, best_y = score, y
        if best_y is not None:
            left_added.discard(x)
            left_removed.discard(best_y)
            pairs[x] = best_y
            how = "synonym"
    return left_added, left_removed, how, pairs


def _contrast(a: str, b: str) -> bool:
    """Two words that contrast though close in vectors: one group of
    :data:`~memchentic.write.relations.CONTRASTS`, two comparatives ("bigger" /
    "smaller"), a word and its negative form ("happy" / "unhappy"), or compounds of one
    head with other first parts ("upstairs" / "downstairs", "inbound" / "outbound")."""
    if any(a in group and b in group for group in CONTRASTS):
        return True
    if a.endswith(("er", "est")) and b.endswith(("er", "est")) and len(a) > 4 and len(b) > 4:
        return True
    for prefix in ("un", "in", "im", "dis", "non", "ir", "il"):
        if a == prefix + b or b == prefix + a:
            return True
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    if n < 3 or a == b or min(len(a), len(b)) - n < 2:
        return False
    return n >= 4 or a[-n:] not in _ENDINGS  # "frontend" / "backend"; not "-ing", "-ion"


#: Endings that many words share without sharing a head.
_ENDINGS = _words("ing ion ers ies ous ent ant ive ful ate ity ism ist ble ess ure ory ery ary")
