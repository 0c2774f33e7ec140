"""Search over one Milvus segment: dense search (:class:`MilvusVectors`) and BM25
(:class:`MilvusLexical`), the :class:`~.vectors.VectorSearch` and
:class:`~.lexical.LexicalSearch` contracts a :class:`~.segment.MilvusSegment` hands
out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..bm25 import TermStats, bm25, idf
from ..vectors import VectorIndexConfig

__all__ = ["MilvusLexical", "MilvusRows", "MilvusVectors"]


class MilvusRows(Protocol):
    """What searching a segment reads of it (a :class:`~.segment.MilvusSegment`)."""

    name: str

    @property
    def n_rows(self) -> int: ...

    @property
    def conn(self) -> Any: ...

    def search(self, what: str, method: str, *args: Any,
               score: Callable[[float], float] = float, **kwargs: Any
               ) -> list[tuple[int, float]]: ...

    def search_filter(self, rows: np.ndarray | None, exclude: np.ndarray | None) -> str: ...

    def terms_of(self, rows: Sequence[int]) -> list[list[str]]: ...

    def total_length(self) -> int: ...

    def term_counts(self, rows: np.ndarray) -> tuple[bool, Counter[str], int]: ...


class MilvusVectors:
    """Dense search of one Milvus segment (the :class:`~proxy_pointer.stores.vectors.VectorSearch`
    contract): inner product over the collection's vector index, filtered to the segment."""

    def __init__(self, segment: MilvusRows, config: VectorIndexConfig) -> None:
        self.segment, self.config = segment, config

    def search(self, query: np.ndarray, k: int, rows: np.ndarray | None = None, *,
               exclude: np.ndarray | None = None, exact: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
        if k <= 0 or (rows is not None and len(rows) == 0):
            return np.empty(0, np.float32), np.empty(0, np.int64)
        seg = self.segment
        found = seg.search("dense search", "search",
                           data=[np.asarray(query, np.float32).reshape(-1).tolist()],
                           anns_field="vector", limit=min(k, 16_384),
                           filter=seg.search_filter(rows, exclude),
                           search_params=self._params())
        return (np.asarray([s for _, s in found], np.float32),
                np.asarray([r for r, _ in found], np.int64))

    def _params(self) -> dict[str, Any]:
        cfg = self.config
        if cfg.kind == "ivf":
            return {"metric_type": "IP", "params": {"nprobe": cfg.nprobe}}
        if cfg.kind == "hnsw":
            return {"metric_type": "IP", "params": {"ef": cfg.ef_search}}
        return {"metric_type": "IP"}


class MilvusLexical:
    """BM25 of one Milvus segment (the :class:`~proxy_pointer.stores.lexical.LexicalSearch`
    contract): Milvus's BM25 function finds the rows, and they are scored here.

    Milvus weighs terms by statistics over its whole collection: every segment, those of
    generations a writer has staged and not committed included, and every document
    whoever may read it. So the rows it finds are scored again from their terms under the
    statistics asked for (:class:`~proxy_pointer.stores.bm25.TermStats`; by default the
    segment's own: the document frequencies stored with it and its mean row length), as a
    local segment is.
    While the rows holding any of the question's terms number at most
    :data:`EXACT_ROWS`, all of them are fetched and the result is exact; past that, the
    best ``4 k`` by Milvus's statistics (at least 1,024) are.
    """

    EXACT_ROWS = 4096

    def __init__(self, segment: MilvusRows) -> None:
        self.segment = segment
        self.n_rows = segment.n_rows

    def doc_freqs(self, tokens: Sequence[str], rows: np.ndarray | None = None
                  ) -> np.ndarray:
        seg, conn = self.segment, self.segment.conn
        if not tokens or not self.n_rows:
            return np.zeros(len(tokens), np.int64)
        if rows is not None:  # counted over the smaller side of the segment's rows
            inside, df, _ = seg.term_counts(rows)
            if inside:
                return np.asarray([df.get(t, 0) for t in tokens], np.int64)
            return self.doc_freqs(tokens) - np.asarray([df.get(t, 0) for t in tokens])
        keys = [f"{seg.name}/{t}" for t in dict.fromkeys(tokens)]
        found = {r["term"]: int(r["df"]) for r in conn.get(conn.terms, keys, ["term", "df"])}
        return np.asarray([found.get(t, 0) for t in tokens], np.int64)

    def length(self, rows: np.ndarray | None = None) -> int | None:
        seg = self.segment
        total = seg.total_length()
        if rows is None:
            return total
        inside, _, length = seg.term_counts(rows)
        return length if inside else total - length

    def top(self, tokens: Sequence[str], k: int, *, stats: TermStats | None = None,
            rows: np.ndarray | None = None, exclude: np.ndarray | None = None
            ) -> list[tuple[int, float]]:
        if not tokens or k <= 0 or not self.n_rows or (rows is not None and len(rows) == 0):
            return []
        seg = self.segment
        df = self.doc_freqs(tokens)
        if stats is None:
            stats = TermStats(idf(df, self.n_rows), seg.total_length() / self.n_rows)
        holding = int(df.sum())
        limit = holding if holding <= self.EXACT_ROWS else max(4 * k, 1024)
        # Milvus Lite reports BM25 as a negated distance, a server as a score; only the
        # rows are used.
        found = seg.search("BM25 search", "search", data=[" ".join(tokens)],
                           anns_field="sparse", limit=min(max(limit, 1), 16_384),
                           filter=seg.search_filter(rows, exclude),
                           search_params={"metric_type": "BM25"}, score=abs)
        if not found:
            return []
        cand = np.asarray(sorted(r for r, _ in found), np.int64)
        words = seg.terms_of(cand.tolist())
        lengths = np.asarray([len(w) for w in words], np.float64)
        avg = (stats.avg_length if stats.avg_length is not None
               else seg.total_length() / self.n_rows)  # the segment's own
        scores = np.zeros(len(cand), np.float64)
        counts = [Counter(w) for w in words]
        for i, t in enumerate(tokens):
            tf = np.asarray([c.get(t, 0) for c in counts], np.float64)
            scores += bm25(tf, lengths, float(stats.idf[i]), avg)
        scores = scores.astype(np.float32)
        order = [i for i in np.lexsort((cand, -scores))[:k] if scores[i] > 0]
        return [(int(cand[i]), float(scores[i])) for i in order]
