"""LLMs from CLI-friendly specs (``gemini[:MODEL]``, ``openai:MODEL``, ``none``) and the
environment (``PROXY_POINTER_LLM``)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigError
from ..remote import gemini as remote
from .base import LLM
from .gemini import DEFAULT_GEMINI_MODEL, GeminiLLM
from .openai_compatible import DEFAULT_OPENAI_BASE_URL, OpenAICompatibleLLM

__all__ = ["llm_from_env", "make_llm"]


def make_llm(
    spec: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> LLM | None:
    """Build an LLM from a CLI-friendly spec: ``gemini[:MODEL]``, ``openai:MODEL`` or ``none``.

    ``spec`` None means ``PROXY_POINTER_LLM``, else ``gemini``. ``base_url`` is the server
    for ``openai`` (else ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``) and an
    optional endpoint override for ``gemini``; ``openai:<base_url>|<model>`` puts both in one
    string. ``options`` go to the backend's constructor (``temperature``, ``max_retries``,
    ``timeout``...).

    Returns ``None`` for ``none``, and for ``gemini`` when no key is configured, so the caller
    can show the retrieved context with
    :data:`proxy_pointer.search.synthesis.ENABLE_SYNTHESIS_HINT` instead. Raises
    :class:`~proxy_pointer.errors.ConfigError` on an unknown or incomplete spec, and when
    ``openai`` would go to api.openai.com without ``OPENAI_API_KEY``.
    """
    if spec is None:
        spec = os.environ.get("PROXY_POINTER_LLM") or "gemini"
    kind, _, model = spec.strip().partition(":")
    kind, model = kind.strip().lower(), model.strip()
    if kind in ("none", "off", ""):
        return None
    if kind == "gemini":
        if remote.find_key(api_key) is None:
            return None
        return GeminiLLM(
            model or DEFAULT_GEMINI_MODEL, api_key=api_key, base_url=base_url, **options
        )
    if kind == "openai":
        if "|" in model:
            url_part, _, model = model.rpartition("|")
            base_url, model = base_url or url_part.strip(), model.strip()
        if not model:
            raise ConfigError("--llm openai needs a model: openai:<model>, e.g. openai:llama3.1")
        url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        if url == DEFAULT_OPENAI_BASE_URL and not (api_key or os.environ.get("OPENAI_API_KEY")):
            raise ConfigError(
                "openai: set OPENAI_API_KEY for api.openai.com, or give --llm-base-url "
                "(or OPENAI_BASE_URL) for a local server such as http://localhost:11434/v1"
            )
        return OpenAICompatibleLLM(url, model, api_key=api_key, **options)
    raise ConfigError(f"unknown LLM {spec!r}; use gemini, gemini:<model>, openai:<model> or none")


def llm_from_env() -> LLM | None:
    """The LLM named by ``PROXY_POINTER_LLM`` (default ``gemini``); see :func:`make_llm`.

    Also reads ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``GEMINI_API_KEY`` /
    ``GOOGLE_API_KEY``. Returns ``None`` when synthesis is off or Gemini has no key; raises
    :class:`~proxy_pointer.errors.ConfigError` on a malformed spec.
    """
    return make_llm(None)
