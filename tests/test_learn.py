"""learn(): the rule-based extractor, the OpenAI-compatible chat extractor against a
real local HTTP server, the normal write path for what is learned, and manage()."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memchentic import Memory, ValidationError
from memchentic.learn import Message, OpenAIChatExtractor, RuleExtractor, to_messages
from memchentic.llm import ChatClient, ChatError

RULE_CASES = [
    ("My name is Sam and I live in Berlin.", [("Name is Sam", "fact", "profile.name"),
                                              ("Lives in Berlin", "fact", "profile.location")]),
    ("Actually I moved to Lisbon last month.", [("Lives in Lisbon", "fact", "profile.location")]),
    ("I live in Lisbon, Portugal", [("Lives in Lisbon, Portugal", "fact", "profile.location")]),
    ("Call me Sammy from now on.", [("Prefers to be called Sammy", "preference",
                                     "profile.preferred_name")]),
    ("I prefer aisle seats, thanks", [("Prefers aisle seats", "preference", None)]),
    ("I'm allergic to peanuts.", [("Allergic to peanuts", "fact", "profile.allergy.peanuts")]),
    ("I’m allergic to shellfish", [("Allergic to shellfish", "fact", "profile.allergy.shellfish")]),
    ("Never use emojis in your answers.", [("Never use emojis in your answers", "instruction",
                                            None)]),
    ("Always answer in British English, please", [("Always answer in British English",
                                                   "instruction", None)]),
    ("I never eat meat", [("Never eats meat", "preference", None)]),
    ("I always drink my coffee black.", [("Always drinks their coffee black", "preference",
                                          None)]),
    ("I like hiking in Sintra", [("Likes hiking in Sintra", "preference",
                                  "opinion:hiking_in_sintra")]),
    ("I don't like hiking in Sintra anymore", [("Does not like hiking in Sintra", "preference",
                                                "opinion:hiking_in_sintra")]),
    ("My favourite food is grilled sardines", [("Favorite food is grilled sardines",
                                                "preference", "profile.favorite.food")]),
    ("My goal is to run a marathon", [("Wants to run a marathon", "goal", None)]),
    ("I'm trying to learn Portuguese", [("Wants to learn Portuguese", "goal", None)]),
    ("I work at Acme Robotics", [("Works at Acme Robotics", "fact", "profile.employer")]),
    ("I work as a nurse", [("Works as a nurse", "fact", "profile.occupation")]),
    ("I'm 34 years old", [("Is 34 years old", "fact", "profile.age")]),
    ("I'm vegan", [("Is vegan", "preference", "profile.diet")]),
    ("Remember that my sister Ana lives in Porto.", [("Their sister Ana lives in Porto", "fact",
                                                      None)]),
    # not self-statements: no memory of the rules (the message is kept as written:
    # tests/test_learn_unread.py)
    ("Can you call me if anything changes?", []),
    ("I'd like to book a table", []),
    ("I like that idea", []),
    ("What's the weather in Lisbon?", []),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), RULE_CASES)
def test_rule_extractor(text: str, expected: list[tuple[str, str, str | None]]):
    found = RuleExtractor(keep_unread=False).extract(to_messages(text))
    assert [(e.content, e.type, e.slot_key) for e in found] == expected
    kept = [e for e in RuleExtractor().extract(to_messages(text)) if e.metadata]
    assert [e.content for e in kept] == ([] if expected else [text])


def test_rules_read_only_the_users_messages():
    messages = [{"role": "assistant", "content": "I live in the cloud."},
                {"role": "user", "content": "I live in Oslo."}]  # fmt: skip
    found = RuleExtractor().extract(to_messages(messages))
    assert [e.content for e in found] == ["Lives in Oslo"]
    instruction = RuleExtractor().extract([Message("user", "Never share my address")])[0]
    assert instruction.kind == "guide"


def test_learn_uses_the_normal_write_path(mem: Memory):
    first = mem.learn("My name is Sam. I live in Berlin. Never use emojis.", user_id="sam")
    assert [r.status for r in first] == ["added", "added", "added"]
    location = first[1]
    moved = mem.learn([{"role": "user", "content": "I moved to Lisbon."}], user_id="sam")
    assert moved[0].status == "updated" and moved[0].id == location.id  # the slot, in place
    record = mem.get(location.id)
    assert record.content == "Lives in Lisbon" and record.slot_key == "profile.location"
    assert [h["content"] for h in record.metadata["history"]] == ["Lives in Berlin"]
    assert record.metadata["source"] == "learn" and record.metadata["extractor"] == "rules"
    again = mem.learn("Never use emojis!", user_id="sam")
    assert again[0].status in ("merged", "reinforced")  # a guide: reinforced, not duplicated
    prefs = mem.learn("I prefer window seats.", user_id="sam", session_id="s1")
    dup = mem.learn("I prefer window seats.", user_id="sam")
    assert dup[0].status == "refused" and dup[0].id == prefs[0].id  # near duplicate
    assert mem.get(prefs[0].id).session_id == "s1"
    unread = mem.learn("What's the weather like?", user_id="sam")  # kept as written
    assert mem.get(unread[0].id).metadata["extraction"] == "none"


def test_learn_refuses_secrets_like_any_write(mem: Memory):
    results = mem.learn("Remember that my api key is sk-proj-abcdefghijklmnopqrstuvwxyz1234",
                        user_id="sam")  # fmt: skip
    assert [r.status for r in results] == ["refused"]
    assert results[0].reason and results[0].reason.startswith("secret")


def test_learn_emits_memory_extracted_without_content(mem: Memory):
    seen = []
    mem.subscribe(seen.append, types=["memory.extracted"])
    results = mem.learn("I live in Oslo. I'm vegan.", user_id="kim", session_id="s")
    assert [(e.memory_id, e.namespace, e.payload["status"]) for e in seen] == [
        (r.id, "user:kim", "added") for r in results
    ]
    assert all(e.payload["extractor"] == "rules" for e in seen)
    assert "Oslo" not in json.dumps([e.to_dict() for e in seen])


def test_learn_accepts_turns_from_history(mem: Memory):
    mem.record_turn("user", "I work at Globex.", user_id="sam", session_id="s")
    mem.record_turn("assistant", "I work at OpenMemory.", user_id="sam", session_id="s")
    results = mem.learn(mem.get_history("s", user_id="sam"), user_id="sam")
    assert [mem.get(r.id).content for r in results] == ["Works at Globex"]


def test_extractor_is_pluggable(mem: Memory):
    class Shouty:
        name = "shouty"

        def extract(self, messages: list[Message]) -> list[Any]:
            return RuleExtractor().extract([Message(m.role, m.content.upper()) for m in messages])

    results = mem.learn("I live in Oslo", user_id="sam", extractor=Shouty())
    assert mem.get(results[0].id).content == "Lives in OSLO"
    assert mem.get(results[0].id).metadata["extractor"] == "shouty"


# --- the chat extractor, against a local server speaking the chat-completions protocol ---


class _ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.requests: list[dict[str, Any]] = []
        self.answer: str = json.dumps({"memories": []})
        self.status = 200


class _ChatHandler(BaseHTTPRequestHandler):
    server: _ChatServer

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        reply = {
            "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": self.server.answer}}],
        }  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass


@pytest.fixture
def chat_server() -> Iterator[_ChatServer]:
    server = _ChatServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_chat_extractor_is_used_when_configured(mem: Memory, chat_server: _ChatServer):
    chat_server.answer = json.dumps({"memories": [
        {"content": "Lives in Lisbon", "type": "fact", "slot_key": "profile.location",
         "kind": "entry", "importance": 0.8},
        {"content": "Never use emojis", "type": "instruction", "kind": "guide"},
        {"content": "Prefers trains", "type": "Preference", "importance": 7},
        {"content": "", "type": "fact"},  # unusable items are skipped
        "Has a cat named Miso",
        42,
    ]})  # fmt: skip
    mem.settings.chat_base_url = f"http://127.0.0.1:{chat_server.server_port}/v1"
    mem.settings.chat_model = "tiny-chat"
    mem.settings.chat_api_key = "test-key"
    messages = [{"role": "user", "content": "I moved to Lisbon. No emojis please."},
                {"role": "assistant", "content": "Got it."}]  # fmt: skip
    results = mem.learn(messages, user_id="sam")

    (request,) = chat_server.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer test-key"
    body = request["body"]
    assert body["model"] == "tiny-chat" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0]["role"] == "system" and "JSON" in body["messages"][0]["content"]
    assert body["messages"][1] == {
        "role": "user", "content": "user: I moved to Lisbon. No emojis please.\nassistant: Got it.",
    }  # fmt: skip

    records = [mem.get(r.id) for r in results]
    assert [(r.content, r.type, r.kind, r.slot_key) for r in records] == [
        ("Lives in Lisbon", "fact", "entry", "profile.location"),
        ("Never use emojis", "instruction", "guide", None),
        ("Prefers trains", "preference", "entry", None),
        ("Has a cat named Miso", "fact", "entry", None),
    ]
    assert records[2].importance == 1.0  # clamped
    assert all(r.metadata["extractor"] == "chat" for r in records)
    ctx = mem.context("where do I live", user_id="sam")
    assert str(ctx).startswith("## Instructions\n- Never use emojis\n")


def test_chat_extractor_errors(chat_server: _ChatServer):
    url = f"http://127.0.0.1:{chat_server.server_port}/v1"
    extractor = OpenAIChatExtractor(ChatClient(url, "tiny", max_attempts=1, backoff=0))
    messages = [Message("user", "I live in Oslo")]
    chat_server.answer = "Sure! You live in Oslo."
    with pytest.raises(ChatError, match="JSON"):
        extractor.extract(messages)
    chat_server.answer = json.dumps({"facts": ["x"]})
    with pytest.raises(ChatError, match="memories"):
        extractor.extract(messages)
    chat_server.answer = '```json\n{"memories": [{"content": "Lives in Oslo"}]}\n```'
    assert [e.content for e in extractor.extract(messages)] == ["Lives in Oslo"]
    chat_server.status = 400
    with pytest.raises(ChatError, match="HTTP 400"):
        extractor.extract(messages)
    assert extractor.extract([]) == []
    extractor.close()


def test_chat_failure_writes_nothing(mem: Memory, chat_server: _ChatServer):
    chat_server.answer = "not json"
    mem.settings.chat_base_url = f"http://127.0.0.1:{chat_server.server_port}/v1"
    with pytest.raises(ChatError):
        mem.learn("I live in Oslo", user_id="sam")
    assert mem.list(user_id="sam") == []


# --- manage: several operations in one call ---------------------------------------------


def test_manage_applies_operations_in_order(mem: Memory):
    keep = mem.add("Sam drinks green tea", user_id="sam")
    gone = mem.add("Sam's old phone is a Nokia", user_id="sam")
    seen = []
    mem.subscribe(seen.append, types=["memory.managed"])
    results = mem.manage([
        {"op": "add", "content": "Sam has a dog called Rex", "type": "fact"},
        {"op": "update", "id": keep.id, "content": "Sam drinks black tea", "importance": 0.9},
        {"op": "forget", "id": gone.id},
        {"op": "delete", "id": "no-such-id"},
        {"op": "none", "id": keep.id},
    ], user_id="sam")  # fmt: skip
    assert [r.status for r in results] == ["added", "revised", "deleted", "refused", "skipped"]
    assert results[3].reason and results[3].reason.startswith("not_found")
    assert mem.get(results[0].id).namespace == "user:sam"
    assert mem.get(keep.id).content == "Sam drinks black tea"
    assert mem.get(keep.id).importance == 0.9
    assert [(e.payload["op"], e.payload["status"], e.memory_id) for e in seen] == [
        ("add", "added", results[0].id), ("revise", "revised", keep.id),
        ("delete", "deleted", gone.id), ("delete", "refused", "no-such-id"),
    ]  # fmt: skip
    assert seen[0].namespace == "user:sam" and seen[3].namespace is None


def test_manage_checks_every_operation_before_applying_any(mem: Memory):
    for bad in ([{"op": "add", "content": "x"}, {"op": "explode"}],
                [{"op": "add"}],
                [{"op": "revise", "content": "no id"}],
                [{"op": "delete", "id": "x", "content": "y"}],
                [{"op": "delete", "memory_id": "x"}],
                ["add"]):  # fmt: skip
        with pytest.raises(ValidationError):
            mem.manage(bad, user_id="sam")
    with pytest.raises(ValidationError):
        mem.manage({"op": "add", "content": "x"})  # type: ignore[arg-type]
    assert mem.list(user_id="sam") == []


def test_manage_respects_access(mem: Memory):
    alice, bob = mem.as_identity("alice"), mem.as_identity("bob")
    secret = alice.add("Alice's locker code hint is 'birthday'")
    results = bob.manage([{"op": "delete", "id": secret.id},
                          {"op": "revise", "id": secret.id, "content": "hacked"}])  # fmt: skip
    assert [r.status for r in results] == ["refused", "refused"]
    assert all(r.reason and r.reason.startswith("not_found") for r in results)
    assert alice.get(secret.id).content == "Alice's locker code hint is 'birthday'"
