"""How a new statement relates to a stored one (DESIGN section 4, step 3; issue 21).

Cosine similarity says two texts are about the same thing; it cannot say whether
they say the same thing. "The API listens on port 8000" and "... port 9000" are
0.98 similar under MiniLM and say different things; "Bob is allergic to cats" and
"Bob has an allergy to cats" are less similar and say the same. So the decision
reads the words that differ:

- **Values decide.** Numbers, versions, dates and times, weekdays and months,
  quantities and money, identifiers (ports, hosts, paths, emails, URLs), proper
  names and negation are *values*. Two statements whose values differ are never
  duplicates.
- **Duplicate**: the same words up to whitespace, case, punctuation, Unicode form
  and zero-width characters; or the same values and the same content words up to
  function words and word order; or, when content words were swapped (a
  paraphrase) but no value differs, a cosine at or above the near-duplicate
  threshold. A statement that *adds* content words says more and is not a
  duplicate of the shorter one.
- **Update**: the same frame (what comes before the first difference holds a
  shared content word or value: the subject and the predicate), the old
  statement's content words all kept, and its values changed ("... port 8000" ->
  "... port 9000", "Alice lives in Paris" -> "... Rome"); or, after a predicate
  that holds one value at a time (prefers, favourite, use, default, reply in,
  ...), one object replaced by another ("Prefers tea" -> "Prefers coffee"). A
  past event does not update another ("visited Rome" / "visited Lisbon" are both
  true), unless its verb names a change (moved, switched, ...).
- **Contradiction**: opposite polarity, the same values, and either the same
  content words (besides the negation) or a cosine at or above the contradiction
  threshold.
- Anything else is a **distinct** statement: both are kept.

Everything here is a pure function of the two texts and their cosine; the
resolver (:mod:`memchentic.write.resolve`) applies the decision.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum
from functools import lru_cache

from .polarity import negation_cues


class Relation(StrEnum):
    """What a new statement is to a stored one."""

    DUPLICATE = "duplicate"
    UPDATE = "update"
    CONTRADICTION = "contradiction"
    DISTINCT = "distinct"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The cosines the decision uses (settings, or the embedder's calibration)."""

    #: A paraphrase (content words swapped, the same values) is a duplicate from here.
    near_duplicate: float
    #: Opposite polarity with other content words supersedes from here.
    contradiction: float
    #: Below this a neighbour is not compared at all.
    floor: float


# --- normalisation and tokens ----------------------------------------------------------
#: Characters dropped before comparing: zero-width and other format characters (Cf).
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_CONTRACTIONS = tuple(
    (re.compile(pattern, re.IGNORECASE), repl)
    for pattern, repl in (
        (r"\bcan't\b", "can not"), (r"\bwon't\b", "will not"), (r"\bshan't\b", "shall not"),
        (r"\b(\w+)n't\b", r"\1 not"), (r"\bcannot\b", "can not"),
    )
)  # fmt: skip
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


@dataclass(frozen=True, slots=True)
class Token:
    text: str  # as written (normalised), for proper-name detection
    key: str  # lower-cased stem, what tokens are matched by
    value: bool  # carries a value (module docstring)
    function: bool  # a function word: differences in these never matter
    position: int
    negation: bool = False  # a negation cue ("not", "never", "no", ...)


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[Token, ...]:
    """The tokens of a statement, with what each one carries."""
    expanded = normalise(text)
    if "'" in expanded or "cannot" in expanded.lower():  # "doesn't" -> "does not"
        for pattern, repl in _CONTRACTIONS:
            expanded = pattern.sub(repl, expanded)
    raw: list[tuple[str, bool]] = []  # (token, starts a sentence)
    end = 0
    for match in _TOKEN.finditer(expanded):
        word = match.group(0)
        gap = expanded[end : match.start()]  # what stands between it and the last token
        start = not raw or (not gap.isspace() and any(ch in ".!?:;" for ch in gap))
        end = match.end()
        if word.lower().endswith("'s") and len(word) > 2:  # possessive: "Ana's" -> Ana 's
            raw.append((word[:-2], start))
            raw.append(("'s", False))
            continue
        raw.append((word.strip("'"), start))
    out: list[Token] = []
    previous = ""
    shouting = not any(ch.islower() for ch in expanded)  # ALL CAPS: case tells nothing
    for i, (word, sentence_start) in enumerate(raw):
        if not word:
            continue
        lower = word.lower()
        negation = lower in _NEGATION_WORDS
        value = negation or _is_value(word, lower, previous, sentence_start or shouting)
        function = not value and lower in FUNCTION_WORDS
        key = _NUMBERS.get(lower) or stem(lower)
        out.append(Token(word, key, value, function, i, negation))
        previous = lower
    return tuple(out)


# --- what a token carries --------------------------------------------------------------
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS = _words("""a an the this that these those it its is are was were be been being am
    'm 're 've 'd 'll 's do does did has have had having will would shall
    of to in on at for by from into onto as with and or so then than
    i me my mine you your yours he him his she her hers we us our ours they them
    their theirs who whom which what there here
    now also just really very quite please all every each any some per
    one's oneself up""")
_WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu "
    "thur thurs fri sat sun weekday weekdays weekend weekends mondays tuesdays "
    "wednesdays thursdays fridays saturdays sundays"
)
_MONTHS = _words(
    "january february march april may june july august september october november "
    "december jan feb mar apr jun jul aug sep sept oct nov dec"
)
_TIME_WORDS = _words(
    "am pm a.m p.m noon midnight morning mornings afternoon afternoons evening "
    "evenings night nights tonight today tomorrow yesterday daily weekly monthly "
    "yearly annually hourly spring summer autumn fall winter"
)
_NUMBER_WORDS = _words(
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
#: Words that negate what they stand in ("no longer", "no more" begin with "no").
_NEGATION_WORDS = _words("not never no none nobody nothing neither nor without cannot stopped quit")
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
    if lower in _WEEKDAYS or lower in _MONTHS or lower in _TIME_WORDS or lower in _NUMBER_WORDS:
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


# --- predicates ------------------------------------------------------------------------
#: Predicates that hold one value at a time: a new object after them replaces the old
#: one even when the object is a common noun ("Prefers tea" -> "Prefers coffee").
SINGLE_VALUED = frozenset(
    stem(w)
    for w in _words("""prefer prefers preferred preference favourite favorite default defaults use
    uses using reply replies respond answer format address call named name language
    editor switch switched set lives live living located based""")
)
#: Predicates that hold many values at once: another name after them is another
#: fact, not a new value ("Speaks German" / "Speaks French").
MANY_VALUED = frozenset(
    stem(w)
    for w in _words("""like likes love loves enjoy enjoys hate hates dislike dislikes speak speaks
    know knows visit visits play plays own owns read reads watch watches listen listens
    follow follows meet meets friend friends collect collects support supports""")
)
#: Verbs of a past event: two events with other values are both true.
_PAST_IRREGULAR = _words("""went saw met bought ate took made got gave found told wrote ran flew
    drove read sold sent spent won lost began heard left paid built caught taught brought thought
    felt kept held sang swam rode""")
#: Past verbs that name a change of state: the new value replaces the old one.
_CHANGE_VERBS = frozenset(
    stem(w)
    for w in _words("""moved relocated switched changed migrated upgraded downgraded updated
    rescheduled renamed postponed shifted transferred promoted married joined""")
)
_BE = _words("is are was were be been being get gets got become became")


def _is_event(frame: Sequence[Token], whole: Sequence[Token]) -> bool:
    """Whether the shared frame's verb tells of a past event ("visited", "went");
    ``whole`` is the statement the frame was taken from."""
    for tok in frame:
        lower = tok.text.lower()
        past = lower in _PAST_IRREGULAR or (lower.endswith("ed") and len(lower) > 4)
        if not past or tok.value or tok.key in _CHANGE_VERBS or tok.key in SINGLE_VALUED:
            continue
        before = [t for t in whole if t.position < tok.position]
        if before and before[-1].text.lower() in _BE:  # "is scheduled": a state
            continue
        return True
    return False


# --- the decision ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Summary:
    """What :func:`relate` reads of one text, worked out once per text."""

    tokens: tuple[Token, ...]
    keys: tuple[str, ...]
    values: frozenset[str]  # keys of values, negation aside
    content: frozenset[str]  # keys of the other words, function words aside
    negated: bool


@lru_cache(maxsize=4096)
def _summary(text: str) -> _Summary:
    toks = tokens(text)
    return _Summary(
        toks,
        tuple(t.key for t in toks),
        frozenset(t.key for t in toks if t.value and not t.negation),
        frozenset(t.key for t in toks if not t.value and not t.function),
        negation_cues(normalise(text)) % 2 == 1,
    )


def relate(new: str, old: str, cosine: float, thresholds: Thresholds) -> Relation:
    """What ``new`` is to ``old`` (stored), given their cosine (module docstring)."""
    if cosine < thresholds.floor:  # not compared at all (the bulk check relies on it)
        return Relation.DISTINCT
    if max(len(new), len(old)) > MAX_STATEMENT_CHARS:
        return _passages(new, old, cosine, thresholds)
    sa, sb = _summary(new), _summary(old)
    if sa.keys == sb.keys:
        return Relation.DUPLICATE
    a, b = sa.tokens, sb.tokens
    # a word is a value in both texts when it is one in either ("Paris" / "paris")
    value_keys = sa.values | sb.values
    values_a = [k for k in sa.keys if k in value_keys]
    values_b = [k for k in sb.keys if k in value_keys]
    content_a, content_b = sa.content - value_keys, sb.content - value_keys
    if sa.negated != sb.negated:  # a negation of the same statement, or another one
        if values_a != values_b:
            return Relation.DISTINCT
        same_words = content_a == content_b or _only_negation_verbs(content_a ^ content_b)
        if same_words or cosine >= thresholds.contradiction:
            return Relation.CONTRADICTION
        return Relation.DISTINCT
    added, removed = content_a - content_b, content_b - content_a
    if values_a != values_b:  # an update keeps every content word of the stored one
        return _update_or_distinct(a, b) if not removed else Relation.DISTINCT
    if not added and not removed:  # function words and order only
        return Relation.DUPLICATE
    if len(added) <= 2 and len(removed) <= 2 and _replaces_object(a, b):
        if cosine >= thresholds.near_duplicate and not _subject_differs(a, b):
            return Relation.DUPLICATE
        return Relation.UPDATE
    if added and not removed:  # says more than the stored one: new unless nearly the same
        extension = (1.0 + thresholds.near_duplicate) / 2
        return Relation.DUPLICATE if cosine >= extension else Relation.DISTINCT
    if cosine >= thresholds.near_duplicate and not _subject_differs(a, b):
        return Relation.DUPLICATE
    return Relation.DISTINCT


#: Verbs that only carry a negation ("quit smoking" is "not smoking").
_NEGATION_VERBS = frozenset(stem(w) for w in _words("quit stopped stop gave give up longer more"))


def _only_negation_verbs(keys: frozenset[str]) -> bool:
    return keys <= _NEGATION_VERBS


#: Longer texts are passages, not statements: a duplicate when their words are the
#: same, or their numbers are and the cosine is over NEAR_DUP_THRESHOLD; else distinct.
MAX_STATEMENT_CHARS = 2000
_WORDS = re.compile(r"\w+")


def _passages(new: str, old: str, cosine: float, thresholds: Thresholds) -> Relation:
    (a, numbers_a), (b, numbers_b) = _passage_words(new), _passage_words(old)
    if a == b:
        return Relation.DUPLICATE
    if numbers_a == numbers_b and cosine >= thresholds.near_duplicate:
        return Relation.DUPLICATE
    return Relation.DISTINCT


@lru_cache(maxsize=256)
def _passage_words(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    words = tuple(_WORDS.findall(normalise(text).lower()))
    return words, tuple(w for w in words if not w.isalpha() and any(c.isdigit() for c in w))


#: Longest statement (in words besides function words) whose words are aligned: a
#: longer text is a passage, not one statement; it is a duplicate or distinct only.
MAX_ALIGNED_WORDS = 256


def _frame(a: Sequence[Token], b: Sequence[Token]) -> tuple[list[Token], list[Token], list[Token]]:
    """(shared frame before the first difference, old tokens changed, new tokens
    changed), function words left out; nothing for texts past ``MAX_ALIGNED_WORDS``."""
    sa = [t for t in a if not t.function]
    sb = [t for t in b if not t.function]
    if max(len(sa), len(sb)) > MAX_ALIGNED_WORDS:
        return [], [], []
    ops = SequenceMatcher(None, [t.key for t in sb], [t.key for t in sa], autojunk=False)
    frame: list[Token] = []
    old_changed: list[Token] = []
    new_changed: list[Token] = []
    seen_difference = False
    for tag, i1, i2, j1, j2 in ops.get_opcodes():
        if tag == "equal":
            if not seen_difference:
                frame.extend(sa[j1:j2])
            continue
        seen_difference = True
        old_changed.extend(sb[i1:i2])
        new_changed.extend(sa[j1:j2])
    return frame, old_changed, new_changed


def _update_or_distinct(a: Sequence[Token], b: Sequence[Token]) -> Relation:
    """Values differ: an update when a subject and predicate are shared before the
    first difference, the stored statement's content words are all kept, and it is
    neither a past event nor a predicate of many values ("likes", "speaks")."""
    frame, old_changed, new_changed = _frame(a, b)
    first_change = new_changed[0] if new_changed else None
    if not frame or not _holds_predicate(a, first_change) or _is_event(frame, a):
        return Relation.DISTINCT
    if not all(t.value for t in old_changed if not t.negation):
        return Relation.DISTINCT
    names_only = all(t.text.isalpha() for t in (*old_changed, *new_changed))
    if names_only and any(t.key in MANY_VALUED for t in frame):
        return Relation.DISTINCT  # "likes Paris" and "likes Rome" are both true
    return Relation.UPDATE


_DETERMINERS = _words("a an the this that these those my our your his her their its")


def _holds_predicate(a: Sequence[Token], first_change: Token | None) -> bool:
    """Whether the words of ``a`` before its first changed word hold a subject and a
    predicate: at least two words besides determiners, one of them a verb or a
    preposition ("Flight BA117 ..." / "Flight BA119 ...", "item 3 of list 2" / "item
    4 of list 2" differ in their subject: nothing but a noun comes before)."""
    if first_change is None:
        return False
    before = [t for t in a if t.position < first_change.position]
    if sum(1 for t in before if t.text.lower() not in _DETERMINERS) < 2:
        return False
    return any(_predicate_word(t, i) for i, t in enumerate(before))


#: Words that carry a predicate: forms of be, have and do, modals, prepositions.
_PREDICATE_WORDS = _words("""is are was were be been am has have had do does did will would
    shall should can could may might must in on at for to from with by as of into onto
    via per than over under above below""")


def _predicate_word(tok: Token, index: int) -> bool:
    """A verb or a preposition, as far as words tell without a parser: a listed word,
    a predicate that holds one value, or a word after the first ending like a verb
    ("Sam weighs ...", "The SDK requires ...", "Dan moved ...")."""
    lower = tok.text.lower()
    if lower in _PREDICATE_WORDS or tok.key in SINGLE_VALUED or tok.key in _CHANGE_VERBS:
        return True
    return index > 0 and not tok.value and lower.endswith(("s", "ed"))


def _replaces_object(a: Sequence[Token], b: Sequence[Token]) -> bool:
    """One object replaced by another after a single-valued predicate in the frame
    ("Prefers tea in the morning" -> "Prefers coffee in the morning")."""
    frame, old_changed, new_changed = _frame(a, b)
    if not old_changed or not new_changed or len(old_changed) > 2 or len(new_changed) > 2:
        return False
    if not any(t.key in SINGLE_VALUED for t in frame):
        return False
    # one contiguous replacement: the changed tokens sit next to each other
    return _contiguous(old_changed) and _contiguous(new_changed)


def _contiguous(toks: Sequence[Token]) -> bool:
    positions = [t.position for t in toks]
    return max(positions) - min(positions) <= len(positions)


def _subject_differs(a: Sequence[Token], b: Sequence[Token]) -> bool:
    """Whether the statements open with different words that the other one does not
    hold: different subjects ("The frontend ..." / "The backend ..."), not the same
    words in another order ("The manager keeps the key" / "The key is kept by ...")."""
    first_a = next((t.key for t in a if not t.function), None)
    first_b = next((t.key for t in b if not t.function), None)
    if first_a == first_b:
        return False
    return all(t.key != first_a for t in b) and all(t.key != first_b for t in a)
