"""What the write rules read of a sentence's grammar before comparing it
(docs/design.md, section 4).

People who never read the rules write to an assistant the way they talk: an aside
before the fact ("quick update,", "good news:", "um, so,"), a polite frame around
it ("please remember that", "I wanted to let you know that", "you should"), a
hedge ("i think", "probably"), a question, or another language. These are read as
grammar, not as a list of sentences:

- :func:`discourse_core`: the statement without its leading asides, frames and
  interjections (a short leading clause ending in ":" or "," that carries no value,
  no verb of its own and no preposition that would make it an adverbial), its
  trailing tags ("lol", "!!") and its hedges; and whether it was hedged.
- :func:`is_question`: a "?" at the end, or an inverted auxiliary or a wh-word and
  an auxiliary at the start ("Does Maya ...", "where is ...").
- :func:`is_english`: whether the rules can read it at all: enough of its words
  are ASCII letters and some are English function words.
- :func:`clauses`: the clauses of a longer message, for a fact stated in passing.
"""

from __future__ import annotations

import re

from .relations import FILLERS
from .words import text_cache, tokens

__all__ = [
    "clauses", "discourse_core", "ended_state", "is_conditional", "is_english", "is_question",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Auxiliaries that open a yes/no question when inverted ("Does Maya like ...?").
_AUXILIARIES = _words("""do does did is are was were am can could will would shall should
    has have had may might must""")
_WH = _words("who whom whose what when where why how which")
#: Words that can follow an inverted auxiliary as its subject.
_SUBJECTS = _words("""i you he she it we they there the a an my your his her our their this
    that these those anyone someone anybody somebody everyone""")
_PRONOUNS = _words("i you he she it we they")
#: Leading words that make a short leading clause an adverbial the statement needs
#: ("On Sundays, ...", "After the meeting, ..."), not an aside.
_ADVERBIAL_STARTS = _words("""on in at after before when while if unless since until till
    during for from by every each as once whenever because although though with without
    to of per between within across""")
_DETERMINERS = _words("""my our your his her their its the a an this that these those i we you
    he she they it""")
_RELATIVES = _words("which who whom whose where that when")
_CONTRASTIVE = _words("not no never nor but rather than instead")
#: Words that tell a clause is itself a statement (a verb of its own): not an aside.
_CLAUSE_VERBS = _words("""is are was were am be been has have had do does did will would
    can could should must may might""")
#: Interjections and tags that say nothing wherever they stand.
_INTERJECTIONS = _words("""um umm uh uhh hmm hm er erm lol haha hahaha lmao ok okay yeah yep
    yup hey hi hello oh ah welp wow anyway anyways""")
#: Hedges: the statement is said with less certainty (a weaker write: see statements).
_HEDGES = re.compile(
    r"(?<![\w'])(?:i\s+think|i\s+guess|i\s+believe|i\s+suppose|i\s+reckon|probably|maybe|"
    r"apparently|i'?m\s+(?:pretty\s+|fairly\s+)?sure|if\s+i\s+remember\s+(?:right|correctly)|"
    r"iirc|afaik|not\s+(?:100%\s+)?sure\s+but|i\s+heard|seems\s+like|looks\s+like)(?![\w'])"
    r"\s*,?",
    re.IGNORECASE,
)
#: Frames that say "this is something to know" around the statement.
_FRAMES = re.compile(
    r"^(?:(?:please|pls|plz|kindly|just|also)\s+)*"
    r"(?:(?:(?:do\s+)?(?:remember|note|know|keep\s+in\s+mind|be\s+aware|don'?t\s+forget|"
    r"make\s+a\s+note|take\s+note)(?:\s+of)?)|"
    r"(?:(?:i|we)\s+(?:just\s+)?(?:want(?:ed)?|'d\s+like|would\s+like|need(?:ed)?)\s+"
    r"(?:you\s+)?to\s+(?:know|remember|note|let\s+you\s+know|tell\s+you|mention|say|"
    r"update\s+you|flag|share)(?:\s+(?:that|this))?)|"
    r"(?:you\s+(?:should|need\s+to|might\s+want\s+to|may\s+want\s+to|ought\s+to)\s+"
    r"(?:know|remember|note|be\s+aware))|"
    r"(?:(?:just\s+)?(?:so\s+you\s+know|letting\s+you\s+know|to\s+let\s+you\s+know|"
    r"for\s+(?:your\s+)?(?:info|information|reference|the\s+record)))|"
    r"(?:(?:i\s+)?(?:should|forgot\s+to|meant\s+to)\s+(?:mention|say|tell\s+you)))"
    r"(?:\s+that)?\s*[,:\-\u2013\u2014]?\s+",
    re.IGNORECASE,
)
#: "You should <verb>": advice is an instruction ("You should use tabs" = "Use tabs").
_ADVICE = re.compile(r"^(?:please\s+)?you\s+(?:should|must|need\s+to|have\s+to)\s+(?=\w)",
                     re.IGNORECASE)  # fmt: skip
_PLEASE = re.compile(r"^(?:please|pls|plz|kindly)\s*,?\s+(?=\w)", re.IGNORECASE)
_FILLER = re.compile(
    r"^\s*(?:" + "|".join(re.escape(f) for f in sorted(FILLERS, key=len, reverse=True))
    + r")\b\s*[,:;\-\u2013\u2014]?\s+",
    re.IGNORECASE,
)  # fmt: skip
#: A short leading clause set off by ":" / "," / a dash (the aside candidate).
_LEADING = re.compile(r"^\s*([^,:;.!?\u2013\u2014]{1,40}?)\s*(?:[,:]|\s[\-\u2013\u2014])\s+(?=\S)")
_WORD = re.compile(r"[\w']+")
_TRAILING = re.compile(r"[\s,;!?.:)(\-]*$")


@text_cache(maxsize=4096)
def discourse_core(text: str) -> tuple[str, bool]:
    """(``text`` without its asides, frames, interjections and hedges, whether it was
    hedged); the text itself when nothing would be left."""
    core, hedged = text, False
    for _ in range(6):  # each pass removes at most one leading part
        before = core
        core = _FILLER.sub("", core, count=1)
        core = _FRAMES.sub("", core, count=1)
        core = _PLEASE.sub("", core, count=1)
        core = _ADVICE.sub("", core, count=1)
        core = _strip_interjections(core)
        core = _strip_aside(core)
        if core == before:
            break
    unhedged = _HEDGES.sub(" ", core)
    if unhedged != core:
        hedged = True
        core = " ".join(unhedged.split())
    core = _strip_tail(core)
    if not _WORD.search(core):
        return text, False
    if core[:1].islower() and text[:1].isupper() and core is not text:
        core = core[0].upper() + core[1:]  # the fact now begins the sentence
    return core, hedged


def _strip_interjections(text: str) -> str:
    words = text.split(maxsplit=1)
    while len(words) == 2 and words[0].strip(",.!:;-").lower() in _INTERJECTIONS:
        text = words[1]
        words = text.split(maxsplit=1)
    return text


def _strip_aside(text: str) -> str:
    """Without a leading clause of at most four words that says nothing the statement
    needs: no digit, no capitalised word past the first, no verb of its own, no
    negation, and not an adverbial (a preposition or a subordinator first)."""
    found = _LEADING.match(text)
    if found is None:
        return text
    words = _WORD.findall(found.group(1))
    rest = text[found.end() :]
    if not words or len(words) > 4 or len(_WORD.findall(rest)) < 3:
        return text
    lower = [w.lower() for w in words]
    follows = rest.split(maxsplit=1)[0].lower()
    if lower[0] in _DETERMINERS or follows in _RELATIVES or follows in _CONTRASTIVE:
        # "My sister's new flat, which ...": the subject; "Uses tabs, not spaces": a contrast
        return text
    if lower[0] in _ADVERBIAL_STARTS or any(w in _CLAUSE_VERBS for w in lower):
        return text
    if any(ch.isdigit() for ch in found.group(1)) or any(w[0].isupper() for w in words[1:]):
        return text
    if any(t.value for t in tokens(found.group(1).lower())):  # "Twice a week, ...": a time
        return text
    if any(w in ("not", "no", "never") or w.endswith("n't") for w in lower):
        return text
    if len(words) == 1 and lower[0] not in _INTERJECTIONS and (
        words[0][0].isupper() or ":" in text[found.end(1) : found.end()]
    ):
        return text  # "Ana: ..." or "user: ..." a speaker, "Paris, ..." a place
    return rest


def _strip_tail(text: str) -> str:
    words = text.rstrip(" !?.,:;)(-").split()
    while len(words) > 2 and words[-1].strip(",.!?:;()-").lower() in _INTERJECTIONS | {"btw",
                                                                                     "fyi"}:
        words.pop()
    if words and len(words) < len(text.split()):
        return " ".join(words).rstrip(",;:-")
    return text


@text_cache(maxsize=4096)
def is_question(text: str) -> bool:
    """Whether ``text`` asks rather than states: it ends with "?" or opens with an
    inverted auxiliary ("does maya like ...") or a wh-word and an auxiliary."""
    stripped = text.strip()
    if stripped.endswith("?"):
        return True
    words = [w.lower() for w in _WORD.findall(stripped)[:3]]
    if len(words) < 3:
        return False
    if words[0] in _AUXILIARIES and words[0] not in ("am", "do"):
        return True  # "does noor like ramen", "is the van outside"
    if words[0] == "do":  # "do you ...", not "do the dishes"
        return words[1] in _PRONOUNS
    return words[0] in _WH and words[1] in _AUXILIARIES and words[2] in _SUBJECTS | {"the"}


#: English function words: a sentence of several words that holds none is not English.
_ENGLISH = _words("""the a an is are was were be been am i you he she it we they my your our
    their his her its me us them to of in on at for with from by and or but not no this that
    these those there has have had do does did will would can could should must just now""")


#: Function words of other languages written in Latin letters that English lacks.
_FOREIGN = _words("""und der das ist ich nicht wir sie mit auf ein eine einen dem den des zu
    est les une que por para el los las del es muy con pero y o il che non sono della het een
    zijn och att är jag och du er og ikke jeg je tu nous vous ils sur dans avec pas ne se lo
    mi su en al nosotros yo mein meine dein deine unser unsere jetzt auch noch sehr""")


@text_cache(maxsize=4096)
def is_english(text: str) -> bool:
    """Whether the rules can read ``text``: most of its letters are ASCII, and it holds
    more English function words than function words of other languages."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return True
    if sum(1 for ch in letters if ch.isascii()) < 0.85 * len(letters):
        return False
    # acronyms ("MIT", "DE") are names, not words of a language
    words = [w.lower() for w in _WORD.findall(text) if w.isalpha() and not w.isupper()]
    foreign = sum(1 for w in words if w in _FOREIGN)
    english = sum(1 for w in words if w in _ENGLISH)
    return foreign == 0 or english > foreign


_CLAUSE_BREAK = re.compile(r"(?:[.;!?]+|\s[\-\u2013\u2014]+|,)\s+(?=\S)")
#: Words that make a message conditional, reported or hypothetical: its clauses are
#: not facts of their own.
_NOT_ASSERTED = _words("""if unless whether suppose supposing case said says told asks asked
    would wish hope might""")


def is_conditional(text: str) -> bool:
    """Whether ``text`` states something only under a condition ("if it rains, ...")."""
    return not _CONDITIONS.isdisjoint(w.lower() for w in _WORD.findall(text))


_CONDITIONS = _words("if unless whether suppose supposing")


@text_cache(maxsize=2048)
def clauses(text: str) -> tuple[str, ...]:
    """The clauses of a message of several, each of three words or more (none when
    the message is one clause, or conditional or reported: "if ...", "she said ...")."""
    words = {w.lower() for w in _WORD.findall(text)}
    if not words.isdisjoint(_NOT_ASSERTED):
        return ()
    parts = [p.strip() for p in _CLAUSE_BREAK.split(text)]
    parts = [p for p in parts if len(_WORD.findall(p)) >= 3]
    return tuple(parts) if len(parts) > 1 else ()


#: A state that held until some time ("owned a caravan until the spring", "played in a
#: band till last year"): a past verb, then "until" and when.
_UNTIL = re.compile(
    r"\b(?:\w+ed|had|was|were|went|kept|held|ran|drove|ate|wore|took)\b[^.;,]*?"
    r"(\s+(?:up\s+)?(?:until|till)\s+[^.;,]*)",
    re.IGNORECASE,
)


def ended_state(text: str) -> str | None:
    """``text`` without its "until <when>" when it tells of a state that has ended."""
    found = _UNTIL.search(text)
    if found is None:
        return None
    return (text[: found.start(1)] + text[found.end(1) :]).strip()


#: A sentence ends at ".", "!" or "?" before a capital, unless the word before the
#: stop is an abbreviation of three letters or fewer ("Dr.", "Mrs.", "St.").
_SENTENCE_END = re.compile(r"(?:(?<=[!?])|(?<=[a-z0-9)\]\"'][a-z0-9)\]\"']{3}\.))\s+(?=[A-Z\"'(])")


def statement_count(text: str) -> int:
    """How many sentences of at least two words ``text`` holds (a stored memory of
    several is never superseded whole: what else it says would be hidden too)."""
    return sum(1 for part in _SENTENCE_END.split(text.strip()) if len(part.split()) >= 2)
