"""The default extractor of ``learn``: rules for what people say about themselves.

Only the user's messages are read. Each is cut into clauses (sentences, and
``and``/``but`` when a new statement follows); each clause is matched against
:data:`RULES` in order and the first match becomes one memory, written in the
third person ("I live in Lisbon" -> "Lives in Lisbon") with a type and, where
a later statement should replace an earlier one, a slot key:

==========================================  ================  ===========================
clause                                      type              slot key
==========================================  ================  ===========================
"never ..." / "always ..." (to the agent)   instruction       (a guide)
"my name is X"                              fact              profile.name
"call me X"                                 preference        profile.preferred_name
"I live in / moved to / relocated to X"     fact              profile.location
"I'm from X"                                fact              profile.hometown
"I work at/for X", "I work as X"            fact              profile.employer / occupation
"I'm N years old", "my birthday is X"       fact              profile.age / profile.birthday
"I'm allergic to X"                         fact              profile.allergy.<x>
"I'm vegetarian" (vegan, ...)               preference        profile.diet
"my favo(u)rite K is X"                     preference        profile.favorite.<k>
"I like / love / hate / don't like X"       preference        opinion:<x>
"I'm (not) a (big) fan of X"                preference        opinion:<x>
"I prefer X"                                preference        (none)
"I never / always X"                        preference        (none)
"my goal is to X", "I'm trying to X"        goal              (none)
"remember that X"                           fact              (none)
==========================================  ================  ===========================

The rules are deliberately narrow: a missed statement costs less than a wrong
memory. But nothing said is dropped in silence: a user's message from which no
rule takes a memory (another language than English, or no statement the rules
know) is kept as written, as mem0's ``add(..., infer=False)`` keeps a message, a
record of what was said with ``metadata = {"role": "user", "extraction": "none",
"reason": "language" | "no-fact"}`` (:data:`UNREAD_LANGUAGE`, :data:`UNREAD_NO_FACT`).
Configure a chat model (``CHAT_BASE_URL``) for open-ended extraction.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..record import DEFAULT_TYPE
from ..text import STOPWORDS
from .base import Extracted, Message

#: Why a message was kept as written: not English (the rules read English only),
#: or English in which no rule found a statement.
UNREAD_LANGUAGE = "language"
UNREAD_NO_FACT = "no-fact"

_CLAUSES = re.compile(
    r"[.!?;\n]+\s*|,?\s+(?:and|but)\s+(?=(?:i|i'm|i've|my|call|never|always|please)\b)"
    r"|,\s+(?=(?:i|i'm|i've|my)\b)",
    re.IGNORECASE,
)
_CUT = re.compile(
    r"(?:^|\s+)(?:because|since|so that|so|but|though|although|which|who|where|when|if|"
    r"unless|while)\b.*$|\s*\(.*$",
    re.IGNORECASE,
)
_MONTH = (r"(?:january|february|march|april|may|june|july|august|september|october|"
          r"november|december)")  # fmt: skip
_FILLER = (r"now|these days|nowadays|currently|at the moment|anymore|any more|too|as well|"
           r"right now|actually|by the way|please")  # fmt: skip
_WHEN = (r"recently|lately|(?:last|this|next)\s+(?:week|month|year|summer|winter|spring|autumn|"
         r"fall)|(?:a\s+(?:few|couple\s+of)\s+|\d+\s+|some\s+)?(?:days?|weeks?|months?|years?)"
         rf"\s+ago|(?:in|since)\s+(?:{_MONTH}(?:\s+\d{{4}})?|\d{{4}})")  # fmt: skip
_TRAILING = re.compile(rf"\s+(?:{_FILLER})\s*$", re.IGNORECASE)
#: Trailing "when" phrases too: "I moved to Lisbon last month" -> "Lisbon".
_TRAILING_WHEN = re.compile(rf"\s+(?:{_FILLER}|{_WHEN})\s*$", re.IGNORECASE)
_PRONOUNS = {"my": "their", "me": "them", "myself": "themselves", "mine": "theirs",
             "i": "they", "i'm": "they're", "i've": "they've", "am": "are"}  # fmt: skip
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "can": "can"}
_NOT_AN_OPINION = re.compile(r"^(?:that|this|it|them|those|these|your|you|the idea)\b", re.I)
_MAX_VALUE_CHARS = 120
_PLACE_COMMA = re.compile(r",\s+(?=[a-z]).*$")
# fmt: off
_NAME_STOP = frozenset({
    "a", "an", "and", "as", "at", "because", "but", "by", "for", "from", "here", "i", "if",
    "in", "is", "now", "on", "please", "so", "the", "though", "to", "too", "when", "with",
})
# fmt: on


def _third_person(verb: str) -> str:
    """eat -> eats, watch -> watches, study -> studies, have -> has."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _swap_pronouns(text: str) -> str:
    """First person to third: "my car" -> "their car"."""

    def swap(m: re.Match[str]) -> str:
        return _PRONOUNS.get(m.group(0).lower(), m.group(0))

    return re.sub(r"\b(?:my|me|myself|mine|i'm|i've|i|am)\b", swap, text, flags=re.IGNORECASE)


def _value(raw: str, *, cut: bool = True, when: bool = False) -> str:
    """The statement's object, trimmed of trailing clauses, fillers and punctuation.

    With ``when`` (places), trailing time phrases go too, and a comma ends the value
    only before a lower-case word ("Lisbon, Portugal" stays; "Lisbon, it's nice" ->
    "Lisbon"); otherwise any comma ends it."""
    value = raw.strip()
    if cut:
        value = _CUT.sub("", value)
        value = _PLACE_COMMA.sub("", value) if when else value.split(",")[0]
    value = value.strip(" \t\"'`.,!?:;-")
    trailing = _TRAILING_WHEN if when else _TRAILING
    while (trimmed := trailing.sub("", value)) != value:
        value = trimmed.strip(" \t\"'`.,!?:;-")
    return value[:_MAX_VALUE_CHARS].strip()


def _name(value: str) -> str:
    """A person's name: the words before the first ordinary word ("Sammy from now on"
    -> "Sammy"), at most three."""
    words: list[str] = []
    for word in value.split()[:3]:
        if word.lower() in _NAME_STOP:
            break
        words.append(word)
    return " ".join(words)


def _proper(value: str) -> str:
    """Lower-case "lisbon" -> "Lisbon"; "New York" stays; mixed case is kept as written."""
    return value.title() if value.islower() else value


def _key(value: str) -> str:
    """A slot-key fragment: lower-case words joined by '_'."""
    return "_".join(re.findall(r"[^\W_]+", value.lower()))[:64]


@dataclass(frozen=True, slots=True)
class Rule:
    """A clause pattern and how its match becomes a memory (None: not a memory)."""

    name: str
    pattern: re.Pattern[str]
    build: Callable[[re.Match[str]], Extracted | None]


def _rx(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


def _instruction(m: re.Match[str]) -> Extracted | None:
    rest = _value(m.group("v"), cut=False)
    if not rest:
        return None
    return Extracted(f"{m.group('w').capitalize()} {rest}", "instruction", None, "guide", 0.9)


def _simple(template: str, type_: str, slot: str | None, importance: float = 0.7,
            proper: bool = False, swap: bool = True, when: bool = False, name: bool = False,
            ) -> Callable[[re.Match[str]], Extracted | None]:  # fmt: skip
    def build(m: re.Match[str]) -> Extracted | None:
        value = _value(m.group("v"), when=when)
        if name:
            value = _name(value)
        if swap:
            value = _swap_pronouns(value)
        if proper:
            value = _proper(value)
        if not value:
            return None
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        slot_key = slot.format(key=_key(value), k=_key(groups.get("k", ""))) if slot else None
        content = template.format(v=value, k=groups.get("k", "").strip().lower())
        return Extracted(content, type_, slot_key, "entry", importance)

    return build


def _opinion(m: re.Match[str]) -> Extracted | None:
    value = _swap_pronouns(_value(m.group("v")))
    if not value or _NOT_AN_OPINION.match(value):
        return None
    verb = " ".join(m.group("verb").lower().split())
    said = {"don't like": "Does not like", "do not like": "Does not like",
            "dislike": "Dislikes"}.get(verb) or _third_person(verb).capitalize()  # fmt: skip
    return Extracted(f"{said} {value}", "preference", f"opinion:{_key(value)}", "entry", 0.6)


def _fan(m: re.Match[str]) -> Extracted | None:
    value = _swap_pronouns(_value(m.group("v")))
    if not value or _NOT_AN_OPINION.match(value):
        return None
    said = "Is not" if m.group("not") else "Is"
    degree = f"{m.group('degree').lower()} " if m.group("degree") else ""
    return Extracted(f"{said} a {degree}fan of {value}", "preference",
                     f"opinion:{_key(value)}", "entry", 0.6)  # fmt: skip


def _habit(m: re.Match[str]) -> Extracted | None:
    words = _swap_pronouns(_value(m.group("v"), cut=False)).split()
    if not words:
        return None
    words[0] = _third_person(words[0])
    return Extracted(f"{m.group('w').capitalize()} {' '.join(words)}", "preference", None,
                     "entry", 0.6)  # fmt: skip


_I_AM = r"\bi(?:'m|\s+am)\s+"
# fmt: off
RULES: tuple[Rule, ...] = (
    Rule("instruction", _rx(r"^(?:please\s+)?(?:(?:you\s+)?should\s+)?(?P<w>never|always)\s+"
                            r"(?P<v>.+)"), _instruction),
    Rule("name", _rx(r"\bmy name(?:'s|\s+is)\s+(?P<v>.+)"),
         _simple("Name is {v}", "fact", "profile.name", 0.8, proper=True, swap=False,
                 name=True)),
    Rule("preferred_name", _rx(r"\b(?:please\s+)?call me\s+(?P<v>.+)"),
         _simple("Prefers to be called {v}", "preference", "profile.preferred_name", 0.8,
                 proper=True, swap=False, name=True)),
    Rule("location", _rx(r"\bi(?:'m|\s+am|'ve|\s+have)?\s+(?:just\s+|recently\s+|now\s+)?"
                         r"(?:live|living|moved|relocated)\s+(?:in|to)\s+(?P<v>.+)"),
         _simple("Lives in {v}", "fact", "profile.location", 0.8, proper=True, swap=False,
                 when=True)),
    Rule("hometown", _rx(_I_AM + r"(?:originally\s+)?from\s+(?P<v>.+)"),
         _simple("Is from {v}", "fact", "profile.hometown", 0.7, proper=True, swap=False,
                 when=True)),
    Rule("occupation", _rx(r"\bi\s+work\s+as\s+(?P<v>.+)"),
         _simple("Works as {v}", "fact", "profile.occupation")),
    Rule("employer", _rx(r"\bi\s+work\s+(?:at|for)\s+(?P<v>.+)"),
         _simple("Works at {v}", "fact", "profile.employer", swap=False, when=True)),
    Rule("age", _rx(_I_AM + r"(?P<v>\d{1,3})\s+years?\s+old"),
         _simple("Is {v} years old", "fact", "profile.age")),
    Rule("birthday", _rx(r"\bmy\s+birthday\s+is\s+(?:on\s+)?(?P<v>.+)"),
         _simple("Birthday is {v}", "fact", "profile.birthday")),
    Rule("allergy", _rx(_I_AM + r"(?:very\s+|severely\s+|also\s+|deathly\s+)?allergic\s+to\s+"
                        r"(?P<v>.+)"),
         _simple("Allergic to {v}", "fact", "profile.allergy.{key}", 0.9)),
    Rule("diet", _rx(_I_AM + r"(?:a\s+|strictly\s+)?(?P<v>vegetarian|vegan|pescatarian|"
                     r"gluten[- ]free|lactose[- ]intolerant|kosher|halal)\b"),
         _simple("Is {v}", "preference", "profile.diet", 0.8)),
    Rule("favorite", _rx(r"\bmy\s+fav(?:ou?rite)\s+(?P<k>[\w ]{1,30}?)\s+is\s+(?P<v>.+)"),
         _simple("Favorite {k} is {v}", "preference", "profile.favorite.{k}", 0.6)),
    Rule("goal", _rx(r"\b(?:my\s+goal\s+is\s+(?:to\s+)?|i(?:'m|\s+am)\s+(?:trying|aiming|"
                     r"planning|hoping|working)\s+(?:to|towards)\s+)(?P<v>.+)"),
         _simple("Wants to {v}", "goal", None, 0.7)),
    Rule("prefer", _rx(r"\bi\s+(?:really\s+|usually\s+|generally\s+)?prefer\s+(?P<v>.+)"),
         _simple("Prefers {v}", "preference", None, 0.6)),
    Rule("opinion", _rx(r"\bi\s+(?:really\s+|absolutely\s+|just\s+)?(?P<verb>like|love|enjoy|"
                        r"hate|dislike|don't\s+like|do\s+not\s+like)\s+(?P<v>.+)"),
         _opinion),
    Rule("fan", _rx(_I_AM + r"(?P<not>not\s+)?(?:really\s+)?(?:a\s+)?(?P<degree>big|huge|great|"
                    r"massive)?\s*fan\s+of\s+(?P<v>.+)"), _fan),
    Rule("habit", _rx(r"\bi\s+(?P<w>never|always)\s+(?P<v>.+)"), _habit),
    Rule("remember", _rx(r"^(?:please\s+)?remember\s+(?:that\s+)?(?P<v>.+)"),
         _simple("{v}", "fact", None, 0.7)),
)
# fmt: on


class RuleExtractor:
    """Self-statements of the user's messages, by :data:`RULES` (no model); a user's
    message none of them reads is kept as written (:func:`unread`), unless
    ``keep_unread`` is False."""

    name = "rules"

    def __init__(self, rules: tuple[Rule, ...] = RULES, *, keep_unread: bool = True) -> None:
        self.rules = rules
        #: Keep a user's message that no rule reads, as written (else: nothing of it).
        self.keep_unread = keep_unread

    def extract(self, messages: list[Message]) -> list[Extracted]:
        found: list[Extracted] = []
        seen: set[tuple[str, str | None]] = set()
        for message in messages:
            if message.role != "user":
                continue
            text = message.content.replace("\u2019", "'")  # typographic apostrophes
            read = False
            for clause in _CLAUSES.split(text):
                item = self.extract_clause(clause.strip())
                if item is None:
                    continue
                read = True
                if (item.content, item.slot_key) not in seen:
                    seen.add((item.content, item.slot_key))
                    found.append(item)
            kept = None if read or not self.keep_unread else unread(message.content)
            if kept is not None and (kept.content, None) not in seen:
                seen.add((kept.content, None))
                found.append(kept)
        return found

    def extract_clause(self, clause: str) -> Extracted | None:
        """The memory of one clause: the first rule that matches and builds one."""
        if not clause:
            return None
        for rule in self.rules:
            match = rule.pattern.search(clause)
            if match is not None:
                item = rule.build(match)
                if item is not None:
                    return _capitalised(item)
        return None


def _capitalised(item: Extracted) -> Extracted:
    text = item.content
    if text[:1].islower():
        return Extracted(text[0].upper() + text[1:], item.type, item.slot_key, item.kind,
                         item.importance)  # fmt: skip
    return item


#: Letters of the Latin script (Basic Latin to Latin Extended-B): English is written
#: in them, Chinese, Russian or Arabic are not.
_LATIN_END = 0x250
#: A Latin-script message of this many words or more, with fewer English stopwords
#: than this share of them, is taken to be in another language (German, Spanish...).
_MIN_WORDS_TO_JUDGE = 3
_ENGLISH_STOPWORD_SHARE = 0.2
#: A word: letters, with an apostrophe or a hyphen inside ("j'habite", "GitHub-Token").
_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")
_EDGE_PUNCTUATION = "\"'`.,!?:;()[]{}<>«»„“”¿¡…"
#: Everyday words of German, Spanish, French, Italian, Portuguese and Dutch (English
#: stopwords left out): a message with more of them than of English stopwords is not
#: English.
# fmt: off
_FOREIGN_WORDS = frozenset(" ".join((
    "ich bin und der die das nicht ist mein meine ein eine mit für auf zu wohne heiße wir",
    "den dem von im ja nein auch aber sehr gern habe",
    "yo soy el la los las que de mi mis es en un una con por para llamo vivo pero muy del",
    "al estoy tengo gusta",
    "je suis le les et mon ma mes est une des du avec pour pas ne qui moi habite appelle",
    "j'habite m'appelle j'ai aime très",
    "io sono il lo gli di che mio mia non per chiamo ho piace",
    "eu sou os não em um uma meu minha moro chamo tenho gosto",
    "ik ben het een en niet mijn van met voor woon heet",
)).split()) - STOPWORDS
# fmt: on


def unread_reason(text: str) -> str:
    """Why the rules read nothing in ``text``: :data:`UNREAD_LANGUAGE` when it is not
    English (mostly letters of another script, or Latin-script words with few
    English stopwords among them), else :data:`UNREAD_NO_FACT`."""
    letters = [c for c in text if c.isalpha()]
    if letters and sum(ord(c) < _LATIN_END for c in letters) * 2 < len(letters):
        return UNREAD_LANGUAGE
    # whole words only: the letters inside a token or a number are no language's words
    tokens = (t.strip(_EDGE_PUNCTUATION) for t in text.replace("\u2019", "'").split())
    words = [t.lower() for t in tokens if _WORD.fullmatch(t)]
    english = sum(w in STOPWORDS or w.split("'")[0] in STOPWORDS for w in words)
    if sum(w in _FOREIGN_WORDS for w in words) > english:
        return UNREAD_LANGUAGE
    if len(words) >= _MIN_WORDS_TO_JUDGE and english < _ENGLISH_STOPWORD_SHARE * len(words):
        return UNREAD_LANGUAGE
    return UNREAD_NO_FACT


def unread(text: str) -> Extracted | None:
    """A user's message the rules read nothing in, kept as written: a record of what
    was said (``role`` in its metadata: a secret in it is redacted, not refused, and
    it lives ``RECORD_DEFAULT_TTL_DAYS``), with ``extraction: none`` and the reason.
    None for a message with no word or number in it."""
    content = text.strip()
    if not any(c.isalnum() for c in content):
        return None
    metadata = {"role": "user", "extraction": "none", "reason": unread_reason(content)}
    return Extracted(content, DEFAULT_TYPE, None, "entry", 0.5, metadata)
