"""A local sentence-transformers folder, as the backends that run it themselves read it.

ONNX Runtime (:mod:`.onnx`) and PyTorch in bfloat16 (:mod:`.bf16`) run the transformer of a
Transformer -> mean Pooling [-> Normalize] folder and pool its output themselves; this is
what both read from the folder's config files, and how both load weights quietly.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import EmbeddingError

__all__ = ["check_layout", "max_seq_length", "quiet_weight_loading", "read_json"]


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
