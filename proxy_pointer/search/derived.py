"""What retrieval derives from one generation of an index and reuses across queries.

A :class:`Derived` belongs to one :class:`~proxy_pointer.search.corpus.Reader` (one generation):
a change of contents makes a new reader with fresh caches, so nothing derived can go stale
and nothing needs a version check.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from ..parse.tree import Tree
from ..stores.analyzer import terms as terms_of
from ..tokens import sentence_pieces

__all__ = ["Derived"]

_MAX_DOCS = 512  # documents whose per-line data is kept (a bounded LRU)


class Derived:
    """Per-generation caches: per-line data of stored documents (bounded LRUs) and the
    rows of breadcrumb prefixes and labels the retriever has looked up.

    ``tree`` opens a stored document's skeleton tree. Thread-safe for concurrent readers.
    """

    def __init__(self, tree: Callable[[str], Tree]) -> None:
        self._tree = tree
        self.prefixes: dict[tuple[str, ...], np.ndarray] = {}  # normalized path -> rows
        self.labels: dict[tuple[str, str], set[int]] = {}  # ("table", "3") -> rows
        self._starts: OrderedDict[str, list[int]] = OrderedDict()
        self._terms: OrderedDict[str, list[list[str] | None]] = OrderedDict()
        # (doc_id, line, most) -> the pieces of one long line (see line_pieces)
        self._pieces: OrderedDict[tuple[str, int, int], list[tuple[int, int, int]]] = (
            OrderedDict())
        self._visible: OrderedDict[Hashable, Any] = OrderedDict()  # view -> docs, rows
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()  # (what, doc_id) -> value
        self._lock = threading.Lock()

    def _per_doc(self, store: OrderedDict, key: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in store:
                store.move_to_end(key)
                return store[key]
        value = make()
        with self._lock:
            store[key] = value
            while len(store) > _MAX_DOCS:
                store.popitem(last=False)
        return value

    def visible(self, view: Hashable, make: Callable[[], Any]) -> Any:
        """What one view of the index may see (its documents, their rows: see
        :meth:`~.corpus.Reader.visible_rows`), made once per view; the most recently used
        views are kept."""
        return self._per_doc(self._visible, view, make)

    def per_document(self, what: str, doc_id: str, make: Callable[[], Any]) -> Any:
        """``what`` of one document (its statement sections, say), made once; kept for the
        documents asked about most recently."""
        return self._per_doc(self._kept, (what, doc_id), make)

    def line_starts(self, doc_id: str) -> list[int]:
        """Character offset of each line of a stored document, and of its end."""
        return self._per_doc(self._starts, doc_id, lambda: [
            0, *itertools.accumulate(len(line) for line in self._tree(doc_id).lines)])

    def line_terms(self, doc_id: str, lo: int, hi: int) -> list[list[str]]:
        """The BM25 terms (:func:`~proxy_pointer.stores.analyzer.terms`) of lines ``lo:hi``
        of a stored document; lines are tokenized when first asked for, then kept."""
        terms: list[list[str] | None] = self._per_doc(
            self._terms, doc_id, lambda: [None] * len(self._tree(doc_id).lines))
        missing = [i for i in range(lo, hi) if terms[i] is None]
        if missing:
            lines = self._tree(doc_id).lines
            for i, t in zip(missing, terms_of([lines[i] for i in missing]), strict=True):
                terms[i] = t
        return [t or [] for t in terms[lo:hi]]

    def line_pieces(self, doc_id: str, line: int, most: int) -> list[tuple[int, int, int]]:
        """One line of a stored document cut into sentence pieces of at most ``most`` tokens
        (:func:`~.tokens.sentence_pieces`: ``(start, end, tokens)``, offsets inside the
        line); kept for the lines packed most recently."""
        return self._per_doc(self._pieces, (doc_id, line, most),
                             lambda: sentence_pieces(self._tree(doc_id).lines[line], most))
