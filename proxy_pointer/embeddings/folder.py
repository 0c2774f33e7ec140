"""A local sentence-transformers folder, as the backends that run it themselves read it.

ONNX Runtime (:mod:`.onnx`) and PyTorch in bfloat16 (:mod:`.bf16`) run the transformer of a
Transformer -> mean Pooling [-> Normalize] folder and pool its output themselves; this is
what both read from the folder's config files, how both load weights quietly, and the
embedder both are (:class:`FolderEmbedder`: they differ only in how a batch runs).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import bundled
from ..errors import ConfigError, EmbeddingError
from ..tokens import WORD_PIECES, TokenCounter, TokenizerFile
from .base import as_text_list, embed_by_length

__all__ = ["FolderEmbedder", "batch_tokenizer", "check_layout", "default_workers",
           "hidden_size", "max_seq_length", "model_folder", "omp_threads",
           "quiet_weight_loading", "read_json"]


class FolderEmbedder:
    """A sentence-transformers folder run by this package (default: the bundled MiniLM):
    ``dimension``, ``max_tokens`` and ``tokenizer`` read from the folder, the model loaded
    once on first use (under a lock), texts embedded sorted by length in ``batch_size``
    batches (``workers`` at a time), a query embedded as a passage. A backend sets
    ``model_id`` and implements ``_open`` and ``_run`` (one batch -> mean-pooled float32
    rows). :class:`ConfigError` for a ``batch_size`` or ``workers`` that is not a positive
    integer."""

    model_id: str
    #: How messages name the backend ("ONNX backend").
    backend = "embedding backend"

    def __init__(self, model: str | os.PathLike[str] | None, batch_size: int,
                 workers: int | None = None) -> None:
        for name, value in (("batch_size", batch_size), ("workers", workers)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        self._folder = Path(model).expanduser() if model is not None else None
        self.batch_size = batch_size
        #: Batches run at a time (see :func:`~.base.embed_by_length`; None: one per core,
        #: :func:`default_workers`).
        self.workers = default_workers() if workers is None else workers
        self._tokenizer: Any = None
        self._loaded = False
        self._lock = threading.Lock()
        source = None if model is None else self._source()
        self.dimension = bundled.DIMENSION if source is None else hidden_size(source)
        self.max_tokens = bundled.MAX_TOKENS if source is None else max_seq_length(source)
        self.tokenizer: TokenCounter = (WORD_PIECES if source is None
                                        else TokenizerFile(source / "tokenizer.json"))

    def _source(self) -> Path:
        return model_folder(self._folder)

    def _load(self) -> None:
        """Open the model once (the caller holds the lock)."""
        if self._loaded:
            return
        folder = self._source()
        check_layout(folder, self.backend)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self._open(folder)
        self._loaded = True

    def _open(self, folder: Path) -> None:
        """Load the model and tokenizer of ``folder``; :class:`EmbeddingError` when not."""
        raise NotImplementedError

    def _run(self, batch: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, shape ``(len(texts), dimension)``, in input order."""
        items = as_text_list(texts)
        if items:
            with self._lock:
                self._load()
        # No lock around the runs (ONNX Runtime sessions, PyTorch modules in inference mode
        # and the tokenizer are safe to call from several threads): a server's queries are
        # not held behind a long document batch that an update embeds meanwhile.
        return embed_by_length(items, self.dimension, self.batch_size, self._run,
                               self.workers)

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of one query; this model embeds queries and passages alike."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        return self.embed_documents([text])[0]


def omp_threads() -> int:
    """``OMP_NUM_THREADS`` as a positive integer, or 0 where it is unset or not one."""
    threads = os.environ.get("OMP_NUM_THREADS", "")
    return int(threads) if threads.isdigit() else 0


def default_workers() -> int:
    """Batches a backend runs at a time: one per usable core, each on one thread (on two
    cores that kept both busy where one run's two threads waited for each other, above all
    beside the parsing workers: ``benchmarks/results/cpu/any-cpu.md``); one run where
    ``OMP_NUM_THREADS`` bounds the threads (a Ray actor per core)."""
    if omp_threads():
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def quiet_weight_loading() -> Iterator[None]:
    """Hide transformers' "Loading weights" progress bar, which would clutter CLI output.

    Used wherever transformers loads weights: the ONNX export and the PyTorch backends.
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def read_json(path: Path) -> dict[str, Any]:
    """A model config file as a dict; EmbeddingError naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"{path}: cannot read model config ({exc})") from exc
    if not isinstance(data, dict):
        raise EmbeddingError(f"{path}: model config is not a JSON object")
    return data


def max_seq_length(folder: Path) -> int:
    """The ``max_seq_length`` of a sentence-transformers folder (512 when it states none)."""
    st_config = folder / "sentence_bert_config.json"
    length = read_json(st_config).get("max_seq_length") if st_config.is_file() else None
    return int(length or 512)


def check_layout(folder: Path, what: str) -> None:
    """Refuse a folder that is not Transformer -> mean Pooling [-> Normalize]."""
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise EmbeddingError(f"{folder}: the {what} supports Transformer -> Pooling "
                             f"[-> Normalize] models, this one has {kinds}")
    pooling = read_json(folder / modules[1].get("path", "") / "config.json")
    if not pooling.get("pooling_mode_mean_tokens") or sum(
            bool(v) for k, v in pooling.items() if k.startswith("pooling_mode_")) != 1:
        raise EmbeddingError(f"{folder}: the {what} supports mean pooling only")


def model_folder(folder: Path | None) -> Path:
    """``folder``, or the bundled model's for None; EmbeddingError when it is not a
    sentence-transformers folder."""
    if folder is None:
        return bundled.model_path()
    if not (folder / "modules.json").is_file():
        raise EmbeddingError(f"{folder}: not a sentence-transformers model folder")
    return folder


def hidden_size(folder: Path) -> int:
    """The vector length a folder's transformer gives (384 when its config states none)."""
    return int(read_json(folder / "config.json").get("hidden_size", 0)) or 384


def batch_tokenizer(folder: Path, max_tokens: int, pad_multiple: int | None = None) -> Any:
    """The folder's ``tokenizer.json`` set up for batches: truncated at ``max_tokens`` and
    padded to the batch's longest text (rounded up to ``pad_multiple``). The bundled file
    itself pads and truncates to a fixed 128; sentence-transformers truncates at
    ``max_seq_length`` (256) and pads to the longest text, and so does this."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_tokens)
    pad = tokenizer.padding or {}
    tokenizer.enable_padding(pad_id=int(pad.get("pad_id", 0)),
                             pad_token=str(pad.get("pad_token", "[PAD]")),
                             pad_to_multiple_of=pad_multiple)
    return tokenizer
