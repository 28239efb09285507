"""The words of a statement, as the write-time decision reads them (issue 21, 31).

Texts are compared in one normal form (NFKC, format characters removed,
apostrophes unified, contractions expanded) and as tokens that say what each word
carries: a *value* (numbers, versions, dates and times, quantities and money,
identifiers, proper names, negation), a *function word* (differences in these never
matter) or a content word; words are matched by a light stem, irregular forms and
synonyms read as one word. :mod:`memchentic.write.statements` decides on them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache, wraps
from typing import Any, NamedTuple, TypeVar, cast

from .relations import NEGATION_WORDS, SYNONYMS, expand_contractions

# --- normalisation and tokens ----------------------------------------------------------
#: Characters dropped before comparing: zero-width and other format characters (Cf).
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
#: (pattern, replacement, a substring of every match, lower-cased): an ASCII text
#: without the substring is left as it is, and the pattern need not run.
_CONTRACTIONS = tuple(
    (re.compile(pattern, re.IGNORECASE), repl, needle)
    for pattern, repl, needle in (
        (r"\bcan't\b", "can not", "can't"), (r"\bwon't\b", "will not", "won't"),
        (r"\bshan't\b", "shall not", "shan't"), (r"\b(\w+)n't\b", r"\1 not", "n't"),
        (r"\bcannot\b", "can not", "cannot"),
    )
)  # fmt: skip
#: Contractions typed without their apostrophe ("dont", "im", "cant"): the long form.
_BARE_CONTRACTIONS = re.compile(
    r"\b(?:(do|does|did|is|are|was|were|has|have|had|could|would|should|must|need)nt|"
    r"(ca)nt|(wo)nt|(i)m|(i|you|we|they)ve|(you|they)re)\b",
    re.IGNORECASE,
)
_BARE_LONG = {"ca": "can", "wo": "will"}


def expand_bare(text: str) -> str:
    """``text`` with contractions typed without their apostrophe ("dont", "im") and
    those beyond "n't" ("I'm", "they've") written out."""
    if _BARE_CONTRACTIONS.search(text):
        text = _BARE_CONTRACTIONS.sub(_bare, text)
    return expand_contractions(text)


def _bare(found: re.Match[str]) -> str:
    verb, can, will, i_am, have, are = found.groups()
    if verb or can or will:
        stem_ = verb or can or will
        return f"{_BARE_LONG.get(stem_.lower(), stem_)} not"
    if i_am:
        return f"{i_am} am"
    if have:
        return f"{have} have"
    return f"{are} are"
#: A token: a word, a number, or an identifier (a version, a time, an email, a host,
#: a path, a URL, money); inner punctuation is kept, trailing punctuation is not.
_TOKEN = re.compile(r"[$€£¥]?\w(?:[\w'.\-/:@%+,#~&=?]*[\w%/$€£])?")


#: "7am" is "7 am": a time written with or without the space is the same time.
_TIME_SUFFIX = re.compile(r"(\d)(am|pm|a\.m\.|p\.m\.)(?!\w)", re.IGNORECASE)


def normalise(text: str) -> str:
    """The form two texts are compared in: NFKC, format characters removed,
    apostrophes unified, whitespace collapsed (case kept: proper names are values)."""
    kept = embedding_text(text).translate(_APOSTROPHES)
    return " ".join(_TIME_SUFFIX.sub(r"\1 \2", kept).split())


def embedding_text(text: str) -> str:
    """The text embedded for a write or a query: NFKC with format characters
    (zero-width and the like) removed, so that forms of one text that differ only
    in them embed alike; spacing and punctuation are left to the model."""
    folded = unicodedata.normalize("NFKC", text)
    if folded.isascii():
        return folded
    return "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")


def memory_embedding_text(title: str | None, content: str) -> str:
    """What a memory's vector embeds, on every path that embeds one (writes,
    imports, reindex): its title and content, as :func:`embedding_text`."""
    return embedding_text(f"{title}\n{content}" if title else content)


class Token(NamedTuple):
    """A word of a statement (:func:`tokens`): a named tuple, as a text of 400
    characters has about 60 (a frozen dataclass took 0.6 us to make, this 0.3)."""

    text: str  # as written (normalised), for proper-name detection
    key: str  # lower-cased stem, what tokens are matched by
    value: bool  # carries a value (module docstring)
    function: bool  # a function word: differences in these never matter
    position: int
    negation: bool = False  # a negation cue ("not", "never", "no", ...)


#: Longest text the write rules' caches keep (a statement; a longer text is read as
#: passages): a caller writing long texts cannot make the caches hold gigabytes.
MAX_CACHED_CHARS = 2000

F = TypeVar("F", bound=Callable[..., Any])


def text_cache(maxsize: int, max_chars: int = MAX_CACHED_CHARS) -> Callable[[F], F]:
    """``lru_cache(maxsize)`` for a function of a text first, which computes (without
    keeping) the answer for a text over ``max_chars``: the cache holds at most
    ``maxsize`` texts of at most ``max_chars`` characters."""

    def wrap(func: F) -> F:
        kept = lru_cache(maxsize=maxsize)(func)

        @wraps(func)
        def cached(text: str, *args: Any) -> Any:
            return kept(text, *args) if len(text) <= max_chars else func(text, *args)

        cached.cache_info = kept.cache_info  # type: ignore[attr-defined]
        cached.cache_clear = kept.cache_clear  # type: ignore[attr-defined]
        return cast(F, cached)

    return wrap


@text_cache(maxsize=4096)
def tokens(text: str) -> tuple[Token, ...]:
    """The tokens of a statement, with what each one carries."""
    expanded = normalise(text)
    if _BARE_CONTRACTIONS.search(expanded):  # chat: "dont", "im"
        expanded = _BARE_CONTRACTIONS.sub(_bare, expanded)
    if "'" in expanded or "cannot" in expanded.lower():  # "doesn't" -> "does not"
        plain = expanded.isascii()  # case folding is lower() (else every pattern runs)
        for pattern, repl, needle in _CONTRACTIONS:
            if not plain or needle in expanded.lower():
                expanded = pattern.sub(repl, expanded)
        expanded = expand_contractions(expanded)  # "I'm" -> "I am", "they've" -> "they have"
    raw: list[tuple[str, bool]] = []  # (token, starts a sentence)
    end = 0
    for match in _TOKEN.finditer(expanded):
        word = match.group(0)
        gap = expanded[end : match.start()]  # what stands between it and the last token
        start = not raw or (not gap.isspace() and not _SENTENCE_ENDS.isdisjoint(gap))
        if start and raw and gap.strip() == "." and raw[-1][0].lower() in _ABBREVIATIONS:
            start = False  # "Dr. Haas": a name after a title, not a new sentence
        end = match.end()
        if word.lower().endswith("'s") and len(word) > 2:  # possessive: "Ana's" -> Ana 's
            raw.append((word[:-2], start))
            raw.append(("'s", False))
            continue
        raw.append((word.strip("'"), start))
    out: list[Token] = []
    previous = ""
    # ALL CAPS: case tells nothing (ASCII: no lower-case letter is no letter upper() changes)
    if expanded.isascii():
        shouting = expanded.upper() == expanded
    else:
        shouting = not any(ch.islower() for ch in expanded)
    facts = _WORD_FACTS
    if len(facts) > _WORD_FACTS_MAX:
        facts.clear()
    for i, (word, sentence_start) in enumerate(raw):
        if not word:
            continue
        start = sentence_start or shouting
        known = facts.get((word, start))
        if known is None:
            known = facts[word, start] = _word_facts(word, start)
        lower, key, value, function, negation = known
        if lower == "am":  # "10 am", not "I am": the only word read with the one before
            value = _is_value(word, lower, previous, start)
            function = not value and lower in FUNCTION_WORDS
        out.append(Token(word, key, value, function, i, negation))
        previous = lower
    return tuple(out)


#: What :func:`tokens` reads of a word, by (word, starts a sentence or shouts).
_WORD_FACTS: dict[tuple[str, bool], tuple[str, str, bool, bool, bool]] = {}
_WORD_FACTS_MAX = 200_000
_SENTENCE_ENDS = frozenset(".!?:;")


def _word_facts(word: str, start: bool) -> tuple[str, str, bool, bool, bool]:
    """(lower-cased, key, value, function word, negation) of a word of :func:`tokens`
    (a value read without the word before it: :func:`tokens` reads "am" again)."""
    lower = word.lower()
    negation = lower in _NEGATION_WORDS
    value = negation or _is_value(word, lower, "", start)
    function = not value and lower in FUNCTION_WORDS
    base = stem(_IRREGULAR.get(lower, lower))
    key = _NUMBERS.get(lower) or _SYNONYM_KEYS.get(base) or base
    return lower, key, value, function, negation


# --- what a token carries --------------------------------------------------------------
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS = _words("""a an the this that these those it its is are was were be been being am
    'm 're 've 'd 'll 's do does did has have had having will would shall
    of to in on at for by from into onto as with and or so then than
    i me my mine you your yours he him his she her hers we us our ours they them
    their theirs who whom which what there here
    now also just really very quite please all every each any some per
    one's oneself up located situated""")
#: Titles written with a full stop: the name after them does not begin a sentence.
_ABBREVIATIONS = _words("dr mr mrs ms prof st jr sr mt no vs")
WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu "
    "thur thurs fri sat sun weekday weekdays weekend weekends mondays tuesdays "
    "wednesdays thursdays fridays saturdays sundays"
)
MONTHS = _words(
    "january february march april may june july august september october november "
    "december jan feb mar apr jun jul aug sep sept oct nov dec"
)
TIME_WORDS = _words(
    "am pm a.m p.m noon midnight morning mornings afternoon afternoons evening "
    "evenings night nights tonight today tomorrow yesterday daily weekly monthly "
    "yearly annually hourly spring summer autumn fall winter"
)
NUMBER_WORDS = _words(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty "
    "sixty seventy eighty ninety hundred thousand million billion dozen half twice "
    "thrice first second third fourth fifth sixth seventh eighth ninth tenth once "
    "single double triple none"
)
#: Number words read as their digits ("two children" = "2 children").
_NUMBER_WORDS_IN_ORDER = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
)
_NUMBERS = {
    w: str(n)
    for n, w in enumerate(
        _NUMBER_WORDS_IN_ORDER.split(" ")  # the ruff rule SIM905 wants no literal.split()
    )
}
#: Ordinal words read as their figures ("the first" = "the 1st").
_ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
)
_NUMBERS.update(
    (w, f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n if n < 4 else 0, 'th')}")
    for n, w in enumerate(_ORDINALS.split(" "), start=1)
)
#: Words that negate what they stand in ("no longer", "no more" begin with "no").
_NEGATION_WORDS = frozenset(NEGATION_WORDS) | {"stopped", "quit"}
#: Words that are values only when capitalised (a month, a weekday, a season).
_CAPITALISED_ONLY = _words("may march sun sat fall")
#: Words that begin sentences without being names ("Use ...", "Never ...").
_NOT_NAMES_AT_START = FUNCTION_WORDS | _words(
    "use always never do don't not no keep send reply prefer prefers default run "
    "format address call write make let meeting lunch dinner our"
)


def _is_value(word: str, lower: str, previous: str, sentence_start: bool) -> bool:
    if not word.isalpha():
        if any(ch.isdigit() for ch in word):  # numbers, versions, times, dates, ports, ids
            return True
        if any(ch in word for ch in "@/$€£¥%"):  # emails, paths, URLs, money
            return True
        if "." in word.strip("."):  # hosts and file names: db1.internal, dev.yaml
            return True
    if lower == "am":  # "10 am", not "I am"
        return previous[-1:].isdigit()
    if lower in _CAPITALISED_ONLY:  # "May", "March"; not "may", "march"
        return word[0].isupper()
    if lower in WEEKDAYS or lower in MONTHS or lower in TIME_WORDS or lower in NUMBER_WORDS:
        return True
    if word[0].isupper():  # a proper name, an acronym; a sentence's first word only
        # when it does not look like a common word
        return not sentence_start or (
            lower not in _NOT_NAMES_AT_START and not lower.endswith(("ing", "ed", "s"))
        )
    return False


_SUFFIXES = ("ingly", "ings", "ing", "edly", "ied", "ies", "ed", "es", "s", "ly")


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A light English stem: "merging" and "merge", "holidays" and "holiday", "reading"
    and "read" match (enough to match inflections; not a linguistic stemmer)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix in ("ied", "ies"):
                base += "y"
            elif suffix in ("ing", "ed", "ings") and len(base) > 3 and base[-1] == base[-2]:
                base = base[:-1]  # "running" -> "run"
            word = base
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


#: Irregular forms read as their base ("kept" is "keep").
_IRREGULAR = {
    "kept": "keep", "held": "hold", "sold": "sell", "bought": "buy", "paid": "pay",
    "sent": "send", "spent": "spend", "told": "tell", "made": "make", "took": "take",
    "taken": "take", "gave": "give", "given": "give", "wrote": "write", "written": "write",
    "ran": "run", "met": "meet", "went": "go", "gone": "go", "saw": "see", "seen": "see",
    "ate": "eat", "eaten": "eat", "flew": "fly", "flown": "fly", "drove": "drive",
    "driven": "drive", "built": "build", "taught": "teach", "brought": "bring",
    "thought": "think", "felt": "feel", "began": "begin", "begun": "begin", "won": "win",
}  # fmt: skip
#: Synonyms read as one word: the first of each group (:data:`.relations.SYNONYMS`).
_SYNONYM_KEYS = {stem(w): stem(group[0]) for group in SYNONYMS for w in group[1:]}


#: Currency words: a number before them is money.
_CURRENCY_WORDS = frozenset(stem(c) for c in ("euro", "dollar", "pound"))


def value_kind(changed: Sequence[Token]) -> str:
    """What kind of value changed: time, date, money, version, code, number,
    identifier, name."""
    for tok in changed:
        text, lower = tok.text, tok.text.lower()
        if (
            re.fullmatch(r"\d{1,2}[:.]\d{2}", text)
            or lower in ("am", "pm")
            or (lower in TIME_WORDS)
        ):
            return "time"
        if lower in WEEKDAYS or lower in MONTHS or re.fullmatch(r"\d{4}-\d\d(-\d\d)?", text):
            return "date"
        if any(ch in text for ch in "$€£¥") or tok.key in _CURRENCY_WORDS:
            return "money"
        if re.fullmatch(r"v?\d+(\.\d+){1,3}", lower):
            return "version"
        if any(ch in text for ch in "@/.") and any(ch.isalpha() for ch in text):
            return "identifier"
        if any(ch.isdigit() for ch in text) and any(ch.isalpha() for ch in text):
            return "code"  # a name with digits: WPA3, BA117, S3
        if any(ch.isdigit() for ch in text) or lower in NUMBER_WORDS:
            return "number"
        if any(ch in text for ch in "@/."):
            return "identifier"
    return "name"


# --- what two statements do not share ------------------------------------------------
def unmatched(added: frozenset[str], removed: frozenset[str]) -> tuple[set[str], set[str]]:
    """The added and removed content words left once words of one root are paired
    ("allergic" / "allergy", "fluently" / "fluent" are forms of one word)."""
    left_added, left_removed = set(added), set(removed)
    # Words of one root share their first five letters (:func:`_same_root`): each added
    # word is tried against the removed words of its prefix only, in the same order.
    by_prefix: dict[str, list[str]] = {}
    for y in sorted(removed):
        if len(y) >= 5:
            by_prefix.setdefault(y[:5], []).append(y)
    if not by_prefix:
        return left_added, left_removed
    for x in sorted(added):
        for y in by_prefix.get(x[:5], ()):
            if y in left_removed and _same_root(x, y):
                left_added.discard(x)
                left_removed.discard(y)
                break
    return left_added, left_removed


def _same_root(x: str, y: str) -> bool:
    n = 0
    for cx, cy in zip(x, y, strict=False):
        if cx != cy:
            break
        n += 1
    return n >= 5 and n >= min(len(x), len(y)) - 2


def marker_added(new: str, old: str, markers: Sequence[str]) -> str | None:
    """The first of ``markers`` (words or phrases) that ``new`` holds and ``old`` does not."""
    markers = tuple(markers)
    in_new = _markers_in(new, markers)
    if not in_new:
        return None
    in_old = _markers_in(old, markers)
    return next((m for m in markers if m in in_new and m not in in_old), None)


@text_cache(maxsize=8192)  # a stored text is read again for each new one it is compared with
def _markers_in(text: str, markers: tuple[str, ...]) -> frozenset[str]:
    """The ``markers`` that ``text`` holds as words (any case)."""
    lower = f" {text.lower()} "  # a marker not in it as a substring is not in it as a word
    return frozenset(m for m in markers if m in lower and _marker_pattern(m).search(lower))


@lru_cache(maxsize=512)
def _marker_pattern(marker: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w']){re.escape(marker)}(?![\w'])")
