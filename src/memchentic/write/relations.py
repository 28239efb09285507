"""What words say about a relation, declared once (issue 31, items 2, 4 and 5).

The write-time decision (:mod:`memchentic.write.statements`) reads these tables;
polarity (:mod:`memchentic.write.polarity`) reads the negation and stop cues.
docs/writes.md shows them as the decision table.

- :data:`MANY_VALUED`: relations that hold many values at once ("Sam speaks
  Greek" and "Sam speaks Italian" are both true): another value is another fact.
- :data:`SINGLE_VALUED`: relations with one value at a time ("lives in", "manager
  is", "runs on"): a new value replaces the old one.
- :data:`ADDITIVE_MARKERS`: "also", "too", "as well", "another", "in addition":
  the statement adds to what is known, it replaces nothing.
- :data:`UPDATE_MARKERS`: "now", "instead", "anymore": the statement replaces an
  earlier value.
- :data:`CHANGE_VERBS`: a change of state to a new value ("moved to",
  "switched to", "rescheduled").
- :data:`STOP_CUES`: a change to nothing ("quit", "gave up", "moved away from",
  "cancelled", "switched off", "no longer"): read as a negation of what stopped.
- :data:`NEGATION_WORDS`: plain negation ("not", "never", "no", ...).
- :data:`FILLERS`: discourse openers that say nothing ("Basically,", "Just so you
  know,"): left out when two statements are compared.
- :data:`CONTRACTIONS`: "I'm" is "I am", "they've" is "they have".
- :data:`SYNONYMS`: words that say the same ("likes" / "enjoys").

Words are listed as written; the decision matches them by their light stem.
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Verbs of relations that hold many values at once.
MANY_VALUED = _words("""use uses using used like likes love loves enjoy enjoys hate hates dislike
    dislikes speak speaks know knows visit visits visited play plays own owns read reads watch
    watches listen listens follow follows meet meets friend friends collect collects support
    supports deploy deploys integrate integrates accept accepts include includes offer
    offers sell sells serve serves ship ships fly flies donate donates invest invests grow grows
    monitor monitors treat treats see sees study studies teach teaches cook cooks eat
    eats drink drinks wear wears sponsor sponsors partner partners cover covers contain contains
    show shows allow allows hold holds attend attends take takes buy buys subscribe subscribes
    played available offered supported""")
#: Verbs of relations with one value at a time ("lives in", "prefers").
SINGLE_VALUED_VERBS = _words("""prefer prefers preferred default defaults reply replies respond
    answer format address call called named lives live living located based married cost costs""")
#: Attributes with one value at a time ("manager is", "port", "deadline").
SINGLE_VALUED_NOUNS = _words("""preference favourite favorite name language editor manager boss
    lead owner head port version deadline price rent salary age weight height timeout limit size
    capacity budget target dose dosage goal bedtime gate terminal tariff premium fee phone number
    email address""")
#: Words that make a relation hold one value at a time: a new value replaces the old.
SINGLE_VALUED = SINGLE_VALUED_VERBS | SINGLE_VALUED_NOUNS
#: Prepositions that make a verb hold one value: "works at", "studies at", "runs on".
SINGLE_VALUED_PREPOSITIONS = {
    "work": _words("at for"),
    "study": _words("at"),
    "run": _words("on"),
    "live": _words("in at"),
    "report": _words("to"),
    "host": _words("on with at"),
    "bank": _words("with"),
    "insure": _words("with"),
    "deploy": _words("on"),
    "drive": _words("a an"),
    "sleep": _words("at"),
    "commute": _words("by"),
}
#: Words that mark an addition to what is known.
ADDITIVE_MARKERS = ("also", "too", "as well", "another", "in addition", "additionally",
                    "besides", "as well as", "either")  # fmt: skip
#: Words that mark a replaced value.
UPDATE_MARKERS = ("now", "instead", "anymore", "any more", "nowadays", "currently",
                  "these days", "from now on", "going forward", "as of", "starting")  # fmt: skip
#: Past verbs that name a change of state to a new value.
CHANGE_VERBS = _words("""moved relocated switched changed migrated upgraded downgraded updated
    rescheduled renamed postponed shifted transferred promoted married joined extended bumped
    raised increased decreased reduced traded replaced swapped became
    converted""")
#: Phrases that name a stop: what follows them no longer holds ("quit smoking").
STOP_CUES = (
    "no longer", "no more", "stopped", "quit", "quits", "gave up", "given up",
    "give up", "dropped", "cancelled", "canceled", "discontinued", "abandoned", "resigned",
    "moved away from", "moved off", "migrated off", "migrated away from", "switched off",
    "switched away from", "turned off", "disabled", "phased out", "got rid of",
    "unsubscribed", "closed", "came off", "is off", "are off", "went off", "left",
    "broke up", "paid off", "retired from", "downgraded from", "opted out", "sold",
    "gave away", "given away", "traded in", "threw out", "thrown out", "am off", "been off",
    "taken off", "ended", "expired", "repaid", "decommissioned", "passed away", "died",
    "stepped down", "cashed out", "shut down", "used to", "lapsed", "lapse",
)  # fmt: skip
#: Plain negation words (a contraction "n't" is one too).
NEGATION_WORDS = ("not", "never", "no", "none", "nobody", "nothing", "neither", "nor",
                  "without", "cannot")  # fmt: skip
#: Every phrase that flips a statement's polarity, longest first.
NEGATION_CUES: tuple[str, ...] = tuple(
    sorted({*STOP_CUES, *NEGATION_WORDS}, key=lambda c: (-len(c.split()), c))
)
#: "left" is a stop only as a verb with an object ("left the band"), not "left knee".
_LEFT_AS_VERB = re.compile(
    r"(?<!\bthe )(?<!\bmy )(?<!\bher )(?<!\bhis )(?<!\bour )(?<!\btheir )(?<!\byour )"
    r"(?<!'s )(?<!\bturn )(?<!\bon the )\bleft\s+(?:the|my|his|her|our|their|your|its|a|an|[A-Z])",
    re.IGNORECASE,
)

#: Discourse openers that say nothing about the statement that follows.
FILLERS = (
    "basically", "just so you know", "so you know", "by the way", "btw", "fyi", "for your info",
    "for your information", "honestly", "to be honest", "note that", "please note that",
    "remember that", "keep in mind that", "quick note", "note", "well", "okay", "ok", "so",
    "to be clear", "for the record", "heads up", "as i said", "as mentioned", "as i mentioned",
    "just a reminder", "reminder", "just to confirm", "to confirm", "oh", "also note that",
    "in short", "anyway", "again", "oh and", "and", "um", "uh", "so yeah", "ok so",
    "just fyi", "also fyi", "actually",
)  # fmt: skip
_FILLER = re.compile(
    r"^\s*(?:" + "|".join(re.escape(f) for f in sorted(FILLERS, key=len, reverse=True))
    + r")\b\s*[,:;\-\u2013\u2014]?\s+",
    re.IGNORECASE,
)  # fmt: skip

#: Contractions beyond "n't": the long form of each.
CONTRACTIONS = (
    (r"\b(i)'m\b", r"\1 am"), (r"\b(you|we|they)'re\b", r"\1 are"),
    (r"\b(i|you|we|they|who|would|could|should|might|must)'ve\b", r"\1 have"),
    (r"\b(i|you|he|she|it|we|they|that|there|who)'ll\b", r"\1 will"),
    (r"\b(i|you|he|she|we|they)'d\b", r"\1 would"),
    (r"\b(it|he|she|that|there|what|who|where|here|how)'s\b", r"\1 is"),
    (r"\blet's\b", "let us"),
)  # fmt: skip
#: (pattern, replacement, a substring of every match, lower-cased: a pattern whose
#: needle an ASCII text lacks need not run).
_CONTRACTION_PATTERNS = tuple(
    (re.compile(p, re.IGNORECASE), r, needle)
    for (p, r), needle in zip(
        CONTRACTIONS, ("'m", "'re", "'ve", "'ll", "'d", "'s", "let's"), strict=True
    )
)

#: Groups of words that say the same in a statement.
SYNONYMS = (
    ("like", "enjoy"), ("answer", "reply", "respond"), ("begin", "start"), ("finish", "end"),
    ("big", "large"), ("small", "little"), ("buy", "purchase"), ("film", "movie"),
    ("holiday", "vacation"), ("sofa", "couch"), ("shop", "store"), ("quick", "fast"),
    ("mum", "mom"), ("doctor", "physician"), ("car", "automobile"),
)  # fmt: skip


#: A status is one value of an attribute of its own ("under review" -> "approved"):
#: these words, after a form of "be" or "get", are read as that value.
STATUS_WORDS = _words("""approved rejected declined pending review reviewed open opened
    closed resolved fixed broken done finished complete completed ongoing active inactive
    blocked unblocked shipped live merged draft published paid unpaid overdue delayed
    scheduled confirmed tentative cancelled canceled postponed archived deprecated stable
    beta alpha released launched started underway progress hold paused stalled submitted
    accepted sold available unavailable booked full empty ready installed working
    down up running stopped healthy sick better recovered granted dispatched processed
    processing shipped delivered waiting refunded expired renewed valid invalid passed failed
    clear approved""")
#: Predicates of liking and their opposites: the same attribute (how someone feels
#: about a thing), another value ("loves sushi" -> "hates sushi").
LIKING = _words("like likes liked love loves loved enjoy enjoys enjoyed adore adores fond")
DISLIKING = _words("""hate hates hated dislike dislikes disliked detest detests loathe loathes
    despise despises""")


#: Words of one kind that contrast rather than repeat: close in word vectors, never
#: synonyms ("older" / "younger", "left" / "right"): a pair within one group is no
#: synonym (:mod:`memchentic.write.align`). Comparatives, "un-"/"in-"/"dis-" forms and
#: compounds of one head ("upstairs" / "downstairs") are found by their form.
CONTRASTS = (
    _words("north south east west northern southern eastern western"),
    _words("left right up down upper lower front back top bottom inner outer inside outside"),
    _words("""brother sister mother father mum mom dad son daughter husband wife aunt uncle
        niece nephew boy girl man woman male female grandmother grandfather grandma grandpa
        boyfriend girlfriend"""),
    _words("old older oldest young younger youngest new newer newest"),
    _words("""fast slow quick quiet noisy loud hot cold warm cool cheap expensive early late
        easy hard difficult happy sad good bad better worse best worst light dark heavy big
        small large little long short tall high low full empty open closed rich poor strong
        weak wet dry clean dirty safe dangerous near far first last before after more less
        many few same different true false right wrong alive dead day night morning evening
        summer winter spring autumn"""),
    _words("black white red blue green yellow orange purple pink brown grey gray silver gold"),
    _words("cat dog rabbit horse bird fish hamster"),
    _words("tea coffee beer wine water milk juice"),
)


def strip_fillers(text: str) -> str:
    """``text`` without the discourse openers it begins with ("Basically, ...")."""
    while True:
        stripped = _FILLER.sub("", text, count=1)
        if stripped == text or not stripped.strip():
            return text
        text = stripped


def expand_contractions(text: str) -> str:
    """ "I'm" -> "I am", "they've" -> "they have" (``n't`` is expanded by the caller)."""
    if "'" not in text:
        return text
    plain = text.isascii()  # case folding is lower(): a pattern without its needle is skipped
    for pattern, repl, needle in _CONTRACTION_PATTERNS:
        if not plain or needle in text.lower():
            text = pattern.sub(repl, text)
    return text


def left_is_a_stop(text: str) -> re.Match[str] | None:
    """Where "left" in ``text`` is the verb of leaving something ("left the band"),
    if it is."""
    if text.isascii() and "left" not in text.lower():
        return None  # the pattern's lookbehinds cost about 60 us a text of 400 characters
    return _LEFT_AS_VERB.search(text)
