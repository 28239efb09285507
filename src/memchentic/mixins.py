"""Typing help for the mixins ``Memory`` is assembled from (context, sessions,
learning, upkeep): each method starts with ``mem = as_memory(self)`` and uses the
whole, real ``Memory`` API from there, checked against its actual signatures."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from .memory import Memory


def as_memory(mixin: object) -> Memory:
    """``self`` of a mixin method, typed as the ``Memory`` it is part of."""
    return cast("Memory", mixin)
