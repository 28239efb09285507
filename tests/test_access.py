"""Access control (DESIGN section 2): a generated matrix of identity x namespace x
operation against an independent oracle, membership changes mid-test, charters,
and property-based checks that no read ever returns an invisible memory."""

from __future__ import annotations

import io
import itertools
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memchentic import ForbiddenError, Memory, NamespaceError, NotFoundError, ValidationError

USERS = ["alice", "bob", "carol", "dave", "erin"]
AGENTS = ["sophie"]
#: A fresh store per generated example of the property test.
_EXAMPLES = itertools.count()


@dataclass
class World:
    """The test's own model of who belongs where: the oracle for every decision."""

    groups: dict[str, dict[str, str]] = field(default_factory=dict)  # group -> who -> role
    orgs: dict[str, dict[str, tuple[str, bool]]] = field(default_factory=dict)
    grants: dict[str, set[str]] = field(default_factory=dict)  # federated ns -> grantees

    def can_read(self, who: str, ns: str) -> bool:
        kind, _, rest = ns.partition(":")
        if kind in ("user", "agent"):
            return rest == who
        if kind == "group":
            return who in self.groups.get(rest, {})
        if kind == "org":
            member = self.orgs.get(rest, {}).get(who)
            return bool(member and member[1])
        org, source = rest.split(":")
        if who == source:
            member = self.orgs.get(org, {}).get(who)
            return bool(member and member[1])
        return who in self.grants.get(ns, set())

    def can_write(self, who: str, ns: str) -> bool:
        kind, _, rest = ns.partition(":")
        if kind == "org":
            member = self.orgs.get(rest, {}).get(who)
            return bool(member and member[1] and member[0] == "admin")
        if kind == "federated":
            org, source = rest.split(":")
            member = self.orgs.get(org, {}).get(who)
            return who == source and bool(member and member[1])
        return self.can_read(who, ns)


def _build(mem: Memory) -> World:
    d = mem.directory
    for name in USERS:
        d.create_identity(name)
    for name in AGENTS:
        d.create_identity(name, "agent")
    world = World()
    d.create_group("core", admins=["alice"], members=["bob"])
    d.create_group("design", admins=["carol"], members=["dave", "agent:sophie"])
    d.create_group("ops", admins=["erin"], members=["alice"])
    world.groups = {
        "core": {"alice": "admin", "bob": "member"},
        "design": {"carol": "admin", "dave": "member", "sophie": "member"},
        "ops": {"erin": "admin", "alice": "member"},
    }
    d.create_org("acme", admins=["alice"], members=["bob", "carol"])
    d.set_active("org:acme", "carol", False)
    d.create_org("globex", admins=["dave"], members=["erin"])
    world.orgs = {
        "acme": {"alice": ("admin", True), "bob": ("member", True), "carol": ("member", False)},
        "globex": {"dave": ("admin", True), "erin": ("member", True)},
    }
    d.grant("federated:acme:alice", "dave")
    world.grants = {"federated:acme:alice": {"dave"}}
    return world


NAMESPACES = (
    [f"user:{u}" for u in USERS]
    + [f"agent:{a}" for a in AGENTS]
    + ["group:core", "group:design", "group:ops", "org:acme", "org:globex"]
    + ["federated:acme:alice", "federated:globex:dave"]
)
WHO = USERS + AGENTS


def _token(ns: str) -> str:
    return "tok" + "".join(ch for ch in ns if ch.isalnum())


def _not_found_answer(memory_id: str) -> tuple[type, str, dict[str, str]]:
    err = NotFoundError(memory_id)
    return type(err), str(err), err.to_dict()


def _answer(call) -> tuple[type, str, dict[str, str]] | str:
    try:
        call()
    except (NotFoundError, ForbiddenError) as err:
        return type(err), str(err), err.to_dict()
    return "ok"


def _view(mem: Memory, who: str) -> Memory:
    return mem.as_identity(f"agent:{who}" if who in AGENTS else who)


def _check_matrix(mem: Memory, world: World, tmp: Path) -> int:
    ids = {
        ns: mem.add(f"Secret plan {_token(ns)} for Zephyr", namespace=ns).id for ns in NAMESPACES
    }
    checked = 0
    for who in WHO:
        view = _view(mem, who)
        own = view.add(f"{who} scratch note {len(ids)}", on_duplicate="keep").id
        found = {h.id for h in view.search("Secret plan Zephyr", limit=100)}
        listed = {r.id for r in view.list(limit=1000)}
        recalled = {h.id for h in view.recall(entity="Zephyr", limit=100)}
        out = io.StringIO()
        view.export(out)
        exported = {
            json.loads(line)["record"]["id"]
            for line in out.getvalue().splitlines()
            if json.loads(line)["kind"] == "memory"
        }
        for ns, memory_id in ids.items():
            readable = world.can_read(who, ns)
            writable = world.can_write(who, ns)
            assert (memory_id in found) == readable, ("search", who, ns)
            assert (memory_id in listed) == readable, ("list", who, ns)
            assert (memory_id in recalled) == readable, ("recall", who, ns)
            assert (memory_id in exported) == readable, ("export", who, ns)
            assert bool(view.list(namespace=ns)) == readable, ("list ns", who, ns)
            denied = _not_found_answer(memory_id)
            for op in ("get", "history"):
                call = partial(getattr(view, op), memory_id)
                assert _answer(call) == ("ok" if readable else denied), (op, who, ns)
            expected_change = "ok" if writable else (
                (ForbiddenError, *_forbidden(memory_id)) if readable else denied
            )  # fmt: skip
            relate = partial(view.relate, own, memory_id, "related_to", 0.5)
            assert _answer(relate) == expected_change, ("relate", who, ns)
            revise = partial(view.revise, memory_id, f"Secret plan {_token(ns)} for Zephyr v2")
            assert _answer(revise) == expected_change, ("revise", who, ns)
            victim = mem.add(f"Disposable {_token(ns)} {who}", namespace=ns).id
            expected_delete = "ok" if writable else (
                (ForbiddenError, *_forbidden(victim)) if readable else _not_found_answer(victim)
            )  # fmt: skip
            delete = partial(view.delete, victim)
            assert _answer(delete) == expected_delete, ("delete", who, ns)
            checked += 11
            # writes into the namespace: allowed, or the same refusal for all others
            try:
                view.add(f"{who} writes into {_token(ns)}", namespace=ns, on_duplicate="keep")
                assert writable, ("add", who, ns)
            except NamespaceError as err:
                assert not writable, ("add", who, ns)
                assert str(err) == "namespace: you cannot write to this namespace"
            checked += 1
        # restore the shared memories revised above
        for ns, memory_id in ids.items():
            mem.revise(memory_id, f"Secret plan {_token(ns)} for Zephyr")
    for memory_id in ids.values():
        mem.delete(memory_id)
    return checked


def _forbidden(memory_id: str) -> tuple[str, dict[str, str]]:
    err = ForbiddenError(memory_id)
    return str(err), err.to_dict()


def test_access_matrix_with_a_membership_change(mem: Memory, tmp_path: Path, capsys):
    world = _build(mem)
    checked = _check_matrix(mem, world, tmp_path)
    # nested membership change mid-test: bob leaves core, dave joins it as admin,
    # erin becomes inactive in globex, the federated grant is revoked
    d = mem.directory
    d.remove_member("group:core", "bob")
    d.add_member("group:core", "dave", role="admin")
    d.set_active("org:globex", "erin", False)
    d.revoke("federated:acme:alice", "dave")
    del world.groups["core"]["bob"]
    world.groups["core"]["dave"] = "admin"
    world.orgs["globex"]["erin"] = ("member", False)
    world.grants["federated:acme:alice"] = set()
    checked += _check_matrix(mem, world, tmp_path)
    with capsys.disabled():
        print(f"\naccess matrix: {checked} identity x namespace x operation cases checked")
    assert checked >= 2 * len(WHO) * len(NAMESPACES) * 12


def test_invisible_edges_entities_and_counts_do_not_leak(mem: Memory):
    _build(mem)
    secret = mem.add("Quasimodo rings the core bell", namespace="group:core")
    bob_note = mem.as_identity("bob").add("Bob's note about the bell")
    mem.relate(bob_note.id, secret.id, "related_to", 0.9)
    dave = mem.as_identity("dave")
    erin = mem.as_identity("erin")
    assert "quasimodo" not in erin.entities()
    assert erin.stats()["memories"] == 0 or "group:core" not in erin.stats()["by_namespace"]
    bob = mem.as_identity("bob")
    assert [e.target for e in bob.edges(bob_note.id)] == [secret.id]
    mem.directory.remove_member("group:core", "bob")
    assert bob.edges(bob_note.id) == []  # the edge now points into an invisible namespace
    assert "quasimodo" not in bob.entities()
    assert dave.search("Quasimodo bell") == []


def test_charter_one_per_group_admins_only(mem: Memory):
    _build(mem)
    alice, bob = mem.as_identity("alice"), mem.as_identity("bob")
    first = alice.add("Core team ships on Tuesdays", type="charter", namespace="group:core")
    with pytest.raises(NamespaceError):
        bob.add("Core team ships whenever", type="charter", namespace="group:core")
    second = alice.add("Core team ships on Thursdays", type="charter", namespace="group:core")
    assert second.status == "updated" and second.id == first.id
    charters = bob.list(namespace="group:core", type="charter")
    assert [c.content for c in charters] == ["Core team ships on Thursdays"]
    assert [v.op for v in bob.history(first.id)] == ["add", "slot_update"]
    with pytest.raises(ValidationError) as err:
        alice.add("A private charter", type="charter")
    assert err.value.field == "type"


def test_identity_defaults_and_implicit_creation(mem: Memory):
    view = mem.as_identity("zoe")  # unknown: the trusted principal creates it
    assert [i.name for i in mem.directory.identities()] == ["zoe"]
    res = view.add("Zoe likes climbing")
    assert res.memory.namespace == "user:zoe"
    assert (res.memory.user_id, res.memory.agent_id) == ("zoe", None)  # who wrote it
    bot = mem.as_identity("helper-bot")
    assert bot.add("Runs nightly").memory.user_id == "helper-bot"
    # mem0-style scope on the trusted principal reaches the same namespace
    assert [h.id for h in mem.search("climbing", user_id="zoe")] == [res.id]
    with pytest.raises(ValidationError):
        view.as_identity("someone-else")
    with pytest.raises(ValidationError):
        view.directory.create_identity("mallory")


def test_renamed_identities_keep_their_memories(mem: Memory):
    d = mem.directory
    d.create_identity("frank")
    note = mem.as_identity("frank").add("Frank's travel plans")
    d.rename_identity("frank", "franklin")
    franklin = mem.as_identity("franklin")
    assert [r.id for r in franklin.list()] == [note.id]
    assert [r.id for r in mem.list(namespace="user:franklin")] == [note.id]


def test_search_fans_out_over_every_readable_namespace(mem: Memory):
    _build(mem)
    made = {ns: mem.add(f"Kiwi harvest report {_token(ns)}", namespace=ns).id for ns in NAMESPACES}
    for who in WHO:
        hits = {h.id for h in _view(mem, who).search("Kiwi harvest report", limit=100)}
        world_view = {made[ns] for ns in NAMESPACES if _world_cache.can_read(who, ns)}
        assert hits == world_view


_world_cache = World(
    groups={
        "core": {"alice": "admin", "bob": "member"},
        "design": {"carol": "admin", "dave": "member", "sophie": "member"},
        "ops": {"erin": "admin", "alice": "member"},
    },
    orgs={
        "acme": {"alice": ("admin", True), "bob": ("member", True), "carol": ("member", False)},
        "globex": {"dave": ("admin", True), "erin": ("member", True)},
    },
    grants={"federated:acme:alice": {"dave"}},
)


@pytest.mark.parametrize(
    "bad",
    ["group:core:extra", "group:", ":core", "group::x", "gr\u043eup:core", "group:c\u043ere",
     " group:core", "group: core", "group:core\n", "group:'; DROP TABLE teams;--",
     "group:" + "x" * 10_000, "user:ali ce", "org:my org", "federated:acme", ""],
)  # fmt: skip
def test_malformed_or_look_alike_namespaces_are_denied(mem: Memory, bad: str):
    _build(mem)
    mem.add("Core memo", namespace="group:core")
    bob = mem.as_identity("bob")
    try:
        hits = bob.search("Core memo", namespace=bad)
    except NamespaceError:
        hits = []
    assert hits == []
    with pytest.raises((NamespaceError, ValidationError)):
        bob.add("sneaky", namespace=bad)


def test_directory_bad_input(mem: Memory):
    _build(mem)
    d = mem.directory
    with pytest.raises(ValidationError) as err:
        d.grant("federated:acme:alice", "nobody")
    assert err.value.field == "grantee"
    with pytest.raises(ValidationError) as err:
        d.remove_member("group:core", "alice")  # the last admin
    assert "last admin" in str(err.value)
    with pytest.raises(ValidationError):
        d.add_member("group:core", "alice", role="member")  # demoting the last admin
    with pytest.raises(ValidationError) as err:
        d.add_member("group:core", "bob", role="owner")
    assert err.value.field == "role"
    with pytest.raises(ValidationError):
        d.create_group("core", admins=["alice"])
    with pytest.raises(ValidationError):
        d.create_identity("bad name")
    bob = mem.as_identity("bob").directory
    with pytest.raises(ValidationError):
        bob.add_member("group:core", "erin")  # bob is not an admin of core
    with pytest.raises(ValidationError) as err:
        bob.members("group:design")  # invisible: answers like an unknown group
    assert str(err.value) == "team: unknown group: design"
    with pytest.raises(ValidationError) as err:
        bob.members("group:nonexistent")
    assert str(err.value) == "team: unknown group: nonexistent"


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(),
    n_users=st.integers(2, 4),
    n_groups=st.integers(1, 3),
)
def test_no_read_ever_returns_an_invisible_memory(make_mem, data, n_users, n_groups):
    with make_mem(f"prop{next(_EXAMPLES)}") as mem:
        users = [f"u{i}" for i in range(n_users)]
        for u in users:
            mem.directory.create_identity(u)
        world = World()
        for g in range(n_groups):
            members = data.draw(st.sets(st.sampled_from(users), min_size=1), label=f"g{g}")
            admin = sorted(members)[0]
            mem.directory.create_group(f"g{g}", admins=[admin],
                                       members=sorted(members - {admin}))  # fmt: skip
            world.groups[f"g{g}"] = {m: "member" for m in members}
        spaces = [f"user:{u}" for u in users] + [f"group:g{g}" for g in range(n_groups)]
        for i, ns in enumerate(data.draw(st.lists(st.sampled_from(spaces), max_size=12))):
            mem.add(f"shared words report number {i}", namespace=ns, on_duplicate="keep")
        for who, query in itertools.product(users, ["shared words report", "number"]):
            view = mem.as_identity(who)
            for record in [h.memory for h in view.search(query, limit=100)] + view.list():
                assert world.can_read(who, record.namespace), (who, record.namespace)


def test_scores_and_order_do_not_depend_on_invisible_memories(mem: Memory):
    _build(mem)
    bob = mem.as_identity("bob")
    for text in ("Merger talks with Initech stalled", "The merger memo is in the drive",
                 "Lunch order for Friday", "Initech sent the draft contract"):  # fmt: skip
        bob.add(text)
    bob.search("merger Initech")  # count the recall once (debounced afterwards)
    before = [(h.id, h.score, h.trace) for h in bob.search("merger Initech", include_trace=True)]
    # someone else's namespace fills up with the same words
    mem.add_many([f"Initech merger note {i}" for i in range(40)], namespace="user:erin",
                 on_duplicate="keep")  # fmt: skip
    after = [(h.id, h.score, h.trace) for h in bob.search("merger Initech", include_trace=True)]
    # what moves with the clock between the two searches: age, freshness and the
    # scores made with it (the first stage's, before the second stage reorders)
    timed = ("age_days", "freshness", "score", "first_stage_score")
    strip = [(i, s, {k: v for k, v in t.items() if k not in timed}) for i, s, t in after]
    assert [x[0] for x in after] == [x[0] for x in before]
    assert [x[2] for x in strip] == [
        {k: v for k, v in t.items() if k not in timed} for _, _, t in before
    ]
