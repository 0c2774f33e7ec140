"""Two-stage dense search: a second embedder rescores the stored vectors' best chunks.

An index of fast mode's static vectors is built in seconds, but a static model ranks filings
worse than MiniLM (``benchmarks/results/refine/fast-refine.md``). Most of what it loses is not the
first stage: it finds the evidence among its best hundred chunks, and then orders them,
picks the statement sections and scores the sections with vectors too coarse for that.
So at query time a *refiner* (the MiniLM fast mode was distilled from) embeds the question
and, on demand, the chunks the request reads: the stored vectors' best ``refine`` chunks
and BM25's best ``refine``, which it reorders, and every chunk a later step compares with
the question (statement sections, named titles, duplicates, relevance). Indexing stays
static; a query embeds those chunks, each once per view while the cache holds it.

:class:`Refiner` holds the refiner and a bounded cache of the vectors it made, keyed by the
chunk's text and the request's :class:`~proxy_pointer.access.Access` view, so one reader's
questions never make another's faster. :class:`RefinedCorpus` is the
:class:`~.corpus.Corpus` one request reads: the index's own, with the refiner's embedder,
vectors and dense ranking.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence

import numpy as np

from ..access import Access
from ..embeddings.base import Embedder, text_key
from ..parse.cards import Card
from ..parse.tree import Tree
from ..stores.records import DocumentRecord
from ..stores.segments import Pointer
from .corpus import ChunkRows, Corpus
from .derived import Derived

__all__ = ["CAPACITY", "RefinedCorpus", "Refiner", "refiner_for"]

#: Refined vectors a :class:`Refiner` keeps (least recently used dropped first): 20,000
#: MiniLM vectors are 31 MB, about a hundred new financebench-dev questions (174 chunks each).
CAPACITY = 20_000


class Refiner:
    """The second-stage embedder of an index and the vectors it has made (thread-safe).

    ``capacity`` bounds the cache in vectors. Vectors are keyed by ``(view, text)``: a
    chunk's vector is its text's, in whichever generation or document it sits, and a view
    (one caller's :class:`~proxy_pointer.access.Access`) only ever reads the vectors its own
    requests made.
    """

    def __init__(self, embedder: Embedder, *, capacity: int = CAPACITY) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        self.embedder = embedder
        self.capacity = capacity
        self._cache: OrderedDict[tuple[Hashable, bytes], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        #: Texts embedded so far (cache misses), for benchmarks and tests.
        self.embedded = 0

    def __repr__(self) -> str:
        return f"Refiner({self.embedder.model_id!r}, capacity={self.capacity})"

    def query(self, text: str) -> np.ndarray:
        """The question's vector in the refiner's space (float32)."""
        return np.asarray(self.embedder.embed_query(text), np.float32)

    def vectors(self, view: Hashable, texts: Sequence[str]) -> np.ndarray:
        """The refiner's vectors of ``texts`` (``(len(texts), dimension)`` float32), each
        text embedded once per view while the cache holds it."""
        keys = [(view, text_key(t)) for t in texts]
        out = np.zeros((len(texts), int(self.embedder.dimension)), np.float32)
        missing: dict[tuple[Hashable, bytes], list[int]] = {}
        with self._lock:
            for i, key in enumerate(keys):
                v = self._cache.get(key)
                if v is None:
                    missing.setdefault(key, []).append(i)
                else:
                    self._cache.move_to_end(key)
                    out[i] = v
        if missing:
            made = np.asarray(self.embedder.embed_documents(
                [texts[at[0]] for at in missing.values()]), np.float32)
            with self._lock:
                self.embedded += len(missing)
                for (key, at), v in zip(missing.items(), made, strict=True):
                    out[at] = v
                    self._cache[key] = v
                    self._cache.move_to_end(key)
                while len(self._cache) > self.capacity:
                    self._cache.popitem(last=False)
        return out


def refiner_for(embedder: Embedder) -> Refiner | None:
    """The refiner of an index built with ``embedder``: its teacher's
    (:func:`~proxy_pointer.embeddings.factory.teacher_of`; fast mode's MiniLM, which loads on
    the first refined query), or ``None``."""
    from ..embeddings.factory import make_embedder, teacher_of

    spec = teacher_of(embedder.model_id)
    return None if spec is None else Refiner(make_embedder(spec))


class RefinedCorpus:
    """``corpus`` as one request reads it with a :class:`Refiner`: its embedder, vectors
    and dense ranking are the refiner's; everything else is ``corpus``'s.

    ``first_query`` is the question in the stored vectors' space; ``pool`` how many of
    their best chunks :meth:`dense_search` rescores; ``view`` keys the refiner's cache.
    """

    def __init__(self, corpus: Corpus, refiner: Refiner, first_query: np.ndarray, *,
                 pool: int, view: Hashable) -> None:
        self.inner = corpus
        self.refiner = refiner
        self.first_query = np.asarray(first_query, np.float32)
        self.pool = pool
        self.view = view

    # --- what the refiner changes ---------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        return self.refiner.embedder

    def vectors_of(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The refiner's vectors of ``rows`` (made on first read, then cached)."""
        rows = np.asarray(rows, np.int64).reshape(-1)
        chunks = self.inner.chunks.at(rows.tolist())
        return self.refiner.vectors(self.view, [c.embed_text for c in chunks])

    def dense_search(self, query: np.ndarray, k: int, *, rows: np.ndarray | None = None,
                     exact: bool = False, also: Iterable[int] = ()
                     ) -> tuple[np.ndarray, np.ndarray]:
        """The stored vectors' best ``pool`` chunks (within ``rows``), and the rows of
        ``also`` (a BM25 ranking's best, already within ``rows``), ranked by the refiner's
        cosine with ``query``: ``(scores, rows)``, best first, at most ``k``."""
        _, first = self.inner.dense_search(self.first_query, self.pool, rows=rows, exact=exact)
        pool = list(dict.fromkeys([*first.tolist(), *also]))
        if not pool:
            return np.zeros(0, np.float32), np.zeros(0, np.int64)
        found = np.asarray(pool, np.int64)
        scores = self.vectors_of(found) @ np.asarray(query, np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return scores[order].astype(np.float32), found[order]

    # --- the rest is the index's own ------------------------------------------------------
    @property
    def version(self) -> int:
        return self.inner.version

    @property
    def documents(self) -> Mapping[str, DocumentRecord]:
        return self.inner.documents

    @property
    def chunks(self) -> ChunkRows:
        return self.inner.chunks

    @property
    def derived(self) -> Derived:
        return self.inner.derived

    def lexical_search(self, question: str, k: int, rows: np.ndarray | None = None, *,
                       scope: np.ndarray | None = None) -> list[tuple[int, float]]:
        return self.inner.lexical_search(question, k, rows, scope=scope)

    def term_weights(self, question: str, scope: np.ndarray | None = None
                     ) -> dict[str, float]:
        return self.inner.term_weights(question, scope)

    def pointers(self, rows: Sequence[int] | np.ndarray) -> list[Pointer]:
        return self.inner.pointers(rows)

    def crumbs(self, rows: Sequence[int] | np.ndarray) -> list[tuple[str, ...]]:
        return self.inner.crumbs(rows)

    def rows_mentioning(self, needle: str) -> np.ndarray:
        return self.inner.rows_mentioning(needle)

    def rows_for(self, doc_ids: Iterable[str]) -> np.ndarray:
        return self.inner.rows_for(doc_ids)

    def visible_rows(self, access: Access) -> np.ndarray | None:
        return self.inner.visible_rows(access)

    def cards(self) -> Mapping[str, Card]:
        return self.inner.cards()

    def visible_documents(self, access: Access) -> Collection[str]:
        return self.inner.visible_documents(access)

    def text(self, doc_id: str) -> str:
        return self.inner.text(doc_id)

    def tree(self, doc_id: str) -> Tree:
        return self.inner.tree(doc_id)

    def line_tokens(self, doc_id: str) -> tuple[int, ...]:
        return self.inner.line_tokens(doc_id)
