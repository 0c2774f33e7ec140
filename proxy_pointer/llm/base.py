"""The LLM protocol: text in, :class:`LLMReply` out; every backend satisfies it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["LLM", "LLMReply"]


@dataclass(frozen=True)
class LLMReply:
    """What one LLM call returned.

    ``input_tokens`` / ``output_tokens`` are the backend's own counts (``None`` when it did
    not report them); for Gemini thinking models ``output_tokens`` includes thinking tokens,
    as they are billed as output. ``model`` is the model that answered as the backend names
    it (which may be more specific than the one requested).
    """

    text: str
    input_tokens: int | None
    output_tokens: int | None
    model: str


@runtime_checkable
class LLM(Protocol):
    """A text-in, text-out language model.

    ``generate`` returns an :class:`LLMReply` and raises
    :class:`~proxy_pointer.errors.LLMError` when the backend fails.
    """

    model_id: str

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply: ...
