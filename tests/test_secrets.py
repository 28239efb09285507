"""Secrets in any text field of a write: refused or redacted, never stored."""

from __future__ import annotations

from collections.abc import Callable

from memchentic import Memory
from memchentic.write.secrets import find_secrets

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"
KEY = "AKIAIOSFODNN7EXAMPLE"


def test_a_secret_in_any_field_refuses_the_write(make_mem: Callable[..., Memory]):
    mem = make_mem()
    for field in ("title", "tier_l0", "tier_l1"):
        res = mem.add("Deploy notes for the release", **{field: f"uses {TOKEN}"})
        assert (res.status, res.reason) == ("refused", "secret:github_token"), field
    both = mem.add(f"key {KEY}", title=f"token {TOKEN}")
    assert both.reason == "secret:aws_access_key,github_token"
    assert mem.list() == []


def test_redaction_covers_every_field(make_mem: Callable[..., Memory]):
    mem = make_mem()
    res = mem.add("Deploy notes for the release", title=f"token {TOKEN}",
                  tier_l1=f"key {KEY} here", secrets="redact")  # fmt: skip
    stored = mem.get(res.id)
    assert stored.content == "Deploy notes for the release"
    assert stored.title == "token [REDACTED:github_token]"
    assert stored.tier_l1 == "key [REDACTED:aws_access_key] here"
    assert stored.metadata["redacted"] == ["aws_access_key", "github_token"]
    assert mem.add_many([f"again {TOKEN}"], secrets="redact")[0].memory.content == (
        "again [REDACTED:github_token]"
    )


def test_text_without_any_trigger_holds_no_secret():
    assert find_secrets("Sam moved to Oslo and likes long walks by the fjord.") == []
    assert find_secrets("") == []
    assert [f.kind for f in find_secrets(f"say {TOKEN.upper()} and {TOKEN}")] == ["github_token"]
