"""The typed keywords of the operations, declared once for every face (PEP 692).

:class:`~memchentic.AsyncMemory`, :class:`~memchentic.Client` and
:class:`~memchentic.AsyncClient` take an operation's keyword options as
``**options: Unpack[SearchKeywords]``, so an editor and a type checker see each
name and type (as httpx spells its keywords out) while the list is written here
only. A face passes them on to the operation's argument class
(:mod:`memchentic.args`), whose defaults apply to a keyword not given.

A class here holds what every face takes: the clock (``now``) and objects of the
caller's process (a chat model, an extractor) are spelled out by the one face that
takes them, ``AsyncMemory``. ``tests/test_faces.py`` checks each face's keywords
against the argument class: names, kinds and the types as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, TypeVar

from ..choices import DuplicatePolicy, Kind, SecretPolicy

__all__ = [
    "AddKeywords",
    "AddWorkingKeywords",
    "AskKeywords",
    "ContextKeywords",
    "ImproveKeywords",
    "ListKeywords",
    "MessageKeywords",
    "RecallKeywords",
    "ScopeKeywords",
    "SearchKeywords",
    "SessionScopeKeywords",
    "WorkingMemoryKeywords",
    "checked",
]

K = TypeVar("K", bound=Mapping[str, object])


class ScopeKeywords(TypedDict, total=False):
    """Whose memories: the scope of a read or a write (docs/design.md, section 4)."""

    user_id: str | None
    agent_id: str | None
    namespace: str | None


class SessionScopeKeywords(ScopeKeywords, total=False):
    """The scope, narrowed to one session."""

    session_id: str | None


class _WriteKeywords(SessionScopeKeywords, total=False):
    """What :meth:`Memory.add` and :meth:`Memory.add_working` both take."""

    kind: Kind | None
    title: str | None
    tags: Sequence[str] | None
    metadata: Mapping[str, Any] | None
    confidence: float | None
    importance: float | None
    ttl_days: float | None
    permanent: bool | None
    expires_at: datetime | str | None
    created_at: datetime | str | None
    valid_from: datetime | str | None
    valid_to: datetime | str | None
    path_hint: str | None
    repo: str | None
    entities: Sequence[str] | None
    tier_l0: str | None
    tier_l1: str | None
    pinned: bool | None
    secrets: SecretPolicy | None
    on_duplicate: DuplicatePolicy | None
    auto_edges: bool | None


class AddKeywords(_WriteKeywords, total=False):
    """:meth:`Memory.add` and :meth:`Memory.add_many` (``args.AddOptions``)."""

    type: str | None
    slot_key: str | None


class AddWorkingKeywords(_WriteKeywords, total=False):
    """:meth:`Memory.add_working` (``args.AddWorkingArgs``)."""

    key: str | None


class ImproveKeywords(TypedDict, total=False):
    """:meth:`Memory.improve` (``args.ImproveArgs``)."""

    confidence: float | None
    importance: float | None
    valid_from: datetime | str | None
    valid_to: datetime | str | None


class SearchKeywords(ScopeKeywords, total=False):
    """:meth:`Memory.search` (``args.SearchArgs``), less ``profile``: a face says which
    profiles it takes (a name over HTTP, also a profile object in the process)."""

    limit: int | None
    type: str | Sequence[str] | None
    kind: str | None
    tags: Sequence[str] | None
    path_hint: str | None
    repo: str | None
    include_expired: bool
    include_superseded: bool
    as_of: datetime | str | None
    include_trace: bool
    intent: str | None
    tier: str | None
    filters: Mapping[str, Any] | None
    threshold: float | None


class WorkingMemoryKeywords(ScopeKeywords, total=False):
    """:meth:`Memory.working_memory` (``args.WorkingMemoryArgs``)."""

    limit: int | None


class RecallKeywords(ScopeKeywords, total=False):
    """:meth:`Memory.recall` (``args.RecallArgs``), less the ``entity`` it needs."""

    limit: int | None
    as_of: datetime | str | None


class ListKeywords(ScopeKeywords, total=False):
    """:meth:`Memory.list` (``args.ListArgs``)."""

    type: str | Sequence[str] | None
    kind: str | None
    tags: Sequence[str] | None
    include_expired: bool
    include_superseded: bool
    limit: int | None
    offset: int
    newest_first: bool
    as_of: datetime | str | None
    filters: Mapping[str, Any] | None


class AskKeywords(ScopeKeywords, total=False):
    """:meth:`Memory.ask` (``args.AskArgs``)."""

    limit: int


class MessageKeywords(SessionScopeKeywords, total=False):
    """Where messages go: :meth:`Memory.record_turn`, :meth:`Memory.add_message` and
    :meth:`Memory.learn`."""

    metadata: Mapping[str, Any] | None


class ContextKeywords(SessionScopeKeywords, total=False):
    """:meth:`Memory.context` (``args.ContextArgs``)."""

    budget_tokens: int | None
    limit: int | None
    recent_turns: int | None
    as_of: datetime | str | None


def checked(options: K, declared: Any) -> K:
    """``options``, when each name is a key of the TypedDict ``declared``; else the
    ``TypeError`` a spelled-out signature raises (an argument class has fields a
    remote face does not take, such as ``now``: they must not pass silently)."""
    known = declared.__required_keys__ | declared.__optional_keys__
    for name in options:
        if name not in known:
            raise TypeError(f"got an unexpected keyword argument {name!r}")
    return options
