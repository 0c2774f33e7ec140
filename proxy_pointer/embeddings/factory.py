"""Embedders from plain config strings (the CLI's ``--embedder``) and from index manifests.

>>> make_embedder("hash:64").embed_documents(["structural retrieval"]).shape
(1, 64)
"""

from __future__ import annotations

from ..errors import ConfigError
from .base import Embedder
from .gemini import GeminiEmbedder
from .hashing import HashEmbedder
from .onnx import OnnxEmbedder
from .sentence_transformers import SentenceTransformerEmbedder
from .static import FAST_MODEL_ID, StaticEmbedder

__all__ = ["default_embedder", "embedder_from_id", "make_embedder"]



def default_embedder() -> SentenceTransformerEmbedder:
    """The bundled all-MiniLM-L6-v2 embedder (the model loads on first use)."""
    return SentenceTransformerEmbedder()


_SPEC_HELP = (
    "use 'minilm' (or 'default'), 'minilm-int8', 'minilm-torch', 'fast', "
    "'static:<model2vec folder>', "
    "'st:<model name or path>', "
    "'gemini[:<model>[:<dimension>]]' or 'hash[:<dimension>]'"
)


def _parse_dimension(value: str, spec: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"embedder {spec!r}: dimension must be a positive integer, got {value!r}")
    return int(value)


def make_embedder(spec: str) -> Embedder:
    """Build an embedder from a config string; also accepts any embedder's ``model_id``.

    ``"minilm"`` / ``"default"`` - bundled all-MiniLM-L6-v2 (ONNX Runtime, PyTorch as a
    fallback; ``"minilm-torch"`` forces PyTorch, same vectors); ``"minilm-int8"`` - the same
    model with int8 weights (:class:`OnnxEmbedder`, its own ``model_id``); ``"fast"`` - a
    static model distilled from it (:class:`StaticEmbedder`, ``"static:<folder>"`` for another
    model2vec model); ``"st:<name-or-path>"`` (or
    ``"sentence-transformers:..."``) - another sentence-transformers model;
    ``"gemini"`` / ``"gemini:<model>"`` / ``"gemini:<model>:<dim>"`` - :class:`GeminiEmbedder`
    (default ``gemini-embedding-001`` at 768 dimensions); ``"hash"`` / ``"hash:<dim>"`` -
    :class:`HashEmbedder` (default 256).

    Raises ConfigError for an unknown spec, and EmbeddingError when Gemini has no API key.

    >>> make_embedder("hash:32").model_id
    'hash:32'
    """
    text = spec.strip()
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    if kind in ("minilm", "default") and not rest:
        return SentenceTransformerEmbedder()
    if kind == "minilm-torch" and not rest:
        return SentenceTransformerEmbedder(backend="torch")
    if (kind == "minilm-int8" and not rest) or (
            kind == "onnx-int8" and rest == "all-MiniLM-L6-v2"):
        return OnnxEmbedder(quantize="int8")
    if kind == "onnx-int8":
        if not rest:
            raise ConfigError(f"embedder {spec!r} names no model folder; {_SPEC_HELP}")
        return OnnxEmbedder(rest, quantize="int8")
    if kind in ("st", "sentence-transformers"):
        if not rest:
            raise ConfigError(f"embedder {spec!r} names no model; {_SPEC_HELP}")
        return SentenceTransformerEmbedder(rest)
    if kind == "fast" and rest in ("", FAST_MODEL_ID.split(":", 1)[1]):
        return StaticEmbedder()
    if kind == "static":
        if not rest:
            raise ConfigError(f"embedder {spec!r} names no model folder; {_SPEC_HELP}")
        return StaticEmbedder(rest)
    if kind == "hash":
        return HashEmbedder(_parse_dimension(rest, spec) if rest else 256)
    if kind == "gemini":
        model, dimension = rest or "gemini-embedding-001", 768
        head, sep, tail = model.rpartition(":")
        if sep:
            model, dimension = head, _parse_dimension(tail, spec)
        return GeminiEmbedder(model, output_dimensionality=dimension)
    raise ConfigError(f"unknown embedder {spec!r}; {_SPEC_HELP}")


def embedder_from_id(model_id: str) -> Embedder:
    """Rebuild the embedder whose ``model_id`` an index manifest recorded.

    Raises ConfigError when ``model_id`` is not one this module produces, EmbeddingError when
    the backend cannot be set up (no Gemini key). The model itself still loads lazily.

    >>> embedder_from_id("hash:64").dimension
    64
    """
    kind = model_id.partition(":")[0]
    if kind not in ("sentence-transformers", "hash", "gemini", "fast", "static", "onnx-int8"):
        raise ConfigError(f"unknown embedder id {model_id!r}")
    embedder = make_embedder(model_id)
    if embedder.model_id != model_id:
        raise ConfigError(
            f"embedder id {model_id!r} is not in canonical form (expected {embedder.model_id!r})"
        )
    return embedder
