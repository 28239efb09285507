"""Logging a conversation the way agents do, through the public write path.

Two modes that store the same rows:

- ``add`` (the default): one :meth:`Memory.add` per turn, as an agent logs each
  turn when it happens;
- ``add_many``: one :meth:`Memory.add_many` per session, the same fields.

Every turn is ``type="episodic"``, kept permanently (a transcript does not expire)
and written with ``on_duplicate="keep"``: the engine never resolves such writes
against what is stored, so the order of the calls is the only thing that could
tell the modes apart, and ties in ``created_at`` sort by write order (ids count up
within the process, see ``memchentic.ids``).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memchentic import Embedder, Memory
from memchentic.write.statements import embedding_text

MODES = ("add", "add_many")


@dataclass(frozen=True, slots=True)
class Entry:
    """One logged turn: its text, its session, when it was said, what it carries."""

    content: str
    session_id: str
    at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)


def stamp(session_start: datetime, index: int) -> datetime:
    """The time of a session's ``index``-th turn (from 0): a minute after the last."""
    return session_start + timedelta(minutes=index)


def warm(embedder: Embedder, entries: Iterable[Entry]) -> None:
    """Embed every turn in one batched call first (cached), so that writes turn by
    turn do not run the model once per turn."""
    embedder.embed_batch([embedding_text(e.content) for e in entries])


def _item(entry: Entry) -> dict[str, Any]:
    return {
        "content": entry.content,
        "session_id": entry.session_id,
        "metadata": entry.metadata,
        "created_at": entry.at,
        "valid_from": entry.at,
        "now": entry.at,
    }


def ingest(mem: Memory, entries: Sequence[Entry], *, user_id: str, mode: str = "add") -> list[str]:
    """Log ``entries`` in order; the ids of the memories, in the same order.

    Raises :class:`RuntimeError` if any turn was refused or resolved."""
    common: dict[str, Any] = {
        "type": "episodic", "user_id": user_id, "on_duplicate": "keep", "permanent": True,
    }  # fmt: skip
    if mode == "add":
        results = [mem.add(**_item(e), **common) for e in entries]
    elif mode == "add_many":
        results = []
        for _, session in itertools.groupby(entries, key=lambda e: e.session_id):
            results += mem.add_many([_item(e) for e in session], **common)
    else:
        raise ValueError(f"ingest mode must be one of {', '.join(MODES)}, not {mode!r}")
    wrong = [r for r in results if r.id is None or r.status != "added"]
    if wrong:
        raise RuntimeError(f"{len(wrong)} of {len(results)} turns not added: {wrong[0]}")
    return [str(r.id) for r in results]


def copy_store(src: Path, dst_dir: Path) -> Path:
    """The SQLite store at ``src`` (its database and WAL files) copied into
    ``dst_dir``: each system or ablation asks on a fresh copy, so none sees
    another's recalls."""
    dst_dir.mkdir(parents=True, exist_ok=True)
    for f in src.parent.glob(src.name + "*"):
        shutil.copy2(f, dst_dir / f.name)
    return dst_dir / src.name
