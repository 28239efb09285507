"""``ask``: the library's question-answering path, separate from ``search``.

It retrieves from the general types (semantic, episodic, emotional, reflective),
takes one graph hop (edges and shared entities) from those hits, and ranks the
passages by a plain positional score ``1 - index / 100`` (no decay, no usage,
no router): direct hits in search order, then each hit's neighbours. With a
chat model configured (``CHAT_BASE_URL``) it also answers from the passages,
citing them as [1], [2], ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..record import GENERAL_TYPES, MemoryRecord

if TYPE_CHECKING:
    from ..llm import ChatClient
    from ..memory import Memory

SYSTEM_PROMPT = (
    "Answer the question using only the numbered passages from memory. Cite the "
    "passages you use as [n]. If the passages do not hold the answer, say you do not know."
)


@dataclass(frozen=True, slots=True)
class Passage:
    citation: int
    memory: MemoryRecord
    score: float
    via: str  # "search" or "edge:<kind>" / "entity:<name>" (one hop)

    def to_dict(self) -> dict[str, Any]:
        return {"citation": self.citation, "id": self.memory.id, "text": self.memory.content,
                "score": self.score, "via": self.via}  # fmt: skip


@dataclass(slots=True)
class Answer:
    question: str
    passages: list[Passage] = field(default_factory=list)
    answer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer,
                "passages": [p.to_dict() for p in self.passages]}  # fmt: skip


def ask(mem: Memory, question: str, *, limit: int, chat: ChatClient | None, **scope: Any) -> Answer:
    hits = mem.search(question, type=list(GENERAL_TYPES), limit=limit, **scope)
    chosen: list[tuple[MemoryRecord, str]] = [(h.memory, "search") for h in hits]
    seen = {h.id for h in hits}
    now = mem._now(None)
    flt = mem._read_filter(now=now, **_scope_only(scope))
    for hit in hits:
        for other, via in mem._adjacent(hit.id, flt, limit):
            if other.id not in seen and not other.superseded_by and not other.is_expired(now):
                seen.add(other.id)
                chosen.append((other, via))
    chosen = chosen[:100]
    result = Answer(question)
    for index, (record, via) in enumerate(chosen):
        result.passages.append(Passage(index + 1, record, 1 - index / 100, via))
    if chat is not None and result.passages:
        listing = "\n".join(f"[{p.citation}] {p.memory.content}" for p in result.passages)
        result.answer = chat.complete([
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Passages:\n{listing}\n\nQuestion: {question}"},
        ])  # fmt: skip
    return result


def _scope_only(scope: dict[str, Any]) -> dict[str, Any]:
    return {k: scope.get(k) for k in ("user_id", "agent_id", "namespace")}
