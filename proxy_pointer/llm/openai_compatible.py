"""Any server speaking OpenAI's chat-completions API (OpenAI, Ollama, vLLM, llama.cpp...)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import ConfigError, LLMError
from ..remote.retry import Backoff, Transient, check_retry_args, with_retries
from .base import LLMReply

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAICompatibleLLM"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_BACKEND = "OpenAI-compatible server"


def _fatal_message(status: int, detail: str) -> str:
    """The LLMError text for a non-retryable HTTP status."""
    detail = f": {detail}" if detail else ""
    if status in (401, 403) or (status == 400 and "api key" in detail.lower()):
        return (f"{_BACKEND}: the API key was rejected (HTTP {status}){detail}. "
                "Check OPENAI_API_KEY.")
    if status == 404:
        return f"{_BACKEND}: model or endpoint not found (HTTP 404){detail}"
    return f"{_BACKEND}: the request was invalid (HTTP {status}){detail}"


def _chat_completions_url(base_url: str) -> str:
    """``base_url`` + the chat-completions path.

    ``http://host:11434`` and ``http://host:11434/v1`` both mean ``.../v1/chat/completions``;
    any other path is taken as the API root (``.../v1beta/openai`` → ``.../chat/completions``),
    and a URL that already ends in ``/chat/completions`` is used as is.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"base_url must be an http(s) URL like http://localhost:11434/v1, got {base_url!r}"
        )
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if not parts.path.strip("/"):
        url += "/v1"
    return url + "/chat/completions"


def _retry_after_header(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def _openai_error_detail(response: httpx.Response) -> tuple[str, str]:
    """(message, code) from an OpenAI-style error body, or the raw text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300], ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or ""), str(error.get("code") or error.get("type") or "")
    if isinstance(error, str):
        return error, ""
    return json.dumps(body)[:300], ""


def _message_text(content: Any) -> str:
    """The text of a chat message ``content``: a string, or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


class OpenAICompatibleLLM:
    """Any server that speaks OpenAI's ``POST /v1/chat/completions``, over plain httpx.

    ``base_url`` may be given with or without the trailing ``/v1``
    (``http://localhost:11434`` for Ollama, ``http://localhost:8000/v1`` for vLLM,
    ``https://api.openai.com/v1``). The bearer key comes from ``api_key``, else
    ``OPENAI_API_KEY``; without one no ``Authorization`` header is sent, which local servers
    accept. Retries (:mod:`proxy_pointer.remote.retry`) and errors as
    :class:`~proxy_pointer.llm.gemini.GeminiLLM`; a 429 that means an exhausted quota rather
    than a rate limit fails at once, and so does a server that cannot be connected to
    (nothing listening, unknown host): a wrong URL is reported in milliseconds, not after
    half a minute of retries.

    Raises :class:`~proxy_pointer.errors.ConfigError` on a malformed ``base_url`` or empty
    ``model``; :meth:`generate` raises :class:`~proxy_pointer.errors.LLMError`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_output_tokens: int | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ConfigError("OpenAICompatibleLLM needs a model name, e.g. 'llama3.1'")
        check_retry_args(max_retries, timeout)
        self.url = _chat_completions_url(base_url)
        self.model = model
        self.model_id = f"openai:{model}"
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.max_retries = max_retries
        self.timeout = timeout
        self._sleep = sleep
        self._backoff = Backoff()
        key = api_key or os.environ.get("OPENAI_API_KEY")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(url={self.url!r}, model={self.model!r})"

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        """Send one prompt; return the reply text and token counts. Raises LLMError."""
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_output_tokens is not None:
            body["max_tokens"] = self.max_output_tokens
        backend = f"OpenAI-compatible server {self.url}"

        def give_up(last: Transient, attempts: int) -> Exception:
            return LLMError(f"{backend}: gave up after {attempts} "
                            f"attempt{'s' * (attempts != 1)}: {last}")

        with httpx.Client(timeout=self.timeout, headers=self._headers) as client:
            return with_retries(lambda: self._attempt(client, body),
                                max_retries=self.max_retries, sleep=self._sleep,
                                backoff=self._backoff, give_up=give_up)

    def _attempt(self, client: httpx.Client, body: dict[str, Any]) -> LLMReply:
        try:
            response = client.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise Transient(f"no reply within {self.timeout:g} s") from exc
        except httpx.ConnectError as exc:
            # Nothing listens there (refused, unknown host): retrying for half a minute
            # would only delay the answer a misconfigured URL deserves.
            raise LLMError(f"OpenAI-compatible server {self.url}: cannot connect ({exc}); "
                           "is the server running at that address?") from exc
        except httpx.TransportError as exc:
            raise Transient(f"network error: {exc!r}") from exc
        status = response.status_code
        if status >= 400:
            detail, code = _openai_error_detail(response)
            if status == 429 and code == "insufficient_quota":
                raise LLMError(f"OpenAI-compatible server: quota exhausted (HTTP 429): {detail}")
            if status in _RETRYABLE_STATUS or status >= 500:
                raise Transient(f"HTTP {status}: {detail}", _retry_after_header(response))
            raise LLMError(_fatal_message(status, detail))
        try:
            data = response.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(
                f"OpenAI-compatible server: malformed reply: {response.text[:300]!r}"
            ) from exc
        text = _message_text((choice.get("message") or {}).get("content"))
        if not text.strip():
            reason = choice.get("finish_reason") or "unknown"
            raise LLMError(f"OpenAI-compatible server returned no text (finish reason: {reason})")
        usage = data.get("usage") or {}
        return LLMReply(
            text=text,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            model=data.get("model") or self.model,
        )
