"""The defaults the Python API, the CLI and the framework retrievers share.

One place, so ``proxy-pointer query`` and ``Index.retrieve`` can never drift apart. Why each
retrieval value was chosen is in the README's defaults table (tuned on qasper-dev).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "BUDGET",
    "EMBEDDER",
    "EXPAND",
    "HYBRID",
    "INDEX_DIR",
    "K_SEARCH",
    "MODE",
    "PACKING",
    "REFINE",
    "K",
    "cache_dir",
]

#: Context tokens (MiniLM word pieces) that all retrieved sections may use together.
BUDGET = 2000
#: Unique sections kept after deduplication.
K = 10
#: Chunks searched before deduplication.
K_SEARCH = 200
#: Hand over a section with its subsections ("section") or its own text only ("own").
EXPAND = "section"
#: How nodes are ranked as sections: "chunks", "collapsed" or "traverse".
MODE = "chunks"
#: How sections fill the budget: "evidence" (best blocks) or "sections" (whole, in order).
PACKING = "evidence"
#: Fuse BM25 with dense search by reciprocal rank fusion.
HYBRID = True
#: Chunks of the stored vectors' ranking (and of BM25's) that an index's refiner rescores.
REFINE = 100
#: Index directory of the CLI when ``--index`` is not given.
INDEX_DIR = ".proxy-pointer-index"
#: Embedder spec (:func:`proxy_pointer.embeddings.make_embedder`) of a new index.
EMBEDDER = "minilm"


def cache_dir() -> Path:
    """The user cache folder for embeddings: ``$XDG_CACHE_HOME/proxy-pointer``, else
    ``~/.cache/proxy-pointer``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "proxy-pointer"
