"""Schema migrations, one ordered module per backend, numbered alike: step N is
the same change on SQLite and on PostgreSQL (a step one backend does not need is a
no-op there), so one schema version means one schema on both.

Each applied step is a row ``(version, name)`` of ``schema_migrations``. A store is
matched to the steps by name, not only by number: before issue 23 the SQLite
steps after the third were numbered one lower than PostgreSQL's (``m004_negated_rows``
was PostgreSQL's ``m005_negated_rows``), and :func:`plan` renumbers such rows
instead of running their steps again or skipping the one they stood in for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from ...errors import SchemaTooNewError

Step = TypeVar("Step", bound=Callable[..., None])


#: Every backend's steps, in order (step N is version N): each backend's module
#: defines one function of each name. A new step is a name appended here and a
#: function of that name in each module; never edit one that has shipped.
STEPS: tuple[str, ...] = (
    "m001_initial",
    "m002_directory",
    "m003_events_and_turns",
    "m004_keyword_index_without_pending_list",
    "m005_negated_rows",
    "m006_invitations",
    "m007_session_order",
    "m008_metadata_index",
    "m009_working_by_session",
    "m010_invitation_names",
    "m011_keyword_analysis",
    "m012_access_keys",
    "m013_keyword_rules",
    "m014_memory_log",
)


#: Meta keys of the JSON tables of API keys and console sessions before step 12
#: (``m012_access_keys`` moves their rows into tables of their own).
KEYS_META = "api_keys"
SESSIONS_META = "console_sessions"
#: Columns of ``api_keys`` (after its ``digest``) and ``console_sessions``.
KEY_COLUMNS = ("id", "name", "admin", "created_at", "identity_id", "identity_kind",
               "identity_name")  # fmt: skip
SESSION_COLUMNS = ("digest", "key_digest", "created_at", "expires_at")


def move_access_rows(
    execute: Callable[[str, tuple[Any, ...]], Any], mark: str, flag: Callable[[bool], Any]
) -> None:
    """Step 12 on either backend: the API keys and console sessions that lived as JSON
    in ``meta`` become rows of ``api_keys`` and ``console_sessions`` (``mark`` is the
    parameter marker, ``flag`` a boolean as the backend stores it); the meta rows go.
    Entries that are not objects are dropped, as reading them always did."""
    import json

    def load(key: str) -> dict[str, Any]:
        row = execute(f"SELECT value FROM meta WHERE key = {mark}", (key,)).fetchone()
        data = json.loads(row[0]) if row and row[0] else {}
        return data if isinstance(data, dict) else {}

    marks = ", ".join([mark] * (len(KEY_COLUMNS) + 1))
    for digest, key in load(KEYS_META).items():
        if isinstance(key, dict):
            values = [key.get(c) for c in KEY_COLUMNS]
            values[0] = values[0] or digest[:12]
            values[1] = values[1] or values[0]
            values[2] = flag(bool(values[2]))
            values[3] = values[3] or ""
            execute(f"INSERT INTO api_keys (digest, {', '.join(KEY_COLUMNS)}) VALUES ({marks})",
                    (digest, *values))  # fmt: skip
    marks = ", ".join([mark] * len(SESSION_COLUMNS))
    for digest, session in load(SESSIONS_META).items():
        if isinstance(session, dict):
            row = (digest, str(session.get("key")), str(session.get("created_at") or ""),
                   str(session.get("expires_at") or ""))  # fmt: skip
            execute(f"INSERT INTO console_sessions ({', '.join(SESSION_COLUMNS)}) "
                    f"VALUES ({marks})", row)  # fmt: skip
    execute(f"DELETE FROM meta WHERE key IN ({mark}, {mark})", (KEYS_META, SESSIONS_META))


def ordered(functions: Mapping[str, Any]) -> list[Any]:
    """A backend's steps in :data:`STEPS` order, from its module's ``globals()``."""
    return [functions[name] for name in STEPS]


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


def change(name: str) -> str:
    """What a migration changes: its name without the number (``m005_negated_rows``
    -> ``negated_rows``), the same whatever number it had."""
    head, _, rest = name.partition("_")
    return rest if head[:1] == "m" and head[1:].isdigit() and rest else name


class Plan(NamedTuple):
    """What :func:`plan` found: the applied rows to renumber, then the steps to run."""

    #: ``(old version, new version, new name)`` of each row recorded under an old
    #: number.
    renames: list[tuple[int, int, str]]
    #: ``(version, step)`` of each step not applied yet, in order.
    missing: list[tuple[int, Any]]


def plan(applied: Sequence[tuple[int, str]], steps: Sequence[Step], where: str) -> Plan:
    """Match the ``(version, name)`` rows of ``schema_migrations`` to ``steps``
    (step N is version N). A row whose change is a step under another number is
    renumbered to it; a step whose change no row records is missing. A store whose
    schema is newer than ``steps`` is refused first (nothing written). Rows this
    code does not know keep their number (and count as applied)."""
    refuse_newer(max((v for v, _ in applied), default=0), len(steps), where)
    numbers = {change(step.__name__): n for n, step in enumerate(steps, start=1)}
    renames = []
    done = set()
    for version, name in applied:
        number = numbers.get(change(name), version)
        if number != version:
            renames.append((version, number, steps[number - 1].__name__))
        done.add(number)
    missing = [(n, step) for n, step in enumerate(steps, start=1) if n not in done]
    return Plan(renames, missing)


def renumber(
    execute: Callable[[str, tuple[Any, ...]], Any],
    renames: Sequence[tuple[int, int, str]],
    mark: str,
) -> None:
    """Apply :attr:`Plan.renames` to ``schema_migrations`` (``mark`` is the dialect's
    parameter marker). The rows first move to negative versions, so that two rows
    never hold one version on the way (it is the primary key)."""
    for old, _, _ in renames:
        execute(
            f"UPDATE schema_migrations SET version = {mark} WHERE version = {mark}", (-old, old)
        )
    for old, new, name in renames:
        execute(
            f"UPDATE schema_migrations SET version = {mark}, name = {mark} WHERE version = {mark}",
            (new, name, -old),
        )
