"""A change of type is a write of the new type (issue 20, item 3): ``revise``,
``manage`` and HTTP ``PATCH`` apply the rules of ``add``: only a group's admins
write its ``charter``, and a group has one."""

from __future__ import annotations

import pytest

from memchentic import Memory, NamespaceError, ValidationError


def _core(mem: Memory) -> tuple[Memory, Memory]:
    for name in ("alice", "bob"):
        mem.directory.create_identity(name)
    mem.directory.create_group("core", admins=["alice"], members=["bob"])
    return mem.as_identity("alice"), mem.as_identity("bob")


def _charters(view: Memory) -> list[str]:
    return [c.content for c in view.list(namespace="group:core", type="charter")]


def test_a_member_cannot_turn_a_memory_into_a_charter(mem: Memory):
    alice, bob = _core(mem)
    alice.add("Core team ships on Tuesdays", type="charter", namespace="group:core")
    note = bob.add("Bob decides everything here", namespace="group:core")
    with pytest.raises(NamespaceError) as err:
        bob.revise(note.id, type="charter")
    assert err.value.field == "type" and "charter" in str(err.value)
    refused = bob.manage([{"op": "revise", "id": note.id, "type": "charter"}])
    assert refused[0].status == "refused" and "charter" in (refused[0].reason or "")
    assert _charters(bob) == ["Core team ships on Tuesdays"]
    assert bob.get(note.id).type != "charter"
    bob.revise(note.id, type="decision")  # other types: the member may write them
    assert bob.get(note.id).type == "decision"


def test_an_admin_retypes_into_the_one_charter(mem: Memory):
    alice, _ = _core(mem)
    draft = alice.add("Core team reviews every change", namespace="group:core")
    first = alice.add("Core team ships on Tuesdays", type="charter", namespace="group:core")
    with pytest.raises(ValidationError) as err:  # a second charter
        alice.revise(draft.id, type="charter")
    assert err.value.field == "type" and first.id in str(err.value)
    alice.revise(first.id, type="note")  # the old charter steps down ...
    alice.revise(draft.id, type="charter")  # ... and the draft takes its place
    assert _charters(alice) == ["Core team reviews every change"]
    again = alice.add("Core team reviews every change twice", type="charter",
                      namespace="group:core")  # fmt: skip
    assert again.id == draft.id  # a new charter replaces the current one, as for add
    assert alice.get(first.id).content == "Core team ships on Tuesdays"
    private = alice.add("Alice's own rules")
    with pytest.raises(ValidationError) as err:
        alice.revise(private.id, type="charter")
    assert err.value.field == "type"


# --- through HTTP ------------------------------------------------------------------------------
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from .live_server import Live  # noqa: E402  (``live``: a fresh server, tests/conftest.py)


def test_http_patch_to_charter_follows_the_write_rules(live: Live):
    admin, alice, bob = live.http("admin"), live.http("alice"), live.http("bob")
    made = admin.post("/v1/groups", json={"name": "core", "admins": ["alice"], "members": ["bob"]})
    assert made.status_code == 200, made.text
    charter = {"content": "Core ships on Tuesdays", "type": "charter", "namespace": "group:core"}
    assert alice.post("/v1/memories", json=charter).status_code == 200
    note = bob.post("/v1/memories", json={"content": "Bob rules", "namespace": "group:core"})
    note_id = note.json()["id"]
    refused = bob.patch(f"/v1/memories/{note_id}", json={"type": "charter"})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["field"] == "type"
    second = alice.patch(f"/v1/memories/{note_id}", json={"type": "charter"})
    assert second.status_code == 422 and second.json()["error"]["field"] == "type"
    listed = bob.get("/v1/memories", params={"namespace": "group:core", "type": "charter"})
    assert [m["content"] for m in listed.json()] == ["Core ships on Tuesdays"]
