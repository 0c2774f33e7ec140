"""BM25's scoring: its parameters, IDF, a term's part of a row's score, and the line match
the packer ranks a section's lines by. Every BM25 constant of the library is here.

The Lucene variant bm25s uses by default (Milvus's BM25 index is built with the same
parameters), so local and Milvus scores agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["K1", "LINE_K1", "B", "TermStats", "bm25", "idf", "line_match", "top_rows"]

#: BM25's parameters (bm25s' defaults; Milvus's BM25 index is built with the same).
K1, B = 1.5, 0.75
#: The term-frequency saturation of :func:`line_match` (a line is short: no length norm).
LINE_K1 = 1.2


def line_match(line: list[str], weights: dict[str, float]) -> float:
    """BM25-style match of one line's terms: IDF (``weights``) times a saturating term
    frequency (k1 = :data:`LINE_K1`), as packing scores the lines of a section."""
    tf: dict[str, int] = {}
    for t in line:
        if t in weights:
            tf[t] = tf.get(t, 0) + 1
    return sum(weights[t] * f * (LINE_K1 + 1) / (f + LINE_K1) for t, f in tf.items())


def idf(doc_freq: np.ndarray, n_rows: int) -> np.ndarray:
    """BM25's inverse document frequency (the Lucene variant bm25s uses by default)."""
    df = np.asarray(doc_freq, np.float64)
    return np.log1p((n_rows - df + 0.5) / (df + 0.5))


def bm25(tf: np.ndarray, lengths: np.ndarray, idf_: np.ndarray | float, avg: float
         ) -> np.ndarray:
    """BM25's part of a term in rows (bm25s' Lucene variant): ``idf * tf / (tf + k1 * (1 -
    b + b * length / avg))``, with term counts ``tf`` and row ``lengths`` in terms."""
    tf = np.asarray(tf, np.float64)
    norm = K1 * ((1 - B) + B * np.asarray(lengths, np.float64) / max(avg, 1e-9))
    return np.asarray(idf_, np.float64) * tf / (tf + norm)


@dataclass(frozen=True)
class TermStats:
    """The statistics BM25 weighs a question's terms by, taken over one set of rows:
    ``idf`` of each term (in the question's order) and ``avg_length``, the mean length in
    terms of those rows (``None``: unknown, each segment keeps its own)."""

    idf: np.ndarray
    avg_length: float | None = None


def top_rows(scores: np.ndarray, k: int, rows: np.ndarray | None = None
             ) -> list[tuple[int, float]]:
    """The best ``k`` rows with a positive score (within ``rows`` when given), best first."""
    if rows is not None:
        rows = np.asarray(rows, np.int64)
        sub = scores[rows]
    else:
        sub = scores
    pos = np.flatnonzero(sub > 0)
    if k <= 0 or len(pos) == 0:
        return []
    if len(pos) > k:
        pos = pos[np.argpartition(-sub[pos], k - 1)[:k]]
    pos = pos[np.lexsort((pos if rows is None else rows[pos], -sub[pos]))]
    found = pos if rows is None else rows[pos]
    return [(int(r), float(v)) for r, v in zip(found, sub[pos], strict=True)]
