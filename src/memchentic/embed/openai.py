"""An embedder that calls an OpenAI-compatible ``/embeddings`` endpoint over HTTP.

Works with OpenAI itself and with servers that speak the same protocol (vLLM,
llama.cpp, Ollama's ``/v1``, LiteLLM, ...). Requests are ``POST {base_url}/embeddings``
with ``{"model": ..., "input": [...]}`` (plus ``"dimensions"`` when a size is
asked for); the answer's ``data[*].embedding`` are put back in ``index`` order.

Failures raise :class:`~memchentic.errors.EmbedderError` naming the endpoint and
the HTTP status, never the API key. Rate limits (429), server errors (5xx) and
connection failures are retried a few times with a short backoff.

httpx is imported when an embedder is built, not when this module is imported.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memchentic.errors import EmbedderError, ValidationError

from .base import Embedder, normalise_rows

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIEmbedder"]

_PROBE_TEXT = "dimension probe"
_RETRY_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))
_MAX_RETRY_AFTER = 5.0  # seconds; a longer Retry-After is not honoured in full
_BODY_SNIPPET = 300  # characters of an error body quoted in a message


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible HTTP endpoint.

    ``base_url`` is the API root, e.g. ``https://api.openai.com/v1`` or
    ``http://localhost:8000/v1``. When ``dimension`` is None the endpoint is asked
    once, at construction, for the size of its vectors. ``client`` is an optional
    ``httpx.Client`` to use (its timeout applies; it is not closed by :meth:`close`).
    ``max_attempts`` and ``backoff`` (seconds, doubled per retry) tune retries.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        model: str = "text-embedding-3-small",
        dimension: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 256,
        client: httpx.Client | None = None,
        *,
        max_attempts: int = 3,
        backoff: float = 0.25,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.strip():
            raise ValidationError("openai_base_url", "must be a non-empty URL")
        if not isinstance(model, str) or not model.strip():
            raise ValidationError("openai_embedding_model", "must be a non-empty string")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise ValidationError("openai_embedding_dimension", "must be a positive integer")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size", "must be a positive integer")
        if max_attempts < 1:
            raise ValidationError("max_attempts", "must be at least 1")

        import httpx

        self.base_url = base_url.strip().rstrip("/")
        self.endpoint = f"{self.base_url}/embeddings"
        self.model = model
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff
        self._api_key = api_key or None
        self._requested_dimension = dimension
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        if dimension is not None:
            self.dimension = dimension
        else:
            self.dimension = 0
            try:
                self.dimension = int(self._request([_PROBE_TEXT]).shape[1])
            except BaseException:
                self.close()
                raise

    # -- public -------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in requests of at most ``batch_size``; blank texts give zero rows
        (the OpenAI API refuses empty input)."""
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        keep = [i for i, text in enumerate(texts) if str(text).strip()]
        for start in range(0, len(keep), self.batch_size):
            chunk = keep[start : start + self.batch_size]
            out[chunk] = self._request([str(texts[i]) for i in chunk])
        return out

    def close(self) -> None:
        """Close the HTTP client this embedder created (a given client is left open)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:  # no key here, ever
        return (
            f"OpenAIEmbedder(endpoint={self.endpoint!r}, model={self.model!r}, "
            f"dimension={self.dimension})"
        )

    # -- HTTP -----------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _scrub(self, text: str) -> str:
        """The text with the API key (should a server echo it) blanked out."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text

    def _fail(self, message: str) -> EmbedderError:
        """An EmbedderError with a message safe to show (no key)."""
        return EmbedderError(self._scrub(message))

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        """POST with retries on 429 / 5xx / connection errors; returns a 2xx response."""
        import httpx

        last_problem = ""
        for attempt in range(1, self.max_attempts + 1):
            delay = self.backoff * (2 ** (attempt - 1))
            try:
                response = self._client.post(self.endpoint, json=payload, headers=self._headers())
            except httpx.TransportError as exc:  # connect, read, timeouts, protocol
                last_problem = f"{type(exc).__name__}: {exc}"
                if attempt < self.max_attempts:
                    time.sleep(delay)
                    continue
                raise self._fail(
                    f"embedding request to {self.endpoint} failed after {attempt} attempt(s): "
                    f"{last_problem}"
                ) from exc
            except httpx.HTTPError as exc:  # bad URL and the like: not worth retrying
                raise self._fail(
                    f"embedding request to {self.endpoint} failed: {type(exc).__name__}: {exc}"
                ) from None
            status = response.status_code
            if 200 <= status < 300:
                return response
            body = " ".join(response.text.split())[:_BODY_SNIPPET]
            last_problem = f"HTTP {status}" + (f": {body}" if body else "")
            if status in _RETRY_STATUSES and attempt < self.max_attempts:
                time.sleep(_retry_after(response, delay))
                continue
            raise self._fail(
                f"embedding request to {self.endpoint} failed with HTTP status {status} "
                f"(model {self.model!r}, attempt {attempt} of {self.max_attempts}): "
                f"{body or response.reason_phrase}"
            )
        raise self._fail(f"embedding request to {self.endpoint} failed: {last_problem}")

    def _request(self, texts: list[str]) -> np.ndarray:
        """One request for ``texts``; validated, index-ordered, unit rows."""
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if self._requested_dimension is not None:
            payload["dimensions"] = self._requested_dimension
        response = self._post(payload)
        where = f"embedding response from {self.endpoint} (HTTP {response.status_code})"
        try:
            document = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            snippet = " ".join(response.text.split())[:_BODY_SNIPPET]
            raise self._fail(f"{where} is not JSON: {snippet!r}") from None
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            raise self._fail(f"{where} has no 'data' list")
        if len(data) != len(texts):
            raise self._fail(f"{where} has {len(data)} embeddings for {len(texts)} inputs")

        ordered: list[Any] = [None] * len(texts)
        for position, item in enumerate(data):
            if not isinstance(item, dict) or "embedding" not in item:
                raise self._fail(f"{where}: item {position} has no 'embedding'")
            index = item.get("index", position)
            if (
                isinstance(index, bool)
                or not isinstance(index, int)
                or not 0 <= index < len(texts)
                or ordered[index] is not None
            ):
                raise self._fail(f"{where}: item {position} has a bad or repeated index {index!r}")
            ordered[index] = item["embedding"]

        expected = self.dimension or None  # unknown while probing
        try:
            matrix = np.asarray(ordered, dtype=np.float32)
        except (TypeError, ValueError):
            raise self._fail(
                f"{where}: embeddings are not equal-length lists of numbers "
                "(base64 encoding is not supported)"
            ) from None
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise self._fail(f"{where}: embeddings have shape {matrix.shape}")
        if expected is not None and matrix.shape[1] != expected:
            raise self._fail(
                f"{where}: embeddings have {matrix.shape[1]} dimensions, expected {expected}"
            )
        if not np.isfinite(matrix).all():
            raise self._fail(f"{where}: embeddings contain NaN or infinite values")
        return normalise_rows(matrix)


def _retry_after(response: httpx.Response, default: float) -> float:
    """Seconds to wait before retrying: the server's Retry-After (capped) or ``default``."""
    value = response.headers.get("retry-after")
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        return default
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)
