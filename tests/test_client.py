"""``memchentic.Client`` against a real server gives what ``Memory`` gives: the same
statuses, texts, rankings, types and exceptions, so switching is one line."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from memchentic import (  # noqa: E402
    Client,
    Edge,
    Memory,
    MemoryRecord,
    NotFoundError,
    SearchHit,
    ValidationError,
    WriteResult,
)
from memchentic.errors import AuthError, ServerError  # noqa: E402
from memchentic.identity import Membership  # noqa: E402

from .live_server import Live, live_server  # noqa: E402


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("client")) as server:
        yield server


@pytest.fixture
def client(live: Live) -> Iterator[Client]:
    with Client(live.url, live.keys["alice"]) as c:
        yield c


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Memory]:
    with Memory(store=str(tmp_path / "embedded.db"), embedder="hash") as mem:
        mem.directory.create_identity("alice")
        yield mem.for_identity("alice")


@pytest.fixture
def pair(tmp_path: Path, embedded: Memory) -> Iterator[tuple[Client, Memory]]:
    """Alice on two empty stores: one served (a Client), one embedded (a Memory).
    Keyword statistics cover a whole store, so the stores must hold the same memories."""
    (tmp_path / "served").mkdir()
    with (
        live_server(tmp_path / "served", mcp=False, console=False) as server,
        Client(server.url, server.keys["alice"]) as served,
    ):
        yield served, embedded


def _script(mem: Any) -> dict[str, Any]:
    """The same calls on a Memory or a Client; what came back, without ids and times."""
    out: dict[str, Any] = {}
    first = mem.add("Dana lives in Lisbon", slot_key="profile.location", type="fact")
    moved = mem.add("Dana lives in Porto", slot_key="profile.location", type="fact")
    tea = mem.add("Dana drinks green tea in the morning", tags=["drinks"], type="preference")
    again = mem.add("Dana drinks green tea in the morning", tags=["drinks"])
    guide = mem.add("Run the linter before every commit", kind="guide", type="skill")
    batch = mem.add_many(["Dana's sister is called Ines", {"content": "Dana runs on Sundays",
                                                            "tags": ["sport"]}])  # fmt: skip
    out["statuses"] = [r.status for r in (first, moved, tea, again, guide, *batch)]
    out["refused_points_at"] = again.id == tea.id
    out["slot"] = mem.get(moved.id).content
    hits = mem.search("where does Dana live", include_trace=True, limit=3)
    out["search"] = [(h.text, sorted(h.trace or {})) for h in hits]
    out["scores"] = [h.score for h in hits]
    out["list"] = [r.content for r in mem.list(tags=["drinks"])]
    out["revise"] = mem.revise(tea.id, "Dana drinks jasmine tea in the morning").status
    out["history"] = [v.op for v in mem.history(tea.id)]
    edge = mem.relate(guide.id, tea.id, "related_to", 0.5)
    out["edges"] = [(e.kind, e.strength) for e in mem.edges(tea.id)]
    out["delete_edge"] = mem.delete_edge(edge.id)
    out["recall"] = [h.text for h in mem.recall(entity="Dana")]
    out["context"] = str(mem.context("what does Dana drink"))
    turn = mem.record_turn("user", "Dana asked about tea", session_id="s1")
    out["turns"] = [(t.role, t.content) for t in mem.get_history("s1")] + [(turn.role,)]
    out["sessions"] = mem.list_sessions()
    mem.add_working("Focus: which tea", session_id="s1", key="focus")
    mem.add_working("Focus: which tea and when", session_id="s1", key="focus")
    out["working"] = [(r.content, r.type, r.session_id) for r in mem.working_memory("s1")]
    asked = mem.ask("What does Dana drink?")
    out["ask"] = (asked.answerable, [(p.citation, p.memory.content, p.via) for p in asked.passages])
    report, folded = mem.maintain(dry_run=True), mem.consolidate(dry_run=True)
    out["maintain"] = (report.dry_run, sorted(report.gc), report.events_pruned, folded.merged)
    out["reports"] = [type(x).__name__ for x in (asked, asked.passages[0], report, folded)]
    out["delete"] = mem.delete(batch[0].id).status
    out["after_delete"] = [r.content for r in mem.list()]
    out["types"] = [type(x).__name__ for x in (first, hits[0], mem.get(moved.id), edge)]
    return out


def test_the_client_gives_what_memory_gives(pair: tuple[Client, Memory]):
    served, local = _script(pair[0]), _script(pair[1])
    assert served.pop("scores") == pytest.approx(local.pop("scores"), rel=1e-4)
    assert served == local


def _as_of_script(mem: Any) -> dict[str, Any]:
    """Validity and ``as_of`` (issue 20, item 12) through a Memory or a Client."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    then, later = t0 + timedelta(days=100), t0 + timedelta(days=500)
    job = mem.add("Pia works at the harbour office", type="fact", entities=["Pia"],
                  valid_from=t0, valid_to=t0 + timedelta(days=365)).id  # fmt: skip
    home = mem.add("Pia lives above the bakery", type="fact", entities=["Pia"],
                   valid_from=t0 + timedelta(days=365)).id  # fmt: skip
    names = {job: "job", home: "home"}
    out: dict[str, Any] = {}
    for label, when in [("then", then), ("later", later)]:
        out[f"list {label}"] = [names[r.id] for r in mem.list(as_of=when)]
        out[f"recall {label}"] = [names[h.id] for h in mem.recall(entity="Pia", as_of=when)]
        ctx = mem.context("where does Pia work and live", as_of=when)
        out[f"context {label}"] = sorted(names[i.id] for i in ctx.items)
    try:
        mem.add("Pia rented a boat", valid_from=t0, valid_to=t0 - timedelta(days=1))
    except ValidationError as exc:
        out["refused"] = exc.field
    try:
        mem.improve(job, valid_to=t0 - timedelta(days=1))
    except ValidationError as exc:
        out["improve refused"] = exc.field
    return out


def test_validity_and_as_of_are_the_same_through_the_client(pair: tuple[Client, Memory]):
    served, local = _as_of_script(pair[0]), _as_of_script(pair[1])
    assert served == local == {
        "list then": ["job"], "recall then": ["job"], "context then": ["job"],
        "list later": ["home"], "recall later": ["home"], "context later": ["home"],
        "refused": "valid_to", "improve refused": "valid_to",
    }  # fmt: skip


def test_search_rankings_and_scores_match(pair: tuple[Client, Memory]):
    client, embedded = pair
    texts = [
        "The staging database runs Postgres 16",
        "Deploys go out on Tuesdays",
        "The on-call rota changes every Monday",
        "Postgres backups run nightly at 2am",
    ]
    for text in texts:
        assert client.add(text).status == embedded.add(text).status == "added"
    for query in ("when do postgres backups run", "deploy day", "who is on call"):
        served = client.search(query, include_trace=True)
        local = embedded.search(query, include_trace=True)
        assert [h.text for h in served] == [h.text for h in local]
        assert [h.score for h in served] == pytest.approx([h.score for h in local], rel=1e-4)
        assert all(isinstance(h, SearchHit) and isinstance(h.memory, MemoryRecord) for h in served)


def test_the_client_raises_the_library_exceptions(live: Live, client: Client, embedded: Memory):
    with Client(live.url, live.keys["bob"]) as bob:
        hidden = bob.add("Bob's locker code hint: the usual").id
    assert hidden is not None
    with pytest.raises(NotFoundError) as served:
        client.get(hidden)
    with pytest.raises(NotFoundError) as local:
        embedded.get(hidden)
    assert str(served.value) == str(local.value) and served.value.code == "not_found"
    with pytest.raises(ValidationError) as bad:
        client.add("x", confidence=3)
    assert bad.value.field == "confidence"
    with pytest.raises(TypeError, match="colour"):  # typed keywords, as Memory.search
        client.search("x", colour="red")  # type: ignore[call-arg]
    with pytest.raises(AuthError), Client(live.url, "mck_not-a-key") as stranger:
        stranger.list()
    with pytest.raises(ServerError) as admin_only:
        client.directory.create_identity("mallory")
    assert admin_only.value.code == "admin_required" and admin_only.value.status == 403


def test_write_results_edges_and_directory(live: Live, client: Client):
    result = client.add("The office plant is a fiddle-leaf fig", tags=("office",))
    assert isinstance(result, WriteResult) and isinstance(result.memory, MemoryRecord)
    other = client.add("The fig needs water every ten days")
    edge = client.relate(other.id or "", result.id or "", "supports", metadata={"why": "test"})
    assert isinstance(edge, Edge) and edge.metadata == {"why": "test"}
    assert [n.memory.id for n in client.neighbors(result.id or "")] == [other.id]
    with Client(live.url, live.keys["admin"]) as admin:
        made = admin.directory.create_identity("erin", "agent")
    assert made.namespace == "agent:erin"
    team = client.directory.create_group("gardeners", members=["agent:erin"])
    assert team.kind == "group"
    with Client(live.url, live.keys["admin"]) as admin:  # erin is only invited (issue 20)
        pending = admin.directory.invitations()
        assert [(i.team_name, i.identity_id) for i in pending] == [("gardeners", "erin")]
        assert isinstance(admin.directory.add_member("group:gardeners", "agent:erin"), Membership)
    assert {m.identity_id for m in client.directory.members("group:gardeners")} == {"alice", "erin"}
    assert client.me()["key"]["principal"] == "user:alice"


def test_events_and_export(live: Live, client: Client, tmp_path: Path):
    mark = client.add("Alice's umbrella is in the hallway")
    logged = client.events(types=["memory.added"], limit=1000)
    assert mark.id in [e.memory_id for e in logged]
    got: list[Any] = []

    def listen() -> None:
        for event in client.stream_events(types=["memory.added"]):
            got.append(event)
            return

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    threading.Timer(0.5, lambda: client.add("Alice's keys are on the hook")).start()
    reader.join(timeout=10)
    assert got and got[0].type == "memory.added" and got[0].namespace == "user:alice"
    lines = client.export(tmp_path / "out.jsonl")
    assert lines == len((tmp_path / "out.jsonl").read_text().splitlines()) > 1
