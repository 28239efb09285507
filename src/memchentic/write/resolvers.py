"""Who decides what a new entry is to the memories nearest to it (issue 21).

A :class:`Resolver` gets the new record and its nearest comparable neighbours
(best first, with cosines) and answers one :class:`Decision`: add it, refuse it as
a duplicate of one of them, or let it supersede one of them (an update or a
contradiction). :mod:`memchentic.write.resolve` applies the decision.

- :class:`RuleResolver` (the default, no network): the first neighbour, best
  first, that :func:`~memchentic.write.statements.relate` does not call distinct.
- :class:`ChatResolver` (``WRITE_RESOLVER=chat`` with ``CHAT_BASE_URL`` set): the
  decision of mem0's write step (ADD / UPDATE / DELETE / NONE over the nearest
  memories) asked of an OpenAI-compatible chat model. Anything it answers that is
  not a valid decision about one of the neighbours shown falls back to the rules,
  so a model cannot touch a memory it was not shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import ValidationError
from ..llm import ChatClient, ChatError
from ..record import MemoryRecord
from ..settings import Settings
from .statements import Relation, Thresholds, judge


@dataclass(frozen=True, slots=True)
class Decision:
    """``relation`` of the new record to ``target`` (None: add it)."""

    relation: Relation
    target: MemoryRecord | None = None
    cosine: float | None = None
    #: Who decided: "rules" or "chat".
    by: str = "rules"
    #: The rule that decided (``update:port``, ``additive:also``, ...; docs/writes.md):
    #: for an added record, what it is to its nearest neighbour (None: none was close).
    rule: str | None = None
    #: An added record's nearest neighbour that it may be a newer value of (the same
    #: attribute of the same subject), and how sure the rules are of that (0..1;
    #: :attr:`~memchentic.write.statements.Judgement.thread`).
    related: MemoryRecord | None = None
    thread: float = 0.0
    #: The rule that found the thread (the judgement's rule for ``related``).
    thread_rule: str | None = None


ADD = Decision(Relation.DISTINCT)


class Resolver(Protocol):
    def decide(
        self,
        record: MemoryRecord,
        neighbours: Sequence[tuple[MemoryRecord, float]],
        thresholds: Thresholds,
    ) -> Decision: ...


class RuleResolver:
    """The rule-based decision (module docstring); needs nothing but the texts."""

    name = "rules"

    def decide(
        self,
        record: MemoryRecord,
        neighbours: Sequence[tuple[MemoryRecord, float]],
        thresholds: Thresholds,
    ) -> Decision:
        nearest: str | None = None
        related: tuple[MemoryRecord, float, str] | None = None
        for old, cosine in neighbours:
            found = judge(record.content, old.content, cosine, thresholds)
            if found.relation is not Relation.DISTINCT:
                return Decision(found.relation, old, cosine, rule=found.rule)
            if nearest is None and cosine >= thresholds.floor:
                nearest = found.rule
            if found.thread > 0 and (related is None or found.thread > related[1]):
                related = (old, found.thread, found.rule)
        if related is None:
            return Decision(Relation.DISTINCT, rule=nearest)
        old, sure, rule = related
        return Decision(Relation.DISTINCT, rule=nearest, related=old, thread=sure,
                        thread_rule=rule)  # fmt: skip


SYSTEM_PROMPT = """You keep a memory store consistent. You get a NEW statement and the
EXISTING memories closest to it, each with an id. Decide one operation:
- ADD: the new statement says something none of them says (keep both).
- UPDATE: it gives a new value for what one of them says (same subject and predicate,
  another value: a changed port, version, date, place, name or preference); name its id.
- DELETE: it contradicts or negates one of them; name its id.
- NONE: one of them already says the same thing; name its id.
Numbers, versions, dates, times, names and negation are values: a changed value is
an UPDATE, never NONE. Answer with a JSON object only:
{"event": "ADD" | "UPDATE" | "DELETE" | "NONE", "id": "<existing id or null>"}"""

_EVENTS = {
    "UPDATE": Relation.UPDATE,
    "DELETE": Relation.CONTRADICTION,
    "NONE": Relation.DUPLICATE,
}
#: The rule each of the model's decisions is recorded as (the rules' prefixes).
_CHAT_RULES = {
    Relation.UPDATE: "update:chat",
    Relation.CONTRADICTION: "negation:chat",
    Relation.DUPLICATE: "duplicate:chat",
}
_JSON = re.compile(r"\{.*\}", re.DOTALL)


class ChatResolver:
    """mem0's ADD / UPDATE / DELETE / NONE decision asked of a chat model; the rules
    decide whenever the model fails or names a memory it was not shown."""

    name = "chat"

    def __init__(self, client: ChatClient, *, fallback: Resolver | None = None) -> None:
        self.client = client
        self.fallback = fallback or RuleResolver()

    def decide(
        self,
        record: MemoryRecord,
        neighbours: Sequence[tuple[MemoryRecord, float]],
        thresholds: Thresholds,
    ) -> Decision:
        shown = [(old, cos) for old, cos in neighbours if cos >= thresholds.floor]
        if not shown:
            return self.fallback.decide(record, neighbours, thresholds)
        # ids in the prompt are positions: the model never sees (or invents) stored ids
        existing = [{"id": str(i), "text": old.content} for i, (old, _) in enumerate(shown)]
        prompt = json.dumps({"new": record.content, "existing": existing}, ensure_ascii=False)
        try:
            answer = self.client.complete(
                [{"role": "system", "content": SYSTEM_PROMPT},
                 {"role": "user", "content": prompt}]
            )  # fmt: skip
            decision = self._parse(answer, shown)
        except ChatError:
            decision = None
        return decision or self.fallback.decide(record, neighbours, thresholds)

    @staticmethod
    def _parse(answer: str, shown: Sequence[tuple[MemoryRecord, float]]) -> Decision | None:
        found = _JSON.search(answer)
        if found is None:
            return None
        try:
            parsed = json.loads(found.group(0))
        except ValueError:
            return None
        if not isinstance(parsed, dict):
            return None
        event = str(parsed.get("event", "")).strip().upper()
        if event == "ADD":
            return Decision(Relation.DISTINCT, by="chat", rule="additive:chat")
        relation = _EVENTS.get(event)
        index = str(parsed.get("id", ""))
        if relation is None or not index.isdigit() or int(index) >= len(shown):
            return None
        old, cosine = shown[int(index)]
        return Decision(relation, old, cosine, by="chat", rule=_CHAT_RULES[relation])

    def close(self) -> None:
        self.client.close()


def default_resolver(settings: Settings) -> Resolver:
    """The resolver ``WRITE_RESOLVER`` names: the rules, or the chat model."""
    if settings.write_resolver == "rules":
        return RuleResolver()
    client = ChatClient.from_settings(settings)
    if client is None:
        raise ValidationError("WRITE_RESOLVER", "chat needs CHAT_BASE_URL (the chat model)")
    return ChatResolver(client)


__all__ = ["ADD", "ChatResolver", "Decision", "Resolver", "RuleResolver", "default_resolver"]
