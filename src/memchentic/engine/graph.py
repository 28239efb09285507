"""The graph service: edges, entities, neighbourhoods, recall by entity,
consolidation (:mod:`memchentic.graph.consolidate`) and the question-answering
path ``ask`` (:mod:`memchentic.graph.ask`)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from .. import validation as check
from ..clock import as_utc, utcnow
from ..errors import ForbiddenError, NotFoundError, ValidationError
from ..graph.ask import MAX_PASSAGES, NO_ANSWER, SYSTEM_PROMPT, is_evidence
from ..graph.consolidate import strength_order
from ..ids import new_id
from ..lifetime import decayed_confidence
from ..llm import ChatClient
from ..record import EDGE_KINDS, Edge, MemoryRecord, SearchHit
from ..reports import Answer, ConsolidationReport, Neighbour, Passage
from ..store.base import MemoryFilter
from ..write.resolve import diff, record_version
from ..write.secrets import police_value
from .gate import Gate, now_of
from .parts import Parts
from .quotas import check_revival

#: Deepest neighbourhood ``neighbors`` explores.
MAX_DEPTH = 3


class Graph:
    """Edges, entities, neighbourhoods, recall by entity, consolidation and ``ask``.
    ``search``: the read path's (``ask`` starts from its hits)."""

    def __init__(self, parts: Parts, gate: Gate, *, search: Callable[..., list[SearchHit]]
                 ) -> None:  # fmt: skip
        self.parts = parts
        self.gate = gate
        self.search = search

    def relate(
        self,
        source: str,
        target: str,
        kind: str,
        strength: float = 1.0,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> Edge:
        """Add a typed, weighted edge ``source -> target`` (both must be writable by the
        caller). A ``supersedes`` edge hides ``target`` from reads; cycles are refused."""
        if kind not in EDGE_KINDS:
            raise ValidationError("kind", f"must be one of {', '.join(EDGE_KINDS)}")
        weight = check.unit_interval(strength, "strength")
        if source == target:
            raise ValidationError("target", "an edge cannot point at its own source")
        now = utcnow()
        meta = police_value(check.metadata(metadata, self.parts.settings),
                            self.parts.settings.secret_policy, "metadata")  # fmt: skip
        with self.gate.write():
            src = self.gate.writable(source)
            dst = self.gate.writable(target)
            if kind == "supersedes":
                self.gate.check_no_cycle(source, target)
            edge = Edge(new_id(), source, target, kind, weight, now, meta)
            self.gate.add_edge(edge)
        for end in (src, dst) if dst.namespace != src.namespace else (src,):
            self.gate.emit(
                "memory.updated", namespace=end.namespace, memory_id=end.id, edge=edge.id,
                kind=kind,
            )  # fmt: skip
        return edge

    def edges(self, memory_id: str, *, kind: str | None = None) -> builtins.list[Edge]:
        """Edges from or to a memory (only those whose other end the caller can see)."""
        if kind is not None and kind not in EDGE_KINDS:
            raise ValidationError("kind", f"must be one of {', '.join(EDGE_KINDS)}")
        self.gate.visible(memory_id)
        out = []
        for edge in self.gate.edges(memory_id, kind=kind):
            other = edge.target if edge.source == memory_id else edge.source
            if self.gate.readable(other) is not None:
                out.append(edge)
        return out

    def delete_edge(self, edge_id: str) -> bool:
        """Remove an edge (the caller must be able to write both ends). Removing a
        ``supersedes`` edge brings the older memory back into reads (a working
        memory within ``WORKING_MEMORY_MAX_PER_IDENTITY``, as ``restore``)."""
        check.identifier(edge_id, "edge_id")
        with self.gate.write():
            edge = self.gate.get_edge(edge_id)
            if edge is None:
                return False
            try:  # both ends seen before either is judged writable
                source, target = self.gate.visible(edge.source), self.gate.visible(edge.target)
            except NotFoundError:
                return False  # an edge into an invisible namespace does not exist for you
            for end in (source, target):
                if not self.gate.can_write(end.namespace, end.type):
                    raise ForbiddenError(end.id)
            if edge.kind == "supersedes" and target.superseded_by == source.id:
                check_revival(self.gate, target, replace(target, superseded_by=None), utcnow())
            return self.gate.delete_edge(edge_id)

    # --- entities and neighbourhoods --------------------------------------------------
    def recall(
        self,
        *,
        entity: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        limit: int | None = None,
        as_of: datetime | str | None = None,
        now: datetime | str | None = None,
    ) -> builtins.list[SearchHit]:
        """Memories naming ``entity``, across every readable namespace, newest first;
        each hit's score is its decayed confidence (it does not drive the order).
        A superseded memory stands for the tip of its chain. ``as_of``: only memories
        that held then (``valid_from <= as_of < valid_to``), as in ``search``."""
        check.identifier(entity, "entity")
        when = now_of(now)
        flt = self.gate.read_filter(
            user_id=user_id, agent_id=agent_id, namespace=namespace, now=when,
            include_superseded=True, as_of=as_utc(as_of, "as_of"),
        )  # fmt: skip
        if flt.namespaces == []:
            return []
        found = self.gate.by_entity(entity, flt, limit=check.limit(limit, self.parts.settings))
        shown = replace(flt, include_superseded=False)
        records = self.gate.follow(found, lambda r: r, lambda _r, tip, _hops: tip, shown, when)
        records.sort(key=lambda r: (r.created_at or when, r.id), reverse=True)
        half_life = self.parts.settings.memory_decay_half_life_days
        hits = []
        for record in records:
            score = decayed_confidence(record.confidence, record.created_at, when, half_life)
            hits.append(SearchHit(record, score, record.text(), {"decayed_confidence": score}))
        self.gate.touch(records, when)
        return hits

    def entities(
        self,
        *,
        user_id: str | None = None,
        namespace: str | None = None,
        by_namespace: bool = False,
    ) -> dict[str, Any]:
        """Entity names with how many visible memories name them; with
        ``by_namespace=True``, ``{name: {namespace: count}}``."""
        flt = self.gate.read_filter(
            user_id=user_id, agent_id=None, namespace=namespace, now=utcnow()
        )
        if flt.namespaces == []:
            return {}
        if not by_namespace:
            return self.gate.entity_counts(flt)
        spaces = flt.namespaces or sorted(self.gate.stats(flt).by_namespace)
        out: dict[str, dict[str, int]] = {}
        for ns in spaces:
            for name, count in self.gate.entity_counts(replace(flt, namespaces=[ns])).items():
                out.setdefault(name, {})[ns] = count
        return dict(sorted(out.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))

    def neighbors(
        self, memory_id: str, depth: int = 1, *, limit: int = 50
    ) -> builtins.list[Neighbour]:
        """Memories connected to ``memory_id`` through edges and shared entities, up to
        ``depth`` hops (at most 3), nearest first; only memories the caller can see."""
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
            raise ValidationError("depth", f"must be a whole number from 1 to {MAX_DEPTH}")
        start = self.gate.visible(memory_id)
        flt = self.gate.read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
        seen = {start.id}
        frontier = [start]
        found: list[Neighbour] = []
        for level in range(1, depth + 1):
            nxt: list[MemoryRecord] = []
            for current in frontier:
                for other, via, _strength in self._adjacent(current, flt, limit):
                    if other.id in seen:
                        continue
                    seen.add(other.id)
                    found.append(Neighbour(other, level, via, current.id))
                    nxt.append(other)
            frontier = nxt
            if len(found) >= limit:
                break
        return found[:limit]

    def consolidate(
        self,
        *,
        user_id: str | None = None,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> ConsolidationReport:
        """Fold clusters of near-duplicate entries into their strongest member (see
        :mod:`memchentic.graph.consolidate`); ``dry_run=True`` reports without changing anything."""
        flt = self.gate.read_filter(
            user_id=user_id, agent_id=None, namespace=namespace, now=utcnow()
        )
        if flt.namespaces == []:
            return ConsolidationReport(dry_run)
        spaces = flt.namespaces or sorted(self.gate.stats(flt).by_namespace)
        return ConsolidationReport(
            dry_run,
            _consolidate(self, list(spaces), dry_run=dry_run),
        )

    def ask(
        self,
        question: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        namespace: str | None = None,
        limit: int = 10,
        chat: ChatClient | None = None,
    ) -> Answer:
        """Answer a question from memory (see :mod:`memchentic.graph.ask`): the search hits that are
        evidence for it (any type) plus one graph hop, ranked by their search scores,
        with citations; and an answer when a chat model is given or configured
        (``CHAT_BASE_URL``). When nothing stored matches, ``answerable`` is False, the
        answer says memory cannot answer, and nothing is cited."""
        question = check.query(question, self.parts.settings, "question")  # the caller's name
        client = chat if chat is not None else ChatClient.from_settings(self.parts.settings)
        return _ask(self, question, limit=limit, chat=client,
                   user_id=user_id, agent_id=agent_id, namespace=namespace)  # fmt: skip

    def _adjacent(
        self, record: MemoryRecord, flt: MemoryFilter, limit: int
    ) -> builtins.list[tuple[MemoryRecord, str, float]]:
        """The memories one hop from ``record`` the caller can see: (memory, via, the
        link's strength in 0..1: the edge's, or ``n / (n + 1)`` for n shared entities)."""
        out: list[tuple[MemoryRecord, str, float]] = []
        memory_id = record.id
        for edge in self.gate.edges(memory_id):
            other_id = edge.target if edge.source == memory_id else edge.source
            other = self.gate.readable(other_id)
            if other is not None:
                out.append((other, f"edge:{edge.kind}", edge.strength))
        shared = self.gate.entity_neighbours(memory_id, flt, limit=limit)
        records = self.gate.readable_many([i for i, _ in shared])
        out += [(records[i], f"entity:{names[0]}", len(names) / (len(names) + 1))
                for i, names in shared if i in records]  # fmt: skip
        return out


def _ask(mem: Graph, question: str, *, limit: int, chat: ChatClient | None, **scope: Any) -> Answer:
    hits = mem.search(question, limit=limit, include_trace=True, **scope)
    hits = [h for h in hits if is_evidence(h, mem.parts.settings.ask_min_similarity)]
    chosen: list[tuple[MemoryRecord, float, str]] = [(h.memory, h.score, "search") for h in hits]
    seen = {h.id for h in hits}
    now = now_of(None)
    flt = mem.gate.read_filter(now=now, **_scope_only(scope))
    for hit in hits:
        for other, via, strength in mem._adjacent(hit.memory, flt, limit):
            if other.id not in seen and not other.superseded_by and not other.is_expired(now):
                seen.add(other.id)
                chosen.append((other, hit.score * strength, via))
    chosen.sort(key=lambda c: -c[1])  # stable: a hop never outranks the hit it came from
    result = Answer(question)
    for index, (record, score, via) in enumerate(chosen[:MAX_PASSAGES]):
        result.passages.append(Passage(index + 1, record, score, via))
    if not result.passages:
        result.answer, result.answerable = NO_ANSWER, False
    elif chat is not None:
        listing = "\n".join(f"[{p.citation}] {p.memory.content}" for p in result.passages)
        result.answer = chat.complete([
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Passages:\n{listing}\n\nQuestion: {question}"},
        ])  # fmt: skip
    return result


def _scope_only(scope: dict[str, Any]) -> dict[str, Any]:
    return {k: scope.get(k) for k in ("user_id", "agent_id", "namespace")}


def _consolidate(mem: Graph, namespaces: list[str], *, dry_run: bool) -> list[dict[str, Any]]:
    threshold = mem.parts.settings.near_dup_threshold
    clusters: list[dict[str, Any]] = []
    for namespace in namespaces:
        if not mem.gate.can_write(namespace, "semantic"):
            continue
        for members, link in mem.gate.clusters(namespace, threshold):
            kept = max(members, key=strength_order)
            others = sorted((m for m in members if m.id != kept.id), key=lambda m: m.id)
            clusters.append({"namespace": namespace, "kept": kept.id,
                             "merged": [m.id for m in others]})  # fmt: skip
            if not dry_run:
                _merge(mem, kept, others, link)
    return clusters


def _merge(
    mem: Graph, kept: MemoryRecord, others: list[MemoryRecord], link: dict[str, float]
) -> None:
    now = utcnow()
    ctx = mem.gate.write_context(now)
    with mem.gate.write():
        merged = replace(
            kept,
            tags=list(dict.fromkeys([*kept.tags, *(t for o in others for t in o.tags)])),
            entities=list(
                dict.fromkeys([*kept.entities, *(e for o in others for e in o.entities)])
            ),
            reinforcement=kept.reinforcement + sum(o.reinforcement for o in others),
        )
        mem.gate.update(merged)
        record_version(ctx, kept.namespace, kept.id, "consolidate", diff(kept, merged))
        for other in others:
            strength = round(min(1.0, link.get(other.id, 1.0)), 4)
            mem.gate.add_edge(Edge(new_id(), kept.id, other.id, "derives_from", strength, now))
            mem.gate.add_edge(Edge(new_id(), kept.id, other.id, "supersedes", 1.0, now))
            record_version(ctx, other.namespace, other.id, "consolidated",
                           {"superseded_by": [None, kept.id]})  # fmt: skip
    mem.gate.flush(ctx, ("memory.consolidated", kept.namespace, kept.id,
                     {"merged": [o.id for o in others]}))  # fmt: skip
