"""MiniLM on ONNX Runtime: the default embedder's fast path, and an int8 option.

The bundled all-MiniLM-L6-v2 (or any local sentence-transformers folder with a BERT-style
transformer and mean pooling) is exported once with ``torch.onnx`` into the user cache
folder, fused with ONNX Runtime's transformer optimizer, and run by ONNX Runtime with the
texts sorted by length into small batches (so little padding is embedded).

- ``quantize=None`` gives the same vectors as PyTorch up to float noise (checked by the
  tests), so it keeps the PyTorch model's ``model_id``: indexes and embedding caches made by
  either backend are interchangeable.
- ``quantize="int8"`` (per-channel dynamic int8 weights) moves vectors, so it has its own
  ``model_id`` and an index built with it refuses other embedders.

Speed and quality of each: ``benchmarks/results/ingest/ingest.md`` and ``embeddings.md``.

Export is written beside its final place and renamed into it, so a killed export leaves
nothing half-written; a cached file that does not load is exported again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .. import bundled, defaults
from ..errors import ConfigError, EmbeddingError
from .folder import (
    FolderEmbedder,
    batch_tokenizer,
    omp_threads,
    quiet_weight_loading,
)

__all__ = ["OnnxEmbedder", "onnx_available"]

#: Bump when the export or optimisation recipe changes, so an old file is not reused.
_RECIPE = "v1"
_QUANTIZE = (None, "int8")


def onnx_available() -> bool:
    """Whether ONNX Runtime is installed (it is a core dependency; this guards odd installs,
    where the default embedder falls back to PyTorch). Looks it up without importing it."""
    return importlib.util.find_spec("onnxruntime") is not None


def _display_name(folder: Path, is_bundled: bool) -> str:
    return bundled.NAME if is_bundled else folder.name


def _fingerprint(folder: Path, quantize: str | None) -> str:
    """Cache key: the weights' size and mtime, the torch and ONNX Runtime versions, recipe.

    Versions come from package metadata: importing torch (~1.5 s) only to read its version
    would slow every process's first embedding, which otherwise never needs torch.
    """
    weights = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    parts = [str(folder.resolve()), _RECIPE, str(quantize), _version("torch"),
             _version("onnxruntime")]
    for w in weights:
        st = w.stat()
        parts.append(f"{w.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _export(folder: Path, target: Path, quantize: str | None) -> None:
    """Export ``folder``'s transformer to ``target`` (optimised, optionally int8)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    with quiet_weight_loading():
        model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
             if n in tokenizer.model_input_names]

    class _Hidden(torch.nn.Module):
        # Keyword call: transformers 5 reordered BertModel.forward's positional arguments.
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    sample = tokenizer(["proxy pointer", "structural retrieval of sections"], padding=True,
                       return_tensors="pt")
    raw = target.with_name(target.name + ".raw")
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Hidden(), tuple(sample[n] for n in names), str(raw),
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    try:
        if quantize == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            # Per-channel weights on the unfused graph kept cosine ~0.994 to fp32; the
            # per-tensor default dropped to ~0.94.
            quantize_dynamic(str(raw), str(target), per_channel=True,
                             weight_type=QuantType.QInt8)
        else:
            try:
                from onnxruntime.transformers import optimizer
            except ImportError:  # the fusion tool needs the onnx package; run unfused
                os.replace(raw, target)
                return
            fused = optimizer.optimize_model(
                str(raw), model_type="bert", num_heads=int(config.num_attention_heads),
                hidden_size=int(config.hidden_size))
            fused.save_model_to_file(str(target))
    finally:
        raw.unlink(missing_ok=True)


class OnnxEmbedder(FolderEmbedder):
    """A sentence-transformers folder run by ONNX Runtime; by default the bundled MiniLM.

    ``model``: None for the bundled all-MiniLM-L6-v2, or a local sentence-transformers folder
    (Transformer -> mean Pooling [-> Normalize]). ``quantize``: None (fp32, the PyTorch
    model's ``model_id``) or ``"int8"``. ``batch_size``: texts per run after sorting by length
    (8, the best of those tried on two cores). The model is exported on first use into
    ``cache_dir`` (default: the user cache folder), with a one-line notice on stderr.
    ``workers``: batches run at a time, each on one thread of ONNX Runtime (default: one per
    core this process may use; with ``OMP_NUM_THREADS`` set, one run of that many threads,
    as a Ray actor per core asks). The vectors do not depend on it.

    ``max_tokens`` is the model's ``max_seq_length`` (256 for the bundled MiniLM), where
    texts are truncated; ``tokenizer`` counts with the model's own ``tokenizer.json`` (the
    bundled model's: the word pieces of :mod:`proxy_pointer.tokens`).

    Raises :class:`EmbeddingError` when the model cannot be exported or loaded, and
    :class:`ConfigError` on bad arguments.
    """

    def __init__(self, model: str | os.PathLike[str] | None = None, *,
                 quantize: str | None = None, batch_size: int = 8,
                 cache_dir: str | os.PathLike[str] | None = None, quiet: bool = False,
                 workers: int | None = None) -> None:
        if quantize not in _QUANTIZE:
            raise ConfigError(f"quantize must be one of {_QUANTIZE}, got {quantize!r}")
        super().__init__(model, batch_size, workers)
        self.quantize = quantize
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._quiet = quiet
        self._session: Any = None
        self._inputs: list[str] = []
        name = bundled.NAME if model is None else os.fspath(model)
        self.model_id = (f"sentence-transformers:{name}" if quantize is None
                         else f"onnx-int8:{name}")

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.model_id!r})"

    def model_file(self) -> Path:
        """Path of the exported ONNX file, exporting it first if it is not cached."""
        folder = self._source()
        root = self._cache_dir or defaults.cache_dir()
        suffix = "int8" if self.quantize else "fp32"
        name = _display_name(folder, self._folder is None)
        key = _fingerprint(folder, self.quantize)
        target = root / "models" / f"onnx-{name}-{suffix}-{key}.onnx"
        if target.is_file():
            return target
        if not self._quiet:
            print(f"proxy-pointer: exporting {name} to ONNX ({suffix}) into {target.parent}"
                  " (once, about 10-30 s, offline)", file=sys.stderr)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            _export(folder, tmp, self.quantize)
            os.replace(tmp, target)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"exporting {folder} to ONNX failed: {exc}") from exc
        finally:
            tmp.unlink(missing_ok=True)
        return target

    backend = "ONNX backend"

    def _open(self, folder: Path) -> None:
        try:
            import onnxruntime as ort
            import tokenizers  # noqa: F401  (batch_tokenizer's)
        except ImportError as exc:
            raise EmbeddingError("the ONNX backend needs onnxruntime: pip install onnxruntime"
                                 ) from exc
        tokenizer = batch_tokenizer(folder, self.max_tokens)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        threads = omp_threads()
        if threads:
            # Bounded like PyTorch: several of these on one machine (Ray actors, one per
            # core) must not each start a thread per core.
            options.intra_op_num_threads = threads
        elif self.workers > 1:
            # Each of the concurrent runs on one core: no run waits for another's threads.
            options.intra_op_num_threads = 1
        path = self.model_file()
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception:
            # A cached file that does not load (truncated by a full disk, say): export again.
            path.unlink(missing_ok=True)
            try:
                session = ort.InferenceSession(str(self.model_file()), options,
                                               providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise EmbeddingError(f"cannot load ONNX model {path}: {exc}") from exc
        self._inputs = [i.name for i in session.get_inputs()]
        self._tokenizer = tokenizer
        self._session = session

    def _run(self, batch: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(batch)
        arrays = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        try:
            hidden = self._session.run(None, {n: arrays[n] for n in self._inputs})[0]
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self.model_id} failed: {exc}") from exc
        mask = arrays["attention_mask"][..., None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
