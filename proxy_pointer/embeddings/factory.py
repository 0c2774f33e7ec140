"""Embedders from plain config strings (the CLI's ``--embedder``) and from index manifests.

:data:`KINDS` is the one list of spec kinds: :func:`make_embedder` parses with it, and the
CLI's help and every "unknown embedder" error print :data:`SPEC_HELP`, made from it. Backends
are imported when a spec names them, so reading the list costs no heavy import.

>>> make_embedder("hash:64").embed_documents(["structural retrieval"]).shape
(1, 64)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from .base import Embedder

__all__ = ["KINDS", "SPEC_HELP", "EmbedderKind", "default_embedder", "embedder_from_id",
           "make_embedder", "teacher_of"]


@dataclass(frozen=True)
class EmbedderKind:
    """One kind of embedder spec, written ``name[:argument]``.

    ``names``: the spec's first part (the first is shown, the rest are aliases); ``usage``:
    how the spec is written, for help and errors; ``build(argument, spec)``: the embedder,
    raising ConfigError for a bad argument.
    """

    names: tuple[str, ...]
    usage: str
    build: Callable[[str, str], Embedder]


def _no_argument(arg: str, spec: str) -> None:
    if arg:
        raise ConfigError(f"embedder {spec!r} takes no argument after ':'; use {SPEC_HELP}")


def _needs_argument(arg: str, spec: str, what: str) -> str:
    if not arg:
        raise ConfigError(f"embedder {spec!r} names no {what}; use {SPEC_HELP}")
    return arg


def _dimension(value: str, spec: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"embedder {spec!r}: dimension must be a positive integer, got {value!r}")
    return int(value)


def _minilm(arg: str, spec: str) -> Embedder:
    _no_argument(arg, spec)
    return default_embedder()


def _minilm_torch(arg: str, spec: str) -> Embedder:
    from .sentence_transformers import SentenceTransformerEmbedder

    _no_argument(arg, spec)
    return SentenceTransformerEmbedder(backend="torch", precision="fp32")


def _minilm_precision(precision: str) -> Callable[[str, str], Embedder]:
    def build(arg: str, spec: str) -> Embedder:
        from .sentence_transformers import SentenceTransformerEmbedder

        _no_argument(arg, spec)
        return SentenceTransformerEmbedder(precision=precision)

    return build


def _minilm_int8(arg: str, spec: str) -> Embedder:
    from .onnx import OnnxEmbedder

    _no_argument(arg, spec)
    return OnnxEmbedder(quantize="int8")


def _onnx_int8(arg: str, spec: str) -> Embedder:
    from .. import bundled
    from .onnx import OnnxEmbedder

    folder = _needs_argument(arg, spec, "model folder")
    # The int8 bundled model's model_id names it, not a folder.
    return OnnxEmbedder(None if folder == bundled.NAME else folder, quantize="int8")


def _sentence_transformers(arg: str, spec: str) -> Embedder:
    from .sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(_needs_argument(arg, spec, "model"))


def _fast(arg: str, spec: str) -> Embedder:
    from .static import FAST_MODEL_ID, StaticEmbedder

    if arg not in ("", FAST_MODEL_ID.partition(":")[2]):
        raise ConfigError(f"embedder {spec!r}: fast mode has one model, "
                          f"{FAST_MODEL_ID.partition(':')[2]!r}; use {SPEC_HELP}")
    return StaticEmbedder()


def _static(arg: str, spec: str) -> Embedder:
    from .static import StaticEmbedder

    return StaticEmbedder(_needs_argument(arg, spec, "model2vec folder"))


def _gemini(arg: str, spec: str) -> Embedder:
    from .gemini import GeminiEmbedder

    model, dimension = arg or "gemini-embedding-001", 768
    head, sep, tail = model.rpartition(":")
    if sep:
        model, dimension = head, _dimension(tail, spec)
    return GeminiEmbedder(model, output_dimensionality=dimension)


def _hash(arg: str, spec: str) -> Embedder:
    from .hashing import HashEmbedder

    return HashEmbedder(_dimension(arg, spec) if arg else 256)


#: Every kind of spec, in the order help lists them.
KINDS: tuple[EmbedderKind, ...] = (
    EmbedderKind(("minilm", "default"), "minilm (default)", _minilm),
    EmbedderKind(("minilm-fp32",), "minilm-fp32", _minilm_precision("fp32")),
    EmbedderKind(("minilm-bf16",), "minilm-bf16", _minilm_precision("bf16")),
    EmbedderKind(("minilm-int8",), "minilm-int8", _minilm_int8),
    EmbedderKind(("minilm-torch",), "minilm-torch", _minilm_torch),
    EmbedderKind(("fast",), "fast", _fast),
    EmbedderKind(("st", "sentence-transformers"), "st:<model name or folder>",
                 _sentence_transformers),
    EmbedderKind(("onnx-int8",), "onnx-int8:<model folder>", _onnx_int8),
    EmbedderKind(("static",), "static:<model2vec folder>", _static),
    EmbedderKind(("gemini",), "gemini[:<model>[:<dimension>]]", _gemini),
    EmbedderKind(("hash",), "hash[:<dimension>]", _hash),
)

#: Appended to any spec: breadcrumbs embedded once per section (:mod:`.crumbs`; its SUFFIX,
#: spelt here so reading the kinds imports nothing).
CRUMBS = "+crumbs"

#: The kinds as one line, e.g. for ``--embedder``'s help.
SPEC_HELP = ", ".join(k.usage for k in KINDS) + f", any of them + {CRUMBS!r}"

_BY_NAME = {name: kind for kind in KINDS for name in kind.names}


def default_embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 embedder, on the path this CPU runs fastest at float32's
    quality (:meth:`~.cpu.CpuKind.document_path`): bfloat16 on PyTorch where the CPU has
    native bfloat16, float32 on ONNX Runtime elsewhere; one model id either way. The model
    loads on first use."""
    from .sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def make_embedder(spec: str) -> Embedder:
    """Build an embedder from a config string; also accepts any embedder's ``model_id``.

    ``"minilm"`` / ``"default"`` - bundled all-MiniLM-L6-v2 on this CPU's fastest path
    (:func:`default_embedder`); ``"minilm-fp32"`` / ``"minilm-bf16"`` force a precision
    (float32 on ONNX Runtime with PyTorch as a fallback, bfloat16 on PyTorch),
    ``"minilm-torch"`` float32 on PyTorch: the same ``model_id``, their vectors agree;
    ``"minilm-int8"`` - the same model with int8 weights (:class:`OnnxEmbedder`, its own
    ``model_id``; ``"onnx-int8:..."`` for another folder); ``"fast"`` - a static model
    distilled from it (:class:`StaticEmbedder`, its index refined by MiniLM at query time:
    :func:`teacher_of`; ``"static:<folder>"`` for another model2vec model);
    ``"st:<name-or-path>"`` (or ``"sentence-transformers:..."``) - another
    sentence-transformers model; ``"gemini"`` / ``"gemini:<model>"`` /
    ``"gemini:<model>:<dim>"`` - :class:`GeminiEmbedder` (default ``gemini-embedding-001`` at
    768 dimensions); ``"hash"`` / ``"hash:<dim>"`` - :class:`HashEmbedder` (default 256).
    Any spec ending ``"+crumbs"`` embeds breadcrumbs and bodies apart
    (:class:`~.crumbs.CrumbEmbedder`).

    Raises ConfigError for an unknown spec or a bad argument (its message lists the kinds),
    and EmbeddingError when Gemini has no API key.

    >>> make_embedder("hash:32").model_id
    'hash:32'
    """
    spec = spec.strip()
    if spec.endswith(CRUMBS):
        from .crumbs import CrumbEmbedder

        return CrumbEmbedder(make_embedder(spec.removesuffix(CRUMBS)))
    name, _, arg = spec.partition(":")
    kind = _BY_NAME.get(name.lower())
    if kind is None:
        raise ConfigError(f"unknown embedder {spec!r}; use {SPEC_HELP}")
    return kind.build(arg, spec)


def embedder_from_id(model_id: str) -> Embedder:
    """Rebuild the embedder whose ``model_id`` an index manifest recorded.

    Raises ConfigError when ``model_id`` is not one an embedder here produces (an alias such
    as ``"minilm"`` is a spec, not an id), EmbeddingError when the backend cannot be set up
    (no Gemini key). The model itself still loads lazily.

    >>> embedder_from_id("hash:64").dimension
    64
    """
    try:
        embedder = make_embedder(model_id)
    except ConfigError as exc:
        raise ConfigError(f"unknown embedder id {model_id!r} ({exc})") from exc
    if embedder.model_id != model_id:
        raise ConfigError(
            f"embedder id {model_id!r} is not in canonical form (expected {embedder.model_id!r})"
        )
    return embedder


def teacher_of(model_id: str) -> str | None:
    """The spec of the model an embedder of ``model_id`` was distilled from, which refines
    its rankings at query time (:mod:`proxy_pointer.search.refine`): fast mode's is the
    bundled MiniLM (``"minilm"``); every other embedder has none.

    >>> teacher_of("fast:minilm-static-v1"), teacher_of("hash:64")
    ('minilm', None)
    """
    from .static import FAST_MODEL_ID

    return "minilm" if model_id == FAST_MODEL_ID else None
