"""What a context shows of a long memory, and which shown memories repeat each other
(issue 33, item 3): pure functions, no store, no clock.

* **Excerpts.** A search hit longer than ``CONTEXT_EXCERPT_OVER_CHARS`` is offered
  to a budget as its best passage: the window of whole sentences (at most
  ``CONTEXT_EXCERPT_CHARS`` characters) that holds most of the query's words,
  IDF-weighted among the hits, and holds them closest together
  (:func:`best_window`). The line says it is an excerpt and names its memory, so
  the agent can fetch the whole text (:func:`excerpt_text`); when the budget still
  has room once every item was tried, an excerpt is shown whole again.
* **Bounded work.** A context call's excerpts read at most :data:`EXCERPT_WORK`
  window-word comparisons in all (:class:`ExcerptBudget`: each window read costs
  its content words plus the query words it is weighed by), and weigh at most the
  :data:`EXCERPT_QUERY_WORDS` most informative distinct words of the query
  (:func:`informative`). The hits are read best first; once the budget is spent, a
  long hit shows its start. (Unbounded, 40 hits of 64 KB and an 8 KB query took
  11-16 s.)
* **Near-duplicates.** Two hits of one session whose vectors have a cosine of at
  least ``CONTEXT_DUPLICATE_COSINE`` say the same thing; a budget shows the better
  one and leaves the other out, only while the better one is shown
  (:func:`near_duplicates`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..retrieval.rerank import DocText, QueryCues, coverage, doc_text, proximity

#: A sentence ends at . ! ? or … followed by space, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\s*\n+\s*")
ELLIPSIS = "…"
#: Most distinct query words the excerpts of a context weigh (:func:`informative`).
EXCERPT_QUERY_WORDS = 32
#: Window-word comparisons one context call's excerpts may make in all
#: (:class:`ExcerptBudget`): about 0.2 s of Python at most.
EXCERPT_WORK = 200_000


class ExcerptBudget:
    """What the excerpts of one context call may still read (:attr:`spent`, for tests
    and traces): each sentence read costs its content words; each window scored,
    its sentences, its content words and the query words it is weighed by; a window
    without a query word, its sentences. A hit read once it is spent shows its
    start."""

    __slots__ = ("limit", "spent", "windows")

    def __init__(self, limit: int = EXCERPT_WORK) -> None:
        self.limit, self.spent, self.windows = limit, 0, 0

    def take(self, cost: int) -> bool:
        """Spend ``cost`` if it fits in what is left (False, nothing spent, else)."""
        if self.spent + cost > self.limit:
            return False
        self.spent += cost
        self.windows += 1
        return True


def informative(q: QueryCues, limit: int = EXCERPT_QUERY_WORDS) -> QueryCues:
    """``q`` weighed by at most ``limit`` distinct words: the highest weights (IDF),
    ties to the first in the query. ``q`` itself when it has no more."""
    distinct = list(dict.fromkeys(q.terms))
    if len(distinct) <= limit:
        return q
    ranked = sorted(range(len(distinct)), key=lambda i: (-q.weights.get(distinct[i], 0.0), i))
    kept = {distinct[i] for i in ranked[:limit]}
    return replace(q, terms=tuple(t for t in q.terms if t in kept),
                   weights={t: w for t, w in q.weights.items() if t in kept})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Window:
    """A passage of a text: ``text[start:end]``, and how well it answers."""

    start: int
    end: int
    score: float


def sentences(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of ``text``'s sentences, blanks left out."""
    return list(_spans(text))


def _spans(text: str) -> Iterator[tuple[int, int]]:
    """:func:`sentences`, one at a time."""
    at = 0
    for m in _SENTENCE_END.finditer(text):
        if m.start() > at:
            yield at, m.start()
        at = m.end()
    end = len(text.rstrip())
    if at < len(text) and end > at:
        yield at, end


class _Sentences:
    """The sentences of a text, read only as far as they are asked for."""

    __slots__ = ("_rest", "spans")

    def __init__(self, text: str) -> None:
        self.spans: list[tuple[int, int]] = []
        self._rest = _spans(text)

    def has(self, i: int) -> bool:
        """Whether the text has an ``i``-th sentence (read up to it)."""
        while len(self.spans) <= i:
            found = next(self._rest, None)
            if found is None:
                return False
            self.spans.append(found)
        return True


def _cut(text: str, start: int, limit: int) -> int:
    """The end of at most ``limit`` characters of ``text`` from ``start``, at a word
    boundary when there is one."""
    end = start + limit
    if end >= len(text):
        return len(text)
    space = text.rfind(" ", start, end)
    return space if space > start else end


def windows(text: str, limit: int) -> list[tuple[int, int]]:
    """Runs of consecutive whole sentences of at most ``limit`` characters, one
    starting at each sentence (a sentence longer than ``limit`` is cut at a word)."""
    return [(start, end) for start, end, _ in _runs(_Sentences(text), text, limit)]


def _runs(read: _Sentences, text: str, limit: int) -> Iterator[tuple[int, int, int]]:
    """:func:`windows` with the number of whole sentences in each (0: a cut one),
    one at a time, reading the sentences as far as they reach (each window's last
    sentence is found from the previous one's: linear in the sentences read)."""
    i = last = 0  # last: the index of the previous window's last sentence
    spans = read.spans
    while read.has(i):
        start, end = spans[i]
        if end - start > limit:
            yield start, _cut(text, start, limit), 0
        else:
            last = max(last, i)
            while read.has(last + 1) and spans[last + 1][1] - start <= limit:
                last += 1
            yield start, spans[last][1], last - i + 1
        i += 1


def passage_score(doc: DocText, q: QueryCues) -> float:
    """How well a passage answers: the query's words it holds, and held together."""
    return coverage(doc, q) + proximity(doc, q)


def best_window(text: str, q: QueryCues, limit: int, budget: ExcerptBudget | None = None) -> Window:
    """The passage of at most ``limit`` characters whose :func:`passage_score` is
    highest. Of a run of windows that tie, the last: the one that starts nearest the
    words it holds (a text that matches nowhere shows its start). ``q`` must carry
    the weights of its words; it is read by its :func:`informative` words only.

    Each sentence is read once, when a window first reaches it: a window's words are
    its sentences' words (no word spans two sentences), and a window holding none of
    the query's words scores 0 unread. The work is paid from ``budget`` (a sentence's
    words when read; a window's sentences, and its words and the query's when
    scored); once it is spent, the best window so far wins (the start, when none)."""
    q = informative(q)
    wanted = set(q.terms)
    read = _Sentences(text)
    words: list[tuple[str, ...]] = []
    held = [0]  # held[j]: how many of the first j sentences hold a query word
    best: Window | None = None
    running = False
    for i, (start, end, count) in enumerate(_runs(read, text, limit)):
        score = 0.0
        if wanted and q.weights:
            while len(words) < i + count:  # the sentences this window reaches
                a, b = read.spans[len(words)]  # (one over the limit is only ever cut: unread)
                terms = doc_text(text[a:b]).terms if b - a <= limit else ()
                if budget is not None and not budget.take(len(terms)):
                    return best or Window(0, _cut(text, 0, limit), 0.0)
                words.append(terms)
                held.append(held[-1] + (not wanted.isdisjoint(terms)))
            if count == 0 or held[i + count] > held[i]:
                terms = (doc_text(text[start:end]).terms if count == 0
                         else tuple(t for w in words[i : i + count] for t in w))  # fmt: skip
                if budget is not None and not budget.take(count + len(terms) + len(wanted)):
                    break
                if not wanted.isdisjoint(terms):
                    score = passage_score(DocText("", terms, frozenset()), q)
            elif budget is not None and not budget.take(count):
                break
        if best is None or score > best.score or (running and score == best.score > 0):
            best, running = Window(start, end, score), True
        else:
            running = False
    return best or Window(0, _cut(text, 0, limit), 0.0)


def excerpt_text(text: str, window: Window, memory_id: str, speaker: str | None = None) -> str:
    """The excerpt as a context shows it: it says it is one, names the memory (and
    who said it when the passage does not start the text), and marks each cut with
    an ellipsis."""
    said = f", said by {speaker}" if speaker and window.start > 0 else ""
    body = text[window.start : window.end].strip()
    before = ELLIPSIS + " " if window.start > 0 else ""
    after = " " + ELLIPSIS if text[window.end :].strip() else ""
    return f"[excerpt of memory {memory_id}{said}] {before}{body}{after}"


def near_duplicates(
    ids: Sequence[str],
    sessions: Mapping[str, str | None],
    vectors: Mapping[str, np.ndarray],
    threshold: float,
) -> dict[str, list[str]]:
    """For each id, the ids *before it* in ``ids`` (better ranked) of the same
    session whose vectors' cosine with its own is at least ``threshold``.
    Memories without a session or a vector have none."""
    out: dict[str, list[str]] = {}
    if threshold <= 0:
        return out
    unit: dict[str, np.ndarray] = {}
    for i in ids:
        v = vectors.get(i)
        norm = float(np.linalg.norm(v)) if v is not None else 0.0
        if norm > 0 and sessions.get(i):
            unit[i] = np.asarray(v, dtype=np.float32) / norm
    for n, i in enumerate(ids):
        if i not in unit:
            continue
        twins = [j for j in ids[:n] if j in unit and sessions[j] == sessions[i]
                 and float(unit[i] @ unit[j]) >= threshold]  # fmt: skip
        if twins:
            out[i] = twins
    return out
