"""Evidence the write rules weigh beyond one aligned frame (docs/design.md, section 4).

- :func:`marked_update`: a stated change ("now", "these days", "as of ...", a verb
  of change) that keeps most of the stored statement and replaces a part of it;
- :func:`readings`: two dated readings or events, both true;
- :func:`thread`: how sure it is that two distinct statements give one attribute of
  one subject two values (the write keeps a link, the read path resolves it);
- :func:`reordered`: the same statement in another word order.
"""

from __future__ import annotations

from collections.abc import Sequence

from .align import orders
from .grammar import clauses
from .key_value import slug
from .relations import CHANGE_VERBS, SINGLE_VALUED, UPDATE_MARKERS
from .summary import EMPHASIS, Summary
from .words import MONTHS, WEEKDAYS, Token, marker_added, stem, value_kind

__all__ = ["marked_update", "readings", "reordered", "thread"]

_CHANGE_VERBS = frozenset(stem(w) for w in CHANGE_VERBS)
_SINGLE_VALUED = frozenset(stem(w) for w in SINGLE_VALUED)


def marked_update(sa: Summary, sb: Summary) -> str | None:
    """A stated change ("now", "these days", "as of ...", "switched ... to", "instead")
    of the stored statement: most of what it says is kept, one part is replaced."""
    if clauses(sa.text) or sa.negated:  # a message of several clauses: each one decides
        return None
    marker = marker_added(sa.text, sb.text, UPDATE_MARKERS)
    if marker is None:
        verbs = [t for t in sa.tokens if t.key in _CHANGE_VERBS and t.key not in sb.keys]
        marker = verbs[0].text if verbs else None
    if marker is None:
        return None
    said_a = (sa.content | sa.values) - _MARKER_KEYS
    said_b = (sb.content | sb.values) - _MARKER_KEYS
    kept, dropped = said_a & said_b, said_b - said_a
    if not dropped or not kept or not (said_a - said_b) or 2 * len(kept) + 1 < len(said_b):
        return None
    return f"update:{slug(marker)}"


def readings(sa: Summary, sb: Summary) -> bool:
    """Two dated readings or events ("Meter reading on 1 October: 45120." / "... on 1
    November: 45388."): both dated, the date and another value differ, no change named."""
    dates_a, dates_b = _dates(sa.tokens), _dates(sb.tokens)
    if not dates_a or not dates_b or dates_a[0] == dates_b[0]:
        return False
    if any(t.key in _CHANGE_VERBS for t in sa.tokens) or marker_added(
        sa.text, sb.text, UPDATE_MARKERS
    ):
        return False
    others_a = sa.values - {t.key for t in sa.tokens if t.position in dates_a[1]}
    others_b = sb.values - {t.key for t in sb.tokens if t.position in dates_b[1]}
    return others_a != others_b


def _dates(toks: Sequence[Token]) -> tuple[tuple[str, ...], frozenset[int]] | None:
    """(the keys of a statement's calendar dates, their positions): a month or an ISO
    date with the day next to it ("6 September", "March 3rd", "2026-03-02")."""
    keys: list[str] = []
    positions: set[int] = set()
    for i, tok in enumerate(toks):
        if not tok.value or not (tok.text.lower() in MONTHS or "-" in tok.text):
            continue  # value_kind reads many patterns: only months and ISO dates here
        if value_kind([tok]) != "date" or tok.text.lower() in WEEKDAYS:
            continue
        keys.append(tok.key)
        positions.add(tok.position)
        day = [toks[i - 1]] if i and toks[i - 1].text[:1].isdigit() else toks[i + 1 : i + 2]
        for near in day:  # "2 May", else "May 2"
            if near is not None and near.value and any(ch.isdigit() for ch in near.text) \
                    and len(near.text.rstrip("stndrh")) <= 2:  # fmt: skip
                keys.append(near.key)
                positions.add(near.position)
    return (tuple(sorted(keys)), frozenset(positions)) if keys else None


_MARKER_KEYS = frozenset(stem(w) for m in UPDATE_MARKERS for w in m.split()) | _CHANGE_VERBS


def thread(sa: Summary, sb: Summary, rule: str, cosine: float) -> float:
    """How sure it is that two distinct statements give the same attribute of the same
    subject two values (0..1; :attr:`Judgement.thread`): what they share, a stated
    change, a word of one value, the cosine; 0 for another kind of fact."""
    if rule.startswith(_NO_THREAD):
        return 0.0
    said_a, said_b = sa.content | sa.values, sb.content | sb.values
    if not (said_a - said_b) or not (said_b - said_a) or not said_a & said_b:
        return 0.0  # nothing replaced: more detail or another fact
    score = 0.5 * len(said_a & said_b) / len(said_a | said_b)
    if marker_added(sa.text, sb.text, UPDATE_MARKERS) or any(
        t.key in _CHANGE_VERBS for t in sa.tokens
    ):
        score += 0.3
    if (said_a & said_b) & _SINGLE_VALUED:
        score += 0.2
    if cosine >= 0.75:
        score += 0.1
    if rule == "distinct:subject":
        score *= 0.5
    return round(min(score, 0.9), 3)


_NO_THREAD = ("additive:", "event:", "distinct:question", "distinct:language", "distinct:far",
              "distinct:passage", "distinct:attribute")  # fmt: skip


def reordered(sa: Summary, sb: Summary) -> bool:
    """The same words with a clause moved from the front to the back ("On Sundays, Ravi
    cooks." / "Ravi cooks on Sundays."): one key sequence is a rotation of the
    other, and one of the texts marks the fronted clause with a comma; or the sides of
    "is" swapped around a single value ("Carlos is the lead" / "The lead is Carlos")."""
    ka, kb = sa.keys, sb.keys
    if len(ka) == len(kb) and len(ka) >= 3 and ("," in sa.text or "," in sb.text):
        doubled = ka + ka
        if any(doubled[i : i + len(kb)] == kb for i in range(1, len(ka))):
            return True
    said_b = _said(sb.tokens)
    return any(_said(a) == said_b for a in orders(sa.tokens)) or any(
        _said(b) == _said(sa.tokens) for b in orders(sb.tokens))  # fmt: skip


def _said(toks: Sequence[Token]) -> tuple[str, ...]:
    return tuple(t.key for t in toks if not t.function and t.key not in EMPHASIS)


