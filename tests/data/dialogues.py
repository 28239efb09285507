"""The shape of the hand-written conversation sets (``chat_set``,
``technical_set``): conversations of sessions of turns, each turn with an id,
and questions with the ids of the turns that answer them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class Session:
    """Turns said one after another from ``start`` (ISO, UTC), a minute apart:
    ``(turn id, speaker, text)``."""

    id: str
    start: str
    turns: tuple[tuple[str, str, str], ...]

    def at(self, index: int) -> datetime:
        """When the ``index``-th turn (from 0) was said."""
        return datetime.fromisoformat(self.start).replace(tzinfo=UTC) + timedelta(minutes=index)


@dataclass(frozen=True)
class Question:
    """A question asked later, and the ids of the turns that hold its answer."""

    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """Sessions in time order between ``speakers``; ``roles`` gives a speaker's
    role (``user`` / ``assistant``) where the conversation has them."""

    id: str
    speakers: tuple[str, ...]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    roles: dict[str, str] = field(default_factory=dict)

    def turns(self) -> Iterator[tuple[Session, int, tuple[str, str, str]]]:
        """Every turn in order, with its session and its index in it."""
        for session in self.sessions:
            for i, turn in enumerate(session.turns):
                yield session, i, turn
