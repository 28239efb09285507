"""Write-time decisions on a labelled set of write pairs (issue 31, item 1).

Each pair of ``tests/data/write_pairs.py`` is written into a namespace of its own
(a new ``user_id`` per pair) in one store, the old statement first, then the new
one, through one write path; the second write's outcome (``added``,
``superseded`` or ``refused``) is compared with the pair's label. Printed per
category: right/total for memchentic, and, on the same vectors (the embedder's
vectors of the same texts), for two seed rules:

- A: cosine >= 0.92 refused, else added;
- B: cosine >= 0.9 refused, >= 0.8 with opposite polarity superseded, else added.

Paths (``--path``, repeatable; ``all`` for every one):

- ``add``, ``add_many``: ``Memory.add`` one by one / ``Memory.add_many`` (every old
  statement in one batch, then every new one); outcome: the write's status.
- ``http``: ``POST /v1/memories`` on the real app (in-process, ``TestClient``,
  an admin key); outcome: the response's status.
- ``mcp``: the MCP ``remember`` tool through the MCP SDK's client, in-process;
  ``remember`` takes no ``on_duplicate``, so the logged turns that only
  ``on_duplicate="keep"`` marks as records do not apply there.
- ``mem0``: the mem0 adapter's ``add`` with ``infer=False`` (the messages kept as
  they are, role in metadata: records of what was said), so only ``record``
  applies; knowledge goes through ``infer=True``, which stores what the extractor
  makes of the messages (the rules extract none of these statements; a chat model
  rewrites them), not the statements themselves. Outcome read from the store:
  whether the old memory is still live and the new one stored.
- ``langgraph``: ``MemchenticStore.put`` of each statement under its own key:
  a key-addressed store where the caller decides what replaces what, so only
  ``additive``, ``distinct`` and ``record`` apply (both items stay).

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 python bench/write_decisions.py --backend sqlite --path all
    HF_HUB_OFFLINE=1 python bench/write_decisions.py --backend postgres --path add
    python bench/write_decisions.py --backend postgres --postgres-url postgresql://...

Vectors are cached on disk by text hash (``--cache``, default
``bench/results/embeddings.sqlite``; ``bench.harness.cache``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness.cache import DEFAULT_PATH, DiskCachedEmbedder  # noqa: E402
from memchentic import Embedder, Memory, Settings  # noqa: E402
from memchentic.embed import get_embedder  # noqa: E402
from memchentic.write.polarity import RulePolarity  # noqa: E402
from memchentic.write.statements import memory_embedding_text  # noqa: E402
from tests.data.write_pairs import CATEGORIES, PAIRS, WritePair  # noqa: E402

PATHS = ("add", "add_many", "http", "mcp", "mem0", "langgraph")
#: Categories each path applies to (module docstring).
APPLIES = {
    "mem0": ("record",),
    "langgraph": ("additive", "distinct", "record"),
}


def applies(pair: WritePair, path: str) -> bool:
    """Whether ``pair`` can be written through ``path`` as labelled."""
    if pair.category not in APPLIES.get(path, CATEGORIES):
        return False
    if path == "mcp" and pair.category == "record":  # remember has no on_duplicate
        return any(k != "on_duplicate" for k in (*pair.old_options, *pair.new_options))
    return True


# --- the seed rules ----------------------------------------------------------------------
def cosines(embedder: Embedder, pairs: Sequence[WritePair]) -> np.ndarray:
    """The cosine of each pair's two texts, as the store embeds them."""
    texts = [memory_embedding_text(None, t) for p in pairs for t in (p.old, p.new)]
    vectors = np.asarray(embedder.embed_batch(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.einsum("ij,ij->i", vectors[0::2], vectors[1::2])


def seed_a(cosine: float, pair: WritePair) -> str:
    return "refused" if cosine >= 0.92 else "added"


def seed_b(cosine: float, pair: WritePair) -> str:
    polarity = RulePolarity()
    if cosine >= 0.9:
        return "refused"
    if cosine >= 0.8 and polarity.polarity(pair.old) != polarity.polarity(pair.new):
        return "superseded"
    return "added"


# --- memchentic through each path ----------------------------------------------------------
def _user(i: int) -> str:
    return f"pair{i}"


def _item(pair: WritePair, i: int, which: str) -> dict[str, Any]:
    text, options = (pair.old, pair.old_options) if which == "old" else (pair.new, pair.new_options)
    return {"content": text, "user_id": _user(i), **options}


def _by_state(mem: Memory, i: int, before: list[str]) -> str:
    """The outcome of the second write, read from the store: refused when nothing
    new is live, superseded when something live left, else added."""
    after = [r.id for r in mem.list(user_id=_user(i), limit=100)]
    gone = set(before) - set(after)
    new = set(after) - set(before)
    if not new:
        return "refused"
    return "superseded" if gone else "added"


def run_path(mem: Memory, path: str, pairs: list[tuple[int, WritePair]]) -> dict[int, str]:
    """Write every pair through ``path``; the outcome of each second write."""
    if path == "add":
        out = {}
        for i, p in pairs:
            mem.add(**_item(p, i, "old"))
            out[i] = mem.add(**_item(p, i, "new")).status
        return out
    if path == "add_many":
        mem.add_many([_item(p, i, "old") for i, p in pairs])
        results = mem.add_many([_item(p, i, "new") for i, p in pairs])
        return {i: r.status for (i, _), r in zip(pairs, results, strict=True)}
    if path == "http":
        return _http(mem, pairs)
    if path == "mcp":
        return _mcp(mem, pairs)
    if path == "mem0":
        return _mem0(mem, pairs)
    if path == "langgraph":
        return _langgraph(mem, pairs)
    raise SystemExit(f"unknown path {path!r}")


def _http(mem: Memory, pairs: list[tuple[int, WritePair]]) -> dict[int, str]:
    from fastapi.testclient import TestClient

    from memchentic.server import create_app
    from memchentic.server.auth import KeyRing

    key = KeyRing(mem.store).create(admin=True)[0]
    out = {}
    with TestClient(create_app(mem), headers={"Authorization": f"Bearer {key}"}) as client:
        for i, p in pairs:
            for which in ("old", "new"):
                response = client.post("/v1/memories", json=_item(p, i, which))
                response.raise_for_status()
            out[i] = str(response.json()["status"])
    return out


def _mcp(mem: Memory, pairs: list[tuple[int, WritePair]]) -> dict[int, str]:
    from mcp import Client

    from memchentic.server.mcp_server import build_server

    async def run() -> dict[int, str]:
        out = {}
        async with Client(build_server(lambda _ctx: mem)) as client:
            for i, p in pairs:
                for which in ("old", "new"):
                    item = _item(p, i, which)
                    item.pop("on_duplicate", None)  # not a parameter of remember
                    result = await client.call_tool("remember", item)
                    if result.is_error:
                        raise SystemExit(f"remember failed: {result.content}")
                    data = result.structured_content
                    if data is None:
                        data = json.loads(result.content[0].text)
                    data = data.get("result", data)
                out[i] = str(data["status"])
        return out

    return asyncio.run(run())


def _mem0(mem: Memory, pairs: list[tuple[int, WritePair]]) -> dict[int, str]:
    from memchentic.mem0 import Memory as Mem0

    adapter = Mem0(memory=mem)
    out = {}
    for i, p in pairs:
        before: list[str] = []
        for text, options in ((p.old, p.old_options), (p.new, p.new_options)):
            before = [r.id for r in mem.list(user_id=_user(i), limit=100)]
            role = str((options.get("metadata") or {}).get("role", "user"))
            adapter.add([{"role": role, "content": text}], user_id=_user(i), infer=False)
        out[i] = _by_state(mem, i, before)
    return out


def _langgraph(mem: Memory, pairs: list[tuple[int, WritePair]]) -> dict[int, str]:
    from memchentic.integrations.langgraph import MemchenticStore

    out = {}
    for i, p in pairs:
        store = MemchenticStore(mem, user_id=_user(i))
        store.put(("facts",), "old", {"text": p.old})
        before = [r.id for r in mem.list(user_id=_user(i), limit=100)]
        store.put(("facts",), "new", {"text": p.new})
        out[i] = _by_state(mem, i, before)
    return out


# --- stores ------------------------------------------------------------------------------
@contextmanager
def store_location(backend: str, postgres_url: str | None) -> Iterator[Callable[[str], str]]:
    """``location(name)``: a new store of ``backend`` for each name (a SQLite file, or
    a PostgreSQL schema on ``postgres_url`` or on an embedded server)."""
    directory = Path(tempfile.mkdtemp(prefix="memchentic-writes-"))
    server = None
    try:
        if backend == "sqlite":
            yield lambda name: str(directory / f"{name}.db")
            return
        if postgres_url is None:
            from memchentic.store.postgres_embedded import EmbeddedPostgres

            server = EmbeddedPostgres(directory)
            postgres_url = server.base_url
        url, run = postgres_url, f"{os.getpid()}_{int(time.time())}"
        # a schema per path and run (left on a server given by URL: drop bench_writes_*)
        yield lambda name: url + ("&" if "?" in url else "?") + f"schema=bench_writes_{run}_{name}"
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def report(
    embedder: Embedder, backend: str, paths: Sequence[str], postgres_url: str | None = None
) -> dict[str, Any]:
    """Per path and category: right and total for memchentic and the seed rules."""
    pairs = list(enumerate(PAIRS))
    cos = cosines(embedder, PAIRS)
    out: dict[str, Any] = {"backend": backend, "pairs": len(PAIRS), "paths": {}}
    with store_location(backend, postgres_url) as location:
        for path in paths:
            chosen = [(i, p) for i, p in pairs if applies(p, path)]
            mem = Memory(store=location(path), embedder=embedder, settings=Settings())
            try:
                got = run_path(mem, path, chosen)
            finally:
                mem.close()
            table: dict[str, dict[str, int]] = {}
            wrong = []
            for i, p in chosen:
                row = table.setdefault(p.category, Counter())
                row["total"] += 1
                row["memchentic"] += got[i] == p.expected
                row["seed_a"] += seed_a(float(cos[i]), p) == p.expected
                row["seed_b"] += seed_b(float(cos[i]), p) == p.expected
                if got[i] != p.expected:
                    wrong.append({"old": p.old, "new": p.new, "category": p.category,
                                  "expected": p.expected, "got": got[i],
                                  "cosine": round(float(cos[i]), 3)})  # fmt: skip
            out["paths"][path] = {"categories": {c: dict(table[c]) for c in CATEGORIES
                                                 if c in table}, "wrong": wrong}  # fmt: skip
    return out


def print_report(found: dict[str, Any]) -> None:
    print(f"backend: {found['backend']}  pairs: {found['pairs']}")
    for path, data in found["paths"].items():
        missing = [c for c in CATEGORIES if c not in data["categories"]]
        note = f"  (not applicable: {', '.join(missing)})" if missing else ""
        print(f"\npath: {path}{note}")
        print(f"  {'category':<10} {'memchentic':>11} {'seed A':>9} {'seed B':>9}")
        for category, row in data["categories"].items():
            n = row["total"]
            cells = [f"{row[k]}/{n}" for k in ("memchentic", "seed_a", "seed_b")]
            print(f"  {category:<10} {cells[0]:>11} {cells[1]:>9} {cells[2]:>9}")
        for w in data["wrong"]:
            print(f"    wrong: {w['category']} {w['old']!r} -> {w['new']!r}: "
                  f"{w['got']} (cosine {w['cosine']})")  # fmt: skip


def add_write_options(parser: argparse.ArgumentParser) -> None:
    """The options of a run over the write paths (this script's and bench/truth_set.py's)."""
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--postgres-url", help="a PostgreSQL server with pgvector (default: "
                        "an embedded one, started for the run)")  # fmt: skip
    parser.add_argument("--path", action="append", choices=(*PATHS, "all"),
                        help="write path (repeatable; default add)")  # fmt: skip
    parser.add_argument("--embedder", default="local", help="local (default) or hash")
    parser.add_argument("--cache", default=str(DEFAULT_PATH))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_write_options(parser)
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    args = parser.parse_args(argv)
    paths = list(PATHS) if not args.path or "all" in args.path else list(args.path)
    if not args.path:
        paths = ["add"]
    embedder = DiskCachedEmbedder(get_embedder(args.embedder, Settings()), Path(args.cache))
    found = report(embedder, args.backend, paths, args.postgres_url)
    print_report(found)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
