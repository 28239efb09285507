"""One settings object for every knob of docs/design.md, section 11.

Each field is read from the environment under its documented name (``RRF_K``)
and also under the ``MEMCHENTIC_`` prefixed name (``MEMCHENTIC_RRF_K``); the
prefixed name wins when both are set. Code can pass values directly:
``Settings(rrf_k=40)`` or ``Memory(settings=Settings(...))``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import annotated_types as at
from pydantic import AliasChoices, Field, ValidationInfo, field_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from .choices import DuplicatePolicy, KeywordLanguage, Profile, SecretPolicy, WriteResolver
from .errors import ValidationError


def _env(name: str, default: Any, description: str, **kw: Any) -> Any:
    """A field readable as ``NAME`` or ``MEMCHENTIC_NAME`` (prefixed wins)."""
    return Field(
        default,
        validation_alias=AliasChoices(f"MEMCHENTIC_{name}", name, name.lower()),
        description=description,
        **kw,
    )


#: Fields the environment sets under their prefixed name only. Environment names
#: match without regard to case, so the field name ``home`` would read the shell's
#: ``$HOME`` and put the default store at ``$HOME/memory.db`` (issue 20, item 8).
_PREFIXED_ONLY = {"home": "MEMCHENTIC_HOME"}

#: Bounds several numeric settings share (each has its own: :func:`bounds_rule`): a date
#: MAX_DAYS from now, forward or back, is within years 1-9999 and within a caller's own
#: ``ttl_days`` (1,000,000); rows and bytes are sizes no store or request comes near.
MAX_DAYS, MAX_HOURS, MAX_WEIGHT, MAX_ROWS, MAX_BYTES = 365_000, 24 * 365_000, 1000, 10**9, 1 << 30


class _EnvSource(EnvSettingsSource):
    """The environment, with :data:`_PREFIXED_ONLY` fields read by their prefixed
    name alone (code still passes ``Settings(home=...)``)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        name = _PREFIXED_ONLY.get(field_name)
        if name is None:
            return super().get_field_value(field, field_name)
        return self.env_vars.get(name if self.case_sensitive else name.lower()), name, False


class Settings(BaseSettings):
    """Every tunable of memchentic with its documented default."""

    model_config = SettingsConfigDict(
        extra="ignore", populate_by_name=True, validate_assignment=True, allow_inf_nan=False
    )

    # --- locations and components -------------------------------------------------
    home: Path = Field(
        Path("~/.memchentic"),
        # The environment sets it as MEMCHENTIC_HOME only (see _EnvSource).
        validation_alias=AliasChoices("MEMCHENTIC_HOME", "home"),
        description="Folder of the default store (MEMCHENTIC_HOME; default ~/.memchentic).",
    )
    store_url: str | None = _env("STORE_URL", None, "Store path or URL; default: <home>/memory.db.")
    embedder: str | None = _env(
        "EMBEDDER", None,
        "hash | local (alias minilm) | static | openai; default: the one the store was "
        "built with, else local if installed, else hash.",
    )  # fmt: skip
    openai_base_url: str = _env(
        "OPENAI_BASE_URL", "https://api.openai.com/v1", "Base URL of an embeddings endpoint.",
    )  # fmt: skip
    openai_api_key: str | None = _env("OPENAI_API_KEY", None, "Key for the endpoint.")
    openai_embedding_model: str = _env(
        "OPENAI_EMBEDDING_MODEL", "text-embedding-3-small", "Embedding model name.",
    )  # fmt: skip
    openai_embedding_dimension: int | None = _env(
        "OPENAI_EMBEDDING_DIMENSION", None, "Vector size; probed when unset.", ge=1, le=65_536,
    )  # fmt: skip
    chat_base_url: str | None = _env(
        "CHAT_BASE_URL", None, "OpenAI-compatible chat endpoint (ask, learn); unset = none.",
    )  # fmt: skip
    chat_model: str = _env("CHAT_MODEL", "gpt-4o-mini", "Chat model name.")
    chat_api_key: str | None = _env("CHAT_API_KEY", None, "Key for the chat endpoint.")
    ask_min_similarity: float = _env(
        "ASK_MIN_SIMILARITY", 0.35,
        "ask() cites a search hit only when it matched the question's words or its cosine "
        "reaches this (tuned on the local MiniLM model); none left = cannot answer.", ge=-1, le=1,
    )  # fmt: skip
    local_embedder_threads: int = _env(
        "LOCAL_EMBEDDER_THREADS", 0,
        "Intra-op threads of the local model (ONNX Runtime's for its session; torch's, "
        "process-wide, on torch); 0 = the physical cores, at most 4 (torch: its default, "
        "one per core); memchentic serve uses 1 a worker unless given.", ge=0, le=1024,
    )  # fmt: skip
    local_embedder_runtime: Literal["onnx", "torch"] = _env(
        "LOCAL_EMBEDDER_RUNTIME", "onnx",
        "What runs the local model: onnx (ONNX Runtime, exported once from the same "
        "weights into EMBEDDER_CACHE_DIR; torch where it cannot load) or torch.",
    )  # fmt: skip
    embedder_cache_dir: str | None = _env(
        "EMBEDDER_CACHE_DIR", None,
        "Where the static embedder's table and the local model's ONNX export are made on "
        "first use and kept; default "
        "$XDG_CACHE_HOME/memchentic (~/.cache/memchentic).",
    )  # fmt: skip
    hash_embedding_dimension: int = _env(
        "HASH_EMBEDDING_DIMENSION", 384, "Vector size of the hashing embedder.", ge=8, le=65_536,
    )  # fmt: skip

    # --- ranking (docs/design.md, section 3) -------------------------------------------------
    search_profile: Profile = _env("SEARCH_PROFILE", "rrf", "Default ranking profile.")
    rrf_k: float = _env("RRF_K", 60.0, "Reciprocal rank fusion constant.", gt=0, le=1e6)
    search_recency_half_life_days: float = _env(
        "SEARCH_RECENCY_HALF_LIFE_DAYS", 30.0, "H in freshness = 1/(1 + age/H).", gt=0, le=MAX_DAYS,
    )  # fmt: skip
    search_path_boost: float = _env(
        "SEARCH_PATH_BOOST", 0.15, "Boost when path hints match.", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    search_guide_confidence_weight: float = _env(
        "SEARCH_GUIDE_CONFIDENCE_WEIGHT", 0.1, "confidence = 1 + w x c for guides.", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    memory_usage_score_weight: float = _env(
        "MEMORY_USAGE_SCORE_WEIGHT", 0.05, "usage = 1 + W x ln(1 + recall_count).", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    search_default_limit: int = _env(
        "SEARCH_DEFAULT_LIMIT", 20, "Results when no limit is given.", ge=1, le=100,
    )  # fmt: skip
    search_max_limit: int = _env(
        "SEARCH_MAX_LIMIT", 100, "Larger limits are clamped.", ge=1, le=10_000,
    )  # fmt: skip
    knn_overfetch_multiplier: int = _env(
        "KNN_OVERFETCH_MULTIPLIER", 3, "Candidates per stage = limit x this.", ge=1, le=1000,
    )  # fmt: skip
    search_min_similarity: float = _env(
        "SEARCH_MIN_SIMILARITY", 0.0,
        "Vector candidates need a cosine above this (unrelated texts stay out).", ge=-1, le=1,
    )  # fmt: skip
    search_title_weight: float = _env(
        "SEARCH_TITLE_WEIGHT", 3.0, "BM25 weight of the title relative to the body (1).", gt=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    keyword_language: KeywordLanguage = _env(
        "KEYWORD_LANGUAGE", "english",
        "The language the keyword index stems in (a snowball language: danish, dutch, "
        "english, finnish, french, german, hungarian, italian, norwegian, portuguese, "
        "romanian, russian, spanish, swedish, turkish). Recorded in a new store when it "
        "is created; a store keeps its language (see docs/ranking.md, 'Keyword analysis').",
    )  # fmt: skip
    search_common_term_docs: int = _env(
        "SEARCH_COMMON_TERM_DOCS", 20000,
        "A query word in more memories than this is 'common' (see docs/ranking.md).", ge=1,
        le=MAX_ROWS,
    )  # fmt: skip
    search_common_window: int = _env(
        "SEARCH_COMMON_WINDOW", 1000,
        "Queries of only common words rank the newest this-many matches.", ge=1, le=1_000_000,
    )  # fmt: skip
    search_exact_vector_rows: int = _env(
        "SEARCH_EXACT_VECTOR_ROWS", 20000,
        "Filtered searches over at most this many rows scan vectors exactly.", ge=0, le=MAX_ROWS,
    )  # fmt: skip
    search_isolated_scan_rows: int = _env(
        "SEARCH_ISOLATED_SCAN_ROWS", 500,
        "Untrusted callers who see at most this many memories get keyword matches from "
        "their own rows, not the shared index (no timing from other namespaces).", ge=0,
        le=1_000_000,
    )  # fmt: skip
    hybrid_vector_weight: float = _env(
        "HYBRID_VECTOR_WEIGHT", 0.55, "hybrid: vector.", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    hybrid_keyword_weight: float = _env(
        "HYBRID_KEYWORD_WEIGHT", 0.25, "hybrid: keywords.", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    hybrid_recency_weight: float = _env(
        "HYBRID_RECENCY_WEIGHT", 0.1, "hybrid: recency.", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    hybrid_importance_weight: float = _env(
        "HYBRID_IMPORTANCE_WEIGHT", 0.1, "hybrid: importance.", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    memory_selroute_enabled: bool = _env(
        "MEMORY_SELROUTE_ENABLED", False, "Query router: boost types matching the query kind.",
    )  # fmt: skip
    memory_selroute_boost: float = _env(
        "MEMORY_SELROUTE_BOOST", 0.2, "Router boost for a matching type.", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    memory_hybrid_enabled: bool = _env(
        "MEMORY_HYBRID_ENABLED", False, "Keyword boost for the cosine_decay profile.",
    )  # fmt: skip
    memory_hybrid_keyword_boost: float = _env(
        "MEMORY_HYBRID_KEYWORD_BOOST", 0.1, "cosine_decay keyword boost weight.", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    memory_reranker_enabled: bool = _env(
        "MEMORY_RERANKER_ENABLED", False, "Rerank the top candidates with the reranker.",
    )  # fmt: skip
    search_rerank: bool = _env(
        "SEARCH_RERANK", True,
        "Second stage: reorder the first SEARCH_RERANK_DEPTH candidates by what their text says.",
    )  # fmt: skip
    search_rerank_depth: int = _env(
        "SEARCH_RERANK_DEPTH", 20, "Candidates the second stage reorders (the first N, any limit).",
        ge=1, le=10_000,
    )  # fmt: skip
    search_rerank_coverage_weight: float = _env(
        "SEARCH_RERANK_COVERAGE_WEIGHT", 0.25,
        "rerank_coverage = 1 + this x the IDF-weighted share of the query's words present.", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    search_rerank_proximity_weight: float = _env(
        "SEARCH_RERANK_PROXIMITY_WEIGHT", 0.5,
        "rerank_proximity = 1 + this x the share of the query's words in one 8-word window.", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    search_rerank_phrase_weight: float = _env(
        "SEARCH_RERANK_PHRASE_WEIGHT", 0.25,
        "rerank_phrase = 1 + this x the share of the query's word pairs found adjacent.", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    search_rerank_entity_weight: float = _env(
        "SEARCH_RERANK_ENTITY_WEIGHT", 0.0,
        "rerank_entities = 1 + this x the share of the query's names and numbers present.", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    search_rerank_answer_weight: float = _env(
        "SEARCH_RERANK_ANSWER_WEIGHT", 0.1,
        "rerank_answer = 1 + this when the memory states what the question asks for (who, "
        "where, when, how many).", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    search_rerank_role_gate: float = _env(
        "SEARCH_RERANK_ROLE_GATE", 0.0,
        "Second stage, in a user/assistant chat: when the query speaks of one role ('what did "
        "I say'), the word signals of the other role's turns count this much (0 = not at "
        "all, 1 = as much).", ge=0, le=1,
    )  # fmt: skip
    search_candidate_floor: int = _env(
        "SEARCH_CANDIDATE_FLOOR", 100,
        "Each candidate stage fetches at least this many (limit x multiplier if more).", ge=1,
        le=100_000,
    )  # fmt: skip
    search_keyword_min_ratio: float = _env(
        "SEARCH_KEYWORD_MIN_RATIO", 0.25,
        "Keyword candidates need at least this share of the best keyword score (0 = all).", ge=0,
        le=1,
    )  # fmt: skip
    search_context_weight: float = _env(
        "SEARCH_CONTEXT_WEIGHT", 0.5,
        "Stage score + this x the best adjacent same-session memory's score (0 = off).", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    search_context_gap_hours: float = _env(
        "SEARCH_CONTEXT_GAP_HOURS", 6.0,
        "Adjacent memories of one session count as context within this many hours.", ge=0,
        le=MAX_HOURS,
    )  # fmt: skip
    search_speaker_boost: float = _env(
        "SEARCH_SPEAKER_BOOST", 0.25,
        "speaker = 1 + this when the query names who said the memory, else 1.", ge=0, le=MAX_WEIGHT,
    )  # fmt: skip
    search_date_boost: float = _env(
        "SEARCH_DATE_BOOST", 0.5,
        "date = 1 + this when the memory's time is in a date the query names, else 1.", ge=0,
        le=MAX_WEIGHT,
    )  # fmt: skip
    search_role_persons: bool = _env(
        "SEARCH_ROLE_PERSONS", True,
        "Speaker cue: a first-person query names memories of role user, second person assistant.",
    )  # fmt: skip
    search_relative_dates: bool = _env(
        "SEARCH_RELATIVE_DATES", True,
        "Date cue: relative phrases (yesterday, two weeks ago) name dates from the time asked.",
    )  # fmt: skip
    search_episodic_recency_days: float = _env(
        "SEARCH_EPISODIC_RECENCY_DAYS", 3650.0,
        "Recency scale of episodic memories: horizon = (1 + age/H)/(1 + age/this); 0 = H.", ge=0,
        le=MAX_DAYS,
    )  # fmt: skip

    # --- write path (docs/design.md, section 4) ---------------------------------------------
    near_dup_threshold: float = _env(
        "NEAR_DUP_THRESHOLD", 0.92, "Cosine at which an entry is a near duplicate.", ge=0, le=1,
    )  # fmt: skip
    dedup_threshold: float = _env(
        "DEDUP_THRESHOLD", 0.9, "Cosine at which the reinforce policy reinforces.", ge=0, le=1,
    )  # fmt: skip
    contradiction_threshold: float = _env(
        "CONTRADICTION_THRESHOLD", 0.8, "Cosine at which opposite polarity supersedes.", ge=0, le=1,
    )  # fmt: skip
    update_threshold: float = _env(
        "UPDATE_THRESHOLD", 0.4,
        "Cosine from which a stored entry is compared with a new one as a possible update, "
        "contradiction or duplicate (the words decide; docs/decisions.md).", ge=0, le=1,
    )  # fmt: skip
    write_resolver: WriteResolver = _env(
        "WRITE_RESOLVER", "rules",
        "Who decides duplicates and updates: rules (no network) or chat (the chat model at "
        "CHAT_BASE_URL, the rules when it fails).",
    )  # fmt: skip
    guide_merge_threshold: float = _env(
        "GUIDE_MERGE_THRESHOLD", 0.92, "Cosine at which a guide merges into another.", ge=0, le=1,
    )  # fmt: skip
    duplicate_policy: DuplicatePolicy = _env(
        "DUPLICATE_POLICY", "refuse", "What a near-duplicate entry does by default.",
    )  # fmt: skip
    secret_policy: SecretPolicy = _env(
        "SECRET_POLICY", "refuse", "Secrets in content: refuse, redact or allow.",
    )  # fmt: skip
    auto_edge_max: int = _env(
        "AUTO_EDGE_MAX", 3, "Most edges one write adds with auto_edges=True.", ge=0, le=1000,
    )  # fmt: skip
    auto_edge_related_similarity: float = _env(
        "AUTO_EDGE_RELATED_SIMILARITY", 0.6, "Auto-edges: cosine for related_to.", ge=0, le=1,
    )  # fmt: skip
    auto_edge_supports_similarity: float = _env(
        "AUTO_EDGE_SUPPORTS_SIMILARITY", 0.75, "Auto-edges: cosine for supports.", ge=0, le=1,
    )  # fmt: skip
    write_neighbours: int = _env(
        "WRITE_NEIGHBOURS", 8, "Nearest memories compared on each write.", ge=1, le=10_000,
    )  # fmt: skip

    # --- lifetime (docs/design.md, section 6) -----------------------------------------------
    memory_default_ttl_days: float = _env(
        "MEMORY_DEFAULT_TTL_DAYS", 90.0, "Expiry of a memory saved without ttl.", ge=0, le=MAX_DAYS,
    )  # fmt: skip
    record_default_ttl_days: float = _env(
        "RECORD_DEFAULT_TTL_DAYS", 0.0,
        "Expiry of a record of what was said (episodic, on_duplicate=keep, role or speaker "
        "in metadata) saved without ttl (0 = never).", ge=0, le=MAX_DAYS,
    )  # fmt: skip
    memory_ttl_extend_days: float = _env(
        "MEMORY_TTL_EXTEND_DAYS", 90.0, "E: a recall extends expiry to now + E.", ge=0, le=MAX_DAYS,
    )  # fmt: skip
    memory_max_ttl_days: float = _env(
        "MEMORY_MAX_TTL_DAYS", 730.0, "M: ceiling created + M (0 = none).", ge=0, le=MAX_DAYS,
    )  # fmt: skip
    memory_ttl_touch_debounce_hours: float = _env(
        "MEMORY_TTL_TOUCH_DEBOUNCE_HOURS", 6.0, "At most one recall count per this.", ge=0,
        le=MAX_HOURS,
    )  # fmt: skip
    memory_decay_half_life_days: float = _env(
        "MEMORY_DECAY_HALF_LIFE_DAYS", 30.0, "Half-life of confidence decay.", gt=0, le=MAX_DAYS,
    )  # fmt: skip
    memory_decay_floor: float = _env(
        "MEMORY_DECAY_FLOOR", 0.05, "gc deletes memories decayed below this.", ge=0, le=1,
    )  # fmt: skip
    memory_gc_retention_days: float = _env(
        "MEMORY_GC_RETENTION_DAYS", 30.0, "gc deletes memories expired longer than this.", ge=0,
        le=MAX_DAYS,
    )  # fmt: skip

    # --- context, sessions, learning, events (docs/design.md, sections 7 and 8) ----------------
    context_tokenizer: str = _env(
        "CONTEXT_TOKENIZER", "auto",
        "auto (tiktoken cl100k_base when installed, else estimate), estimate, or a "
        "tiktoken encoding name.",
    )  # fmt: skip
    context_search_limit: int = _env(
        "CONTEXT_SEARCH_LIMIT", 30, "Search hits a context sorts into its sections.", ge=1, le=100,
    )  # fmt: skip
    context_section_limit: int = _env(
        "CONTEXT_SECTION_LIMIT", 20, "Most items of a listed (not searched) section.", ge=1,
        le=10_000,
    )  # fmt: skip
    context_recent_turns: int = _env(
        "CONTEXT_RECENT_TURNS", 10, "Turns of the session shown in a context.", ge=0, le=10_000,
    )  # fmt: skip
    context_graph_seeds: int = _env(
        "CONTEXT_GRAPH_SEEDS", 3, "Top hits whose graph neighbours fill 'graph relations'.", ge=0,
        le=1000,
    )  # fmt: skip
    context_fill_tokens_per_hit: int = _env(
        "CONTEXT_FILL_TOKENS_PER_HIT", 40,
        "With a budget, a context searches for at least budget / this many hits, so a large "
        "budget is filled (0: CONTEXT_SEARCH_LIMIT only).", ge=0, le=1_000_000,
    )  # fmt: skip
    context_excerpt_over_chars: int = _env(
        "CONTEXT_EXCERPT_OVER_CHARS", 1200,
        "Under a budget, a search hit longer than this is offered as its best passage, "
        "an excerpt naming its memory (0 = always whole).", ge=0, le=MAX_BYTES,
    )  # fmt: skip
    context_excerpt_chars: int = _env(
        "CONTEXT_EXCERPT_CHARS", 400, "Most characters of an excerpt's passage.", ge=80,
        le=1_000_000,
    )  # fmt: skip
    context_duplicate_cosine: float = _env(
        "CONTEXT_DUPLICATE_COSINE", 0.0,
        "A search hit this close (vector cosine) to a better one of its session that is "
        "shown is left out of a context (0, the default: never).", ge=0, le=1,
    )  # fmt: skip
    session_summary_min_turns: int = _env(
        "SESSION_SUMMARY_MIN_TURNS", 4, "maintain() summarises sessions with this many turns.",
        ge=1, le=1_000_000,
    )  # fmt: skip
    session_summary_max_turns: int = _env(
        "SESSION_SUMMARY_MAX_TURNS", 200, "Last turns of a session a summary reads.", ge=1,
        le=1_000_000,
    )  # fmt: skip
    session_summary_sentences: int = _env(
        "SESSION_SUMMARY_SENTENCES", 6, "Sentences the extractive summariser keeps.", ge=1,
        le=10_000,
    )  # fmt: skip
    working_memory_ttl_days: float = _env(
        "WORKING_MEMORY_TTL_DAYS", 1.0, "Expiry of add_working() memories (0 = never).", ge=0,
        le=MAX_DAYS,
    )  # fmt: skip
    working_memory_max_per_identity: int = _env(
        "WORKING_MEMORY_MAX_PER_IDENTITY", 1000,
        "Live working memories one identity may hold in a namespace others share (a group "
        "or an org; not its own): a write over it is refused (issue 32, item 3).", ge=1,
        le=MAX_ROWS,
    )  # fmt: skip
    max_groups_per_identity: int = _env(
        "MAX_GROUPS_PER_IDENTITY", 100,
        "Groups an identity may administer and still create another (issue 32, item 4).", ge=1,
        le=1_000_000,
    )  # fmt: skip
    max_pending_invitations_per_identity: int = _env(
        "MAX_PENDING_INVITATIONS_PER_IDENTITY", 100,
        "Pending invitations an identity may have out, to names known or not: one more "
        "is refused until some are accepted, declined or withdrawn (issue 32, item 4).", ge=1,
        le=1_000_000,
    )  # fmt: skip
    events_retention_days: float = _env(
        "EVENTS_RETENTION_DAYS", 30.0, "maintain() prunes older events (0 = keep all).", ge=0,
        le=MAX_DAYS,
    )  # fmt: skip

    # --- server (memchentic serve) --------------------------------------------------------
    server_max_request_bytes: int = _env(
        "SERVER_MAX_REQUEST_BYTES", 2 * 1024 * 1024, "Larger request bodies get 413.", ge=1024,
        le=MAX_BYTES,
    )  # fmt: skip
    server_events_poll_seconds: float = _env(
        "SERVER_EVENTS_POLL_SECONDS", 0.5, "How often /v1/events looks for new events.", gt=0,
        le=3600,
    )  # fmt: skip
    server_events_key_recheck_seconds: float = _env(
        "SERVER_EVENTS_KEY_RECHECK_SECONDS", 5.0,
        "An open event stream re-checks its key (or console session) this often while idle, "
        "and before each batch it delivers; it ends once the key is revoked.", gt=0, le=3600,
    )  # fmt: skip
    server_console_session_hours: float = _env(
        "SERVER_CONSOLE_SESSION_HOURS", 12.0, "A console sign-in lasts this long at most.", gt=0,
        le=24 * 366,
    )  # fmt: skip
    server_console_sessions_per_key: int = _env(
        "SERVER_CONSOLE_SESSIONS_PER_KEY", 20,
        "Console sessions kept per API key; a new sign-in ends the oldest beyond this.", ge=1,
        le=10_000,
    )  # fmt: skip
    server_metrics: bool = _env(
        "SERVER_METRICS", True, "Serve Prometheus metrics at /metrics (docs/observability.md).",
    )  # fmt: skip
    server_metrics_public: bool = _env(
        "SERVER_METRICS_PUBLIC", False,
        "/metrics answers without an API key (default: an admin key is needed).",
    )  # fmt: skip
    log_format: Literal["text", "json"] = _env(
        "LOG_FORMAT", "text",
        "How `memchentic serve` and the CLI log: text, or json (one JSON object a line).",
    )  # fmt: skip

    # --- limits ----------------------------------------------------------------------
    max_content_bytes: int = _env(
        "MAX_CONTENT_BYTES", 64 * 1024, "Largest content accepted (UTF-8 bytes).", ge=1,
        le=MAX_BYTES,
    )  # fmt: skip
    max_query_chars: int = _env(
        "MAX_QUERY_CHARS", 8192, "Longer search queries are refused (context() truncates).", ge=1,
        le=MAX_BYTES,
    )  # fmt: skip
    list_max_limit: int = _env(
        "LIST_MAX_LIMIT", 1000, "Most memories one list() page may ask for.", ge=1, le=1_000_000,
    )  # fmt: skip
    max_tags: int = _env("MAX_TAGS", 64, "Tags per memory.", ge=0, le=10_000)
    max_metadata_bytes: int = _env(
        "MAX_METADATA_BYTES", 64 * 1024, "Metadata JSON size.", ge=2, le=MAX_BYTES,
    )  # fmt: skip
    secure_delete: bool = _env(
        "SECURE_DELETE", True,
        "SQLite: overwrite deleted content in the file and empty the WAL after each "
        "write that deleted some (docs/reliability.md).",
    )  # fmt: skip
    max_metadata_depth: int = _env(
        "MAX_METADATA_DEPTH", 32,
        "Deepest nesting of objects and lists in metadata (memory, edge and turn metadata).", ge=1,
        le=200,
    )  # fmt: skip
    filter_max_terms: int = _env(
        "FILTER_MAX_TERMS", 1024,
        "Terms one metadata filter may hold, all levels together: a condition counts one, "
        "an in/nin list one per value (each list at most 256, at most 64 conditions).", ge=1,
        le=64 * 256,
    )  # fmt: skip
    statement_timeout_seconds: float = _env(
        "STATEMENT_TIMEOUT_SECONDS", 10.0,
        "Time budget of each store statement a call runs (SQLite: a progress handler; "
        "PostgreSQL: statement_timeout); past it the statement is stopped with "
        "StoreTimeoutError. Maintenance (migrations, check, index builds, backups) has "
        "none. 0 = no budget.", ge=0, le=86_400,
    )  # fmt: skip
    slot_history_max_entries: int = _env(
        "SLOT_HISTORY_MAX_ENTRIES", 20,
        "Replaced values a slot keeps in metadata['history'] (oldest dropped; versions keep all).",
        ge=0, le=10_000,
    )  # fmt: skip
    slot_history_max_bytes: int = _env(
        "SLOT_HISTORY_MAX_BYTES", 16 * 1024,
        "JSON size of a slot's metadata['history'] (also within MAX_METADATA_BYTES).", ge=0,
        le=MAX_BYTES,
    )  # fmt: skip
    max_writes_per_call: int = _env(
        "MAX_WRITES_PER_CALL", 1000,
        "Writes one call (one HTTP request) may make: add_many items, manage operations, "
        "memories one learn writes.", ge=1, le=1_000_000,
    )  # fmt: skip
    learn_max_lines: int = _env(
        "LEARN_MAX_LINES", 500, "Lines (all messages together) one learn call reads.", ge=1,
        le=1_000_000,
    )  # fmt: skip
    learn_max_chars: int = _env(
        "LEARN_MAX_CHARS", 128 * 1024, "Characters (all messages) one learn call reads.", ge=1,
        le=MAX_BYTES,
    )  # fmt: skip
    default_user_id: str = _env("DEFAULT_USER_ID", "default", "User of writes that name no scope.")

    @field_validator("*", mode="wrap")
    @classmethod
    def _bounded(cls, value: Any, handler: Any, info: ValidationInfo) -> Any:
        """A number out of its bounds (``inf``, ``nan``, ``1e7`` days, ``ten``): the bounds."""
        try:
            return handler(value)
        except PydanticValidationError:
            rule = bounds_rule(info.field_name or "")
            if rule is None:
                raise
            raise PydanticCustomError("bounds", "must be {rule}", {"rule": rule}) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _EnvSource(settings_cls), dotenv_settings, file_secret_settings

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser()

    @property
    def default_store(self) -> str:
        return self.store_url or str(self.home_path / "memory.db")


def env_name(field: str) -> str:
    """The documented name (in the environment) of the setting ``field``: ``RRF_K``."""
    return _PREFIXED_ONLY.get(field, field.upper())


def bounds_rule(field: str) -> str | None:
    """What the numeric setting ``field`` must be (``a number from 0 to 365000 (days)``);
    None for a setting of another type."""
    info = Settings.model_fields.get(field)
    if info is None or info.annotation not in (int, float, int | None, float | None):
        return None
    low = next(m for m in info.metadata if isinstance(m, at.Ge | at.Gt))
    high = next(m.le for m in info.metadata if isinstance(m, at.Le))
    start = f"over {low.gt:g} and at most" if isinstance(low, at.Gt) else f"from {low.ge:g} to"
    kind = "a whole number" if info.annotation in (int, int | None) else "a number"
    unit = field.rpartition("_")[2]
    unit = f" ({unit})" if unit in ("days", "hours", "seconds") else ""
    return f"{kind} {start} {high:.15g}{unit}" + (" or unset" if info.default is None else "")


def load_settings(**values: Any) -> Settings:
    """Settings from the environment (and ``values``); a bad value raises our
    :class:`~memchentic.errors.ValidationError` naming the setting as the environment
    does (``MEMORY_DEFAULT_TTL_DAYS``) and, for a number, its bounds."""
    try:
        return Settings(**values)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "settings"
        field = where.lower().removeprefix("memchentic_")
        name = env_name(field) if field in Settings.model_fields else where
        raise ValidationError(name, first.get("msg", "invalid value")) from None
