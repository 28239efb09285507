"""ULIDs: the digits, their order, monotonic ids within a millisecond."""

from __future__ import annotations

import random

from memchentic import ids


def reference(ms: int, rand: int) -> str:
    """The ULID text written the slow, obvious way: 26 base32 digits, five bits each."""
    value = (ms & ((1 << 50) - 1)) << 80 | rand
    return "".join(ids._ALPHABET[value >> (5 * i) & 31] for i in reversed(range(26)))


def test_digits_equal_the_reference():
    rng = random.Random(7)
    cases = [(0, 0), (1, 1), ((1 << 50) - 1, (1 << 80) - 1), (-62135596800000, 5)]
    cases += [(rng.getrandbits(48), rng.getrandbits(80)) for _ in range(2000)]
    cases += [(-rng.getrandbits(45), rng.getrandbits(79)) for _ in range(200)]  # year < 1970
    for ms, rand in cases:
        assert ids._encode(ms, rand) == reference(ms, rand), (ms, rand)


def test_ids_sort_by_time_and_count_up_within_a_millisecond():
    made = [ids.new_id(1_700_000_000_000) for _ in range(50)]
    made += [ids.new_id(1_700_000_000_001) for _ in range(5)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
    assert all(len(i) == 26 and set(i) <= set(ids._ALPHABET) for i in made)
    assert made[0][:10] == made[49][:10] != made[50][:10]


def test_ids_of_one_millisecond_sort_in_write_order_even_when_made_apart():
    """Two sessions stamped with the same date, logged one after the other: the i-th
    turns of both share a millisecond but are not minted back to back (issue 22)."""
    a, b = 1_700_000_000_000, 1_600_000_000_000
    made = [ids.new_id(ms) for _ in range(3) for ms in (a, b, a + 60_000)]
    same_a = [i for n, i in enumerate(made) if n % 3 == 0]
    same_b = [i for n, i in enumerate(made) if n % 3 == 1]
    assert same_a == sorted(same_a) and same_b == sorted(same_b)
    assert len(set(made)) == len(made)
    assert sorted(made)[:3] == same_b  # the millisecond still comes first
