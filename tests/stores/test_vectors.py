"""Tests for proxy_pointer.stores.vectors: exact search with row filters, approximate (FAISS IVF and
HNSW) recall, and the vector index configuration."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.errors import ConfigError, IndexCorruptError
from proxy_pointer.stores.vectors import VectorIndex, VectorIndexConfig


def _unit(n: int, d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_flat_search_and_row_filter() -> None:
    vecs = _unit(50, 16)
    vi = VectorIndex(vecs)
    scores, rows = vi.search(vecs[7], 5)
    assert rows[0] == 7 and scores[0] == pytest.approx(1.0, abs=1e-5)
    assert list(scores) == sorted(scores, reverse=True)
    want = np.argsort(-(vecs @ vecs[7]), kind="stable")[:5]
    assert list(rows) == list(want)
    subset = np.array([3, 9, 20, 41])
    s2, r2 = vi.search(vecs[7], 10, rows=subset)
    assert sorted(r2) == sorted(subset) and list(s2) == sorted(s2, reverse=True)
    assert len(vi.search(vecs[0], 5, rows=np.array([], np.int64))[1]) == 0
    assert len(vi.search(vecs[0], 500)[1]) == 50


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_recall_on_random_vectors(kind: str, tmp_path: Path) -> None:
    from proxy_pointer.stores.vectors import build_approximate, open_approximate

    vecs = _unit(2000, 32, seed=1)
    config = VectorIndexConfig(kind=kind, nprobe=32)
    built = build_approximate(vecs, config, kind)
    faiss_path = tmp_path / "index.faiss"
    import faiss

    faiss.write_index(built, str(faiss_path))
    approx = VectorIndex(vecs, config, prebuilt=open_approximate(faiss_path, 2000, 32))
    assert approx.approximate
    flat = VectorIndex(vecs)
    queries = _unit(20, 32, seed=2)
    hits = sum(len(set(flat.search(q, 10)[1]) & set(approx.search(q, 10)[1])) for q in queries)
    assert hits / 200 >= 0.9
    # Deleted rows never come back, approximate or exact.
    dead = np.sort(flat.search(queries[0], 5)[1])
    assert not set(approx.search(queries[0], 10, exclude=dead)[1]) & set(dead)
    assert not set(flat.search(queries[0], 10, exclude=dead)[1]) & set(dead)
    with pytest.raises(IndexCorruptError, match=r"holds 2000 vectors of dimension 32"):
        open_approximate(faiss_path, 1999, 32)


def test_auto_kind_switches_at_the_threshold() -> None:
    config = VectorIndexConfig(approximate_from=1000)
    assert config.approximate_kind(999) is None and config.approximate_kind(1000) == "ivf"
    assert VectorIndexConfig(kind="flat").approximate_kind(10**9) is None
    assert config.lists_for(1_000_000) == 2000 and config.lists_for(100) == 2


def test_vector_index_config_validation() -> None:
    with pytest.raises(ConfigError, match="one of auto, flat, ivf, hnsw"):
        VectorIndexConfig(kind="pq")
    with pytest.raises(ConfigError, match="hnsw_m"):
        VectorIndexConfig(kind="hnsw", hnsw_m=1)
