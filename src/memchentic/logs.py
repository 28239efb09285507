"""Logs as JSON lines (``LOG_FORMAT=json``): one JSON object a line, with ``time``
(UTC, ISO 8601), ``level``, ``logger``, ``message`` and, when there is one, the
``exception`` with its traceback. ``memchentic serve`` logs uvicorn's lines (access
and errors) and memchentic's this way; the other commands their warnings.

An API key (``mck_...``) or a bearer token in a message or a traceback is replaced
by ``[redacted]`` before the line is written: a key must never reach a log.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

#: What a key or a bearer token looks like in a line.
SECRET_PATTERN = re.compile(r"mck_[A-Za-z0-9_\-]+|(?i:bearer)\s+[A-Za-z0-9._~+/=\-]+")
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """``text`` without API keys or bearer tokens."""
    return SECRET_PATTERN.sub(REDACTED, text)


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        elif record.exc_text:
            entry["exception"] = redact(record.exc_text)
        if record.stack_info:
            entry["stack"] = redact(self.formatStack(record.stack_info))
        return json.dumps(entry, ensure_ascii=False)


def json_line(logger: str, message: str, level: int = logging.INFO) -> str:
    """One line of JSON log for ``message``, as :class:`JsonFormatter` writes it."""
    record = logging.LogRecord(logger, level, __file__, 0, message, None, None)
    return JsonFormatter().format(record)


def uvicorn_config(log_format: str) -> dict[str, Any] | None:
    """The ``log_config`` ``memchentic serve`` hands uvicorn (each worker applies it):
    uvicorn's and memchentic's loggers writing JSON lines to stderr; None for text
    (uvicorn's own configuration)."""
    if log_format != "json":
        return None
    handler = {"formatter": "json", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"json": handler},
        "loggers": {
            name: {"handlers": ["json"], "level": "INFO", "propagate": False}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "memchentic")
        },
    }


def configure(log_format: str, level: int = logging.WARNING) -> None:
    """The CLI's logging: with ``json``, memchentic's records at ``level`` and above as
    JSON lines on stderr (text: Python's default, unchanged)."""
    if log_format != "json":
        return
    logger = logging.getLogger("memchentic")
    if any(isinstance(h.formatter, JsonFormatter) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
