"""``ask``: the library's question-answering path, separate from ``search``.

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

from typing import TYPE_CHECKING, Any

from ..record import MemoryRecord, SearchHit
from ..reports import Answer, Passage

if TYPE_CHECKING:
    from ..llm import ChatClient
    from ..memory import Memory

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


def ask(mem: Memory, question: str, *, limit: int, chat: ChatClient | None, **scope: Any) -> Answer:
    hits = mem.search(question, limit=limit, include_trace=True, **scope)
    hits = [h for h in hits if is_evidence(h, mem.settings.ask_min_similarity)]
    chosen: list[tuple[MemoryRecord, float, str]] = [(h.memory, h.score, "search") for h in hits]
    seen = {h.id for h in hits}
    now = mem._now(None)
    flt = mem._read_filter(now=now, **_scope_only(scope))
    for hit in hits:
        for other, via, strength in mem._adjacent(hit.memory, flt, limit):
            if other.id not in seen and not other.superseded_by and not other.is_expired(now):
                seen.add(other.id)
                chosen.append((other, hit.score * strength, via))
    chosen.sort(key=lambda c: -c[1])  # stable: a hop never outranks the hit it came from
    result = Answer(question)
    for index, (record, score, via) in enumerate(chosen[:MAX_PASSAGES]):
        result.passages.append(Passage(index + 1, record, score, via))
    if not result.passages:
        result.answer, result.answerable = NO_ANSWER, False
    elif chat is not None:
        listing = "\n".join(f"[{p.citation}] {p.memory.content}" for p in result.passages)
        result.answer = chat.complete([
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Passages:\n{listing}\n\nQuestion: {question}"},
        ])  # fmt: skip
    return result


def _scope_only(scope: dict[str, Any]) -> dict[str, Any]:
    return {k: scope.get(k) for k in ("user_id", "agent_id", "namespace")}
