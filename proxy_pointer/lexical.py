"""BM25 over chunk texts: the lexical half of hybrid search, saved with the index.

Built with bm25s over each chunk's embedded text (breadcrumb + body), English stop words
removed and, when PyStemmer is installed, stemmed, so "models" matches "model". Saved as
bm25s' own named arrays and JSON (``allow_pickle=False``), so a query process loads it
instead of re-tokenizing every chunk (seconds on a large index).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import IndexCorruptError

__all__ = ["LexicalIndex", "tokenize"]


def _stemmer() -> Callable[[list[str]], list[str]] | None:
    try:
        import Stemmer  # PyStemmer: optional, makes "models" match "model"
    except ImportError:
        return None
    stem: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords
    return stem


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed tokens of each text (bm25s' tokenizer)."""
    import bm25s

    tokens: list[list[str]] = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=_stemmer(), return_ids=False, show_progress=False
    )
    return tokens


class LexicalIndex:
    """A BM25 index whose document ``i`` is chunk row ``i`` of the index."""

    def __init__(self, model: Any, n_rows: int) -> None:
        self._model = model
        self.n_rows = n_rows

    @classmethod
    def build(cls, texts: Sequence[str]) -> LexicalIndex:
        """Index ``texts`` (one per chunk row)."""
        import bm25s

        model = bm25s.BM25()
        if texts:
            model.index(tokenize(texts), show_progress=False)
        return cls(model, len(texts))

    def search(self, question: str, k: int, rows: np.ndarray | None = None
               ) -> list[tuple[int, float]]:
        """The best ``k`` rows (within ``rows`` when given) with a positive BM25 score."""
        tokens = tokenize([question])[0]
        if not tokens or self.n_rows == 0:
            return []
        scores = np.asarray(self._model.get_scores(tokens))
        if rows is not None:
            masked = np.full_like(scores, -np.inf)
            masked[rows] = scores[rows]
            scores = masked
        k = min(k, int(np.isfinite(scores).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(r), float(scores[r])) for r in top if scores[r] > 0]

    def save(self, directory: str | Path) -> None:
        """Write the index's arrays and vocabulary into ``directory`` (no pickle)."""
        if self.n_rows == 0:
            return
        with contextlib.redirect_stdout(io.StringIO()):
            self._model.save(str(directory), allow_pickle=False)

    @classmethod
    def load(cls, directory: str | Path, n_rows: int, *, mmap: bool = True) -> LexicalIndex:
        """Open a saved index; the score arrays are memory-mapped by default.

        Raises :class:`IndexCorruptError` naming the folder when it is missing, unreadable
        or holds another number of rows than the index has chunks.
        """
        import bm25s

        if n_rows == 0:
            return cls.build([])
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                model = bm25s.BM25.load(str(directory), mmap=mmap, allow_pickle=False)
        except (OSError, ValueError, KeyError, EOFError) as e:
            raise IndexCorruptError(f"{directory}: BM25 index unreadable ({e})") from None
        n_docs = model.scores.get("num_docs")
        if n_docs != n_rows:
            raise IndexCorruptError(
                f"{directory}: BM25 index holds {n_docs} documents, the index has {n_rows} chunks"
            )
        return cls(model, n_rows)
