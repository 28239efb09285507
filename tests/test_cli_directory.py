"""CLI for identities, groups, orgs and grants, and running commands ``--as`` an identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memchentic.cli import app

runner = CliRunner()


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMCHENTIC_HOME", str(tmp_path))
    monkeypatch.setenv("MEMCHENTIC_EMBEDDER", "hash")

    def invoke(*args: str, code: int = 0):
        result = runner.invoke(app, list(args))
        assert result.exit_code == code, (args, result.output)
        return result

    return invoke


def test_groups_members_and_acting_as(run):
    for name in ("alice", "bob", "carol"):
        run("identity", "create", name)
    run("identity", "create", "sophie", "--agent")
    ids = {i["name"]: i for i in json.loads(run("identity", "list", "--json").stdout)}
    assert ids["sophie"]["kind"] == "agent" and set(ids) == {"alice", "bob", "carol", "sophie"}
    run("group", "create", "core", "--admin", "alice", "--member", "bob")
    run("--as", "alice", "add", "Core team meets on Mondays", "--namespace", "group:core")
    found = json.loads(run("--as", "bob", "search", "core meets Mondays", "--json").stdout)
    assert [h["text"] for h in found] == ["Core team meets on Mondays"]
    assert json.loads(run("--as", "carol", "search", "core meets", "--json").stdout) == []
    out = run("--as", "carol", "add", "sneak", "--namespace", "group:core", code=2)
    assert "cannot write to this namespace" in out.output
    run("group", "remove-member", "core", "bob")
    assert json.loads(run("--as", "bob", "search", "core meets", "--json").stdout) == []
    last = run("group", "remove-member", "core", "alice", code=2)
    assert "last admin" in last.output
    members = json.loads(run("group", "members", "core", "--json").stdout)
    assert [(m["identity_id"], m["role"]) for m in members] == [("alice", "admin")]


def test_orgs_and_grants(run):
    for name in ("alice", "dave"):
        run("identity", "create", name)
    run("org", "create", "acme", "--admin", "alice")
    run("--as", "alice", "add", "Acme shares its roadmap", "--namespace", "federated:acme:alice")
    assert json.loads(run("--as", "dave", "search", "roadmap", "--json").stdout) == []
    run("grant", "add", "federated:acme:alice", "dave")
    assert len(json.loads(run("--as", "dave", "search", "roadmap", "--json").stdout)) == 1
    grants = json.loads(run("grant", "list", "--json").stdout)
    assert [(g["namespace"], g["grantee"]) for g in grants] == [("federated:acme:alice", "dave")]
    run("grant", "revoke", "federated:acme:alice", "dave")
    assert json.loads(run("--as", "dave", "search", "roadmap", "--json").stdout) == []
    bad = run("grant", "add", "federated:acme:alice", "nobody", code=2)
    assert "grantee" in bad.output
    run("org", "add-member", "acme", "dave")
    run("org", "deactivate", "acme", "dave")
    run("--as", "alice", "add", "Acme all-hands on Friday", "--namespace", "org:acme")
    assert json.loads(run("--as", "dave", "search", "all-hands", "--json").stdout) == []
    run("org", "activate", "acme", "dave")
    assert len(json.loads(run("--as", "dave", "search", "all-hands", "--json").stdout)) == 1
