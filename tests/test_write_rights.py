"""Every write checks every id it touches against the caller's rights (issue 42,
items 1, 2 and 7): import's edges, versions and records, the group charter's slot,
and the working-memory cap on every path that makes a working memory live again.

Library on both backends; the CLI's ``--as NAME import``; the charter over HTTP.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memchentic import ForbiddenError, ImportReport, Memory, Settings, ValidationError
from memchentic.clock import to_text, utcnow
from memchentic.ids import new_id

CAP = "WORKING_MEMORY_MAX_PER_IDENTITY"
#: Working notes different enough not to be refused as near duplicates.
STEPS = [
    "book the meeting room for Tuesday", "draft the quarterly report outline",
    "call the supplier about late parcels", "review Sam's pull request on caching",
    "water the office plants before leaving", "renew the domain name next month",
    "order new toner for the printer", "plan the offsite lunch menu",
]  # fmt: skip


def _team(mem: Memory) -> tuple[Memory, Memory, str]:
    """alice (admin) and bob (member) of group ``team``; its canonical namespace."""
    for name in ("alice", "bob", "carol"):
        mem.directory.create_identity(name)
    mem.directory.create_group("team", admins=["alice"], members=["bob"])
    alice, bob = mem.as_identity("alice"), mem.as_identity("bob")
    charter = alice.add("The team ships on Tuesdays", type="charter", namespace="group:team")
    assert charter.memory is not None
    return alice, bob, charter.memory.namespace


def _jsonl(*lines: dict[str, Any]) -> io.StringIO:
    header = {"kind": "header", "format": "memchentic", "version": 1}
    return io.StringIO("\n".join(json.dumps(x) for x in (header, *lines)) + "\n")


def _record(memory_id: str, namespace: str, content: str, **fields: Any) -> dict[str, Any]:
    now = to_text(utcnow())
    return {"kind": "memory", "record": {"id": memory_id, "namespace": namespace,
            "content": content, "created_at": now, **fields}}  # fmt: skip


def _edge(source: str, target: str, kind: str = "supersedes", **fields: Any) -> dict[str, Any]:
    return {"kind": "edge", "edge": {"id": fields.pop("id", new_id()), "source": source,
            "target": target, "kind": kind, "created_at": to_text(utcnow()), **fields}}  # fmt: skip


def _version(memory_id: str, number: int, actor: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "version", "version": {"memory_id": memory_id, "version": number,
            "op": fields.pop("op", "revise"), "actor": actor, "at": to_text(utcnow()),
            "changes": {"content": ["what alice said", "what bob says she said"]},
            **fields}}  # fmt: skip


def _unused_id() -> str:
    return new_id()


# --- 1. import: edges, versions and records -------------------------------------------------
def test_an_import_cannot_supersede_or_rewrite_the_history_of_anothers_memory(mem: Memory):
    """The attack: bob's file supersedes alice's private memory by one of his and
    adds a version signed "alice". Her memory stays in her list and search, her
    history is hers alone, and bob's report is the one a missing id gets."""
    alice, bob, _ = _team(mem)
    secret = alice.add("alice's private plan: acquire the bakery on Main Street")
    mine = bob.add("bob's note about bakeries")
    before = [(v.version, v.op, v.actor) for v in alice.history(secret.id)]

    def attack(target: str) -> ImportReport:
        return bob.import_(_jsonl(_edge(mine.id, target), _version(target, 9, "alice")))

    report = attack(secret.id)
    missing = attack(_unused_id())
    assert report == missing == ImportReport(skipped=2)
    assert secret.id in [r.id for r in alice.list()]
    assert secret.id in [h.id for h in alice.search("bakery on Main Street")]
    assert alice.get(secret.id).superseded_by is None
    assert [(v.version, v.op, v.actor) for v in alice.history(secret.id)] == before
    assert mem.edges(secret.id) == []


def test_an_import_needs_the_right_to_write_both_ends_of_an_edge(mem: Memory):
    """The charter is readable by bob but not his to change: an edge to it from his
    own memory is skipped, and it is not superseded."""
    alice, bob, team = _team(mem)
    charter = alice.list(namespace="group:team", type="charter")[0]
    mine = bob.add("bob's draft of a better charter", namespace="group:team")
    other = bob.add("bob's second note for the team", namespace="group:team")
    report = bob.import_(_jsonl(
        _edge(mine.id, charter.id), _edge(charter.id, mine.id, "related_to"),
        _edge(mine.id, other.id, "related_to"),
    ))  # fmt: skip
    assert (report.edges, report.skipped) == (1, 2)
    assert charter.id in [r.id for r in bob.list(namespace="group:team", type="charter")]
    assert mem.get(charter.id).superseded_by is None
    assert [e.target for e in mem.edges(charter.id)] == []


def test_a_record_whose_id_another_tenant_holds_is_imported_as_any_new_one(mem: Memory):
    """A record line reusing alice's id: the same report as a fresh id (imported),
    under an id of its own; alice's memory is untouched. A second import of the same
    file skips it (the id it got is bob's and readable)."""
    alice, bob, _ = _team(mem)
    secret = alice.add("alice's private diary entry about the move")
    own = bob.add("placeholder").memory
    assert own is not None
    bob.delete(own.id)
    ns = own.namespace

    taken = _jsonl(_record(secret.id, ns, "bob's note that claims alice's id"))
    free = _jsonl(_record(_unused_id(), ns, "bob's note with a fresh id"))
    assert bob.import_(taken) == bob.import_(free) == ImportReport(memories=1)
    assert alice.get(secret.id).content == "alice's private diary entry about the move"
    notes = {r.content: r.id for r in bob.list()}
    assert notes["bob's note that claims alice's id"] != secret.id
    taken.seek(0)
    assert bob.import_(taken) == ImportReport(skipped=1)  # idempotent
    # the file's own edges and versions follow the record to its new id
    mine = bob.add("bob's anchor for the edge").id
    report = bob.import_(_jsonl(
        _record(secret.id, ns, "bob's second claim on alice's id"),
        _edge(mine, secret.id, "related_to"), _version(secret.id, 2, "bob"),
    ))  # fmt: skip
    assert report == ImportReport(memories=1, edges=1, versions=1)
    renamed = {r.content: r.id for r in bob.list()}["bob's second claim on alice's id"]
    assert [e.target for e in bob.edges(mine)] == [renamed]
    assert [v.version for v in bob.history(renamed)] == [1, 2]
    assert [e.id for e in mem.edges(secret.id)] == []


def test_an_import_records_the_importer_as_the_actor_of_every_version(mem: Memory):
    """A version signed by someone else is recorded as the importer's, the claim kept
    under ``imported_actor``; a memory imported without its first version gets one
    (op ``import``), so the working-memory cap and ``written_by`` count the importer."""
    alice, bob, _ = _team(mem)
    alice_id, bob_id = alice.principal.identity_id, bob.principal.identity_id
    assert alice_id and bob_id
    ns = f"user:{bob_id}"
    first, second = _unused_id(), _unused_id()
    report = bob.import_(_jsonl(
        _record(first, ns, "bob's imported fact about tides"),
        _record(second, ns, "bob's imported fact about moons"),
        _version(first, 1, alice_id, op="add"), _version(first, 2, "local"),
    ))  # fmt: skip
    assert report == ImportReport(memories=2, versions=2)
    history = bob.history(first)
    assert [(v.version, v.op, v.actor) for v in history] == [(1, "add", bob_id),
                                                              (2, "revise", bob_id)]
    assert history[0].changes["imported_actor"] == [None, alice_id]
    assert [(v.version, v.op, v.actor) for v in bob.history(second)] == [(1, "import", bob_id)]
    assert all(v.actor != alice_id for v in mem.history(first))


def test_an_imported_record_claims_only_what_the_importer_may_write(mem: Memory):
    """A record in another tenant's namespace, a charter, or a non-charter in the
    charter's slot: skipped, like a line for a namespace that does not exist."""
    alice, bob, team = _team(mem)
    alice_ns = alice.add("alice's anchor").memory.namespace  # type: ignore[union-attr]
    charter = alice.list(namespace="group:team", type="charter")[0]
    report = bob.import_(_jsonl(
        _record(_unused_id(), alice_ns, "planted in alice's namespace"),
        _record(_unused_id(), "user:nobody", "planted in a namespace that does not exist"),
        _record(_unused_id(), team, "bob's charter", type="charter", slot_key="charter"),
        _record(_unused_id(), team, "bob squats the charter's slot", slot_key="charter"),
    ))  # fmt: skip
    assert report == ImportReport(skipped=4)
    planted = [r for r in mem.list(limit=100) if "planted" in r.content or "bob" in r.content]
    assert planted == []
    assert mem.store.find_slot(team, "charter").id == charter.id  # type: ignore[union-attr]
    # a slot bob may write but that is taken: skipped, never a store error
    taken = bob.add("bob's status", slot_key="status", namespace="group:team")
    again = bob.import_(_jsonl(_record(_unused_id(), team, "a second status", slot_key="status")))
    assert again == ImportReport(skipped=1)
    assert mem.get(taken.id).content == "bob's status"
    # the use a line claims does not rank it for others: as add starts, in a shared namespace
    claimed = {"kind": "guide", "reinforcement": 10**9, "recall_count": 10**9}
    shared, private = _unused_id(), _unused_id()
    own_ns = bob.add("bob's anchor").memory.namespace  # type: ignore[union-attr]
    assert bob.import_(_jsonl(_record(shared, team, "Always pair on releases", **claimed),
                              _record(private, own_ns, "Always nap after lunch", **claimed))
                       ).memories == 2  # fmt: skip
    got = mem.get(shared, touch=False)
    assert (got.reinforcement, got.recall_count) == (1, 0)
    assert mem.get(private, touch=False).reinforcement == 10**9  # its own: only its own reads
    # the same lines from the trusted principal keep their claims (a backup restore)
    assert mem.import_(_jsonl(_version(charter.id, 7, alice.principal.identity_id))).versions == 1


def test_the_cli_import_under_another_identity_is_checked_alike(
    make_mem: Callable[..., Memory], stores: Any, tmp_path: Any
):
    from typer.testing import CliRunner

    from memchentic.cli import app

    mem = make_mem()
    alice, bob, _ = _team(mem)
    secret = alice.add("alice's private plan: acquire the bakery on Main Street")
    mine = bob.add("bob's note about bakeries")
    evil = tmp_path / "evil.jsonl"
    evil.write_text(_jsonl(_edge(mine.id, secret.id), _version(secret.id, 9, "alice")).getvalue())
    args = ["--as", "bob", "import", str(evil), "--json", "--store",
            str(stores.location("memory")), "--embedder", "hash"]  # fmt: skip
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["skipped"] == 2
    assert secret.id in [r.id for r in alice.list()]
    assert [v.op for v in alice.history(secret.id)] == ["add"]


# --- 2. the group charter ---------------------------------------------------------------------
def test_a_member_cannot_write_the_charters_slot(mem: Memory):
    alice, bob, team = _team(mem)
    charter = alice.list(namespace="group:team", type="charter")[0]
    with pytest.raises(ForbiddenError):
        bob.add("bob rules now", namespace="group:team", slot_key="charter")
    with pytest.raises(ForbiddenError):
        bob.add_many([{"content": "a harmless note", "namespace": "group:team"},
                      {"content": "bob rules now", "namespace": "group:team",
                       "slot_key": "charter"}])  # fmt: skip
    results = bob.manage([{"op": "add", "content": "bob rules", "slot_key": "charter",
                           "namespace": "group:team"}])  # fmt: skip
    assert results[0].status == "refused" and "forbidden" in (results[0].reason or "")
    shown = bob.list(namespace="group:team")
    assert [(r.id, r.content, r.type) for r in shown] == [
        (charter.id, "The team ships on Tuesdays", "charter")
    ]  # nothing changed, nothing of the batch stored
    assert [v.op for v in alice.history(charter.id)] == ["add"]
    # the slot means nothing outside a group; the admin may write it
    assert bob.add("my own charter of sorts", slot_key="charter").status == "added"
    assert alice.add("The team ships on Wednesdays", namespace="group:team",
                     slot_key="charter").id == charter.id  # fmt: skip


def test_a_member_cannot_take_an_empty_charter_slot(mem: Memory):
    for name in ("alice", "bob"):
        mem.directory.create_identity(name)
    mem.directory.create_group("team", admins=["alice"], members=["bob"])
    bob = mem.as_identity("bob")
    with pytest.raises(ForbiddenError):
        bob.add("bob squats the slot", namespace="group:team", slot_key="charter")
    assert bob.list(namespace="group:team") == []


def test_a_members_write_neither_supersedes_nor_reinforces_the_charter(mem: Memory):
    """Content close to the charter's: before, the rules superseded the charter with
    the member's memory (it vanished from the group's reads)."""
    alice, bob, _ = _team(mem)
    charter = alice.list(namespace="group:team", type="charter")[0]
    for text in ("The team ships on Fridays", "The team ships on Tuesdays"):
        result = bob.add(text, namespace="group:team", on_duplicate="reinforce")
        assert result.id != charter.id
    kept = mem.get(charter.id)
    assert (kept.superseded_by, kept.reinforcement, kept.content) == (
        None, 1, "The team ships on Tuesdays")  # fmt: skip
    assert charter.id in [r.id for r in bob.list(namespace="group:team")]
    # a charter that is a guide: a member's same guide does not merge into it
    mem.directory.create_group("ops", admins=["alice"], members=["bob"])
    guide = alice.add("Always review code before merging it", type="charter", kind="guide",
                      namespace="group:ops")  # fmt: skip
    merged = bob.add("Always review code before merging it", kind="guide",
                     namespace="group:ops")  # fmt: skip
    assert merged.id != guide.id and mem.get(guide.id).reinforcement == 1
    # bob's copy of the charter's words stays beside it: consolidation leaves charters be
    for group in ("group:team", "group:ops"):
        for cluster in bob.consolidate(namespace=group).clusters:
            assert not {charter.id, guide.id} & {cluster["kept"], *cluster["merged"]}
    for memory_id in (charter.id, guide.id):
        kept = mem.get(memory_id)
        assert (kept.superseded_by, kept.reinforcement) == (None, 1)


def test_a_member_cannot_turn_a_memory_into_the_charter_or_revise_it(mem: Memory):
    alice, bob, _ = _team(mem)
    charter = alice.list(namespace="group:team", type="charter")[0]
    note = bob.add("bob's plain note", namespace="group:team")
    with pytest.raises(ValidationError):  # NamespaceError: a write of type charter
        bob.revise(note.id, type="charter")
    for write in (lambda: bob.revise(charter.id, "bob's"), lambda: bob.pin(charter.id),
                  lambda: bob.improve(charter.id, confidence=0.1),
                  lambda: bob.delete(charter.id)):  # fmt: skip
        with pytest.raises(ForbiddenError):
            write()
    with pytest.raises(ForbiddenError):
        bob.relate(note.id, charter.id, "supersedes")
    assert mem.get(charter.id).content == "The team ships on Tuesdays"


# --- 3. the working-memory cap on every path that revives ------------------------------------
def _capped(make_mem: Callable[..., Memory], cap: int) -> tuple[Memory, Memory, Memory]:
    mem = make_mem(settings=Settings(working_memory_max_per_identity=cap))
    alice, bob, _ = _team(mem)
    return mem, alice, bob


GROUP = {"namespace": "group:team", "session_id": "s1"}


def _live_working(mem: Memory) -> int:
    return len(mem.list(namespace="group:team", type="working", limit=100))


def _expired_then_full(bob: Memory, cap: int) -> list[str]:
    then = utcnow() - timedelta(days=3)
    old = [bob.add_working(s, now=then, ttl_days=1, **GROUP).id for s in STEPS[:cap]]
    assert [bob.add_working(s, **GROUP).status for s in STEPS[cap:2 * cap]] == ["added"] * cap
    return [i for i in old if i]


def test_restore_cannot_take_an_identity_over_the_cap(make_mem: Callable[..., Memory]):
    """The attack: three expire, three more are written, the old three restored."""
    mem, _, bob = _capped(make_mem, 3)
    old = _expired_then_full(bob, 3)
    for memory_id in old:
        with pytest.raises(ValidationError, match=CAP) as refused:
            bob.restore(memory_id)
        assert refused.value.field == "namespace" and "at most 3" in str(refused.value)
    assert _live_working(mem) == 3
    newest = bob.list(namespace="group:team", type="working")[0]
    bob.delete(newest.id)  # a place frees up: one restore fits
    assert bob.restore(old[0]).status == "restored"
    with pytest.raises(ValidationError, match=CAP):
        bob.restore(old[1])
    assert _live_working(mem) == 3


def test_revise_cannot_take_an_identity_over_the_cap(make_mem: Callable[..., Memory]):
    mem, _, bob = _capped(make_mem, 2)
    old = _expired_then_full(bob, 2)
    with pytest.raises(ValidationError, match=CAP):
        bob.revise(old[0], "revived by an edit")  # revise brings an expired memory back
    note = bob.add("a plain fact for the team", namespace="group:team")
    with pytest.raises(ValidationError, match=CAP):
        bob.revise(note.id, type="working")  # a new working memory, by its type
    assert _live_working(mem) == 2
    assert mem.get(note.id).type == "semantic"
    assert bob.revise(mem.list(namespace="group:team", type="working")[0].id, "edited").ok


def test_delete_edge_cannot_revive_past_the_cap(make_mem: Callable[..., Memory]):
    """A superseded working memory comes back when its supersedes edge goes."""
    mem, _, bob = _capped(make_mem, 2)
    first = bob.add_working(STEPS[0], **GROUP)
    second = bob.add_working(STEPS[1], **GROUP)
    edge = bob.relate(second.id, first.id, "supersedes")
    assert bob.add_working(STEPS[2], **GROUP).status == "added"  # first no longer counts
    with pytest.raises(ValidationError, match=CAP):
        bob.delete_edge(edge.id)
    assert mem.get(first.id).superseded_by == second.id and _live_working(mem) == 2


def test_a_keyed_write_into_an_expired_slot_counts(make_mem: Callable[..., Memory]):
    mem, _, bob = _capped(make_mem, 2)
    then = utcnow() - timedelta(days=3)
    assert bob.add_working("progress: one", key="p", now=then, ttl_days=1, **GROUP).ok
    for step in STEPS[:2]:
        assert bob.add_working(step, **GROUP).status == "added"
    with pytest.raises(ValidationError, match=CAP):
        bob.add_working("progress: two", key="p", **GROUP)  # would revive the slot's memory
    assert _live_working(mem) == 2


def test_a_restore_counts_against_the_writer_of_the_memory(make_mem: Callable[..., Memory]):
    """alice restores bob's expired working memories: bob's cap still holds."""
    mem, alice, bob = _capped(make_mem, 2)
    old = _expired_then_full(bob, 2)
    with pytest.raises(ValidationError, match=CAP):
        alice.restore(old[0])
    assert _live_working(mem) == 2
    assert mem.restore(old[0]).status == "restored"  # the trusted principal has no cap


def test_an_import_cannot_take_an_identity_over_the_cap(make_mem: Callable[..., Memory]):
    mem, _, bob = _capped(make_mem, 3)
    team = mem.list(namespace="group:team", type="charter")[0].namespace
    assert bob.add_working(STEPS[0], **GROUP).ok
    lines = [_record(_unused_id(), team, s, type="working", session_id="s1") for s in STEPS[1:6]]
    report = bob.import_(_jsonl(*lines))
    assert report.memories == 2
    assert [n for n, _ in report.errors] == [4, 5, 6]
    assert all(CAP in message for _, message in report.errors)
    assert _live_working(mem) == 3
    expired = _record(_unused_id(), team, STEPS[7], type="working",
                      expires_at=to_text(utcnow() - timedelta(days=1)))  # fmt: skip
    assert bob.import_(_jsonl(expired)).memories == 1  # an expired one does not count


# --- 4. add_working's key --------------------------------------------------------------------
@pytest.mark.parametrize("key", ["", "   ", "\u200b"])
def test_an_empty_working_key_is_an_error_naming_key(mem: Memory, key: str):
    with pytest.raises(ValidationError) as refused:
        mem.add_working("a note for the session", session_id="s1", key=key)
    assert refused.value.field == "key"
    assert mem.list(type="working") == []


# --- other writes that take an id ---------------------------------------------------------------
def test_delete_edge_answers_an_edge_into_an_invisible_memory_as_a_missing_one(mem: Memory):
    """bob reads the charter but not alice's private memory: an edge between them is,
    for him, an edge that does not exist (False), not a ForbiddenError."""
    alice, bob, _ = _team(mem)
    charter = alice.list(namespace="group:team", type="charter")[0]
    private = alice.add("alice's private note on the charter")
    edge = alice.relate(charter.id, private.id, "related_to")
    assert bob.delete_edge(edge.id) is False
    assert bob.delete_edge(new_id()) is False
    assert mem.store.get_edge(edge.id) is not None


# --- over HTTP ---------------------------------------------------------------------------------
def test_http_a_member_writing_the_charter_slot_is_a_403(tmp_path: Any):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from .live_server import live_server

    with live_server(tmp_path, mcp=False, console=False) as live:
        live.mem.directory.create_group("team", admins=["alice"], members=["bob"])
        alice, bob = live.http("alice"), live.http("bob")
        made = alice.post("/v1/memories", json={"content": "The team ships on Tuesdays",
                                                "type": "charter", "namespace": "group:team"})
        assert made.status_code == 200, made.text
        body = {"content": "bob rules now", "namespace": "group:team", "slot_key": "charter"}
        refused = bob.post("/v1/memories", json=body)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        batch = bob.post("/v1/memories/batch", json={"items": [body]})
        assert batch.status_code == 403, batch.text
        patched = bob.patch(f"/v1/memories/{made.json()['id']}", json={"content": "x"})
        assert patched.status_code == 403
        shown = bob.get("/v1/memories", params={"namespace": "group:team"}).json()
        assert [(r["content"], r["type"]) for r in shown] == [
            ("The team ships on Tuesdays", "charter")
        ]


def test_the_mcp_remember_tool_refuses_a_members_charter_slot(mem: Memory):
    pytest.importorskip("mcp")
    import asyncio

    from mcp import Client

    from memchentic.server.mcp_server import build_server

    alice, bob, _ = _team(mem)

    async def run() -> Any:
        async with Client(build_server(lambda _ctx: bob)) as client:
            return await client.call_tool("remember", {
                "content": "bob rules now", "namespace": "group:team", "slot_key": "charter",
            })  # fmt: skip

    refused = asyncio.run(run())
    assert refused.is_error and "forbidden" in refused.content[0].text
    assert [r.content for r in alice.list(namespace="group:team")] == ["The team ships on Tuesdays"]
