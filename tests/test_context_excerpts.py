"""What reaches the prompt (issue 33, item 3): a long hit is shown as its best
passage, marked as an excerpt that names its memory; a hit that nearly repeats a
shown one of its session is left out; budgets still hold."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from memchentic import Embedder, HashEmbedder, Memory, Settings
from memchentic.context import ContextItem, get_counter
from memchentic.context.excerpts import (
    ELLIPSIS,
    EXCERPT_QUERY_WORDS,
    EXCERPT_WORK,
    ExcerptBudget,
    best_window,
    excerpt_text,
    informative,
    near_duplicates,
    sentences,
    windows,
)
from memchentic.engine.context import _fit
from memchentic.retrieval.rerank import doc_text, local_idf, query_cues

FILLER = [
    "We talked about the weather for a while and it was rainy all week long.",
    "Then the conversation moved on to football results from the weekend matches.",
    "Somebody mentioned a new café that opened near the station last month.",
    "There was a long discussion about which streaming series is worth watching.",
]
NEEDLE = "My sister Ana works as a glassblower in the old town of Porto."


def long_text(needle_at: int = 9, repeats: int = 5) -> str:
    lines = [FILLER[i % len(FILLER)] for i in range(4 * repeats)]
    lines.insert(needle_at, NEEDLE)
    return " ".join(lines)


def cues_for(query: str, texts: Sequence[str]) -> Any:
    q = query_cues(query)
    return replace(q, weights=local_idf(q.terms, [doc_text(t) for t in texts]))


# --- the pure parts ----------------------------------------------------------------------
def test_sentences_and_windows_stay_within_the_limit() -> None:
    text = long_text()
    spans = sentences(text)
    assert len(spans) == 21 and text[slice(*spans[9])] == NEEDLE
    for start, end in windows(text, 200):
        assert 0 < end - start <= 200
        assert text[start:end] == text[start:end].strip()


def test_a_sentence_longer_than_the_limit_is_cut_at_a_word() -> None:
    text = "word " * 100
    ((start, end),) = windows(text.strip(), 42)
    assert start == 0 and end <= 42 and text[end] == " "


def test_the_best_window_holds_the_passage_that_answers() -> None:
    text = long_text()
    q = cues_for("Where does Ana the glassblower work?", [text])
    w = best_window(text, q, 300)
    assert NEEDLE in text[w.start : w.end]
    assert text[w.start : w.end].startswith(NEEDLE)  # nearest the words it holds
    assert w.end - w.start <= 300


def test_a_text_that_matches_nowhere_shows_its_start() -> None:
    text = long_text()
    w = best_window(text, cues_for("quantum chromodynamics", [text]), 300)
    assert w.start == 0 and w.score == 0.0


def test_an_excerpt_says_it_is_one_and_names_its_memory() -> None:
    text = long_text()
    w = best_window(text, cues_for("Ana glassblower", [text]), 300)
    shown = excerpt_text(text, w, "01ABC", "user")
    assert shown.startswith("[excerpt of memory 01ABC, said by user] " + ELLIPSIS)
    assert shown.endswith(ELLIPSIS) and NEEDLE in shown
    start = excerpt_text(text, replace(w, start=0), "01ABC", "user")
    assert start.startswith("[excerpt of memory 01ABC] ") and ELLIPSIS not in start[:40]


def test_near_duplicates_need_the_same_session_and_the_threshold() -> None:
    a, b, c = np.array([1.0, 0.0]), np.array([0.99, 0.141]), np.array([0.0, 1.0])
    vectors = {"a": a, "b": b, "c": c, "d": b}
    sessions = {"a": "s1", "b": "s1", "c": "s1", "d": "s2"}
    assert near_duplicates(["a", "b", "c", "d"], sessions, vectors, 0.95) == {"b": ["a"]}
    assert near_duplicates(["a", "b", "c", "d"], sessions, vectors, 0.999) == {}
    assert near_duplicates(["a", "b"], sessions, vectors, 0.0) == {}
    assert near_duplicates(["a", "b"], {"a": None, "b": None}, vectors, 0.5) == {}


def test_a_twin_is_dropped_only_while_its_better_twin_is_shown() -> None:
    counter = get_counter("estimate")
    big = ContextItem("a", "x " * 400, 0.9, "episodes")
    small = ContextItem("b", "the short twin", 0.8, "episodes")
    items = {"episodes": [big, small]}
    kept, dropped = _fit(items, 100, counter, twins={"b": ["a"]})
    assert [i.id for i in kept["episodes"]] == ["b"] and dropped == [big]
    small_a = ContextItem("a", "the short one", 0.9, "episodes")
    kept, dropped = _fit({"episodes": [small_a, small]}, 100, counter, twins={"b": ["a"]})
    assert [i.id for i in kept["episodes"]] == ["a"] and dropped == [small]
    kept, dropped = _fit({"episodes": [small_a, small]}, None, counter, twins={"b": ["a"]})
    assert [i.id for i in kept["episodes"]] == ["a"] and dropped == [small]


# --- through Memory.context ---------------------------------------------------------------
class MarkedEmbedder(Embedder):
    """Texts holding the word ``twin`` share one vector; others hash (deterministic)."""

    name = "marked"
    model = "test-marked"
    dimension = 16

    def __init__(self) -> None:
        self._hash = HashEmbedder(dimension=self.dimension)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        twin = np.eye(self.dimension, dtype=np.float32)[0]
        return np.vstack([twin if "twin" in t.lower() else self._hash.embed(t) for t in texts])


def log(mem: Memory, text: str, session: str = "s1") -> str:
    r = mem.add(text, user_id="u", type="episodic", session_id=session, on_duplicate="keep",
                permanent=True)  # fmt: skip
    assert r.id is not None
    return str(r.id)


@pytest.fixture
def mem_with_long_turn(make_mem: Callable[..., Memory]) -> tuple[Memory, str]:
    mem = make_mem(settings=Settings(context_excerpt_over_chars=800, context_excerpt_chars=300))
    long_id = log(mem, "user: " + long_text())
    for line in ("user: Ana sent me a postcard from Porto.", "assistant: Porto is lovely."):
        log(mem, line)
    return mem, long_id


def test_a_long_hit_is_shown_as_a_marked_excerpt_under_a_tight_budget(
    mem_with_long_turn: tuple[Memory, str],
) -> None:
    mem, long_id = mem_with_long_turn
    ctx = mem.context("Where does Ana the glassblower work?", user_id="u", budget_tokens=160)
    (item,) = [i for i in ctx.items if i.id == long_id]
    assert item.excerpt and item.text.startswith(f"[excerpt of memory {long_id}")
    assert NEEDLE in item.text and len(item.text) < 400
    assert f"[excerpt of memory {long_id}" in str(ctx)
    assert ctx.tokens <= 160


def test_an_excerpt_is_shown_whole_when_the_budget_has_room(
    mem_with_long_turn: tuple[Memory, str],
) -> None:
    mem, long_id = mem_with_long_turn
    for budget in (None, 4000):
        ctx = mem.context("Where does Ana the glassblower work?", user_id="u", budget_tokens=budget)
        (item,) = [i for i in ctx.items if i.id == long_id]
        assert not item.excerpt and item.text == "user: " + long_text()


def test_budgets_hold_with_excerpts(mem_with_long_turn: tuple[Memory, str]) -> None:
    mem, _ = mem_with_long_turn
    for budget in (20, 60, 120, 200, 320, 500, 900):
        ctx = mem.context("Ana glassblower Porto", user_id="u", budget_tokens=budget)
        assert ctx.tokens <= budget


def test_excerpts_off_shows_every_hit_whole(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem(settings=Settings(context_excerpt_over_chars=0))
    long_id = log(mem, "user: " + long_text())
    ctx = mem.context("Ana glassblower", user_id="u", budget_tokens=100)
    assert long_id not in ctx.memory_ids  # too long to fit whole: dropped, never cut
    assert not any(i.excerpt for i in ctx.items)


def test_a_near_identical_hit_of_the_same_session_is_left_out(
    make_mem: Callable[..., Memory],
) -> None:
    mem = make_mem(embedder=MarkedEmbedder(), settings=Settings(context_duplicate_cosine=0.95))
    first = log(mem, "user: my twin brother is called Leo")
    second = log(mem, "user: my twin brother is called Leo!")
    other = log(mem, "user: my twin brother is called Leo", session="s2")
    ctx = mem.context("twin brother", user_id="u", budget_tokens=500)
    shown = set(ctx.memory_ids)
    assert other in shown and len(shown & {first, second}) == 1
    assert {i.id for i in ctx.dropped} == {first, second} - shown
    off = make_mem("off", embedder=MarkedEmbedder())  # the default: 0, never
    ids = {log(off, "user: my twin sister is Mia"), log(off, "user: my twin sister is Mia.")}
    assert ids <= set(off.context("twin sister", user_id="u", budget_tokens=500).memory_ids)


def test_a_large_budget_searches_enough_hits_to_fill_it(make_mem: Callable[..., Memory]) -> None:
    mem = make_mem(settings=Settings(context_search_limit=5, context_fill_tokens_per_hit=50))
    for n in range(12):
        log(mem, f"user: note {n} about the garden and its roses", session=f"s{n}")
    shown = len(mem.context("garden roses", user_id="u", budget_tokens=600).memory_ids)
    assert shown == 12  # 600 / 50 = 12 hits asked for
    assert len(mem.context("garden roses", user_id="u", budget_tokens=200).memory_ids) == 5
    assert len(mem.context("garden roses", user_id="u").memory_ids) == 5
    assert len(mem.context("garden roses", user_id="u", limit=3, budget_tokens=600).memory_ids) == 3
    off = make_mem("off", settings=Settings(context_search_limit=5, context_fill_tokens_per_hit=0))
    for n in range(12):
        log(off, f"user: note {n} about the garden and its roses", session=f"s{n}")
    assert len(off.context("garden roses", user_id="u", budget_tokens=600).memory_ids) == 5


# --- bounded work (a context call's excerpts cannot hold a worker) ---------------------------
def _random_words(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 9)))
            for _ in range(n)]  # fmt: skip


def _random_text(words: Sequence[str], seed: int, size: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    while sum(len(s) + 1 for s in out) < size:
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(5, 14))) + ".")
    return " ".join(out)[:size]


def test_a_long_query_is_weighed_by_its_most_informative_words() -> None:
    q = replace(query_cues("alpha beta gamma delta alpha"),
                weights={"alpha": 1.0, "beta": 3.0, "gamma": 2.0, "delta": 3.0})  # fmt: skip
    kept = informative(q, 2)
    assert kept.terms == ("beta", "delta") and set(kept.weights) == {"beta", "delta"}
    assert informative(q, 4) is q  # no more words than the limit: the same cues


def test_a_spent_budget_shows_the_start_and_the_best_read_so_far() -> None:
    text = long_text(needle_at=15)
    q = cues_for("Where does Ana the glassblower work?", [text])
    spent = best_window(text, q, 300, ExcerptBudget(0))
    assert spent.start == 0 and spent.score == 0.0 and spent.end <= 300
    whole = ExcerptBudget()
    assert NEEDLE in text[slice(*windows(text, 300)[15])]
    found = best_window(text, q, 300, whole)
    assert NEEDLE in text[found.start : found.end] and 0 < whole.spent < EXCERPT_WORK
    cut = best_window(text, q, 300, ExcerptBudget(whole.spent // 3))  # never reaches it
    assert NEEDLE not in text[cut.start : cut.end]


@pytest.mark.backends("sqlite")
def test_one_context_call_reads_a_bounded_number_of_words(
    make_mem: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: long memories of many sentences and a query of 8 KB of their words.
    Unbounded, every window of every hit was weighed against every query word (40 hits
    of 64 KB: 11-16 s). Counted: the words the excerpts tokenise, and the window words
    times query words they compare; each at most EXCERPT_WORK for the whole call."""
    import memchentic.context.excerpts as excerpts

    words = _random_words(1, 3000)
    mem = make_mem(settings=Settings(max_content_bytes=64 * 1024))
    for n in range(4):
        log(mem, _random_text(words, n, 60_000), session=f"s{n}")
    query = " ".join(_random_words(1, 3000)[:1500])[:8000]
    read, compared, weighed = [0], [0], [0]
    real_doc_text, real_score = excerpts.doc_text, excerpts.passage_score

    def counted_doc_text(text: str, speaker: str | None = None) -> Any:
        doc = real_doc_text(text, speaker)
        read[0] += len(doc.terms)
        return doc

    def counted_score(doc: Any, q: Any) -> float:
        compared[0] += len(doc.terms) * len(set(q.terms))
        weighed[0] = max(weighed[0], len(set(q.terms)))
        return real_score(doc, q)

    monkeypatch.setattr(excerpts, "doc_text", counted_doc_text)
    monkeypatch.setattr(excerpts, "passage_score", counted_score)
    ctx = mem.context(query, user_id="u", budget_tokens=2000)
    assert any(i.excerpt for i in ctx.items)  # the hits were offered as excerpts
    assert read[0] <= EXCERPT_WORK
    assert weighed[0] <= EXCERPT_QUERY_WORDS
    # each comparison of a window's word with a query word is paid from the budget
    assert compared[0] <= EXCERPT_WORK * EXCERPT_QUERY_WORDS
