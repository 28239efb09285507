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


# --- issue 20, item 6: --as confines the CLI ------------------------------------------------
def test_as_refuses_every_trusted_only_command(run):
    from memchentic.cli import TRUSTED_ONLY

    run("identity", "create", "alice")
    made = run("--as", "alice", "keys", "create", "--admin", code=2)
    assert "mck_" not in made.output and "refused under --as" in made.output
    assert json.loads(run("keys", "list", "--json").stdout) == []  # no key was made
    argv = {"keys": ["keys", "list"], "backup": ["backup", "x.db"], "restore": ["restore", "x.db"],
            "migrate": ["migrate", "x.db"]}  # fmt: skip
    for command in sorted(TRUSTED_ONLY):
        refused = run("--as", "alice", *argv.get(command, [command]), code=2)
        assert f"{command} runs as the local owner" in refused.output, command
    assert {"keys", "reindex", "migrate", "backup", "restore", "check", "serve"} <= TRUSTED_ONLY
    # directory commands run as the identity, whose rules refuse what it may not do
    assert "trusted" in run("--as", "alice", "identity", "create", "mallory", code=2).output
    assert "trusted" in run("--as", "alice", "org", "create", "acme", code=2).output
    assert [i["name"] for i in json.loads(run("identity", "list", "--json").stdout)] == ["alice"]


def test_an_empty_identity_is_refused_not_trusted(run):
    run("add", "The owner's private note")
    for empty in ("", "  "):
        out = run("--as", empty, "list", "--json", code=2)
        assert "--as" in out.output and "owner's private note" not in out.output
    mcp = run("mcp", "--identity", "", code=2)
    assert "--identity" in mcp.output


def test_reindex_as_an_identity_is_refused_by_the_library(tmp_path: Path):
    from memchentic import Memory, ValidationError

    with Memory(store=str(tmp_path / "m.db"), embedder="hash") as mem:
        with pytest.raises(ValidationError) as err:
            mem.as_identity("alice").reindex()
        assert err.value.field == "principal"


def test_group_invitations_through_the_cli(run):
    for name in ("alice", "bob"):
        run("identity", "create", name)
    run("--as", "alice", "group", "create", "core", "--member", "bob")
    run("--as", "alice", "add", "Core team meets on Mondays", "--namespace", "group:core")
    assert json.loads(run("--as", "bob", "search", "core meets Mondays", "--json").stdout) == []
    pending = json.loads(run("--as", "bob", "group", "invitations", "--json").stdout)
    assert [(i["team_name"], i["invited_by"]) for i in pending] == [("core", "alice")]
    invited = run("--as", "alice", "group", "add-member", "core", "nobody")
    assert "invited nobody" in invited.output  # the same answer as for a real identity
    run("--as", "bob", "group", "accept", "core")
    found = json.loads(run("--as", "bob", "search", "core meets Mondays", "--json").stdout)
    assert [h["text"] for h in found] == ["Core team meets on Mondays"]
    assert "no invitation" in run("--as", "bob", "group", "decline", "core").output
