"""An embedder that records what it is asked and fails on cue: the test double for
:class:`~.base.Embedder`, as :class:`~proxy_pointer.llm.ScriptedLLM` is for LLMs.

Vectors are :class:`~.hashing.HashEmbedder`'s (deterministic, no model), so an index built
with it answers like one built with the hash embedder of the same dimension; what a test
checks is what was embedded, how often, and what the code under test does when embedding
fails.

>>> emb = RecordingEmbedder(16, fail_after=1)
>>> emb.embed_documents(["a", "b"]).shape
(2, 16)
>>> emb.texts, emb.calls
(['a', 'b'], 1)
>>> emb.embed_documents(["c"])
Traceback (most recent call last):
...
proxy_pointer.errors.EmbeddingError: backend down
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..errors import EmbeddingError
from ..tokens import TokenCounter
from .base import as_text_list
from .hashing import HashEmbedder

__all__ = ["RecordingEmbedder"]


class RecordingEmbedder:
    """Hash vectors of ``dimension``, every call recorded.

    * ``texts``: every document text embedded, in order; ``calls``: the
      ``embed_documents`` calls that returned; ``queries``: every query embedded;
      :attr:`counts`: ``texts`` as a Counter.
    * ``fail_after``: that many ``embed_documents`` calls succeed, every later one raises
      :class:`~proxy_pointer.errors.EmbeddingError` with ``message`` (0: every call
      fails); ``fail_after_texts``: the same counted in texts. Queries never fail.
    * ``model_id``, ``max_tokens`` and ``tokenizer`` default to the hash embedder's and may
      be set to stand for another model (an index built with another embedder, a smaller
      window, another way of counting).
    * ``delay``: seconds each ``embed_documents`` call sleeps first (a slow backend).
    """

    def __init__(self, dimension: int = 64, *, model_id: str | None = None,
                 fail_after: int | None = None, fail_after_texts: int | None = None,
                 message: str = "backend down", max_tokens: int | None = None,
                 tokenizer: TokenCounter | None = None, delay: float = 0.0) -> None:
        self._hash = HashEmbedder(dimension)
        self.dimension = dimension
        self.model_id = model_id or self._hash.model_id
        self.max_tokens = max_tokens or self._hash.max_tokens
        self.tokenizer: TokenCounter = tokenizer or self._hash.tokenizer
        self.fail_after = fail_after
        self.fail_after_texts = fail_after_texts
        self.message = message
        self.delay = delay
        self.texts: list[str] = []
        self.queries: list[str] = []
        self.calls = 0

    def __repr__(self) -> str:
        return f"RecordingEmbedder({self.dimension}, model_id={self.model_id!r})"

    @property
    def counts(self) -> Counter[str]:
        """How often each document text was embedded."""
        return Counter(self.texts)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Hash vectors of ``texts``, recorded; :class:`EmbeddingError` once failing."""
        items = as_text_list(texts)
        if self.delay:
            time.sleep(self.delay)
        if ((self.fail_after is not None and self.calls >= self.fail_after)
                or (self.fail_after_texts is not None
                    and len(self.texts) >= self.fail_after_texts)):
            raise EmbeddingError(self.message)
        vectors = self._hash.embed_documents(items)
        self.texts.extend(items)
        self.calls += 1
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        """The hash vector of one query, recorded."""
        vector = self._hash.embed_query(text)
        self.queries.append(text)
        return vector
