"""Learning from conversations (docs/design.md, section 7): ``Memory.learn`` runs an
extractor over messages and writes what it finds through the normal write path.

- :class:`~memchentic.learn.rules.RuleExtractor`: the default, self-statements by rule.
- :class:`~memchentic.learn.openai_chat.OpenAIChatExtractor`: an OpenAI-compatible
  chat model, used when ``CHAT_BASE_URL`` is set.

Any object with a ``name`` and ``extract(messages) -> list[Extracted]`` plugs in:
``mem.extractor = MyExtractor()`` or ``mem.learn(messages, extractor=...)``.
"""

from __future__ import annotations

from .base import Extracted, Extractor, Message, to_messages
from .openai_chat import OpenAIChatExtractor
from .rules import RuleExtractor

__all__ = [
    "Extracted",
    "Extractor",
    "Message",
    "OpenAIChatExtractor",
    "RuleExtractor",
    "to_messages",
]
