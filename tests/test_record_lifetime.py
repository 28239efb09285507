"""A logged turn's lifetime is a choice the recipe states (issue 31, item 8).

Records of what was said (``type="episodic"``, ``on_duplicate="keep"``, or a
non-empty ``role``/``speaker`` in metadata) saved without ``ttl_days``,
``expires_at`` or ``permanent`` expire after ``RECORD_DEFAULT_TTL_DAYS`` (default 0:
never), not after ``MEMORY_DEFAULT_TTL_DAYS`` (90): an agent asked months later
about something said once still finds it. Knowledge keeps the 90 days.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memchentic import Memory, Settings
from memchentic.mem0 import Memory as Mem0Memory

T0 = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
LATER = T0 + timedelta(days=200)  # past the 90-day default and any renewal

RECORDS: dict[str, dict[str, Any]] = {
    "episodic": {"type": "episodic"},
    "keep": {"on_duplicate": "keep"},
    "role": {"metadata": {"role": "user"}},
    "speaker": {"metadata": {"speaker": "Caroline"}},
}


@pytest.mark.parametrize("how", list(RECORDS))
def test_a_logged_turn_is_permanent_by_default(make_mem: Callable[..., Memory], how: str):
    mem = make_mem()
    said = mem.add("I adopted a greyhound called Pepper last spring.", session_id="s1",
                   user_id="sam", now=T0, **RECORDS[how])  # fmt: skip
    fact = mem.add("The office wifi router sits behind the printer.", user_id="sam", now=T0)
    assert mem.get(said.id).expires_at is None, how
    assert mem.get(fact.id).expires_at == T0 + timedelta(days=90)
    # months later, never recalled meanwhile: the turn is still found, the entry is gone
    found = [h.id for h in mem.search("greyhound Pepper", user_id="sam", now=LATER)]
    assert said.id in found
    gone = [h.id for h in mem.search("wifi router printer", user_id="sam", now=LATER)]
    assert fact.id not in gone
    assert [r.id for r in mem.list(user_id="sam", now=LATER)] == [said.id]


def test_what_the_caller_passes_wins(make_mem: Callable[..., Memory]):
    mem = make_mem()
    episodic = {"type": "episodic", "now": T0, "user_id": "sam"}
    week = mem.add("We talked about the week ahead.", ttl_days=7, **episodic)
    assert mem.get(week.id).expires_at == T0 + timedelta(days=7)
    until = T0 + timedelta(days=3)
    dated = mem.add("We talked about Friday's dinner.", expires_at=until, **episodic)
    assert mem.get(dated.id).expires_at == until
    kept = mem.add("The VPN config lives in the wiki.", permanent=True, user_id="sam", now=T0)
    assert mem.get(kept.id).expires_at is None
    # a blank role is no speaker: knowledge, 90 days
    blank = mem.add("The backup runs nightly.", metadata={"role": " "}, user_id="sam", now=T0)
    assert mem.get(blank.id).expires_at == T0 + timedelta(days=90)


def test_the_setting_chooses_the_records_lifetime(make_mem: Callable[..., Memory]):
    mem = make_mem(settings=Settings(record_default_ttl_days=30, memory_default_ttl_days=10))
    said = mem.add("I'm flying to Lima in May.", metadata={"role": "user"}, now=T0)
    fact = mem.add("The build uses Node 22.", now=T0)
    assert mem.get(said.id).expires_at == T0 + timedelta(days=30)
    assert mem.get(fact.id).expires_at == T0 + timedelta(days=10)
    batch = mem.add_many(["Good morning!", "How was the trip?"], type="episodic", now=T0)
    assert [mem.get(r.id).expires_at for r in batch] == [T0 + timedelta(days=30)] * 2


def test_a_store_that_keeps_every_duplicate_keeps_its_turns(make_mem: Callable[..., Memory]):
    """``DUPLICATE_POLICY=keep`` makes every write a record (as the resolver reads it)."""
    mem = make_mem(settings=Settings(duplicate_policy="keep"))
    said = mem.add("See you on Tuesday.", now=T0)
    assert mem.get(said.id).expires_at is None


def test_mem0_messages_stored_as_they_are_do_not_expire(make_mem: Callable[..., Memory]):
    mem = make_mem()
    m0 = Mem0Memory(memory=mem)
    added = m0.add([{"role": "user", "content": "My sister lives in Graz."},
                    {"role": "assistant", "content": "Noted, Graz it is."}],
                   user_id="sam", run_id="chat-1", infer=False)  # fmt: skip
    ids = [r["id"] for r in added["results"]]
    assert len(ids) == 2
    assert [mem.get(i).expires_at for i in ids] == [None, None]
