"""libpq keyword/value connection strings (``host=db dbname=mem user=me``): told
apart from a file path, so that a PostgreSQL store can be named either way and a
mistyped one never becomes a SQLite file named after its password. No psycopg here:
the ``[postgres]`` extra may be missing when a location is read."""

from __future__ import annotations

import re

from ..errors import ValidationError

#: The keywords of a libpq connection string (PostgreSQL's "Parameter Key Words"),
#: and memchentic's own ``schema`` and ``pool_max`` (as in a store URL's query).
LIBPQ_KEYWORDS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile",
    "require_auth", "channel_binding", "connect_timeout", "client_encoding", "options",
    "application_name", "fallback_application_name", "keepalives", "keepalives_idle",
    "keepalives_interval", "keepalives_count", "tcp_user_timeout", "replication",
    "gssencmode", "sslmode", "requiressl", "sslnegotiation", "sslcompression", "sslcert",
    "sslkey", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni",
    "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname",
    "gsslib", "gssdelegation", "service", "target_session_attrs", "load_balance_hosts",
    "schema", "pool_max",
})  # fmt: skip
#: One ``keyword = value`` of a libpq connection string; a value is a bare word or
#: single-quoted with backslash escapes.
_LIBPQ_PAIR = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']*))")


def libpq_pairs(location: str) -> dict[str, str] | None:
    """The ``keyword: value`` pairs of ``location`` when the whole of it is written as
    libpq ``keyword=value`` pairs ("host=db dbname=mem user=me"), else None."""
    pairs: dict[str, str] = {}
    at, end = 0, len(location.rstrip())
    while at < end:
        found = _LIBPQ_PAIR.match(location, at)
        if found is None or found.end() == at:
            return None
        quoted = found.group(2)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else found.group(3)
        pairs[found.group(1).lower()] = value
        at = found.end()
    return pairs or None


def is_libpq_string(location: str) -> bool:
    """Whether ``location`` is a libpq keyword/value connection string (a PostgreSQL
    store, as a ``postgresql://`` URL is): ``keyword=value`` pairs, one of them a
    keyword libpq knows.

    :raises ValidationError: such pairs with a keyword libpq does not know (named; no
        value is echoed, a password least of all)."""
    pairs = libpq_pairs(location) if "://" not in location else None
    if pairs is None or not set(pairs) & LIBPQ_KEYWORDS:
        return False
    unknown = sorted(set(pairs) - LIBPQ_KEYWORDS)
    if unknown:
        raise ValidationError(
            "store", f"reads as a PostgreSQL connection string (keyword=value) but "
            f"{', '.join(unknown)} is no libpq keyword",
        )  # fmt: skip
    return True
