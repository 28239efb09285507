"""Bad input that used to escape as a raw exception or an HTTP 500 (issue 20, item 14):
control characters in ids, cursors, names and entities (PostgreSQL cannot hold a NUL
in text: ``psycopg.DataError``), metadata nested hundreds deep (``RecursionError``),
and an unknown option of ``add`` (a ``TypeError`` naming ``_prepare``). Each is now a
:class:`ValidationError` naming the field, on every backend and through the HTTP API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memchentic import Memory, Settings, ValidationError

from .conftest import Stores

NUL = "01ABC\x00DEF"
ESC = "01ABC\x1b[2JDEF"


def _nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": ... {}}}``: ``depth`` objects, one inside the other."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


#: (call, the field its error must name): every method that takes an id, a cursor, a
#: name or an entity from the caller.
LOOKUPS: dict[str, tuple[Callable[[Memory, str, str], Any], str]] = {
    "get": (lambda m, bad, ok: m.get(bad), "id"),
    "history": (lambda m, bad, ok: m.history(bad), "id"),
    "revise": (lambda m, bad, ok: m.revise(bad, "new text"), "id"),
    "improve": (lambda m, bad, ok: m.improve(bad, confidence=0.5), "id"),
    "delete": (lambda m, bad, ok: m.delete(bad), "id"),
    "pin": (lambda m, bad, ok: m.pin(bad), "id"),
    "unpin": (lambda m, bad, ok: m.unpin(bad), "id"),
    "edges": (lambda m, bad, ok: m.edges(bad), "id"),
    "edges kind": (lambda m, bad, ok: m.edges(ok, kind=bad), "kind"),
    "relate": (lambda m, bad, ok: m.relate(ok, bad, "related_to"), "id"),
    "delete_edge": (lambda m, bad, ok: m.delete_edge(bad), "edge_id"),
    "neighbors": (lambda m, bad, ok: m.neighbors(bad), "id"),
    "recall": (lambda m, bad, ok: m.recall(entity=bad), "entity"),
    "events since": (lambda m, bad, ok: m.events(since=bad), "since"),
    "add entities": (lambda m, bad, ok: m.add("Paris is large", entities=[bad]), "entities"),
    "as_identity": (lambda m, bad, ok: m.as_identity(bad), "identity"),
    "for_identity": (lambda m, bad, ok: m.for_identity(bad), "identity"),
    "rename_identity": (lambda m, bad, ok: m.directory.rename_identity(bad, "x"), "identity"),
    "group members": (lambda m, bad, ok: m.directory.create_group("g1", members=[bad]), "members"),
    "turn role": (lambda m, bad, ok: m.record_turn(bad, "hello"), "role"),
    "turn session": (lambda m, bad, ok: m.record_turn("user", "hi", session_id=bad), "session_id"),
    "manage id": (lambda m, bad, ok: m.manage([{"op": "delete", "id": bad}]), "operations[0].id"),
}


@pytest.mark.parametrize("bad", [NUL, ESC], ids=["nul", "escape"])
@pytest.mark.parametrize("name", list(LOOKUPS))
def test_control_characters_in_ids_are_validation_errors(mem: Memory, name: str, bad: str):
    kept = mem.add("The blue shed holds the bikes").id
    call, field = LOOKUPS[name]
    with pytest.raises(ValidationError) as caught:
        call(mem, bad, kept)
    assert caught.value.field == field
    assert "control characters" in caught.value.rule or "must be one of" in caught.value.rule
    assert [r.id for r in mem.list()] == [kept]  # nothing written, nothing removed
    assert mem.get(kept).content == "The blue shed holds the bikes"


def test_an_unknown_add_option_is_named_with_the_valid_ones(mem: Memory):
    with pytest.raises(ValidationError) as caught:
        mem.add("The cat sleeps on the sofa", tagz=["home"])
    assert caught.value.field == "tagz"
    assert "_prepare" not in str(caught.value)
    assert "valid:" in str(caught.value) and "tags" in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        mem.add_many(["The dog sleeps in the hall"], bogus=1)
    assert caught.value.field == "bogus"
    with pytest.raises(ValidationError) as caught:
        mem.add_many([{"title": "no content"}])
    assert caught.value.field == "content"
    assert mem.list() == []


def test_deep_metadata_is_refused_before_any_recursive_work(mem: Memory):
    limit = Settings().max_metadata_depth
    kept = mem.add("The cat sleeps on the sofa", metadata=_nested(limit))
    assert kept.status == "added"
    other = mem.add("The dog sleeps in the hall").id
    calls: dict[str, Callable[[Any], Any]] = {
        "add": lambda meta: mem.add("The bird sings at dawn", metadata=meta),
        "revise": lambda meta: mem.revise(other, metadata=meta),
        "relate": lambda meta: mem.relate(kept.id, other, "related_to", metadata=meta),
        "record_turn": lambda meta: mem.record_turn("user", "hello", metadata=meta),
    }
    for name, call in calls.items():
        for deep in (_nested(limit + 1), _nested(600), _list(600)):
            with pytest.raises(ValidationError) as caught:
                call(deep)
            assert caught.value.field == "metadata", name
            assert "MAX_METADATA_DEPTH" in caught.value.rule, name
    assert len(mem.list()) == 2 and mem.get(other).metadata == {}
    assert mem.edges(other) == []


def _list(depth: int) -> dict[str, Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return {"b": value}


def test_the_depth_limit_is_a_setting(make_mem: Callable[..., Memory]):
    mem = make_mem(settings=Settings(max_metadata_depth=3))
    assert mem.add("The cat sleeps on the sofa", metadata=_nested(3)).status == "added"
    with pytest.raises(ValidationError, match="at most 3 deep"):
        mem.add("The dog sleeps in the hall", metadata=_nested(4))


# --- through the HTTP API ------------------------------------------------------------------
@pytest.fixture
def served(stores: Stores) -> Iterator[Any]:
    """A real server over this test's backend, with a key for alice."""
    pytest.importorskip("fastapi")
    import httpx

    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    from .live_server import ServerThread

    mem = Memory(store=stores.location("served"), embedder="hash")
    mem.directory.create_identity("alice")
    key = KeyRing(mem.store).create(identity="alice")[0]
    thread = ServerThread(create_app(mem, mcp=False, console=False))
    url = thread.start()
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    try:
        yield client
    finally:
        client.close()
        thread.stop()
        mem.close()


def test_http_bad_ids_and_deep_metadata_are_422_naming_the_field(served: Any):
    kept = served.post("/v1/memories", json={"content": "The blue shed holds the bikes"})
    assert kept.status_code == 200, kept.text
    kept_id = kept.json()["id"]
    requests = [
        ("GET", "/v1/memories/%00", None, "id"),
        ("GET", "/v1/memories/ab%00cd/history", None, "id"),
        ("PATCH", "/v1/memories/ab%1Bcd", {"content": "x y z"}, "id"),
        ("DELETE", "/v1/memories/ab%00cd", None, "id"),
        ("GET", "/v1/events/log?since=%00", None, "since"),
        ("POST", "/v1/recall", {"entity": "pa\u0000ris"}, "entity"),
        ("POST", "/v1/memories", {"content": "The bird sings", "entities": ["a\u0000"]},
         "entities"),
        ("POST", "/v1/memories", {"content": "The bird sings", "metadata": _nested(600)},
         "metadata"),
        ("POST", "/v1/edges", {"source": kept_id, "target": "x\u0000", "kind": "related_to"},
         "id"),
    ]  # fmt: skip
    for method, path, body, field in requests:
        response = served.request(method, path, json=body)
        assert response.status_code == 422, (path, response.status_code, response.text)
        error = response.json()["error"]
        assert error["field"] == field, (path, error)
    assert [m["id"] for m in served.get("/v1/memories").json()] == [kept_id]
