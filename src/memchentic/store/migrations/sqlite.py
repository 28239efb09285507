"""SQLite schema migrations: ordered named functions, recorded in ``schema_migrations``.

Add a migration by appending its name to ``STEPS`` (in ``__init__``) and a
function ``mNNN_name(conn)`` of that name here and in ``postgres.py`` (a no-op on
the backend that does not need it); never edit one that has shipped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ...clock import to_text, utcnow
from . import move_access_rows, ordered, plan, renumber

TOKENIZER = "porter unicode61 remove_diacritics 2"

#: The SQL function (registered on every connection of the store, see
#: ``SQLiteStore._connect``) that gives text as the keyword index reads it:
#: :func:`memchentic.text.keyword_text` (CJK runs as bigrams).
KEYWORD_FUNCTION = "memchentic_keywords"


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run statements one by one (``executescript`` would commit the open transaction)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            conn.execute(pending)
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete statement in migration: {pending[:80]!r}")


def m001_initial(conn: sqlite3.Connection) -> None:
    run_script(
        conn,
        f"""
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            kind TEXT NOT NULL,
            type TEXT NOT NULL,
            content TEXT NOT NULL,
            title TEXT,
            tier_l0 TEXT,
            tier_l1 TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            path_hint TEXT,
            repo TEXT,
            entities TEXT NOT NULL DEFAULT '[]',
            slot_key TEXT,
            user_id TEXT,
            agent_id TEXT,
            session_id TEXT,
            confidence REAL NOT NULL,
            reinforcement INTEGER NOT NULL,
            importance REAL NOT NULL,
            polarity INTEGER NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            valid_from TEXT,
            valid_to TEXT,
            expires_at TEXT,
            recall_count INTEGER NOT NULL DEFAULT 0,
            last_recalled_at TEXT,
            superseded_by TEXT,
            metadata TEXT NOT NULL DEFAULT '{{}}'
        );
        CREATE INDEX ix_memories_namespace ON memories(namespace, created_at);
        CREATE INDEX ix_memories_type ON memories(type);
        CREATE INDEX ix_memories_expires ON memories(expires_at);
        CREATE INDEX ix_memories_user ON memories(user_id);
        CREATE UNIQUE INDEX ix_memories_slot ON memories(namespace, slot_key)
            WHERE slot_key IS NOT NULL;

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            title, content, tags,
            content='memories', content_rowid='rowid', tokenize='{TOKENIZER}'
        );
        CREATE VIRTUAL TABLE memories_fts_terms USING fts5vocab(memories_fts, row);
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, title, content, tags)
            VALUES (new.rowid, new.title, new.content, new.tags);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.rowid, old.title, old.content, old.tags);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF title, content, tags ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.rowid, old.title, old.content, old.tags);
            INSERT INTO memories_fts(rowid, title, content, tags)
            VALUES (new.rowid, new.title, new.content, new.tags);
        END;

        -- Vectors beside the rows (float32 bytes), and the log that keeps
        -- every process's in-memory index in step with them.
        CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
        CREATE TABLE vector_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER NOT NULL, op TEXT NOT NULL
        );
        CREATE TRIGGER vectors_ai AFTER INSERT ON vectors BEGIN
            INSERT INTO vector_log(key, op) VALUES (new.rowid, 'upsert');
        END;
        CREATE TRIGGER vectors_au AFTER UPDATE ON vectors BEGIN
            INSERT INTO vector_log(key, op) VALUES (new.rowid, 'upsert');
        END;
        CREATE TRIGGER vectors_ad AFTER DELETE ON vectors BEGIN
            INSERT INTO vector_log(key, op) VALUES (old.rowid, 'delete');
        END;

        CREATE TABLE edges (
            id TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            target TEXT NOT NULL,
            kind TEXT NOT NULL,
            strength REAL NOT NULL,
            created_at TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{{}}'
        );
        CREATE INDEX ix_edges_source ON edges(source, kind);
        CREATE INDEX ix_edges_target ON edges(target, kind);

        CREATE TABLE versions (
            memory_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            op TEXT NOT NULL,
            actor TEXT NOT NULL,
            at TEXT NOT NULL,
            changes TEXT NOT NULL,
            snapshot TEXT,
            PRIMARY KEY (memory_id, version)
        );

        CREATE TABLE memory_entities (
            entity TEXT NOT NULL,
            key INTEGER NOT NULL,
            PRIMARY KEY (entity, key)
        );
        CREATE INDEX ix_memory_entities_key ON memory_entities(key);
        """,
    )


def m002_directory(conn: sqlite3.Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE identities (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (kind, name)
        );
        CREATE TABLE teams (
            id TEXT NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (kind, id),
            UNIQUE (kind, name)
        );
        CREATE TABLE memberships (
            team_kind TEXT NOT NULL,
            team_id TEXT NOT NULL,
            identity_id TEXT NOT NULL,
            role TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (team_kind, team_id, identity_id)
        );
        CREATE INDEX ix_memberships_identity ON memberships(identity_id);
        CREATE TABLE grants (
            id TEXT PRIMARY KEY,
            namespace TEXT NOT NULL,
            grantee TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (namespace, grantee)
        );
        CREATE INDEX ix_grants_grantee ON grants(grantee);
        """,
    )


def m003_events_and_turns(conn: sqlite3.Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            type TEXT NOT NULL,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            namespace TEXT,
            memory_id TEXT,
            payload TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX ix_events_at ON events(at);
        CREATE TABLE turns (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT NOT NULL,
            namespace TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            at TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX ix_turns_session ON turns(session_id, seq);
        """,
    )


def m004_keyword_index_without_pending_list(conn: sqlite3.Connection) -> None:
    """PostgreSQL's step 4 (its GIN keyword index's pending list). FTS5 has no such
    list, so nothing changes here; the step is recorded so that a schema version
    means the same changes on both backends. Before issue 23 this backend had no
    step 4, and its later steps were numbered one lower (see ``migrations``)."""


def m005_negated_rows(conn: sqlite3.Connection) -> None:
    """The rows whose polarity is not affirmative, found without a scan (each
    process keeps an index of their vectors for the bulk write check), and a
    change of polarity logged as a vector change so those indexes follow it.

    No longer read since issue 21 (that in-process index is gone); the index and
    the trigger stay, since removing them needs a migration."""
    run_script(
        conn,
        """
        CREATE INDEX ix_memories_negated ON memories(polarity) WHERE polarity != 1;
        CREATE TRIGGER memories_polarity_au AFTER UPDATE OF polarity ON memories
        WHEN old.polarity IS NOT new.polarity BEGIN
            INSERT INTO vector_log(key, op) VALUES (new.rowid, 'upsert');
        END;
        """,
    )


def m006_invitations(conn: sqlite3.Connection) -> None:
    """Pending team invitations: an identity joins a team another identity names
    only when it accepts (issue 20, item 2)."""
    run_script(
        conn,
        """
        CREATE TABLE invitations (
            team_kind TEXT NOT NULL,
            team_id TEXT NOT NULL,
            identity_id TEXT NOT NULL,
            role TEXT NOT NULL,
            invited_by TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (team_kind, team_id, identity_id)
        );
        CREATE INDEX ix_invitations_identity ON invitations(identity_id);
        """,
    )


def m007_session_order(conn: sqlite3.Connection) -> None:
    """Each session's memories in (created_at, id) order, for the search's
    conversation context: a candidate's previous and next memory are a step along
    it (``Store.session_lines``; issue 22, item 4). Only rows with a session; with
    ``expires_at``, which every search filters on, so a search whose filter is a
    namespace and the expiry reads the index alone."""
    conn.execute(
        "CREATE INDEX ix_memories_session "
        "ON memories(namespace, session_id, created_at, id, expires_at) WHERE session_id <> ''"
    )


def m008_metadata_index(conn: sqlite3.Connection) -> None:
    """PostgreSQL's step 8 (a GIN index of metadata). SQLite has no index of a JSON
    document's keys; metadata filters read the rows the rest of the filter leaves
    (a namespace, the expiry), so nothing changes here; the step is recorded so
    that a schema version means the same changes on both backends."""


def m009_working_by_session(conn: sqlite3.Connection) -> None:
    """Memories of one type in one namespace, by session, newest last: working memory
    is read by session along it, one namespace at a time, not found in a window of
    the newest memories, which another writer could flood; and the working memories
    an identity holds in a namespace are counted along it (the cap of issue 32,
    item 3)."""
    conn.execute(
        "CREATE INDEX ix_memories_working ON memories(type, namespace, session_id, created_at, id)"
    )


def m010_invitation_names(conn: sqlite3.Connection) -> None:
    """Invitations keep the invitee as the inviter named it, and are found by their
    inviter: a team's admins list its pending invitations (an invitation to a name
    no identity has is kept too, so the list does not tell who exists), and an
    identity may have only so many pending (issue 32, items 4 and 9)."""
    conn.execute("ALTER TABLE invitations ADD COLUMN named TEXT")
    conn.execute("CREATE INDEX ix_invitations_inviter ON invitations(invited_by)")


def m011_keyword_analysis(conn: sqlite3.Connection) -> None:
    """The keyword index reads the memories as :func:`memchentic.text.keyword_text`
    gives them (CJK runs as overlapping bigrams; issue 34, item 1), and is rebuilt.

    Triggers cannot run Python, so the text goes through the SQL function
    ``memchentic_keywords`` that every connection of the store registers; the
    index's external content is the view ``memories_keywords`` (the same text), so
    FTS5's ``rebuild`` and ``integrity-check`` read what the triggers wrote. Text
    without CJK is unchanged by the function: English stores index as before. A
    connection without the function (the sqlite3 shell) cannot write memories."""
    run_script(
        conn,
        f"""
        DROP TRIGGER IF EXISTS memories_fts_ai;
        DROP TRIGGER IF EXISTS memories_fts_ad;
        DROP TRIGGER IF EXISTS memories_fts_au;
        DROP TABLE IF EXISTS memories_fts_terms;
        DROP TABLE IF EXISTS memories_fts;
        DROP VIEW IF EXISTS memories_keywords;
        CREATE VIEW memories_keywords AS SELECT rowid AS key,
            {KEYWORD_FUNCTION}(title) AS title, {KEYWORD_FUNCTION}(content) AS content,
            {KEYWORD_FUNCTION}(tags) AS tags FROM memories;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            title, content, tags,
            content='memories_keywords', content_rowid='key', tokenize='{TOKENIZER}'
        );
        CREATE VIRTUAL TABLE memories_fts_terms USING fts5vocab(memories_fts, row);
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, title, content, tags)
            VALUES (new.rowid, {KEYWORD_FUNCTION}(new.title), {KEYWORD_FUNCTION}(new.content),
                    {KEYWORD_FUNCTION}(new.tags));
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.rowid, {KEYWORD_FUNCTION}(old.title),
                    {KEYWORD_FUNCTION}(old.content), {KEYWORD_FUNCTION}(old.tags));
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF title, content, tags ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.rowid, {KEYWORD_FUNCTION}(old.title),
                    {KEYWORD_FUNCTION}(old.content), {KEYWORD_FUNCTION}(old.tags));
            INSERT INTO memories_fts(rowid, title, content, tags)
            VALUES (new.rowid, {KEYWORD_FUNCTION}(new.title), {KEYWORD_FUNCTION}(new.content),
                    {KEYWORD_FUNCTION}(new.tags));
        END;
        INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
        """,
    )


def m012_access_keys(conn: sqlite3.Connection) -> None:
    """API keys and console sessions in tables of their own (issue 35, item 2): they
    were JSON documents in ``meta``, read and written whole on each change; their
    rows move here (:func:`~.move_access_rows`). Hashes only, as before. The tables
    are made only where missing: a store renumbered from before issue 23 may run
    this step again (tests/test_store_files.py)."""
    run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS api_keys (
            digest TEXT PRIMARY KEY,
            id TEXT NOT NULL,
            name TEXT NOT NULL,
            admin INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            identity_id TEXT,
            identity_kind TEXT,
            identity_name TEXT
        );
        CREATE INDEX IF NOT EXISTS ix_api_keys_id ON api_keys(id);
        CREATE TABLE IF NOT EXISTS console_sessions (
            digest TEXT PRIMARY KEY,
            key_digest TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS ix_console_sessions_key ON console_sessions(key_digest);
        """,
    )
    move_access_rows(conn.execute, "?", int)


def m013_keyword_rules(conn: sqlite3.Connection) -> None:
    """The store records the keyword rules its index is written with (meta
    ``keyword_rules``; issue 33, item 4) and adopts the default ones
    (:data:`memchentic.text.ACTIVE_KEYWORD_RULES`), its index rebuilt with them.

    Triggers delete a memory's entries by analysing its text again, so an index
    read with other rules than it was written with is left malformed. The rebuild
    reads the memories through ``memchentic_keywords``, which ``SQLiteStore._open``
    gives these rules before the steps run (a store without recorded rules takes
    the default ones), in the store's recorded language."""
    from ...text import ACTIVE_KEYWORD_RULES
    from ..keywords import RULES_KEY, rules_value

    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (RULES_KEY, rules_value(ACTIVE_KEYWORD_RULES)),
    )
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")


def m014_memory_log(conn: sqlite3.Connection) -> None:
    """A log of the memories' rows written (issue 36): triggers record the rowid
    of every row inserted, updated or deleted, so a connection that keeps the
    ranking columns in memory (``sqlite_state``) reads again only the rows
    changed since it last looked, whoever wrote them, instead of every row after
    any other connection's commit. The log keeps its last 100,000 entries (a
    reader further behind reads the rows whole)."""
    run_script(conn, MEMORY_LOG)


#: Step 14's table and triggers (also what ``m014_memory_log`` runs).
MEMORY_LOG = """
    CREATE TABLE IF NOT EXISTS memory_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER NOT NULL
    );
    CREATE TRIGGER IF NOT EXISTS memory_log_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memory_log(key) VALUES (new.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS memory_log_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memory_log(key) VALUES (old.rowid);
        INSERT INTO memory_log(key) SELECT new.rowid WHERE new.rowid != old.rowid;
    END;
    CREATE TRIGGER IF NOT EXISTS memory_log_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memory_log(key) VALUES (old.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS memory_log_prune AFTER INSERT ON memory_log
    WHEN new.seq % 1000 = 0 BEGIN
        DELETE FROM memory_log WHERE seq <= new.seq - 100000;
    END;
"""


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = ordered(globals())


def migrate(conn: sqlite3.Connection, where: str = "") -> int:
    """Apply the missing migrations; the caller holds a write transaction. A store
    whose schema is newer than these migrations is refused (``SchemaTooNewError``,
    ``where`` names it) before anything is applied; rows of steps recorded under
    their numbers before issue 23 are renumbered first (:func:`~.plan`)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    applied = conn.execute("SELECT version, name FROM schema_migrations").fetchall()
    steps = plan(applied, MIGRATIONS, where)
    renumber(conn.execute, steps.renames, "?")
    for number, step in steps.missing:
        step(conn)
        conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
            (number, step.__name__, to_text(utcnow())),
        )
    return len(MIGRATIONS)
