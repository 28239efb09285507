"""The retrieval improvements' pure parts: query cues (speaker, dates), the horizon
and boost signals, and conversation context."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memchentic.retrieval import cues, signals


@pytest.mark.parametrize(
    ("content", "metadata", "speaker"),
    [
        ("Caroline: hi", {"speaker": "Mel"}, "Mel"),
        ("I went hiking", {"role": "user"}, "user"),
        ("Sure, here is a plan", {"role": "assistant", "speaker": "Bot"}, "Bot"),
        ("Caroline: I went to a support group.", None, None),
        ("Note: buy milk", {"speaker": "  "}, None),
        ("Prefers tea over coffee", {"role": 3}, None),
    ],
)
def test_speaker_of_reads_what_the_writer_recorded(content, metadata, speaker):
    """By default the speaker is metadata only: a "Name: " prefix is a transcript
    format, and "Note: buy milk" was not said by "Note"."""
    assert cues.speaker_of(content, metadata) == speaker


@pytest.mark.parametrize(
    ("content", "metadata", "speaker"),
    [
        ("Caroline: I went to a support group.", None, "Caroline"),
        ("Mary Ann Lee: hello", None, "Mary Ann Lee"),
        ("Note: buy milk", None, "Note"),
        ("no speaker here: really", None, None),
        ("Prefers tea over coffee", None, None),
        ("Caroline: hi", {"speaker": "Mel"}, "Mel"),
        ("time 10:30 meeting", None, None),
    ],
)
def test_speaker_of_with_transcript_prefixes(content, metadata, speaker):
    assert cues.speaker_of(content, metadata, prefix=True) == speaker


def test_a_query_in_the_first_person_names_the_user_role():
    mine = cues.words("Where did I complete my degree?")
    yours = cues.words("What did you suggest for dinner?")
    assert cues.names_speaker(mine, "user") and not cues.names_speaker(mine, "assistant")
    assert cues.names_speaker(yours, "assistant") and not cues.names_speaker(yours, "user")
    assert cues.names_speaker(cues.words("what the user said"), "user")
    third = cues.words("Where did Caroline study?")
    assert not cues.names_speaker(third, "user") and not cues.names_speaker(third, "assistant")


def test_names_speaker_needs_every_word_of_the_name():
    q = cues.words("What did Caroline's friend Mary Ann say?")
    assert cues.names_speaker(q, "Caroline")
    assert cues.names_speaker(q, "Mary Ann")
    assert not cues.names_speaker(q, "Mary Jones")
    assert not cues.names_speaker(q, None)
    assert not cues.names_speaker(cues.words("What did Carol say?"), "Caroline")


def _d(y: int, m: int = 1, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "spans"),
    [
        ("What did Maria start, as mentioned on 3 June, 2023?", [(_d(2023, 6, 3), _d(2023, 6, 4))]),
        ("What happened on June 3rd, 2023?", [(_d(2023, 6, 3), _d(2023, 6, 4))]),
        ("Anything on 2023-06-03?", [(_d(2023, 6, 3), _d(2023, 6, 4))]),
        ("What did she paint in May 2023?", [(_d(2023, 5), _d(2023, 6))]),
        ("Plans for December, 2022", [(_d(2022, 12), _d(2023, 1))]),
        ("Where did he travel in 2022?", [(_d(2022), _d(2023))]),
        ("What did they do last week?", []),  # relative: needs the time asked
        ("Call me at 10:30 pm about the 3 cats", []),
        ("Is 31 February, 2023 a date?", []),
    ],
)
def test_query_dates(query, spans):
    assert cues.query_dates(query) == spans


def test_in_any_is_half_open():
    spans = [(_d(2023, 5), _d(2023, 6))]
    assert cues.in_any(_d(2023, 5, 31), spans)
    assert not cues.in_any(_d(2023, 6, 1), spans)
    assert not cues.in_any(None, spans)
    assert not cues.in_any(_d(2023, 5, 2), [])


def test_boost_factor_is_one_when_it_does_not_apply():
    assert signals.boost_factor(False, 0.5) == 1.0
    assert signals.boost_factor(True, 0.5) == 1.5
    assert signals.boost_factor(True, 0.0) == 1.0


@given(st.floats(0, 10_000), st.floats(1, 1000), st.floats(1, 100_000))
def test_horizon_turns_freshness_into_the_types_own_scale(age, h, ht):
    combined = signals.freshness(age, h) * signals.horizon(age, h, ht)
    assert combined == pytest.approx(1 / (1 + age / ht))
    assert signals.horizon(age, h, 0) == 1.0
    assert signals.horizon(age, h, h) == 1.0
    assert signals.horizon(0, h, ht) == 1.0


@given(st.floats(-1, 1), st.lists(st.floats(-1, 1), max_size=2), st.floats(0, 2))
def test_with_context_never_lowers_a_score(own, near, weight):
    value = signals.with_context(own, near, weight)
    assert value >= own
    assert signals.with_context(own, near, 0.0) == own
    assert signals.with_context(own, [], weight) == own
    if near:
        assert value == pytest.approx(own + weight * max(0.0, max(near)))


_SEGMENTS = st.lists(st.sampled_from(["a", "ab", "api", "b.py", "src"]), min_size=1, max_size=4)


@given(_SEGMENTS, _SEGMENTS)
def test_paths_match_by_whole_segments(one, other):
    """Issue 20, item 13: ``src/a`` matched ``src/api`` (a string prefix)."""
    shorter, longer = sorted((one, other), key=len)
    expected = longer[: len(shorter)] == shorter
    a, b = "/".join(one), "/".join(other)
    assert signals.paths_match(a, b) == signals.paths_match(b, a) == expected
    assert signals.paths_match(a + "/", b) == expected  # a folder written with its slash
    assert not signals.paths_match(a, None) and not signals.paths_match("", b)


_NOW = datetime(2023, 5, 30, 15, 0, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("query", "spans"),
    [
        ("What did I cook yesterday?", [(_d(2023, 5, 29), _d(2023, 5, 30))]),
        ("and the day before yesterday?", [(_d(2023, 5, 28), _d(2023, 5, 29))]),
        ("Anything planned for tonight?", [(_d(2023, 5, 30), _d(2023, 5, 31))]),
        ("I cooked something a couple of days ago", [(_d(2023, 5, 27), _d(2023, 5, 30))]),
        ("an event two weeks ago", [(_d(2023, 5, 12), _d(2023, 5, 21))]),
        ("What did I get last Saturday?", [(_d(2023, 5, 27), _d(2023, 5, 29))]),
        ("plants bought in the past 3 weeks", [(_d(2023, 5, 9), _d(2023, 5, 31))]),
        ("hours spent last month", [(_d(2023, 4, 1), _d(2023, 5, 31))]),  # both readings
        ("videos in the past few weeks", [(_d(2023, 5, 2), _d(2023, 5, 31))]),
        ("meetings this week", [(_d(2023, 5, 29), _d(2023, 5, 31))]),
        ("How many weeks ago did I attend the festival?", []),  # asks a duration
        ("What did I do recently?", []),
        ("on 3 June, 2023, a week ago", [(_d(2023, 6, 3), _d(2023, 6, 4)),
                                         (_d(2023, 5, 19), _d(2023, 5, 28))]),
    ],
)  # fmt: skip
def test_relative_dates_are_intervals_around_the_time_asked(query, spans):
    assert cues.query_dates(query, _NOW) == spans


@given(st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1),
                    timezones=st.just(UTC)),
       st.sampled_from(["yesterday", "3 days ago", "a few weeks ago", "last year",
                        "last Sunday", "past 2 months", "this year", "last week"]))  # fmt: skip
def test_relative_dates_look_back_and_are_never_empty(now, phrase):
    spans = cues.query_dates(f"what happened {phrase}?", now)
    assert spans
    end_of_today = datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
    assert all(start < end <= end_of_today for start, end in spans)


def test_a_relative_phrase_outside_the_calendar_names_no_date():
    """``now`` comes from the caller: at the calendar's ends a phrase names nothing
    rather than failing the search."""
    assert cues.query_dates("999 years ago", datetime(1, 1, 5, tzinfo=UTC)) == []
    assert cues.query_dates("today, or last year", datetime(9999, 12, 31, tzinfo=UTC)) == []
    # One phrase off the calendar leaves the others.
    spans = cues.query_dates("999 years ago or yesterday", datetime(1, 1, 5, tzinfo=UTC))
    assert spans == [(datetime(1, 1, 4, tzinfo=UTC), datetime(1, 1, 5, tzinfo=UTC))]
