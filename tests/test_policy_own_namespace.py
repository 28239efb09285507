"""An identity's own namespace (where its writes go, what its search events name)
is read from its identity alone, and is exactly what its whole scope says, in
every case: an identity, an identity of another id, one deleted, the trusted
principal (issue 36: a search read the memberships and grants twice)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memchentic import Memory


def _own_of_scope(mem: Memory) -> str | None:
    p = mem.principal
    if p.trusted:
        return None
    scope = mem.access.scope(p)
    return scope.identity.namespace if scope.identity else None


def test_the_own_namespace_is_the_scopes(mem: Memory) -> None:
    alice = mem.as_identity("alice")
    bob = mem.as_identity("bob")
    for who in (mem, alice, bob):
        assert who.access.default_namespace(who.principal) == _own_of_scope(who)
    assert alice.access.default_namespace(alice.principal) != bob.access.default_namespace(
        bob.principal
    )
    assert mem.access.default_namespace(mem.principal) is None  # trusted: none
    stranger = replace(alice.principal, identity_id="no-such-identity")
    assert alice.access.default_namespace(stranger) is None
    assert alice.access.scope(stranger).identity is None


def test_the_own_namespace_reads_no_membership_or_grant(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = mem.as_identity("alice")
    store: Any = alice.access.store
    read: list[str] = []
    for name in ("memberships_of", "grants"):
        original = getattr(store, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            read.append(_name)
            return _original(*args, **kw)

        monkeypatch.setattr(store, name, counted)
    own = alice.access.default_namespace(alice.principal)
    assert own is not None and read == []
    alice.access.scope(alice.principal)  # the whole scope still reads them
    assert "memberships_of" in read
