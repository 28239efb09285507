"""Checks of user input: each failure names the field and the rule it breaks."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from .errors import LimitError, ValidationError
from .record import KINDS
from .settings import Settings

MAX_TAG_CHARS = 128
MAX_SHORT_TEXT_CHARS = 1024
#: Longest ``slot_key`` (``add_working``'s ``key`` is a part of one).
SLOT_KEY_CHARS = 256
#: Longest id, cursor or entity name (ULIDs are 26; imported ids may be longer).
MAX_KEY_CHARS = 256
#: C0 control characters (NUL among them) and DEL: never part of an id, a cursor or
#: an entity name. PostgreSQL cannot store NUL in text at all, so a NUL that got
#: as far as a query would fail there and nowhere else.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _encodable(value: str, field: str) -> str:
    """``value``, when it is valid Unicode (no lone surrogates: UTF-8 cannot store them)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(field, "must be valid Unicode text (no lone surrogates)") from exc
    return value


def content(value: Any, settings: Settings, field: str = "content") -> str:
    if not isinstance(value, str):
        raise ValidationError(field, "must be a string")
    _encodable(value, field)
    if not value.strip():
        raise ValidationError(field, "must not be empty or only whitespace")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters")
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > settings.max_content_bytes:
        raise ValidationError(
            field, f"must be at most {settings.max_content_bytes} bytes (got {size})"
        )
    return value


def optional_text(value: Any, field: str, limit: int = MAX_SHORT_TEXT_CHARS) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(field, "must be a string")
    if len(value) > limit:
        raise ValidationError(field, f"must be at most {limit} characters")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters")
    return _encodable(value, field) or None


def visible(text: str) -> bool:
    """Whether ``text`` has a character a person can see: not only whitespace, and
    not only invisible format characters (zero-width spaces and joiners, the BOM,
    bidirectional marks: Unicode category Cf)."""
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


def scope_value(value: Any, field: str) -> str | None:
    """A scope that selects memories to act on (``delete_all``'s ``user_id``,
    ``agent_id``, ``session_id``, ``namespace``): ``None`` is "not given"; any
    string must name something. An empty, blank or invisible-only value is an error
    naming the field, never "no scope": read as "no scope", ``session_id=""`` once
    widened a delete to everything the caller may change (issue 32, item 1)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(field, "must be a string")
    if not visible(value):
        raise ValidationError(field, "must not be empty, blank or only invisible characters")
    return value


def unit_interval(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, "must be a number between 0 and 1")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise ValidationError(field, "must be a number between 0 and 1")
    return number


def validity(valid_from: datetime | None, valid_to: datetime | None) -> None:
    """A memory holds in the world from ``valid_from`` until ``valid_to``: the end may
    not come before the start (issue 20, item 12). ``valid_from`` defaults to
    ``created_at``, so a fact that ended before it was recorded names its start."""
    if valid_from is not None and valid_to is not None and valid_to < valid_from:
        raise ValidationError(
            "valid_to",
            f"must not be before valid_from ({valid_from.isoformat()}; valid_from defaults "
            "to created_at)",
        )


def kind(value: Any) -> str:
    if value not in KINDS:
        raise ValidationError("kind", "must be 'entry' or 'guide'")
    return str(value)


def tags(value: Any, settings: Settings) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError("tags", "must be a list of strings")
    out: list[str] = []
    for tag in value:
        if not isinstance(tag, str) or not tag.strip():
            raise ValidationError("tags", "each tag must be a non-empty string")
        if len(tag) > MAX_TAG_CHARS or "\x00" in tag:
            raise ValidationError("tags", f"each tag must be at most {MAX_TAG_CHARS} characters")
        _encodable(tag, "tags")
        if tag.strip() not in out:
            out.append(tag.strip())
    if len(out) > settings.max_tags:
        raise ValidationError("tags", f"at most {settings.max_tags} tags")
    return out


def metadata(value: Any, settings: Settings) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("metadata", "must be a JSON object (a dict)")
    nesting(value, "metadata", settings)
    try:
        text = _encodable(json.dumps(dict(value), ensure_ascii=False, allow_nan=False), "metadata")
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError("metadata", f"must be JSON-serialisable ({exc})") from exc
    if len(text.encode("utf-8", errors="surrogatepass")) > settings.max_metadata_bytes:
        raise ValidationError("metadata", f"must be at most {settings.max_metadata_bytes} bytes")
    return json.loads(text)


def within(count: int, limit: int, field: str, setting: str, what: str = "items") -> None:
    """Refuse a call that asks for more than ``limit`` (the value of ``setting``)."""
    if count > limit:
        raise LimitError(field, setting, limit, count, what)


def nesting(value: Any, field: str, settings: Settings | None) -> None:
    """Refuse objects and lists nested deeper than ``MAX_METADATA_DEPTH``, or holding
    more values than ``MAX_METADATA_BYTES`` (each takes at least a byte of JSON),
    before any recursive work: serialising, copying or scanning a value 500 deep
    would exhaust Python's stack (a ``RecursionError`` after seconds of CPU)."""
    fields = Settings.model_fields
    depth_limit = int(
        settings.max_metadata_depth if settings else fields["max_metadata_depth"].default
    )
    size_limit = int(
        settings.max_metadata_bytes if settings else fields["max_metadata_bytes"].default
    )
    nested_within(value, field, depth_limit, size_limit, "MAX_METADATA_DEPTH")


def nested_within(
    value: Any, field: str, depth_limit: int, size_limit: int, depth_rule: str
) -> None:
    """Refuse ``value`` when its objects and lists are nested deeper than
    ``depth_limit`` or hold more than ``size_limit`` values, walked without
    recursion; ``depth_rule`` says where the depth limit comes from."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        if depth > depth_limit:
            raise ValidationError(
                field, f"must be nested at most {depth_limit} deep ({depth_rule})"
            )
        children = node.values() if isinstance(node, Mapping) else node
        for child in children:
            seen += 1
            if seen > size_limit:
                raise ValidationError(field, f"must be at most {size_limit} bytes")
            if isinstance(child, Mapping | list | tuple):
                stack.append((child, depth + 1))


def limit(value: Any, settings: Settings) -> int:
    """None -> the default; <= 0 is an error; above the maximum is clamped."""
    if value is None:
        return settings.search_default_limit
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("limit", "must be a whole number")
    if value <= 0:
        raise ValidationError("limit", "must be at least 1")
    return min(value, settings.search_max_limit)


def page_limit(value: Any, settings: Settings | None) -> int:
    """A page size: 1 to ``LIST_MAX_LIMIT`` (no maximum when ``settings`` is None),
    else an error. Not clamped like a search limit: a loop that pages until it gets
    a short page would stop early, as if it had seen everything."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError("limit", "must be a whole number >= 1")
    if settings is not None and value > settings.list_max_limit:
        raise ValidationError(
            "limit", f"must be at most {settings.list_max_limit} (LIST_MAX_LIMIT); page with offset"
        )
    return value


def query(value: Any, settings: Settings, field: str = "query") -> str:
    """A search query: refused when longer than ``MAX_QUERY_CHARS`` (cutting it would
    silently search for something else). ``field``: the caller's name for it (``ask``
    takes a ``question``)."""
    if not isinstance(value, str):
        raise ValidationError(field, "must be a string")
    if not value.strip():
        raise ValidationError(field, "must not be empty")
    _encodable(value, field)
    if len(value) > settings.max_query_chars:
        raise ValidationError(
            field, f"must be at most {settings.max_query_chars} characters (got {len(value)})"
        )
    return value


def entities(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError("entities", "must be a list of strings")
    if not all(isinstance(e, str) and e.strip() for e in value):
        raise ValidationError("entities", "each entity must be a non-empty string")
    return [identifier(e.strip(), "entities") for e in value]


def whole(value: Any, field: str, minimum: int = 0, maximum: int = 2**62) -> int:
    """A whole number (not a bool) between ``minimum`` and ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValidationError(field, f"must be a whole number from {minimum} to {maximum}")
    return value


def json_object(
    value: Any, field: str, *, optional: bool = False, settings: Settings | None = None
) -> dict[str, Any] | None:
    """A JSON object (a dict that serialises, valid Unicode, nested at most
    ``MAX_METADATA_DEPTH`` deep), or None when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError(field, "must be a JSON object")
    nesting(value, field, settings)
    try:
        _encodable(json.dumps(dict(value), ensure_ascii=False, allow_nan=False), field)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(field, f"must be JSON-serialisable ({exc})") from exc
    return dict(value)


def identifier(value: Any, field: str = "id") -> str:
    """An id, a cursor or a name to look up: a non-empty string of at most
    ``MAX_KEY_CHARS`` characters without control characters (NUL, newline, DEL...).
    Every method that looks something up by a caller's string checks it here first,
    on every backend alike."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    if len(value) > MAX_KEY_CHARS:
        raise ValidationError(field, f"must be at most {MAX_KEY_CHARS} characters")
    if _CONTROL.search(value):
        raise ValidationError(field, "must not contain control characters (NUL, newline, ...)")
    return _encodable(value, field)


def optional_identifier(value: Any, field: str) -> str | None:
    """:func:`identifier`, or None."""
    return None if value is None else identifier(value, field)


def options(given: Collection[str], allowed: Collection[str], what: str) -> None:
    """Refuse an option ``what`` does not know, naming it and listing the valid ones
    (instead of a ``TypeError`` naming an internal function)."""
    unknown = sorted(str(name) for name in given if name not in allowed)
    if unknown:
        raise ValidationError(
            unknown[0], f"is not an option of {what}; valid: {', '.join(sorted(allowed))}"
        )
