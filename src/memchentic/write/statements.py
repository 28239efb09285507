"""How a new statement relates to a stored one (docs/design.md, section 4, step 3; issue 21).

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

Before the words are compared, each text is read as grammar (:mod:`.grammar`,
:mod:`.summary`): asides, frames, hedges and interjections are left out; a question
or a text in another language is never a duplicate or an update of a statement.
Word orders that say the same are aligned and misspelt words and near synonyms
(word vectors) read as the stored word (:mod:`.align`); statuses and liking
(:mod:`.shapes`), stated changes, dated readings and a distinct statement's thread
(:mod:`.evidence`) are weighed beside the frame; a fact said in passing is judged
clause by clause.

Everything here is a pure function of the two texts and their cosine; the
resolver (:mod:`memchentic.write.resolve`) applies the decision.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from enum import StrEnum

from .align import orders, pair_words
from .evidence import marked_update, readings, reordered, thread
from .grammar import clauses, is_conditional, statement_count
from .key_value import key_value, slug
from .polarity import cue_spans
from .relations import (
    ADDITIVE_MARKERS,
    CHANGE_VERBS,
    MANY_VALUED,
    SINGLE_VALUED,
    SINGLE_VALUED_PREPOSITIONS,
    SINGLE_VALUED_VERBS,
    UPDATE_MARKERS,
)
from .shapes import status_or_liking
from .summary import Summary, summary
from .words import (
    Token,
    embedding_text,
    marker_added,
    memory_embedding_text,
    normalise,
    stem,
    text_cache,
    tokens,
    unmatched,
    value_kind,
)


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


def decisive_cosines(thresholds: Thresholds) -> tuple[float, ...]:
    """Every cosine at which :func:`judge` can decide otherwise on one side than on
    the other (the thresholds, and the cosine a stop with one more word needs)."""
    t = thresholds
    return (t.floor, t.near_duplicate, t.contradiction, _STOP_WITH_ONE_MORE_WORD)


__all__ = [
    "MANY_VALUED", "SINGLE_VALUED", "Judgement", "Relation", "Thresholds", "Token",
    "decisive_cosines", "embedding_text", "judge", "memory_embedding_text", "normalise", "relate",
    "stem", "tokens",
]  # fmt: skip


# --- predicates ------------------------------------------------------------------------
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _stems(words: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in words)


#: Words that make a relation hold one value at a time (:mod:`.relations`).
SINGLE_VALUED = _stems(SINGLE_VALUED)
#: Verbs of relations that hold many values at once (:mod:`.relations`).
MANY_VALUED = _stems(MANY_VALUED)
_VERBS = _stems(SINGLE_VALUED_VERBS) | MANY_VALUED
_SINGLE_PREPOSITIONS = {stem(v): p for v, p in SINGLE_VALUED_PREPOSITIONS.items()}
#: Verbs of a past event: two events with other values are both true.
_PAST_IRREGULAR = _words("""went saw met bought ate took made got gave found told wrote ran flew
    drove read sold sent spent won lost began heard left paid built caught taught brought thought
    felt kept held sang swam rode had did""")
#: Past verbs that name a change of state: the new value replaces the old one.
_CHANGE_VERBS = _stems(CHANGE_VERBS)
_BE = _words("is are was were be been being get gets got become became")
_COPULA = _words("is are was were")


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
class Judgement:
    """What a new statement is to a stored one, and the rule that said so: a stable,
    machine-readable name (``update:port``, ``negation:quit``, ``additive:also``,
    ``event:dated``, ``distinct:content-word``, ``duplicate:reordered``, ...;
    docs/writes.md lists them)."""

    relation: Relation
    rule: str
    #: For a distinct statement: how sure the rules are (0..1) that both state the same
    #: attribute of the same subject, so that the newer one is the current value though
    #: the evidence was not strong enough to supersede (0: another fact). Updates and
    #: contradictions are 1. The write keeps the link (a ``contradicts`` edge) and the
    #: read path resolves the thread: newest first, the older one marked earlier.
    thread: float = 0.0


def relate(new: str, old: str, cosine: float, thresholds: Thresholds) -> Relation:
    """What ``new`` is to ``old`` (stored), given their cosine (module docstring)."""
    return judge(new, old, cosine, thresholds).relation


def judge(new: str, old: str, cosine: float, thresholds: Thresholds) -> Judgement:
    """What ``new`` is to ``old`` (stored), given their cosine, and the rule that
    decided (module docstring; docs/writes.md)."""
    if cosine < thresholds.floor:  # not compared at all (the bulk check relies on it)
        return Judgement(Relation.DISTINCT, "distinct:far")
    if max(len(new), len(old)) > MAX_STATEMENT_CHARS:
        return _passages(new, old, cosine, thresholds)
    sa, sb = summary(new), summary(old)
    if sa.keys == sb.keys and sa.negated == sb.negated:
        if sa.filler or sb.filler:
            return Judgement(Relation.DUPLICATE, "duplicate:filler")
        return Judgement(Relation.DUPLICATE, "duplicate:exact")
    if not (sa.english and sb.english):  # the rules read English: another language adds
        return Judgement(Relation.DISTINCT, "distinct:language")
    if sa.question or sb.question:  # a question states nothing
        return Judgement(Relation.DISTINCT, "distinct:question")
    found = _decide(sa, sb, cosine, thresholds)
    if found.relation is Relation.DISTINCT and not found.rule.startswith(("additive", "event")):
        found = _in_passing(sa, sb, cosine, thresholds) or found
    if sa.hedged and found.relation in (Relation.UPDATE, Relation.CONTRADICTION):
        return Judgement(Relation.DISTINCT, "distinct:hedged", thread=_HEDGED_THREAD)
    if found.relation in (Relation.UPDATE, Relation.CONTRADICTION) and is_conditional(sa.text):
        return Judgement(Relation.DISTINCT, "distinct:conditional")  # "if it rains, ..."
    if found.relation in (Relation.UPDATE, Relation.CONTRADICTION) and statement_count(old) > 1:
        return Judgement(Relation.DISTINCT, f"thread:{found.rule}", thread=_SEVERAL_THREAD)
    if found.relation is Relation.DISTINCT:
        return Judgement(found.relation, found.rule, thread(sa, sb, found.rule, cosine))
    return found


def _decide(sa: Summary, sb: Summary, cosine: float, thresholds: Thresholds) -> Judgement:
    """The decision on the words of two statements of one clause each."""
    keyed = key_value(sa.text, sb.text)
    if keyed is not None:
        relation, rule = keyed
        marker = marker_added(sa.text, sb.text, ADDITIVE_MARKERS)
        if marker and relation == "update":  # "Skills: SQL." / "Skills: Tableau too."
            return Judgement(Relation.DISTINCT, f"additive:{marker.replace(' ', '-')}")
        return Judgement(Relation(relation), rule)
    if reordered(sa, sb):
        return Judgement(Relation.DUPLICATE, "duplicate:reordered")
    shape = status_or_liking(sa.tokens, sb.tokens, sa.negated, sb.negated)
    if shape is not None:
        return Judgement(Relation(shape[0]), shape[1])
    if sa.negated != sb.negated:  # a negation or a stop of the same statement, or another one
        return _negation(sa, sb, cosine, thresholds)
    marker = marker_added(sa.text, sb.text, ADDITIVE_MARKERS)
    if marker:
        return Judgement(Relation.DISTINCT, f"additive:{marker.replace(' ', '-')}")
    # a word is a value in both texts when it is one in either ("Paris" / "paris")
    value_keys = sa.values | sb.values
    values_a = [k for k in sa.keys if k in value_keys]
    values_b = [k for k in sb.keys if k in value_keys]
    content_a, content_b = sa.content - value_keys, sb.content - value_keys
    surface = {t.key: t.text for t in (*sa.tokens, *sb.tokens)}
    added, removed = unmatched(content_a - content_b, content_b - content_a)
    typos = pair_words(set(content_a - content_b), set(content_b - content_a), surface,
                       synonyms=False)  # fmt: skip
    if typos[2]:  # a misspelt word first: "plumbr" / "plumber" also share a root
        added, removed = set(typos[0]), set(typos[1])
    added, removed, paired, pairs = pair_words(added, removed, surface)
    paired, pairs = typos[2] or paired, {**typos[3], **pairs}
    if pairs:  # read a misspelt word or a near synonym as the stored word from here on
        sa = _rekeyed(sa, pairs)
    if values_a != values_b:  # an update keeps every content word of the stored one
        if readings(sa, sb):
            return Judgement(Relation.DISTINCT, "event:reading")
        if removed - _UNITS:
            return _marked(sa, sb) or Judgement(Relation.DISTINCT, "distinct:content-word")
        found = _update_or_distinct(sa, sb)
        if found.relation is Relation.DISTINCT and found.rule in _ORDER_MAY_TELL:
            for a in orders(sa.tokens):  # "On Thursdays the newsletter ..." / "Kwame is now ..."
                other = _update_or_distinct(replace(sa, tokens=a), sb)
                if other.relation is not Relation.DISTINCT or other.rule.startswith("event"):
                    return other
        return found if found.relation is not Relation.DISTINCT else (
            _marked(sa, sb) or found)  # fmt: skip
    if not added and not removed:  # function words, inflections, synonyms, order only
        if content_a == content_b:
            return Judgement(Relation.DUPLICATE, "duplicate:paraphrase")
        if paired:  # a misspelt word, or a near synonym by word vectors
            return Judgement(Relation.DUPLICATE, f"duplicate:{paired}")
        if cosine >= thresholds.near_duplicate:  # derived forms: "allergic" / "allergy"
            return Judgement(Relation.DUPLICATE, "duplicate:paraphrase")
        return Judgement(Relation.DISTINCT, "distinct:content-word")
    if len(added) <= 2 and len(removed) <= 2:
        single = _replaces_object(sa, sb)
        if single:
            return Judgement(Relation.UPDATE, single)
    marked = _marked(sa, sb)
    if marked is not None:
        return marked
    if added and not removed:
        return Judgement(Relation.DISTINCT, "distinct:more-detail")
    return Judgement(Relation.DISTINCT, "distinct:content-word")


#: Distinct rules that another word order of the new statement may overturn.
_ORDER_MAY_TELL = frozenset({"distinct:subject", "distinct:content-word", "distinct:attribute"})
#: How sure a hedged update is ("kwame runs the release now i think"): a thread.
_HEDGED_THREAD = 0.7
#: How sure an update of one statement of a stored memory that holds several is: it
#: does not hide the rest, so both stay, linked as a thread.
_SEVERAL_THREAD = 0.5


def _rekeyed(s: Summary, pairs: dict[str, str]) -> Summary:
    toks = tuple(t._replace(key=pairs.get(t.key, t.key)) for t in s.tokens)
    content = frozenset(pairs.get(k, k) for k in s.content)
    return replace(s, tokens=toks, keys=tuple(pairs.get(k, k) for k in s.keys), content=content)


def _marked(sa: Summary, sb: Summary) -> Judgement | None:
    rule = marked_update(sa, sb)
    return None if rule is None else Judgement(Relation.UPDATE, rule)


def _in_passing(sa: Summary, sb: Summary, cosine: float, t: Thresholds) -> Judgement | None:
    """A fact stated in passing: a clause of a longer message that updates, negates or
    repeats the stored statement (the rule says "in-passing")."""
    for clause in clauses(sa.text):
        part = summary(clause)
        if part.question or part.keys == sa.keys:
            continue
        if part.keys == sb.keys:
            return Judgement(Relation.DUPLICATE, "duplicate:in-passing")
        found = _decide(part, sb, cosine, t)
        if found.relation is not Relation.DISTINCT:
            return Judgement(found.relation, f"{found.rule}-in-passing")
    return None


# --- rule names -----------------------------------------------------------------------
_slug = slug


# --- negations and stops ---------------------------------------------------------------
@text_cache(maxsize=4096)
def _cues(text: str) -> tuple[tuple[int, int, str], ...]:
    """:func:`~memchentic.write.polarity.cue_spans`, once per text."""
    return tuple(cue_spans(text))


@text_cache(maxsize=4096)  # a stored text is read again for each new one it is compared with
def _rest(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
    """(what ``text`` says besides its negation cues and update markers, the same after
    its first cue only, before it, the values of it): keys of content words and values."""
    spans = _cues(text)
    blanked = list(text)
    for start, end, _ in spans:
        blanked[start:end] = " " * (end - start)
    plain = "".join(blanked)
    after = plain[spans[0][1] :] if spans else ""
    before = plain[: spans[0][0]] if spans else plain

    def keys(part: str) -> frozenset[str]:
        return frozenset(
            t.key for t in tokens(part) if not t.function and t.key not in _REST_MARKERS
        )

    values = frozenset(t.key for t in tokens(plain) if t.value and not t.negation)
    return keys(plain), keys(after), keys(before), values


#: Update markers of one word, left out of what a negation says (:func:`_rest`).
_REST_MARKERS = frozenset(stem(m) for m in UPDATE_MARKERS if " " not in m) | {"more", "longer"}


def _negation(sa: Summary, sb: Summary, cosine: float, t: Thresholds) -> Judgement:
    """Opposite polarity: the new statement negates or stops the stored one when it
    says nothing else (what follows its cue is what the stored one says; at most one
    other word, and then only close in meaning), or the stored one was the negation
    and the new one says the same without it."""
    negated, positive = (sa, sb) if sa.negated else (sb, sa)
    spans = _cues(negated.text)
    cue = spans[0][2] if spans else "not"
    rule = f"negation:{_slug(cue)}"
    n_all, n_after, n_subject, n_values = _rest(negated.text)
    p_all, _, _, p_values = _rest(positive.text)
    if not n_values <= p_values or not n_all & p_all or not n_subject <= p_all:
        # a new value, nothing shared, or another subject ("Lucas left the bank" does
        # not stop "The bank opens at 9"; a pronoun subject is no word here)
        return Judgement(Relation.DISTINCT, "distinct:negation-of-other")
    pronouns = _pronouns(negated.text[: spans[0][0]] if spans else "")
    if pronouns and not pronouns & _pronouns(positive.text) and len(n_all & p_all) < 2:
        # "I left Berlin" does not stop "Berlin is the capital": a pronoun subject the
        # stored statement does not share needs two shared words
        return Judgement(Relation.DISTINCT, "distinct:negation-of-other")
    extra = n_all - p_all
    if sa.negated:  # a stop or a negation of what was stored
        said = n_after or n_all
        if not extra and (n_after or len(n_all) >= 2 or cosine >= t.contradiction):
            return Judgement(Relation.CONTRADICTION, rule)
        if len(extra) == 1 and said & p_all and cosine >= _STOP_WITH_ONE_MORE_WORD:
            return Judgement(Relation.CONTRADICTION, rule)
        return Judgement(Relation.DISTINCT, "distinct:negation-of-other")
    # the stored statement was the negation: the new one restores what it negated
    if n_values == p_values and (
        n_all == p_all or (cosine >= t.contradiction and len(extra | (p_all - n_all)) <= 1)
    ):
        return Judgement(Relation.CONTRADICTION, rule)
    return Judgement(Relation.DISTINCT, "distinct:negation-of-other")


def _pronouns(text: str) -> frozenset[str]:
    return frozenset(t.text.lower() for t in tokens(text)) & _SUBJECT_PRONOUNS


#: A stop that names one word the stored statement did not ("We closed our account
#: with Barclays" after "We bank with Barclays") supersedes from this cosine.
_STOP_WITH_ONE_MORE_WORD = 0.7


#: Longer texts are passages, not statements: a duplicate when their words are the
#: same, or their numbers are and the cosine is over NEAR_DUP_THRESHOLD; else distinct.
MAX_STATEMENT_CHARS = 2000
_WORDS = re.compile(r"\w+")


def _passages(new: str, old: str, cosine: float, thresholds: Thresholds) -> Judgement:
    (a, numbers_a), (b, numbers_b) = _passage_words(new), _passage_words(old)
    if a == b:
        return Judgement(Relation.DUPLICATE, "duplicate:exact")
    if numbers_a == numbers_b and cosine >= thresholds.near_duplicate:
        return Judgement(Relation.DUPLICATE, "duplicate:passage")
    return Judgement(Relation.DISTINCT, "distinct:passage")


@text_cache(maxsize=256, max_chars=16000)
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


# --- updates ---------------------------------------------------------------------------
#: Units that belong to the number before them ("30 minutes" / "1 hour").
_UNITS = _stems(
    _words("""second seconds minute minutes min mins hour hours day days week weeks
    month months year years ms s m h kg g mg km m cm mm mb gb tb kb percent euro euros dollar
    dollars pound pounds usd eur gbp k times people""")
)


def _update_or_distinct(sa: Summary, sb: Summary) -> Judgement:
    """Values differ: an update when the same attribute of the same subject gets a new
    value and the relation holds one value at a time (docs/writes.md)."""
    a, b = sa.tokens, sb.tokens
    frame, old_changed, new_changed = _frame(a, b)
    if _value_first(a, old_changed, new_changed):
        return Judgement(Relation.UPDATE, f"update:{value_kind(old_changed)}")
    first_change = new_changed[0] if new_changed else None
    if not frame or not _holds_predicate(a, first_change):
        return Judgement(Relation.DISTINCT, "distinct:subject")
    if not all(t.value or t.key in _UNITS for t in old_changed if not t.negation):
        return Judgement(Relation.DISTINCT, "distinct:attribute")
    changed_to = marker_added(sa.text, sb.text, UPDATE_MARKERS)
    change_verb = any(t.key in _CHANGE_VERBS for t in (*frame, *new_changed))
    before = [t for t in a if first_change is not None and t.position < first_change.position]
    if _is_event(before, a) and not change_verb and not changed_to:
        dated = any(value_kind([t]) in ("date", "time") for t in (*a, *b) if t.value)
        return Judgement(Relation.DISTINCT, "event:dated" if dated else "event:past")
    if changed_to:
        return Judgement(Relation.UPDATE, f"update:{_slug(changed_to)}")
    if not old_changed:  # a value added, none replaced: a refinement of one value only
        if _single_valued(frame, before):  # "lives in Paris" / "... Paris, Texas"
            return Judgement(Relation.UPDATE, f"update:{_attribute(frame) or 'single-valued'}")
        return Judgement(Relation.DISTINCT, "distinct:more-detail")
    if not any(t.value for t in new_changed):  # a value dropped, none given instead
        return Judgement(Relation.DISTINCT, "distinct:content-word")
    if change_verb:  # "moved to Monday"
        return Judgement(Relation.UPDATE, "update:changed")
    names_only = all(
        value_kind([t]) in ("name", "code") for t in (*old_changed, *new_changed) if t.value
    )
    attribute = _attribute(frame)
    if not names_only:  # a number, a time, a date, a version, an identifier
        return Judgement(Relation.UPDATE, f"update:{attribute or value_kind(old_changed)}")
    if _single_valued(frame, before):
        return Judgement(Relation.UPDATE, f"update:{attribute or 'single-valued'}")
    if any(t.key in MANY_VALUED for t in frame):
        return Judgement(Relation.DISTINCT, "additive:many-valued")
    if any(t.text.lower() in _COPULA for t in before):  # "The project lead is Maria"
        return Judgement(Relation.UPDATE, f"update:{attribute or 'single-valued'}")
    return Judgement(Relation.DISTINCT, "additive:many-valued")


def _single_valued(frame: Sequence[Token], before: Sequence[Token]) -> bool:
    """Whether the frame names a relation of one value: a word of :data:`SINGLE_VALUED`
    ("favourite", "manager", "lives"), a verb with its one-value preposition ("works
    at", "runs on"), or a sentence that is an instruction ("Use ...")."""
    if any(t.key in SINGLE_VALUED for t in frame):
        return True
    for i, tok in enumerate(before[:-1]):  # "works at", "hosts the wiki on"
        prepositions = _SINGLE_PREPOSITIONS.get(tok.key, ())
        if prepositions and any(t.text.lower() in prepositions for t in before[i + 1 :]):
            return True
    return _imperative(before)


def _imperative(toks: Sequence[Token]) -> bool:
    """An instruction: the statement begins with a verb in its base form ("Use tabs")."""
    if not toks:
        return False
    first = toks[0]
    lower = first.text.lower()
    return lower in _INSTRUCTIONS and first.position == 0


#: Instructions that choose one option ("Use tabs" / "Use spaces", "Reply in French" /
#: "... Spanish"); others add ("Run the linter" / "Run the tests", "Keep ... thin").
_INSTRUCTIONS = _words("use reply answer respond format address call default prefer set")


def _attribute(frame: Sequence[Token]) -> str | None:
    """The attribute a frame names, if one of :data:`SINGLE_VALUED` ("port", "manager")."""
    for tok in reversed(frame):
        if not tok.value and tok.key in SINGLE_VALUED:
            return _slug(tok.text)
    return None


#: Words after a value that make it the subject of a statement of one value
#: ("Node 20 is what the build uses", "Python 3.12 is the version on the runners").
_DEFINITE = _words("what the our my their his her its your")


def _value_first(a: Sequence[Token], old_changed: Sequence[Token],
                 new_changed: Sequence[Token]) -> bool:  # fmt: skip
    """The value comes first: only values before the change, the change values only,
    and then "is what" / "is the" (a statement of what holds the one value)."""
    if not old_changed or not new_changed or not all(t.value for t in (*old_changed, *new_changed)):
        return False
    last = max(t.position for t in new_changed)
    if any(not t.value for t in a if t.position < min(t.position for t in new_changed)):
        return False
    after = [t for t in a if t.position > last]
    return (
        len(after) >= 2 and after[0].text.lower() in _COPULA
        and after[1].text.lower() in _DEFINITE
    )  # fmt: skip


_DETERMINERS = _words("a an the this that these those my our your his her their its")
_SUBJECT_PRONOUNS = _words("i you he she we they it")


def _holds_predicate(a: Sequence[Token], first_change: Token | None) -> bool:
    """Whether the words of ``a`` before its first changed word hold a subject and a
    predicate: at least two words besides determiners and possessive 's, one of them
    a verb or a preposition ("Flight BA117 ..." / "Flight BA119 ...", "item 3 of list
    2" / "item 4 of list 2" differ in their subject: nothing but a noun comes before)."""
    if first_change is None:
        return False
    before = [t for t in a if t.position < first_change.position and t.text.lower() != "'s"]
    if first_change.text.lower() in _BE or first_change.key in _CHANGE_VERBS:
        before.append(first_change)  # "The appointment got moved to ...", "... was moved to"
    if sum(1 for t in before if t.text.lower() not in _DETERMINERS) < 2:
        return False
    return any(_predicate_word(t, i, before) for i, t in enumerate(before))


#: Words that carry a predicate: forms of be, have and do, modals, prepositions.
_PREDICATE_WORDS = _words("""is are was were be been am has have had do does did will would
    shall should can could may might must in on at for to from with by as of into onto
    via per than over under above below""")


def _predicate_word(tok: Token, index: int, before: Sequence[Token]) -> bool:
    """A verb or a preposition, as far as words tell without a parser: a listed word,
    a word of a relation table, the word after a subject pronoun, or a word after the
    first ending like a verb ("Sam weighs ...", "The SDK requires ...", "Dan moved ...")."""
    lower = tok.text.lower()
    if lower in _PREDICATE_WORDS or lower in _BE or tok.key in _CHANGE_VERBS:
        return True
    if tok.key in _VERBS:
        return True
    if index > 0 and before[index - 1].text.lower() in _SUBJECT_PRONOUNS and not tok.value:
        return True
    return index > 0 and not tok.value and lower.endswith(("s", "ed"))


def _replaces_object(sa: Summary, sb: Summary) -> str | None:
    """One object replaced by another after a relation of one value ("Prefers tea in
    the morning" -> "Prefers coffee in the morning", "Use tabs" -> "Use spaces"), or
    with "now" / "instead"; the rule, or None."""
    a, b = sa.tokens, sb.tokens
    frame, old_changed, new_changed = _frame(a, b)
    if not old_changed or not new_changed or len(old_changed) > 2 or len(new_changed) > 2:
        return None
    if not (_contiguous(old_changed) and _contiguous(new_changed)):
        return None
    first, last = old_changed[0].position, old_changed[-1].position
    if any(first < t.position < last and t.text.lower() in _COPULA for t in b):
        return None  # "favourite sport is tennis" / "favourite food is ramen": another slot
    changed_to = marker_added(sa.text, sb.text, UPDATE_MARKERS)
    if changed_to:
        return f"update:{_slug(changed_to)}"
    before = [t for t in a if t.position < new_changed[0].position]
    if frame and _single_valued(frame, before):
        return f"update:{_attribute(frame) or 'single-valued'}"
    return None


def _contiguous(toks: Sequence[Token]) -> bool:
    positions = [t.position for t in toks]
    return max(positions) - min(positions) <= len(positions)
