"""The embedder protocol and the checks every backend shares.

Every backend satisfies :class:`Embedder`, so the store and retrieval never know which one
they hold. Vectors are float32 with unit L2 norm, so inner product is cosine similarity.

An embedder also says how much of a text it reads (``max_tokens``) and how it counts
(``tokenizer``), as docling-core's chunkers take a tokenizer that knows its limit: an index
fits its chunks to that window rather than to one model's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, runtime_checkable

import numpy as np

from ..tokens import TokenCounter

__all__ = ["Embedder", "Wrapping", "as_text_list", "embed_by_length", "normalize_rows",
           "text_key"]


@runtime_checkable
class Embedder(Protocol):
    """What the index needs from an embedding backend.

    ``model_id`` is stable across processes and names model and output size, so an index can
    refuse a query embedder that differs from the one that built it. Both methods return
    float32 vectors of length ``dimension`` with unit L2 norm, so inner product is cosine.
    ``max_tokens`` and ``tokenizer`` say how much of a text the model reads, so chunks are
    sized to be read whole.
    """

    @property
    def model_id(self) -> str:
        """Stable name of model and output size, e.g. ``"hash:256"``."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    @property
    def max_tokens(self) -> int:
        """The most input tokens (counted by ``tokenizer``, plus the model's special tokens)
        the model reads; the rest of a longer text is ignored."""
        ...

    @property
    def tokenizer(self) -> TokenCounter:
        """Counts tokens as the model reads them: ``tokenizer.count_tokens(text) -> int``."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages; returns an ``(len(texts), dimension)`` float32 array."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query; returns a ``(dimension,)`` float32 array."""
        ...


class Wrapping:
    """Base of an embedder around another (``inner``) that reads texts as ``inner`` does: its
    ``dimension``, ``max_tokens`` and ``tokenizer`` are ``inner``'s (a cache, a composer)."""

    inner: Embedder

    @property
    def dimension(self) -> int:
        """The inner embedder's ``dimension``."""
        return self.inner.dimension

    @property
    def max_tokens(self) -> int:
        """The inner embedder's ``max_tokens``: a wrapper reads what its model reads."""
        return self.inner.max_tokens

    @property
    def tokenizer(self) -> TokenCounter:
        """The inner embedder's ``tokenizer``."""
        return self.inner.tokenizer


def as_text_list(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, refusing a bare string and non-strings with ``TypeError``."""
    # A bare string is a Sequence[str] too; embedding it letter by letter is never meant.
    if isinstance(texts, str):
        raise TypeError("embed_documents() takes a sequence of strings, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"embed_documents() takes strings, got {type(t).__name__}")
    return out


def text_key(text: str) -> bytes:
    """A 16-byte digest of a text to embed, the key of an in-memory vector cache: any str
    (lone surrogates too) hashes; collisions are out of reach (2^-64 at 2^32 texts)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def normalize_rows(mat: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, as C-contiguous float32; all-zero rows stay zero."""
    mat = np.ascontiguousarray(mat, dtype=np.float32)
    if mat.size == 0:
        return mat
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    return np.ascontiguousarray(mat / norms, dtype=np.float32)


def embed_by_length(items: list[str], dimension: int, batch_size: int,
                    run: Callable[[list[str]], np.ndarray], workers: int = 1) -> np.ndarray:
    """``run`` over ``items`` sorted longest first in batches of ``batch_size`` (so each
    batch pads to similar lengths); the vectors in input order, unit-normed float32.

    ``workers`` > 1 runs that many batches at a time on threads (for a backend whose ``run``
    releases the GIL and uses one core, such as a one-thread ONNX Runtime session): on two
    cores that kept both busy where one session's two threads waited for each other
    (``benchmarks/results/cpu/any-cpu.md``). The vectors do not depend on ``workers``."""
    out = np.zeros((len(items), dimension), np.float32)
    order = np.argsort([-len(t) for t in items], kind="stable")
    batches = [order[start:start + batch_size] for start in range(0, len(items), batch_size)]

    def one(rows: np.ndarray) -> None:
        out[rows] = run([items[i] for i in rows])

    if workers > 1 and len(batches) > 1:
        with ThreadPoolExecutor(min(workers, len(batches))) as pool:
            for _ in pool.map(one, batches):  # re-raises a batch's error
                pass
    else:
        for rows in batches:
            one(rows)
    return normalize_rows(out)
