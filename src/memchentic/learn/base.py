"""What extractors share: the message and extracted-memory types, the protocol."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ValidationError
from ..record import Turn


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Extracted:
    """A memory an extractor found; :meth:`to_options` gives the ``add`` options."""

    content: str
    type: str = "fact"
    slot_key: str | None = None
    kind: str = "entry"
    importance: float = 0.5
    #: Metadata of this memory (beside ``source`` and ``extractor``, which win).
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_options(self, extractor: str) -> dict[str, Any]:
        options: dict[str, Any] = {
            "content": self.content,
            "type": self.type,
            "kind": self.kind,
            "importance": self.importance,
            "metadata": {**self.metadata, "source": "learn", "extractor": extractor},
        }
        if self.slot_key:
            options["slot_key"] = self.slot_key
        return options


class Extractor(Protocol):
    """Finds memories worth keeping in a conversation."""

    name: str

    def extract(self, messages: list[Message]) -> list[Extracted]: ...


def to_messages(
    messages: str | Iterable[str | Mapping[str, Any] | Turn | Message],
) -> list[Message]:
    """Messages from strings (a user message each), ``{"role", "content"}`` mappings,
    :class:`~memchentic.record.Turn` or :class:`Message` objects."""
    if isinstance(messages, str):
        messages = [messages]
    out: list[Message] = []
    for i, item in enumerate(messages):
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, str):
            out.append(Message("user", item))
        elif isinstance(item, Turn):
            out.append(Message(item.role, item.content))
        elif isinstance(item, Mapping) and isinstance(item.get("content"), str):
            out.append(Message(str(item.get("role") or "user").lower(), item["content"]))
        else:
            raise ValidationError(
                f"messages[{i}]", "must be a string, a {'role', 'content'} mapping or a Turn"
            )
    return out
