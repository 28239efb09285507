"""What one member's rows cost another member's search on SQLite: the isolated
keyword stage's work is bounded by the caller's query, not by the words of the rows
it may see, and it warms nothing another caller's search could time.

The attack: a group member writes a few memories of random Han characters (every
pair of characters a word: about 130,000 distinct ones in six memories); every
later search by another member stemmed every distinct word it could see, and the
store's stem cache of 100,000 words emptied itself when full, so it did so again at
every search (43-50 s each).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memchentic import Memory
from memchentic.store.migrations.sqlite import TOKENIZER
from memchentic.store.sqlite_search import StemCache
from memchentic.text import MAX_QUERY_WORDS

pytestmark = pytest.mark.backends("sqlite")


def _han(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(n))


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Memory]:
    """alice writes three memories of 6,000 random Han characters (about 18,000
    distinct bigrams) to group:team; bob, a member, has one memory of his own."""
    mem = Memory(store=str(tmp_path / "memory.db"), embedder="hash")
    mem.directory.create_identity("alice")
    mem.directory.create_identity("bob")
    mem.directory.create_group("team", admins=["alice"], members=["bob"])
    for n in range(3):
        mem.for_identity("alice").add(_han(n, 6000), namespace="group:team", on_duplicate="keep")
    mem.for_identity("bob").add("bob likes green tea", on_duplicate="keep")
    yield mem
    mem.close()


def _counted(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Every call of the store's stemmer from now on: (words, whether cached)."""
    store: Any = mem.store
    real = store._stems
    calls: list[tuple[int, bool]] = []

    def stems(words: Sequence[str], *, cached: bool = True) -> list[tuple[str, str]]:
        calls.append((len(words), cached))
        return real(words, cached=cached)

    monkeypatch.setattr(store, "_stems", stems)
    return calls


def test_a_members_search_stems_only_its_query_once_rows_were_read(
    team: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    bob = team.for_identity("bob")
    calls = _counted(team, monkeypatch)
    first = bob.search("green tea")
    assert first and first[0].text == "bob likes green tea"
    for query in ("green tea", "what does bob like", "tea", "green tea"):
        calls.clear()
        hits = bob.search(query)
        assert hits and hits[0].text == "bob likes green tea"
        # the query's words only (no more than a query keeps), whatever the rows hold
        assert sum(n for n, _ in calls) <= MAX_QUERY_WORDS, (query, calls)


def test_the_rows_and_queries_of_an_isolated_search_warm_no_shared_cache(
    team: Memory,
) -> None:
    """What a caller's rows or queries hold is never kept where another caller's
    search time could tell it was seen (the shared stem cache)."""
    store: Any = team.store
    before = dict.fromkeys(store.__dict__.get("_stem_cache") or ())
    team.for_identity("bob").search("green tea 茶叶")
    team.for_identity("alice").search(_han(0, 12))
    cache = store.__dict__.get("_stem_cache")
    assert cache is None or len(cache) == len(before)


def test_the_stem_cache_drops_the_least_recently_used_not_everything() -> None:
    cache = StemCache(3)
    cache.put_many({"a": ("a",), "b": ("b",), "c": ("c",)})
    assert cache.get_many(["a"]) == {"a": ("a",)}  # a: used last
    cache.put_many({"d": ("d",)})
    assert len(cache) == 3 and set(cache.get_many(["a", "b", "c", "d"])) == {"a", "c", "d"}


WORDS = ["foo_bar", "café", "Ünïcödé", "a", "ab", "running", "x" * 70, "ﬁne", "İstanbul",
         "straße", "١٢٣", "e\u0301te", "_", "__", "a_", "日本語", "ｶﾀｶﾅ", "", "tea",
         "relational", "happily", "a\ue000b", "\ue000", "ties", "loadUserProfile"]  # fmt: skip


def test_words_tokenised_together_get_the_terms_each_gets_alone(team: Memory) -> None:
    """All of a batch's words go through the tokenizer as one document, a marker
    between them; each gets the terms it gets as a document of its own."""
    rng = random.Random(5)
    alphabet = "abcdefghijklmnopqrstuvwxyzéüß_0123456789日本ｶ\u0301"
    words = WORDS + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
                     for _ in range(3000)]  # fmt: skip
    words = list(dict.fromkeys(words))
    alone = sqlite3.connect(":memory:")
    alone.execute(f"CREATE VIRTUAL TABLE t USING fts5(word, tokenize='{TOKENIZER}')")
    alone.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    alone.executemany("INSERT INTO t(rowid, word) VALUES (?, ?)", enumerate(words, start=1))
    expected: dict[str, list[str]] = {w: [] for w in words}
    for doc, term in alone.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        expected[words[doc - 1]].append(term)
    store: Any = team.store
    got = store._stems(words, cached=False)
    together: dict[str, list[str]] = {w: [] for w in words}
    for word, term in got:
        together[word].append(term)
    assert together == expected
