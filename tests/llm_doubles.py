"""LLM test doubles shared by test_llm.py and test_synthesis.py.

``Sleeps`` records backoff delays instead of waiting, ``ScriptedLLM`` answers in process, and
``gemini_llm`` / ``openai_llm`` build the real backends pointed at the local stand-in servers
(``gemini_server.FakeGemini``, ``openai_server.FakeOpenAIServer``; their fixtures are in
conftest.py).
"""

from __future__ import annotations

from gemini_server import FakeGemini
from openai_server import FakeOpenAIServer

from proxy_pointer.llm import GeminiLLM, LLMReply, OpenAICompatibleLLM

__all__ = ["ScriptedLLM", "Sleeps", "gemini_llm", "openai_llm"]


class Sleeps(list):
    """A ``sleep`` stand-in that records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class ScriptedLLM:
    """An in-process LLM returning a fixed text and recording its prompts."""

    model_id = "scripted"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[tuple[str, str | None]] = []

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        self.calls.append((prompt, system))
        return LLMReply(self.text, 100, 20, "scripted-v1")


def openai_llm(server: FakeOpenAIServer, sleeps=None, **kw) -> OpenAICompatibleLLM:
    kw.setdefault("sleep", sleeps if sleeps is not None else Sleeps())
    return OpenAICompatibleLLM(server.base_url + "/v1", "llama3.1", **kw)


def gemini_llm(server: FakeGemini, sleeps=None, **kw) -> GeminiLLM:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("sleep", sleeps if sleeps is not None else Sleeps())
    return GeminiLLM(base_url=server.base_url, **kw)
