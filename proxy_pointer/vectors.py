"""Vector search over an index's chunk vectors: exact by default, FAISS HNSW on request.

Vectors are L2-normalized float32 rows, so inner product is cosine similarity; row ``i`` is
chunk row ``i`` of the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ConfigError, IndexCorruptError

__all__ = ["VectorIndex", "VectorIndexConfig"]


@dataclass(frozen=True)
class VectorIndexConfig:
    """Which FAISS index answers searches.

    ``kind="flat"`` (default) is exact inner-product search (a numpy matrix-vector product:
    for one query at a time it beats FAISS's flat index, and keeps no second copy).
    ``"hnsw"`` is approximate (``IndexHNSWFlat`` with ``METRIC_INNER_PRODUCT``): faster on
    large corpora, at a recall
    cost measured in ``benchmarks/bench_index.py``. Vectors are normalized, so inner
    product is cosine similarity.
    """

    kind: str = "flat"
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int = 128

    def __post_init__(self) -> None:
        if self.kind not in ("flat", "hnsw"):
            raise ConfigError(f"vector index kind must be 'flat' or 'hnsw', got {self.kind!r}")
        if self.hnsw_m < 2 or self.ef_search < 1 or self.ef_construction < 1:
            raise ConfigError("hnsw_m must be >= 2 and ef_search, ef_construction >= 1")


class VectorIndex:
    """A FAISS index over normalized float32 vectors; row ``i`` is chunk ``i``."""

    def __init__(self, vectors: np.ndarray, config: VectorIndexConfig | None = None,
                 *, prebuilt: Any = None) -> None:
        import faiss

        self.config = config or VectorIndexConfig()
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        d = self.vectors.shape[1]
        self._faiss: Any = None
        if prebuilt is not None:
            self._faiss = prebuilt
        elif self.config.kind == "hnsw":
            index = faiss.IndexHNSWFlat(d, self.config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.config.ef_construction
            index.add(self.vectors)
            self._faiss = index
        if self.config.kind == "hnsw":
            self._faiss.hnsw.efSearch = self.config.ef_search

    def __len__(self) -> int:
        return self.vectors.shape[0]

    def search(self, query: np.ndarray, k: int, rows: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows by inner product: ``(scores, rows)``, best first.

        With ``rows`` (a filter, e.g. one document's chunks) the search is exact over just
        those rows, which is both faster and exact for the small subsets filters produce.
        """
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        if rows is not None:
            if len(rows) == 0:
                return np.empty(0, np.float32), np.empty(0, np.int64)
            scores = self.vectors[rows] @ q[0]
            k = min(k, len(rows))
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top], kind="stable")]
            return scores[top], rows[top].astype(np.int64)
        k = min(k, len(self))
        if k == 0:
            return np.empty(0, np.float32), np.empty(0, np.int64)
        if self._faiss is None:
            # Exact search for one query is a single matrix-vector product; numpy does it
            # without FAISS's thread pool, which is 20-40x slower on a busy 2-core machine.
            return self.search(query, k, np.arange(len(self), dtype=np.int64))
        scores, ids = self._faiss.search(q, k)
        keep = ids[0] >= 0
        return scores[0][keep], ids[0][keep].astype(np.int64)

    def faiss_bytes(self) -> bytes | None:
        """Serialized FAISS index for approximate kinds (flat is rebuilt from vectors)."""
        if self.config.kind == "flat":
            return None
        import faiss

        return faiss.serialize_index(self._faiss).tobytes()

    @classmethod
    def from_bytes(cls, vectors: np.ndarray, config: VectorIndexConfig, blob: bytes,
                   *, name: str) -> VectorIndex:
        """Reopen a serialized approximate index over ``vectors``.

        Raises :class:`IndexCorruptError` naming ``name`` when the blob does not parse or
        holds another number or dimension of vectors.
        """
        import faiss

        try:
            pre = faiss.deserialize_index(np.frombuffer(blob, dtype=np.uint8))
        except RuntimeError as e:
            raise IndexCorruptError(f"{name}: unreadable ({str(e).splitlines()[0]})") from None
        if pre.ntotal != vectors.shape[0] or pre.d != vectors.shape[1]:
            raise IndexCorruptError(
                f"{name}: holds {pre.ntotal} vectors of dimension {pre.d}, "
                f"expected {vectors.shape[0]} of {vectors.shape[1]}"
            )
        return cls(vectors, config, prebuilt=pre)
