"""Namespace names (docs/design.md, section 2): parsing and the mapping of convenience scope.

Shapes: ``user:{id}``, ``agent:{id}``, ``group:{name}`` (``ring:{name}`` accepted and
normalised to ``group:``), ``org:{name}``, ``federated:{source_org}:{source}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import NamespaceError, ValidationError

NAMESPACE_KINDS: tuple[str, ...] = ("user", "agent", "group", "org", "federated")
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$")


@dataclass(frozen=True, slots=True)
class Namespace:
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


def check_identifier(field: str, value: str | None) -> str | None:
    """A user, agent or session id: letters, digits and ``_ . @ + -``, at most 128."""
    if value is None:
        return None
    if not isinstance(value, str) or not _PART.match(value):
        raise ValidationError(
            field, "letters, digits and '_ . @ + -', starting with a letter or digit, 1-128 long"
        )
    return value


def parse_namespace(text: str, field: str = "namespace") -> Namespace:
    """Parse and normalise a namespace; anything malformed is an error, never a guess."""
    if not isinstance(text, str):
        raise NamespaceError(field, "must be a string like 'user:alice'")
    kind, sep, rest = text.partition(":")  # no trimming, no case folding: exact or denied
    if kind == "ring":
        kind = "group"
    if not sep or kind not in NAMESPACE_KINDS:
        raise NamespaceError(
            field, "must be user:NAME, agent:NAME, group:NAME, org:NAME or federated:ORG:NAME"
        )
    parts = rest.split(":") if kind == "federated" else [rest]
    if (kind == "federated" and len(parts) != 2) or not all(_PART.match(p) for p in parts):
        raise NamespaceError(
            field, "names are letters, digits and '_ . @ + -', 1-128 long, no spaces"
        )
    return Namespace(kind, rest)


def scope_namespace(
    *, namespace: str | None, user_id: str | None, agent_id: str | None, default_user: str
) -> str:
    """The namespace a write goes to: ``namespace`` when given, else the user's
    private one (shared by that user's agents), else the agent's, else the default user."""
    if namespace is not None:
        return str(parse_namespace(namespace))
    if user_id is not None:
        return f"user:{check_identifier('user_id', user_id)}"
    if agent_id is not None:
        return f"agent:{check_identifier('agent_id', agent_id)}"
    return f"user:{default_user}"


def read_scope(
    *, namespace: str | None, user_id: str | None, agent_id: str | None
) -> list[str] | None:
    """The namespaces a read asks for (``None``: every namespace the caller may read)."""
    if namespace is not None:
        return [str(parse_namespace(namespace))]
    if user_id is not None:
        return [f"user:{check_identifier('user_id', user_id)}"]
    if agent_id is not None:
        return [f"agent:{check_identifier('agent_id', agent_id)}"]
    return None
