"""Access: every read and write of the engine asks this module first.

Today the only principal is the trusted local one (``Memory()`` sees and writes
everything); identities, groups, orgs and grants plug in here (DESIGN section 2),
and nothing outside this package decides who may see what.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..record import MemoryRecord
from .namespaces import Namespace, check_identifier, parse_namespace, read_scope, scope_namespace


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling. ``trusted`` principals bypass namespace rules (local use only)."""

    name: str
    trusted: bool = False


TRUSTED = Principal("local", trusted=True)


class AccessPolicy:
    """Decides reads and writes for a principal."""

    def readable(self, principal: Principal, requested: Sequence[str] | None) -> list[str] | None:
        """Namespaces a read may cover: ``None`` = all (trusted only); requested
        namespaces the caller cannot read are silently dropped (empty result, no error)."""
        if principal.trusted:
            return None if requested is None else list(requested)
        return []  # identities arrive with the access-control work: deny by default

    def can_read(self, principal: Principal, record: MemoryRecord) -> bool:
        allowed = self.readable(principal, [record.namespace])
        return allowed is None or record.namespace in allowed

    def can_write(self, principal: Principal, namespace: str, type_: str) -> bool:
        return principal.trusted

    def actor(self, principal: Principal) -> str:
        """The name versions and events record for this principal."""
        return principal.name


__all__ = [
    "TRUSTED",
    "AccessPolicy",
    "Namespace",
    "Principal",
    "check_identifier",
    "parse_namespace",
    "read_scope",
    "scope_namespace",
]
