"""The write rules' caches keep statements, never long texts: a caller who writes
distinct long texts cannot make a process hold gigabytes (each of 4,096 entries of
a 64 KB text held about 2.2 MB of tokens)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from memchentic import Memory
from memchentic.write import grammar, key_value, polarity, statements, summary, words

TEXT_CACHES = [
    words.tokens, polarity.negation_cues, summary.summary, grammar.discourse_core,
    grammar.is_question, grammar.is_english, grammar.clauses, statements._rest,
    statements._cues, key_value._key_value_parts,
]  # fmt: skip


def _long(seed: int, chars: int = 30_000) -> str:
    rng = random.Random(seed)
    vocab = [f"w{n}" for n in range(2_000)] + ["not", "the", "is", "moved", "to"]
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(vocab))
    return " ".join(out) + "."


@pytest.mark.parametrize("cached", TEXT_CACHES, ids=lambda f: f.__name__)
def test_a_long_text_is_read_but_not_kept(cached: Callable[[str], object]) -> None:
    text = _long(1, words.MAX_CACHED_CHARS + 500)
    cached.cache_clear()  # type: ignore[attr-defined]
    before = cached.cache_info().currsize  # type: ignore[attr-defined]
    assert cached(text) == cached(text)  # the same answer, computed twice
    assert cached.cache_info().currsize == before  # type: ignore[attr-defined]
    cached(f"Ana moved to Porto in {cached.__name__}.")  # a statement: kept
    assert cached.cache_info().currsize == before + 1  # type: ignore[attr-defined]


def test_writing_long_texts_leaves_the_caches_as_they_were(
    make_mem: Callable[..., Memory],
) -> None:
    mem = make_mem()
    for cached in TEXT_CACHES:  # none full: what a long text would add shows
        cached.cache_clear()  # type: ignore[attr-defined]
    mem.add("Ana moved to Porto.", user_id="ana")  # warm: imports, short texts
    sizes = [f.cache_info().currsize for f in TEXT_CACHES]  # type: ignore[attr-defined]
    for seed in range(6):
        assert mem.add(_long(seed), user_id="ana").status == "added"
    assert [f.cache_info().currsize for f in TEXT_CACHES] == sizes  # type: ignore[attr-defined]
