"""Breadcrumbs embedded once: a chunk's vector composed from its breadcrumb's and its body's.

Every chunk's ``embed_text`` opens with its section's breadcrumb (``"[10-K > Item 7 > ...]"``),
so a section of ten chunks has its breadcrumb read ten times, and the same paragraph under
two filings' breadcrumbs is read twice: on financebench-dev's filings breadcrumbs are a
fifth of the word pieces a model reads. :class:`CrumbEmbedder` embeds each distinct
breadcrumb and each distinct body once and composes a chunk's vector as mean pooling would
over the joined text, ``normalize(n_crumb * v_crumb + n_body * v_body)`` with each part's
word pieces as its weight (the body's counted as the joined text would be truncated).

The vectors are not the joined text's (cosine 0.97 at the median on a 10-K's chunks, see
``benchmarks/results/cpu/any-cpu.md``), so the composed embedder has its own ``model_id``:
the inner one's with :data:`SUFFIX`. Queries have no breadcrumb: the inner embedder
embeds them as it would.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ..parse.chunking import split_breadcrumb
from .base import Embedder, Wrapping, as_text_list, normalize_rows

__all__ = ["MEMORY", "SUFFIX", "CrumbEmbedder"]

#: Appended to the inner embedder's ``model_id``.
SUFFIX = "+crumbs"
#: Part vectors remembered across calls (a breadcrumb recurs in every batch of its
#: document's chunks): about 600 bytes each at 384 dimensions, so 30 MB at most.
MEMORY = 50_000


class CrumbEmbedder(Wrapping):
    """``inner`` (an :class:`~.base.Embedder`) with breadcrumbs and bodies embedded apart.

    ``dimension``, ``max_tokens`` and ``tokenizer`` are ``inner``'s; ``model_id`` is
    ``inner.model_id + SUFFIX``. A text without a breadcrumb line gets ``inner``'s vector
    of the whole text. Thread-safe; the part vectors it remembers are bounded by
    :data:`MEMORY`.
    """

    def __init__(self, inner: Embedder, *, memory: int = MEMORY) -> None:
        self.inner = inner
        self.model_id = inner.model_id + SUFFIX
        self._memory = memory
        self._known: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrumbEmbedder({self.inner!r})"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, shape ``(len(texts), dimension)``, in input order."""
        items = as_text_list(texts)
        parts = [split_breadcrumb(t) for t in items]
        distinct = {p for pair in parts for p in pair if p}
        vectors = self._parts(distinct)
        # Each distinct part counted once: a breadcrumb heads every chunk of its section.
        pieces = {p: self.tokenizer.count_tokens(p) for p in distinct}
        out = np.zeros((len(items), self.dimension), np.float32)
        room = max(1, self.max_tokens - 2)  # the special tokens of one joined text
        for i, (head, body) in enumerate(parts):
            if not head:
                out[i] = vectors[body] if body else 0.0
                continue
            n_head = min(pieces[head], room)
            n_body = min(pieces[body], room - n_head) if body else 0
            out[i] = n_head * vectors[head]
            if n_body:
                out[i] += n_body * vectors[body]
        return normalize_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        """The inner embedder's query vector (a question has no breadcrumb)."""
        return self.inner.embed_query(text)

    def _parts(self, texts: set[str]) -> dict[str, np.ndarray]:
        """Vectors of ``texts``: remembered ones, the rest embedded in one call."""
        keys = {t: hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).digest()
                for t in texts}
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for t, k in keys.items():
                vec = self._known.get(k)
                if vec is not None:
                    self._known.move_to_end(k)
                    found[t] = vec
        todo = sorted(t for t in texts if t not in found)
        if todo:
            fresh = np.asarray(self.inner.embed_documents(todo), dtype=np.float32)
            found.update(zip(todo, fresh, strict=True))
            with self._lock:
                for t, vec in zip(todo, fresh, strict=True):
                    self._known[keys[t]] = vec
                while len(self._known) > self._memory:
                    self._known.popitem(last=False)
        return found
