"""Where an update puts documents as they are ready, before anything is committed.

An update stages each parsed and embedded document as soon as its batch is done, and later
documents look up vectors of texts staged earlier (identical chunk texts are embedded once
per run). :class:`MemoryStaging` keeps them in memory, for small updates of an index held
in memory; :class:`DiskStaging` streams them into a segment on disk
(:class:`~.writer.SegmentWriter`), so a build's memory is bounded by its batches and not
by the corpus, and the finished segment is what a store commits (the local store links
its files into place; Milvus inserts its rows in batches).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import os
import shutil
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .disk import DiskSegment
from .segments import DocumentParts, SegmentSet
from .vectors import VectorIndexConfig
from .writer import SegmentWriter, read_source

__all__ = ["DiskStaging", "Labelling", "MemoryStaging", "Staging"]

_SEGMENT, _SOURCES = "seg-000001", "sources"
_counter = itertools.count(1)


@runtime_checkable
class Staging(Protocol):
    """Documents staged by one update: rows numbered in the order they were added."""

    @property
    def n_rows(self) -> int: ...

    def add(self, parts: DocumentParts) -> int:
        """Stage a document; returns the row of its first chunk."""
        ...

    def vectors(self, rows: list[int]) -> np.ndarray:
        """Vectors of staged rows."""
        ...

    def abort(self) -> None:
        """Drop what was staged (an update that failed)."""
        ...


class MemoryStaging:
    """Staged documents held in memory; :attr:`documents` in the order added."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.documents: dict[str, DocumentParts] = {}
        self._starts: list[int] = []
        self._blocks: list[np.ndarray] = []
        self.n_rows = 0

    def add(self, parts: DocumentParts) -> int:
        row0 = self.n_rows
        self.documents[parts.record.doc_id] = parts
        if len(parts.chunks):
            self._starts.append(row0)
            self._blocks.append(np.asarray(parts.vectors, np.float32))
            self.n_rows += len(parts.chunks)
        return row0

    def vectors(self, rows: list[int]) -> np.ndarray:
        out = np.empty((len(rows), self.dimension), np.float32)
        for i, r in enumerate(rows):
            b = bisect.bisect_right(self._starts, r) - 1
            out[i] = self._blocks[b][r - self._starts[b]]
        return out

    def abort(self) -> None:
        self.documents.clear()


class DiskStaging:
    """Staged documents streamed into a segment under ``scratch`` (a folder created here
    and deleted with the segment :meth:`finish` returns, or by :meth:`abort`).

    Documents must come in ``order`` (doc ids; default: ascending), the row order the
    segment keeps.
    """

    def __init__(self, scratch: Path, *, dimension: int, config: VectorIndexConfig,
                 order: Sequence[str] | None = None) -> None:
        self.folder = scratch / f".staging-{os.getpid()}-{next(_counter)}"
        self.folder.mkdir(parents=True)
        self.dimension = dimension
        self._writer = SegmentWriter(self.folder / _SEGMENT, dimension=dimension,
                                     config=config, sources=self.folder / _SOURCES)
        self.doc_ids: list[str] = []
        self._rank = None if order is None else {d: i for i, d in enumerate(order)}

    @property
    def n_rows(self) -> int:
        return self._writer.n_rows

    def add(self, parts: DocumentParts) -> int:
        doc_id = parts.record.doc_id
        if self.doc_ids and self._key(doc_id) <= self._key(self.doc_ids[-1]):
            raise ValueError(f"{doc_id!r} staged after {self.doc_ids[-1]!r}: documents "
                             "must come in the staging's order")
        self.doc_ids.append(doc_id)
        return self._writer.add(parts)

    def _key(self, doc_id: str) -> tuple[int, str]:
        return (0 if self._rank is None else self._rank.get(doc_id, len(self._rank)), doc_id)

    def vectors(self, rows: list[int]) -> np.ndarray:
        return self._writer.vectors(rows)

    def finish(self) -> DiskSegment:
        """The staged segment, opened; its folder is deleted when it is no longer used
        (a store that commits it has linked or copied its files by then)."""
        folder = self._writer.finish()
        source = functools.partial(read_source, self.folder / _SOURCES)
        segment = DiskSegment(folder, source=source, dimension=self.dimension)
        weakref.finalize(segment, shutil.rmtree, self.folder, True)
        return segment

    def abort(self) -> None:
        self._writer.abort()
        self.remove()

    def remove(self) -> None:
        """Delete the folder (once a store has taken in the finished segment)."""
        shutil.rmtree(self.folder, ignore_errors=True)


class Labelling:
    """A staging that gives each document its metadata as it is staged: the new one from
    ``meta``, else the one stored with the document it replaces in ``segments``."""

    def __init__(self, staging: Staging, meta: Mapping[str, dict[str, Any]],
                 segments: SegmentSet) -> None:
        self._staging, self._meta, self._segments = staging, meta, segments

    @property
    def n_rows(self) -> int:
        return self._staging.n_rows

    def add(self, parts: DocumentParts) -> int:
        d, segs = parts.record.doc_id, self._segments
        kept = segs.segment_of(d).record(d).metadata if d in segs else {}
        return self._staging.add(dataclasses.replace(parts, record=dataclasses.replace(
            parts.record, metadata=self._meta.get(d, kept))))

    def vectors(self, rows: list[int]) -> np.ndarray:
        return self._staging.vectors(rows)

    def abort(self) -> None:
        self._staging.abort()
