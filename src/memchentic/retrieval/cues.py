"""Cues a query gives beyond its words: the people it names and the dates it names.
Pure functions; the pipeline turns them into the ``speaker`` and ``date`` signals.

* Speaker: a memory written as a transcript line, ``"Name: what they said"`` (or
  with ``metadata["speaker"]``), was said by ``Name``. A query that names that
  person (every word of the name, case-insensitive, as whole words) asks about
  what that person said or did.
* Dates: absolute dates in the query (``"8 May, 2023"``, ``"May 8, 2023"``,
  ``"2023-05-08"``, ``"May 2023"``, ``"in 2022"``) as half-open UTC intervals
  ``[start, end)`` of a day, a month or a year. Relative phrases ("last week")
  are left alone: they depend on when the words were said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: "Name: text" at the start of a memory: a capitalised name of 1-3 words.
_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]{0,30}(?: [A-Z][\w.'-]{0,30}){0,2})\s*:\s", re.UNICODE)

MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_DATE_PATTERNS = [
    ("day", re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>\d\d)-(?P<day>\d\d)\b")),
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("year", re.compile(rf"(?<![\d:/.-]){_YEAR}(?![\d:/.-]|\s*(?:am|pm)\b)", re.I)),
]


def words(text: str) -> set[str]:
    """Lower-cased alphanumeric words of ``text``."""
    return set(_WORD.findall(text.lower()))


def speaker_of(content: str, metadata: Mapping[str, Any] | None = None) -> str | None:
    """Who said a memory: ``metadata["speaker"]`` when given, else the ``Name:``
    prefix of a transcript line, else None."""
    if metadata:
        given = metadata.get("speaker")
        if isinstance(given, str) and given.strip():
            return given.strip()
    match = _SPEAKER.match(content)
    return match.group(1) if match else None


def names_speaker(query_words: set[str], speaker: str | None) -> bool:
    """True when every word of ``speaker``'s name is a word of the query."""
    if not speaker:
        return False
    name = words(speaker)
    return bool(name) and name <= query_words


def _interval(kind: str, year: int, month: int = 1, day: int = 1) -> tuple[datetime, datetime]:
    start = datetime(year, month, day, tzinfo=UTC)
    if kind == "day":
        return start, start + timedelta(days=1)
    if kind == "month":
        return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return start, datetime(year + 1, 1, 1, tzinfo=UTC)


def query_dates(text: str) -> list[tuple[datetime, datetime]]:
    """The absolute dates ``text`` names, each as ``[start, end)`` in UTC; a span
    already covered by a finer one (the year of "8 May, 2023") is not repeated."""
    found: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            parts = m.groupdict()
            try:
                month = parts.get("month")
                month_no = (
                    int(month)
                    if month and month.isdigit()
                    else MONTHS.get((month or "").lower().rstrip("."), 1)
                )
                span = _interval(kind, int(parts["year"]), month_no, int(parts.get("day") or 1))
            except ValueError:  # 31 February and the like: not a date, nor its month
                taken.append((m.start(), m.end()))
                continue
            taken.append((m.start(), m.end()))
            found.append(span)
    return list(dict.fromkeys(found))


def in_any(when: datetime | None, spans: Iterable[tuple[datetime, datetime]]) -> bool:
    """True when ``when`` lies in one of the half-open spans."""
    return when is not None and any(start <= when < end for start, end in spans)
