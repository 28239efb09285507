"""Session summaries without a model: :class:`ExtractiveSummarizer`, and the
:class:`Summarizer` interface ``Memory.summarize_session`` takes (docs/design.md, section 7)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from ..errors import ValidationError
from ..record import Turn


class Summarizer(Protocol):
    """Turns a session's turns into the text of its summary memory."""

    name: str

    def summarize(self, turns: Sequence[Turn]) -> str: ...


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# fmt: off
_STOPWORDS = frozenset({
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing",
    "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my",
    "no", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over",
    "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under",
    "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while",
    "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yes", "ok", "okay",
    "sure", "thanks", "thank", "please", "hi", "hello", "hey",
})
# fmt: on


class ExtractiveSummarizer:
    """Keeps the session's most representative sentences, in their order.

    Every sentence of every turn is scored by how frequent its content words are
    across the session (Luhn's method): ``sum(freq(word)) / sqrt(words)``, with
    user sentences weighted ``user_weight`` (they state the facts). The best
    ``sentences`` are kept, each clipped at ``max_sentence_chars``, and written
    as ``role: sentence`` after a line naming the session and counting its turns.
    Deterministic.
    """

    name = "extractive"

    def __init__(
        self, sentences: int = 6, *, max_sentence_chars: int = 300, user_weight: float = 1.5
    ) -> None:
        if sentences < 1:
            raise ValidationError("sentences", "must be at least 1")
        self.sentences = sentences
        self.max_sentence_chars = max_sentence_chars
        self.user_weight = user_weight

    def summarize(self, turns: Sequence[Turn]) -> str:
        pieces: list[tuple[str, str, list[str]]] = []
        for turn in turns:
            for sentence in _SENTENCE.split(turn.content):
                text = " ".join(sentence.split())
                words = [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]
                if text and words:
                    pieces.append((turn.role, text, words))
        freq = Counter(w for _, _, words in pieces for w in set(words))

        def score(i: int) -> float:
            role, _, words = pieces[i]
            value = sum(freq[w] for w in set(words)) / math.sqrt(len(words))
            return value * (self.user_weight if role == "user" else 1.0)

        chosen = sorted(sorted(range(len(pieces)), key=lambda i: (-score(i), i))[: self.sentences])
        roles = Counter(t.role for t in turns)
        counts = ", ".join(f"{r} {n}" for r, n in sorted(roles.items()))
        lines = [f"Session {turns[0].session_id}, {len(turns)} turns ({counts})."]
        for i in chosen:
            role, text, _ = pieces[i]
            if len(text) > self.max_sentence_chars:
                text = text[: self.max_sentence_chars - 1].rstrip() + "…"
            lines.append(f"{role}: {text}")
        return "\n".join(lines)
