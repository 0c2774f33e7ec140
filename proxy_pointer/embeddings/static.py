"""Fast mode: a static (model2vec) embedder distilled from the bundled MiniLM, offline.

A static model keeps one vector per word piece (MiniLM's own output for that piece, reduced
to 256 dimensions by PCA and weighted by frequency) and embeds a text as the mean of its
pieces' vectors: no transformer at embedding time, so it runs some hundred times faster than
MiniLM on a CPU. Alone it ranks worse; an index of it has MiniLM refine each query's best
chunks (:mod:`proxy_pointer.search.refine`, ``benchmarks/results/refine/fast-refine.md``).

The model is distilled once, on first use, from the bundled all-MiniLM-L6-v2 (about 20-80 s
on two cores, no network) and kept under the user cache folder; distillation is
deterministic, so every machine makes the same model. Needs ``pip install
'proxy-pointer[fast]'`` (model2vec).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import bundled, defaults
from ..errors import EmbeddingError
from ..package import needs
from ..tokens import WORD_PIECES, TokenCounter, TokenizerFile
from .base import as_text_list, normalize_rows

__all__ = ["FAST_MODEL_ID", "StaticEmbedder", "distilled_minilm"]

#: The ``model_id`` of fast mode. Bump the suffix when the distillation recipe changes, so an
#: index built with the old model is refused rather than queried with different vectors.
FAST_MODEL_ID = "fast:minilm-static-v1"
_PCA_DIMS = 256
# model2vec's encode() truncates every text to the model's max_length tokens, 512 unless the
# model's config says otherwise (distillation keeps that default).
_MODEL2VEC_MAX_LENGTH = 512
_INSTALL_HINT = needs("fast mode", "model2vec", "fast")


def distilled_minilm(cache_dir: str | os.PathLike[str] | None = None, *,
                     quiet: bool = False) -> Path:
    """Folder of the static model distilled from the bundled MiniLM; made on first call.

    The folder is written beside its final place and renamed into it, so a killed
    distillation leaves nothing half-written. Unless ``quiet``, one line on stderr says that
    distillation runs; the libraries' own progress bars are silenced. Raises
    :class:`EmbeddingError` when model2vec is missing or the distillation fails.
    """
    root = Path(cache_dir) if cache_dir is not None else defaults.cache_dir()
    target = root / "models" / FAST_MODEL_ID.split(":", 1)[1]
    if (target / "model.safetensors").is_file():
        return target
    try:
        from model2vec.distill import distill
    except ImportError as exc:
        raise EmbeddingError(_INSTALL_HINT) from exc
    if not quiet:
        print(f"proxy-pointer: distilling the fast embedder from the bundled MiniLM into "
              f"{target} (once, about a minute, offline)", file=sys.stderr)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        # model2vec and transformers draw progress bars on stderr (a bar per 256 of
        # MiniLM's 30k word pieces: hundreds of lines where stderr is a log, not a
        # terminal); the line above says what is happening, so their output is dropped.
        with contextlib.redirect_stderr(io.StringIO()):
            model = distill(model_name=str(bundled.model_path()), pca_dims=_PCA_DIMS)
        model.save_pretrained(str(tmp))
        tmp.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "model.safetensors").is_file():  # else another process won
                raise
    except EmbeddingError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"distilling the fast embedder into {target} failed: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class StaticEmbedder:
    """A model2vec static model: the mean of per-word-piece vectors, L2-normalized.

    ``path`` is a saved model2vec folder; without it, fast mode's distilled MiniLM (made on
    first use, see :func:`distilled_minilm`). Deterministic: the same text always gets the
    same vector. Raises :class:`EmbeddingError` when the model cannot be loaded.

    A static model has no attention window, but model2vec truncates each text at the
    model's ``max_length`` (512 tokens by default), so that is ``max_tokens``; a model saved
    without a limit reads every token and declares ``sys.maxsize``. Fast mode keeps the
    bundled MiniLM's word-piece vocabulary, so its ``tokenizer`` is those word pieces
    (:mod:`proxy_pointer.tokens`); another model counts with its ``tokenizer.json``.

    >>> emb = StaticEmbedder()                                  # doctest: +SKIP
    >>> emb.embed_documents(["static embeddings"]).shape        # doctest: +SKIP
    (1, 256)
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 cache_dir: str | os.PathLike[str] | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._cache_dir = cache_dir
        self._model: Any = None
        self._lock = threading.Lock()
        self.model_id = FAST_MODEL_ID if path is None else f"static:{path}"
        self.tokenizer: TokenCounter = WORD_PIECES
        self.max_tokens = _MODEL2VEC_MAX_LENGTH
        self.dimension = _PCA_DIMS
        if self._path is not None:
            model = self._load()
            self.dimension = int(model.dim)
            self.max_tokens = sys.maxsize if model.max_length is None else int(model.max_length)
            self.tokenizer = TokenizerFile(self._path / "tokenizer.json")

    def __repr__(self) -> str:
        return f"StaticEmbedder({self.model_id!r})"

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            from model2vec import StaticModel
        except ImportError as exc:
            raise EmbeddingError(_INSTALL_HINT) from exc
        path = self._path or distilled_minilm(self._cache_dir)
        try:
            model = StaticModel.from_pretrained(str(path))
        except Exception as exc:
            raise EmbeddingError(f"{path}: not a loadable model2vec model ({exc})") from exc
        self._model = model
        return model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, shape ``(len(texts), dimension)``."""
        items = as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), np.float32)
        with self._lock:
            model = self._load()
        vectors = model.encode(items, show_progress_bar=False)
        return normalize_rows(np.asarray(vectors, dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of one query; queries and passages are embedded alike."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        return self.embed_documents([text])[0]
