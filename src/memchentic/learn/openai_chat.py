"""An extractor that asks an OpenAI-compatible chat model (OpenAI, Ollama, vLLM, ...).

It sends one request to ``{CHAT_BASE_URL}/chat/completions`` through
:class:`~memchentic.llm.ChatClient`: a system prompt describing the answer, and the
conversation as ``role: content`` lines. The model answers with a JSON object::

    {"memories": [{"content": "Lives in Lisbon", "type": "fact",
                   "slot_key": "profile.location", "kind": "entry", "importance": 0.8}]}

Invalid items are skipped; an answer that is not JSON at all raises
:class:`~memchentic.llm.ChatError`. ``json_mode`` sends
``response_format={"type": "json_object"}`` (turn it off for servers without it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import ValidationError
from ..llm import ChatClient, ChatError
from ..record import KINDS, normalise_type
from .base import Extracted, Message

SYSTEM_PROMPT = """You extract long-term memories about the user from a conversation.
Keep only what will still matter in later conversations: facts about the user, their
preferences, goals, standing instructions to the assistant, decisions, and lessons.
Skip small talk, questions, and anything the assistant said unless the user confirmed it.
Write each memory as one short third-person statement without the user's name
("Lives in Lisbon", "Prefers window seats", "Never use emojis").
Answer with a JSON object only:
{"memories": [{"content": "...", "type": "...", "slot_key": "...", "kind": "entry",
"importance": 0.5}]}
- type: one of fact, preference, goal, instruction, decision, episodic, skill, insight, note.
- slot_key: only for single-valued attributes that a later statement replaces, e.g.
  profile.name, profile.location, profile.employer, profile.diet, opinion:<topic>;
  otherwise null.
- kind: "guide" for instructions and advice to follow again, else "entry".
- importance: 0 to 1.
Answer {"memories": []} when there is nothing worth remembering."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


class OpenAIChatExtractor:
    """Memories extracted by a chat model (see the module docstring)."""

    name = "chat"

    def __init__(
        self, client: ChatClient, *, json_mode: bool = True, max_memories: int = 50
    ) -> None:
        self.client = client
        self.json_mode = json_mode
        self.max_memories = max_memories

    def extract(self, messages: list[Message]) -> list[Extracted]:
        if not messages:
            return []
        transcript = "\n".join(f"{m.role}: {m.content}" for m in messages)
        extra: dict[str, Any] = (
            {"response_format": {"type": "json_object"}} if self.json_mode else {}
        )
        answer = self.client.complete(
            [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": transcript}],
            **extra,
        )
        return parse_answer(answer)[: self.max_memories]

    def close(self) -> None:
        self.client.close()


def parse_answer(answer: str) -> list[Extracted]:
    """The memories of a model's answer: ``{"memories": [...]}`` or a bare list."""
    try:
        data = json.loads(_FENCE.sub("", answer))
    except ValueError:
        raise ChatError("the chat model did not answer with JSON") from None
    items = data.get("memories") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ChatError('the chat model answered without a "memories" list')
    out: list[Extracted] = []
    for item in items:
        found = _item(item)
        if found is not None:
            out.append(found)
    return out


def _item(item: Any) -> Extracted | None:
    """One memory of the answer, or None when it is unusable (never an exception)."""
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, dict):
        return None
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        return None
    try:
        type_ = normalise_type(item.get("type") or "fact")
    except ValidationError:
        type_ = "fact"
    slot = item.get("slot_key")
    slot = slot.strip() if isinstance(slot, str) and slot.strip() else None
    kind = item.get("kind") if item.get("kind") in KINDS else "entry"
    importance = item.get("importance", 0.5)
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        importance = 0.5
    return Extracted(content.strip(), type_, slot, str(kind), min(1.0, max(0.0, float(importance))))
