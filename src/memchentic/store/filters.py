"""Which rows a read may see: :class:`MemoryFilter`, and the one description of it
as SQL that both backends render (:func:`clauses`, rendered by
:meth:`memchentic.store.dialect.Dialect.where`).

A clause is written once, in SQL both engines read alike, with ``?`` for each
parameter and ``{a}`` for the memories table's alias; parameters are plain Python
values (datetimes, bools), which the dialect converts. Where the engines differ
(a list of values, a memory's tags) the clause is a structured one the dialect
spells its own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from ..metadata_filter import Node as MetaNode
from ..record import MemoryRecord
from ..text import folder


@dataclass(slots=True)
class MemoryFilter:
    """Which rows a read may see. ``namespaces`` has no default: a read names the
    namespaces it may see (``Gate.read_filter`` asks the access policy), or says
    :meth:`everything` (``namespaces=None``: every namespace, for whole-store jobs
    and the trusted local principal), so no read means "everything" by omission."""

    namespaces: Sequence[str] | None
    now: datetime | None = None
    types: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    tags: Sequence[str] | None = None  # a memory must carry all of them
    path_hint: str | None = None  # keeps memories whose path matches, or that have none
    repo: str | None = None  # keeps memories of that repo, or of none
    user_id: str | None = None
    agent_id: str | None = None  # keeps that agent's memories and the agent-less ones
    slot_prefix: str | None = None
    include_expired: bool = False
    include_superseded: bool = False
    as_of: datetime | None = None
    pinned: bool | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    exclude_ids: Sequence[str] = field(default_factory=tuple)
    #: That agent's memories only: written by it (``agent_id``) or in its namespace.
    by_agent: str | None = None
    #: A checked filter on metadata (:func:`memchentic.metadata_filter.parse`).
    metadata: MetaNode | None = None
    #: Rank with statistics of the visible rows only (untrusted callers): keyword
    #: scores and order must not depend on rows the caller cannot see.
    isolated: bool = False
    #: Memories of that session only (working memory is read by session, along an
    #: index; issue 32, item 3). Never set by search: session ids do not filter it.
    session_id: str | None = None
    #: Memories that identity (``Principal.identity_id``) first wrote: the actor of
    #: their version 1 (the per-identity cap of working memory; issue 32, item 3).
    written_by: str | None = None

    @classmethod
    def everything(cls, **fields: Any) -> MemoryFilter:
        """Every namespace, said by name: a whole-store job (gc, reindex, reset, backup,
        a copy), or the trusted local principal's read. Other fields narrow it as usual."""
        return cls(namespaces=None, **fields)

    def is_unrestricted(self) -> bool:
        """True when every live row passes (no namespace or field restriction)."""
        return (
            self.namespaces is None
            and not self.types
            and not self.kinds
            and not self.tags
            and self.path_hint is None
            and self.repo is None
            and self.user_id is None
            and self.agent_id is None
            and self.slot_prefix is None
            and self.as_of is None
            and self.pinned is None
            and self.created_after is None
            and self.created_before is None
            and not self.exclude_ids
            and self.by_agent is None
            and self.metadata is None
            and self.session_id is None
            and self.written_by is None
        )


class Sql(NamedTuple):
    """A condition both engines read alike (``{a}``: the alias; ``?``: a parameter)."""

    text: str
    params: tuple[Any, ...] = ()


class AnyOf(NamedTuple):
    """``column`` holds one of ``values`` (or, ``negate``, none of them)."""

    column: str
    values: tuple[Any, ...]
    negate: bool = False


class AllTags(NamedTuple):
    """The memory carries every one of ``tags``."""

    tags: tuple[str, ...]


class Meta(NamedTuple):
    """The memory's metadata passes a checked filter (each engine spells it:
    :mod:`.metadata_sql`)."""

    node: MetaNode


Clause = Sql | AnyOf | AllTags | Meta

#: The path filter (``signals.paths_match``): a memory applies when its path hint
#: is empty or lies on the same path, by whole segments: equal, its hint a folder
#: of the query's path, or the query's path a folder of its hint.
_PATH = (
    "({a}.path_hint IS NULL OR {a}.path_hint = '' OR {a}.path_hint = ? OR "
    "substr(?, 1, length({a}.path_hint) + 1) = {a}.path_hint || '/' OR "
    "(substr({a}.path_hint, length({a}.path_hint)) = '/' AND "
    "substr(?, 1, length({a}.path_hint)) = {a}.path_hint) OR "
    "substr({a}.path_hint, 1, length(?)) = ?)"
)
#: As of then, a superseded memory still holds unless what superseded it did not
#: hold then (graph/supersession.py; issue 20, item 12).
_SUPERSEDED_AS_OF = (
    "({a}.superseded_by IS NULL OR NOT EXISTS (SELECT 1 FROM memories sup "
    "WHERE sup.id = {a}.superseded_by AND "
    "COALESCE(sup.valid_from, sup.created_at) <= ? AND "
    "(sup.valid_to IS NULL OR sup.valid_to > ?)))"
)

#: Who first wrote a memory: the actor of its version 1 (``write.resolve``).
_WRITTEN_BY = (
    "EXISTS (SELECT 1 FROM versions wv WHERE wv.memory_id = {a}.id AND wv.version = 1 "
    "AND wv.actor = ?)"
)


def clauses(flt: MemoryFilter) -> list[Clause] | None:
    """The conditions a row must meet to pass ``flt``, all of them; None when no row
    can (an empty list of namespaces)."""
    out: list[Clause] = []
    if flt.namespaces is not None:
        if not flt.namespaces:
            return None
        out.append(AnyOf("namespace", tuple(flt.namespaces)))
    if flt.types:
        out.append(AnyOf("type", tuple(flt.types)))
    if flt.kinds:
        out.append(AnyOf("kind", tuple(flt.kinds)))
    if flt.tags:
        out.append(AllTags(tuple(flt.tags)))
    if flt.path_hint is not None:
        q = flt.path_hint
        out.append(Sql(_PATH, (q, q, q, folder(q), folder(q))))
    if flt.repo is not None:
        out.append(Sql("({a}.repo IS NULL OR {a}.repo = '' OR {a}.repo = ?)", (flt.repo,)))
    if flt.user_id is not None:
        out.append(Sql("{a}.user_id = ?", (flt.user_id,)))
    if flt.agent_id is not None:
        out.append(Sql("({a}.agent_id IS NULL OR {a}.agent_id = ?)", (flt.agent_id,)))
    if flt.slot_prefix is not None:
        out.append(Sql("substr({a}.slot_key, 1, length(?)) = ?", (flt.slot_prefix,) * 2))
    if not flt.include_expired and flt.now is not None:
        out.append(Sql("({a}.expires_at IS NULL OR {a}.expires_at > ?)", (flt.now,)))
    if not flt.include_superseded and flt.as_of is None:
        out.append(Sql("{a}.superseded_by IS NULL"))
    elif not flt.include_superseded:
        out.append(Sql(_SUPERSEDED_AS_OF, (flt.as_of, flt.as_of)))
    if flt.as_of is not None:
        out.append(
            Sql(
                "(COALESCE({a}.valid_from, {a}.created_at) <= ? AND "
                "({a}.valid_to IS NULL OR {a}.valid_to > ?))",
                (flt.as_of, flt.as_of),
            )
        )
    if flt.pinned is not None:
        out.append(Sql("{a}.pinned = ?", (bool(flt.pinned),)))
    if flt.created_after is not None:
        out.append(Sql("{a}.created_at >= ?", (flt.created_after,)))
    if flt.created_before is not None:
        out.append(Sql("{a}.created_at < ?", (flt.created_before,)))
    if flt.exclude_ids:
        out.append(AnyOf("id", tuple(flt.exclude_ids), negate=True))
    if flt.by_agent is not None:
        agent = flt.by_agent
        out.append(Sql("({a}.agent_id = ? OR {a}.namespace = ?)", (agent, f"agent:{agent}")))
    if flt.metadata is not None:
        out.append(Meta(flt.metadata))
    if flt.session_id is not None:
        out.append(Sql("{a}.session_id = ?", (flt.session_id,)))
    if flt.written_by is not None:
        out.append(Sql(_WRITTEN_BY, (flt.written_by,)))
    return out


def by_agent(record: MemoryRecord, agent: str) -> bool:
    """Whether ``record`` is that agent's (the meaning of ``MemoryFilter.by_agent``)."""
    return record.agent_id == agent or record.namespace == f"agent:{agent}"
