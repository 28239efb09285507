"""Access: every read and write of the engine asks this package first.

``policy`` decides (docs/design.md, section 2), ``directory`` manages identities, groups,
orgs and grants, ``namespaces`` parses names; the records themselves live in
:mod:`memchentic.identity`, below the store.
Nothing outside this package decides who may see what.
"""

from __future__ import annotations

from ..identity import Grant, Identity, Membership, Team
from .namespaces import Namespace, check_identifier, parse_namespace, read_scope, scope_namespace
from .policy import CHARTER_TYPE, TRUSTED, AccessPolicy, Principal, Scope, slot_right

__all__ = [
    "CHARTER_TYPE",
    "TRUSTED",
    "AccessPolicy",
    "Grant",
    "Identity",
    "Membership",
    "Namespace",
    "Principal",
    "Scope",
    "Team",
    "check_identifier",
    "parse_namespace",
    "read_scope",
    "scope_namespace",
    "slot_right",
]
