"""The truth set: labelled write pairs written by people who never read the write rules.

Two parts, one JSON object a line, the same format:

- ``tests/data/truth/held_out.jsonl`` (ids ``h0001``...): written first, before any
  tuning, and scored only once a change is finished (``bench/truth_set.py --part
  held_out``). Nothing is fitted to it.
- ``tests/data/truth/tune.jsonl`` (ids ``t0001``...): the part a change may be tuned on.

A row::

    {"id": "h0001", "category": "update", "style": "formal", "domain": "work",
     "old": "...", "new": "...", "old_options": {}, "new_options": {},
     "question": "...", "now": "...", "before": "..."}

``category`` names the status the second write must get under the default policy
(:data:`EXPECTED`). ``old_options`` and ``new_options`` are passed to ``add`` with the
text (only the keys of :data:`OPTION_KEYS`). ``question``, ``now`` and ``before`` go
together: a question a user would ask about the attribute, a substring of ``new`` that
answers it now and a substring of ``old`` that answered it before (case-insensitive);
``"both": true`` (additive pairs) says both values are still true.

:func:`load` reads a part and raises :class:`memchentic.errors.ValidationError` on the
first bad row, naming the file, the line, the field and the rule.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from memchentic.errors import ValidationError
from tests.data.write_pairs import WritePair

#: Where the two parts live.
ROOT = Path(__file__).resolve().parent / "truth"
#: The parts, and the first letter of their ids.
PARTS = {"held_out": "h", "tune": "t"}

#: The status the second write of each category must get (default policy).
EXPECTED = {
    "update": "superseded",
    "negation": "superseded",
    "duplicate": "refused",
    "additive": "added",
    "distinct": "added",
    "record": "added",
}
CATEGORIES = tuple(EXPECTED)

#: The ways a pair may be phrased (``style``); each category uses at least ten.
STYLES = frozenset({
    "formal", "chat", "aside", "embedded", "typo", "marker", "reorder", "person",
    "tense", "short", "long", "synonym", "frame", "question", "status", "antonym",
    "dated", "cardinality", "other-subject",
})  # fmt: skip

#: The write options a pair may carry, and the type of each value.
OPTION_KEYS: dict[str, type] = {"metadata": dict, "type": str, "on_duplicate": str}

_REQUIRED = ("id", "category", "style", "domain", "old", "new", "old_options", "new_options")
_QUESTION = ("question", "now", "before")
_KEYS = frozenset((*_REQUIRED, *_QUESTION, "both"))


@dataclass(frozen=True)
class TruthPair(WritePair):
    """A :class:`WritePair` with its id, style and the read-time question, if any."""

    id: str = ""
    style: str = ""
    question: str | None = None
    now: str | None = None
    before: str | None = None
    #: ``now`` and ``before`` are both true (both values should be shown).
    both: bool = False

    @property
    def expected(self) -> str:
        return EXPECTED[self.category]

    @property
    def is_record(self) -> bool:
        """Whether an option marks the second write as a logged turn."""
        return is_record_options(self.new_options)


def is_record_options(options: dict[str, Any]) -> bool:
    """Options that make a write a record of what was said: a role in the metadata,
    the episodic type, or ``on_duplicate="keep"``."""
    metadata = options.get("metadata") or {}
    return (
        "role" in metadata
        or options.get("type") == "episodic"
        or options.get("on_duplicate") == "keep"
    )


def normalised(text: str) -> str:
    """Lower case, words only: two phrasings that differ in case, punctuation or
    spacing compare equal."""
    return " ".join(re.findall(r"\w+", text.lower()))


def path_of(part: str) -> Path:
    if part not in PARTS:
        raise ValidationError("part", f"one of {', '.join(PARTS)}", f"unknown part {part!r}")
    return ROOT / f"{part}.jsonl"


def load(part: str) -> list[TruthPair]:
    """The pairs of ``part`` (``held_out`` or ``tune``); ``[]`` when its file does not
    exist yet. Raises ``ValidationError`` on a bad row."""
    path = path_of(part)
    if not path.exists():
        return []
    return parse(path.read_text(encoding="utf-8").splitlines(), source=path.name,
                 prefix=PARTS[part])  # fmt: skip


def parse(
    lines: list[str], *, source: str = "<rows>", prefix: str | None = None
) -> list[TruthPair]:
    """Rows (one JSON object a line; blank lines skipped) as pairs, each checked;
    ids must be unique and, with ``prefix``, start with it."""
    pairs: list[TruthPair] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(where, "one JSON object a line", f"{where}: {exc}") from None
        pair = parse_row(row, where)
        if prefix is not None and not re.fullmatch(rf"{prefix}\d{{4,}}", pair.id):
            _bad(where, "id", f"{prefix} and at least four digits")
        if pair.id in seen:
            _bad(where, "id", "unique")
        seen.add(pair.id)
        pairs.append(pair)
    return pairs


def _bad(where: str, field: str, rule: str) -> NoReturn:
    raise ValidationError(f"{where} {field}", rule, f"{where}: {field} must be {rule}")


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        _bad(where, key, "a non-empty string")
    return str(value)


def _options(row: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    options = row.get(key)
    if not isinstance(options, dict):
        _bad(where, key, "an object")
    for name, value in options.items():
        if name not in OPTION_KEYS:
            _bad(where, f"{key}.{name}", f"one of {', '.join(OPTION_KEYS)}")
        if not isinstance(value, OPTION_KEYS[name]):
            _bad(where, f"{key}.{name}", f"a {OPTION_KEYS[name].__name__}")
    return dict(options)


def parse_row(row: Any, where: str = "<row>") -> TruthPair:
    """One row as a pair; raises ``ValidationError`` naming the field and the rule."""
    if not isinstance(row, dict):
        _bad(where, "row", "a JSON object")
    for key in row:
        if key not in _KEYS:
            _bad(where, key, "a known key")
    for key in _REQUIRED:
        if key not in row:
            _bad(where, key, "present")
    pair_id, style, domain = (_text(row, k, where) for k in ("id", "style", "domain"))
    category = _text(row, "category", where)
    if category not in EXPECTED:
        _bad(where, "category", f"one of {', '.join(CATEGORIES)}")
    if style not in STYLES:
        _bad(where, "style", "a known style")
    old, new = _text(row, "old", where), _text(row, "new", where)
    old_options = _options(row, "old_options", where)
    new_options = _options(row, "new_options", where)
    if category == "record" and not is_record_options(new_options):
        _bad(where, "new_options", "a record marker (metadata.role, type episodic or "
             "on_duplicate keep) for a record pair")  # fmt: skip
    for key, options in (("old_options", old_options), ("new_options", new_options)):
        if category != "record" and is_record_options(options):
            _bad(where, key, "free of record markers outside the record category")
    question = now = before = None
    if any(k in row for k in _QUESTION):
        question, now, before = (_text(row, k, where) for k in _QUESTION)
        if now.lower() not in new.lower():
            _bad(where, "now", "a substring of new")
        if before.lower() not in old.lower():
            _bad(where, "before", "a substring of old")
        if now.lower() in old.lower():
            _bad(where, "now", "absent from old (it names the new value)")
    both = row.get("both", False)
    if not isinstance(both, bool):
        _bad(where, "both", "true or false")
    if both and (question is None or category != "additive"):
        _bad(where, "both", "only on an additive pair with a question")
    if category == "additive" and question is not None and not both:
        _bad(where, "both", "true on an additive pair with a question")
    return TruthPair(old=old, new=new, category=category, domain=domain,
                     old_options=old_options, new_options=new_options, id=pair_id,
                     style=style, question=question, now=now, before=before,
                     both=both)  # fmt: skip
