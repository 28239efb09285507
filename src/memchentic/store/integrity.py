"""Integrity reports of a store (``memchentic check``), and the check any backend gets
through the :class:`~memchentic.store.base.Store` interface alone.

:meth:`Store.check` returns :meth:`IntegrityReport.to_dict`::

    {
      "ok": true,                    # no check failed
      "backend": "sqlite",
      "location": "/path/memory.db",
      "schema_version": 3,
      "expected_schema_version": 3,  # null when the backend cannot tell
      "counts": {"memories": 120, "vectors": 120, "edges": 4, "versions": 131, ...},
      "checks": {"schema_version": "ok", "vectors": "ok", "keyword_index": "skipped", ...},
      "problems": ["edges: 2 edges name a missing memory (e.g. 01J...)"]
    }

Check names (a backend runs those it can, and marks the others ``skipped``):

``schema_version``  the schema is at the version this code expects
``rows``            stored rows are whole (JSON fields parse, timestamps in their format)
``vectors``         every memory has one finite vector of the recorded dimension, and
                    no vector belongs to a missing memory
``keyword_index``   the full-text index holds exactly the memories' text
``vector_log``      replaying the vector change log gives the vector table
``vector_index``    the in-process (or server) vector index agrees with the vector table
``edges``           no edge names a missing memory
``supersession``    no memory is superseded by a missing one
``versions``        no versions of a missing memory, other than its delete tombstone
``entities``        no entity link to a missing memory
``database``        the database engine's own consistency check
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..record import Edge, MemoryRecord, Version
from .filters import MemoryFilter

#: Every check, in report order.
CHECKS: tuple[str, ...] = (
    "schema_version", "rows", "vectors", "keyword_index", "vector_log", "vector_index",
    "edges", "supersession", "versions", "entities", "database",
)  # fmt: skip
#: Ids quoted in one problem line.
EXAMPLES = 5


@dataclass
class IntegrityReport:
    """What a check found; ``checks`` maps each check to ``ok``, ``failed`` or ``skipped``."""

    backend: str
    location: str
    schema_version: int = 0
    expected_schema_version: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def record(self, name: str, problems: list[str]) -> None:
        """The outcome of check ``name``: each problem is one line for a person."""
        if problems:
            self.checks[name] = "failed"
            self.problems.extend(f"{name}: {p}" for p in problems)
        elif self.checks.get(name) != "failed":
            self.checks[name] = "ok"

    def to_dict(self) -> dict[str, Any]:
        checks = {name: self.checks.get(name, "skipped") for name in CHECKS}
        checks.update({k: v for k, v in self.checks.items() if k not in checks})
        return {
            "ok": self.ok,
            "backend": self.backend,
            "location": self.location,
            "schema_version": self.schema_version,
            "expected_schema_version": self.expected_schema_version,
            "counts": dict(self.counts),
            "checks": checks,
            "problems": list(self.problems),
        }


def found(count: int, what: str, examples: list[Any]) -> list[str]:
    """``[]`` when ``count`` is 0, else one line: "N <what> (e.g. a, b)"."""
    if not count:
        return []
    shown = ", ".join(str(e) for e in examples[:EXAMPLES])
    return [f"{count} {what}" + (f" (e.g. {shown})" if shown else "")]


def vector_problems(
    vectors: dict[str, np.ndarray], ids: list[str], dimension: int | None
) -> tuple[list[str], list[str]]:
    """(ids without a vector, ids whose vector has the wrong size or is not finite)."""
    missing = [i for i in ids if i not in vectors]
    bad = [
        i
        for i, v in vectors.items()
        if (dimension is not None and v.shape != (dimension,)) or not np.all(np.isfinite(v))
    ]
    return missing, bad


class Checked(Protocol):
    """What :func:`generic_check` reads of a store: part of the
    :class:`~memchentic.store.base.Store` interface (which calls it, so this
    module does not import that one)."""

    location: str

    def schema_version(self) -> int: ...
    def get_meta(self, key: str) -> str | None: ...
    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...
    def iter_memories(self, flt: MemoryFilter, batch: int = 500) -> Iterator[MemoryRecord]: ...
    def iter_edges(self) -> Iterator[Edge]: ...
    def iter_versions(self) -> Iterator[Version]: ...


def generic_check(store: Checked, backend: str | None = None) -> IntegrityReport:
    """The checks that need only the :class:`Store` interface: schema version (set),
    vectors (present, sized, finite), orphan edges, supersession and versions.
    Index internals are left to the backend's own :meth:`Store.check`."""
    report = IntegrityReport(backend or type(store).__name__, store.location)
    report.schema_version = store.schema_version()
    report.record("schema_version", [] if report.schema_version > 0 else ["no migrations"])
    dim_text = store.get_meta("embedding_dimension")
    dimension = int(dim_text) if dim_text else None
    everything = MemoryFilter.everything(include_expired=True, include_superseded=True)
    ids: set[str] = set()
    superseded: dict[str, str] = {}
    missing: list[str] = []
    bad: list[str] = []
    with_vectors = 0
    batch: list[str] = []

    def flush() -> None:
        nonlocal with_vectors
        vectors = store.vectors(batch)
        with_vectors += len(vectors)
        no_vector, wrong = vector_problems(vectors, batch, dimension)
        missing.extend(no_vector)
        bad.extend(wrong)
        batch.clear()

    for record in store.iter_memories(everything):
        ids.add(record.id)
        if record.superseded_by:
            superseded[record.id] = record.superseded_by
        batch.append(record.id)
        if len(batch) >= 500:
            flush()
    flush()
    report.record(
        "vectors",
        found(len(missing), "memories without a vector", missing)
        + found(len(bad), "vectors of the wrong size or not finite", bad),
    )
    edges = list(store.iter_edges())
    orphans = [e.id for e in edges if e.source not in ids or e.target not in ids]
    report.record("edges", found(len(orphans), "edges name a missing memory", orphans))
    dangling = [m for m, tip in superseded.items() if tip not in ids]
    report.record(
        "supersession", found(len(dangling), "memories superseded by a missing one", dangling)
    )
    ops: dict[str, list[str]] = defaultdict(list)
    versions = 0
    for version in store.iter_versions():
        versions += 1
        if version.memory_id not in ids:
            ops[version.memory_id].append(version.op)
    stray = [m for m, seen in ops.items() if any(op != "delete" for op in seen)]
    report.record("versions", found(len(stray), "missing memories still have versions", stray))
    report.counts.update(
        memories=len(ids), vectors=with_vectors, edges=len(edges), versions=versions,
    )  # fmt: skip
    return report
