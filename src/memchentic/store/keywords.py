"""What the search stages of both backends share: their budgets (the ``SEARCH_*``
settings) and counters, and the choice of the query words a keyword search ranks.

A ranked keyword query costs time in proportion to the rows its words match, so
both backends bound it alike: words found in no memory are skipped; words in more
than ``common_term_docs`` memories are *common*, left out when rarer words exist;
words are taken rarest first while the rows they match add up to at most a
window; when even the rarest matches more, only the newest window of matches is
ranked (with the next rarest words while they add up to ``common_term_docs``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from .. import text
from ..errors import ValidationError
from .filters import MemoryFilter


class SearchBudgets:
    """Mixin for both stores: the budgets their constructors set, and the counters
    tests and diagnostics read."""

    common_term_docs: int
    common_window: int
    exact_vector_rows: int
    title_weight: float
    #: Isolated (untrusted) callers who see at most this many memories: keyword
    #: matches are found among their rows only (SEARCH_ISOLATED_SCAN_ROWS).
    isolated_scan_rows: int = 500
    #: Rows whose vectors and keyword documents the isolated searches keep between
    #: searches, all sets of namespaces together (:mod:`.isolated_cache`; about 1.5 kB
    #: a row for 384-dimension vectors).
    isolated_cache_rows: int = 60_000
    #: For tests and diagnostics: visible rows the isolated keyword stage has read
    #: (what the caller can see, never what other namespaces hold), and the
    #: isolated keyword searches that went through the shared index instead.
    keyword_rows_scanned: int = 0
    keyword_index_searches: int = 0
    #: The language the keyword index stems in (``KEYWORD_LANGUAGE``, recorded in
    #: the store's meta; :func:`bind_language`). English unless set.
    keyword_language: str = "english"
    #: The keyword rules (:data:`memchentic.text.KEYWORD_RULES`) the keyword index
    #: was written with (recorded in the store's meta; :func:`bind_rules`): every
    #: keyword text of the store, on both sides, is read with them; none until
    #: bound: a store indexed before rules existed.
    keyword_rules: frozenset[str] = frozenset()


class Budgets(TypedDict):
    """:class:`SearchBudgets`' settings, as keywords of either store's constructor."""

    common_term_docs: int
    common_window: int
    exact_vector_rows: int
    title_weight: float
    isolated_scan_rows: int


def choose_words(
    pairs: Sequence[tuple[str, str]],
    freqs: Mapping[str, int],
    *,
    common_term_docs: int,
    window: int,
) -> tuple[dict[str, int], list[str], int | None]:
    """The words of ``pairs`` (``(word, index term)``) to rank, given each term's
    document frequency: ``(rows each word matches, the words, window)``, where the
    window is the number of newest matches to rank (None: rank them all). No words
    when none is in any memory."""
    word_df: dict[str, int] = {}
    for word, term in pairs:  # a phrase matches at most as many rows as its rarest term
        word_df[word] = min(word_df.get(word, freqs.get(term, 0)), freqs.get(term, 0))
    present = [w for w, df in word_df.items() if df > 0]
    if not present:
        return word_df, [], None
    rare = [w for w in present if word_df[w] <= common_term_docs]
    words = rare or present
    window_rows = None if rare else window
    if sum(word_df[w] for w in words) > window:  # at any store size
        words, window_rows = _within_budget(words, word_df, window, common_term_docs)
    return word_df, words, window_rows


def _within_budget(
    words: list[str], word_df: dict[str, int], window: int, common_term_docs: int
) -> tuple[list[str], int | None]:
    """The rarest words while their rows add up to ``window`` (rank them all), or
    when the rarest alone matches more, the rarest words while they add up to
    ``common_term_docs`` with the window size (rank the newest matches)."""
    ordered = sorted(words, key=lambda w: (word_df[w], w))
    if word_df[ordered[0]] > window:
        budget, window_rows = common_term_docs, window
    else:
        budget, window_rows = window, None
    chosen, total = [ordered[0]], word_df[ordered[0]]
    for word in ordered[1:]:
        if total + word_df[word] > budget:
            break
        chosen.append(word)
        total += word_df[word]
    return chosen, window_rows


#: The meta key of a store's keyword language.
LANGUAGE_KEY = "keyword_language"


def bind_language(store: Any, wanted: str) -> str:
    """The language ``store``'s keyword index stems in, set on it: the one its meta
    records; a store without one records ``wanted`` when it holds no memory yet
    (a new store), English otherwise (it was indexed before languages existed).
    A store keeps its language: the index holds stems of that language."""
    recorded = _recorded(store, LANGUAGE_KEY, lambda empty: wanted if empty else "english")
    store.keyword_language = recorded
    return recorded


def _recorded(store: Any, key: str, first: Callable[[bool], str]) -> str:
    """The value ``store``'s meta records under ``key``; a store without one records
    ``first(empty)`` (``empty``: it holds no memory yet), once, under its write lock."""
    recorded = store.get_meta(key)
    if recorded is None:
        with store.write():
            recorded = store.get_meta(key)
            if recorded is None:
                everything = MemoryFilter.everything(include_expired=True, include_superseded=True)
                empty = next(iter(store.iter_memories(everything, batch=1)), None) is None
                recorded = first(empty)
                store.set_meta(key, recorded)
    return str(recorded)


def carry_language(source: Any, target: Any) -> None:
    """Before a copy of ``source`` into ``target`` (``store_copy.migrate``): the
    target stems as the source does. A target without memories takes the
    source's language; one holding memories stemmed in another language is
    refused (a :class:`ValidationError` naming ``keyword_language``), nothing
    copied. A target without memories also takes the source's keyword rules
    (:func:`adopt_rules`); one holding memories keeps its own (its index is read
    as it was written, whatever it is copied from)."""
    wanted = getattr(source, "keyword_language", "english")
    if not adopt_language(target, wanted):
        raise ValidationError(
            "keyword_language",
            f"the target's keyword index stems in {target.keyword_language}, the "
            f"source's in {wanted}: copy into a new store (nothing was copied)",
        )
    adopt_rules(target, getattr(source, "keyword_rules", frozenset()))


def adopt_language(target: Any, wanted: str) -> bool:
    """Make ``target`` stem in ``wanted`` when it holds no memory yet (a copy or a
    restore into a new store). Whether ``target`` now stems in ``wanted``: False
    when it holds memories stemmed in another language (left as it is)."""
    if getattr(target, "keyword_language", "english") == wanted:
        return True
    everything = MemoryFilter.everything(include_expired=True, include_superseded=True)
    with target.write():
        if target.count(everything):
            return False
        target.set_meta(LANGUAGE_KEY, wanted)
    target.keyword_language = wanted
    return True


#: The meta key of the keyword rules a store's index is written with.
RULES_KEY = "keyword_rules"


def rules_value(rules: frozenset[str]) -> str:
    """``rules`` as the meta records them: their names, sorted, joined by commas
    (``""``: none)."""
    return ",".join(sorted(rules))


def parse_rules(value: str | None) -> frozenset[str]:
    """The rules a meta value records (:func:`rules_value`); none for None."""
    return frozenset(name for name in (value or "").split(",") if name)


def bind_rules(store: Any) -> frozenset[str]:
    """The keyword rules ``store``'s index is written with, set on it: the ones its
    meta records; a store without a record records the default rules
    (:data:`memchentic.text.ACTIVE_KEYWORD_RULES`) when it holds no memory yet (a
    new store), none otherwise (it was indexed before rules existed; the
    migration ``m013_keyword_rules`` gives the built-in backends a record). A store
    keeps its rules: its index holds what they gave."""
    default, none = rules_value(text.ACTIVE_KEYWORD_RULES), rules_value(frozenset())
    recorded = _recorded(store, RULES_KEY, lambda empty: default if empty else none)
    store.keyword_rules = parse_rules(recorded)
    return frozenset(store.keyword_rules)


def adopt_rules(target: Any, wanted: frozenset[str]) -> bool:
    """Make ``target``'s index use the keyword rules ``wanted`` when it holds no
    memory yet (a copy into a new store, as :func:`adopt_language`). Whether
    ``target`` now uses them: False when it holds memories written with other
    rules (left as it is: its index stays read as it was written)."""
    if getattr(target, "keyword_rules", frozenset()) == wanted:
        return True
    everything = MemoryFilter.everything(include_expired=True, include_superseded=True)
    with target.write():
        if target.count(everything):
            return False
        target.set_meta(RULES_KEY, rules_value(wanted))
    target.keyword_rules = frozenset(wanted)
    return True
