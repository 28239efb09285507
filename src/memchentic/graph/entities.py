"""Entity names in content: capitalised spans, @handles, emails and paths.
Rules by default; any object with ``extract(text) -> list[str]`` can replace them."""

from __future__ import annotations

import re
from typing import Protocol

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_HANDLE = re.compile(r"(?<![\w@])@[A-Za-z0-9_][A-Za-z0-9_.-]{0,38}[A-Za-z0-9_]?")
_PATH = re.compile(r"(?<![\w/])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|js|ts|md|json|"
                   r"toml|yaml|yml|rs|go|java|c|h|cpp|sql|txt|sh)\b")  # fmt: skip
#: What a path without a slash ends with (``_PATH``'s second branch), found by a
#: quick scan for the dot before running the whole pattern.
_EXTENSION = re.compile(r"\.(?:py|js|ts|md|json|toml|yaml|yml|rs|go|java|c|h|cpp|sql|txt|sh)\b")
_CAPITALISED = re.compile(
    r"\b[A-Z][\w'-]*(?:\s+(?:of|the|de|van|von|and)?\s*[A-Z][\w'-]*)*", re.UNICODE
)
#: Capitalised words that start sentences or are pronouns, not names.
_COMMON = frozenset(
    [
        "I",
        "I'm",
        "I've",
        "I'd",
        "I'll",
        "A",
        "An",
        "The",
        "This",
        "That",
        "These",
        "Those",
        "It",
        "It's",
        "He",
        "She",
        "We",
        "They",
        "You",
        "My",
        "Our",
        "Your",
        "His",
        "Her",
        "Their",
        "What",
        "When",
        "Where",
        "Why",
        "How",
        "Who",
        "Which",
        "Yes",
        "No",
        "Not",
        "Never",
        "Also",
        "But",
        "And",
        "Or",
        "So",
        "If",
        "Then",
        "There",
        "Here",
        "Today",
        "Tomorrow",
        "Yesterday",
        "Hi",
        "Hello",
        "Hey",
        "Thanks",
        "Thank",
        "Please",
        "Ok",
        "Okay",
        "Oh",
        "Wow",
        "Well",
        "Just",
        "Maybe",
        "Sure",
        "Great",
        "Good",
        "Nice",
        "Sounds",
        "Let",
        "Let's",
        "Do",
        "Does",
        "Did",
        "Is",
        "Are",
        "Was",
        "Were",
        "Have",
        "Has",
        "Had",
        "Can",
        "Could",
        "Will",
        "Would",
        "Should",
        "May",
        "Might",
        "Must",
        "After",
        "Before",
        "Since",
        "Until",
        "While",
        "Because",
        "Although",
        "Though",
        "For",
        "From",
        "With",
        "About",
        "As",
        "At",
        "By",
        "In",
        "On",
        "Of",
        "To",
        "Up",
        "Out",
        "Over",
        "Some",
        "Any",
        "All",
        "Every",
        "Each",
        "Both",
        "Many",
        "Much",
        "More",
        "Most",
        "Other",
        "Another",
        "Such",
        "Only",
        "Own",
        "Same",
        "Too",
        "Very",
    ]
)


class EntityExtractor(Protocol):
    def extract(self, text: str) -> list[str]: ...


class RuleEntities:
    """Emails, @handles, file paths and capitalised name spans, in order of appearance."""

    def extract(self, text: str) -> list[str]:
        found: dict[str, str] = {}

        def keep(name: str) -> None:
            name = name.strip(" .,;:!?'\"()[]{}")
            if len(name) > 1:
                found.setdefault(name.lower(), name)

        for pattern in _patterns_that_may_match(text):
            for match in pattern.finditer(text):
                keep(match.group(0))
        for match in _CAPITALISED.finditer(text):
            words = [w for w in match.group(0).split() if w not in _COMMON]
            while words and words[0].lower() in {"of", "the", "de", "van", "von", "and"}:
                words.pop(0)
            if words and not (len(words) == 1 and words[0].rstrip("'s") in _COMMON):
                keep(" ".join(words))
        return list(found.values())


def _patterns_that_may_match(text: str) -> tuple[re.Pattern[str], ...]:
    """Of ``_EMAIL``, ``_HANDLE`` and ``_PATH``, in that order, those whose matches
    ``text`` could hold: an email or a handle holds an ``@``, a path a ``/`` or a
    file extension. Skipping the others gives the same entities, and most text
    holds none of them (the three scans were most of a bulk write's extraction)."""
    at = "@" in text
    path = "/" in text or _EXTENSION.search(text) is not None
    if at and path:
        return (_EMAIL, _HANDLE, _PATH)
    if at:
        return (_EMAIL, _HANDLE)
    return (_PATH,) if path else ()
