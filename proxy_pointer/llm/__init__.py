"""Language models for synthesis: the :class:`LLM` protocol and its backends.

:class:`GeminiLLM` (google-genai) and :class:`OpenAICompatibleLLM` (plain HTTP, for OpenAI,
Ollama, vLLM, llama.cpp, LM Studio...). Both retry rate limits, server errors and network
failures with exponential backoff and jitter, and fail at once, with an
:class:`~proxy_pointer.errors.LLMError` that says why, on a rejected key or invalid request.
:class:`ScriptedLLM` answers in process from a script and records its prompts: no server,
for tests and offline runs. Any object with ``model_id`` and
``generate(prompt, *, system=None) -> LLMReply`` is an LLM.

Choosing a backend from plain config (see :func:`make_llm`)::

    gemini                      Gemini, default model (needs GEMINI_API_KEY or GOOGLE_API_KEY)
    gemini:gemini-2.5-pro       Gemini, another model
    openai:llama3.1             an OpenAI-compatible server; base URL from ``base_url`` or
                                OPENAI_BASE_URL (default https://api.openai.com/v1), key from
                                OPENAI_API_KEY (optional for local servers)
    none                        no synthesis

Names are imported on first use, like the package's: the protocol alone loads no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..package import lazy_exports

if TYPE_CHECKING:
    from .base import LLM, LLMReply
    from .factory import llm_from_env, make_llm
    from .gemini import DEFAULT_GEMINI_MODEL, GeminiLLM
    from .openai_compatible import DEFAULT_OPENAI_BASE_URL, OpenAICompatibleLLM
    from .scripted import ScriptedLLM

# Module -> the public names it defines (each imported on first attribute access).
_LAZY = {
    "gemini": ("DEFAULT_GEMINI_MODEL", "GeminiLLM"),
    "openai_compatible": ("DEFAULT_OPENAI_BASE_URL", "OpenAICompatibleLLM"),
    "base": ("LLM", "LLMReply"),
    "scripted": ("ScriptedLLM",),
    "factory": ("llm_from_env", "make_llm"),
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "DEFAULT_GEMINI_MODEL", "DEFAULT_OPENAI_BASE_URL", "LLM", "GeminiLLM", "LLMReply",
    "OpenAICompatibleLLM", "ScriptedLLM", "llm_from_env", "make_llm",
]
