"""Secrets in any field of any write: refused or redacted, never stored (issue 20,
item 4). The detector is measured on a labelled corpus (``secret_corpus.py``) and
on every turn of two public chat benchmarks; the policy is checked on every write
path, and through the HTTP API: a key may only make ``SECRET_POLICY`` stricter."""

from __future__ import annotations

import gzip
import io
import json
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memchentic import Memory, Settings
from memchentic.errors import ValidationError
from memchentic.write.secrets import DETECTORS, find_secrets, redact, scan_value

from .secret_corpus import AKIA, GHP, MCK, NON_SECRETS, SECRETS, evasions

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"
KEY = "AKIAIOSFODNN7EXAMPLE"


def _rates(using: tuple[str, ...]) -> tuple[float, float, list[str], list[str]]:
    missed = [label for label, text in SECRETS if not find_secrets(text, using=using)]
    flagged = [text for text in NON_SECRETS if find_secrets(text, using=using)]
    return (1 - len(missed) / len(SECRETS), len(flagged) / len(NON_SECRETS), missed, flagged)


def test_the_corpus_is_caught_whole_with_no_false_positive(capsys: pytest.CaptureFixture[str]):
    assert len(SECRETS) >= 60 and len(NON_SECRETS) >= 60
    with capsys.disabled():
        print(f"\nsecret corpus: {len(SECRETS)} secrets, {len(NON_SECRETS)} non-secrets")
        for using in [(name,) for name in DETECTORS] + [DETECTORS]:
            detection, false_positive, _, _ = _rates(using)
            print(f"  {' + '.join(using):28s} detection {detection:6.1%}  "
                  f"false positives {false_positive:5.1%}")  # fmt: skip
    detection, false_positive, missed, flagged = _rates(DETECTORS)
    assert missed == [] and detection == 1.0
    assert flagged == [] and false_positive == 0.0


def _benchmark_texts() -> Iterator[str]:
    with gzip.open(DATA / "longmemeval" / "dev.json.gz", "rt", encoding="utf-8") as handle:
        for question in json.load(handle):
            for session in question["haystack_sessions"]:
                yield from (turn["content"] for turn in session)
    for path in sorted((DATA / "locomo").glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield turn["text"]
                    yield turn.get("blip_caption") or ""


@pytest.mark.skipif(not (DATA / "longmemeval" / "dev.json.gz").exists(),
                    reason="../shared/data is not here")  # fmt: skip
def test_no_turn_of_two_chat_benchmarks_is_taken_for_a_secret(
    capsys: pytest.CaptureFixture[str],
):
    texts = list(dict.fromkeys(t for t in _benchmark_texts() if t))
    flagged = [(t[:80], [f.kind for f in found]) for t in texts if (found := find_secrets(t))]
    with capsys.disabled():
        print(f"\nLongMemEval dev + LoCoMo: {len(texts)} distinct turns, "
              f"{len(flagged)} flagged ({len(flagged) / len(texts):.3%})")  # fmt: skip
    assert len(texts) > 30_000
    assert flagged == []


def test_obfuscated_secrets_are_redacted_whole():
    zero_width = "token gh\u200bp_" + GHP[4:]
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in AKIA)
    homoglyph = "key sk_liv\u0435_" + "a1B2" * 6  # Cyrillic е
    for text in (zero_width, fullwidth, homoglyph, GHP.upper(), MCK.lower()):
        out = redact(text)
        assert "[REDACTED:" in out, text
        assert not any(part in out for part in (GHP[8:20], AKIA[6:], "a1B2a1B2", MCK[8:20]))
    assert redact("my password is hunter2!") == "my password is [REDACTED:password]!"
    assert redact('{"password": "Tr0ub4dor&3"}') == '{"password": "[REDACTED:password]"}'


def test_structured_values_are_read_with_their_keys():
    assert scan_value({"db": {"password": "hunter22"}, "n": 3}) == ["password"]
    assert scan_value({"password_hint": "first pet", "theme": "dark"}) == []
    assert scan_value(["ok", KEY]) == ["aws_access_key"]
    assert scan_value({TOKEN: 1}) == ["github_token"]  # a key is scanned too
    deep: dict[str, object] = {"password": "hunter22"}
    for _ in range(900):  # deeper than Python's recursion allows
        deep = {"x": deep}
    assert scan_value(deep) == ["password"]


FIELDS: dict[str, object] = {
    "title": f"uses {TOKEN}", "tier_l0": f"uses {TOKEN}", "tier_l1": f"uses {TOKEN}",
    "slot_key": f"deploy:{TOKEN}", "path_hint": f"src/{TOKEN}", "repo": f"acme/{TOKEN}",
    "tags": ["deploy", TOKEN], "entities": ["Acme", TOKEN],
    "metadata": {"note": {"token": TOKEN}},
}  # fmt: skip


def test_a_secret_in_any_field_refuses_the_write(make_mem: Callable[..., Memory]):
    mem = make_mem()
    for field, value in FIELDS.items():
        res = mem.add("Deploy notes for the release", **{field: value})
        assert (res.status, res.reason) == ("refused", "secret:github_token"), field
    assert mem.add("pay with 4111 1111 1111 1111").reason == "secret:card_number"
    assert mem.add("login", metadata={"password": "hunter22"}).reason == "secret:password"
    both = mem.add(f"key {KEY}", title=f"token {TOKEN}")
    assert both.reason == "secret:aws_access_key,github_token"
    assert mem.list() == []


def test_redaction_covers_every_field(make_mem: Callable[..., Memory]):
    mem = make_mem()
    res = mem.add("Deploy notes for the release", **FIELDS, secrets="redact")
    stored = mem.get(res.id)
    assert stored.content == "Deploy notes for the release"
    assert stored.title == stored.tier_l0 == stored.tier_l1 == "uses [REDACTED:github_token]"
    assert stored.slot_key == "deploy:[REDACTED:github_token]"
    assert (stored.path_hint, stored.repo) == ("src/[REDACTED:github_token]",
                                               "acme/[REDACTED:github_token]")  # fmt: skip
    assert stored.tags == ["deploy", "[REDACTED:github_token]"]
    assert stored.entities == ["Acme", "[REDACTED:github_token]"]
    assert stored.metadata["note"] == {"token": "[REDACTED:github_token]"}
    assert stored.metadata["redacted"] == ["github_token"]
    dumped = json.dumps(stored.to_dict())
    assert TOKEN not in dumped and TOKEN[4:] not in dumped
    assert mem.add_many([f"again {TOKEN}"], secrets="redact")[0].memory.content == (
        "again [REDACTED:github_token]"
    )


def test_revise_manage_learn_and_import_apply_the_policy(make_mem: Callable[..., Memory]):
    mem = make_mem()
    kept = mem.add("Deploy notes for the release").id
    for field in ("tags", "metadata", "repo", "entities"):
        with pytest.raises(ValidationError) as err:
            mem.revise(kept, **{field: FIELDS[field]})
        assert err.value.field == field
    mem.improve(kept, confidence=0.5)  # no text: nothing to refuse
    done = mem.manage([{"op": "add", "content": "ok", "tags": [TOKEN]},
                       {"op": "revise", "id": kept, "metadata": {"pwd": "Summer2024!"}}])
    assert [r.status for r in done] == ["refused", "refused"]
    assert done[0].reason == "secret:github_token" and "metadata" in (done[1].reason or "")
    learned = mem.learn([{"role": "user", "content": f"Remember my GitHub token is {TOKEN}"}])
    assert learned and all(r.status == "refused" for r in learned)
    new_id = "01J0000000000000000000000A"
    line = {"kind": "memory", "record": {**mem.get(kept).to_dict(), "id": new_id, "tags": [TOKEN]}}
    report = mem.import_(io.StringIO(json.dumps(line) + "\n"))
    assert report.memories == 0 and "tags" in report.errors[0][1]
    assert [m.id for m in mem.list()] == [kept]
    assert TOKEN not in json.dumps([m.to_dict() for m in mem.list()])
    report = mem.import_(io.StringIO(json.dumps(line) + "\n"), secrets="redact")
    assert report.memories == 1
    assert mem.get(new_id).tags == ["[REDACTED:github_token]"]


def test_edges_and_turns_are_scanned(make_mem: Callable[..., Memory]):
    mem = make_mem()
    a, b = mem.add("Alice runs the deploy").id, mem.add("Bob reviews the deploy").id
    with pytest.raises(ValidationError) as err:
        mem.relate(a, b, "related_to", metadata={"why": f"shared {TOKEN}"})
    assert err.value.field == "metadata" and mem.edges(a) == []
    turn = mem.add_message({"role": "user", "content": f"my key is {KEY}",
                            "metadata": {"password": "hunter22"}})  # fmt: skip
    assert turn.content == "my key is [REDACTED:aws_access_key]"
    assert turn.metadata == {"password": "[REDACTED:password]",  # and what was redacted
                             "redacted": ["aws_access_key", "password"], "redacted_count": 2}
    assert KEY not in json.dumps([t.to_dict() for t in mem.get_history()])
    redacting = make_mem("r", settings=Settings(secret_policy="redact"))
    c, d = redacting.add("Carol").id, redacting.add("Dave").id
    edge = redacting.relate(c, d, "related_to", metadata={"why": f"shared {TOKEN}"})
    assert edge.metadata == {"why": "shared [REDACTED:github_token]"}
    assert redacting.edges(c)[0].metadata == edge.metadata


def test_an_identity_may_only_make_the_policy_stricter(make_mem: Callable[..., Memory]):
    root = make_mem(settings=Settings(secret_policy="redact"))
    root.directory.create_identity("alice")
    alice = root.for_identity("alice")
    with pytest.raises(ValidationError) as err:
        alice.add(f"token {TOKEN}", secrets="allow")
    assert err.value.field == "secrets" and "stricter" in err.value.rule
    assert alice.add(f"token {TOKEN}").memory.content == "token [REDACTED:github_token]"
    assert alice.add(f"token {TOKEN}", secrets="refuse").status == "refused"
    trusted = root.add(f"root's own {TOKEN}", secrets="allow")  # the trusted principal may
    assert trusted.status == "added" and TOKEN in trusted.memory.content
    with pytest.raises(ValidationError):
        alice.add_many([{"content": "x", "secrets": "allow"}])
    with pytest.raises(ValidationError):
        alice.add("x", secrets="never")
    assert TOKEN not in json.dumps([m.to_dict() for m in alice.list()])


def test_text_without_any_trigger_holds_no_secret():
    assert find_secrets("Sam moved to Oslo and likes long walks by the fjord.") == []
    assert find_secrets("") == []
    kinds = [f.kind for f in find_secrets(f"say {TOKEN.upper()} and {TOKEN}")]
    assert kinds == ["github_token", "github_token"]  # a lower- or upper-cased key is a key


# --- Unicode evasions ----------------------------------------------------------------------
def _as_read(text: str) -> str:
    """``text`` as a reader takes it: compatibility forms folded, marks and invisible
    characters gone."""
    kept = (c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c)[0] != "M")
    return "".join(c for c in kept if unicodedata.category(c) != "Cf")


def test_every_secret_family_obfuscated_is_found_as_the_plain_one():
    """Each secret of the corpus, with combining marks (``ǵhp_``), invisible characters,
    fullwidth or mathematical letters, or look-alike letters of other scripts, is
    found as the same kind and redacted whole (what is left reads as no part of it)."""
    missed, changed, leaked, cases = [], [], [], 0
    for label, text in SECRETS:
        plain = find_secrets(text)
        first = plain[0]
        kinds = sorted({f.kind for f in plain})
        secret = text[first.start : first.end]
        tail = secret[-8:] if len(secret) >= 12 else secret
        for how, evaded in evasions(text, first.start, first.end):
            cases += 1
            found = sorted({f.kind for f in find_secrets(evaded)})
            if first.kind not in found:
                missed.append((label, how, found))
            elif found != kinds:
                changed.append((label, how, kinds, found))
            elif tail.lower() in _as_read(redact(evaded)).lower():
                leaked.append((label, how))
    assert cases >= 20 * len(SECRETS)
    assert missed == []
    assert changed == []
    assert leaked == []


def test_an_accented_token_is_refused_or_redacted_as_the_plain_one(
    make_mem: Callable[..., Memory],
):
    """The attack as it was sent (``ǵhp_...``, a combining acute after the g), on a
    write: refused under ``refuse``, redacted whole under ``redact``."""
    mem = make_mem()
    for token in ("g\u0301" + TOKEN[1:], "\u01f5" + TOKEN[1:], TOKEN[:3] + "\u200d" + TOKEN[3:]):
        refused = mem.add(f"the deploy token is {token}")
        assert (refused.status, refused.reason) == ("refused", "secret:github_token")
        kept = mem.add(f"deploy with {token} tomorrow", secrets="redact").memory
        assert kept is not None
        assert kept.content == "deploy with [REDACTED:github_token] tomorrow"
        mem.delete(kept.id)
    assert mem.list() == []


# --- through the HTTP API ----------------------------------------------------------------
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from .live_server import Live, live_server  # noqa: E402


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMCHENTIC_SECRET_POLICY", "redact")
        with live_server(tmp_path_factory.mktemp("secrets")) as server:
            yield server


def test_http_a_key_cannot_send_a_looser_policy_than_the_server(live: Live):
    alice, admin = live.http("alice"), live.http("admin")
    loose = alice.post("/v1/memories", json={"content": f"token {TOKEN}", "secrets": "allow"})
    assert loose.status_code == 422
    assert loose.json()["error"]["field"] == "secrets"
    batch = alice.post("/v1/memories/batch",
                       json={"items": [{"content": f"token {TOKEN}", "secrets": "allow"}]})
    assert batch.status_code == 422
    same = alice.post("/v1/memories", json={"content": f"token {TOKEN}"}).json()
    assert same["memory"]["content"] == "token [REDACTED:github_token]"
    strict = alice.post("/v1/memories", json={"content": f"key {KEY}", "secrets": "refuse"})
    assert strict.json()["status"] == "refused"
    assert strict.json()["reason"] == "secret:aws_access_key"
    listed = alice.get("/v1/memories").text
    assert TOKEN not in listed and KEY not in listed
    admitted = admin.post("/v1/memories", json={"content": f"admin's {MCK}", "secrets": "allow"})
    assert admitted.json()["status"] == "added" and MCK in admitted.json()["memory"]["content"]


def test_http_every_field_edge_and_turn_is_scanned(live: Live):
    alice = live.http("alice")
    made = alice.post("/v1/memories", json={
        "content": "Deploy notes", "tags": [TOKEN], "metadata": {"db": {"password": "hunter22"}},
        "slot_key": f"k:{KEY}", "entities": [TOKEN], "path_hint": f"src/{TOKEN}",
    }).json()  # fmt: skip
    stored = alice.get(f"/v1/memories/{made['id']}").json()
    assert stored["tags"] == ["[REDACTED:github_token]"]
    assert stored["metadata"]["db"] == {"password": "[REDACTED:password]"}
    assert stored["slot_key"] == "k:[REDACTED:aws_access_key]"
    other = alice.post("/v1/memories", json={"content": "Release checklist"}).json()["id"]
    edge = alice.post("/v1/edges", json={"source": made["id"], "target": other,
                                         "kind": "related_to", "metadata": {"t": TOKEN}})
    assert edge.json()["metadata"] == {"t": "[REDACTED:github_token]"}
    revised = alice.patch(f"/v1/memories/{other}", json={"repo": f"acme/{TOKEN}"})
    assert revised.json()["memory"]["repo"] == "acme/[REDACTED:github_token]"
    turn = alice.post("/v1/turns", json={"role": "user", "content": f"use {MCK}",
                                         "metadata": {"api_key": "Zx9Kq2Lm7Vb4"}})  # fmt: skip
    assert turn.json()["content"] == "use [REDACTED:memchentic_key]"
    assert turn.json()["metadata"] == {"api_key": "[REDACTED:password]",
                                       "redacted": ["memchentic_key", "password"],
                                       "redacted_count": 2}  # fmt: skip
    history = alice.get("/v1/turns").text
    assert MCK not in history and "Zx9Kq2Lm7Vb4" not in history
    everything = live.http("admin").get("/v1/export").text
    for secret in (TOKEN, KEY, "hunter22"):
        assert secret not in everything
