"""Reads: get, list, history, search (docs/design.md, section 3)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from .. import tracing
from .. import validation as check
from ..clock import as_utc
from ..errors import NotFoundError, ValidationError
from ..graph.threads import ThreadMark
from ..record import MemoryRecord, SearchHit, Version, normalise_type, resolve_intent
from ..retrieval import pipeline
from ..retrieval.profiles import Candidate, SearchProfile, get_profile
from ..write.statements import embedding_text
from .gate import Gate, now_of
from .parts import Parts


class Reads:
    """The read path: what a principal may see, ranked or listed."""

    def __init__(self, parts: Parts, gate: Gate) -> None:
        self.parts = parts
        self.gate = gate

    def get(
        self, memory_id: str, *, now: datetime | str | None = None, touch: bool = True
    ) -> MemoryRecord:
        """Open one memory (also an expired one); counts as a recall."""
        record = self.gate.visible(memory_id)
        if touch:
            self.gate.touch([record], now_of(now))
        return record

    def history(self, memory_id: str) -> builtins.list[Version]:
        """Every version of a memory, oldest first (a deleted memory keeps its tombstone)."""
        if self.gate.exists(memory_id):
            self.gate.visible(memory_id)
        versions = self.gate.versions(memory_id)
        if not versions:
            raise NotFoundError(memory_id)
        if versions[-1].op == "delete":  # a tombstone keeps only where the memory lived
            namespace = versions[-1].changes.get("namespace", [None])[0]
            if namespace is None or not self.gate.can_read(namespace):
                raise NotFoundError(memory_id)
        return versions

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        type: str | Sequence[str] | None = None,  # noqa: A002
        kind: str | None = None,
        tags: Sequence[str] | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = True,
        as_of: datetime | str | None = None,
        filters: Mapping[str, Any] | None = None,
        now: datetime | str | None = None,
    ) -> builtins.list[MemoryRecord]:
        """Memories in scope, newest first (expired and superseded ones only on request).
        ``limit``: 100 by default, at most ``LIST_MAX_LIMIT`` (page on with ``offset``).
        ``as_of``: only memories that held then (``valid_from <= as_of < valid_to``), as
        in :meth:`search`. ``filters``: on metadata, as in :meth:`search`."""
        if limit is None:
            limit = min(100, self.parts.settings.list_max_limit)
        limit = check.page_limit(limit, self.parts.settings)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError("offset", "must be a whole number >= 0")
        flt = self.gate.read_filter(
            user_id=user_id, agent_id=agent_id, namespace=namespace, now=now_of(now),
            types=_types(type), kinds=[check.kind(kind)] if kind else None,
            tags=check.tags(tags, self.parts.settings) or None,
            include_expired=include_expired, include_superseded=include_superseded,
            as_of=as_utc(as_of, "as_of"), filters=filters,
        )  # fmt: skip
        return self.gate.list_memories(flt, limit=limit, offset=offset, newest_first=newest_first)

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        limit: int | None = None,
        profile: str | SearchProfile | None = None,
        type: str | Sequence[str] | None = None,  # noqa: A002
        kind: str | None = None,
        tags: Sequence[str] | None = None,
        path_hint: str | None = None,
        repo: str | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
        as_of: datetime | str | None = None,
        now: datetime | str | None = None,
        include_trace: bool = False,
        intent: str | None = None,
        tier: str | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
    ) -> builtins.list[SearchHit]:
        """The memories that best answer ``query``, best first (docs/design.md, section 3).

        ``filters``: only memories whose metadata passes them (equality, ``in``,
        ``ne``, ranges on numbers and dates, ``contains``, ``AND``/``OR``/``NOT``: see
        :mod:`memchentic.metadata_filter`). ``threshold``: only hits whose meaning is at
        least this close to the query (cosine, 0..1), after ranking."""
        text = check.query(query, self.parts.settings)
        floor = None if threshold is None else check.unit_interval(threshold, "threshold")
        count = check.limit(limit, self.parts.settings)
        chosen = get_profile(profile or self.parts.settings.search_profile)
        read_intent = resolve_intent(intent, tier)
        when = now_of(now)
        flt = self.gate.read_filter(
            user_id=user_id, agent_id=agent_id, namespace=namespace, now=when,
            types=_types(type), kinds=[check.kind(kind)] if kind else None,
            tags=check.tags(tags, self.parts.settings) or None,
            path_hint=check.optional_text(path_hint, "path_hint"),
            repo=check.optional_text(repo, "repo"), include_expired=include_expired,
            include_superseded=True, as_of=as_utc(as_of, "as_of"), filters=filters,
        )  # fmt: skip
        if flt.namespaces == []:
            return []
        with tracing.span("memchentic.search.embed"):
            vector = self.parts.embedder.embed(embedding_text(text))
        req = pipeline.SearchRequest(
            text,
            vector,
            flt,
            count,
            chosen,
            when,
            flt.path_hint,
        )
        ranked = self.gate.rank(req)
        if floor is not None:
            ranked = [c for c in ranked if c.cosine >= floor]
        if not include_superseded:  # a superseded hit stands for the tip of its chain
            shown = replace(flt, include_superseded=False)
            with tracing.span("memchentic.search.supersession"):
                ranked = self.gate.follow(ranked, _memory_of, _with_tip, shown, when)
        with tracing.span("memchentic.search.threads"):  # newest of an attribute first
            ranked, marks = self.gate.threads(
                ranked, _memory_of, _standing_for, replace(flt, include_superseded=False), when
            )
            ranked = _thread_scores(ranked, marks)[:count]
        if include_trace:  # the trace says which hits replaced other memories
            for c in ranked:
                c.trace["supersedes"] = float(self.gate.replaced(c.memory))
        self.gate.emit(
            "memory.searched", namespace=self.gate.own_namespace, results=len(ranked),
            along=lambda: self.gate.touch([c.memory for c in ranked], when),
        )  # fmt: skip
        return [
            SearchHit(c.memory, c.score, c.memory.text(read_intent),
                      dict(c.trace) if include_trace else None,
                      marks[c.memory.id].to_dict() if c.memory.id in marks else None)
            for c in ranked
        ]  # fmt: skip


def _memory_of(cand: Candidate) -> MemoryRecord:
    return cand.memory


def _with_tip(cand: Candidate, tip: MemoryRecord, hops: int) -> Candidate:
    cand.memory = tip
    cand.trace["superseded_hops"] = float(hops)
    return cand


def _standing_for(cand: Candidate, record: MemoryRecord) -> Candidate:
    """A thread's newer member brought into the list, in the place of ``cand``."""
    return Candidate(record, cosine=cand.cosine, score=cand.score,
                     trace={**cand.trace, "thread_pulled": 1.0})  # fmt: skip


def _thread_scores(ranked: list[Candidate], marks: Mapping[str, ThreadMark]) -> list[Candidate]:
    """Scores follow the thread order: a thread's current member takes the best score
    its members had, the earlier ones the next, newest first (each keeps its own in
    ``pre_thread_score``), so the list stays ordered by score."""
    by_id = {c.memory.id: c for c in ranked}
    for memory_id, mark in marks.items():
        if mark.role != "current":
            continue
        members = [by_id[i] for i in (memory_id, *mark.others)]
        scores = sorted((c.score for c in members), reverse=True)
        for cand, score in zip(members, scores, strict=True):
            cand.trace["pre_thread_score"] = cand.score
            cand.trace["thread"] = 1.0 if cand is members[0] else -1.0
            cand.trace["thread_sure"] = mark.sure
            cand.score = score
    return ranked


def _types(value: str | Sequence[str] | None) -> builtins.list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    return [normalise_type(v) for v in values]
