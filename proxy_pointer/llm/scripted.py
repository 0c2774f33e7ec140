"""An in-process LLM that answers from a script: the test double for :class:`~.base.LLM`.

Like :class:`~proxy_pointer.embeddings.HashEmbedder` for embedders, it needs no server, key
or network, so tests, examples and offline runs can drive synthesis, reranking, noise
labels and summaries with known replies and then check what the model was asked.

>>> llm = ScriptedLLM("Adam is used [p.md#0001, lines 2-3].")
>>> llm.generate("Which optimizer?", system="Cite sections.").text
'Adam is used [p.md#0001, lines 2-3].'
>>> llm.calls
[('Which optimizer?', 'Cite sections.')]
>>> turns = ScriptedLLM(["first", RuntimeError("down"), lambda prompt: prompt.upper()])
>>> turns.generate("a").text
'first'
>>> turns.generate("b")
Traceback (most recent call last):
...
RuntimeError: down
>>> turns.generate("third").text
'THIRD'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

from ..errors import LLMError
from .base import LLMReply

__all__ = ["Reply", "ScriptedLLM"]

#: One scripted turn: a text to answer with, an exception to raise, or a function of the
#: prompt that returns the text (or raises).
Reply: TypeAlias = str | BaseException | Callable[[str], str]


class ScriptedLLM:
    """An LLM whose replies are scripted, recording every call.

    ``script`` is one :data:`Reply` used for every call, or a sequence of them used one per
    call in turn; a call past the end of a sequence raises
    :class:`~proxy_pointer.errors.LLMError` (a script that ran out is a failing backend).
    An exception in the script is raised as is, so a test can make the model fail with
    whatever error the code under test must survive.

    Each reply is an :class:`~.base.LLMReply` with ``input_tokens`` / ``output_tokens`` as
    given (``None`` as for a backend that reports no usage) and ``model`` (default
    ``model_id``) as the answering model.

    ``calls`` holds ``(prompt, system)`` for every call, failed ones included, in order;
    ``prompts`` the prompts alone.
    """

    def __init__(
        self,
        script: Reply | Sequence[Reply] = "",
        *,
        model_id: str = "scripted",
        model: str | None = None,
        input_tokens: int | None = 10,
        output_tokens: int | None = 5,
    ) -> None:
        self.model_id = model_id
        self.model = model_id if model is None else model
        self.input_tokens, self.output_tokens = input_tokens, output_tokens
        self._turns: tuple[Reply, ...]
        if isinstance(script, str | BaseException) or callable(script):
            self._turns, self._repeat = (script,), True  # one reply for every call
        else:
            self._turns, self._repeat = tuple(script), False  # one per call, in turn
        self.calls: list[tuple[str, str | None]] = []

    @property
    def prompts(self) -> list[str]:
        """The prompts of every call so far, in order."""
        return [prompt for prompt, _ in self.calls]

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        """The next scripted reply to ``prompt``; raises the scripted exception, if that is
        what is next, and :class:`~proxy_pointer.errors.LLMError` when the script ran out."""
        self.calls.append((prompt, system))
        turn = 0 if self._repeat else len(self.calls) - 1
        if turn >= len(self._turns):
            raise LLMError(f"ScriptedLLM: the script has {len(self._turns)} replies and this "
                           f"is call {turn + 1}")
        reply = self._turns[turn]
        if isinstance(reply, BaseException):
            raise reply
        text = reply(prompt) if callable(reply) else reply
        return LLMReply(text, self.input_tokens, self.output_tokens, self.model)
