"""A small client for OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, ...).

Used where a chat model is optional: ``ask`` answers from retrieved passages and
``learn`` may extract memories with it. Configure with ``CHAT_BASE_URL``,
``CHAT_MODEL`` and ``CHAT_API_KEY``; nothing calls a model unless configured.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .errors import ChatError
from .settings import Settings


class ChatClient:
    """``complete(messages) -> str`` against ``{base_url}/chat/completions``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_attempts: int = 3,
        backoff: float = 0.25,
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout)
        self.max_attempts = max_attempts
        self.backoff = backoff

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatClient | None:
        """A client when ``CHAT_BASE_URL`` is set, else None."""
        if not settings.chat_base_url:
            return None
        return cls(settings.chat_base_url, settings.chat_model, settings.chat_api_key)

    def complete(
        self, messages: Sequence[dict[str, str]], *, temperature: float = 0.0, **extra: Any
    ) -> str:
        import httpx

        url = f"{self.base_url}/chat/completions"
        body = {"model": self.model, "messages": list(messages), "temperature": temperature,
                **extra}  # fmt: skip
        last = "no attempt"
        for attempt in range(self.max_attempts):
            try:
                response = self._client.post(url, json=body, headers=self._headers)
            except httpx.HTTPError as exc:
                last = f"cannot reach {url}: {type(exc).__name__}"
            else:
                if response.status_code == 200:
                    try:
                        return str(response.json()["choices"][0]["message"]["content"])
                    except (ValueError, KeyError, IndexError, TypeError) as exc:
                        raise ChatError(f"{url} answered without a message ({exc})") from None
                last = f"{url} answered HTTP {response.status_code}"
                if response.status_code < 500 and response.status_code not in (408, 429):
                    break
            time.sleep(self.backoff * 2**attempt)
        raise ChatError(f"chat model failed: {last}")

    def close(self) -> None:
        self._client.close()


__all__ = ["ChatClient", "ChatError"]
