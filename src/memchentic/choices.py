"""Every closed list of values the library accepts, written once (issue 35, item 3).

Each list is a ``Literal`` (what a type checker, pydantic and the HTTP schema read)
and the tuple of its values (what a check or a ``--help`` line reads), so the two
cannot differ. Settings, the argument classes of :mod:`memchentic.args`, the HTTP
request models, the MCP tools and the CLI's help all name these; nothing else
spells the values out.

The bottom of the package: it imports nothing of it.
"""

from __future__ import annotations

from typing import Literal, get_args

#: The built-in search profiles (``retrieval.profiles.PROFILES`` holds their rankers).
Profile = Literal["rrf", "conversation", "cosine_decay", "hybrid"]
PROFILES: tuple[str, ...] = get_args(Profile)

#: What a write does with a secret it finds, least strict last (docs/design.md, section 6).
SecretPolicy = Literal["refuse", "redact", "allow"]
SECRET_POLICIES: tuple[str, ...] = get_args(SecretPolicy)

#: What a write does with a near-duplicate of a live memory.
DuplicatePolicy = Literal["refuse", "reinforce", "keep"]
DUPLICATE_POLICIES: tuple[str, ...] = get_args(DuplicatePolicy)

#: Who decides how a new memory relates to its neighbours.
WriteResolver = Literal["rules", "chat"]
WRITE_RESOLVERS: tuple[str, ...] = get_args(WriteResolver)

#: The snowball languages of both keyword backends (``text.KEYWORD_LANGUAGES``).
KeywordLanguage = Literal[
    "danish", "dutch", "english", "finnish", "french", "german", "hungarian", "italian",
    "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "turkish",
]  # fmt: skip
KEYWORD_LANGUAGES: tuple[str, ...] = get_args(KeywordLanguage)

#: A memory's kind: a plain entry, or a guide (advice to follow again).
Kind = Literal["entry", "guide"]
KINDS: tuple[str, ...] = get_args(Kind)

#: How two memories relate (docs/design.md, section 4).
EdgeKind = Literal["supports", "contradicts", "derives_from", "supersedes", "related_to"]
EDGE_KINDS: tuple[str, ...] = get_args(EdgeKind)

#: Which body a read shows (docs/design.md, section 5).
Intent = Literal["preview", "default", "full"]
INTENTS: tuple[str, ...] = get_args(Intent)

#: The older selector of a read's body, one per intent (``record.TIER_TO_INTENT``).
Tier = Literal["l0", "l1", "l2"]
TIERS: tuple[str, ...] = get_args(Tier)

#: The kinds of identity and of team a directory creates, and a member's roles in a team.
IdentityKind = Literal["user", "agent"]
IDENTITY_KINDS: tuple[str, ...] = get_args(IdentityKind)
TeamKind = Literal["group", "org"]
TEAM_KINDS: tuple[str, ...] = get_args(TeamKind)
Role = Literal["member", "admin"]
ROLES: tuple[str, ...] = get_args(Role)


def spoken(values: tuple[str, ...], last: str = "or") -> str:
    """``"a, b or c"``: a list of values as a ``--help`` line says it."""
    if len(values) < 2:
        return "".join(values)
    return f"{', '.join(values[:-1])} {last} {values[-1]}"
