"""What a context shows of a long memory, and which shown memories repeat each other
(issue 33, item 3): pure functions, no store, no clock.

* **Excerpts.** A search hit longer than ``CONTEXT_EXCERPT_OVER_CHARS`` is offered
  to a budget as its best passage: the window of whole sentences (at most
  ``CONTEXT_EXCERPT_CHARS`` characters) that holds most of the query's words,
  IDF-weighted among the hits, and holds them closest together
  (:func:`best_window`). The line says it is an excerpt and names its memory, so
  the agent can fetch the whole text (:func:`excerpt_text`); when the budget still
  has room once every item was tried, an excerpt is shown whole again.
* **Near-duplicates.** Two hits of one session whose vectors have a cosine of at
  least ``CONTEXT_DUPLICATE_COSINE`` say the same thing; a budget shows the better
  one and leaves the other out, only while the better one is shown
  (:func:`near_duplicates`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..retrieval.rerank import DocText, QueryCues, coverage, doc_text, proximity

#: A sentence ends at . ! ? or … followed by space, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\s*\n+\s*")
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Window:
    """A passage of a text: ``text[start:end]``, and how well it answers."""

    start: int
    end: int
    score: float


def sentences(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of ``text``'s sentences, blanks left out."""
    spans, at = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.start() > at:
            spans.append((at, m.start()))
        at = m.end()
    if at < len(text):
        spans.append((at, len(text.rstrip())))
    return [(a, b) for a, b in spans if b > a]


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
    return [(start, end) for start, end, _ in _runs(sentences(text), text, limit)]


def _runs(spans: list[tuple[int, int]], text: str, limit: int) -> list[tuple[int, int, int]]:
    """:func:`windows` with the number of whole sentences in each (0: a cut one)."""
    out: list[tuple[int, int, int]] = []
    for i, (start, end) in enumerate(spans):
        if end - start > limit:
            out.append((start, _cut(text, start, limit), 0))
            continue
        stop, count = end, 1
        for _, nxt in spans[i + 1 :]:
            if nxt - start > limit:
                break
            stop, count = nxt, count + 1
        out.append((start, stop, count))
    return out


def passage_score(doc: DocText, q: QueryCues) -> float:
    """How well a passage answers: the query's words it holds, and held together."""
    return coverage(doc, q) + proximity(doc, q)


def best_window(text: str, q: QueryCues, limit: int) -> Window:
    """The passage of at most ``limit`` characters whose :func:`passage_score` is
    highest. Of a run of windows that tie, the last: the one that starts nearest the
    words it holds (a text that matches nowhere shows its start). ``q`` must carry
    the weights of its words.

    Each sentence is read once: a window's words are its sentences' words (no word
    spans two sentences), and a window holding none of the query's words scores 0."""
    spans = sentences(text)
    words = [doc_text(text[a:b]).terms for a, b in spans] if q.weights else []
    wanted = set(q.terms)
    best: Window | None = None
    running = False
    for i, (start, end, count) in enumerate(_runs(spans, text, limit)):
        score = 0.0
        if q.weights:
            terms = (doc_text(text[start:end]).terms if count == 0
                     else tuple(t for w in words[i : i + count] for t in w))  # fmt: skip
            if wanted.intersection(terms):
                score = passage_score(DocText("", terms, frozenset()), q)
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
