"""PostgreSQL schema migrations: ordered named functions, recorded in ``schema_migrations``.

Step N is the SQLite migrations' step N (a step one backend does not need is a
no-op there, as ``m004`` is on SQLite), so a schema version means the same
changes on both. Add a migration by appending its name to ``STEPS`` (in
``__init__``) and a function ``mNNN_name(conn)`` of that name here and in
``sqlite.py``; never edit one that has shipped.

:func:`migrate` runs under a session advisory lock keyed on the store's schema,
so two processes opening the same store at once apply each step exactly once.
The vector index is not a migration: its dimension is only known once an
embedder is chosen (see ``postgres.PostgresStore.set_meta``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...clock import utcnow
from ...text import CJK_RUN
from . import move_access_rows, ordered, plan, renumber

#: The text search configuration of the keyword index: the English snowball
#: stemmer without a stopword list (stopwords stay searchable, as in SQLite).
TS_CONFIG = "memchentic_english"

#: A CJK character, as a PostgreSQL regular expression (the ranges of
#: :data:`memchentic.text.CJK_RUN`).
CJK_CLASS = "[" + CJK_RUN.pattern[1:-2] + "]"


def m001_initial(conn: Any) -> None:
    conn.execute(
        f"""
        CREATE TABLE IF NOT EXISTS meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);

        CREATE TEXT SEARCH DICTIONARY memchentic_stem (TEMPLATE = snowball, LANGUAGE = english);
        CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = pg_catalog.english);
        ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG}
            ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
            WITH memchentic_stem;

        CREATE TABLE memories (
            key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id text COLLATE "C" NOT NULL UNIQUE,
            namespace text COLLATE "C" NOT NULL,
            kind text COLLATE "C" NOT NULL,
            type text COLLATE "C" NOT NULL,
            content text NOT NULL,
            title text,
            tier_l0 text,
            tier_l1 text,
            tags jsonb NOT NULL DEFAULT '[]',
            path_hint text COLLATE "C",
            repo text COLLATE "C",
            entities jsonb NOT NULL DEFAULT '[]',
            slot_key text COLLATE "C",
            user_id text COLLATE "C",
            agent_id text COLLATE "C",
            session_id text COLLATE "C",
            confidence double precision NOT NULL,
            reinforcement integer NOT NULL,
            importance double precision NOT NULL,
            polarity integer NOT NULL,
            pinned boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            valid_from timestamptz,
            valid_to timestamptz,
            expires_at timestamptz,
            recall_count integer NOT NULL DEFAULT 0,
            last_recalled_at timestamptz,
            superseded_by text COLLATE "C",
            metadata jsonb NOT NULL DEFAULT '{{}}',
            -- title (A), body (B) and tags (C), tokenised as the store writes them
            tsv tsvector NOT NULL
        ) WITH (fillfactor = 90);
        CREATE INDEX ix_memories_namespace ON memories (namespace, created_at);
        CREATE INDEX ix_memories_type ON memories (type);
        CREATE INDEX ix_memories_expires ON memories (expires_at);
        CREATE INDEX ix_memories_user ON memories (user_id);
        CREATE INDEX ix_memories_superseded ON memories (superseded_by)
            WHERE superseded_by IS NOT NULL;
        CREATE INDEX ix_memories_tags ON memories USING gin (tags jsonb_path_ops);
        CREATE INDEX ix_memories_tsv ON memories USING gin (tsv);
        CREATE UNIQUE INDEX ix_memories_slot ON memories (namespace, slot_key)
            WHERE slot_key IS NOT NULL;

        -- Vectors beside the rows: updates of a row (a recall count) never touch
        -- the HNSW graph. The column has no fixed dimension; the index casts.
        CREATE TABLE memory_vectors (
            key bigint PRIMARY KEY REFERENCES memories (key) ON DELETE CASCADE,
            embedding vector NOT NULL
        );

        -- Document frequency of each index term, and under '' the row count:
        -- the statistics keyword ranking needs, without scanning the index.
        -- Triggers append each row's term changes to term_pending; the store folds
        -- them into term_docs once per transaction (memchentic_flush_terms), so a
        -- batch of writes updates each common term's row once, not once a write.
        CREATE TABLE term_docs (term text COLLATE "C" PRIMARY KEY, docs bigint NOT NULL);
        CREATE INDEX ix_term_docs_gone ON term_docs (term) WHERE docs <= 0;
        CREATE TABLE term_pending (term text COLLATE "C" NOT NULL, delta integer NOT NULL);
        CREATE FUNCTION memchentic_count_terms() RETURNS trigger
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                INSERT INTO term_pending (term, delta)
                SELECT lexeme, -1 FROM unnest(OLD.tsv)
                UNION ALL SELECT '', -1 WHERE TG_OP = 'DELETE';
            END IF;
            IF TG_OP <> 'DELETE' THEN
                INSERT INTO term_pending (term, delta)
                SELECT lexeme, 1 FROM unnest(NEW.tsv)
                UNION ALL SELECT '', 1 WHERE TG_OP = 'INSERT';
            END IF;
            RETURN NULL;
        END $$;
        CREATE FUNCTION memchentic_flush_terms() RETURNS void
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
            WITH moved AS (DELETE FROM term_pending RETURNING term, delta),
                 sums AS (SELECT term, sum(delta) AS delta FROM moved
                          GROUP BY term HAVING sum(delta) <> 0)
            INSERT INTO term_docs AS t (term, docs) SELECT term, delta FROM sums
            ON CONFLICT (term) DO UPDATE SET docs = t.docs + excluded.docs;
            DELETE FROM term_docs WHERE docs <= 0;  -- no trace of deleted words
        END $$;
        CREATE TRIGGER memories_terms_ai AFTER INSERT ON memories
            FOR EACH ROW EXECUTE FUNCTION memchentic_count_terms();
        CREATE TRIGGER memories_terms_ad AFTER DELETE ON memories
            FOR EACH ROW EXECUTE FUNCTION memchentic_count_terms();
        CREATE TRIGGER memories_terms_au AFTER UPDATE OF tsv ON memories
            FOR EACH ROW WHEN (OLD.tsv IS DISTINCT FROM NEW.tsv)
            EXECUTE FUNCTION memchentic_count_terms();

        CREATE TABLE edges (
            id text COLLATE "C" PRIMARY KEY,
            source text COLLATE "C" NOT NULL,
            target text COLLATE "C" NOT NULL,
            kind text COLLATE "C" NOT NULL,
            strength double precision NOT NULL,
            created_at timestamptz NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{{}}'
        );
        CREATE INDEX ix_edges_source ON edges (source, kind);
        CREATE INDEX ix_edges_target ON edges (target, kind);

        CREATE TABLE versions (
            memory_id text COLLATE "C" NOT NULL,
            version integer NOT NULL,
            op text NOT NULL,
            actor text NOT NULL,
            at timestamptz NOT NULL,
            changes jsonb NOT NULL,
            snapshot jsonb,
            PRIMARY KEY (memory_id, version)
        );

        CREATE TABLE memory_entities (
            entity text COLLATE "C" NOT NULL,
            key bigint NOT NULL REFERENCES memories (key) ON DELETE CASCADE,
            PRIMARY KEY (entity, key)
        );
        CREATE INDEX ix_memory_entities_key ON memory_entities (key);
        """
    )


def m002_directory(conn: Any) -> None:
    conn.execute(
        """
        CREATE TABLE identities (
            id text COLLATE "C" PRIMARY KEY,
            kind text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            created_at timestamptz NOT NULL,
            UNIQUE (kind, name)
        );
        CREATE TABLE teams (
            id text COLLATE "C" NOT NULL,
            kind text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            created_at timestamptz NOT NULL,
            PRIMARY KEY (kind, id),
            UNIQUE (kind, name)
        );
        CREATE TABLE memberships (
            team_kind text COLLATE "C" NOT NULL,
            team_id text COLLATE "C" NOT NULL,
            identity_id text COLLATE "C" NOT NULL,
            role text COLLATE "C" NOT NULL,
            active boolean NOT NULL DEFAULT true,
            PRIMARY KEY (team_kind, team_id, identity_id)
        );
        CREATE INDEX ix_memberships_identity ON memberships (identity_id);
        CREATE TABLE grants (
            id text COLLATE "C" PRIMARY KEY,
            namespace text COLLATE "C" NOT NULL,
            grantee text COLLATE "C" NOT NULL,
            created_at timestamptz NOT NULL,
            UNIQUE (namespace, grantee)
        );
        CREATE INDEX ix_grants_grantee ON grants (grantee);
        """
    )


def m003_events_and_turns(conn: Any) -> None:
    conn.execute(
        """
        CREATE TABLE events (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id text COLLATE "C" NOT NULL UNIQUE,
            type text COLLATE "C" NOT NULL,
            at timestamptz NOT NULL,
            actor text NOT NULL,
            namespace text COLLATE "C",
            memory_id text COLLATE "C",
            payload jsonb NOT NULL DEFAULT '{}'
        );
        CREATE INDEX ix_events_at ON events (at);
        CREATE TABLE turns (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id text COLLATE "C" NOT NULL UNIQUE,
            session_id text COLLATE "C" NOT NULL,
            namespace text COLLATE "C" NOT NULL,
            role text NOT NULL,
            content text NOT NULL,
            at timestamptz NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{}'
        );
        CREATE INDEX ix_turns_session ON turns (session_id, seq);
        """
    )


def m004_keyword_index_without_pending_list(conn: Any) -> None:
    """Writes go straight into the keyword index's posting lists. With GIN's
    ``fastupdate`` they first went to a pending list that every keyword search
    scanned whole; recall counts (an update of each returned row) kept it growing
    between vacuums: about 110 pages and a millisecond a search at 100k rows."""
    conn.execute("ALTER INDEX ix_memories_tsv SET (fastupdate = off)")
    conn.execute("SELECT gin_clean_pending_list('ix_memories_tsv'::regclass)")


def m005_negated_rows(conn: Any) -> None:
    """The rows whose polarity is not affirmative, found without a scan (the bulk
    write check of affirmative writes that keep duplicates reads them).

    No longer read since issue 21; the index stays, since removing it needs a
    migration."""
    conn.execute("CREATE INDEX ix_memories_negated ON memories (key) WHERE polarity <> 1")


def m006_invitations(conn: Any) -> None:
    """Pending team invitations: an identity joins a team another identity names
    only when it accepts (issue 20, item 2)."""
    conn.execute(
        """
        CREATE TABLE invitations (
            team_kind text COLLATE "C" NOT NULL,
            team_id text COLLATE "C" NOT NULL,
            identity_id text COLLATE "C" NOT NULL,
            role text COLLATE "C" NOT NULL,
            invited_by text COLLATE "C",
            created_at timestamptz NOT NULL,
            PRIMARY KEY (team_kind, team_id, identity_id)
        );
        CREATE INDEX ix_invitations_identity ON invitations (identity_id);
        """
    )


def m007_session_order(conn: Any) -> None:
    """Each session's memories in (created_at, id) order, for the search's
    conversation context: a candidate's previous and next memory are a step along
    it (``Store.session_lines``; issue 22, item 4). Only rows with a session; with
    ``expires_at``, which every search filters on, so a search whose filter is a
    namespace and the expiry can read the index alone."""
    conn.execute(
        "CREATE INDEX ix_memories_session ON memories (namespace, session_id, created_at, id) "
        "INCLUDE (expires_at) WHERE session_id <> ''"
    )


def m008_metadata_index(conn: Any) -> None:
    """Metadata filters (issue 24, item 2) find their rows through a GIN index of
    ``metadata`` (``jsonb_path_ops``: containment, ``@>``, which each condition of a
    filter also asks), not by reading every row."""
    conn.execute(
        "CREATE INDEX ix_memories_metadata ON memories USING gin (metadata jsonb_path_ops)"
    )


def m009_working_by_session(conn: Any) -> None:
    """Memories of one type in one namespace, by session, newest last: working memory
    is read by session along it, one namespace at a time, not found in a window of
    the newest memories, which another writer could flood; and the working memories
    an identity holds in a namespace are counted along it (the cap of issue 32,
    item 3)."""
    conn.execute(
        "CREATE INDEX ix_memories_working ON memories (type, namespace, session_id, created_at, id)"
    )


def m010_invitation_names(conn: Any) -> None:
    """Invitations keep the invitee as the inviter named it, and are found by their
    inviter: a team's admins list its pending invitations (an invitation to a name
    no identity has is kept too, so the list does not tell who exists), and an
    identity may have only so many pending (issue 32, items 4 and 9)."""
    conn.execute('ALTER TABLE invitations ADD COLUMN named text COLLATE "C"')
    conn.execute("CREATE INDEX ix_invitations_inviter ON invitations (invited_by)")


#: A row's keyword entry from its title ``a``, body ``b`` and tags ``t`` in the
#: text search configuration ``c`` (as ``PostgresStore._tsv_sql``).
_TSV = (
    "setweight(to_tsvector(%(c)s::regconfig, %(a)s), 'A') "
    "|| setweight(to_tsvector(%(c)s::regconfig, %(b)s), 'B') "
    "|| setweight(to_tsvector(%(c)s::regconfig, %(t)s), 'C')"
)


def _ts_config(conn: Any) -> str:
    """The store's text search configuration, schema-qualified."""
    return str(
        conn.execute(
            "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.cfgname) "
            "FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace "
            "WHERE c.cfgname = %s AND n.nspname = current_schema()",
            (TS_CONFIG,),
        ).fetchone()[0]
    )


def m011_keyword_analysis(conn: Any) -> None:
    """The keyword entries of memories with CJK text are written again from the text
    as :func:`memchentic.text.keyword_text` gives it (CJK runs as overlapping
    bigrams; issue 34, item 1). Other rows' entries are what they would be written
    as now (the function leaves their text unchanged), so only rows holding a CJK
    character are read, in key order, and rewritten; the term counts follow
    (their triggers, then one fold)."""
    from ..postgres_rows import index_text  # the store's own writer of keyword text

    config = _ts_config(conn)
    none: frozenset[str] = frozenset()  # the rules of the day (none)
    last = 0
    while True:
        rows = conn.execute(
            "SELECT key, title, content, tags FROM memories "
            "WHERE key > %s AND concat(title, ' ', content, ' ', tags::text) ~ %s "
            "ORDER BY key LIMIT 1000",
            (last, CJK_CLASS),
        ).fetchall()
        if not rows:
            break
        for key, title, content, tags in rows:
            conn.execute(
                f"UPDATE memories SET tsv = {_TSV} WHERE key = %(k)s",
                {
                    "c": config,
                    "a": index_text(title, rules=none),
                    "b": index_text(content, rules=none),
                    "t": index_text(" ".join(tags or []), rules=none),
                    "k": key,
                },
            )
        last = rows[-1][0]
    conn.execute("SELECT memchentic_flush_terms()")


def m012_access_keys(conn: Any) -> None:
    """API keys and console sessions in tables of their own (issue 35, item 2): they
    were JSON documents in ``meta``, read and written whole on each change; their
    rows move here (:func:`~.move_access_rows`). Hashes only, as before. The tables
    are made only where missing: a store renumbered from before issue 23 may run
    this step again (tests/test_store_files.py)."""
    conn.execute(
        'CREATE TABLE IF NOT EXISTS api_keys (digest text COLLATE "C" PRIMARY KEY, '
        'id text COLLATE "C" NOT NULL, name text NOT NULL, admin boolean NOT NULL, '
        'created_at text COLLATE "C" NOT NULL, identity_id text, identity_kind text, '
        "identity_name text)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS ix_api_keys_id ON api_keys (id)")
    conn.execute(
        'CREATE TABLE IF NOT EXISTS console_sessions (digest text COLLATE "C" PRIMARY KEY, '
        'key_digest text COLLATE "C" NOT NULL, created_at text COLLATE "C" NOT NULL, '
        'expires_at text COLLATE "C" NOT NULL)'
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS ix_console_sessions_key ON console_sessions (key_digest)"
    )
    move_access_rows(conn.execute, "%s", bool)


#: Rows a keyword rule may change hold this (a case-sensitive POSIX regular
#: expression): a superset of the tokens :func:`memchentic.text.keyword_text`'s
#: rule rewrites.
RULE_ROWS = {
    "identifiers": "[a-z0-9][A-Z]|[A-Z]{2}[a-z]",  # text._CAMEL's condition
    "elongations": r"([[:alpha:]])\1\1",  # text._RUN
}


def m013_keyword_rules(conn: Any) -> None:
    """The store records the keyword rules its index is written with (meta
    ``keyword_rules``; issue 33, item 4) and adopts the default ones
    (:data:`memchentic.text.ACTIVE_KEYWORD_RULES`). The keyword entries of the
    rows the rules change are written again, as :func:`m011_keyword_analysis` did
    for CJK: only rows that may hold what a rule rewrites (:data:`RULE_ROWS`) are
    read, in key order, and those whose text the rules change rewritten, in the
    store's recorded language; the term counts follow."""
    from ...text import ACTIVE_KEYWORD_RULES
    from ..keywords import LANGUAGE_KEY, RULES_KEY, rules_value
    from ..postgres_rows import index_text

    row = conn.execute("SELECT value FROM meta WHERE key = %s", (LANGUAGE_KEY,)).fetchone()
    language, rules = (row[0] if row else "english"), ACTIVE_KEYWORD_RULES
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        (RULES_KEY, rules_value(rules)),
    )
    patterns = [RULE_ROWS[name] for name in sorted(rules) if name in RULE_ROWS]
    if not patterns:
        return
    config, last = _ts_config(conn), 0
    condition = " OR ".join(["concat(title, ' ', content, ' ', tags::text) ~ %s"] * len(patterns))
    while True:
        rows = conn.execute(
            f"SELECT key, title, content, tags FROM memories "
            f"WHERE key > %s AND ({condition}) ORDER BY key LIMIT 1000",
            (last, *patterns),
        ).fetchall()
        if not rows:
            break
        for key, title, content, tags in rows:
            texts = (title, content, " ".join(tags or []))
            new = [index_text(text, language, rules) for text in texts]
            if new != [index_text(text, language, frozenset()) for text in texts]:
                conn.execute(
                    f"UPDATE memories SET tsv = {_TSV} WHERE key = %(k)s",
                    {"c": config, "a": new[0], "b": new[1], "t": new[2], "k": key},
                )
        last = rows[-1][0]
    conn.execute("SELECT memchentic_flush_terms()")


def m014_memory_log(conn: Any) -> None:
    """Nothing on PostgreSQL: step 14 gives SQLite a log of the memories' rows
    written, which its per-connection search state reads (``sqlite_state``);
    PostgreSQL's searches read the rows in the database."""


MIGRATIONS: list[Callable[[Any], None]] = ordered(globals())


def migrate(conn: Any, lock_key: int, where: str = "") -> int:
    """Apply the missing migrations on an autocommit connection whose search path
    starts with the store's schema. Each step commits with its record in
    ``schema_migrations``; a session advisory lock on ``lock_key`` keeps two
    processes from running the same step. Returns the schema version. A store whose
    schema is newer than these migrations is refused (``SchemaTooNewError``, ``where``
    names it) before anything is applied; rows of steps recorded under another
    number are renumbered first (:func:`~.plan`)."""
    conn.execute("SELECT pg_advisory_lock(%s)", (lock_key,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)"
        )
        applied = conn.execute("SELECT version, name FROM schema_migrations").fetchall()
        steps = plan(applied, MIGRATIONS, where)
        if steps.renames:
            with conn.transaction():
                renumber(conn.execute, steps.renames, "%s")
        for number, step in steps.missing:
            with conn.transaction():
                step(conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                    (number, step.__name__, utcnow()),
                )
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key,))
    return len(MIGRATIONS)
