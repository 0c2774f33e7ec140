"""What retrieval reads: the :class:`Corpus` protocol, and :class:`Reader`, one generation's.

As in Lucene, search is written against an index *reader* and never against the writer that
builds segments. :class:`Corpus` is exactly what ranking, packing, rerank and the retriever
read; :class:`Reader` implements it over one :class:`~.stores.segments.SegmentSet` (one
generation of an index), read on demand, and owns everything derived from that generation
(trees, per-line token counts, :class:`~.derived.Derived` caches). A change of contents
makes a new reader (:meth:`Reader.successor`), so no cache can go stale.
:class:`~.index.Index`, the writer, is not a corpus: it hands out its current reader
(:attr:`~.index.Index.reader`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ..access import Access
from ..embeddings.base import Embedder
from ..parse.cards import CARD_FIELDS, Card, card_matches, effective_card
from ..parse.chunking import Chunk
from ..parse.tree import Tree, build_tree
from ..stores.analyzer import tokenize
from ..stores.records import DocumentRecord
from ..stores.segments import Pointer, SegmentSet
from ..stores.vectors import VectorIndexConfig
from ..tokens import count_tokens_many
from .derived import Derived

__all__ = ["ChunkRows", "Corpus", "DocumentTable", "Reader"]

_MAX_TREES = 256  # skeleton trees kept per reader (a bounded LRU)


class Corpus(Protocol):
    """What retrieval reads from an index: documents, chunk rows with their vectors and
    pointers, search, and each stored document's text, tree and per-line token counts."""

    @property
    def version(self) -> int:
        """Changes whenever the contents do."""
        ...

    @property
    def embedder(self) -> Embedder:
        """The embedder the chunk vectors were made with (queries must use it too)."""
        ...

    @property
    def documents(self) -> Mapping[str, DocumentRecord]: ...

    @property
    def chunks(self) -> ChunkRows: ...

    @property
    def derived(self) -> Derived: ...

    def vectors_of(self, rows: Sequence[int] | np.ndarray) -> np.ndarray: ...

    def dense_search(self, query: np.ndarray, k: int, *, rows: np.ndarray | None = None,
                     exact: bool = False) -> tuple[np.ndarray, np.ndarray]: ...

    def lexical_search(self, question: str, k: int, rows: np.ndarray | None = None, *,
                       scope: np.ndarray | None = None) -> list[tuple[int, float]]: ...

    def term_weights(self, question: str, scope: np.ndarray | None = None
                     ) -> dict[str, float]: ...

    def pointers(self, rows: Sequence[int] | np.ndarray) -> list[Pointer]: ...

    def crumbs(self, rows: Sequence[int] | np.ndarray) -> list[tuple[str, ...]]: ...

    def rows_mentioning(self, needle: str) -> np.ndarray: ...

    def rows_for(self, doc_ids: Iterable[str]) -> np.ndarray: ...

    def visible_rows(self, access: Access) -> np.ndarray | None: ...

    def cards(self) -> Mapping[str, Card]: ...

    def visible_documents(self, access: Access) -> Collection[str]: ...

    def text(self, doc_id: str) -> str: ...

    def tree(self, doc_id: str) -> Tree: ...

    def line_tokens(self, doc_id: str) -> tuple[int, ...]: ...


class DocumentTable(Mapping[str, DocumentRecord]):
    """The live documents of an index, read from their segments on demand (a Mapping)."""

    def __init__(self, segments: SegmentSet) -> None:
        self._segments = segments

    def __getitem__(self, doc_id: str) -> DocumentRecord:
        if doc_id not in self._segments:
            raise KeyError(doc_id)
        return self._segments.segment_of(doc_id).record(doc_id)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._segments

    def __iter__(self) -> Iterator[str]:
        return self._segments.doc_ids()

    def __len__(self) -> int:
        return self._segments.n_documents()

    def __repr__(self) -> str:
        return f"DocumentTable({len(self)} documents)"


class ChunkRows(Sequence[Chunk]):
    """The chunk rows of an index (row ``i`` is vector ``i``), read on demand.

    Indexing or slicing reads just those rows; :meth:`at` reads many rows in one pass.
    Iterating reads them all (fine for thousands, slow for millions).
    """

    def __init__(self, segments: SegmentSet) -> None:
        self._segments = segments

    def __len__(self) -> int:
        return self._segments.n_rows

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return tuple(self.at(range(len(self))[i]))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"chunk row {i} out of range")
        return self._segments.chunks([i])[0]

    def at(self, rows: Iterable[int]) -> list[Chunk]:
        """The chunks of ``rows``, in that order."""
        return self._segments.chunks(np.fromiter(rows, np.int64))

    def __iter__(self) -> Iterator[Chunk]:
        for lo in range(0, len(self), 4096):
            yield from self.at(range(lo, min(lo + 4096, len(self))))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ChunkRows, tuple, list)):
            return len(self) == len(other) and all(
                a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ChunkRows({len(self)} rows)"


class Reader:
    """One generation of an index, read on demand: implements :class:`Corpus`.

    ``vector_config`` says how dense search runs (exact or approximate); a reader never
    changes, so another setting is another reader (:meth:`configured`), and one held by a
    query answers as it did. ``recover_headings`` is how trees of documents stored without
    one are parsed. Thread-safe for concurrent readers.
    """

    def __init__(self, segments: SegmentSet, embedder: Embedder, *,
                 vector_config: VectorIndexConfig | None = None,
                 recover_headings: bool = False, version: int = 0) -> None:
        self.segments = segments
        self._embedder = embedder
        self._vector_config = vector_config or VectorIndexConfig()
        self._recover_headings = recover_headings
        self._version = version
        self._trees: OrderedDict[str, Tree] = OrderedDict()  # most recently used last
        self._line_tokens: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()
        self._derived = Derived(self.tree)

    @property
    def vector_config(self) -> VectorIndexConfig:
        """How dense search runs (exact or approximate), fixed for this reader."""
        return self._vector_config

    def configured(self, vector_config: VectorIndexConfig) -> Reader:
        """A reader of the same generation whose dense search runs as ``vector_config``
        says (this one is unchanged); it keeps the trees and line counts read so far."""
        return self._derive(self.segments, vector_config, self._version, lambda d: True)

    def successor(self, segments: SegmentSet) -> Reader:
        """A reader of ``segments``, the next generation: it keeps the trees and line
        counts of documents whose record is unchanged, and nothing else derived."""
        old = self.segments

        def unchanged(d: str) -> bool:
            return d in segments and d in old and (segments.segment_of(d).record(d).sha256
                                                   == old.segment_of(d).record(d).sha256)

        return self._derive(segments, self._vector_config, self._version + 1, unchanged)

    def _derive(self, segments: SegmentSet, vector_config: VectorIndexConfig, version: int,
                keep: Callable[[str], bool]) -> Reader:
        """A new reader with the trees (and line counts) of the documents ``keep`` names."""
        nxt = Reader(segments, self._embedder, vector_config=vector_config,
                     recover_headings=self._recover_headings, version=version)
        with self._lock:
            nxt._trees.update((d, t) for d, t in self._trees.items() if keep(d))
            nxt._line_tokens.update(
                (d, c) for d, c in self._line_tokens.items() if d in nxt._trees)
        return nxt

    # --- Corpus ---------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self._version

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def documents(self) -> DocumentTable:
        """The live documents: ``doc_id -> DocumentRecord`` (a Mapping read on demand)."""
        return DocumentTable(self.segments)

    @property
    def chunks(self) -> ChunkRows:
        """Every chunk; position ``i`` is vector row ``i`` (read on demand)."""
        return ChunkRows(self.segments)

    @property
    def derived(self) -> Derived:
        """What retrieval derives from this generation and reuses across queries."""
        return self._derived

    @property  # not in Corpus: retrieval reads vectors by row
    def vectors(self) -> np.ndarray:
        """All chunk vectors, float32 ``(n_chunks, dimension)``, L2-normalized.

        Memory-mapped when the generation is one saved segment; otherwise assembled, which
        at scale is large: prefer :meth:`vectors_of` and :meth:`dense_search`.
        """
        return self.segments.vectors()

    def vectors_of(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """Vectors of the given chunk rows."""
        return self.segments.vectors(np.asarray(rows, np.int64))

    def dense_search(self, query: np.ndarray, k: int, *, rows: np.ndarray | None = None,
                     exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` chunk rows by cosine with ``query``: ``(scores, rows)``, best first.

        Approximate where :attr:`vector_config` says so, unless ``exact``; ``rows``
        restricts the search to those rows (exact for a small subset).
        """
        q = np.asarray(query, np.float32).reshape(-1)
        return self.segments.dense(q, k, self._vector_config, rows, exact=exact)

    def lexical_search(self, question: str, k: int, rows: np.ndarray | None = None, *,
                       scope: np.ndarray | None = None) -> list[tuple[int, float]]:
        """BM25's best ``k`` chunk rows for ``question`` (within ``rows`` when given),
        weighed by the statistics of the rows in ``scope`` (``None``: every live row): a
        caller's view, so that documents it may not read change none of its scores."""
        return self.segments.lexical(question, k, rows, scope)

    def term_weights(self, question: str, scope: np.ndarray | None = None
                     ) -> dict[str, float]:
        """The question's BM25 terms (:func:`~proxy_pointer.stores.analyzer.tokenize`) with
        their IDF over the rows in ``scope`` (``None``: every live row): what scoring single
        lines of a section lexically needs."""
        terms = list(dict.fromkeys(tokenize([question])[0]))
        return dict(zip(terms, self.segments.term_weights(terms, scope).tolist(), strict=True))

    def pointers(self, rows: Sequence[int] | np.ndarray) -> list[Pointer]:
        """``(doc_id, node_id, start_char, start_line, end_line)`` of each row: what
        grouping hits and packing need, read without slicing chunk texts from sources."""
        return self.segments.pointers(np.asarray(rows, np.int64))

    def crumbs(self, rows: Sequence[int] | np.ndarray) -> list[tuple[str, ...]]:
        """Each row's breadcrumb: document title, then heading titles down to its node."""
        return self.segments.crumbs(np.asarray(rows, np.int64))

    def rows_mentioning(self, needle: str) -> np.ndarray:
        """Rows whose normalized breadcrumb (:func:`~proxy_pointer.vocab.keys.heading_key` per
        title) contains ``needle``: a prefilter for heading filters, read without a Python
        scan."""
        return self.segments.rows_mentioning(needle)

    def rows_for(self, doc_ids: Iterable[str]) -> np.ndarray:
        """Chunk rows of the given documents (unknown ids give no rows)."""
        return self.segments.rows_for(doc_ids)

    def visible_rows(self, access: Access) -> np.ndarray | None:
        """The sorted chunk rows of the documents ``access`` may see (``None``: it sees
        every row), worked out from the documents' metadata once per view and generation."""
        if access.everything:
            return None
        return self._derived.visible(("rows", access), lambda: np.sort(
            self.segments.rows_for(self.visible_documents(access))))

    def visible_documents(self, access: Access) -> Collection[str]:
        """Ids of the live documents ``access`` may see (:attr:`documents` itself when it
        hides nothing), from their metadata once per view and generation."""
        if access.everything:
            return self.documents
        return self._derived.visible(("documents", access), lambda: frozenset(
            self._visible(access)))

    def _visible(self, access: Access) -> Iterator[str]:
        """Documents ``access`` allows; ``where`` filters on card fields (``entity``,
        ``period``, ``kind``, ...) match the document's card (:func:`card_matches`)."""
        on_card = tuple((k, v) for k, v in access.where if k in CARD_FIELDS)
        cards = self.cards() if on_card else {}
        for d, m in self.segments.metadata().items():
            if access.allows(m, skip=CARD_FIELDS) and all(
                    card_matches(cards.get(d, Card()), k, v) for k, v in on_card):
                yield d

    def cards(self) -> Mapping[str, Card]:
        """``doc_id -> Card`` of every live document as routing and filters read it: the
        card read at indexing with the document's metadata fields of the same names in
        its place (:func:`~proxy_pointer.parse.cards.effective_card`), once per generation."""
        def make() -> dict[str, Card]:
            meta = self.segments.metadata()
            return {d: effective_card(Card.from_dict(c), meta.get(d, {}))
                    for d, c in self.segments.cards().items()}
        return self._derived.visible(("cards",), make)

    def text(self, doc_id: str) -> str:
        """The stored copy of a document's source, exactly as indexed."""
        if doc_id not in self.segments:
            raise KeyError(doc_id)
        return self.segments.segment_of(doc_id).text(doc_id)

    def tree(self, doc_id: str) -> Tree:
        """The skeleton tree of a stored document (built from the stored copy, cached)."""
        t = self._trees.get(doc_id)
        if t is None:
            if doc_id not in self.segments:
                raise KeyError(doc_id)
            t = self.segments.segment_of(doc_id).tree(doc_id)
            if t is None:  # not saved (a text file, Index.from_parts): parse the copy
                t = build_tree(self.text(doc_id), doc_id=doc_id,
                               recover_headings=self._recover_headings)
        with self._lock:  # concurrent readers share the cache
            self._trees[doc_id] = t
            self._trees.move_to_end(doc_id)
            while len(self._trees) > _MAX_TREES:
                self._trees.popitem(last=False)
        return t

    def line_tokens(self, doc_id: str) -> tuple[int, ...]:
        """Word pieces of each line of a stored document (recorded at indexing time)."""
        counts = self.documents[doc_id].line_tokens
        if not counts and self.text(doc_id):
            # A record made without line counts (Index.from_parts): count once, keep.
            counts = self._line_tokens.get(doc_id, ())
            if not counts:
                counts = self._line_tokens[doc_id] = tuple(
                    count_tokens_many(self.tree(doc_id).lines))
        return counts
