"""The MCP server through the official SDK's own client: over stdio (spawning
``memchentic mcp``) and over streamable HTTP (``/mcp`` of a real server)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("fastapi")

import httpx  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from memchentic.server.mcp_server import TOOLS  # noqa: E402

from .live_server import Live, live_server  # noqa: E402


def _payload(result: Any) -> Any:
    """A tool result's JSON (a list tool may answer with one text block per item)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) else data
    texts = [block.text for block in result.content]
    if len(texts) == 1:
        try:
            return json.loads(texts[0])
        except ValueError:
            return texts[0]
    return [json.loads(t) for t in texts]


def _error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def _memchentic_command() -> str:
    found = shutil.which("memchentic", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the memchentic console script is not installed")
    return found


async def _session_script(client: Client) -> dict[str, Any]:
    """What an agent does in a session; returns what it saw."""
    seen: dict[str, Any] = {}
    tools = await client.list_tools()
    seen["tools"] = sorted(t.name for t in tools.tools)
    seen["descriptions"] = {t.name: t.description or "" for t in tools.tools}
    saved = _payload(await client.call_tool("remember", {
        "content": "Mia prefers answers with code samples", "type": "preference",
        "tags": ["style"],
    }))  # fmt: skip
    seen["saved"] = saved
    dup = _payload(await client.call_tool("remember", {
        "content": "Mia prefers answers with code samples"}))  # fmt: skip
    seen["duplicate"] = dup
    tagged = _payload(await client.call_tool("remember", {
        "content": "The weekly release review is on Fridays",
        "metadata": {"project": "atlas"}}))  # fmt: skip
    seen["filtered"] = _payload(await client.call_tool("search", {
        "query": "weekly release review", "filters": {"project": "atlas"}}))  # fmt: skip
    seen["filtered"] = seen["filtered"] if isinstance(seen["filtered"], list) else [
        seen["filtered"]]
    seen["tagged"] = tagged
    seen["bad_filter"] = _error(await client.call_tool("search", {
        "query": "Mia", "filters": {"project": {"like": "a%"}}}))  # fmt: skip
    guide = _payload(await client.call_tool("remember", {
        "content": "Run the test suite before proposing a commit", "kind": "guide"}))  # fmt: skip
    hits = _payload(await client.call_tool("search", {"query": "how does Mia like answers",
                                                      "include_trace": True}))  # fmt: skip
    seen["hits"] = hits if isinstance(hits, list) else [hits]
    revised = _payload(await client.call_tool("revise", {
        "id": saved["id"], "content": "Mia prefers short answers with code samples"}))  # fmt: skip
    seen["revised"] = revised
    edge = _payload(await client.call_tool("relate", {
        "source": guide["id"], "target": saved["id"], "kind": "related_to"}))  # fmt: skip
    seen["edge"] = edge
    recent = _payload(await client.call_tool("list_recent", {"limit": 5}))
    seen["recent"] = recent if isinstance(recent, list) else [recent]
    seen["context"] = _payload(await client.call_tool("context", {"query": "answer style"}))
    seen["recall"] = _payload(await client.call_tool("recall", {"entity": "Mia"}))
    seen["secret"] = _payload(await client.call_tool("remember", {
        "content": "the deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"}))  # fmt: skip
    seen["forget"] = _payload(await client.call_tool("forget", {"id": saved["id"]}))
    seen["forget_again"] = _error(await client.call_tool("forget", {"id": saved["id"]}))
    return seen


def _check(seen: dict[str, Any]) -> None:
    assert seen["tools"] == sorted(TOOLS)
    remember = seen["descriptions"]["remember"]
    for words in ("guide", "entry", "chatter", "guesses", "secrets"):
        assert words in remember
    assert seen["saved"]["status"] == "added"
    assert seen["duplicate"]["status"] == "refused"
    assert seen["duplicate"]["id"] == seen["saved"]["id"]
    top = seen["hits"][0]
    assert top["text"] == "Mia prefers answers with code samples" and "match" in top["trace"]
    assert [h["id"] for h in seen["filtered"]] == [seen["tagged"]["id"]]
    assert "filters.project.like" in seen["bad_filter"]
    assert seen["revised"]["status"] == "revised"
    assert seen["edge"]["kind"] == "related_to"
    assert len(seen["recent"]) == 3
    assert "Mia prefers short answers with code samples" in seen["context"]
    assert seen["secret"]["status"] == "refused" and "secret" in seen["secret"]["reason"]
    assert seen["forget"]["status"] == "deleted"
    assert "not_found: memory not found" in seen["forget_again"]


def test_stdio_through_the_sdk_client(tmp_path: Path):
    env = {**os.environ, "MEMCHENTIC_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(
        command=_memchentic_command(),
        args=["mcp", "--identity", "mia", "--store", str(tmp_path / "m.db"), "--embedder", "hash"],
        env=env,
    )

    async def run() -> dict[str, Any]:
        async with Client(params) as client:
            return await _session_script(client)

    seen = asyncio.run(run())
    _check(seen)
    from memchentic import Memory

    with Memory(store=str(tmp_path / "m.db"), embedder="hash") as mem:  # it ran as user:mia
        assert {r.namespace for r in mem.list()} == {"user:mia"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("mcp")) as server:
        yield server


async def _over_http(live: Live, who: str, script: Any) -> Any:
    headers = {"Authorization": f"Bearer {live.keys[who]}"}
    import httpx2  # the SDK's HTTP client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
    ):
        return await script(client)


def test_streamable_http_through_the_sdk_client(live: Live):
    seen = asyncio.run(_over_http(live, "alice", _session_script))
    _check(seen)

    async def bobs_view(client: Client) -> Any:
        return _payload(await client.call_tool("search", {"query": "Run the test suite"}))

    assert asyncio.run(_over_http(live, "bob", bobs_view)) == []
    assert {r.namespace for r in live.mem.list()} == {"user:alice"}


def test_mcp_over_http_needs_a_key(live: Live):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer mck_wrong"}):
        response = httpx.post(f"{live.url}/mcp", json=body, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
