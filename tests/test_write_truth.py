"""Memory that stays true (issue 21): every new fact kept, no logged turn hidden.

The labelled pairs of ``tests/data/statement_pairs.py`` are written through every
write path (``add``, ``add_many`` across pairs and within one batch, ``learn``,
``manage``, the HTTP API and MCP ``remember``) on every backend, with the default
local embedder: each path must give each pair its label, and an update or a
contradiction must leave the old memory superseded (a ``supersedes`` edge, the old
value in the new memory's history, gone from search and list).
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memchentic import Embedder, Memory
from memchentic.learn.base import Extracted, Message
from memchentic.record import WriteResult
from memchentic.write.statements import Relation, Thresholds, relate, tokens

from .data.statement_pairs import ADDED, PAIRS, REFUSED, SUPERSEDED, TURNS

#: Pairs the rule gets wrong with MiniLM, each for a reason the words cannot tell.
#: Listed so the figures stay honest; the test checks they still behave as written
#: here, so a fix shows. Issue 31, item 3: a content word that is neither an
#: inflection nor a synonym of another makes the second statement new, whatever the
#: cosine, so a statement that adds one ("... car", "works as") is added (a safe miss:
#: a near-copy, never a lost fact). The synonyms of ``relations.SYNONYMS`` ("likes" /
#: "enjoys", "answer" / "reply") and verbs that differ ("paid" / "sent", "reading" /
#: "writing") are no longer misses.
KNOWN_MISSES = {
    ("Dan drives a red Toyota", "Dan drives a red Toyota car"): ADDED,
    ("Jack is a software engineer", "Jack works as a software engineer"): ADDED,
}

PATHS = ("add", "add_many", "one_batch", "learn", "manage", "http", "mcp")


class PassThrough:
    """An extractor that extracts each user message as it is (the write path after
    extraction is what ``learn`` shares with the others)."""

    name = "pass-through"

    def extract(self, messages: list[Message]) -> list[Extracted]:
        return [Extracted(m.content, type="semantic") for m in messages]


def _user(i: int) -> str:
    return f"pair{i}"


def _write_pairs(mem: Memory, path: str, call: Callable[..., dict[str, Any]] | None) -> list[str]:
    """Write every pair (each in a namespace of its own) through ``path``; the status
    of each second write."""
    firsts = [{"content": a, "user_id": _user(i)} for i, (a, _, _, _) in enumerate(PAIRS)]
    seconds = [{"content": b, "user_id": _user(i)} for i, (_, b, _, _) in enumerate(PAIRS)]
    if path == "add":
        for item in firsts:
            mem.add(**item)
        return [mem.add(**item).status for item in seconds]
    if path == "add_many":
        mem.add_many(firsts)
        return [r.status for r in mem.add_many(seconds)]
    if path == "one_batch":
        both = [x for pair in zip(firsts, seconds, strict=True) for x in pair]
        return [r.status for r in mem.add_many(both)[1::2]]
    if path == "learn":
        out = []
        for first, second in zip(firsts, seconds, strict=True):
            results = mem.learn(
                [first["content"], second["content"]], user_id=first["user_id"],
                extractor=PassThrough(),
            )  # fmt: skip
            out.append(results[1].status)
        return out
    if path == "manage":
        for item in firsts:
            mem.manage([{"op": "add", **item}])
        return [mem.manage([{"op": "add", **item}])[0].status for item in seconds]
    assert call is not None
    if path == "mcp":  # one session: every first, then every second
        return [r["status"] for r in call(firsts + seconds)[len(firsts) :]]
    for item in firsts:  # http
        call(item)
    return [call(item)["status"] for item in seconds]


@pytest.fixture
def faces(
    make_mem: Callable[..., Memory], local_embedder: Embedder, tmp_path: Path
) -> Iterator[Callable[[str], tuple[Memory, Callable[..., dict[str, Any]] | None]]]:
    """``faces(path)``: a fresh store with the local embedder and, for ``http`` and
    ``mcp``, a call that writes one memory through a real server as an admin key."""
    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    from .live_server import ServerThread

    servers: list[ServerThread] = []
    clients: list[Any] = []

    def make(path: str) -> tuple[Memory, Callable[..., dict[str, Any]] | None]:
        mem = make_mem(path, embedder=local_embedder)
        if path not in ("http", "mcp"):
            return mem, None
        key = KeyRing(mem.store).create(admin=True)[0]
        thread = ServerThread(create_app(mem))
        url = thread.start()
        servers.append(thread)
        if path == "http":
            import httpx

            client = httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
            )
            clients.append(client)

            def post(item: dict[str, Any]) -> dict[str, Any]:
                response = client.post("/v1/memories", json=item)
                assert response.status_code == 200, response.text
                return dict(response.json())

            return mem, post
        return mem, _mcp_caller(url, key)

    yield make
    for client in clients:
        client.close()
    for thread in servers:
        thread.stop()


def _mcp_caller(url: str, key: str) -> Callable[..., Any]:
    """``remember`` for each item, in order, through the MCP SDK's client over
    streamable HTTP (one session)."""

    def remember_all(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async def run() -> list[dict[str, Any]]:
            headers = {"Authorization": f"Bearer {key}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
            ):
                out = []
                for item in items:
                    result = await client.call_tool("remember", item)
                    assert not result.is_error, result.content
                    data = result.structured_content
                    if data is None:
                        data = json.loads(result.content[0].text)
                    out.append(data.get("result", data))
                return out

        return asyncio.run(run())

    return remember_all


def _expected(first: str, second: str, label: str) -> str:
    return KNOWN_MISSES.get((first, second), label)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_every_path_gives_every_pair_its_label(faces: Any, path: str) -> None:
    mem, call = faces(path)
    statuses = _write_pairs(mem, path, call)
    confusion = Counter((label, got) for (_, _, label, _), got in zip(PAIRS, statuses, strict=True))
    print(f"\n{path}: {sorted(confusion.items())}")
    wrong = [
        (a, b, label, got)
        for (a, b, label, _), got in zip(PAIRS, statuses, strict=True)
        if got != _expected(a, b, label)
    ]
    assert wrong == []
    for i, (a, b, label, _) in enumerate(PAIRS):
        if _expected(a, b, label) == SUPERSEDED:
            live = [r.content for r in mem.list(user_id=_user(i))]
            assert live == [b], (a, b, live)


def test_an_update_supersedes_with_its_history(local_mem: Memory) -> None:
    old = local_mem.add("Production publishes the GUI on port 18080.", user_id="ops")
    new = local_mem.add("Production publishes the GUI on port 18081.", user_id="ops")
    # issue 31, item 7: the reason names the rule (the attribute that changed)
    assert (new.status, new.reason, new.ids) == ("superseded", "update:port", [new.id, old.id])
    record = local_mem.get(new.id)
    [past] = record.metadata["history"]
    assert (past["content"], past["id"]) == (old.memory.content, old.id)
    [edge] = local_mem.edges(new.id)
    assert (edge.source, edge.target, edge.kind) == (new.id, old.id, "supersedes")
    assert (edge.metadata["reason"], edge.metadata["rule"]) == ("update", "update:port")
    hits = local_mem.search("which port does the GUI use?", user_id="ops", include_trace=True)
    assert [h.id for h in hits] == [new.id]
    assert hits[0].trace["supersedes"] == 1.0  # the trace says it replaced one memory
    assert local_mem.get(old.id).superseded_by == new.id  # still there, when asked
    both = local_mem.list(user_id="ops", include_superseded=True)
    assert {r.id for r in both} == {old.id, new.id}


def test_the_readme_examples_hold_with_both_packaged_embedders(
    make_mem: Callable[..., Memory], local_embedder: Embedder
) -> None:
    for embedder in (local_embedder, "hash"):
        mem = make_mem(f"readme-{getattr(embedder, 'name', embedder)}", embedder=embedder)
        first = mem.add("Prefers short answers", type="preference", user_id="alice")
        again = mem.add("Prefers short answers.", type="preference", user_id="alice")
        assert (again.status, again.id) == ("refused", first.id)
        mem.add("Lives in Lisbon", slot_key="profile.location", user_id="alice")
        moved = mem.add("Lives in Porto", slot_key="profile.location", user_id="alice")
        assert moved.status == "updated"
        paris = mem.add("Alice lives in Paris.", user_id="alice")
        rome = mem.add("Alice lives in Rome.", user_id="alice")
        assert (rome.status, rome.ids) == ("superseded", [rome.id, paris.id])


def test_with_the_hash_embedder_no_pair_loses_a_fact(make_mem: Callable[..., Memory]) -> None:
    """The hashing embedder knows words, not meanings: a paraphrase in other words may
    be added, but no update and no other statement is ever refused, and every
    update and negation supersedes."""
    mem = make_mem("hash")
    statuses = _write_pairs(mem, "add", None)
    for (a, b, label, category), got in zip(PAIRS, statuses, strict=True):
        if label == REFUSED:
            assert got in (REFUSED, ADDED), (a, b, got)
            if category == "format":
                assert got == REFUSED, (a, b)
        else:
            assert got == label, (a, b, label, got)


@pytest.mark.parametrize("how", ["keep", "episodic", "both"])
def test_records_of_speech_are_never_superseded_or_refused(mem: Memory, how: str) -> None:
    options = {
        "keep": {"on_duplicate": "keep"},
        "episodic": {"type": "episodic"},
        "both": {"type": "episodic", "on_duplicate": "keep"},
    }[how]
    for i, (first, second) in enumerate(TURNS):
        a = mem.add(first, user_id=f"t{i}", session_id="s", **options)
        b = mem.add(second, user_id=f"t{i}", session_id="s", **options)
        assert (a.status, b.status) == ("added", "added"), (first, second)
    rows = mem.list(include_superseded=True, limit=100)
    assert len(rows) == 2 * len(TURNS)
    assert all(r.superseded_by is None for r in rows)
    assert mem.add_many([t for pair in TURNS for t in pair], user_id="bulk", **options)


def test_a_fact_never_supersedes_or_hides_behind_a_logged_turn(mem: Memory) -> None:
    turn = mem.add("user: My flight is at 8 am", type="episodic", user_id="u")
    fact = mem.add("My flight is at 9 am", type="fact", user_id="u")
    negation = mem.add("user: My flight is at 8 am", type="fact", user_id="u")
    assert fact.status == "added" and negation.status == "added"
    assert mem.get(turn.id).superseded_by is None


def test_no_supersession_across_speakers(mem: Memory) -> None:
    said = mem.add("The port is 8080", metadata={"role": "user"}, user_id="u")
    reply = mem.add("The port is not 8080", metadata={"role": "assistant"}, user_id="u")
    other = mem.add("The port is 8081", metadata={"speaker": "Bob"}, user_id="v")
    mine = mem.add("The port is 8082", metadata={"speaker": "Ann"}, user_id="v")
    assert reply.status == "added" and mem.get(said.id).superseded_by is None
    assert mine.status == "added" and mem.get(other.id).superseded_by is None
    # issue 31: a write that names its speaker logs what was said, a record that is
    # never refused nor superseding, even by the same speaker (it used to supersede)
    same = mem.add("The port is 8090", metadata={"role": "user"}, user_id="u")
    assert same.status == "added" and mem.get(said.id).superseded_by is None
    fact = mem.add("The port is 8095", user_id="u")  # knowledge never replaces a turn
    assert fact.status == "added" and mem.get(same.id).superseded_by is None


@pytest.mark.parametrize(
    "variant",
    [
        "Prefers   short answers",  # whitespace
        "prefers SHORT answers",  # case
        "Prefers short answers!?",  # punctuation
        "Pre\u200bfers short\u2060 answers",  # zero-width characters
        unicodedata.normalize("NFD", "Préfers short answers"),  # Unicode forms
    ],
)
def test_forms_of_one_text_are_duplicates(make_mem: Callable[..., Memory], variant: str) -> None:
    mem = make_mem("forms")
    base = "Préfers short answers" if "\u0301" in variant else "Prefers short answers"
    first = mem.add(base)
    assert (mem.add(variant).status, mem.add(variant).id) == ("refused", first.id)


def test_long_texts_and_other_scripts_get_a_decision() -> None:
    t = Thresholds(near_duplicate=0.92, contradiction=0.8, floor=0.4)
    long_a = "The service keeps its logs on disk. " * 4000
    assert relate(long_a, long_a + " Really.", 0.99, t) is Relation.DUPLICATE
    assert relate("東京に住んでいます", "東京に住んでいます。", 0.99, t) is Relation.DUPLICATE
    # issue 31, item 2: no table names this verb as holding one value, so another
    # name beside it is another fact (added), never a guessed update
    assert relate("Ich wohne in Berlin", "Ich wohne in München", 0.8, t) is Relation.DISTINCT
    assert relate("Ich wohne in Berlin", "Ich wohne in Berlin.", 0.99, t) is Relation.DUPLICATE
    assert isinstance(relate("Я живу в Москве", "Я не живу в Москве", 0.9, t), Relation)
    for text in ("", "   ", "\u200b", "🙂🙂", "123", "a" * 10_000):
        tokens(text)  # tokenises without error
        assert relate(text, text, 1.0, t) is Relation.DUPLICATE


def test_the_chat_resolver_decides_and_falls_back_to_the_rules(
    make_mem: Callable[..., Memory],
) -> None:
    """``WRITE_RESOLVER=chat``: the ADD / UPDATE / DELETE / NONE decision of a local
    OpenAI-compatible fake server; an answer naming no memory it was shown, or no
    answer at all, leaves the decision to the rules."""
    import threading

    from memchentic import Settings

    from .test_learn import _ChatServer

    server = _ChatServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        settings = Settings(
            write_resolver="chat", chat_base_url=f"http://127.0.0.1:{server.server_port}/v1",
            chat_model="fake-model",
        )  # fmt: skip
        mem = make_mem("chat", settings=settings)
        first = mem.add("Alice works at Initech", user_id="a")
        assert server.requests == []  # nothing near: no model call
        server.answer = json.dumps({"event": "UPDATE", "id": "0"})
        moved = mem.add("Alice works at Initech now as the head of sales", user_id="a")
        assert (moved.status, moved.reason, moved.ids) == (
            "superseded", "update:chat", [moved.id, first.id],
        )  # fmt: skip
        assert mem.edges(moved.id)[0].metadata["by"] == "chat"
        asked = server.requests[-1]["body"]["messages"][-1]["content"]
        assert "Alice works at Initech" in asked and first.id not in asked  # positions only
        server.answer = json.dumps({"event": "NONE", "id": "7"})  # not a memory it was shown
        again = mem.add("Alice works at Initech now as the head of sales!", user_id="a")
        assert (again.status, again.id) == ("refused", moved.id)  # the rules: the same words
        server.status = 500  # the model fails: the rules decide
        negated = mem.add("Alice does not work at Initech now as the head of sales", user_id="a")
        assert (negated.status, negated.reason) == ("superseded", "negation:not")
        mem.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_write_results_name_the_superseded_memory(mem: Memory) -> None:
    old = mem.add("The release is scheduled for 2024-03-01", user_id="r")
    result: WriteResult = mem.add("The release is scheduled for 2024-03-15", user_id="r")
    assert result.to_dict()["ids"] == [result.id, old.id]
    assert result.to_dict()["reason"] == "update:date"


def test_consolidation_folds_no_update_no_negation_and_no_turn(make_mem: Any) -> None:
    """``consolidate`` (and ``maintain``) link only what a write would refuse as a
    duplicate: values that differ, negations and records of speech never fold."""
    from .conftest import TableEmbedder

    texts = {
        "The API listens on port 8000": [1.0, 0.0, 0.0],
        "The API listens on port 8001": [1.0, 0.02, 0.0],
        "The API does not listen on port 8000": [1.0, 0.0, 0.03],
        "user: the API listens on port 8000": [1.0, 0.01, 0.01],
        "The API listens on port 8000.": [1.0, 0.0, 0.01],
    }
    mem = make_mem("fold", embedder=TableEmbedder(texts))
    keep = [mem.add(t, on_duplicate="keep").id for t in list(texts)[:3]]
    turn = mem.add("user: the API listens on port 8000", type="episodic").id
    again = mem.add("The API listens on port 8000.", on_duplicate="keep").id
    report = mem.consolidate()
    assert [sorted([c["kept"], *c["merged"]]) for c in report.clusters] == [
        sorted([keep[0], again])
    ]
    live = {r.id for r in mem.list()}
    assert {keep[1], keep[2], turn} <= live


def test_every_path_that_embeds_a_memory_embeds_the_same_text(
    make_mem: Callable[..., Memory], tmp_path: Path
) -> None:
    """Writes embed a text's NFKC form without invisible characters (issue 21);
    a revision, an import without vectors and a reindex must embed it alike, or
    two forms of one text drift apart after any of them."""
    from memchentic.engine.transfer import export_jsonl, import_jsonl

    odd = "Deploys on Fri\u200bday from the \ufb01le server"  # zero-width space, "ﬁ"
    mem = make_mem()
    first = mem.add(odd, user_id="u", title="Rel\u200beases").id
    other = mem.add("placeholder", user_id="u").id
    mem.revise(other, content=odd, title="Rel\u200beases")
    written = mem.store.vectors([first, other])
    assert written[first].tobytes() == written[other].tobytes()
    export_jsonl(mem, tmp_path / "out.jsonl", vectors=False)
    again = make_mem("copy")
    import_jsonl(again, tmp_path / "out.jsonl")
    assert again.store.vectors([first])[first].tobytes() == written[first].tobytes()
    mem.reindex()
    assert mem.store.vectors([first])[first].tobytes() == written[first].tobytes()
