"""Backup and restore (``memchentic backup`` / ``memchentic restore``).

Two kinds of backup, both online (writers go on) and consistent (one committed
state), both written under a temporary name and renamed when complete:

* **physical** (SQLite, the default there): SQLite's online backup API copies the
  whole database file: memories, vectors, indexes, directory, events, turns. The
  in-process vector index is not copied; a store rebuilds it from the vector table.
* **logical** (any backend, ``--logical``): the JSON Lines export (memories with
  their vectors, edges, versions, timestamps), read inside a snapshot. It does not
  hold the directory (identities, groups, grants), events or session turns.

:func:`restore` puts a backup into a store: a physical backup into a SQLite file
(copied page by page through SQLite, so processes that have the file open see the
restored state), a logical backup (or a physical one, read as logical) into any
store in one transaction. It refuses a store that holds memories unless
``force=True``, and ends with :meth:`Store.check`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from .embed import Embedder
from .engine.transfer import export_jsonl, import_jsonl
from .errors import EmbedderError, NotAStoreError, StoreError, ValidationError
from .settings import Settings
from .store import open_store
from .store.base import MemoryFilter, Store
from .store.sqlite_files import PARTIAL, remove_leftovers

SQLITE_MAGIC = b"SQLite format 3\x00"
_EVERYTHING = MemoryFilter.everything(include_expired=True, include_superseded=True)


class RecordedEmbedder(Embedder):
    """Stands for the embedder a store was built with, known by its recorded model
    and dimension only: enough to export and import vectors, never to embed."""

    name = "recorded"

    def __init__(self, model: str, dimension: int) -> None:
        self.model = model
        self.dimension = dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderError(
            f"this needs the embedder {self.identity} (some memories have no stored "
            "vector): pass --embedder"
        )


@dataclass
class BackupResult:
    path: str
    method: str  # "sqlite" (physical) or "logical"
    bytes: int
    memories: int
    check: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "method": self.method, "bytes": self.bytes,
                "memories": self.memories, "check": self.check}  # fmt: skip


@dataclass
class RestoreResult:
    target: str
    method: str
    memories: int
    replaced: int = 0
    check: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "method": self.method, "memories": self.memories,
                "replaced": self.replaced, "check": self.check}  # fmt: skip


def _memory(store: Store, settings: Settings, embedder: Embedder | None = None) -> Any:
    """A trusted Memory over ``store``, by default with the store's recorded embedder."""
    from .memory import Memory

    if embedder is None:
        model, dim = store.get_meta("embedding_model"), store.get_meta("embedding_dimension")
        embedder = RecordedEmbedder(model or "none", int(dim or 1))
    return Memory(store=store, embedder=embedder, settings=settings, check_embedder=False)


def backup(
    store: Store,
    dest: str | os.PathLike[str],
    settings: Settings,
    *,
    logical: bool = False,
    verify: bool = True,
) -> BackupResult:
    """Back ``store`` up to the new file ``dest`` (physical for SQLite unless
    ``logical``); with ``verify``, a physical copy is opened and checked. Hidden
    partial copies that killed backups left in that folder are removed first."""
    target = Path(dest).expanduser()
    if target.exists():
        raise ValidationError("dest", f"{target} exists; choose a new file")
    remove_leftovers(target.parent, [PARTIAL])
    physical = getattr(store, "backup_to", None)
    if physical is not None and not logical:
        size = physical(target)
        result = BackupResult(str(target), "sqlite", size, store.count(_EVERYTHING))
        if verify:
            copy = open_store(str(target), settings)
            try:
                result.check = copy.check()
                result.memories = result.check["counts"]["memories"]
            finally:
                copy.close()
        return result
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        mem = _memory(store, settings)
        with store.snapshot(), open(tmp, "w", encoding="utf-8") as handle:
            memories = store.count(_EVERYTHING)
            export_jsonl(mem, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return BackupResult(str(target), "logical", target.stat().st_size, memories)


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def _is_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def restore(
    source: str | os.PathLike[str],
    target: str,
    settings: Settings,
    *,
    force: bool = False,
    embedder: Embedder | None = None,
) -> RestoreResult:
    """Restore the backup ``source`` into the store at ``target`` (a path or URL).

    Refuses (:class:`ValidationError`, nothing changed) when the target holds
    memories and ``force`` is False, and when the backup is damaged or was made
    with another embedder than ``embedder``. Returns what was restored and the
    target's :meth:`Store.check` report."""
    src = Path(source).expanduser()
    if not src.is_file():
        raise ValidationError("source", f"{src} is not a file")
    if _is_sqlite(src):
        if not _is_url(target):
            return _restore_file(src, target, settings, force=force)
        with tempfile.TemporaryDirectory(prefix="memchentic-restore-") as tmp:
            dump = Path(tmp) / "backup.jsonl"
            original = open_store(str(src), settings)
            try:
                backup(original, dump, settings, logical=True)
            finally:
                original.close()
            return _restore_logical(dump, target, settings, force=force, embedder=embedder)
    return _restore_logical(src, target, settings, force=force, embedder=embedder)


def _existing(target: str, settings: Settings, force: bool) -> int:
    """Memories the target holds; refuses a non-empty target without ``force``."""
    store = open_store(target, settings)
    try:
        count = store.count(_EVERYTHING)
    finally:
        store.close()
    if count and not force:
        raise ValidationError(
            "target", f"the store holds {count} memories; restore with --force to replace them"
        )
    return count


def _restore_file(src: Path, target: str, settings: Settings, *, force: bool) -> RestoreResult:
    path = Path(target.removeprefix("sqlite://")).expanduser()
    if path.resolve() == src.resolve():
        raise ValidationError("target", "is the backup itself")
    source = sqlite3.connect(src, isolation_level=None)
    try:
        app = source.execute("SELECT value FROM meta WHERE key = 'app'").fetchone()
        if app is None or app[0] != "memchentic":
            raise NotAStoreError(f"{src} is not a memchentic backup")
        damage = [r[0] for r in source.execute("PRAGMA quick_check")]
        if damage != ["ok"]:
            raise StoreError(f"the backup {src} is damaged: {'; '.join(damage[:3])}")
        replaced = _existing(str(path), settings, force) if path.exists() else 0
        dest = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        try:
            source.backup(dest, pages=-1)
            # A new epoch: every saved or in-process vector index of the old content
            # (also in other processes) is dropped and rebuilt from the vector table.
            dest.execute(
                "INSERT INTO meta(key, value) VALUES ('index_epoch', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(time.time_ns()),),
            )
        finally:
            dest.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot restore {src} into {path}: {exc}") from exc
    finally:
        source.close()
    return _finish(str(path), "sqlite", replaced, settings)


def _header(src: Path) -> dict[str, Any]:
    with open(src, encoding="utf-8") as handle:
        first = handle.readline()
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("kind") != "header":
        raise ValidationError("source", "line 1: not a memchentic backup (no header line)")
    return header


def _restore_logical(
    src: Path, target: str, settings: Settings, *, force: bool, embedder: Embedder | None
) -> RestoreResult:
    identity = str(_header(src).get("embedder") or "")
    model, _, dim = identity.rpartition(":")
    if not model or not dim.isdigit():
        raise ValidationError("source", "line 1: the header names no embedder")
    chosen = embedder or RecordedEmbedder(model, int(dim))
    if chosen.identity != identity:
        raise ValidationError(
            "embedder", f"the backup was made with {identity}, not {chosen.identity}"
        )
    replaced = _existing(target, settings, force)
    store = open_store(target, settings)
    try:
        mem = _memory(store, settings, chosen)
        with store.write(), open(src, encoding="utf-8") as handle:
            for record in list(store.iter_memories(_EVERYTHING)):
                store.delete(record.id)
                store.purge_versions(record.id)
            if _import_all(mem, handle):  # an empty backup names no real embedder
                store.set_meta("embedding_model", chosen.model)
                store.set_meta("embedding_dimension", str(chosen.dimension))
                store.set_meta("index_epoch", str(time.time_ns()))
    finally:
        store.close()
    return _finish(target, "logical", replaced, settings)


def _import_all(mem: Any, handle: IO[str]) -> int:
    """Import every line or raise (rolling the restore back); the memories imported."""
    report = import_jsonl(mem, handle, strict=True)
    if report.errors:
        number, message = report.errors[0]
        raise ValidationError(
            "source",
            f"{len(report.errors)} bad lines (first: line {number}: {message}); nothing restored",
        )
    return report.memories


def _finish(target: str, method: str, replaced: int, settings: Settings) -> RestoreResult:
    store = open_store(target, settings)
    try:
        report = store.check()
    finally:
        store.close()
    return RestoreResult(target, method, report["counts"]["memories"], replaced, report)
