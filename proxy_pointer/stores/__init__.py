"""Index stores: where an index's generations live (see :class:`~.base.Store`).

``local`` (a directory, the embedded default) and ``milvus`` (Milvus Lite or a Milvus
server, ``pip install 'proxy-pointer[milvus]'``), picked by :func:`open_store` from the
location string.
"""

from __future__ import annotations

import os

from .base import (
    SCHEMA_VERSION,
    DocumentRecord,
    EmbedderInfo,
    Manifest,
    OpenedIndex,
    Store,
    VocabularyInfo,
)
from .local import LocalStore, current_generation, index_size_bytes, write_lock
from .milvus import MilvusStore
from .segments import DocumentParts, MemorySegment, Segment, SegmentSet

__all__ = [
    "SCHEMA_VERSION",
    "DocumentParts",
    "DocumentRecord",
    "EmbedderInfo",
    "LocalStore",
    "Manifest",
    "MemorySegment",
    "MilvusStore",
    "OpenedIndex",
    "Segment",
    "SegmentSet",
    "Store",
    "VocabularyInfo",
    "current_generation",
    "index_size_bytes",
    "open_store",
    "write_lock",
]


def open_store(location: str | os.PathLike[str] | Store, *, token: str | None = None
               ) -> Store:
    """The store at ``location``: a :class:`Store` is returned as is, ``milvus:URI[#NAME]``
    is a :class:`~.milvus.MilvusStore` (``token`` for a server, else ``MILVUS_TOKEN``), any
    other path a :class:`LocalStore` directory (created on first write)."""
    if isinstance(location, Store):
        return location
    if isinstance(location, str) and location.startswith("milvus:"):
        return MilvusStore(location, token=token)
    return LocalStore(location)
