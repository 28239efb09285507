"""Truth when reading: statements of one attribute form a thread, read newest first,
and the context dates what it shows (DESIGN sections 4 and 7; docs/writes.md).

Every test runs on SQLite and PostgreSQL (the ``make_mem`` fixture)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memchentic import Memory
from memchentic.record import MemoryRecord
from memchentic.write.resolvers import Decision, RuleResolver
from memchentic.write.statements import Relation, Thresholds

from .conftest import TableEmbedder

OLD = "The office wifi password rotates at the Lisbon desk."
NEW = "The office wifi password desk moved."
QUERY = "office wifi password Lisbon"
NOV, DEC, LATER = "2026-11-02T09:00:00Z", "2026-12-01T09:00:00Z", "2026-12-05T09:00:00Z"


def _threaded(make_mem: Callable[..., Memory], **kwargs: object) -> tuple[Memory, str, str]:
    """A store where OLD (held from November) matches QUERY better than NEW (held from
    December) and was written later (fresher), so the ranking alone puts it first;
    then a ``contradicts`` edge says NEW is a newer statement of OLD's attribute."""
    mem = make_mem(**kwargs)
    new = mem.add(NEW, user_id="ana", now=NOV, valid_from=DEC, permanent=True)
    old = mem.add(OLD, user_id="ana", now=DEC, valid_from=NOV, permanent=True)
    assert (old.status, new.status) == ("added", "added")
    alone = mem.search(QUERY, user_id="ana", now=LATER)
    assert [h.id for h in alone] == [old.id, new.id] and alone[0].thread is None
    mem.relate(new.id, old.id, "contradicts", strength=0.8)
    return mem, old.id, new.id


def test_the_newest_statement_of_a_thread_ranks_first(make_mem: Callable[..., Memory]) -> None:
    mem, old, new = _threaded(make_mem)
    hits = mem.search(QUERY, user_id="ana", now=LATER, include_trace=True)
    assert [h.id for h in hits] == [new, old]
    current, earlier = hits
    assert current.thread == {"role": "current", "others": [old], "rule": "relate",
                              "sure": 0.8, "pulled": False}  # fmt: skip
    assert earlier.thread is not None and earlier.thread["role"] == "earlier"
    assert earlier.thread["others"] == [new]
    # The match alone put the old one first; the scores follow the thread's order
    # and the trace keeps each one's own.
    assert current.trace and earlier.trace
    assert current.trace["pre_thread_score"] < earlier.trace["pre_thread_score"]
    assert current.score >= earlier.score
    assert current.trace["thread"] == 1.0 and earlier.trace["thread"] == -1.0
    assert current.to_dict()["thread"]["role"] == "current"


def test_a_newer_value_the_ranking_missed_is_brought_in(make_mem: Callable[..., Memory]) -> None:
    mem, old, new = _threaded(make_mem)
    hits = mem.search(QUERY, user_id="ana", now=LATER, limit=1)
    assert [h.id for h in hits] == [new]
    assert hits[0].thread is not None and hits[0].thread["pulled"] is True
    assert [h.id for h in mem.search(QUERY, user_id="ana", now=LATER, limit=2)] == [new, old]


def test_a_member_the_read_may_not_show_changes_nothing(make_mem: Callable[..., Memory]) -> None:
    mem, old, new = _threaded(make_mem)
    # A filter the newer one fails: the old one is the only statement shown, unmarked.
    only_type = mem.search(QUERY, user_id="ana", now=LATER, type="fact")
    assert only_type == []
    mem.revise(old, type="fact", now=NOV)
    hits = mem.search(QUERY, user_id="ana", now=LATER, type="fact")
    assert [h.id for h in hits] == [old] and hits[0].thread is None
    # As of a time before the newer one held, the old one is current and unmarked.
    past = mem.search(QUERY, user_id="ana", now=LATER, as_of="2026-11-15T00:00:00Z")
    assert [h.id for h in past] == [old] and past[0].thread is None


def test_another_identitys_newer_statement_is_never_shown(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem()
    old = mem.add(OLD, user_id="ana", now=NOV, permanent=True)
    theirs = mem.add(NEW, user_id="bob", now=DEC, permanent=True)
    mem.relate(theirs.id, old.id, "contradicts")  # the trusted local principal may link
    for limit in (1, 5):
        hits = mem.search(QUERY, user_id="ana", now=LATER, limit=limit)
        assert [h.id for h in hits] == [old.id]
        assert hits[0].thread is None


def test_the_context_dates_dynamic_items_and_marks_earlier_values(
    make_mem: Callable[..., Memory],
) -> None:
    mem, old, new = _threaded(make_mem)
    mem.add("Answer in Portuguese.", type="instruction", user_id="ana", now=NOV, permanent=True)
    ctx = mem.context(QUERY, user_id="ana", now=LATER)
    text = str(ctx)
    assert f"[2026-12-01]\n- {NEW}\n[2026-11-02]\n- (earlier, until 2026-12-01) {OLD}" in text
    assert text.index(NEW) < text.index(OLD)
    assert "- Answer in Portuguese." in ctx.stable_prefix  # the stable part has no dates
    again = mem.context("something else entirely", user_id="ana", now="2027-01-09T00:00:00Z")
    assert again.stable_prefix == ctx.stable_prefix
    # The client's copy renders the same block.
    from memchentic.wire import context as from_wire

    assert str(from_wire(ctx.to_dict())) == text


def test_recent_turns_carry_their_date(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem()
    mem.record_turn("user", "I booked the train.", session_id="s1", user_id="ana", now=DEC)
    ctx = mem.context(None, user_id="ana", session_id="s1", now=LATER)
    assert "## Recent turns\n[2026-12-01]\n- user: I booked the train." in str(ctx)


def test_a_budget_keeps_the_threads_order(make_mem: Callable[..., Memory]) -> None:
    mem, old, new = _threaded(make_mem)
    for n in range(6):
        mem.add(f"Filler note {n} about the office kitchen rota.", user_id="ana", now=NOV,
                permanent=True)  # fmt: skip
    ctx = mem.context(QUERY, user_id="ana", now=LATER, budget_tokens=60)
    kept = ctx.memory_ids
    assert new in kept
    if old in kept:
        assert kept.index(new) < kept.index(old)


class _Unsure(RuleResolver):
    """The rules' decision, but every added entry is an unsure newer value of its
    nearest neighbour (what the rules answer for a likely update they cannot prove)."""

    def decide(
        self,
        record: MemoryRecord,
        neighbours: Sequence[tuple[MemoryRecord, float]],
        thresholds: Thresholds,
    ) -> Decision:
        found = super().decide(record, neighbours, thresholds)
        if found.relation is not Relation.DISTINCT or not neighbours:
            return found
        return Decision(Relation.DISTINCT, rule=found.rule or "distinct:test",
                        related=neighbours[0][0], thread=0.7,
                        thread_rule="update:unsure")  # fmt: skip


_TABLE = {
    "Parking spot: level 2.": [1, 0.2, 0],
    "We leave the van in the north garage.": [1, 0.25, 0],
}


def test_an_unsure_update_keeps_both_and_links_them(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem(embedder=TableEmbedder(_TABLE), resolver=_Unsure())
    first = mem.add("Parking spot: level 2.", user_id="ana", now=NOV, permanent=True)
    second = mem.add(
        "We leave the van in the north garage.", user_id="ana", now=DEC, permanent=True
    )
    assert second.status == "added"
    [edge] = mem.edges(second.id)
    assert (edge.kind, edge.source, edge.target) == ("contradicts", second.id, first.id)
    assert edge.strength == 0.7 and edge.metadata["rule"] == "update:unsure"
    hits = mem.search("parking spot level garage van", user_id="ana", now=LATER)
    assert hits[0].id == second.id and hits[0].thread is not None


def test_the_bulk_path_keeps_the_link_too(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem(embedder=TableEmbedder(_TABLE), resolver=_Unsure())
    results = mem.add_many(
        [{"content": "Parking spot: level 2.", "user_id": "ana", "permanent": True},
         {"content": "We leave the van in the north garage.", "user_id": "ana", "permanent": True}],
    )  # fmt: skip
    assert [r.status for r in results] == ["added", "added"]
    edges = mem.edges(results[1].id)
    assert [(e.kind, e.target) for e in edges] == [("contradicts", results[0].id)]


def test_a_run_of_one_date_is_dated_once() -> None:
    from memchentic.context.model import ContextItem, Section

    items = [
        ContextItem("m1", "Met Ana.", 1.0, "episodes", when="2026-03-02"),
        ContextItem("m2", "Met Rui.", 0.9, "episodes", when="2026-03-02"),
        ContextItem("m3", "Old plan.", 0.8, "episodes", when="2026-02-01", earlier=""),
    ]
    assert Section("episodes", "Episodes", False, items).render() == (
        "## Episodes\n[2026-03-02]\n- Met Ana.\n- Met Rui.\n[2026-02-01]\n- (earlier) Old plan."
    )
    stable = [ContextItem("p", "x", 1.0, "profile")]
    assert Section("profile", "Profile", True, stable).render() == "## Profile\n- x"


def test_a_search_reads_a_bounded_number_of_thread_edges(make_mem: Callable[..., Memory]) -> None:
    from memchentic.graph.threads import EDGES_PER_HIT

    mem = make_mem()
    old = mem.add(OLD, user_id="ana", now=NOV, permanent=True).id
    newer = [
        mem.add(f"Desk note {n}: the wifi moved again.", user_id="ana", now=DEC,
                valid_from=f"2026-12-{n + 1:02d}T09:00:00Z", permanent=True).id
        for n in range(3 * EDGES_PER_HIT)
    ]  # fmt: skip
    for memory_id in newer:
        mem.relate(memory_id, old, "contradicts")
    store = mem.store
    read: list[int] = []
    original = store.edges_among

    def counted(ids: list[str], **kwargs: object) -> list[object]:
        found = original(ids, **kwargs)  # type: ignore[arg-type]
        read.append(len(found))
        return found

    store.edges_among = counted  # type: ignore[method-assign]
    hits = mem.search(QUERY, user_id="ana", now=LATER, limit=1)
    assert read and max(read) <= EDGES_PER_HIT  # not the 24 edges the memory has
    assert hits[0].id == newer[-1]  # the newest edges are read: the newest member leads
