"""Export and import as JSON Lines: lossless (records, vectors, edges, versions and
timestamps), one object per line, a header first.

    {"kind": "header", "format": "memchentic", "version": 1, "embedder": "model:dim"}
    {"kind": "memory", "record": {...}, "vector": "<base64 float32>"}
    {"kind": "edge", "edge": {...}}
    {"kind": "version", "version": {...}}
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from .. import validation as check
from ..access import parse_namespace, slot_right
from ..clock import as_utc, to_text, utcnow
from ..errors import MemchenticError, ValidationError
from ..ids import derived_id, new_id
from ..record import EDGE_KINDS, Edge, MemoryRecord, Version, normalise_type
from ..reports import ImportReport
from ..store.base import MemoryFilter
from ..text import KEYWORD_LANGUAGES, KEYWORD_RULES
from ..write.secrets import effective_policy, police_record, police_value
from ..write.statements import memory_embedding_text
from .gate import Gate
from .quotas import CapTally


class SupportsGate(Protocol):
    """What holds a gate (``Memory``): export and import take it or a gate."""

    _gate: Gate


def _gate_of(on: Gate | SupportsGate) -> Gate:
    return on if isinstance(on, Gate) else on._gate


FORMAT = "memchentic"
FORMAT_VERSION = 1
_RECORD_FIELDS = {f.name for f in fields(MemoryRecord)}
_TIME_FIELDS = ("created_at", "updated_at", "valid_from", "valid_to", "expires_at",
                "last_recalled_at")  # fmt: skip
#: Optional text fields of a record and their length limits (0: the default).
_TEXT_LIMITS = {"title": 0, "path_hint": 0, "repo": 0, "slot_key": 256, "user_id": 256,
                "agent_id": 256, "session_id": 256, "superseded_by": 256}  # fmt: skip


def _lines(gate: Gate, *, vectors: bool) -> Iterator[dict[str, Any]]:
    flt = MemoryFilter(
        namespaces=gate.readable_namespaces(None),
        include_expired=True,
        include_superseded=True,
    )
    yield {
        "kind": "header",
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "embedder": gate.parts.embedder.identity,
        # what the keyword index stems in: a restore into a new store stems alike
        "keyword_language": gate.keyword_language,
        "keyword_rules": sorted(gate.keyword_rules),
        "exported_at": to_text(utcnow()),
    }
    ids: set[str] = set()
    for record in gate.iter_memories(flt):
        ids.add(record.id)
        line: dict[str, Any] = {"kind": "memory", "record": record.to_dict()}
        if vectors:
            vec = gate.vectors([record.id]).get(record.id)
            if vec is not None:
                line["vector"] = base64.b64encode(vec.astype(np.float32).tobytes()).decode()
        yield line
    for edge in gate.iter_edges():
        if edge.source in ids and edge.target in ids:
            yield {"kind": "edge", "edge": edge.to_dict()}
    for version in gate.iter_versions():
        if version.memory_id in ids:
            yield {"kind": "version", "version": version.to_dict()}


def export_jsonl(
    on: Gate | SupportsGate, target: str | Path | IO[str], *, vectors: bool = True
) -> int:
    """Write every memory the caller can read; returns the number of lines written."""
    if isinstance(target, str | Path):
        with open(target, "w", encoding="utf-8") as handle:
            return export_jsonl(on, handle, vectors=vectors)
    count = 0
    for line in _lines(_gate_of(on), vectors=vectors):
        target.write(json.dumps(line, ensure_ascii=False) + "\n")
        count += 1
    return count


def _parse_record(data: Any, gate: Gate) -> MemoryRecord:
    if not isinstance(data, dict):
        raise ValidationError("record", "must be an object")
    unknown = set(data) - _RECORD_FIELDS
    if unknown:
        raise ValidationError("record", f"unknown fields: {', '.join(sorted(unknown))}")
    values = dict(data)
    for name in _TIME_FIELDS:
        values[name] = as_utc(values.get(name), name)
    values["id"] = check.identifier(values.get("id"), "id")
    values["namespace"] = str(parse_namespace(values.get("namespace", "")))
    values["content"] = check.content(values.get("content"), gate.parts.settings)
    values["type"] = normalise_type(values.get("type"))
    values["kind"] = check.kind(values.get("kind", "entry"))
    values["tags"] = check.tags(values.get("tags"), gate.parts.settings)
    values["metadata"] = check.metadata(values.get("metadata"), gate.parts.settings)
    for name, default in (("confidence", 1.0), ("importance", 0.5)):
        values[name] = check.unit_interval(values.get(name, default), name)
    # Every other field too: a line that passes here must insert without error.
    for name, limit in _TEXT_LIMITS.items():
        limit = limit or check.MAX_SHORT_TEXT_CHARS
        values[name] = check.optional_text(values.get(name), name, limit)
    for name in ("tier_l0", "tier_l1"):
        values[name] = check.optional_text(
            values.get(name), name, gate.parts.settings.max_content_bytes
        )
    values["entities"] = check.entities(values.get("entities")) or []
    values["reinforcement"] = check.whole(values.get("reinforcement", 1), "reinforcement", 1)
    values["recall_count"] = check.whole(values.get("recall_count", 0), "recall_count")
    if values.get("polarity", 1) not in (1, -1) or isinstance(values.get("polarity"), bool):
        raise ValidationError("polarity", "must be 1 or -1")
    if not isinstance(values.get("pinned", False), bool):
        raise ValidationError("pinned", "must be true or false")
    if values.get("created_at") is None:
        raise ValidationError("created_at", "is required")
    values["updated_at"] = values["updated_at"] or values["created_at"]
    return MemoryRecord(**values)


def _parse_vector(text: Any, dimension: int) -> np.ndarray | None:
    if text is None:
        return None
    try:
        vec = np.frombuffer(base64.b64decode(text, validate=True), dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise ValidationError("vector", "must be base64 float32 bytes") from exc
    if vec.size != dimension or not np.all(np.isfinite(vec)):
        return None  # another embedder: re-embed instead
    return vec


def _parse_line(number: int, text: str, gate: Gate, policy: str) -> tuple[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("line", f"not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or "kind" not in data:
        raise ValidationError("kind", "each line must be an object with a 'kind'")
    kind = data["kind"]
    if kind == "header":
        if data.get("format") != FORMAT:
            raise ValidationError("format", f"must be {FORMAT!r}")
        language = data.get("keyword_language")
        if language is not None and language not in KEYWORD_LANGUAGES:
            raise ValidationError(
                "keyword_language", f"must be one of {', '.join(KEYWORD_LANGUAGES)}"
            )
        rules = data.get("keyword_rules")
        if rules is not None and (
            not isinstance(rules, list) or not all(r in KEYWORD_RULES for r in rules)
        ):
            raise ValidationError(
                "keyword_rules", f"must be a list of {', '.join(KEYWORD_RULES)}"
            )
        return kind, (language, None if rules is None else frozenset(rules))
    if kind == "memory":
        record = _parse_record(data.get("record"), gate)
        police_record(record, policy)  # the secret rule of any write
        return kind, (record, _parse_vector(data.get("vector"), gate.parts.embedder.dimension))
    if kind == "edge":
        e = check.json_object(data.get("edge"), "edge") or {}
        if e.get("kind") not in EDGE_KINDS:
            raise ValidationError("edge.kind", f"must be one of {', '.join(EDGE_KINDS)}")
        created = as_utc(e.get("created_at"), "edge.created_at") or utcnow()
        strength = check.unit_interval(e.get("strength", 1.0), "edge.strength")
        return kind, Edge(
            check.identifier(e.get("id"), "edge.id"),
            check.identifier(e.get("source"), "edge.source"),
            check.identifier(e.get("target"), "edge.target"), e["kind"], strength, created,
            police_value(check.json_object(e.get("metadata") or {}, "edge.metadata") or {},
                         policy, "edge.metadata"),
        )  # fmt: skip
    if kind == "version":
        v = check.json_object(data.get("version"), "version") or {}
        at = as_utc(v.get("at"), "version.at") or utcnow()
        return kind, Version(
            check.identifier(v.get("memory_id"), "version.memory_id"),
            check.whole(v.get("version"), "version.version", 1),
            check.identifier(v.get("op"), "version.op"),
            check.identifier(v.get("actor", "import"), "version.actor"), at,
            police_value(check.json_object(v.get("changes") or {}, "version.changes") or {},
                         policy, "version.changes"),
            police_value(check.json_object(v.get("snapshot"), "version.snapshot", optional=True),
                         policy, "version.snapshot"),
        )  # fmt: skip
    raise ValidationError("kind", "must be header, memory, edge or version")


def import_jsonl(
    on: Gate | SupportsGate,
    source: str | Path | IO[str],
    *,
    strict: bool = False,
    secrets: str | None = None,
) -> ImportReport:
    """Import an export. Bad lines are reported with their numbers and skipped; with
    ``strict=True`` any bad line refuses the whole file and nothing is written.
    Memories whose id already exists are skipped (counted in ``skipped``). Secrets
    follow ``SECRET_POLICY`` (or ``secrets``, as for ``add``): a line holding one is
    a bad line under ``refuse``, redacted under ``redact``.

    An identity imports under its rights (docs/access.md, "Import is a write like
    any other"): a memory only into a namespace it may write (a group's charter,
    and its slot, by the group's admins only), an edge only between memories it may
    change, a version only of a memory it may change, recorded with the importer as
    its actor. What it may not read answers as what does not exist: a line that
    names such an id is skipped like one naming a missing id, and a record whose
    id is taken by such a memory is imported under an id of its own."""
    if isinstance(source, str | Path):
        with open(source, encoding="utf-8") as handle:
            return import_jsonl(on, handle, strict=strict, secrets=secrets)
    gate = _gate_of(on)
    policy = effective_policy(secrets, gate.parts.settings.secret_policy,
                              trusted=gate.principal.trusted)  # fmt: skip
    report = ImportReport()
    parsed: list[tuple[int, str, Any]] = []
    for number, text in enumerate(source, start=1):
        if not text.strip():
            continue
        try:
            parsed.append((number, *_parse_line(number, text, gate, policy)))
        except KeyError as exc:
            report.errors.append((number, f"{exc.args[0]}: is required"))
        except (MemchenticError, TypeError, ValueError) as exc:
            report.errors.append((number, str(exc)))
    if strict and report.errors:
        return report
    headers = [item for _, kind, item in parsed if kind == "header"]
    if headers and gate.principal.trusted:  # a store-wide choice: the local principal's
        language, rules = headers[0]
        if language is not None:
            gate.adopt_language(language)  # a new store stems as the exported one did
        if rules is not None:
            gate.adopt_rules(rules)  # and splits words by the same rules
    run = _Import(gate, report)
    with gate.write():
        for number, kind, item in parsed:
            if kind == "memory":
                run.memory(number, *item)
        for number, kind, item in parsed:
            if kind == "edge":
                run.edge(number, item)
            elif kind == "version":
                run.version(item)
        run.first_versions()
    report.errors.sort()
    return report


class _Import:
    """One import inside its write transaction: what it renamed and inserted, and the
    checks of the importer's rights (none for the trusted local principal, whose
    import restores a backup as it was)."""

    def __init__(self, gate: Gate, report: ImportReport) -> None:
        self.gate = gate
        self.report = report
        self.trusted = gate.principal.trusted
        self.actor = gate.actor
        self.now = utcnow()
        self.tally = CapTally(gate, self.now)
        #: file id -> stored id, for the records imported under an id of their own
        self.renamed: dict[str, str] = {}
        #: the memories this import inserted
        self.inserted: list[str] = []
        #: the version numbers of each memory the import added versions to
        self._numbers: dict[str, set[int]] = {}

    def _skip(self) -> None:
        self.report.skipped += 1

    def _taken(self, memory_id: str) -> bool:
        """Whether a memory, or the history of one (a tombstone), holds the id."""
        return self.gate.exists(memory_id) or bool(self.gate.versions(memory_id))

    def _changeable(self, memory_id: str) -> MemoryRecord | None:
        """The memory, if the importer may change it; else None, as for a missing id."""
        if self.trusted:
            return self.gate.readable(memory_id)
        record = self.gate.readable(memory_id)
        if record is None or not self.gate.can_write(record.namespace, record.type):
            return None
        return record

    def _own_id(self, record: MemoryRecord) -> str | None:
        """The id to store ``record`` under: its own, or (taken by a memory the
        importer cannot read) one derived from it, the same each time; None when the
        importer already holds it (skipped)."""
        gate = self.gate
        if self.trusted:
            return None if gate.exists(record.id) else record.id
        if gate.readable(record.id) is not None:
            return None
        if not self._taken(record.id):
            return record.id
        ms = int((record.created_at or self.now).timestamp() * 1000)
        renamed = derived_id(ms, f"{self.actor}\x00{record.id}")
        if gate.readable(renamed) is not None:
            self.renamed[record.id] = renamed  # the file's edges and versions follow it
            return None  # imported before, under that id
        return renamed if not self._taken(renamed) else new_id(ms)

    def memory(self, number: int, record: MemoryRecord, vector: np.ndarray | None) -> None:
        gate = self.gate
        try:
            right = slot_right(record.namespace, record.slot_key, record.type)
            allowed = gate.can_write(record.namespace, record.type) and (
                right == record.type or gate.can_write(record.namespace, right)
            )
        except ValidationError:
            allowed = False
        if not allowed:
            return self._skip()
        stored = self._own_id(record)
        if stored is None:
            return self._skip()
        if record.slot_key and gate.find_slot(record.namespace, record.slot_key):
            return self._skip()  # the slot is taken: a keyed write, not an import, changes it
        # ``superseded_by`` is never taken from the line: a supersedes edge sets it
        fresh = replace(record, id=stored, superseded_by=None)
        if not self.trusted and record.namespace != gate.own_namespace:
            # where others read, the use it claims ranks it for them: as ``add`` starts
            fresh = replace(fresh, reinforcement=1, recall_count=0, last_recalled_at=None)
        try:
            self.tally.take(fresh)
        except ValidationError as exc:
            self.report.errors.append((number, str(exc)))
            return None
        if vector is None:
            vector = gate.parts.embedder.embed(memory_embedding_text(fresh.title, fresh.content))
        gate.insert(fresh, vector)
        if stored != record.id:
            self.renamed[record.id] = stored
        self.inserted.append(stored)
        self._numbers[stored] = set()
        self.report.memories += 1
        return None

    def edge(self, number: int, edge: Edge) -> None:
        gate = self.gate
        source = self.renamed.get(edge.source, edge.source)
        target = self.renamed.get(edge.target, edge.target)
        if self._changeable(source) is None or self._changeable(target) is None:
            return self._skip()
        edge = replace(edge, source=source, target=target)
        held = gate.get_edge(edge.id)
        if held is not None and (held.source, held.target) == (source, target):
            return self._skip()  # imported before
        if held is not None:  # an id taken elsewhere: one of its own, the same each time
            ms = int(edge.created_at.timestamp() * 1000)
            edge = replace(edge, id=derived_id(ms, f"{self.actor}\x00{edge.id}"))
            if gate.get_edge(edge.id) is not None:
                return self._skip()
        if edge.kind == "supersedes" and not self.trusted:
            try:
                gate.check_no_cycle(source, target)  # as ``relate`` refuses it
            except ValidationError as exc:
                self.report.errors.append((number, str(exc)))
                return None
        gate.add_edge(edge)
        self.report.edges += 1
        return None

    def version(self, version: Version) -> None:
        memory_id = self.renamed.get(version.memory_id, version.memory_id)
        if self._changeable(memory_id) is None:  # no versions of nothing
            return self._skip()
        numbers = self._held_numbers(memory_id)
        if version.version in numbers:
            return self._skip()
        if not self.trusted:  # nobody signs for another: the claim is kept, as a claim
            changes = dict(version.changes)
            if version.actor != self.actor:
                changes.setdefault("imported_actor", [None, version.actor])
            version = replace(version, actor=self.actor, changes=changes)
        self.gate.add_version(replace(version, memory_id=memory_id))
        numbers.add(version.version)
        self.report.versions += 1
        return None

    def _held_numbers(self, memory_id: str) -> set[int]:
        if memory_id not in self._numbers:
            self._numbers[memory_id] = {v.version for v in self.gate.versions(memory_id)}
        return self._numbers[memory_id]

    def first_versions(self) -> None:
        """An identity's imported memory without a version 1 gets one (op ``import``),
        so who wrote it (the working-memory cap, ``written_by``) is the importer."""
        if self.trusted:
            return
        for memory_id in self.inserted:
            if 1 not in self._held_numbers(memory_id):
                self.gate.add_version(Version(memory_id, 1, "import", self.actor, self.now, {}))
