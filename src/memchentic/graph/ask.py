"""The rules of ``ask`` (``Memory.ask``, run by :mod:`memchentic.engine.graph`):
the library's question-answering path, separate from ``search``.

It searches every type the caller can see (facts and preferences too), keeps the
hits that are evidence for the question (they matched its words, or their cosine
reaches ``ASK_MIN_SIMILARITY``), and takes one graph hop (edges and shared
entities) from those. A passage found by search scores its search score; one
reached by a hop scores its parent's score times the link's strength (the edge's
``strength``, or ``n / (n + 1)`` for ``n`` shared entities). Passages are cited
[1], [2], ... best first. With a chat model configured (``CHAT_BASE_URL``) it also
answers from the passages. When no hit is evidence, the answer says memory cannot
answer and cites nothing (no chat call is made).
"""

from __future__ import annotations

from ..record import SearchHit

SYSTEM_PROMPT = (
    "Answer the question using only the numbered passages from memory. Cite the "
    "passages you use as [n]. If the passages do not hold the answer, say you do not know."
)

#: The answer when no memory is evidence for the question.
NO_ANSWER = "I cannot answer that from memory: nothing stored matches the question."

#: Most passages one answer cites.
MAX_PASSAGES = 100


def is_evidence(hit: SearchHit, min_similarity: float) -> bool:
    """A hit that says something about the question: the keyword stage matched it
    (past its floor), or its meaning is close enough. Search itself always returns
    the nearest memories, related or not."""
    trace = hit.trace or {}
    return trace.get("keyword_rank", 0.0) > 0 or trace.get("cosine", 0.0) >= min_similarity
