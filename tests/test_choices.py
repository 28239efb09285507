"""Every closed list of values lives in ``memchentic.choices`` (issue 35, item 3): the
lists other modules still keep agree with it, and no module spells one out again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from memchentic import choices, record, text
from memchentic.retrieval import profiles
from memchentic.server import schemas
from memchentic.settings import Settings
from memchentic.write import secrets

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memchentic"

#: Lists kept outside ``choices`` by their owner, until it names ``choices``: where,
#: and which list (each line a pending edit of that module's owner).
PENDING: dict[str, str] = {
}

#: Lists of words that other lists share (a namespace's kind is also user, agent, group
#: or org): a pair of them is no sign of a list written again.
COMMON_WORDS = {"IDENTITY_KINDS", "TEAM_KINDS", "ROLES"}


def test_the_lists_kept_elsewhere_agree() -> None:
    assert tuple(profiles.PROFILES) == choices.PROFILES
    assert tuple(text.KEYWORD_LANGUAGES) == choices.KEYWORD_LANGUAGES
    assert tuple(reversed(secrets.POLICIES)) == choices.SECRET_POLICIES
    assert tuple(record.TIER_TO_INTENT) == choices.TIERS
    assert tuple(record.TIER_TO_INTENT.values()) == choices.INTENTS == tuple(record.INTENT_ORDER)


def test_settings_and_the_http_schema_name_them() -> None:
    fields = Settings.model_fields
    assert fields["search_profile"].annotation is choices.Profile
    assert fields["duplicate_policy"].annotation is choices.DuplicatePolicy
    assert fields["secret_policy"].annotation is choices.SecretPolicy
    assert fields["keyword_language"].annotation is choices.KeywordLanguage
    search = schemas.SearchRequest.model_fields
    assert get_args(search["profile"].annotation)[0] is choices.Profile
    assert get_args(schemas.AddRequest.model_fields["on_duplicate"].annotation)[0] is (
        choices.DuplicatePolicy
    )


def _spelled(values: tuple[str, ...]) -> re.Pattern[str]:
    """Two or more of ``values`` quoted in a row, in any order: a list written again."""
    one = "|".join(re.escape(v) for v in values)
    return re.compile(rf"""["']({one})["'],\s*["']({one})["']""")


def test_no_module_spells_a_list_out_again() -> None:
    lists = {name: getattr(choices, name) for name in dir(choices)
             if name.isupper() and name not in COMMON_WORDS}  # fmt: skip
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where == "choices.py":
            continue
        source = path.read_text(encoding="utf-8")
        for name, values in lists.items():
            for match in _spelled(values).finditer(source):
                if match.group(1) != match.group(2) and where not in PENDING:
                    line = source.count("\n", 0, match.start()) + 1
                    found.append(f"{where}:{line} spells {name} again")
    assert found == []
