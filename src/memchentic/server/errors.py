"""Every error of the HTTP API is JSON with a stable code:
``{"error": {"code": "not_found", "message": "...", "field": "..."}}``.

Library errors keep their :attr:`~memchentic.errors.MemchenticError.code` and
message, so a memory the caller may not see answers exactly like a missing one
(404, ``not_found``, the library's message). Bad input is a 422 naming the field;
an unexpected fault is a 500 with no detail (the traceback goes to the log only).
A store failure keeps its code (503) but not its message, which may quote our SQL,
a file path or the driver's words: the caller gets :data:`STORE_FAILED`, the log
the detail (:func:`caller_message`, used by the MCP server and the console too).
A statement stopped by its time budget is a 503 ``store_timeout`` naming
``STATEMENT_TIMEOUT_SECONDS``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import (
    AuthError,
    EmbedderError,
    ForbiddenError,
    LimitError,
    MemchenticError,
    NotFoundError,
    StoreError,
    StoreTimeoutError,
    ValidationError,
)

log = logging.getLogger("memchentic.server")

#: HTTP status of each library error class (the first match in this order wins).
STATUS: tuple[tuple[type[MemchenticError], int], ...] = (
    (AuthError, 401),
    (NotFoundError, 404),
    (ForbiddenError, 403),
    (LimitError, 413),  # more work than a setting allows
    (ValidationError, 422),
    (StoreTimeoutError, 503),  # a statement ran past STATEMENT_TIMEOUT_SECONDS
    (StoreError, 503),
    (EmbedderError, 502),
)
#: Codes of the HTTP errors that Starlette raises itself (unknown route, wrong method...).
HTTP_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
}


class ApiError(Exception):
    """An error of the HTTP layer itself (no library class fits): admin-only routes,
    missing keys, bodies over the limit."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


#: What a remote caller is told of a store failure (the detail goes to the log).
STORE_FAILED = "the store failed; the server's log has the details"


def caller_message(exc: MemchenticError) -> str:
    """The message a remote caller (HTTP, MCP, the console) gets for ``exc``: the
    library's own, except for a store failure, whose message may quote SQL, a file
    path or the driver's words; that detail is logged here instead."""
    if isinstance(exc, StoreError) and not isinstance(exc, StoreTimeoutError):
        log.error("store failure (%s): %s", exc.code, exc.message, exc_info=exc)
        return STORE_FAILED
    return exc.message


def admin_required() -> ApiError:
    return ApiError(403, "admin_required", "this needs an admin API key")


def body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON body of an error answer."""
    return {"error": {"code": code, "message": message, **extra}}


def _json(
    status: int, content: dict[str, Any], headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(content, status_code=status, headers=headers)


def status_of(exc: MemchenticError) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 400


async def _library(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemchenticError)
    payload = exc.to_dict()
    payload["message"] = caller_message(exc)
    if isinstance(exc, NotFoundError | ForbiddenError):
        payload["id"] = exc.memory_id  # the id the caller sent: nothing new to them
    status = status_of(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return _json(status, {"error": payload}, headers)


async def _api(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return _json(exc.status, body(exc.code, exc.message), headers)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        return _json(422, body("invalid", "body: not valid JSON", field="body"))
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    field = ".".join(loc) or "body"
    message = f"{field}: {first.get('msg', 'invalid value')}"
    return _json(422, body("invalid", message, field=field))


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = HTTP_CODES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    return _json(exc.status_code, body(code, message), dict(exc.headers or {}) or None)


async def _out_of_range(request: Request, exc: Exception) -> JSONResponse:
    # Dates near year 1 or 9999 overflow when shifted by a timezone or a TTL.
    return _json(422, body("invalid", "a date or number is out of range"))


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return _json(500, body("internal", "internal server error"))


def install(app: FastAPI) -> None:
    """Register the JSON error handlers on ``app``."""
    app.add_exception_handler(MemchenticError, _library)
    app.add_exception_handler(ApiError, _api)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(OverflowError, _out_of_range)
    app.add_exception_handler(Exception, _internal)
