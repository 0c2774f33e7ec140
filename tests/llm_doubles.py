"""LLM backends for tests, pointed at local servers (the in-process double is
:class:`proxy_pointer.llm.ScriptedLLM`).

``Sleeps`` records backoff delays instead of waiting, and ``gemini_llm`` / ``openai_llm``
build the real backends pointed at the local stand-in servers (``gemini_server.FakeGemini``,
``openai_server.FakeOpenAIServer``; their fixtures are in conftest.py).
"""

from __future__ import annotations

from gemini_server import FakeGemini
from openai_server import FakeOpenAIServer

from proxy_pointer.llm import GeminiLLM, OpenAICompatibleLLM

__all__ = ["Sleeps", "gemini_llm", "openai_llm"]


class Sleeps(list):
    """A ``sleep`` stand-in that records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def openai_llm(server: FakeOpenAIServer, sleeps=None, **kw) -> OpenAICompatibleLLM:
    kw.setdefault("sleep", sleeps if sleeps is not None else Sleeps())
    return OpenAICompatibleLLM(server.base_url + "/v1", "llama3.1", **kw)


def gemini_llm(server: FakeGemini, sleeps=None, **kw) -> GeminiLLM:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("sleep", sleeps if sleeps is not None else Sleeps())
    return GeminiLLM(base_url=server.base_url, **kw)
