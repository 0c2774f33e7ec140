"""What retrieval derives from one version of an index and reuses across queries.

Kept beside the index, keyed weakly (a dropped index takes its caches with it) and dropped
whenever :attr:`Index.version` changes, so nothing derived can go stale.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .index import Index

__all__ = ["IndexCaches", "caches", "line_pieces", "line_starts", "line_terms"]

_MAX_DOCS = 512  # documents whose per-line data is kept (a bounded LRU)


@dataclass
class IndexCaches:
    """Caches for one version of one index."""

    version: int
    prefixes: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)  # -> rows
    labels: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # label -> rows
    line_starts: OrderedDict[str, list[int]] = field(default_factory=OrderedDict)
    line_terms: OrderedDict[str, list[list[str] | None]] = field(default_factory=OrderedDict)
    # (doc_id, line, most) -> the pieces of one long line (a bounded LRU, see line_pieces)
    line_pieces: OrderedDict[tuple[str, int, int], list[tuple[int, int, int]]] = field(
        default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_CACHES: weakref.WeakKeyDictionary[Index, IndexCaches] = weakref.WeakKeyDictionary()


def caches(index: Index) -> IndexCaches:
    """The caches for ``index`` as it is now (fresh ones after any change of contents)."""
    found = _CACHES.get(index)
    if found is None or found.version != index.version:
        found = _CACHES[index] = IndexCaches(index.version)
    return found


def _per_doc(store: OrderedDict, lock: threading.Lock, key: Hashable, make: Callable[[], Any]
             ) -> Any:
    with lock:
        if key in store:
            store.move_to_end(key)
            return store[key]
    value = make()
    with lock:
        store[key] = value
        while len(store) > _MAX_DOCS:
            store.popitem(last=False)
    return value


def line_starts(index: Index, doc_id: str) -> list[int]:
    """Character offset of each line of a stored document, and of its end."""
    c = caches(index)
    return _per_doc(c.line_starts, c.lock, doc_id, lambda: [
        0, *itertools.accumulate(len(line) for line in index.tree(doc_id).lines)])


def line_terms(index: Index, doc_id: str, lo: int, hi: int) -> list[list[str]]:
    """The BM25 terms (:func:`~.lexical.terms`) of lines ``lo:hi`` of a stored document;
    lines are tokenized when first asked for, then kept."""
    from .lexical import terms as terms_of

    c = caches(index)
    terms: list[list[str] | None] = _per_doc(
        c.line_terms, c.lock, doc_id, lambda: [None] * len(index.tree(doc_id).lines))
    missing = [i for i in range(lo, hi) if terms[i] is None]
    if missing:
        lines = index.tree(doc_id).lines
        for i, t in zip(missing, terms_of([lines[i] for i in missing]), strict=True):
            terms[i] = t
    return [t or [] for t in terms[lo:hi]]


def line_pieces(index: Index, doc_id: str, line: int, most: int) -> list[tuple[int, int, int]]:
    """One line of a stored document cut into sentence pieces of at most ``most`` tokens
    (:func:`~.tokens.sentence_pieces`: ``(start, end, tokens)``, offsets inside the line);
    kept for the lines packed most recently."""
    from .tokens import sentence_pieces

    c = caches(index)
    return _per_doc(c.line_pieces, c.lock, (doc_id, line, most),
                    lambda: sentence_pieces(index.tree(doc_id).lines[line], most))
