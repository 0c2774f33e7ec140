"""Index stores: where an index's generations live (see :class:`~.base.Store`).

``local`` (a directory, the embedded default) is the one store today; another engine is a
new module beside it, picked by :func:`open_store` from the location string.
"""

from __future__ import annotations

import os

from .base import SCHEMA_VERSION, DocumentRecord, EmbedderInfo, Manifest, OpenedIndex, Store
from .local import LocalStore, current_generation, index_size_bytes, write_lock
from .segments import DocumentParts, MemorySegment, Segment, SegmentSet

__all__ = [
    "SCHEMA_VERSION",
    "DocumentParts",
    "DocumentRecord",
    "EmbedderInfo",
    "LocalStore",
    "Manifest",
    "MemorySegment",
    "OpenedIndex",
    "Segment",
    "SegmentSet",
    "Store",
    "current_generation",
    "index_size_bytes",
    "open_store",
    "write_lock",
]


def open_store(location: str | os.PathLike[str] | Store) -> Store:
    """The store at ``location``: a :class:`Store` is returned as is, a path is a
    :class:`LocalStore` directory (created on first write)."""
    if isinstance(location, Store):
        return location
    return LocalStore(location)
