"""What a benchmarked method is: build once over a dataset, then rank passages per question."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..context import Piece
from ..dataset import Dataset, Question

__all__ = [
    "SCOPES",
    "BuildStats",
    "CountingEmbedder",
    "Method",
    "MethodUnavailable",
    "dir_bytes",
]

SCOPES = ("per-doc", "corpus")


class MethodUnavailable(Exception):
    """The method cannot run here (missing dependency, no LLM, API not implemented yet)."""


@dataclass(frozen=True)
class BuildStats:
    """Index-time cost of one method over one dataset.

    ``embed_texts`` counts texts handed to the embedder (what a cold cache computes),
    ``embed_computed`` the ones actually computed in this run (cache misses). ``index_bytes``
    is the size of the saved index on disk. LLM tokens are MiniLM word pieces of the prompts
    and replies, counted by :mod:`proxy_pointer.tokens`.
    """

    seconds: float
    units: int
    embed_texts: int = 0
    embed_computed: int = 0
    index_bytes: int | None = None
    llm_calls: int = 0
    llm_in_tokens: int = 0
    llm_out_tokens: int = 0
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


class Method(Protocol):
    """A retrieval method under test.

    ``build`` indexes every document of the dataset once (both scopes use that index) and
    raises :class:`MethodUnavailable` when the method cannot run. ``retrieve`` returns the
    passages for one question in rank order - possibly more than fit; the runner packs them
    under ``budget`` with :func:`~harness.context.pack`. ``scope`` is ``"per-doc"`` (search
    only the question's document) or ``"corpus"``.
    """

    name: str
    description: str
    points_at_sections: bool
    scopes: tuple[str, ...]

    def build(self, dataset: Dataset, embedder: Any) -> BuildStats: ...

    def retrieve(self, question: Question, scope: str, budget: int) -> Iterable[Piece]: ...


class CountingEmbedder:
    """Wraps an embedder: counts document texts asked for and answers queries from a memo.

    Query vectors are computed once per question (:meth:`precompute`) and shared by every
    method, scope and budget, so query latency measures retrieval, not the encoder.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.texts = 0
        self._memo: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        vec = self._memo.get(text)
        if vec is None:
            vec = self._memo[text] = np.asarray(self.inner.embed_query(text), np.float32)
        return vec

    def precompute(self, queries: Iterable[str]) -> int:
        """Embed the queries not seen yet; returns how many were embedded."""
        todo = [q for q in dict.fromkeys(queries) if q not in self._memo]
        for q in todo:
            self.embed_query(q)
        return len(todo)

    @property
    def max_tokens(self) -> int:
        """The wrapped embedder's input window (the Embedder protocol's ``max_tokens``)."""
        return self.inner.max_tokens

    @property
    def tokenizer(self) -> Any:
        """The wrapped embedder's token counter (the Embedder protocol's ``tokenizer``)."""
        return self.inner.tokenizer

    @property
    def computed(self) -> int:
        """Texts the underlying cache had to compute so far (0 if it is not a cache)."""
        return int(getattr(self.inner, "misses", 0))


def dir_bytes(path: str | Path) -> int:
    """Total size of the regular files under ``path``."""
    total = 0
    for base, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(base, f)
            if os.path.isfile(p) and not os.path.islink(p):
                total += os.path.getsize(p)
    return total
