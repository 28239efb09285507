"""The keyword stage reads text as people write it (issue 33, item 4): identifiers
are split into their words (camelCase, PascalCase; the tokenizers already split
snake_case, kebab-case and dotted paths) and elongated words get their plain
forms ("sooo" -> "so"), on both sides and on both backends, keeping every
original token so that text indexed without a rule still matches. The rules are
declared and measured; ``identifiers`` is active by default
(``text.ACTIVE_KEYWORD_RULES``, recorded by each store: tests/test_keyword_rules_store.py);
each test here switches them all on."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from memchentic import Memory, text
from memchentic.clock import utcnow
from memchentic.text import (
    elongation_forms,
    identifier_words,
    keyword_rule_words,
    keyword_text,
    query_words,
)

#: The rules active when the tests are collected: the package's default.
DEFAULT_RULES = text.ACTIVE_KEYWORD_RULES


@pytest.fixture(autouse=True)
def rules_off() -> Iterator[Callable[..., None]]:
    """Every rule active in each test (only ``identifiers`` is by default, see
    ``text.ACTIVE_KEYWORD_RULES``); ``rules_off(*rules)`` switches those off."""
    saved = text.ACTIVE_KEYWORD_RULES
    text.ACTIVE_KEYWORD_RULES = frozenset(text.KEYWORD_RULES)

    def switch(*rules: str) -> None:
        text.ACTIVE_KEYWORD_RULES = frozenset(text.KEYWORD_RULES) - set(rules)

    yield switch
    text.ACTIVE_KEYWORD_RULES = saved


def test_identifiers_is_the_rule_active_by_default(rules_off: Callable[..., None]):
    """Stores record their rules and old indexes are rebuilt (migration 13), so the
    rule that wins (identifiers) is on by default; with no rule, keyword text is
    unchanged."""
    assert frozenset({"identifiers"}) == DEFAULT_RULES
    rules_off(*text.KEYWORD_RULES)
    said = "loadUserProfile was sooo slow"
    assert keyword_text(said) is said


def _keyword(mem: Memory, query: str) -> list[str]:
    flt = mem._read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
    return [hit for hit, _ in mem.store.keyword_search(query, 10, flt)]


def test_identifiers_are_followed_by_their_words():
    assert identifier_words("loadUserProfile") == ["load", "User", "Profile"]
    assert identifier_words("UserProfileLoader") == ["User", "Profile", "Loader"]
    assert identifier_words("XMLHttpRequest") == ["XML", "Http", "Request"]
    assert identifier_words("maxRetryCount_v2") == ["max", "Retry", "Count", "v", "2"]
    not_ones = (
        "RETRY_BACKOFF_MS",
        "user_profile",
        "Profile",
        "iPhone",
        "5K",
        "GoT",
        "APIs",
        "LeBron",
    )
    for not_one in not_ones:
        assert identifier_words(not_one) == []
    said = "call UserProfileLoader.load() from loadUserProfile"
    assert keyword_text(said) == (
        "call UserProfileLoader User Profile Loader.load() from loadUserProfile load User Profile"
    )
    assert query_words("the UserProfileLoader class") == [
        "userprofileloader", "user", "profile", "loader", "class",
    ]  # fmt: skip


def test_elongated_words_are_followed_by_their_plain_forms():
    assert elongation_forms("sooo") == ["so", "soo"]
    assert elongation_forms("yesss") == ["yes", "yess"]
    assert elongation_forms("goooood") == ["god", "good"]
    for not_one in ("good", "Hawaii", "zzz", "III", "1000"):
        assert elongation_forms(not_one) == []
    assert keyword_text("omg sooo goood!!") == "omg sooo so soo goood god good!!"
    assert "good" in query_words("it was goood")


def test_text_no_rule_applies_to_is_the_same_string():
    for said in ("Running shoes", "RETRY_BACKOFF_MS is 250", "an iPhone case", "zzz at www.x.com"):
        assert keyword_text(said) is said


def test_each_rule_can_be_switched_off_and_is_traced(rules_off: Callable[..., None]):
    said = "loadUserProfile was sooo slow"
    assert keyword_rule_words(said) == [
        ("identifiers", "loadUserProfile", ["load", "User", "Profile"]),
        ("elongations", "sooo", ["so", "soo"]),
    ]
    rules_off("identifiers")
    assert keyword_text(said) == "loadUserProfile was sooo so soo slow"
    assert [r for r, _, _ in keyword_rule_words(said)] == ["elongations"]
    rules_off("identifiers", "elongations")
    assert keyword_text(said) is said and keyword_rule_words(said) == []
    # a store passes the rules its index was written with, whatever is active
    assert (
        keyword_text(said, rules=frozenset({"elongations"}))
        == "loadUserProfile was sooo so soo slow"
    )
    assert query_words(said, rules=frozenset({"identifiers"}))[:3] == [
        "loaduserprofile",
        "load",
        "user",
    ]
    assert [r for r, _, _ in keyword_rule_words(said, frozenset({"identifiers"}))] == [
        "identifiers"
    ]


def test_an_identifier_is_found_by_its_words_on_both_backends(make_mem: Callable[..., Memory]):
    mem = make_mem()
    loader = mem.add("The portal reads names through UserProfileLoader.load").memory
    mem.add_many(["The profile page shows the avatar", "Loading screens are slow"])
    assert loader is not None
    assert _keyword(mem, "which loader class")[:1] == [loader.id]
    assert _keyword(mem, "UserProfileLoader")[:1] == [loader.id]
    assert _keyword(mem, "userProfileLoader")[:1] == [loader.id]
    mem.revise(loader.id, content="The portal reads names through AccountLoader.load")
    assert loader.id not in _keyword(mem, "user profile")
    assert _keyword(mem, "account")[:1] == [loader.id]
    mem.delete(loader.id)
    assert _keyword(mem, "account loader") == []


def test_an_elongated_word_is_found_by_its_plain_form_on_both_backends(
    make_mem: Callable[..., Memory],
):
    mem = make_mem()
    said = mem.add("Kath: the new flat is soooo nice, balcony is hugeee").memory
    mem.add_many(["Jon: the old flat had no balcony", "Mo: ok"])
    assert said is not None
    assert _keyword(mem, "nice")[:1] == [said.id]
    assert _keyword(mem, "huge")[:1] == [said.id]


def test_text_indexed_without_the_rules_still_matches_queries_read_with_them(
    make_mem: Callable[..., Memory], rules_off: Callable[..., None]
):
    rules_off("identifiers", "elongations")
    mem = make_mem()
    old = mem.add("UserProfileLoader was sooo slow").memory
    assert old is not None
    text.ACTIVE_KEYWORD_RULES = frozenset(text.KEYWORD_RULES)
    assert _keyword(mem, "UserProfileLoader")[:1] == [old.id]
    assert _keyword(mem, "sooo slow")[:1] == [old.id]


def test_the_fast_identifier_scan_finds_what_the_pattern_does() -> None:
    """``_camel_tokens`` (a ``str.translate`` shape and ``str.find``, for write
    speed) finds exactly the spans of the declared pattern ``_CAMEL``: on tricky
    tokens and on 20,000 seeded random strings of letters, digits, underscores,
    capitals, non-ASCII letters and separators."""
    import random

    tricky = "loadUserProfile XMLHttpRequest AX6000 RT-AX86U 5K iPhone LeBron APIs a_bC Üx x2Go"
    rng = random.Random(7)
    alphabet = "aBz_9Z. Ü-xY0q"
    samples = [tricky] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
                          for _ in range(20_000)]  # fmt: skip
    for sample in samples:
        assert text._camel_tokens(sample) == [m.span() for m in text._CAMEL.finditer(sample)]
