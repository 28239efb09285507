"""Records of what was said are redacted, never refused (issue 31, item 6).

A logged turn with a secret in it keeps its text with the secret replaced, and says
what was redacted (the kinds and how many, never the secret): ``record_turn`` and
``add_message``, ``type="episodic"``, ``on_duplicate="keep"``, a write whose
metadata names its speaker (``role``/``speaker``) and mem0's ``infer=False``; through
the library, HTTP and the mem0 adapter, on both backends. Knowledge keeps the
refuse default (DESIGN section 4: skip secrets).

Each test then looks for the secret everywhere it could have been kept: every
memory (content, title, metadata), its versions, the events, the turns, the
keyword index and an export.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memchentic import Memory
from memchentic.clock import utcnow
from memchentic.errors import ValidationError
from memchentic.mem0 import Memory as Mem0Memory
from memchentic.store.filters import MemoryFilter

from .secret_corpus import AKIA, GHP, MCK, STRIPE

#: (the secret, its kind): several kinds (provider tokens, a key id, a password, a card).
SECRETS = [
    (GHP, "github_token"),
    (AKIA, "aws_access_key"),
    (MCK, "memchentic_key"),
    (STRIPE, "stripe_key"),
]
PASSWORD = "s3cr3tPassw0rd"
CARD = "4111 1111 1111 1111"
REST = "the deploy failed at step three, can you look"


def _turn(secret: str) -> str:
    return f"I pasted my config, key {secret}, and {REST}?"


def _secret_parts(secret: str) -> list[str]:
    """The secret, and its body without the provider prefix (a partial leak counts)."""
    return [secret, secret[4:], secret[-12:]]


def _nowhere(mem: Memory, *secrets: str) -> None:
    """None of ``secrets`` (nor a recognisable part) is stored anywhere."""
    records = mem.list(include_expired=True, include_superseded=True, limit=1000)
    dumped = [json.dumps([r.to_dict() for r in records])]
    dumped += [json.dumps([v.to_dict() for v in mem.history(r.id)]) for r in records]
    dumped.append(json.dumps([e.to_dict() for e in mem.events(limit=1000)], default=str))
    dumped.append(json.dumps([t.to_dict() for t in mem.get_history(limit=1000)]))
    for sid, _ in mem.list_sessions():
        dumped.append(json.dumps([t.to_dict() for t in mem.get_history(sid, limit=1000)]))
    out = io.StringIO()
    mem.export(out)
    dumped.append(out.getvalue())
    text = "\n".join(dumped)
    everything = MemoryFilter.everything(
        now=utcnow(), include_expired=True, include_superseded=True
    )
    for secret in secrets:
        for part in _secret_parts(secret):
            assert part not in text, part
            assert mem.store.keyword_search(part, 10, everything) == [], part


def _kept(record_content: str, secret: str, kind: str) -> None:
    assert record_content == f"I pasted my config, key [REDACTED:{kind}], and {REST}?"


@pytest.mark.parametrize("how", ["episodic", "keep", "role", "speaker"])
def test_a_logged_turn_is_redacted_not_refused(make_mem: Callable[..., Memory], how: str):
    mem = make_mem()
    options: dict[str, Any] = {
        "episodic": {"type": "episodic"},
        "keep": {"on_duplicate": "keep"},
        "role": {"metadata": {"role": "user"}},
        "speaker": {"metadata": {"speaker": "Sam"}},
    }[how]
    for secret, kind in SECRETS:
        res = mem.add(_turn(secret), session_id="s1", user_id="sam", **options)
        assert res.status == "added", (how, kind, res.reason)
        assert res.reason is not None and f"redacted:{kind} (1)" in res.reason
        stored = mem.get(res.id)
        _kept(stored.content, secret, kind)
        assert stored.metadata["redacted"] == [kind]
        assert stored.metadata["redacted_count"] == 1
        assert REST in mem.search(REST, user_id="sam", limit=20)[0].memory.content
    _nowhere(mem, *(s for s, _ in SECRETS))


def test_every_field_of_a_record_is_redacted_and_counted(make_mem: Callable[..., Memory]):
    mem = make_mem()
    res = mem.add(
        f"{_turn(GHP)} Also my card is {CARD}, exp 12/27",
        type="episodic", title=f"turn with {AKIA}", tags=["chat", MCK],
        metadata={"role": "user", "db": {"password": PASSWORD}},
    )  # fmt: skip
    assert res.status == "added"
    stored = mem.get(res.id)
    assert stored.title == "turn with [REDACTED:aws_access_key]"
    assert stored.tags == ["chat", "[REDACTED:memchentic_key]"]
    assert stored.metadata["db"] == {"password": "[REDACTED:password]"}
    kinds = ["aws_access_key", "card_number", "github_token", "memchentic_key", "password"]
    assert stored.metadata["redacted"] == kinds
    assert stored.metadata["redacted_count"] == 5
    assert res.reason is not None and res.reason.endswith(f"redacted:{','.join(kinds)} (5)")
    assert REST in stored.content
    _nowhere(mem, GHP, AKIA, MCK, PASSWORD, CARD.replace(" ", ""))
    assert CARD not in stored.content


def test_knowledge_keeps_the_refuse_default(make_mem: Callable[..., Memory]):
    """An entry written as knowledge is refused whole (nothing stored); a record of
    speech whose caller asks for ``secrets="refuse"`` is refused too."""
    mem = make_mem()
    for secret, kind in SECRETS:
        res = mem.add(_turn(secret), user_id="sam")
        assert (res.status, res.reason) == ("refused", f"secret:{kind}")
        strict = mem.add(_turn(secret), type="episodic", secrets="refuse", user_id="sam")
        assert strict.status == "refused"
    assert mem.list(user_id="sam", include_expired=True) == []
    _nowhere(mem, *(s for s, _ in SECRETS))


def test_a_batch_redacts_each_record_and_refuses_each_entry(make_mem: Callable[..., Memory]):
    mem = make_mem()
    results = mem.add_many([
        {"content": _turn(GHP), "metadata": {"role": "user"}},
        {"content": _turn(AKIA)},
        {"content": _turn(STRIPE), "type": "episodic"},
        {"content": "Nothing secret here, the build is green."},
    ], user_id="sam")  # fmt: skip
    assert [r.status for r in results] == ["added", "refused", "added", "added"]
    assert "redacted:github_token (1)" in (results[0].reason or "")
    assert results[1].reason == "secret:aws_access_key"
    assert "redacted" not in (results[3].reason or "")
    assert "redacted" not in mem.get(results[3].id).metadata
    _nowhere(mem, GHP, AKIA, STRIPE)


def test_record_turn_and_add_message_say_what_was_redacted(make_mem: Callable[..., Memory]):
    mem = make_mem()
    turn = mem.record_turn("user", _turn(GHP), session_id="s1", user_id="sam",
                           metadata={"api_key": "Zx9Kq2Lm7Vb4"})  # fmt: skip
    _kept(turn.content, GHP, "github_token")
    assert turn.metadata == {
        "api_key": "[REDACTED:password]",
        "redacted": ["github_token", "password"],
        "redacted_count": 2,
    }
    message = mem.add_message({"role": "assistant", "content": _turn(AKIA)},
                              session_id="s1", user_id="sam")  # fmt: skip
    _kept(message.content, AKIA, "aws_access_key")
    assert message.metadata == {"redacted": ["aws_access_key"], "redacted_count": 1}
    history = mem.get_history("s1", user_id="sam")
    assert [t.content for t in history] == [turn.content, message.content]
    _nowhere(mem, GHP, AKIA, "Zx9Kq2Lm7Vb4")


def test_a_revised_record_is_redacted_a_revised_entry_refused(make_mem: Callable[..., Memory]):
    mem = make_mem()
    turn = mem.add("I will paste the key later", type="episodic").id
    assert "[REDACTED:github_token]" in (mem.revise(turn, _turn(GHP)).memory.content or "")
    assert mem.get(turn).metadata["redacted"] == ["github_token"]
    fact = mem.add("The deploy key lives in the vault").id
    with pytest.raises(ValidationError) as err:
        mem.revise(fact, _turn(AKIA))
    assert err.value.field == "content"
    assert mem.get(fact).content == "The deploy key lives in the vault"
    _nowhere(mem, GHP, AKIA)


def test_mem0_infer_false_redacts_each_message(make_mem: Callable[..., Memory]):
    mem = make_mem()
    m0 = Mem0Memory(memory=mem)
    added = m0.add([{"role": "user", "content": _turn(GHP)},
                    {"role": "assistant", "content": _turn(MCK)}],
                   user_id="sam", run_id="chat-1", infer=False)  # fmt: skip
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD"]
    assert [r["memory"] for r in added["results"]] == [
        f"I pasted my config, key [REDACTED:{k}], and {REST}?"
        for k in ("github_token", "memchentic_key")
    ]
    for item in m0.get_all(user_id="sam")["results"]:
        assert item["metadata"]["redacted_count"] == 1
    _nowhere(mem, GHP, MCK)


# --- through HTTP, on both backends --------------------------------------------------------
@pytest.fixture
def served(make_mem: Callable[..., Memory]) -> Iterator[tuple[str, str, Memory]]:
    """A server over this test's store (each backend): (url, alice's key, the store)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    from .live_server import ServerThread

    mem = make_mem()
    mem.directory.create_identity("alice")
    key = KeyRing(mem.store).create(identity="alice")[0]
    thread = ServerThread(create_app(mem, mcp=False, console=False))
    url = thread.start()
    try:
        yield url, key, mem
    finally:
        thread.stop()


def test_http_records_are_redacted_knowledge_refused(served: tuple[str, str, Memory]):
    import httpx

    url, key, mem = served
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
        episodic = http.post("/v1/memories", json={"content": _turn(GHP), "type": "episodic"})
        assert episodic.json()["status"] == "added"
        assert episodic.json()["memory"]["content"].count("[REDACTED:github_token]") == 1
        assert "redacted:github_token (1)" in episodic.json()["reason"]
        batch = http.post("/v1/memories/batch", json={"items": [
            {"content": _turn(AKIA), "metadata": {"role": "user"}},
            {"content": _turn(STRIPE), "on_duplicate": "keep"},
            {"content": _turn(MCK)},
        ]}).json()  # fmt: skip
        assert [r["status"] for r in batch] == ["added", "added", "refused"]
        turn = http.post("/v1/turns", json={"role": "user", "content": _turn(GHP),
                                            "session_id": "s1"}).json()  # fmt: skip
        assert turn["metadata"] == {"redacted": ["github_token"], "redacted_count": 1}
        listed = http.get("/v1/memories").text
        assert REST in listed
    _nowhere(mem, GHP, AKIA, STRIPE, MCK)


def test_http_mem0_client_infer_false_redacts(served: tuple[str, str, Memory]):
    from memchentic.mem0 import MemoryClient

    url, key, mem = served
    with MemoryClient(host=url, api_key=key) as m0:
        added = m0.add([{"role": "user", "content": _turn(AKIA)}], infer=False)
        assert [r["event"] for r in added["results"]] == ["ADD"]
        assert "[REDACTED:aws_access_key]" in added["results"][0]["memory"]
        single = m0.add(_turn(GHP), infer=False)  # a string is a user message: a record
        assert [r["event"] for r in single["results"]] == ["ADD"]
    _nowhere(mem, AKIA, GHP)
