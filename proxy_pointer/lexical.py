"""BM25 over chunk texts: the lexical half of hybrid search, saved with the index.

Built with bm25s over each chunk's embedded text (breadcrumb + body), English stop words
removed and, when PyStemmer is installed, stemmed, so "models" matches "model". Saved as
bm25s' own named arrays and JSON (``allow_pickle=False``), so a query process loads it
instead of re-tokenizing every chunk (seconds on a large index).
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from tokenize import TokenError
from typing import Any, Protocol

import numpy as np

from .errors import IndexCorruptError

__all__ = ["LexicalIndex", "LexicalSearch", "idf", "terms", "tokenize", "top_rows"]


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


_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s' default token pattern
#: The one term of an index whose texts hold none: no text tokenizes to it.
_NO_TERM = "\x00"


def terms(texts: Sequence[str]) -> list[list[str]]:
    """The same terms as :func:`tokenize`, without building a vocabulary: a fast path for
    many short texts (lines of a section) matched against a question's terms."""
    from bm25s.stopwords import STOPWORDS_EN

    stem = _stemmer()  # a new one per call: PyStemmer objects are not thread-safe
    stop = frozenset(STOPWORDS_EN)
    out = []
    for text in texts:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in stop]
        out.append(stem(words) if stem is not None and words else words)
    return out


def idf(doc_freq: np.ndarray, n_rows: int) -> np.ndarray:
    """BM25's inverse document frequency (the Lucene variant bm25s uses by default)."""
    df = np.asarray(doc_freq, np.float64)
    return np.log1p((n_rows - df + 0.5) / (df + 0.5))


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


class LexicalSearch(Protocol):
    """What a segment's lexical side answers: term statistics and a top-k search.

    :class:`LexicalIndex` (bm25s, local) is one; a store that searches elsewhere (Milvus's
    BM25 function) supplies another.
    """

    @property
    def n_rows(self) -> int: ...

    def doc_freqs(self, tokens: Sequence[str]) -> np.ndarray: ...

    def top(self, tokens: Sequence[str], k: int, *, weights: Sequence[float] | None = None,
            rows: np.ndarray | None = None, exclude: np.ndarray | None = None
            ) -> list[tuple[int, float]]: ...


class LexicalIndex:
    """A BM25 index whose document ``i`` is chunk row ``i`` of the index."""

    def __init__(self, model: Any, n_rows: int, source: str = "") -> None:
        self._model = model
        self.n_rows = n_rows
        self.source = source  # the folder it was loaded from, for errors

    @classmethod
    def build(cls, texts: Sequence[str]) -> LexicalIndex:
        """Index ``texts`` (one per chunk row)."""
        import bm25s

        model = bm25s.BM25()
        if texts:
            tokens = tokenize(texts)
            if not any(tokens):  # bm25s cannot build an empty vocabulary ("&", "-- 1 --")
                tokens[0] = [_NO_TERM]
            model.index(tokens, show_progress=False)
        return cls(model, len(texts))

    def doc_freqs(self, tokens: Sequence[str]) -> np.ndarray:
        """How many rows hold each token (0 for tokens this index has never seen)."""
        out = np.zeros(len(tokens), np.int64)
        if self.n_rows == 0:
            return out
        vocab, indptr = self._model.vocab_dict, self._model.scores["indptr"]
        for i, t in enumerate(tokens):
            tid = vocab.get(t)
            if tid is not None:
                out[i] = int(indptr[tid + 1]) - int(indptr[tid])
        return out

    def scores(self, tokens: Sequence[str], weights: Sequence[float] | None = None
               ) -> np.ndarray:
        """BM25 score of every row for ``tokens``; ``weights[i]`` scales token ``i``'s part.

        The weights let several indexes score as one: a token's BM25 part is its IDF times
        a term-frequency factor, so multiplying by ``idf(corpus) / idf(this index)`` gives
        the score under corpus-wide statistics (see :func:`idf`).
        """
        out = np.zeros(self.n_rows, np.float32)
        if self.n_rows == 0:
            return out
        vocab, s = self._model.vocab_dict, self._model.scores
        data, indices, indptr = s["data"], s["indices"], s["indptr"]
        for i, t in enumerate(tokens):
            tid = vocab.get(t)
            if tid is None:
                continue
            lo, hi = int(indptr[tid]), int(indptr[tid + 1])
            w = 1.0 if weights is None else float(weights[i])
            # Row ids are unique within one token's postings, so a fancy += is exact.
            try:
                out[np.asarray(indices[lo:hi])] += np.asarray(data[lo:hi]) * w
            except IndexError:  # checking every posting on load would read them all
                raise IndexCorruptError(
                    f"{self.source or 'BM25 index'}: damaged, postings of {t!r} name rows "
                    f"past its {self.n_rows}") from None
        return out

    def top(self, tokens: Sequence[str], k: int, *, weights: Sequence[float] | None = None,
            rows: np.ndarray | None = None, exclude: np.ndarray | None = None
            ) -> list[tuple[int, float]]:
        """The best ``k`` rows for ``tokens`` (weighted as in :meth:`scores`), within
        ``rows`` when given, never one of ``exclude``: ``[(row, score)]``, best first."""
        scores = self.scores(tokens, weights)
        if exclude is not None and len(exclude):
            scores[np.asarray(exclude, np.int64)] = 0.0
        return top_rows(scores, k, rows)

    def search(self, question: str, k: int, rows: np.ndarray | None = None
               ) -> list[tuple[int, float]]:
        """The best ``k`` rows (within ``rows`` when given) with a positive BM25 score."""
        tokens = tokenize([question])[0]
        if not tokens or self.n_rows == 0:
            return []
        return top_rows(self.scores(tokens), k, rows)

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
        # bm25s trusts its files: damaged JSON or .npy headers surface as any of these
        # (a stray key in params is a TypeError, a bad array header a TokenError).
        except (OSError, ValueError, KeyError, EOFError, TypeError, AttributeError,
                SyntaxError, RecursionError, TokenError) as e:
            raise IndexCorruptError(f"{directory}: BM25 index unreadable "
                                    f"({type(e).__name__}: {e})") from None
        n_docs = model.scores.get("num_docs")
        if n_docs != n_rows:
            raise IndexCorruptError(
                f"{directory}: BM25 index holds {n_docs} documents, the index has {n_rows} chunks"
            )
        problem = _postings_problem(model)
        if problem is not None:
            raise IndexCorruptError(f"{directory}: BM25 index damaged: {problem}")
        return cls(model, n_rows, str(directory))


def _postings_problem(model: Any) -> str | None:
    """What is wrong with a loaded model's postings (CSC arrays and vocabulary), checked in
    time linear in the vocabulary, so the memory-mapped arrays are not read; None if nothing.
    Search would otherwise fail on them with a numpy error, or read past them."""
    s, vocab = model.scores, model.vocab_dict
    data, indices, indptr = s.get("data"), s.get("indices"), s.get("indptr")
    arrays = (data, indices, indptr)
    if not all(isinstance(a, np.ndarray) and a.ndim == 1 for a in arrays):
        return "its score arrays are not vectors"
    if data.dtype.kind not in "fiu" or indices.dtype.kind not in "iu" \
            or indptr.dtype.kind not in "iu":
        return f"score arrays of types {data.dtype}, {indices.dtype}, {indptr.dtype}"
    if len(indptr) == 0 or len(indices) != len(data) or int(indptr[0]) != 0 \
            or int(indptr[-1]) != len(data) or bool(np.any(np.diff(indptr) < 0)):
        return "its postings offsets do not match its postings"
    # bm25s numbers one more term than it has columns: "", which no text tokenizes to
    if not isinstance(vocab, dict) or not all(
            isinstance(t, str) and type(v) is int and 0 <= v < len(indptr) - (t != "")
            for t, v in vocab.items()):
        return f"its vocabulary is not terms numbered below {len(indptr) - 1}"
    return None
