"""Language models for synthesis: the :class:`LLM` protocol and its backends.

:class:`GeminiLLM` (google-genai) and :class:`OpenAICompatibleLLM` (plain HTTP, for OpenAI,
Ollama, vLLM, llama.cpp, LM Studio...). Both retry rate limits, server errors and network
failures with exponential backoff and jitter, and fail at once, with an
:class:`~proxy_pointer.errors.LLMError` that says why, on a rejected key or invalid request.
Any object with ``model_id`` and ``generate(prompt, *, system=None) -> LLMReply`` is an LLM.

Choosing a backend from plain config (see :func:`make_llm`)::

    gemini                      Gemini, default model (needs GEMINI_API_KEY or GOOGLE_API_KEY)
    gemini:gemini-2.5-pro       Gemini, another model
    openai:llama3.1             an OpenAI-compatible server; base URL from ``base_url`` or
                                OPENAI_BASE_URL (default https://api.openai.com/v1), key from
                                OPENAI_API_KEY (optional for local servers)
    none                        no synthesis
"""

from .base import LLM, LLMReply
from .factory import llm_from_env, make_llm
from .gemini import DEFAULT_GEMINI_MODEL, GeminiLLM
from .openai_compatible import DEFAULT_OPENAI_BASE_URL, OpenAICompatibleLLM

__all__ = [
    "DEFAULT_GEMINI_MODEL",
    "DEFAULT_OPENAI_BASE_URL",
    "LLM",
    "GeminiLLM",
    "LLMReply",
    "OpenAICompatibleLLM",
    "llm_from_env",
    "make_llm",
]
