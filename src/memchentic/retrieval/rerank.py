"""The second ranking stage (issue 33, item 1): the first ``SEARCH_RERANK_DEPTH``
candidates of the profile's ranking, reordered with evidence a fused ranking of
two candidate lists cannot see (it keeps ranks and drops what the text says).

Each signal is a small pure function of the query's cues (read once per search,
:func:`query_cues`) and one memory's text, in ``[0, 1]``; the stage multiplies
a candidate's first-stage score by ``1 + weight x signal`` for each, so a
signal that does not apply is exactly 1, and each factor is in the hit's trace
under its name (:data:`SIGNALS`):

* ``coverage``: the IDF-weighted share of the query's words the memory holds
  (a fused rank does not say whether the one rare word of the question is there);
* ``proximity``: the IDF-weighted share of the query's words found together in
  one window of ``WINDOW`` words of the memory (an answer states them together);
* ``phrase``: the IDF-weighted share of the query's adjacent word pairs that the
  memory holds as adjacent words too ("support group", "New York");
* ``entities``: the share of what the query names (capitalised words past the
  start of a sentence, numbers), beyond the people who speak in the candidates
  (the speaker cue's part), that the memory names;
* ``answer``: the question's wh-type (who, where, when, how many) against what
  the memory states (a person, a place, a time or date, a number): 1 when it
  states that kind of thing, 0 when it does not or the question has no type.

In a chat between a user and an assistant (memories whose speaker is a chat
role), a query that speaks of one of them ("what did *I* say": the speaker cue)
leaves the word signals of the other role's turns out (``role_gate``, a knob
of the profile): a reply that restates the user's words is not evidence of
what the user said, and a long one holds many of them by chance.

Words are compared after a light suffix folding (:func:`fold`), the same on
both sides; a query word weighs its IDF among the candidates the stage
reorders (:func:`local_idf`): what tells them apart, read from nothing the
caller may not see, and with no read of the store. Nothing here
reads one data set's format: no speaker prefixes, no one date style.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace

from ..text import STOPWORDS, idf
from .cues import MONTHS, ROLE_PERSONS, speaker_of
from .profiles import Candidate

__all__ = [
    "ANSWER_KINDS",
    "DOC_CACHE",
    "SIGNALS",
    "WINDOW",
    "WORD_SIGNALS",
    "DocText",
    "QueryCues",
    "answer",
    "answer_kind",
    "coverage",
    "doc_text",
    "entities",
    "factors",
    "fold",
    "local_idf",
    "phrase",
    "proximity",
    "query_cues",
    "rescore",
    "states",
    "weights_of",
]

#: Words a proximity window spans (content words, stopwords left out).
WINDOW = 8

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
#: A capitalised word (a name, a place, a title).
_CAPITAL = re.compile(r"^[A-Z][\w'-]*$")


#: Longer words are folded afresh each time, not remembered: a query may be one word
#: of 8,000 characters, and 65,536 of them would hold a gigabyte.
MAX_REMEMBERED_WORD = 64


def fold(word: str) -> str:
    """A lower-cased word with its common English inflection folded away
    (``groups`` -> ``group``, ``painted`` -> ``paint``, ``stories`` ->
    ``story``), so a question and a memory that use two forms of a word agree.
    Short words are left as they are. (Remembered, up to :data:`MAX_REMEMBERED_WORD`
    characters: the stage folds every word of its candidates at every search.)"""
    return _fold(word) if len(word) <= MAX_REMEMBERED_WORD else _fold.__wrapped__(word)


@functools.lru_cache(maxsize=1 << 16)
def _fold(word: str) -> str:
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        return w[:-3]
    if len(w) > 4 and w.endswith("ed"):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def _content(tokens: Iterable[str]) -> list[str]:
    """Folded words of ``tokens``, stopwords left out, in order."""
    return [fold(t) for t in tokens if t.lower() not in STOPWORDS]


# --- the query, read once per search -----------------------------------------------------
ANSWER_KINDS = ("person", "place", "time", "number")
#: The wh-phrase of a question -> the kind of thing its answer is. The first one
#: in the question decides ("When did you say how many ..." asks for a time).
_WH = [
    (r"who|whom|whose", "person"),
    (r"where", "place"),
    (r"when|what\s+(?:time|date|day|year|month)|which\s+(?:day|date|year|month)"
     r"|how\s+long\s+ago|since\s+when", "time"),
    (r"how\s+(?:many|much|often|long|old|far)|what\s+(?:number|percentage|amount)", "number"),
]  # fmt: skip
_WH_RE = re.compile(r"\b(?:" + "|".join(f"(?P<k{i}>{p})" for i, (p, _) in enumerate(_WH)) + r")\b",
                    re.I)  # fmt: skip


def answer_kind(question: str) -> str | None:
    """The kind of thing a question asks for (one of :data:`ANSWER_KINDS`), from
    its first wh-phrase; None for other questions (what, why, how, statements)."""
    m = _WH_RE.search(question)
    if m is None:
        return None
    for i, (_, kind) in enumerate(_WH):
        if m.group(f"k{i}"):
            return kind
    return None  # pragma: no cover - one group always matched


def _entities(text: str) -> frozenset[str]:
    """What ``text`` names: capitalised words that do not start a sentence (or
    clause), and numbers; folded, stopwords and "I" left out."""
    out: set[str] = set()
    starts = True
    for m in re.finditer(r"[^\W_]+|[.!?:;\"]", text):
        tok = m.group(0)
        if tok in '.!?:;"':
            starts = True
            continue
        low = tok.lower()
        if any(ch.isdigit() for ch in tok) or (
            not starts and _CAPITAL.match(tok) and low not in STOPWORDS and low != "i"
        ):
            out.add(fold(tok))
        starts = False
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class QueryCues:
    """What the second stage reads of a query."""

    #: Folded content words of the query, in order, with repeats.
    terms: tuple[str, ...] = ()
    #: Folded word -> its weight (IDF); empty: weighed among the candidates.
    weights: Mapping[str, float] = field(default_factory=dict)
    #: What the query names (see :func:`_entities`), folded.
    entities: frozenset[str] = frozenset()
    #: The kind of thing the question asks for (:func:`answer_kind`).
    answer: str | None = None


def query_cues(query: str, idf: Mapping[str, float] | None = None) -> QueryCues:
    """The query's cues; ``idf``: each query word (lower-cased) -> its weight,
    else none (:func:`rescore` weighs them among the candidates). A folded word
    takes the largest weight of its forms; a word absent from ``idf`` takes the
    largest given (it is at least as rare as any), or 1 when none is."""
    terms = tuple(_content(_TOKEN.findall(query)))
    if idf is None:
        return QueryCues(terms, {}, _entities(query), answer_kind(query))
    top = max(idf.values(), default=1.0)
    weights: dict[str, float] = {}
    for word, value in idf.items():
        key = fold(word)
        weights[key] = max(weights.get(key, 0.0), value)
    weights = {t: weights.get(t, top) for t in terms}
    return QueryCues(terms, weights, _entities(query), answer_kind(query))


# --- a memory's text ----------------------------------------------------------------------
@dataclass(frozen=True)
class DocText:
    """A memory's text as the signals read it. (No slots: :attr:`pairs` is
    computed once, when the phrase signal first asks, and kept with it.)"""

    raw: str
    #: Folded content words, in order.
    terms: tuple[str, ...]
    #: Folded words of the text (any case, stopwords kept).
    words: frozenset[str]
    #: Folded words of the name of who said it (``metadata["speaker"]`` or ``role``).
    speaker: frozenset[str] = frozenset()

    @functools.cached_property
    def pairs(self) -> frozenset[tuple[str, str]]:
        """Adjacent pairs of :attr:`terms`, in order."""
        return frozenset(zip(self.terms, self.terms[1:], strict=False))


def _folded(word: str) -> tuple[str, bool]:
    """A lower-cased word's fold, and whether it is a content word (no stopword)."""
    if len(word) > MAX_REMEMBERED_WORD:
        return fold(word), True
    return _folded_short(word)


@functools.lru_cache(maxsize=1 << 16)
def _folded_short(word: str) -> tuple[str, bool]:
    return fold(word), word not in STOPWORDS


#: Texts whose :class:`DocText` is remembered: the stage reads its head hits' texts
#: at every search, and the same memories come back search after search. (A
#: DocText is a pure function of the text and speaker, so nothing goes stale.)
DOC_CACHE = 2048


def doc_text(text: str, speaker: str | None = None) -> DocText:
    """``text`` (said by ``speaker``) as the signals read it; remembered for the
    last :data:`DOC_CACHE` texts."""
    return _doc_text(text, speaker)


@functools.lru_cache(maxsize=DOC_CACHE)
def _doc_text(text: str, speaker: str | None) -> DocText:
    pairs = [_folded(t) for t in _TOKEN.findall(text.lower())]
    terms = tuple(f for f, content in pairs if content)
    named = frozenset(fold(t) for t in _TOKEN.findall(speaker or ""))
    return DocText(text, terms, frozenset(f for f, _ in pairs), named)


# --- signals ----------------------------------------------------------------------------
def _total(weights: Mapping[str, float], terms: Iterable[str]) -> float:
    return sum(weights.get(t, 0.0) for t in set(terms))


def coverage(doc: DocText, q: QueryCues) -> float:
    """IDF-weighted share of the query's distinct content words in the memory."""
    total = _total(q.weights, q.terms)
    if total <= 0:
        return 0.0
    have = set(doc.terms)
    return sum(q.weights[t] for t in set(q.terms) if t in have) / total


def proximity(doc: DocText, q: QueryCues, window: int = WINDOW) -> float:
    """IDF-weighted share of the query's distinct content words found together
    in the best window of ``window`` consecutive content words of the memory.
    0 for a query of fewer than two words (nothing to be near)."""
    wanted = set(q.terms)
    total = _total(q.weights, wanted)
    if len(wanted) < 2 or total <= 0:
        return 0.0
    hits = [(i, t) for i, t in enumerate(doc.terms) if t in wanted]
    best, left = 0.0, 0
    inside: dict[str, int] = {}
    for pos, term in hits:
        inside[term] = inside.get(term, 0) + 1
        while pos - hits[left][0] >= window:
            gone = hits[left][1]
            inside[gone] -= 1
            if not inside[gone]:
                del inside[gone]
            left += 1
        if len(inside) >= 2:
            best = max(best, sum(q.weights[t] for t in inside))
    return best / total


def phrase(doc: DocText, q: QueryCues) -> float:
    """IDF-weighted share of the query's adjacent content-word pairs (a pair
    weighs its two words' IDF) that are adjacent in the memory too, in order.
    0 for a query of fewer than two words."""
    pairs = {(a, b) for a, b in zip(q.terms, q.terms[1:], strict=False) if a != b}
    if not pairs:
        return 0.0
    total = sum(q.weights[a] + q.weights[b] for a, b in pairs)
    if total <= 0:
        return 0.0
    have = doc.pairs
    return sum(q.weights[a] + q.weights[b] for a, b in pairs if (a, b) in have) / total


def entities(doc: DocText, q: QueryCues) -> float:
    """The share of what the query names, beyond who said the memory (the
    speaker cue's part: "what did Caroline say about Paris" asks Caroline's
    memories about Paris), that the memory's text names too; 0 when the query
    names nothing else."""
    names = q.entities - doc.speaker
    if not names:
        return 0.0
    return len(names & doc.words) / len(names)


_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen"
    "|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy"
    "|eighty|ninety|hundred|thousand|million|billion|dozens?|couple|twice|half"
)
#: Month names, "may" only before a day's number (it is also a verb).
_MONTH_NAMES = "|".join(sorted((m for m in MONTHS if len(m) > 3), key=len, reverse=True))
_MONTH_NAMES = _MONTH_NAMES.replace("|may", "") + r"|may(?=\s+\d)"
_STATES: dict[str, re.Pattern[str]] = {
    "number": re.compile(r"\d|\b(?:" + _NUMBER_WORDS + r")\b", re.I),
    "time": re.compile(
        r"\b(?:(?:19|20)\d\d|\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?|\d{1,2}(?::\d\d)?\s*(?:am|pm)"
        r"|(?:" + _MONTH_NAMES + r")|(?:mon|tues|wednes|thurs|fri|satur|sun)day"
        r"|yesterday|today|tonight|tomorrow|ago|weekend|morning|afternoon|evening|noon"
        r"|(?:last|next|this|that|every)\s+(?:week|month|year|night|summer|winter|spring|fall"
        r"|autumn|time)|(?:week|month|year|day)s?\s+(?:ago|later|before|after)|since|until)\b",
        re.I,
    ),
    "place": re.compile(
        r"\b(?:in|at|to|from|near|visit(?:ed|ing)?|around|across)\s+(?:the\s+)?[A-Z][\w'-]+"
        r"|\b(?:home|house|park|beach|city|town|country|museum|school|restaurant|cafe|office"
        r"|church|store|shop|library|hospital|lake|mountains?|island|village|street|studio"
        r"|gym|hotel|airport|station|center|centre|camp|abroad|downtown)\b",
    ),
    "person": re.compile(
        r"(?<![.!?:]\s)(?<!^)\b[A-Z][a-z][\w'-]*"
        r"|\b(?:mom|mum|dad|mother|father|parents?|sister|brother|sibling|wife|husband|partner"
        r"|son|daughter|kids?|children|friends?|boss|colleague|coworker|neighbou?r|grandma"
        r"|grandpa|grandmother|grandfather|aunt|uncle|cousin|teacher|doctor|mentor"
        r"|boyfriend|girlfriend|fianc[eé]e?)\b",
    ),
}


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NOT_NAMES = frozenset(MONTHS) | frozenset(_WEEKDAYS)


@functools.lru_cache(maxsize=DOC_CACHE)
def states(kind: str, text: str) -> bool:
    """True when ``text`` states a thing of ``kind`` (:data:`ANSWER_KINDS`): a
    number (digits or number words), a time (a year, a date in digits, a month,
    a weekday, a clock time, yesterday, last week, two years ago ...), a place (a
    capitalised name after in / at / to / from, or a place noun), a person (a
    capitalised name inside a sentence, or a relation: mom, friend, boss ...).
    Remembered for the last :data:`DOC_CACHE` texts (the same hits come back)."""
    if kind == "person":  # a capitalised month or weekday is not a name
        return any((w := m.group(0).lower()) not in _NOT_NAMES and w not in STOPWORDS
                   for m in _STATES["person"].finditer(text))  # fmt: skip
    pattern = _STATES.get(kind)
    return bool(pattern and pattern.search(text))


def answer(doc: DocText, q: QueryCues) -> float:
    """1 when the question has a wh-type and the memory states that kind of
    thing, else 0."""
    return 1.0 if q.answer is not None and states(q.answer, doc.raw) else 0.0


Signal = Callable[[DocText, QueryCues], float]
#: The stage's signals, in trace order: name -> (function, the Settings field of its weight).
SIGNALS: dict[str, tuple[Signal, str]] = {
    "coverage": (coverage, "search_rerank_coverage_weight"),
    "proximity": (proximity, "search_rerank_proximity_weight"),
    "phrase": (phrase, "search_rerank_phrase_weight"),
    "entities": (entities, "search_rerank_entity_weight"),
    "answer": (answer, "search_rerank_answer_weight"),
}


#: The signals that read the query's words in the memory's text (the role gate's).
WORD_SIGNALS = frozenset({"coverage", "proximity", "phrase"})


def factors(
    doc: DocText,
    q: QueryCues,
    weights: Mapping[str, float],
    names: Set[str] | None = None,
    scale: float = 1.0,
) -> dict[str, float]:
    """Each signal's factor ``1 + weight x signal`` (exactly 1 at weight 0),
    under the trace key ``rerank_<name>``; ``names`` limits them. ``scale``
    multiplies the word signals (:data:`WORD_SIGNALS`)."""
    out: dict[str, float] = {}
    for name, (fn, _) in SIGNALS.items():
        if names is not None and name not in names:
            continue
        w = weights.get(name, 0.0)
        if w > 0 and name in WORD_SIGNALS:
            w *= scale
        out[f"rerank_{name}"] = 1.0 + w * fn(doc, q) if w > 0 else 1.0
    return out


def weights_of(settings: object) -> dict[str, float]:
    """Each signal's weight as ``settings`` sets it."""
    return {name: float(getattr(settings, attr)) for name, (_, attr) in SIGNALS.items()}


def local_idf(terms: Iterable[str], docs: Sequence[DocText]) -> dict[str, float]:
    """Each query word's IDF among the candidates ``docs``: what tells them
    apart. Read from what the caller may see only (a store-wide count would let
    memories the caller cannot read move the scores), and with no read at all.
    A word in no candidate gets the largest."""
    present = [set(doc.terms) for doc in docs]
    return {t: idf(sum(1 for have in present if t in have), max(len(docs), 1)) for t in set(terms)}


def _speaks_as_role(cand: Candidate) -> bool:
    """Whether the memory's speaker is a chat role (``user``, ``assistant``)."""
    speaker = speaker_of(cand.memory.content, cand.memory.metadata)
    return speaker is not None and speaker.lower() in ROLE_PERSONS


def _gated(head: Sequence[Candidate], scales: list[float], gate: float) -> list[float]:
    """``scales`` with the role gate: when the speaker cue applies to a chat-role
    memory of ``head``, the other chat-role memories' word signals times ``gate``."""
    roles = [_speaks_as_role(c) for c in head]
    named = [c.trace.get("speaker", 1.0) > 1.0 for c in head]
    if not any(r and n for r, n in zip(roles, named, strict=True)):
        return scales
    return [s * gate if r and not n else s
            for s, r, n in zip(scales, roles, named, strict=True)]  # fmt: skip


def rescore(
    head: Sequence[Candidate],
    q: QueryCues,
    weights: Mapping[str, float],
    *,
    role_gate: float = 1.0,
) -> None:
    """The stage on the first candidates: each one's score times its factors,
    the factors and the first stage's score (``first_stage_score``) in its trace.
    The caller sorts. Query words weigh their :func:`local_idf` among ``head``
    unless ``q`` brings weights.

    The people who speak in the candidates are the speaker cue's business, not
    the entities signal's: a question naming one of two people in a chat is
    about what that person said, and the other one's turns that call them by
    name are not closer for it; so their names leave the query's entities.
    ``role_gate``: the word signals (:data:`WORD_SIGNALS`) of the chat role the
    query does not speak of count this much, when it speaks of the other
    (:func:`_gated`; 1: as much)."""
    docs = []
    for cand in head:
        m = cand.memory
        text = " ".join(filter(None, (m.title, m.content)))
        docs.append(doc_text(text, speaker_of(m.content, m.metadata)))
    if not q.weights:
        q = replace(q, weights=local_idf(q.terms, docs))
    speakers = frozenset().union(*(doc.speaker for doc in docs))
    if q.entities & speakers:
        q = replace(q, entities=q.entities - speakers)
    scales = [1.0] * len(head)
    if role_gate != 1.0:
        scales = _gated(head, scales, role_gate)
    for cand, doc, scale in zip(head, docs, scales, strict=True):
        parts = factors(doc, q, weights, scale=scale)
        cand.trace["first_stage_score"] = cand.score
        cand.trace.update(parts)
        for value in parts.values():
            cand.score *= value
