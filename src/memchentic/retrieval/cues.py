"""Cues a query gives beyond its words: the people it names and the dates it names.
Pure functions; the pipeline turns them into the ``speaker`` and ``date`` signals.

* Speaker: who said a memory is what its writer recorded: ``metadata["speaker"]``
  (a name), else ``metadata["role"]`` (a chat role: ``user``, ``assistant``). A
  query that names that person (every word of the name, case-insensitive, as
  whole words) asks about what that person said or did. A question an agent
  asks for its user speaks of the user in the first person and of the agent in
  the second ("what did *I* say", "what did *you* suggest"), so first-person
  words name the ``user`` role and second-person words the ``assistant`` role.
  Reading the speaker from a ``"Name: text"`` prefix is a transcript format, not
  a general rule: only the ``conversation`` profile does it (``prefix=True``).
* Dates: absolute dates in the query (``"8 May, 2023"``, ``"May 8, 2023"``,
  ``"2023-05-08"``, ``"May 2023"``, ``"in 2022"``) as half-open UTC intervals
  ``[start, end)`` of a day, a month or a year; with the time the query is asked
  (``now``), relative phrases too (``"yesterday"``, ``"two weeks ago"``, ``"last
  Saturday"``, ``"in the past few months"``), as the interval they name around
  that time (:func:`relative_dates`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
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


#: Words by which a question asked for a user names the user, and the agent.
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
SECOND_PERSON = frozenset({"you", "your", "yours", "yourself"})
#: Chat roles the person of a query names (OpenAI-style message roles).
ROLE_PERSONS = {"user": FIRST_PERSON, "assistant": SECOND_PERSON}


def speaker_of(
    content: str, metadata: Mapping[str, Any] | None = None, *, prefix: bool = False
) -> str | None:
    """Who said a memory: ``metadata["speaker"]`` when given, else
    ``metadata["role"]``; with ``prefix``, else the ``Name:`` prefix of a
    transcript line (the ``conversation`` profile); else None."""
    if metadata:
        for key in ("speaker", "role"):
            given = metadata.get(key)
            if isinstance(given, str) and given.strip():
                return given.strip()
    if not prefix:
        return None
    match = _SPEAKER.match(content)
    return match.group(1) if match else None


def names_speaker(query_words: Set[str], speaker: str | None, *, roles: bool = True) -> bool:
    """True when every word of ``speaker``'s name is a word of the query, or (with
    ``roles``) when ``speaker`` is a chat role the query's person names (first
    person: ``user``; second person: ``assistant``)."""
    if not speaker:
        return False
    persons = ROLE_PERSONS.get(speaker.lower()) if roles else None
    if persons is not None and not persons.isdisjoint(query_words):
        return True
    name = words(speaker)
    return bool(name) and name <= query_words


def _interval(kind: str, year: int, month: int = 1, day: int = 1) -> tuple[datetime, datetime]:
    start = datetime(year, month, day, tzinfo=UTC)
    if kind == "day":
        return start, start + timedelta(days=1)
    if kind == "month":
        return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return start, datetime(year + 1, 1, 1, tzinfo=UTC)


def query_dates(text: str, now: datetime | None = None) -> list[tuple[datetime, datetime]]:
    """The absolute dates ``text`` names, each as ``[start, end)`` in UTC; a span
    already covered by a finer one (the year of "8 May, 2023") is not repeated.
    With ``now``, the relative phrases too (:func:`relative_dates`)."""
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
    if now is not None:
        found += relative_dates(text, now)
    return list(dict.fromkeys(found))


# --- relative phrases ------------------------------------------------------------------
_DAY_S = timedelta(days=1)
#: Each unit's length, and the slack either side of "N units ago" (a person who
#: says "two weeks ago" rarely means exactly 14 days).
_UNITS = {
    "day": (timedelta(days=1), timedelta(days=1)),
    "week": (timedelta(days=7), timedelta(days=4)),
    "month": (timedelta(days=30), timedelta(days=15)),
    "year": (timedelta(days=365), timedelta(days=120)),
}
_NUMBERS = {
    "a": (1, 1), "an": (1, 1), "one": (1, 1), "two": (2, 2), "three": (3, 3),
    "four": (4, 4), "five": (5, 5), "six": (6, 6), "seven": (7, 7), "eight": (8, 8),
    "nine": (9, 9), "ten": (10, 10), "eleven": (11, 11), "twelve": (12, 12),
    "couple": (2, 2), "couple of": (2, 2), "a couple": (2, 2), "a couple of": (2, 2),
    "few": (2, 4), "a few": (2, 4), "several": (3, 7),
}  # fmt: skip
_COUNT = (
    r"(?P<count>\d{1,3}|"
    + "|".join(sorted((re.escape(k) for k in _NUMBERS), key=len, reverse=True))
    + r")"
)
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.I)
_PAST = re.compile(rf"\b(?:past|last|previous)\s+{_COUNT}\s+{_UNIT}\b", re.I)
_PAST_ONE = re.compile(r"\b(?:past|last|previous)\s+(?P<unit>day|week|month|year)\b", re.I)
_THIS = re.compile(r"\bthis\s+(?P<unit>week|month|year)\b", re.I)
_WEEKDAY = re.compile(rf"\blast\s+(?P<day>{'|'.join(_WEEKDAYS)})\b", re.I)
_TODAY = re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", re.I)
_YESTERDAY = re.compile(r"\b(?:the\s+day\s+before\s+)?yesterday\b", re.I)


def _count(text: str) -> tuple[int, int]:
    word = " ".join(text.lower().split())
    return (int(word), int(word)) if word.isdigit() else _NUMBERS[word]


def _unit_start(when: datetime, unit: str) -> datetime:
    """The start of the calendar day, week (Monday), month or year holding ``when``."""
    day = when.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    if unit == "year":
        return day.replace(month=1, day=1)
    return day


def relative_dates(text: str, now: datetime) -> list[tuple[datetime, datetime]]:
    """The intervals the relative phrases of ``text`` name, asked at ``now``:

    - ``"today"``, ``"tonight"``, ``"this morning"``: today;
      ``"yesterday"`` (``"the day before yesterday"``): that day;
    - ``"N days/weeks/months/years ago"`` (N a number, "a", "a couple of", "a
      few", "several"): the time N units before ``now``, with a unit's slack
      either side (a day for days, four days for weeks, half a month for months);
    - ``"past/last N units"`` and ``"past/last unit"`` (``"in the last month"``):
      from N units (at most) before ``now`` to ``now``; a bare ``"last month"``
      also covers the whole previous calendar month, its other reading;
    - ``"this week/month/year"``: from the start of the calendar unit to ``now``;
    - ``"last Saturday"``: the latest such day before today, and the day after
      (what happened on a day is often told the next).

    Every interval ends by the end of today: the phrases look back, never ahead.
    A phrase whose interval falls outside the calendar (``now`` in year 1, "999
    years ago") names none."""
    spans: list[tuple[datetime, datetime]] = []
    for find in _FINDERS:
        try:
            spans += find(text, now.astimezone(UTC))
        except (OverflowError, ValueError):
            continue
    return spans


Span = tuple[datetime, datetime]


def _today(text: str, now: datetime) -> list[Span]:
    today = _unit_start(now, "day")
    return [(today, today + _DAY_S)] if _TODAY.search(text) else []


def _yesterday(text: str, now: datetime) -> list[Span]:
    today = _unit_start(now, "day")
    spans = []
    for m in _YESTERDAY.finditer(text):
        back = 2 if m.group(0).lower().startswith("the") else 1
        spans.append((today - back * _DAY_S, today - (back - 1) * _DAY_S))
    return spans


def _ago(text: str, now: datetime) -> list[Span]:
    today = _unit_start(now, "day")
    spans = []
    for m in _AGO.finditer(text):
        length, slack = _UNITS[m.group("unit").lower()]
        low, high = _count(m.group("count"))
        latest = today - low * length + slack + _DAY_S
        spans.append((today - high * length - slack, min(today + _DAY_S, latest)))
    return spans


def _past(text: str, now: datetime) -> list[Span]:
    today = _unit_start(now, "day")
    spans = []
    for m in _PAST.finditer(text):
        length, _ = _UNITS[m.group("unit").lower()]
        _, high = _count(m.group("count"))
        spans.append((today - high * length, today + _DAY_S))
    for m in _PAST_ONE.finditer(text):
        unit = m.group("unit").lower()
        start = today - _UNITS[unit][0]
        if m.group(0).lower().startswith("last") and unit != "day":  # the previous calendar unit
            start = min(start, _unit_start(_unit_start(now, unit) - _DAY_S, unit))
        spans.append((start, today + _DAY_S))
    return spans


def _this(text: str, now: datetime) -> list[Span]:
    end = _unit_start(now, "day") + _DAY_S
    return [(_unit_start(now, m.group("unit").lower()), end) for m in _THIS.finditer(text)]


def _weekday(text: str, now: datetime) -> list[Span]:
    today = _unit_start(now, "day")
    spans = []
    for m in _WEEKDAY.finditer(text):
        back = (today.weekday() - _WEEKDAYS.index(m.group("day").lower())) % 7 or 7
        day = today - back * _DAY_S
        spans.append((day, min(today + _DAY_S, day + 2 * _DAY_S)))
    return spans


#: Each kind of relative phrase, in the order their spans are listed.
_FINDERS = (_today, _yesterday, _ago, _past, _this, _weekday)


def in_any(when: datetime | None, spans: Iterable[tuple[datetime, datetime]]) -> bool:
    """True when ``when`` lies in one of the half-open spans."""
    return when is not None and any(start <= when < end for start, end in spans)
