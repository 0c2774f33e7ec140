"""Vector search over chunk vectors: exact (numpy), FAISS IVF on disk, or FAISS HNSW.

Vectors are L2-normalized float32 rows, so inner product is cosine similarity; row ``i`` is
chunk row ``i`` of the segment being searched. Exact search is one matrix-vector product
over a (possibly memory-mapped) matrix. Past ``approximate_from`` rows the default
(``kind="auto"``) switches to an inverted-file index (``IndexIVFScalarQuantizer``, 8-bit
codes: a quarter of the vectors' size) saved beside the vectors and opened memory-mapped,
so opening it costs nothing and a query touches only the ``nprobe`` lists it scans; its
best ``2k + 10`` candidates are re-scored exactly from the vectors. Recall against exact
search is measured in ``benchmarks/speed/bench_scale.py``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigError, IndexCorruptError

__all__ = ["VectorIndex", "VectorIndexConfig", "VectorSearch", "build_approximate",
           "open_approximate"]

_KINDS = ("auto", "flat", "ivf", "hnsw")


@dataclass(frozen=True)
class VectorIndexConfig:
    """Which search structure answers dense searches.

    ``kind``: ``"auto"`` (default: exact below ``approximate_from`` rows, IVF from there),
    ``"flat"`` (always exact), ``"ivf"`` (always IVF: 8-bit scalar-quantized lists, the best
candidates re-scored exactly) or ``"hnsw"`` (FAISS
    ``IndexHNSWFlat``, held in memory: fast, but its graph and vectors load whole).
    ``nlist``: IVF lists (0: ``2 * sqrt(rows)``); ``nprobe``: lists scanned per query, the
    recall/latency knob. Raises :class:`ConfigError` on bad values.
    """

    kind: str = "auto"
    approximate_from: int = 200_000
    nlist: int = 0
    nprobe: int = 64
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int = 128

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ConfigError(f"vector index kind must be one of {', '.join(_KINDS)}, "
                              f"got {self.kind!r}")
        if self.hnsw_m < 2 or self.ef_search < 1 or self.ef_construction < 1:
            raise ConfigError("hnsw_m must be >= 2 and ef_search, ef_construction >= 1")
        if self.nlist < 0 or self.nprobe < 1 or self.approximate_from < 1:
            raise ConfigError("nlist must be >= 0, nprobe and approximate_from >= 1")

    def approximate_kind(self, n_rows: int) -> str | None:
        """The approximate structure a segment of ``n_rows`` gets (``None``: exact)."""
        if self.kind == "auto":
            return "ivf" if n_rows >= self.approximate_from else None
        return None if self.kind == "flat" else self.kind

    def lists_for(self, n_rows: int) -> int:
        """IVF list count for ``n_rows`` vectors (at least 39 training points per list)."""
        want = self.nlist or int(2 * math.sqrt(max(n_rows, 1)))
        return max(1, min(want, n_rows // 39 or 1))


def build_approximate(vectors: Any, config: VectorIndexConfig, kind: str) -> Any:
    """A FAISS index of ``kind`` (``"ivf"`` or ``"hnsw"``) over ``vectors``: a float32
    array, or anything with its ``shape`` that slices and takes row lists like one (rows
    read from a file in blocks, so the whole matrix is never in memory)."""
    import faiss

    index: Any
    x = vectors  # an array, or rows read on demand (slices and row lists)
    n, d = x.shape
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = config.ef_construction
        index.add(np.ascontiguousarray(x[:], np.float32))
        return index
    nlist = config.lists_for(n)
    # 8-bit scalar-quantized lists: a quarter of the vectors' size to map and scan; the
    # candidates are re-scored exactly from the vectors (see VectorIndex), so the scores
    # returned are exact and comparable across segments.
    index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(d), d, nlist,
                                          faiss.ScalarQuantizer.QT_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    # k-means on a sample of 50 points per list (the cost of training is linear in it; 1M
    # vectors train in about a minute on two cores), seeded so that the same vectors always
    # give the same index.
    rng = np.random.default_rng(0)
    sample = x[:] if n <= 50 * nlist else x[np.sort(rng.choice(n, 50 * nlist, replace=False))]
    index.cp.seed = 1234
    index.cp.niter = 20
    index.train(np.ascontiguousarray(sample, np.float32))
    del sample
    for lo in range(0, n, 16384):  # 25 MB of 384-d rows at a time
        index.add(np.ascontiguousarray(x[lo:lo + 16384], np.float32))
    return index


def open_approximate(path: str | os.PathLike[str], n_rows: int, dimension: int) -> Any:
    """Open a saved FAISS index; an IVF index is memory-mapped, not read.

    Raises :class:`IndexCorruptError` naming ``path`` when it does not parse or holds
    another number or dimension of vectors.
    """
    import faiss

    try:
        with open(path, "rb") as f:
            head = f.read(4)
        ivf = head[:2] == b"Iw"  # the IVF family: IwFl, IwSq, ...
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if ivf else 0
        index = faiss.read_index(os.fspath(path), flags)
    except FileNotFoundError:
        raise IndexCorruptError(f"{path}: missing") from None
    except (RuntimeError, OSError) as e:
        raise IndexCorruptError(f"{path}: unreadable ({str(e).splitlines()[0]})") from None
    if index.ntotal != n_rows or index.d != dimension:
        raise IndexCorruptError(f"{path}: holds {index.ntotal} vectors of dimension {index.d}, "
                                f"expected {n_rows} of {dimension}")
    return index


class VectorSearch(Protocol):
    """What a segment's dense side answers (:meth:`VectorIndex.search`'s contract); a
    store that searches elsewhere (Milvus) supplies its own."""

    config: VectorIndexConfig

    def search(self, query: np.ndarray, k: int, rows: np.ndarray | None = None, *,
               exclude: np.ndarray | None = None, exact: bool = False
               ) -> tuple[np.ndarray, np.ndarray]: ...


class VectorIndex:
    """Search over normalized float32 vectors (row ``i`` is chunk ``i``).

    ``vectors`` may be memory-mapped; exact search reads them, an approximate index
    (``prebuilt``, or built here for ``kind="hnsw"``) answers unfiltered searches, and
    ``fetch`` (rows -> their vectors) serves the row reads of re-scoring and filters.
    """

    def __init__(self, vectors: np.ndarray, config: VectorIndexConfig | None = None,
                 *, prebuilt: Any = None,
                 fetch: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.config = config or VectorIndexConfig()
        self.vectors = vectors
        # Reads given rows (sorted) for re-scoring and filters; default: index ``vectors``.
        self._fetch = fetch or (lambda rows: np.asarray(vectors[rows]))
        self._faiss: Any = prebuilt
        if prebuilt is None and self.config.kind == "hnsw" and len(vectors):
            self._faiss = build_approximate(vectors, self.config, "hnsw")
        if self._faiss is not None:
            self._tune(self._faiss)

    def _tune(self, index: Any) -> None:
        import faiss

        if isinstance(index, faiss.IndexHNSW):
            index.hnsw.efSearch = self.config.ef_search
        elif isinstance(index, faiss.IndexIVF):
            index.nprobe = self.config.nprobe

    @property
    def approximate(self) -> bool:
        """Whether unfiltered searches go to an approximate index."""
        return self._faiss is not None

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def search(self, query: np.ndarray, k: int, rows: np.ndarray | None = None, *,
               exclude: np.ndarray | None = None, exact: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows by inner product: ``(scores, rows)``, best first.

        ``rows`` restricts the search to those rows: a small subset is scored exactly row by
        row, a wide one (an access view) through the approximate index's bitmap filter or,
        without one, by masking a full scan;
        ``exclude`` (sorted) rows are never returned (deleted chunks); ``exact`` skips the
        approximate index.
        """
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        n = len(self)
        if rows is not None:
            if exclude is not None and len(exclude):
                rows = rows[~np.isin(rows, exclude)]
            if len(rows) == 0 or k <= 0:
                return np.empty(0, np.float32), np.empty(0, np.int64)
            if (np.diff(rows) < 0).any():  # views and filters come sorted: no sort then
                rows = np.sort(rows)
            if len(rows) < _WIDE * n:  # a small subset: read just its rows
                return _top(np.asarray(self._fetch(rows) @ q), rows, k)
            if self._faiss is not None and not exact:
                scores, found = self._approximate(q, k, allowed=rows)
                if len(found) >= min(k, len(rows)):
                    return scores, found
            # A wide filter (an access view, most documents): score every row, mask the rest.
            every = np.asarray(self.vectors @ q, dtype=np.float32)
            masked = np.full(n, -np.inf, np.float32)
            masked[rows] = every[rows]
            return _top(masked, None, k)
        if n == 0 or k <= 0:
            return np.empty(0, np.float32), np.empty(0, np.int64)
        if self._faiss is None or exact:
            scores = np.asarray(self.vectors @ q, dtype=np.float32)
            if exclude is not None and len(exclude):
                scores[exclude] = -np.inf
            return _top(scores, None, k)
        return self._approximate(q, k, exclude=exclude)

    def _approximate(self, q: np.ndarray, k: int, *, exclude: np.ndarray | None = None,
                     allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The approximate index's best ``k``, re-scored exactly, never one of ``exclude``
        and only ``allowed`` rows when given (a bitmap the index checks as it searches)."""
        import faiss as faiss_module

        faiss: Any = faiss_module  # its type stubs lack the search-parameter classes

        params = sel = None
        if allowed is not None:
            bits = np.zeros(len(self), bool)
            bits[allowed] = True
            bitmap = np.packbits(bits, bitorder="little")
            sel = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        elif exclude is not None and len(exclude):
            batch = faiss.IDSelectorBatch(np.asarray(exclude, np.int64))
            sel = faiss.IDSelectorNot(batch)
        if sel is not None:
            # The selectors and the bitmap stay referenced by locals until the search returns.
            if isinstance(self._faiss, faiss.IndexIVF):
                params = faiss.SearchParametersIVF(sel=sel, nprobe=self.config.nprobe)
            else:
                params = faiss.SearchParametersHNSW(sel=sel, efSearch=self.config.ef_search)
        # Twice the candidates, re-scored exactly: quantized scores only choose them.
        want = min(2 * k + 10, len(self))
        _, ids = self._faiss.search(q.reshape(1, -1), want, params=params)
        found = np.sort(ids[0][ids[0] >= 0]).astype(np.int64)
        return _top(np.asarray(self._fetch(found) @ q, np.float32), found, k)


#: A row filter at least this share of a segment is searched by masking (or the
#: approximate index's bitmap) rather than by reading its rows one by one.
_WIDE = 0.25


def _top(scores: np.ndarray, rows: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best finite scores, best first, ties by row (``rows`` maps positions)."""
    finite = int(np.isfinite(scores).sum()) if len(scores) else 0
    k = min(k, finite)
    if k <= 0:
        return np.empty(0, np.float32), np.empty(0, np.int64)
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.lexsort((top, -scores[top]))]
    found = top if rows is None else rows[top]
    return scores[top].astype(np.float32), np.asarray(found, np.int64)
