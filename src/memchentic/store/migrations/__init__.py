"""Schema migrations, one ordered module per backend."""

from __future__ import annotations

from ...errors import SchemaTooNewError


def refuse_newer(version: int, known_version: int, where: str) -> None:
    """A :class:`SchemaTooNewError` when the store's schema ``version`` is newer than
    the ``known_version`` of this code (its number of migrations): a newer memchentic
    wrote it, and this one must neither write to it nor "migrate" it."""
    if version > known_version:
        raise SchemaTooNewError(
            f"the store {where} has schema version {version}, newer than this memchentic "
            f"knows ({known_version}): it was written by a newer memchentic; upgrade "
            "memchentic to open it (the store was not changed)"
        )
