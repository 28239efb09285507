"""The exception tree of memchentic.

::

    MemchenticError                  root; ``str()`` is a message fit for a user
    ├── ValidationError              bad input: carries ``field`` and ``rule``
    │   ├── NamespaceError           malformed or unknown namespace
    │   └── LimitError               more work than a limit allows: names the ``setting``
    ├── NotFoundError                no such memory (or one the caller cannot see)
    ├── ForbiddenError               the caller sees the memory but may not change it
    ├── StoreError                   the store cannot be opened or used
    │   ├── NotAStoreError           the file is not a memchentic store
    │   ├── SchemaTooNewError        the store was written by a newer memchentic
    │   ├── StoreCorruptError        the store's file is damaged (names the file)
    │   ├── EmbedderMismatchError    the store was built with another embedder
    │   └── StoreTimeoutError        a statement ran past its time budget (names the ``setting``)
    ├── EmbedderError                the embedder failed or is unavailable
    ├── AuthError                    the server refused the API key (HTTP 401)
    └── ServerError                  any other error answer of the HTTP API (``status``)

Nothing here shadows a builtin (no ``MemoryError``).
"""

from __future__ import annotations


class MemchenticError(Exception):
    """Root of every error memchentic raises on purpose."""

    #: A stable machine-readable code, also used by the HTTP API.
    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class ValidationError(MemchenticError, ValueError):
    """Input that breaks a rule; names the field and the rule."""

    code = "invalid"

    def __init__(self, field: str, rule: str, message: str | None = None) -> None:
        self.field = field
        self.rule = rule
        super().__init__(message or f"{field}: {rule}")

    def to_dict(self) -> dict[str, str]:
        return {**super().to_dict(), "field": self.field, "rule": self.rule}


class NamespaceError(ValidationError):
    """A namespace that is malformed, unknown, or not allowed here."""

    code = "invalid_namespace"


class LimitError(ValidationError):
    """A call that asks for more work than a limit allows (lines per ``learn``, writes
    per call); ``setting`` names the setting that sets it, ``limit`` its value. The
    HTTP API answers 413."""

    code = "limit_exceeded"

    def __init__(self, field: str, setting: str, limit: int, got: int, what: str = "items") -> None:
        self.setting = setting
        self.limit = limit
        rule = f"at most {limit} {what} per call ({setting}), got {got}"
        super().__init__(field, rule)

    def to_dict(self) -> dict[str, str]:
        return {**super().to_dict(), "setting": self.setting, "limit": str(self.limit)}


class NotFoundError(MemchenticError, KeyError):
    """No memory with that id, or one the caller may not see (same answer)."""

    code = "not_found"

    def __init__(self, memory_id: str) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory not found: {memory_id}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class ForbiddenError(MemchenticError):
    """The caller can read the memory but may not change it."""

    code = "forbidden"

    def __init__(self, memory_id: str, message: str | None = None) -> None:
        self.memory_id = memory_id
        super().__init__(message or f"you may not change memory {memory_id}")


class StoreError(MemchenticError):
    """The store cannot be opened or used."""

    code = "store_error"


class NotAStoreError(StoreError):
    """The file exists but is not a memchentic store."""

    code = "not_a_store"


class SchemaTooNewError(StoreError):
    """The store's schema is newer than this code knows: opening it is refused
    (before anything is written), never downgraded or written to."""

    code = "schema_too_new"


class StoreCorruptError(StoreError):
    """The store's file is damaged (a malformed page); the message names the file."""

    code = "store_corrupt"


class EmbedderMismatchError(StoreError):
    """The store was built with another embedding model or dimension."""

    code = "embedder_mismatch"


class StoreTimeoutError(StoreError):
    """A store statement ran past its time budget (``STATEMENT_TIMEOUT_SECONDS``) and
    was stopped; what it would have written is not kept, and the store goes on
    serving. ``setting`` names the setting, ``limit`` its value in seconds. The HTTP
    API answers 503 (``store_timeout``)."""

    code = "store_timeout"

    def __init__(self, limit: float, setting: str = "STATEMENT_TIMEOUT_SECONDS") -> None:
        self.setting = setting
        self.limit = limit
        super().__init__(
            f"the store stopped a statement that ran longer than {limit:g} s ({setting}); "
            "ask for less (a narrower filter, a smaller page) or raise the setting"
        )

    def to_dict(self) -> dict[str, str]:
        return {**super().to_dict(), "setting": self.setting, "limit": f"{self.limit:g}"}


class EmbedderError(MemchenticError):
    """The embedder is unavailable or answered badly."""

    code = "embedder_error"


class AuthError(MemchenticError):
    """The HTTP API refused the request's API key (missing, unknown or revoked)."""

    code = "unauthorized"


class ServerError(MemchenticError):
    """An error answer of the HTTP API that no other class describes (an admin-only
    route, a body over the size limit, a server fault); ``code`` comes from the answer."""

    def __init__(self, message: str, *, code: str = "error", status: int = 500) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class ChatError(MemchenticError):
    """The chat model could not be reached or answered badly."""

    code = "chat_error"
