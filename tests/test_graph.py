"""Memories that connect (issue 4): supersession chains, edges, auto-edges, entities,
neighbourhoods, versions, consolidation and ask, with a scripted life over time."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memchentic import Memory, ValidationError
from memchentic.graph.ask import NO_ANSWER
from memchentic.llm import ChatClient

from .conftest import TableEmbedder

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def test_scripted_life(local_mem: Memory, capsys):
    mem, log = local_mem, []

    def step(day: int, text: str, **kw):
        res = mem.add(text, user_id="maya", created_at=T0 + timedelta(days=day), **kw)
        log.append(f"day {day:>3}: {res.status:<10} {text}")
        return res

    def now(day: int) -> datetime:
        return T0 + timedelta(days=day, hours=1)

    # moves city three times (slot key)
    home = step(0, "Maya lives in Lisbon", slot_key="profile.location", type="fact")
    for day, city in ((30, "Berlin"), (90, "Nairobi"), (200, "Tokyo")):
        res = step(day, f"Maya lives in {city}", slot_key="profile.location", type="fact")
        assert res.status == "updated" and res.id == home.id
        located = mem.list(user_id="maya", type="fact", now=now(day))
        assert [r.content for r in located] == [f"Maya lives in {city}"]
        assert mem.search("Where does Maya live?", user_id="maya", now=now(day))[0].id == home.id
    history = mem.get(home.id).metadata["history"]
    assert [h["content"] for h in history] == [
        "Maya lives in Lisbon", "Maya lives in Berlin", "Maya lives in Nairobi",
    ]  # fmt: skip
    assert [v.op for v in mem.history(home.id)] == ["add"] + ["slot_update"] * 3

    # changes an opinion twice (contradiction by polarity)
    likes = step(10, "Maya likes jazz music a lot.")
    hates = step(40, "Maya does not like jazz music a lot.")
    assert hates.status == "superseded" and hates.ids == [hates.id, likes.id]
    back = step(120, "Maya likes jazz music a lot.")
    assert back.status == "superseded" and back.ids == [back.id, hates.id]
    found = [h.id for h in mem.search("Does Maya like jazz?", user_id="maya", now=now(120))]
    assert back.id in found and likes.id not in found and hates.id not in found
    chain = mem.list(user_id="maya", include_superseded=True, include_expired=True, now=now(120))
    assert {likes.id, hates.id, back.id} <= {r.id for r in chain}
    recalled = [h.id for h in mem.recall(entity="Maya", now=now(120))]
    assert back.id in recalled and likes.id not in recalled and hates.id not in recalled
    assert [v.op for v in mem.history(hates.id)] == ["add", "superseded"]

    # repeats a guide five times (reinforcement 6)
    guide = step(5, "Always confirm meetings with Maya a day ahead.", kind="guide")
    for i in range(5):
        again = step(6 + i, "Always confirm meetings with Maya a day ahead.", kind="guide")
        assert again.status == "merged" and again.id == guide.id
    assert mem.get(guide.id).reinforcement == 6
    assert [v.op for v in mem.history(guide.id)] == ["add"] + ["merge"] * 5

    # related facts, linked automatically and through shared entities
    work = step(210, "Maya works at Globex as a product designer in Tokyo.", auto_edges=True)
    sister = step(220, "Maya's sister Lena also moved to Tokyo.", auto_edges=True)
    assert work.status == sister.status == "added"
    near = mem.neighbors(home.id, depth=1)
    assert {n.memory.id for n in near} >= {work.id, sister.id}
    assert all(n.via.startswith(("edge:", "entity:")) for n in near)
    for line in log:
        assert line
    with capsys.disabled():
        print("\nscripted life timeline:\n" + "\n".join(log))


def test_supersession_cycles_and_double_supersession_are_refused(mem: Memory):
    a = mem.add("Onboarding checklist: laptop, badge and desk").id
    b = mem.add("Onboarding checklist: laptop and badge").id
    c = mem.add("New hires get their equipment on day one").id
    mem.relate(b, a, "supersedes")
    mem.relate(c, b, "supersedes")
    with pytest.raises(ValidationError, match="cycle"):
        mem.relate(a, c, "supersedes")
    d = mem.add("A different checklist entirely for offboarding").id
    with pytest.raises(ValidationError, match="already superseded"):
        mem.relate(d, a, "supersedes")
    traced = mem.search("laptop badge desk", include_trace=True)
    assert traced[0].id == c  # a and b stand for the tip of their chain
    assert {h.id for h in traced} & {a, b} == set()
    assert traced[0].trace["superseded_hops"] == 2
    shown = {h.id for h in mem.search("laptop badge desk", include_superseded=True)}
    assert {a, b} <= shown


def test_deleting_a_supersedes_edge_brings_the_old_memory_back(mem: Memory):
    old = mem.add("The VPN server is vpn1.example.org").id
    new = mem.add("The VPN runbook lives in the team wiki").id  # the rules keep both
    edge = mem.relate(new, old, "supersedes")
    assert old not in {r.id for r in mem.list()}
    assert mem.delete_edge(edge.id) is True
    assert old in {r.id for r in mem.list()}
    assert mem.delete_edge(edge.id) is False
    assert mem.edges(old) == []


def test_auto_edges_are_classified_and_reported(tmp_path):
    emb = TableEmbedder({
        "Kai plays tennis": [1, 0, 0, 0], "Kai plays tennis on weekends": [1, 0.5, 0, 0],
        "Kai does not play tennis on weekends": [1, 0.5, 0.2, 0],
        "Kai collects stamps": [0.3, 0, 1, 0],
    })  # fmt: skip
    with Memory(path=tmp_path / "a.db", embedder=emb) as m:
        first = m.add("Kai plays tennis")
        second = m.add("Kai plays tennis on weekends", auto_edges=True)
        assert [(e.kind, e.target) for e in second.edges] == [("supports", first.id)]
        assert second.edges[0].strength == pytest.approx(0.894, abs=1e-3)
        third = m.add("Kai collects stamps", auto_edges=True)
        assert third.edges == []  # cosine 0.29: unrelated
        plain = m.add("Kai does not play tennis on weekends")
        assert plain.edges == [] and plain.status == "superseded"


def test_entities_by_namespace_and_counts(mem: Memory):
    mem.add("Nora reviewed the Apollo launch plan", user_id="a")
    mem.add("Apollo launch moved to May", user_id="b")
    assert mem.entities(by_namespace=True) == {
        "apollo": {"user:a": 1, "user:b": 1}, "nora": {"user:a": 1},
    }  # fmt: skip
    assert mem.entities() == {"apollo": 2, "nora": 1}
    assert mem.entities(user_id="b") == {"apollo": 1}


def test_entity_extraction_rules():
    from memchentic.graph.entities import RuleEntities

    found = RuleEntities().extract(
        "Mail bob@x.io, ping @carol, see src/app/main.py; The New York Times agreed"
    )
    assert {"bob@x.io", "@carol", "src/app/main.py", "New York Times"} <= set(found)


def test_neighbors_validation_and_depth(mem: Memory):
    a = mem.add("Olga leads Project Falcon").id
    b = mem.add("Project Falcon depends on the Ledger service").id
    c = mem.add("The Ledger service is owned by Pavel").id
    one = {n.memory.id for n in mem.neighbors(a, 1)}
    two = {n.memory.id: n.depth for n in mem.neighbors(a, 2)}
    assert one == {b} and two == {b: 1, c: 2}
    with pytest.raises(ValidationError) as err:
        mem.neighbors(a, 0)
    assert err.value.field == "depth"


def test_concurrent_writers_contradicting_one_memory_leave_one_tip(tmp_path):
    emb = TableEmbedder({
        "Omar drinks coffee every morning": [1, 0, 0, 0],
        "Omar does not drink coffee every morning anymore": [1, 0.3, 0, 0],
    })  # fmt: skip
    with Memory(path=tmp_path / "c.db", embedder=emb) as m:
        old = m.add("Omar drinks coffee every morning").id
        results, barrier = [], threading.Barrier(4)

        def write():
            barrier.wait()
            results.append(m.add("Omar does not drink coffee every morning anymore"))

        threads = [threading.Thread(target=write) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(r.status for r in results)
        assert statuses == ["refused", "refused", "refused", "superseded"]
        tip = next(r for r in results if r.status == "superseded")
        assert all(r.id == tip.id for r in results if r.status == "refused")
        assert [r.id for r in m.list()] == [tip.id]
        assert [v.op for v in m.history(old)] == ["add", "superseded"]
        assert [v.op for v in m.history(tip.id)] == ["add"]


def test_consolidate_folds_near_duplicates(tmp_path):
    # the same statement again, or after a filler: what a write would
    # refuse; other content words ("sits at", "desk number") are other statements
    # since issue 31, item 3, and no longer fold
    emb = TableEmbedder({
        "Quinn's desk is 4B": [1, 0, 0, 0], "Basically, Quinn's desk is 4B": [1, 0.3, 0, 0],
        "Quinn likes tea": [0, 0, 1, 0],
    })  # fmt: skip
    with Memory(path=tmp_path / "k.db", embedder=emb) as m:
        a = m.add("Quinn's desk is 4B", tags=["desk"]).id
        b = m.add("Basically, Quinn's desk is 4B", on_duplicate="keep", tags=["seat"]).id
        c = m.add("Quinn's desk is 4B", on_duplicate="keep").id
        tea = m.add("Quinn likes tea").id
        m.get(b)  # b is the most used
        dry = m.consolidate(dry_run=True)
        assert dry.merged == 2 and len(m.list()) == 4
        report = m.consolidate()
        (cluster,) = report.clusters
        assert cluster["kept"] == b and sorted(cluster["merged"]) == sorted([a, c])
        assert {r.id for r in m.list()} == {b, tea}
        kept = m.get(b)
        assert kept.reinforcement == 3 and set(kept.tags) == {"desk", "seat"}
        kinds = sorted((e.kind, e.target) for e in m.edges(b))
        assert kinds == sorted([("derives_from", a), ("derives_from", c),
                                ("supersedes", a), ("supersedes", c)])  # fmt: skip
        assert m.history(a)[-1].op == "consolidated"
        assert m.consolidate().merged == 0


class _ChatHandler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _ChatHandler.requests.append(body)
        passages = body["messages"][-1]["content"]
        answer = "Rosa moved to Oslo [1]." if "Oslo" in passages else "I do not know."
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _rosa(mem: Memory) -> dict[str, str]:
    return {
        "moved": mem.add("Rosa moved to Oslo last spring", user_id="r", type="episodic").id,
        "job": mem.add("Rosa teaches chemistry in Oslo", user_id="r", type="fact").id,
        "skiing": mem.add("Rosa enjoys skiing", user_id="r", type="preference").id,
        "tabs": mem.add("The team prefers tabs over spaces", user_id="r", type="preference").id,
    }


def test_ask_returns_cited_passages_and_a_grounded_answer(mem: Memory, chat_server):
    ids = _rosa(mem)
    plain = mem.ask("Where did Rosa move?", user_id="r")
    assert plain.answer is None and plain.answerable
    assert plain.passages[0].memory.id == ids["moved"]
    assert [p.citation for p in plain.passages] == list(range(1, len(plain.passages) + 1))
    scores = [p.score for p in plain.passages]
    assert scores == sorted(scores, reverse=True)
    assert ids["tabs"] not in {p.memory.id for p in plain.passages}  # no evidence, no hop
    client = ChatClient(chat_server, "m")
    try:
        answered = mem.ask("Where did Rosa move?", user_id="r", chat=client)
    finally:
        client.close()
    assert answered.answer == "Rosa moved to Oslo [1]."
    sent = _ChatHandler.requests[-1]["messages"][-1]["content"]
    assert "[1] Rosa moved to Oslo last spring" in sent


def test_ask_cites_every_type_with_its_search_score(mem: Memory):
    """Issue 20, item 11: ask searched the four general types only (facts and
    preferences were never cited) and scored passages ``1 - i/100``."""
    ids = _rosa(mem)
    questions = [("Who teaches chemistry?", "job"), ("Who enjoys skiing?", "skiing")]
    for question, expected in questions:
        mem.search(question, user_id="r")  # counts the recalls (debounced) before both
        answer = mem.ask(question, user_id="r")
        searched = {h.id: h.score for h in mem.search(question, user_id="r")}
        first = answer.passages[0]
        assert (first.memory.id, first.via) == (ids[expected], "search")
        assert first.memory.type in {"fact", "preference"}
        for p in answer.passages:
            if p.via == "search":
                assert p.score == pytest.approx(searched[p.memory.id], rel=1e-4)
        assert first.score < 0.1  # an rrf score, not the old positional 1.0


def test_ask_says_when_memory_cannot_answer(mem: Memory, chat_server):
    """Issue 20, item 11: an unanswerable question got the nearest memories cited."""
    _rosa(mem)
    question = "What is the capital of Mars?"
    assert mem.search(question, user_id="r")  # search always returns the nearest...
    sent = len(_ChatHandler.requests)
    client = ChatClient(chat_server, "m")
    try:
        out = mem.ask(question, user_id="r", chat=client)
    finally:
        client.close()
    assert (out.passages, out.answerable, out.answer) == ([], False, NO_ANSWER)
    assert len(_ChatHandler.requests) == sent  # ...ask asks no model to guess from them
    assert out.to_dict()["answerable"] is False and out.to_dict()["passages"] == []
    assert mem.ask("What is the capital of Mars?", user_id="nobody").answerable is False
