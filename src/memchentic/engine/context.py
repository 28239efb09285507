"""Building a :class:`~memchentic.context.model.Context` (docs/design.md, section 7).

Every section is collected through the caller's :class:`~memchentic.engine.gate.Gate`
(its read filter for listed sections, the caller's turn namespace for turns) and
the access-checked operations (``search`` for the query, ``neighbors`` for the
graph), so a context holds only what the caller could read one memory at a time.

1. The stable part, listed without the query and sorted by ``(created_at, id)``:
   instructions, profile, goals, pinned.
2. The session part: working memory of the session, its summary, its last turns.
3. One search for the query (``CONTEXT_SEARCH_LIMIT`` hits), each hit sorted into
   a section by its type (``sections.TYPE_SECTIONS``); the graph neighbours of the
   best ``CONTEXT_GRAPH_SEEDS`` hits make the graph relations.
4. With a budget, items are kept in ``KEEP_ORDER`` (then by score) while the
   rendered block still fits; an item that does not fit is dropped whole. A hit
   longer than ``CONTEXT_EXCERPT_OVER_CHARS`` is offered as its best passage (an
   excerpt that names its memory, ``context.excerpts``), and a hit that repeats a
   shown hit of its session (``CONTEXT_DUPLICATE_COSINE``) is left out.
5. Links: the edges between the memories that were kept.
6. With room left, excerpts are shown whole again, best first, while the block fits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from .. import tracing
from .. import validation as check
from ..clock import as_utc
from ..context.excerpts import (
    ExcerptBudget,
    best_window,
    excerpt_text,
    informative,
    near_duplicates,
)
from ..context.model import Context, ContextItem, Section, one_line, render_sections
from ..context.sections import (
    GOAL_TYPES,
    INSTRUCTION_TYPES,
    KEEP_ORDER,
    LISTED_TYPES,
    PREFERENCE_TYPES,
    PROFILE_SLOT_PREFIX,
    SECTIONS,
    STABLE_SECTIONS,
    section_for_hit,
    session_summary_slot,
)
from ..context.tokens import TokenCounter, get_counter
from ..errors import ValidationError
from ..graph.threads import stated_at
from ..record import MemoryRecord, SearchHit, Turn
from ..reports import Neighbour
from ..retrieval.cues import speaker_of
from ..retrieval.rerank import QueryCues, doc_text, local_idf, query_cues
from .gate import Gate, now_of
from .parts import Parts
from .sessions import resolve_session_id, session_working, turn_read_namespace

if TYPE_CHECKING:
    from ..settings import Settings
    from ..store.base import MemoryFilter

#: Characters (at most) of each end's text a link line quotes, cut at a word boundary.
LINK_SNIPPET_CHARS = 48
#: Neighbours taken from each graph seed.
NEIGHBOURS_PER_SEED = 5
#: A neighbour's score: its seed's score times this, divided by its depth.
NEIGHBOUR_DISCOUNT = 0.5


def _whole(value: object, field: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(field, f"must be a whole number >= {minimum}")
    return value


class ContextOps:
    """Prompt context: the stable part, the session part, searched memories (docs/design.md,
    section 7). ``search``: the read path's; ``neighbors``: the graph's, or None
    (then a context has no graph relations)."""

    def __init__(
        self,
        parts: Parts,
        gate: Gate,
        *,
        search: Callable[..., list[SearchHit]],
        neighbors: Callable[..., list[Neighbour]] | None = None,
    ) -> None:
        self.parts = parts
        self.gate = gate
        self.search = search
        self.neighbors = neighbors

    def context(
        self,
        query: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        namespace: str | None = None,
        budget_tokens: int | None = None,
        limit: int | None = None,
        recent_turns: int | None = None,
        as_of: datetime | str | None = None,
        now: datetime | str | None = None,
    ) -> Context:
        """A block of memory for a prompt: up to sixteen sections, the stable part
        (instructions, profile, goals, pinned) first and byte-identical between calls
        while its memories do not change (see docs/context.md).

        :param query: what the prompt is about; relevant facts, episodes, knowledge and
            the rest come from one search for it (None or "": stable and session parts only).
        :param session_id: the session whose working memory, summary and recent turns
            are shown; default ``default:<user_id>``. It never filters the search.
        :param budget_tokens: keep the most important items whose rendered block fits;
            the others are listed in ``ctx.dropped``.
        :param limit: search hits to sort into sections (``CONTEXT_SEARCH_LIMIT``).
        :param recent_turns: turns of the session to show (``CONTEXT_RECENT_TURNS``).
        :param as_of: only memories that held then (``valid_from <= as_of < valid_to``),
            in every section, as in ``search``; turns are shown as they are.
        """
        if query is not None and not isinstance(query, str):
            raise ValidationError("query", "must be a string")
        if query is not None and query.strip():
            query = check.query(query, self.parts.settings)  # the rules of search
        req = Request(
            query, user_id, agent_id, namespace, session_id,
            budget_tokens=_whole(budget_tokens, "budget_tokens", 1),
            search_limit=_whole(limit, "limit", 1),
            recent_turns=_whole(recent_turns, "recent_turns", 0),
            as_of=as_utc(as_of, "as_of"),
        )  # fmt: skip
        return build(self, req, now_of(now))

    build_context = context


@dataclass(slots=True)
class Request:
    """What a context is asked for; the scope follows the rules of ``search``."""

    query: str | None
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    session_id: str | None = None
    budget_tokens: int | None = None
    search_limit: int | None = None
    recent_turns: int | None = None
    #: Only memories that held at this time (``valid_from <= as_of < valid_to``).
    as_of: datetime | None = None


@dataclass(slots=True)
class _Collected:
    items: dict[str, list[ContextItem]] = field(default_factory=dict)
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    listed: list[MemoryRecord] = field(default_factory=list)
    #: Memory id -> its whole item, for the hits offered as an excerpt.
    whole: dict[str, ContextItem] = field(default_factory=dict)
    #: Memory id -> the better hits of its session it nearly repeats.
    twins: dict[str, list[str]] = field(default_factory=dict)

    def add(self, section: str, item: ContextItem, record: MemoryRecord | None = None) -> None:
        self.items.setdefault(section, []).append(item)
        if record is not None:
            self.records[record.id] = record

    def taken(self, memory_id: str) -> bool:
        return memory_id in self.records


def build(mem: ContextOps, req: Request, now: datetime) -> Context:
    """Collect, fit to the budget, link, and announce a context."""
    s = mem.parts.settings
    counter = get_counter(s.context_tokenizer)
    sid = resolve_session_id(mem.gate, req.session_id, req.user_id)
    flt = mem.gate.read_filter(user_id=req.user_id, agent_id=req.agent_id,
                           namespace=req.namespace, now=now, as_of=req.as_of)  # fmt: skip
    got = _Collected()
    with tracing.span("memchentic.context.collect"):
        if flt.namespaces != []:
            _stable(mem, flt, got)
            _session_memories(mem, flt, sid, got)
        _turns(mem, req, sid, got)
        if flt.namespaces != [] and req.query is not None and req.query.strip():
            _searched(mem, req, flt, now, got)  # a search: its own span, inside this one
    _newest_first(got.items)
    with tracing.span("memchentic.context.fit") as span:
        kept, dropped = _fit(got.items, req.budget_tokens, counter, twins=got.twins)
        kept_ids = {i.id for items in kept.values() for i in items if i.source == "memory"}
        links = _links(mem, [r for r in got.records.values() if r.id in kept_ids])
        if links:
            more, gone = _fit({"links": links}, req.budget_tokens, counter, kept)
            kept, dropped = more, dropped + gone
        if got.whole and req.budget_tokens is not None:
            _widen(kept, got.whole, req.budget_tokens, counter)
        span.set_attribute("memchentic.dropped", len(dropped))
    sections = [Section(spec.name, spec.title, spec.stable, kept.get(spec.name, []))
                for spec in SECTIONS]  # fmt: skip
    ctx = Context(req.query, sid, sections, dropped, req.budget_tokens, counter.name)
    ctx.tokens = counter.count(str(ctx))
    mem.gate.touch([r for r in got.listed if r.id in kept_ids], now)
    mem.gate.emit(
        "context.built", namespace=mem.gate.own_namespace, session_id=sid,
        items=len(ctx.items), dropped=len(dropped), tokens=ctx.tokens,
        budget_tokens=req.budget_tokens,
    )  # fmt: skip
    return ctx


# --- collecting ---------------------------------------------------------------------------


def _sorted(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """Deterministic, clock-free order of the stable part: creation time, then id."""
    return sorted(records, key=lambda r: (r.created_at.isoformat() if r.created_at else "", r.id))


def _listed(
    mem: ContextOps, flt: MemoryFilter, *, types: Sequence[str] | None = None,
    slot_prefix: str | None = None, pinned: bool | None = None, limit: int | None = None,
) -> list[MemoryRecord]:  # fmt: skip
    narrowed = _narrow(flt, types=types, slot_prefix=slot_prefix, pinned=pinned)
    count = limit or mem.parts.settings.context_section_limit
    return mem.gate.list_memories(narrowed, limit=count, newest_first=True)


def _narrow(
    flt: MemoryFilter,
    *,
    types: Sequence[str] | None = None,
    slot_prefix: str | None = None,
    pinned: bool | None = None,
) -> MemoryFilter:
    """A copy of the caller's filter, narrowed further (never widened)."""
    out = replace(flt)
    if types is not None:
        out.types = list(types)
    if slot_prefix is not None:
        out.slot_prefix = slot_prefix
    if pinned is not None:
        out.pinned = pinned
    return out


def _day(at: datetime | None) -> str | None:
    """The compact date an item shows (UTC): ``2026-03-02``."""
    day = as_utc(at, "at")
    return day.date().isoformat() if day is not None else None


def _memory_item(record: MemoryRecord, section: str, score: float, text: str | None = None,
                 excerpt: bool = False) -> ContextItem:  # fmt: skip
    """A memory's line; dated (when it held, else when it was written) outside the
    stable part, which carries no times."""
    when = None if section in STABLE_SECTIONS else _day(stated_at(record))
    return ContextItem(record.id, text or record.text(), score, section, "memory", record.type,
                       excerpt, when)  # fmt: skip


def _stable(mem: ContextOps, flt: MemoryFilter, got: _Collected) -> None:
    """Instructions, profile, goals, pinned: independent of the query and the clock
    (scores are importance, which only a write changes)."""
    profile = {r.id: r for r in _listed(mem, flt, slot_prefix=PROFILE_SLOT_PREFIX)}
    for r in _listed(mem, flt, types=PREFERENCE_TYPES):
        profile.setdefault(r.id, r)
    groups = [
        ("instructions", _listed(mem, flt, types=INSTRUCTION_TYPES)),
        ("profile", list(profile.values())),
        ("goals", _listed(mem, flt, types=GOAL_TYPES)),
        ("pinned", _listed(mem, flt, pinned=True)),
    ]
    for section, records in groups:
        for record in _sorted(records):
            if got.taken(record.id):
                continue
            got.add(section, _memory_item(record, section, record.importance), record)
            got.listed.append(record)


def _session_memories(mem: ContextOps, flt: MemoryFilter, sid: str, got: _Collected) -> None:
    """The session's working memory and its summary (one per namespace)."""
    own = mem.gate.own_namespace
    limit = mem.parts.settings.context_section_limit
    working = session_working(mem.gate, flt, sid, limit, own)
    for record in _sorted(working):
        if not got.taken(record.id):
            got.add("working_memory", _memory_item(record, "working_memory", record.importance),
                    record)  # fmt: skip
            got.listed.append(record)
    slot = session_summary_slot(sid)
    for record in _sorted(_listed(mem, flt, slot_prefix=slot, limit=10)):
        if record.slot_key == slot and not got.taken(record.id):
            got.add("session_summary", _memory_item(record, "session_summary", 1.0), record)
            got.listed.append(record)


def _turns(mem: ContextOps, req: Request, sid: str, got: _Collected) -> None:
    count = (
        mem.parts.settings.context_recent_turns if req.recent_turns is None else req.recent_turns
    )
    if count <= 0:
        return
    visible, ns = turn_read_namespace(mem.gate, req.user_id, req.agent_id, req.namespace)
    turns: list[Turn] = mem.gate.turns(sid, namespace=ns, limit=count) if visible else []
    for i, turn in enumerate(turns):
        item = ContextItem(turn.id, f"{turn.role}: {turn.content}", (i + 1) / len(turns),
                           "recent_turns", "turn", turn.role, when=_day(turn.at))  # fmt: skip
        got.add("recent_turns", item)


def _searched(mem: ContextOps, req: Request, flt: MemoryFilter, now: datetime, got: _Collected
              ) -> None:  # fmt: skip
    """One search; each hit to its section by type; neighbours of the best hits."""
    assert req.query is not None
    limit = req.search_limit or _search_limit(mem.parts.settings, req.budget_tokens)
    hits = mem.search(req.query, user_id=req.user_id, agent_id=req.agent_id,
                      namespace=req.namespace, limit=limit, as_of=req.as_of,
                      now=now)  # fmt: skip
    seeds: list[tuple[MemoryRecord, float]] = []
    s = mem.parts.settings
    hits = [h for h in hits if not got.taken(h.memory.id) and h.memory.type not in LISTED_TYPES]
    long = s.context_excerpt_over_chars
    cut = req.budget_tokens is not None and 0 < long < max((len(h.text) for h in hits), default=0)
    cues = _cues(req.query, hits) if cut else None
    budget = ExcerptBudget()  # the excerpts' work, for the whole call (best hits first)
    stated = {h.memory.id: stated_at(h.memory) for h in hits}
    for hit in hits:
        record = hit.memory
        section = section_for_hit(record.type, record.slot_key)
        item = _memory_item(record, section, hit.score, hit.text)
        if hit.thread is not None and hit.thread.get("role") == "earlier":
            current = next(iter(hit.thread.get("others") or ()), "")
            item = replace(item, earlier=_day(stated.get(str(current))) or "")
        if cues is not None and len(hit.text) > long:
            window = best_window(hit.text, cues, s.context_excerpt_chars, budget)
            said = speaker_of(record.content, record.metadata)
            got.whole[record.id] = item
            item = replace(item, text=excerpt_text(hit.text, window, record.id, said),
                           excerpt=True)  # fmt: skip
        got.add(section, item, record)
        if len(seeds) < s.context_graph_seeds:
            seeds.append((record, hit.score))
    if s.context_duplicate_cosine > 0 and len(hits) > 1:
        ids = [h.memory.id for h in hits]
        sessions = {h.memory.id: h.memory.session_id for h in hits}
        got.twins = near_duplicates(ids, sessions, mem.gate.vectors(ids),
                                    s.context_duplicate_cosine)  # fmt: skip
    neighbors = mem.neighbors
    if neighbors is None:  # the graph is optional: no neighbours, no graph relations
        return
    for seed, score in seeds:
        for found in neighbors(seed.id, 1, limit=NEIGHBOURS_PER_SEED):
            record = found.memory
            if got.taken(record.id) or not _in_scope(record, flt, now):
                continue
            via = found.via.partition(":")[2] or found.via
            how = f"shares {via}" if found.via.startswith("entity:") else via
            text = f"{record.text()} ({how}: {_snippet(seed.text())})"
            item = _memory_item(record, "graph_relations",
                                score * NEIGHBOUR_DISCOUNT / found.depth, text)  # fmt: skip
            got.add("graph_relations", item, record)


def _newest_first(items: dict[str, list[ContextItem]]) -> None:
    """The dated sections newest first (one date line a run), the same date in the
    order collected; recent turns stay in the order they were said."""
    for name, section in items.items():
        if name != "recent_turns":
            section.sort(key=lambda item: item.when or "", reverse=True)  # stable


def _search_limit(s: Settings, budget: int | None) -> int:
    """``CONTEXT_SEARCH_LIMIT`` hits, or enough to fill the budget at
    ``CONTEXT_FILL_TOKENS_PER_HIT`` tokens a hit (at most ``SEARCH_MAX_LIMIT``)."""
    per_hit = s.context_fill_tokens_per_hit
    if budget is None or per_hit <= 0:
        return s.context_search_limit
    return max(s.context_search_limit, min(-(-budget // per_hit), s.search_max_limit))


def _cues(query: str, hits: Sequence[SearchHit]) -> QueryCues:
    """The query's words, each weighing its IDF among the hits (what tells them apart);
    the :func:`~memchentic.context.excerpts.informative` ones only."""
    cues = query_cues(query)
    docs = [doc_text(h.text) for h in hits]
    return informative(replace(cues, weights=local_idf(cues.terms, docs)))


def _in_scope(record: MemoryRecord, flt: MemoryFilter, now: datetime) -> bool:
    """A neighbour must be in the context's scope, live, current, and not listed elsewhere."""
    if flt.namespaces is not None and record.namespace not in flt.namespaces:
        return False
    if flt.agent_id is not None and record.agent_id not in (None, flt.agent_id):
        return False
    if record.is_expired(now) or record.superseded_by is not None:
        return False
    if flt.as_of is not None and not record.held_at(flt.as_of):
        return False
    return record.type not in LISTED_TYPES


def _snippet(text: str) -> str:
    flat = one_line(text)
    if len(flat) <= LINK_SNIPPET_CHARS:
        return flat
    cut = flat[: LINK_SNIPPET_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


def _links(mem: ContextOps, records: Sequence[MemoryRecord]) -> list[ContextItem]:
    """Edges between memories of the context, as ``"source" kind "target"`` lines."""
    by_id = {r.id: r for r in records}
    seen: set[str] = set()
    items: list[ContextItem] = []
    for record in _sorted(records):
        for edge in mem.gate.edges(record.id):
            if edge.id in seen or edge.source not in by_id or edge.target not in by_id:
                continue
            seen.add(edge.id)
            kind = edge.kind.replace("_", " ")
            text = (f'"{_snippet(by_id[edge.source].text())}" {kind} '
                    f'"{_snippet(by_id[edge.target].text())}"')  # fmt: skip
            items.append(ContextItem(edge.id, text, edge.strength, "links", "edge", edge.kind))
    return items


# --- the budget ---------------------------------------------------------------------------


def _render(kept: dict[str, list[ContextItem]]) -> str:
    return render_sections(
        Section(spec.name, spec.title, spec.stable, kept.get(spec.name, [])) for spec in SECTIONS
    )


def _fit(
    items: dict[str, list[ContextItem]],
    budget: int | None,
    counter: TokenCounter,
    already: dict[str, list[ContextItem]] | None = None,
    *,
    twins: dict[str, list[str]] | None = None,
) -> tuple[dict[str, list[ContextItem]], list[ContextItem]]:
    """Keep the most important items whose rendered block fits ``budget`` tokens.

    Items are tried in ``KEEP_ORDER``, best score first; each stays only if the
    whole block (headings and separators included) still fits, so nothing is cut
    in half and a smaller, less important item may still fit after a large one was
    dropped. An item whose near-identical twin (``twins``: id -> better ids) is
    already kept is left out, with or without a budget. Within a section, kept
    items keep their collected order. Returns the kept items by section and the
    dropped ones, in the order they were tried."""
    kept = {name: list(v) for name, v in (already or {}).items()}
    twins = twins or {}
    order = {name: i for i, name in enumerate(KEEP_ORDER)}
    positions = {id(item): n for v in items.values() for n, item in enumerate(v)}
    candidates = sorted(
        (item for v in items.values() for item in v),
        key=lambda it: (order[it.section], -it.score, positions[id(it)]),
    )
    shown = {i.id for v in kept.values() for i in v}
    dropped: list[ContextItem] = []
    if budget is None or counter.count(_render(_merged(kept, items))) <= budget:
        for item in candidates:  # everything fits: only repeats are left out
            if any(t in shown for t in twins.get(item.id, ())):
                dropped.append(item)
            else:
                shown.add(item.id)
        gone = {id(item) for item in dropped}
        every = _merged(kept, items)
        return {n: [i for i in v if id(i) not in gone] for n, v in every.items()}, dropped
    start = {name: list(v) for name, v in kept.items()}
    out = _greedy(kept, candidates, positions, twins, shown, budget, counter, bounded=True)
    if counter.count(_render(out[0])) <= budget:
        return out
    # A bound was wrong (a merge across a line break that cost tokens): fit again,
    # counting the whole block at every try.
    shown = {i.id for v in start.values() for i in v}
    return _greedy(start, candidates, positions, twins, shown, budget, counter, bounded=False)


def _greedy(
    kept: dict[str, list[ContextItem]],
    candidates: Sequence[ContextItem],
    positions: dict[int, int],
    twins: dict[str, list[str]],
    shown: set[str],
    budget: int,
    counter: TokenCounter,
    *,
    bounded: bool,
) -> tuple[dict[str, list[ContextItem]], list[ContextItem]]:
    """:func:`_fit`'s loop. With ``bounded``, an item is kept without counting the
    whole block when the tokens kept so far plus its line's own (and its heading's,
    in a new section) plus ``_SLACK`` fit: the block cannot be larger, so the
    decision is the one the whole count would make, without its cost; otherwise
    (and for every try without ``bounded``) the whole block is counted."""
    titles = {spec.name: spec.title for spec in SECTIONS}
    used = counter.count(_render(kept))
    dropped: list[ContextItem] = []
    for item in candidates:
        if any(t in shown for t in twins.get(item.id, ())):
            dropped.append(item)
            continue
        section = kept.setdefault(item.section, [])
        trial = sorted([*section, item], key=lambda it: positions.get(id(it), -1))
        kept[item.section] = trial
        if bounded:  # at most: its line, a date line, a heading
            grows = counter.count(item.line()) + _SLACK
            if item.when is not None:
                grows += counter.count(f"[{item.when}]") + _SLACK
            if not section:
                grows += counter.count(f"## {titles[item.section]}") + _SLACK
            if used + grows <= budget:
                used += grows
                shown.add(item.id)
                continue
        count = counter.count(_render(kept))
        if count <= budget:
            used = count
            shown.add(item.id)
            continue
        kept[item.section] = section
        dropped.append(item)
    return kept, dropped


def _widen(
    kept: dict[str, list[ContextItem]],
    whole: dict[str, ContextItem],
    budget: int,
    counter: TokenCounter,
) -> None:
    """Show kept excerpts whole again (``whole``: id -> the whole item), in keep
    order and best first, each while the block still fits ``budget``. One whose
    whole line is clearly longer than the room left (by more than ``_SLACK``
    tokens, counted alone) is not tried: most long memories are far too long."""
    order = {name: i for i, name in enumerate(KEEP_ORDER)}
    shown = sorted(
        (item for v in kept.values() for item in v if item.excerpt and item.id in whole),
        key=lambda it: (order[it.section], -it.score),
    )
    room = budget - counter.count(_render(kept))
    for item in shown:
        grows = counter.count(whole[item.id].line()) - counter.count(item.line())
        if grows > room + _SLACK:
            continue
        section = kept[item.section]
        at = section.index(item)
        section[at] = whole[item.id]
        used = counter.count(_render(kept))
        if used > budget:
            section[at] = item
        else:
            room = budget - used


#: Tokens a line may take fewer of inside the block than alone (tokens that merge
#: across a line break); :func:`_widen` tries a whole text that may be this close.
_SLACK = 4


def _merged(
    a: dict[str, list[ContextItem]], b: dict[str, list[ContextItem]]
) -> dict[str, list[ContextItem]]:
    return {name: [*a.get(name, []), *b.get(name, [])] for name in {*a, *b}}
