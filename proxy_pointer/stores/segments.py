"""Segments: the immutable units an index's chunks live in, and the view that joins them.

An index generation is a list of *segments* (as in Lucene): each holds some documents
whole, their chunk rows, vectors and lexical index, and never changes once written. An
update adds one segment with the new and changed documents and marks the replaced or
removed documents of older segments *deleted*; only small segments are ever rewritten
(merged). So adding 10 documents to a million-chunk index writes 10 documents' worth of
files, and a reader of the previous generation keeps reading the same immutable files.

:class:`MemorySegment` holds freshly indexed documents in memory (an index built and not
yet saved, or the pending part of an update); :class:`~.disk.DiskSegment` is one saved by
the local store and read on demand. :class:`SegmentSet` joins segments into the rows the
retriever sees: *live* rows numbered ``0..n-1`` in segment order, deleted ones skipped.
Lexical scores are combined with corpus-wide term statistics (see :meth:`SegmentSet.lexical`),
so a small new segment ranks like the rest of the index.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from ..parse.chunking import Chunk
from ..parse.tree import Tree
from ..vocab.keys import heading_key
from .analyzer import tokenize
from .bm25 import TermStats, idf
from .lexical import LexicalIndex, LexicalSearch, ViewCache
from .records import DocumentRecord
from .vectors import VectorIndex, VectorIndexConfig, VectorSearch

__all__ = [
    "MAX_SMALL_SEGMENTS",
    "SMALL_SHARE",
    "DocumentParts",
    "MemorySegment",
    "PlannedSegment",
    "Pointer",
    "Segment",
    "SegmentSet",
    "chunk_crumbs",
    "plan_write",
    "remember",
]

#: A segment is *small* below this share of the index's live rows; a store merges its small
#: segments into one once there would be more than :data:`MAX_SMALL_SEGMENTS` of them.
SMALL_SHARE = 1 / 16
MAX_SMALL_SEGMENTS = 8

#: ``(doc_id, node_id, start_char, start_line, end_line)``: where a chunk row points.
Pointer = tuple[str, str | None, int, int, int]


@dataclass(frozen=True)
class DocumentParts:
    """One document whole: its record, stored text, chunks and their vectors (row i = chunk
    i), and its skeleton tree as JSON, so that a query process never parses Markdown."""

    record: DocumentRecord
    text: str
    chunks: tuple[Chunk, ...]
    vectors: np.ndarray
    tree_json: str = ""  # Tree.to_json(include_text=False); "" when not kept


def chunk_crumbs(chunk: Chunk, doc_title: str) -> tuple[str, ...]:
    """A chunk's breadcrumb: the document title, then the node's path (title not repeated)."""
    if chunk.node_id is None or (chunk.path and chunk.path[0] == doc_title):
        return tuple(chunk.path)
    return (doc_title, *chunk.path)


def remember(cache: OrderedDict[str, Any], key: str, value: Any, size: int) -> None:
    """Put ``value`` in a segment reader's LRU ``cache``, keeping its ``size`` newest."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


@runtime_checkable
class Segment(Protocol):
    """An immutable set of whole documents with their chunk rows (local rows ``0..n-1``)."""

    name: str  # "" for a segment only in memory

    @property
    def n_rows(self) -> int: ...

    def sha256s(self) -> dict[str, str]:
        """``doc_id -> sha256`` of every document in the segment (deleted ones included)."""
        ...

    def record(self, doc_id: str) -> DocumentRecord: ...

    def metadata(self) -> dict[str, dict[str, Any]]:
        """``doc_id -> metadata`` of every document (deleted ones included), read at once:
        what access filters evaluate."""
        ...

    def cards(self) -> dict[str, dict[str, Any]]:
        """``doc_id -> card`` (:class:`~proxy_pointer.parse.cards.Card` as a dict, ``{}``
        where none) of every document (deleted ones included), read at once: what routing
        and card filters evaluate."""
        ...

    def text(self, doc_id: str) -> str: ...

    def tree(self, doc_id: str) -> Tree | None:
        """The document's saved skeleton tree (``None``: not saved; build it)."""
        ...

    def pointers(self, rows: Sequence[int]) -> list[Pointer]:
        """``(doc_id, node_id, start_char, start_line, end_line)`` of each row: a chunk
        without its text."""
        ...

    def doc_rows(self, doc_id: str) -> np.ndarray:
        """Local rows of a document's chunks, in order."""
        ...

    def chunks(self, rows: Sequence[int]) -> list[Chunk]: ...

    def embed_texts(self, rows: Sequence[int]) -> list[str]: ...

    def vectors(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Vectors of ``rows`` (all rows when ``None``; may be memory-mapped)."""
        ...

    def vector_index(self, config: VectorIndexConfig) -> VectorSearch: ...

    def lexical(self) -> LexicalSearch: ...

    def crumbs(self, rows: Sequence[int]) -> list[tuple[str, ...]]: ...

    def rows_mentioning(self, needle: str) -> np.ndarray:
        """Local rows whose normalized breadcrumb contains ``needle`` (a prefilter)."""
        ...

    def parts(self, doc_id: str) -> DocumentParts: ...


class MemorySegment:
    """Documents held in memory, in the order given (row order follows it)."""

    name = ""

    def __init__(self, docs: Sequence[DocumentParts], dimension: int) -> None:
        self._docs = {d.record.doc_id: d for d in docs}
        self._rows: dict[str, np.ndarray] = {}
        chunks: list[Chunk] = []
        crumbs: list[tuple[str, ...]] = []
        parts = []
        for d in docs:
            self._rows[d.record.doc_id] = np.arange(len(chunks), len(chunks) + len(d.chunks))
            chunks.extend(d.chunks)
            crumbs.extend(chunk_crumbs(c, d.record.title) for c in d.chunks)
            if len(d.chunks):
                parts.append(np.asarray(d.vectors, np.float32))
        self._chunks = tuple(chunks)
        self._crumbs = crumbs
        self._norm: list[str] | None = None
        self._vectors = (np.ascontiguousarray(np.concatenate(parts)) if parts
                         else np.zeros((0, dimension), np.float32))
        self._vindex: VectorIndex | None = None
        self._lexical: LexicalIndex | None = None

    @property
    def n_rows(self) -> int:
        return len(self._chunks)

    @property
    def documents(self) -> list[DocumentParts]:
        return list(self._docs.values())

    def sha256s(self) -> dict[str, str]:
        return {d: p.record.sha256 for d, p in self._docs.items()}

    def record(self, doc_id: str) -> DocumentRecord:
        return self._docs[doc_id].record

    def metadata(self) -> dict[str, dict[str, Any]]:
        return {d: p.record.metadata for d, p in self._docs.items()}

    def cards(self) -> dict[str, dict[str, Any]]:
        return {d: p.record.card for d, p in self._docs.items()}

    def text(self, doc_id: str) -> str:
        return self._docs[doc_id].text

    def tree(self, doc_id: str) -> Tree | None:
        p = self._docs[doc_id]
        return Tree.from_json(p.tree_json, text=p.text) if p.tree_json else None

    def pointers(self, rows: Sequence[int]) -> list[Pointer]:
        return [(c.doc_id, c.node_id, c.start_char, c.start_line, c.end_line)
                for c in (self._chunks[r] for r in rows)]

    def doc_rows(self, doc_id: str) -> np.ndarray:
        return self._rows[doc_id]

    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        return [self._chunks[r] for r in rows]

    def embed_texts(self, rows: Sequence[int]) -> list[str]:
        return [self._chunks[r].embed_text for r in rows]

    def vectors(self, rows: np.ndarray | None = None) -> np.ndarray:
        return self._vectors if rows is None else self._vectors[rows]

    def vector_index(self, config: VectorIndexConfig) -> VectorIndex:
        # In memory, "auto" and "ivf" search exactly: an IVF index is built when saved.
        if self._vindex is None or self._vindex.config != config:
            self._vindex = VectorIndex(self._vectors, config)
        return self._vindex

    def lexical(self) -> LexicalIndex:
        if self._lexical is None:
            self._lexical = LexicalIndex.build([c.embed_text for c in self._chunks])
        return self._lexical

    def built_lexical(self) -> LexicalIndex | None:
        """The lexical index if a search already built it (a save then reuses it)."""
        return self._lexical

    def crumbs(self, rows: Sequence[int]) -> list[tuple[str, ...]]:
        return [self._crumbs[r] for r in rows]

    def rows_mentioning(self, needle: str) -> np.ndarray:
        if self._norm is None:
            self._norm = ["\x1f".join(heading_key(t) for t in c) for c in self._crumbs]
        return np.asarray([i for i, s in enumerate(self._norm) if needle in s], np.int64)

    def parts(self, doc_id: str) -> DocumentParts:
        return self._docs[doc_id]


@dataclass(frozen=True)
class _Slot:
    segment: Segment
    deleted: frozenset[str]  # documents of the segment that are no longer live
    dead: np.ndarray  # their local rows, sorted
    live: np.ndarray | None  # live local rows, sorted (None: all rows)
    offset: int  # global row of the first live row

    @property
    def n_live(self) -> int:
        return self.segment.n_rows - len(self.dead)

    def to_global(self, local: np.ndarray) -> np.ndarray:
        local = np.asarray(local, np.int64)
        if self.live is None:
            return local + self.offset
        return np.searchsorted(self.live, local) + self.offset

    def to_local(self, g: np.ndarray) -> np.ndarray:
        pos = np.asarray(g, np.int64) - self.offset
        return pos if self.live is None else self.live[pos]


class SegmentSet:
    """Segments joined into one index: live rows ``0..n-1`` in segment order.

    ``slots`` pairs each segment with the ids of its documents that are deleted (replaced
    by a later segment or removed). A document id is live in at most one segment.
    """

    def __init__(self, slots: Iterable[tuple[Segment, Iterable[str]]], dimension: int) -> None:
        self.dimension = dimension
        self._slots: list[_Slot] = []
        self._home: dict[str, int] = {}
        offset = 0
        for seg, deleted in slots:
            deleted = frozenset(deleted)
            dead = (np.sort(np.concatenate([seg.doc_rows(d) for d in deleted]))
                    if deleted else np.empty(0, np.int64))
            live = (np.setdiff1d(np.arange(seg.n_rows), dead, assume_unique=True)
                    if len(dead) else None)
            slot = _Slot(seg, deleted, dead.astype(np.int64), live, offset)
            for doc_id in seg.sha256s():
                if doc_id not in deleted:
                    self._home[doc_id] = len(self._slots)
            self._slots.append(slot)
            offset += slot.n_live
        self._starts = np.asarray([s.offset for s in self._slots], np.int64)
        self.n_rows = offset
        self._scopes = ViewCache(8)  # a scope's per-segment rows, count, length: _scoped

    # --- structure ----------------------------------------------------------------------
    @property
    def slots(self) -> list[tuple[Segment, frozenset[str]]]:
        """``(segment, deleted doc ids)`` in order: what a store writes."""
        return [(s.segment, s.deleted) for s in self._slots]

    def doc_ids(self) -> Iterator[str]:
        """Live document ids in segment order."""
        return iter(self._home)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._home

    def n_documents(self) -> int:
        return len(self._home)

    def segment_of(self, doc_id: str) -> Segment:
        """The segment holding a live document; ``KeyError`` for an unknown id."""
        return self._slots[self._home[doc_id]].segment

    def sha256s(self) -> dict[str, str]:
        """``doc_id -> sha256`` of every live document."""
        return self._live(lambda seg: seg.sha256s())

    def metadata(self) -> dict[str, dict[str, Any]]:
        """``doc_id -> metadata`` of every live document."""
        return self._live(lambda seg: seg.metadata())

    def cards(self) -> dict[str, dict[str, Any]]:
        """``doc_id -> card`` of every live document."""
        return self._live(lambda seg: seg.cards())

    def _live(self, per_segment: Callable[[Segment], dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, s in enumerate(self._slots):
            for d, v in per_segment(s.segment).items():
                if self._home.get(d) == i:
                    out[d] = v
        return out

    def with_changes(self, staged: Sequence[DocumentParts], removed: Iterable[str]
                     ) -> SegmentSet:
        """A new view: ``staged`` documents added or replacing, ``removed`` ones gone.

        Staged documents go to a memory segment at the end (merged with one already there).
        """
        gone = set(removed) | {d.record.doc_id for d in staged}
        slots: list[tuple[Segment, Iterable[str]]] = []
        pending: list[DocumentParts] = []
        for i, s in enumerate(self._slots):
            if isinstance(s.segment, MemorySegment) and i == len(self._slots) - 1:
                pending = [p for p in s.segment.documents
                           if p.record.doc_id not in gone and p.record.doc_id not in s.deleted]
                continue
            mine = {d for d in gone if self._home.get(d) == i}
            slots.append((s.segment, s.deleted | mine))
        docs = sorted([*pending, *staged], key=lambda p: p.record.doc_id)
        if docs:
            slots.append((MemorySegment(docs, self.dimension), ()))
        return SegmentSet(slots, self.dimension)

    def with_segment(self, segment: Segment, removed: Iterable[str]) -> SegmentSet:
        """A new view: ``segment`` appended (its documents replace live ones of the same
        id), ``removed`` ones gone."""
        gone = set(removed) | set(segment.sha256s())
        slots: list[tuple[Segment, Iterable[str]]] = [
            (s.segment, s.deleted | {d for d in gone if self._home.get(d) == i})
            for i, s in enumerate(self._slots)]
        return SegmentSet([*slots, (segment, ())], self.dimension)

    def relabelled(self, meta: Mapping[str, dict[str, Any]], skip: Collection[str]
                   ) -> dict[str, DocumentParts]:
        """Live documents (not in ``skip``) whose metadata ``meta`` changes, whole with their
        chunks and vectors as they are and the new metadata: to restage without reading or
        embedding anything."""
        out: dict[str, DocumentParts] = {}
        for d, m in meta.items():
            if d in skip or d not in self._home:
                continue
            seg = self.segment_of(d)
            if seg.record(d).metadata != m:
                parts = seg.parts(d)
                out[d] = dataclasses.replace(parts, record=dataclasses.replace(
                    parts.record, metadata=m))
        return out

    # --- rows ---------------------------------------------------------------------------
    def _split(self, rows: np.ndarray) -> Iterator[tuple[_Slot, np.ndarray, np.ndarray]]:
        """``(slot, positions in rows, local rows)`` for each slot that ``rows`` touch."""
        rows = np.asarray(rows, np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.n_rows):
            raise IndexError(f"chunk row out of range 0..{self.n_rows - 1}")
        if len(rows) > 1 and not (np.diff(rows) < 0).any():
            # Sorted (filters, access views: up to every row): cut at segment starts,
            # without sorting again.
            cuts = np.searchsorted(rows, self._starts)
            for slot, lo, hi in zip(self._slots, cuts, [*cuts[1:], len(rows)], strict=True):
                if hi > lo:
                    yield slot, np.arange(lo, hi), slot.to_local(rows[lo:hi])
            return
        which = np.searchsorted(self._starts, rows, side="right") - 1
        for si in np.unique(which):
            pos = np.flatnonzero(which == si)
            slot = self._slots[int(si)]
            yield slot, pos, slot.to_local(rows[pos])

    def chunks(self, rows: Sequence[int] | np.ndarray) -> list[Chunk]:
        out: list[Chunk | None] = [None] * len(rows)
        for slot, pos, local in self._split(np.asarray(rows, np.int64)):
            for p, c in zip(pos.tolist(), slot.segment.chunks(local.tolist()), strict=True):
                out[p] = c
        return out  # type: ignore[return-value]

    def pointers(self, rows: Sequence[int] | np.ndarray) -> list[Pointer]:
        """``(doc_id, node_id, start_char, start_line, end_line)`` of each row, read
        without the chunk texts."""
        out: list[Pointer] = [("", None, 0, 0, 0)] * len(rows)
        for slot, pos, local in self._split(np.asarray(rows, np.int64)):
            for p, c in zip(pos.tolist(), slot.segment.pointers(local.tolist()), strict=True):
                out[p] = c
        return out

    def crumbs(self, rows: Sequence[int] | np.ndarray) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = [()] * len(rows)
        for slot, pos, local in self._split(np.asarray(rows, np.int64)):
            for p, c in zip(pos.tolist(), slot.segment.crumbs(local.tolist()), strict=True):
                out[p] = c
        return out

    def vectors(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Vectors of ``rows`` (all live rows when ``None``, materialized)."""
        if rows is None:
            if len(self._slots) == 1 and self._slots[0].live is None:
                return self._slots[0].segment.vectors()
            parts = [s.segment.vectors(s.live) if s.live is not None else s.segment.vectors()
                     for s in self._slots]
            return (np.concatenate(parts) if parts
                    else np.zeros((0, self.dimension), np.float32))
        out = np.zeros((len(rows), self.dimension), np.float32)
        for slot, pos, local in self._split(np.asarray(rows, np.int64)):
            order = np.argsort(local, kind="stable")
            out[pos[order]] = slot.segment.vectors(local[order])
        return out

    def rows_for(self, doc_ids: Iterable[str]) -> np.ndarray:
        """Global rows of the given live documents (unknown ids give none)."""
        parts = []
        for d in doc_ids:
            i = self._home.get(d)
            if i is not None:
                slot = self._slots[i]
                parts.append(slot.to_global(slot.segment.doc_rows(d)))
        return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)

    def rows_mentioning(self, needle: str) -> np.ndarray:
        """Global live rows whose normalized breadcrumb contains ``needle``."""
        parts = []
        for slot in self._slots:
            local = slot.segment.rows_mentioning(needle)
            if len(slot.dead):
                local = local[~np.isin(local, slot.dead)]
            parts.append(slot.to_global(local))
        return np.sort(np.concatenate(parts)) if parts else np.empty(0, np.int64)

    # --- search -------------------------------------------------------------------------
    def dense(self, query: np.ndarray, k: int, config: VectorIndexConfig,
              rows: np.ndarray | None = None, *, exact: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` live rows by inner product with ``query``: ``(scores, rows)``."""
        scores: list[np.ndarray] = []
        found: list[np.ndarray] = []
        if rows is not None:
            for slot, _, local in self._split(np.asarray(rows, np.int64)):
                s, r = slot.segment.vector_index(config).search(query, k, local, exact=exact)
                scores.append(s)
                found.append(slot.to_global(r))
        else:
            for slot in self._slots:
                if slot.n_live == 0:
                    continue
                s, r = slot.segment.vector_index(config).search(
                    query, k, exclude=slot.dead if len(slot.dead) else None, exact=exact)
                scores.append(s)
                found.append(slot.to_global(r))
        if not scores:
            return np.empty(0, np.float32), np.empty(0, np.int64)
        s, r = np.concatenate(scores), np.concatenate(found)
        order = np.lexsort((r, -s))[:k]
        return s[order].astype(np.float32), r[order]

    def term_stats(self, tokens: Sequence[str], scope: np.ndarray | None = None
                   ) -> TermStats | None:
        """BM25 statistics of ``tokens`` over the live rows (of ``scope``, global rows):
        each token's IDF and, for a scope, the rows' mean length (without one each segment
        keeps its own: scoring every posting again would cost every query). ``None`` where
        the segment's own are exactly those (one segment, all live, no scope). So hidden
        documents change none of a caller's scores, and deleted or uncommitted rows no one's
        document frequencies."""
        if scope is None and len(self._slots) == 1 and not len(self._slots[0].dead):
            return None
        parts, n, length = self._scoped(scope)
        df = np.zeros(len(tokens), np.int64)
        for slot, rows in parts:
            df += slot.segment.lexical().doc_freqs(tokens, rows)
        avg = length / n if scope is not None and length is not None and n else None
        return TermStats(idf(df, n), avg)

    def _scoped(self, scope: np.ndarray | None
                ) -> tuple[list[tuple[_Slot, np.ndarray | None]], int, int | None]:
        """``([(slot, local rows in scope or None: all)], rows, length)`` of a scope, made
        once per scope array (a caller's view, kept by the reader)."""
        def make() -> tuple[list[tuple[_Slot, np.ndarray | None]], int, int | None]:
            if scope is None:
                parts = [(slot, slot.live) for slot in self._slots if slot.n_live]
            else:
                parts = [(slot, loc) for slot, _, loc in self._split(np.asarray(scope, np.int64))]
            n = sum(slot.segment.n_rows if rows is None else len(rows) for slot, rows in parts)
            # lengths only matter to a scope (see term_stats); None where a segment lacks them
            sizes = [slot.segment.lexical().length(rows) for slot, rows in parts] \
                if scope is not None else [None]
            return parts, n, None if None in sizes else sum(s for s in sizes if s is not None)
        return self._scopes.get(scope, make)

    def term_weights(self, tokens: Sequence[str], scope: np.ndarray | None = None
                     ) -> np.ndarray:
        """BM25 IDF of each (already tokenized) term over the live rows (of ``scope``)."""
        if not tokens or self.n_rows == 0:
            return np.zeros(len(tokens))
        stats = self.term_stats(tokens, scope)
        lex = self._slots[0].segment.lexical()
        return idf(lex.doc_freqs(tokens), lex.n_rows) if stats is None else stats.idf

    def lexical(self, question: str, k: int, rows: np.ndarray | None = None,
                scope: np.ndarray | None = None) -> list[tuple[int, float]]:
        """BM25's best ``k`` live rows (of ``rows``) for ``question`` under the statistics of
        the live rows (of ``scope``: :meth:`term_stats`), comparable across segments."""
        tokens = tokenize([question])[0]
        if not tokens or self.n_rows == 0:
            return []
        stats = self.term_stats(tokens, scope)
        wanted = None
        if rows is not None:
            wanted = {id(s): loc for s, _, loc in self._split(np.asarray(rows, np.int64))}
        merged: list[tuple[int, float]] = []
        for slot in self._slots:
            if slot.n_live == 0 or (wanted is not None and id(slot) not in wanted):
                continue
            local = wanted[id(slot)] if wanted is not None else None
            hits = slot.segment.lexical().top(tokens, k, stats=stats, rows=local,
                                              exclude=slot.dead if len(slot.dead) else None)
            if hits:
                g = slot.to_global(np.asarray([h[0] for h in hits], np.int64))
                merged.extend(zip(g.tolist(), (h[1] for h in hits), strict=True))
        merged.sort(key=lambda t: (-t[1], t[0]))
        return merged[:k]


class PlannedSegment(NamedTuple):
    """A segment of the generation a store is writing, and whether it may stay as it is."""

    segment: Segment
    deleted: frozenset[str]
    live: int
    dead: int
    ours: bool  # already one of the store's own segments
    keep: bool  # ours, at most half deleted, and not a small one due for merging
    merge: bool  # a small one due for merging with the others (ours or not)

    def live_ids(self) -> list[str]:
        """Its live documents, to be rewritten into a new segment (read them one at a time
        with ``segment.parts``: a whole segment may not fit in memory)."""
        return [d for d in self.segment.sha256s() if d not in self.deleted]


def plan_write(segments: SegmentSet, ours: Callable[[Segment], bool]) -> list[PlannedSegment]:
    """What a store's write does with each segment of ``segments``, the policy every store
    shares: segments whose documents are all deleted are dropped; the store's own segments
    stay unless more than half deleted or small (:data:`SMALL_SHARE`) while small ones,
    counting the new segment about to be written, outnumber :data:`MAX_SMALL_SEGMENTS`.
    Whatever does not stay is rewritten (:meth:`PlannedSegment.live_ids`)."""
    total = max(segments.n_rows, 1)
    rows = []
    for seg, deleted in segments.slots:
        if set(seg.sha256s()) <= set(deleted):
            continue  # every document in it was replaced or removed
        dead = sum(len(seg.doc_rows(d)) for d in deleted)
        rows.append((seg, deleted, seg.n_rows - dead, dead, ours(seg)))
    small = sum(1 for _, _, live, _, own in rows if own and live < total * SMALL_SHARE)
    fresh = any(not own for *_, own in rows)  # a new segment is about to be written
    merge_small = small + fresh > MAX_SMALL_SEGMENTS
    planned = []
    for seg, deleted, live, dead, own in rows:
        due = merge_small and live < total * SMALL_SHARE
        planned.append(PlannedSegment(seg, deleted, live, dead, own,
                                      own and not due and dead * 2 <= seg.n_rows, due))
    return planned
