"""MiniLM on PyTorch in bfloat16: the default embedder's path on CPUs with native bfloat16.

Intel AMX and AVX-512 BF16 multiply bfloat16 matrices at several times the float32 rate.
The transformer of a local Transformer -> mean Pooling [-> Normalize] sentence-transformers
folder (by default the bundled all-MiniLM-L6-v2) is loaded with bfloat16 weights; its
output is pooled and normalised in float32. Texts are sorted by length into batches padded
to a multiple of :data:`PAD_MULTIPLE` tokens: PyTorch keeps per-shape kernels and buffers,
so 256 possible lengths cost memory and time that 16 padded ones do not (the padding
multiples and batch sizes measured: ``benchmarks/results/bf16/bf16-sensitivity.md``).

Its vectors stay within the cosine to float32's that
``benchmarks/results/bf16/bf16-sensitivity.md`` reports on financial filings, so it shares the
float32 model's ``model_id``. Speed and quality: ``benchmarks/results/ingest/shelf-ingest.md``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .. import bundled
from ..errors import EmbeddingError
from .folder import (
    FolderEmbedder,
    batch_tokenizer,
    omp_threads,
    quiet_weight_loading,
)

__all__ = ["PAD_MULTIPLE", "Bf16Embedder"]

#: Batches are padded to a multiple of this many tokens (see the module docstring).
PAD_MULTIPLE = 16


class Bf16Embedder(FolderEmbedder):
    """A sentence-transformers folder on PyTorch with bfloat16 weights (default: the bundled
    MiniLM). ``batch_size``: texts per forward pass after sorting by length (16, the best
    of those measured in ``benchmarks/results/bf16/bf16-sensitivity.md``). ``workers``: batches
    run at a time (default: one per usable core, or one where ``OMP_NUM_THREADS`` is set);
    with more than one, loading sets PyTorch's intra-op threads to one
    (``torch.set_num_threads(1)``, process-wide), so each batch runs on a core of its own.
    The vectors do not depend on it.
    The model loads on first use; :class:`EmbeddingError` when it cannot (not a
    mean-pooling folder, broken files, no torch)."""

    def __init__(self, model: str | os.PathLike[str] | None = None, *,
                 batch_size: int = 16, workers: int | None = None) -> None:
        super().__init__(model, batch_size, workers)
        self._model: Any = None
        name = bundled.NAME if model is None else os.fspath(model)
        self.model_id = f"sentence-transformers:{name}"

    def __repr__(self) -> str:
        return f"Bf16Embedder({self.model_id!r})"

    backend = "bfloat16 backend"

    def _open(self, folder: Path) -> None:
        try:
            import tokenizers  # noqa: F401  (batch_tokenizer's)
            import torch
            from transformers import AutoModel
        except ImportError as exc:
            raise EmbeddingError(f"the bfloat16 backend needs torch and transformers: {exc}"
                                 ) from exc
        try:
            tokenizer = batch_tokenizer(folder, self.max_tokens, PAD_MULTIPLE)
            with quiet_weight_loading():
                model = AutoModel.from_pretrained(str(folder), local_files_only=True,
                                                  dtype=torch.bfloat16).eval()
        except Exception as exc:  # transformers raises OSError, ValueError, RuntimeError...
            raise EmbeddingError(f"cannot load {folder} in bfloat16: {exc}") from exc
        if self.workers > 1 and not omp_threads():
            torch.set_num_threads(1)
        self._tokenizer = tokenizer
        self._model = model

    def _run(self, batch: list[str]) -> np.ndarray:
        import torch

        encodings = self._tokenizer.encode_batch(batch)
        ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)
        types = torch.tensor([e.type_ids for e in encodings], dtype=torch.long)
        try:
            with torch.inference_mode():
                hidden = self._model(input_ids=ids, attention_mask=mask,
                                     token_type_ids=types).last_hidden_state.float()
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self.model_id} (bfloat16) failed: {exc}"
                                 ) from exc
        weights = mask[..., None].float()
        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
        return pooled.numpy()
