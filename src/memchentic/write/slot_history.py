"""A slot's ``metadata["history"]`` and what a version records of metadata
(issue 20 item 1: one request of 1,000 slot updates grew a store by 550 MB).

* The history keeps the newest replaced values only: at most
  ``SLOT_HISTORY_MAX_ENTRIES`` and ``SLOT_HISTORY_MAX_BYTES`` of JSON, and the
  whole metadata stays within ``MAX_METADATA_BYTES``; the oldest go first. When
  the newest value alone is too large for the room left, its content is cut
  (``"truncated": true``). Every value stays in the memory's versions.
* A version records only the metadata keys that changed (``"metadata":
  [before, after]`` over those keys; a key missing on one side was added or
  removed) and, for the history, only what joined and how many left
  (``"metadata.history": [{"dropped": n}, {"appended": [...]}]``), so N slot
  updates cost O(N) version bytes, not O(N^2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import ValidationError
from ..settings import Settings

HISTORY = "history"
#: Field name of the history's change in a version.
HISTORY_CHANGE = "metadata.history"
#: How many leading entries :func:`metadata_changes` tries to match as dropped; past
#: that the change is recorded as a whole replacement (bounded by the metadata limit).
_MAX_DROPPED_TRIED = 64


def json_bytes(value: Any) -> int:
    """Size of ``value`` as the metadata check measures it (UTF-8 JSON)."""
    text = json.dumps(value, ensure_ascii=False)
    return len(text.encode("utf-8", errors="surrogatepass"))


def bounded_history(
    existing: Mapping[str, Any], incoming: Mapping[str, Any], entry: dict[str, Any] | None,
    settings: Settings,
) -> dict[str, Any]:  # fmt: skip
    """The slot's new metadata: ``existing`` updated by ``incoming``, with ``entry`` (the
    replaced value, if any) appended to a history bounded as the module says.

    Raises :class:`ValidationError` when the merged metadata without history is over
    ``MAX_METADATA_BYTES``."""
    rest = {k: v for k, v in {**existing, **incoming}.items() if k != HISTORY}
    limit = settings.max_metadata_bytes
    base = json_bytes({**rest, HISTORY: []})
    if base > limit:
        raise ValidationError(
            "metadata",
            f"merged with the slot's stored metadata must be at most {limit} bytes "
            f"(MAX_METADATA_BYTES), got {base}",
        )
    old = existing.get(HISTORY)
    history = list(old) if isinstance(old, list) else []
    if entry is not None:
        history.append(entry)
    room = min(settings.slot_history_max_bytes, limit - base + 2)  # "[]" is counted in base
    return {**rest, HISTORY: _newest(history, settings.slot_history_max_entries, room)}


def _newest(history: list[Any], max_entries: int, room: int) -> list[Any]:
    """The newest entries of ``history`` that fit ``max_entries`` and ``room`` bytes."""
    if max_entries <= 0 or room < 2:
        return []
    kept: list[Any] = []
    used = 2  # the brackets
    for item in reversed(history[-max_entries:]):
        size = json_bytes(item) + (2 if kept else 0)  # ", " between items
        if used + size > room:
            if not kept and isinstance(item, dict):  # the newest: cut it to fit
                cut = _cut(item, room - used)
                if cut is not None:
                    kept.append(cut)
            break
        kept.append(item)
        used += size
    kept.reverse()
    return kept


def _cut(entry: dict[str, Any], room: int) -> dict[str, Any] | None:
    """``entry`` with its content shortened so that its JSON fits ``room`` bytes."""
    text = str(entry.get("content") or "")
    cut = {**entry, "content": "", "truncated": True}
    if json_bytes(cut) > room:
        return None
    while text:
        cut["content"] = text
        over = json_bytes(cut) - room
        if over <= 0:
            return cut
        text = text[: len(text) - over]  # each character is at least one byte
    cut["content"] = ""
    return cut


def metadata_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[Any]]:
    """What a version records of a metadata change (see the module docstring)."""
    out: dict[str, list[Any]] = {}
    missing = object()
    keys = [k for k in {**old, **new}
            if k != HISTORY and old.get(k, missing) != new.get(k, missing)]  # fmt: skip
    if keys:
        out["metadata"] = [{k: old[k] for k in keys if k in old},
                           {k: new[k] for k in keys if k in new}]  # fmt: skip
    before, after = old.get(HISTORY, []), new.get(HISTORY, [])  # missing: none yet
    if before == after:
        return out
    if isinstance(before, list) and isinstance(after, list):
        dropped = _dropped(before, after)
        out[HISTORY_CHANGE] = [{"dropped": dropped}, {"appended": after[len(before) - dropped :]}]
    else:  # not a list on one side: the values themselves (each within the metadata limit)
        out[HISTORY_CHANGE] = [before, after]
    return out


def _dropped(before: list[Any], after: list[Any]) -> int:
    """How many leading entries of ``before`` left, when ``after`` is what stayed followed
    by new entries; ``len(before)`` (all of them) when no small count explains it."""
    for dropped in range(min(len(before), _MAX_DROPPED_TRIED) + 1):
        stayed = len(before) - dropped
        if stayed <= len(after) and before[dropped:] == after[:stayed]:
            return dropped
    return len(before)
