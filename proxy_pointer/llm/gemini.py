"""Google Gemini as the synthesis LLM, through google-genai (see
:mod:`proxy_pointer.remote.gemini`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError, LLMError
from ..remote import gemini as remote
from ..remote.retry import Backoff, check_retry_args
from .base import LLMReply

__all__ = ["DEFAULT_GEMINI_MODEL", "GeminiLLM"]

DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"


class GeminiLLM:
    """Google Gemini through the ``google-genai`` SDK.

    The key comes from ``api_key``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``.
    ``base_url`` points the client elsewhere (a proxy, or a fake server in tests).
    ``timeout`` is per attempt, in seconds. Rate limits (429), server errors (5xx) and network
    failures are retried up to ``max_retries`` times with exponential backoff and jitter;
    ``sleep`` is injectable so tests need not wait. The SDK's own retrying is switched off so
    these counts are exact.

    Raises :class:`~proxy_pointer.errors.LLMError` at construction when no key is found, and
    from :meth:`generate` on failure; :class:`~proxy_pointer.errors.ConfigError` on bad
    arguments.
    """

    def __init__(
        self,
        model: str = DEFAULT_GEMINI_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float = 0.0,
        max_output_tokens: int | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ConfigError("GeminiLLM needs a model name, e.g. 'gemini-2.5-flash'")
        check_retry_args(max_retries, timeout)
        key = remote.find_key(api_key)
        if key is None:
            raise remote.missing_key(LLMError)
        self.model = model
        self.model_id = f"gemini:{model}"
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.max_retries = max_retries
        self.timeout = timeout
        self._sleep = sleep
        self._backoff = Backoff()
        self._client = remote.make_client(key, base_url=base_url, timeout=timeout)

    def __repr__(self) -> str:
        return f"GeminiLLM(model={self.model!r})"

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        """Send one prompt; return the reply text and token counts. Raises LLMError."""
        from google.genai import types

        config = types.GenerateContentConfig(
            system_instruction=system,
            temperature=self.temperature,
            max_output_tokens=self.max_output_tokens,
        )
        response = remote.call(
            lambda: self._client.models.generate_content(
                model=self.model, contents=prompt, config=config),
            model=self.model, timeout=self.timeout, max_retries=self.max_retries,
            sleep=self._sleep, backoff=self._backoff, error=LLMError,
        )
        return self._reply(response)

    def _reply(self, response: Any) -> LLMReply:
        candidates = response.candidates or []
        parts = (candidates[0].content.parts or []) if candidates and candidates[0].content else []
        # Thought summaries are not part of the answer.
        text = "".join(p.text for p in parts if p.text and not p.thought)
        if not text.strip():
            if candidates and candidates[0].finish_reason:
                reason = getattr(candidates[0].finish_reason, "value", candidates[0].finish_reason)
            elif response.prompt_feedback and response.prompt_feedback.block_reason:
                block = response.prompt_feedback.block_reason
                reason = f"prompt blocked: {getattr(block, 'value', block)}"
            else:
                reason = "unknown"
            raise LLMError(f"Gemini returned no text (finish reason: {reason})")
        usage = response.usage_metadata
        output = None
        if usage and usage.candidates_token_count is not None:
            output = usage.candidates_token_count + (usage.thoughts_token_count or 0)
        return LLMReply(
            text=text,
            input_tokens=usage.prompt_token_count if usage else None,
            output_tokens=output,
            model=response.model_version or self.model,
        )
