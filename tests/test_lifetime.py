"""Lifetime (DESIGN section 6): expiry, renewal on recall, revival, gc."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memchentic import Memory, Settings, ValidationError

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_expiry_rules(mem: Memory):
    default = mem.add("default ttl note", created_at=T0, now=T0).memory
    assert default.expires_at == T0 + timedelta(days=90)
    short = mem.add("two week note", created_at=T0, now=T0, ttl_days=14).memory
    assert short.expires_at == T0 + timedelta(days=14)
    assert mem.add("zero ttl note", created_at=T0, now=T0, ttl_days=0).memory.expires_at is None
    assert (
        mem.add("permanent note", created_at=T0, now=T0, permanent=True).memory.expires_at is None
    )
    at = T0 + timedelta(days=3)
    assert (
        mem.add("explicit expiry note", created_at=T0, now=T0, expires_at=at).memory.expires_at
        == at
    )


def test_negative_ttl_is_refused(mem: Memory):
    with pytest.raises(ValidationError) as err:
        mem.add("bad ttl", ttl_days=-1)
    assert err.value.field == "ttl_days"


def test_recall_renews_with_debounce_and_ceiling(make_mem):
    s = Settings(memory_ttl_extend_days=90, memory_max_ttl_days=100)
    m = make_mem(settings=s)
    try:
        res = m.add("Uma's passport expires in 2031", created_at=T0, now=T0, ttl_days=10)
        day5 = T0 + timedelta(days=5)
        m.get(res.id, now=day5)
        after = m.get(res.id, touch=False)
        # min(now + 90, created + 100) = created + 95 days... capped at created + 100
        assert after.expires_at == day5 + timedelta(days=90)
        assert after.recall_count == 1
        m.get(res.id, now=day5 + timedelta(hours=2))  # inside the debounce window
        assert m.get(res.id, touch=False).recall_count == 1
        day50 = T0 + timedelta(days=50)
        m.search("passport expires", now=day50)
        capped = m.get(res.id, touch=False)
        assert capped.expires_at == T0 + timedelta(days=100)  # the ceiling
        assert capped.recall_count == 2
    finally:
        m.close()


def test_renewal_never_shortens_and_permanent_stays(mem: Memory):
    long = mem.add("long lived", created_at=T0, now=T0, ttl_days=700).memory
    mem.get(long.id, now=T0 + timedelta(days=1))
    assert mem.get(long.id, touch=False).expires_at == long.expires_at
    perm = mem.add("forever", permanent=True).memory
    mem.get(perm.id)
    assert mem.get(perm.id, touch=False).expires_at is None


def test_expired_leaves_list_and_search_get_opens_revise_revives(mem: Memory):
    res = mem.add("Victor's visa application is pending", created_at=T0, now=T0, ttl_days=5)
    now = datetime.now(UTC)
    assert mem.list() == []
    assert mem.search("visa application") == []
    assert [r.id for r in mem.list(include_expired=True)] == [res.id]
    assert mem.get(res.id).content.startswith("Victor")
    revised = mem.revise(res.id, "Victor's visa application was approved")
    assert revised.memory.expires_at > now
    assert [h.id for h in mem.search("visa application")] == [res.id]


def test_opening_or_listing_an_expired_memory_does_not_revive_it(mem: Memory):
    """Issue 20, item 10: ``get`` and ``search(include_expired=True)`` slid the expiry
    of an expired memory (and so brought it back into search). Looking at it changes
    nothing: neither its expiry nor its recall count; ``revise`` revives it."""
    res = mem.add("Xena's parking permit for lot B", created_at=T0, now=T0, ttl_days=5)
    live = mem.add("Xena borrowed the office projector", created_at=T0, now=T0, ttl_days=500)
    later = T0 + timedelta(days=30)
    expired = mem.get(res.id, touch=False)
    assert expired.expires_at == T0 + timedelta(days=5)
    assert mem.get(res.id, now=later).id == res.id  # opens it...
    hits = mem.search("parking permit", include_expired=True, now=later)
    assert res.id in {h.id for h in hits}  # ...lists it...
    after = mem.get(res.id, touch=False)
    assert (after.expires_at, after.recall_count, after.last_recalled_at) == (
        expired.expires_at, 0, None,
    )  # fmt: skip  ...and leaves it expired
    assert res.id not in {h.id for h in mem.search("parking permit", now=later)}
    assert [h.id for h in mem.search("office projector", now=later)] == [live.id]
    assert mem.get(live.id, touch=False).recall_count == 1  # a live one still counts
    mem.revise(res.id, "Xena's parking permit for lot B was renewed", now=later)
    assert res.id in {h.id for h in mem.search("parking permit", now=later)}


def test_gc_deletes_long_expired_and_decayed_and_reports(make_mem):
    s = Settings(memory_gc_retention_days=30)
    m = make_mem(settings=s)
    try:
        now = T0 + timedelta(days=400)
        gone = m.add("expired long ago", created_at=T0, now=T0, ttl_days=10)
        recent = m.add(
            "expired recently",
            created_at=now - timedelta(days=20),
            now=now - timedelta(days=20),
            ttl_days=5,
        )
        decayed = m.add("old and weak", created_at=T0, now=T0, ttl_days=1000, confidence=0.5)
        pinned = m.add("old but pinned", created_at=T0, now=T0, ttl_days=1000, pinned=True)
        forever = m.add("old but permanent", created_at=T0, now=T0, permanent=True)
        fresh = m.add("new note", created_at=now - timedelta(days=1), now=now - timedelta(days=1))
        dry = m.gc(now=now, dry_run=True)
        assert dry["deleted"] == 0 and set(dry["expired"]) == {gone.id}
        assert set(dry["decayed"]) == {decayed.id}
        assert len(m.list(include_expired=True, now=now)) == 6
        report = m.gc(now=now)
        assert report["deleted"] == 2
        left = {r.id for r in m.list(include_expired=True, now=now)}
        assert left == {recent.id, pinned.id, forever.id, fresh.id}
    finally:
        m.close()


def test_gc_collects_a_weak_memory_as_soon_as_it_decays_under_the_floor(mem: Memory):
    """Issue 20, item 9: the gc pre-filter assumed confidence 1, so a memory of
    confidence 0.06 (floor 0.05, half-life 30 days: under the floor after 7.9 idle
    days) was collected only after about 130 idle days."""
    weak = mem.add("barely trusted rumour", created_at=T0, now=T0, confidence=0.06, ttl_days=400)
    half = mem.add("half trusted note", created_at=T0, now=T0, confidence=0.5, ttl_days=400)
    strong = mem.add("fully trusted note", created_at=T0, now=T0, confidence=1.0, ttl_days=400)
    # day 5: 0.06 x 2^(-5/30) = 0.053, above the floor; nothing is due
    assert mem.gc(now=T0 + timedelta(days=5), dry_run=True)["decayed"] == []
    # day 10: 0.047 < 0.05
    assert mem.gc(now=T0 + timedelta(days=10), dry_run=True)["decayed"] == [weak.id]
    # 0.5 is under the floor after 99.7 days, 1.0 after 129.7 days
    assert mem.gc(now=T0 + timedelta(days=95), dry_run=True)["decayed"] == [weak.id]
    assert set(mem.gc(now=T0 + timedelta(days=105), dry_run=True)["decayed"]) == {
        weak.id, half.id,
    }  # fmt: skip
    assert set(mem.gc(now=T0 + timedelta(days=131), dry_run=True)["decayed"]) == {
        weak.id, half.id, strong.id,
    }  # fmt: skip
    report = mem.gc(now=T0 + timedelta(days=10))
    assert report["decayed"] == [weak.id] and report["deleted"] == 1
    assert {r.id for r in mem.list(include_expired=True, now=T0)} == {half.id, strong.id}


def test_improve_does_not_reset_age_but_revise_does(mem: Memory):
    res = mem.add("Wendy manages the data team", created_at=T0, now=T0)
    improved = mem.improve(res.id, confidence=0.4)
    assert improved.memory.updated_at == T0 and improved.memory.confidence == 0.4
    revised = mem.revise(res.id, "Wendy manages the platform team")
    assert revised.memory.updated_at > T0
    ops = [v.op for v in mem.history(res.id)]
    assert ops == ["add", "improve", "revise"]
    change = mem.history(res.id)[2].changes
    assert change["content"] == ["Wendy manages the data team", "Wendy manages the platform team"]


def test_a_backdated_memory_expires_from_the_time_it_was_written(mem: Memory):
    """An import of old history is not born expired: expiry counts from the write."""
    before = datetime.now(UTC)
    old = mem.add("Recorded long ago", created_at=T0).memory
    assert old.created_at == T0
    assert old.expires_at >= before + timedelta(days=90)
    assert [r.id for r in mem.list()] == [old.id]
