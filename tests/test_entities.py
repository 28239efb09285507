"""Rule entity extraction: the patterns a text cannot match are skipped, with the
same entities, in the same order, as running every pattern."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memchentic.graph import entities
from memchentic.graph.entities import RuleEntities

_LEADING = {"of", "the", "de", "van", "von", "and"}


def every_pattern(text: str) -> list[str]:
    """The extraction with all four patterns run on every text."""
    found: dict[str, str] = {}

    def keep(name: str) -> None:
        name = name.strip(" .,;:!?'\"()[]{}")
        if len(name) > 1:
            found.setdefault(name.lower(), name)

    for pattern in (entities._EMAIL, entities._HANDLE, entities._PATH):
        for match in pattern.finditer(text):
            keep(match.group(0))
    for match in entities._CAPITALISED.finditer(text):
        words = [w for w in match.group(0).split() if w not in entities._COMMON]
        while words and words[0].lower() in _LEADING:
            words.pop(0)
        if words and not (len(words) == 1 and words[0].rstrip("'s") in entities._COMMON):
            keep(" ".join(words))
    return list(found.values())


TOKENS = [
    "Ann", "Bob Smith", "the", "of", "van", "Ludwig van Beethoven", "I", "It's", "The",
    "ann@example.com", "a.b+c@mail.co.uk", "@ann", "@bob_2.x", "x@y", "@", "mail@", "@@z",
    "src/app.py", "./run.sh", "../a/b", "/etc/hosts", "a/b/c.txt", "main.py", "README.md",
    "x.cpp", "data.json.", "notes.txt,", "file.pyc", "e.g.", "v1.2", "foo-bar.sh", "-x.go",
    "x/", "/", ".", "..", "Müller", "Ørsta", "São Paulo", "München/Bahnhof", "é.py",
    "(Paris)", "\"Oslo\"", "Apollo's", "don't", "O'Neil", "x_y.rs", "a.h", "yaml.yml",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(TOKENS), max_size=12),
    st.lists(st.sampled_from([" ", "", ", ", ". ", "\n", "/", "@", "."]), min_size=12, max_size=12),
)
def test_same_entities_as_every_pattern(tokens: list[str], glue: list[str]):
    text = "".join(t + g for t, g in zip(tokens, glue, strict=False))
    assert RuleEntities().extract(text) == every_pattern(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aAzZ09_.-/@ \n'émÖ", max_size=60))
def test_same_entities_on_any_text(text: str):
    assert RuleEntities().extract(text) == every_pattern(text)


def test_each_kind_is_found():
    text = "Mail ann@example.com or @bob about src/app.py and main.go with Nora Berg."
    assert RuleEntities().extract(text) == [
        "ann@example.com", "@bob", "src/app.py", "main.go", "Mail", "Nora Berg",
    ]  # fmt: skip
