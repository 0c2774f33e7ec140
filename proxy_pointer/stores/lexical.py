"""BM25's postings over chunk texts: the lexical half of hybrid search, saved with the index.

Built with bm25s over each chunk's embedded text (breadcrumb + body) as the analyzer
(:mod:`.analyzer`) reads it, scored as :mod:`.bm25` says. Saved as bm25s' own named arrays
and JSON (``allow_pickle=False``), so a query process loads it
instead of re-tokenizing every chunk (seconds on a large index), with each row's length
in terms beside them.

A score can be taken under another set of rows' statistics (:class:`TermStats`: the IDF of
each term and the mean length over those rows): a term's stored score gives back its count
in the row (the score is monotonic in it), which is scored again under the new statistics.
That is how several segments score as one, and how a caller's scores depend only on rows
it may read (documents it may not, or rows a writer staged but has not committed, change
nothing it sees).
"""

from __future__ import annotations

import array
import contextlib
import io
import math
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from tokenize import TokenError
from typing import Any, Protocol, TypeVar

import numpy as np

from ..errors import IndexCorruptError
from .analyzer import NO_TERM, tokenize
from .bm25 import K1, B, TermStats, bm25, idf, top_rows

__all__ = ["LENGTHS", "LexicalIndex", "LexicalSearch", "LexicalWriter", "ViewCache"]

#: The file beside bm25s' arrays that holds each row's length in terms.
LENGTHS = "row_lengths.npy"


_T = TypeVar("_T")


class ViewCache:
    """What was worked out from a row array (a caller's view, its rows in one segment),
    kept for the ``size`` arrays asked for last. Keyed by the array's identity, so a
    question costs no hashing of a large array; each array is held while kept, so an
    identity is never reused meanwhile. Thread-safe."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[int, tuple[object, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, rows: object, make: Callable[[], _T]) -> _T:
        with self._lock:
            hit = self._items.get(id(rows))
            if hit is not None:
                self._items.move_to_end(id(rows))
                return hit[1]
        value = make()
        with self._lock:
            self._items[id(rows)] = (rows, value)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


class LexicalSearch(Protocol):
    """What a segment's lexical side answers: term statistics and a top-k search.

    :class:`LexicalIndex` (bm25s, local) is one; a store that searches elsewhere (Milvus's
    BM25 function) supplies another.
    """

    @property
    def n_rows(self) -> int: ...

    def doc_freqs(self, tokens: Sequence[str], rows: np.ndarray | None = None
                  ) -> np.ndarray:
        """How many rows (of ``rows`` when given) hold each token."""
        ...

    def length(self, rows: np.ndarray | None = None) -> int | None:
        """Terms in all rows (in ``rows`` when given); ``None`` where not known."""
        ...

    def top(self, tokens: Sequence[str], k: int, *, stats: TermStats | None = None,
            rows: np.ndarray | None = None, exclude: np.ndarray | None = None
            ) -> list[tuple[int, float]]:
        """The best ``k`` rows for ``tokens`` under ``stats`` (``None``: this index's own),
        within ``rows`` when given, never one of ``exclude``; best first."""
        ...


class LexicalIndex:
    """A BM25 index whose document ``i`` is chunk row ``i`` of the index."""

    def __init__(self, model: Any, n_rows: int, source: str = "",
                 lengths: np.ndarray | None = None) -> None:
        self._model = model
        self.n_rows = n_rows
        self.source = source  # the folder it was loaded from, for errors
        #: each row's length in terms (``None``: an index saved before lengths were kept)
        self.lengths = lengths
        self._masks = ViewCache(4)  # a caller's view as a mask (see doc_freqs)
        self._avg: float | None = None

    @classmethod
    def build(cls, texts: Sequence[str]) -> LexicalIndex:
        """Index ``texts`` (one per chunk row)."""
        import bm25s

        model = bm25s.BM25()
        lengths = np.zeros(len(texts), np.int32)
        if texts:
            tokens = tokenize(texts)
            if not any(tokens):  # bm25s cannot build an empty vocabulary ("&", "-- 1 --")
                tokens[0] = [NO_TERM]
            lengths = np.asarray([len(t) for t in tokens], np.int32)
            model.index(tokens, show_progress=False)
        return cls(model, len(texts), lengths=lengths)

    def _postings(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, stored scores)`` of the rows holding ``token``."""
        tid = self._model.vocab_dict.get(token) if self.n_rows else None
        if tid is None:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        s = self._model.scores
        lo, hi = int(s["indptr"][tid]), int(s["indptr"][tid + 1])
        return np.asarray(s["indices"][lo:hi]), np.asarray(s["data"][lo:hi])

    def _damaged(self, token: str) -> IndexCorruptError:
        """The error for postings of ``token`` naming rows past the index, found where they
        are used (checking every posting on load would read them all)."""
        return IndexCorruptError(f"{self.source or 'BM25 index'}: damaged, postings of "
                                 f"{token!r} name rows past its {self.n_rows}")

    def doc_freqs(self, tokens: Sequence[str], rows: np.ndarray | None = None
                  ) -> np.ndarray:
        """How many rows (of ``rows`` when given) hold each token (0 for tokens this index
        has never seen)."""
        out = np.zeros(len(tokens), np.int64)
        if self.n_rows == 0:
            return out
        mask = None if rows is None else self._mask(rows)
        vocab, indptr = self._model.vocab_dict, self._model.scores["indptr"]
        for i, t in enumerate(tokens):
            if mask is not None:
                try:
                    out[i] = int(np.count_nonzero(mask[self._postings(t)[0]]))
                except IndexError:
                    raise self._damaged(t) from None
                continue
            tid = vocab.get(t)
            if tid is not None:
                out[i] = int(indptr[tid + 1]) - int(indptr[tid])
        return out

    def _mask(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` as a mask over this index's rows, made once per view (not per
        question)."""
        def make() -> np.ndarray:
            mask = np.zeros(self.n_rows, bool)
            mask[np.asarray(rows, np.int64)] = True
            return mask
        return self._masks.get(rows, make)

    def length(self, rows: np.ndarray | None = None) -> int | None:
        """Terms in all rows (in ``rows`` when given); ``None`` for an index saved before
        row lengths were kept."""
        if self.lengths is None:
            return None
        part = self.lengths if rows is None else self.lengths[np.asarray(rows, np.int64)]
        return int(np.sum(part, dtype=np.int64))

    def scores(self, tokens: Sequence[str], stats: TermStats | None = None,
               only: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of every row for ``tokens``, under ``stats`` (``None``: this index's
        own, the scores as stored).

        ``only`` (a mask over the rows) leaves every other row at 0 under other statistics,
        which spares scoring rows a search cannot return again.

        Under other statistics each stored score gives back the term's count in the row
        (the stored score is ``idf * tf / (tf + norm)`` with this index's IDF and mean
        length), which :func:`bm25` scores again. Without row lengths (an older index) only
        the IDF changes.
        """
        out = np.zeros(self.n_rows, np.float32)
        if self.n_rows == 0:
            return out
        own_idf = own_avg = None
        if stats is not None:
            own_idf = idf(self.doc_freqs(tokens), self.n_rows)
            if self.lengths is not None and stats.avg_length is not None:
                if self._avg is None:  # as bm25s: the mean of every row's length
                    self._avg = float(np.mean(self.lengths))
                own_avg = self._avg
        for i, t in enumerate(tokens):
            rows, data = self._postings(t)
            try:
                if only is not None and stats is not None:  # score again only rows wanted
                    keep = only[rows]
                    rows, data = rows[keep], data[keep]
                if not len(rows):
                    continue
                part: np.ndarray = np.asarray(data, np.float32)
                if stats is not None and own_idf is not None:
                    new = float(stats.idf[i])
                    if own_avg is None or stats.avg_length is None or self.lengths is None:
                        part = part * np.float32(new / own_idf[i] if own_idf[i] > 0 else 1.0)
                    else:
                        dl = self.lengths[rows]
                        # score / idf = tf / (tf + norm): the count back, exact once rounded
                        ratio = np.minimum(part.astype(np.float64) / own_idf[i], 1 - 1e-9)
                        norm = K1 * ((1 - B) + B * dl / own_avg)
                        tf = np.maximum(np.rint(ratio * norm / (1 - ratio)), 1)
                        part = bm25(tf, dl, new, stats.avg_length).astype(np.float32)
                # Row ids are unique within one token's postings, so a fancy += is exact.
                out[rows] += part
            except IndexError:
                raise self._damaged(t) from None
        return out

    def top(self, tokens: Sequence[str], k: int, *, stats: TermStats | None = None,
            rows: np.ndarray | None = None, exclude: np.ndarray | None = None
            ) -> list[tuple[int, float]]:
        """The best ``k`` rows for ``tokens`` (under ``stats`` as in :meth:`scores`), within
        ``rows`` when given, never one of ``exclude``: ``[(row, score)]``, best first."""
        only = None
        if rows is not None and stats is not None:
            only = np.zeros(self.n_rows, bool)
            only[np.asarray(rows, np.int64)] = True
        scores = self.scores(tokens, stats, only)
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
        if self.lengths is not None:
            np.save(Path(directory) / LENGTHS, np.asarray(self.lengths, np.int32))

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
        return cls(model, n_rows, str(directory), _load_lengths(Path(directory), n_rows, mmap))


class LexicalWriter:
    """Builds the same BM25 index as :meth:`LexicalIndex.build` from texts given a batch at
    a time, holding only the vocabulary and per-row lengths in memory.

    Each batch is tokenized, and its rows' distinct terms and their counts are appended to
    two scratch files in ``directory``; :meth:`save` works out the IDFs and writes the
    score matrix column by column into memory-mapped ``.npy`` files, with bm25s' own
    parameters and vocabulary beside them, so :meth:`LexicalIndex.load` reads it as any
    saved index. Scores equal bm25s' bit for bit (bm25s' Lucene variant, ``k1=1.5``,
    ``b=0.75``, float32); the vocabulary is numbered in order of first appearance.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._vocab: dict[str, int] = {}
        # compact arrays: a million rows cost megabytes, not the lists' tens of megabytes
        self._df = np.zeros(0, np.int64)  # rows holding each term
        self._lengths = array.array("q")  # tokens per row
        self._distinct = array.array("q")  # distinct terms per row
        self._terms = open(self.directory / "terms.tmp", "wb")
        self._counts = open(self.directory / "counts.tmp", "wb")

    @property
    def n_rows(self) -> int:
        return len(self._lengths)

    def add(self, texts: Sequence[str]) -> None:
        """Append ``texts`` as the next rows."""
        if not texts:
            return
        vocab = self._vocab
        ids: list[int] = []
        counts: list[int] = []
        for tokens in tokenize(texts):
            tf = Counter(tokens)  # distinct terms in order of first appearance
            ids += [vocab.setdefault(t, len(vocab)) for t in tf]
            counts += tf.values()
            self._lengths.append(len(tokens))
            self._distinct.append(len(tf))
        batch = np.asarray(ids, np.int32)
        self._df = np.concatenate([self._df, np.zeros(len(vocab) - len(self._df), np.int64)])
        self._df += np.bincount(batch, minlength=len(vocab))  # each id once per row
        self._terms.write(batch.tobytes())
        self._counts.write(np.asarray(counts, np.int32).tobytes())

    def save(self, directory: str | Path, *, postings_per_pass: int = 1 << 23,
             postings_per_read: int = 1 << 18) -> None:
        """Write the index into ``directory`` (as :meth:`LexicalIndex.save` does) and
        delete the scratch files. The score matrix is written in ranges of terms holding
        about ``postings_per_pass`` (row, term) pairs (8 bytes each in memory), each from
        one pass over the scratch files read ``postings_per_read`` pairs at a time (some
        60 bytes each while scored)."""
        import bm25s

        n = self.n_rows
        vocab = self._vocab
        if n and not vocab:  # bm25s cannot build an empty vocabulary: row 0 gets a term
            vocab[NO_TERM] = 0
            self._df = np.ones(1, np.int64)
            self._lengths[0] = self._distinct[0] = 1
            self._terms.write(np.zeros(1, np.int32).tobytes())
            self._counts.write(np.ones(1, np.int32).tobytes())
        self._terms.close()
        self._counts.close()
        try:
            if n == 0:
                return
            lengths = np.frombuffer(self._lengths, np.int64).copy()
            distinct = np.frombuffer(self._distinct, np.int64).copy()
            avg = lengths.mean()  # as bm25s: the mean of an int64 array
            df = self._df.tolist()
            idf_f32 = np.asarray([math.log(1 + (n - f + 0.5) / (f + 0.5)) for f in df],
                                 np.float32)
            indptr = np.zeros(len(df) + 1, np.int64)
            np.cumsum(df, out=indptr[1:])
            nnz = int(indptr[-1])
            # as bm25s' scipy matrix: int32 row numbers while they fit, int64 offsets
            int_dtype = np.int32 if max(nnz, n) < 2**31 - 1 else np.int64
            out = Path(directory)
            out.mkdir(parents=True, exist_ok=True)
            model = bm25s.BM25()
            model.scores = {"data": np.zeros(0, np.float32), "indices": np.zeros(0, np.int32),
                            "indptr": indptr, "num_docs": n}
            vocab[""] = len(df)  # bm25s' empty token, one past the columns (not a copy:
            model.vocab_dict = vocab  # the vocabulary is the largest thing held here)
            model.nonoccurrence_array = None  # set by bm25s' index(); Lucene has none
            with contextlib.redirect_stdout(io.StringIO()):
                model.save(str(out), allow_pickle=False)
            np.save(out / LENGTHS, lengths.astype(np.int32))
            files = []
            for name, dtype in (("data", np.float32), ("indices", int_dtype)):
                # the .npy header np.save writes, and room for the array after it
                mapped = np.lib.format.open_memmap(out / f"{name}.csc.index.npy", "w+",
                                                   dtype, (nnz,))
                files.append((out / f"{name}.csc.index.npy", int(mapped.offset)))
                del mapped
            self._fill(files, indptr, idf_f32, lengths, distinct, float(K1), float(B), avg,
                       (postings_per_pass, postings_per_read), int_dtype)
        finally:
            for name in ("terms.tmp", "counts.tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(self.directory / name)
            self._vocab = {}  # written: free it before the segment's IVF is built
            self._df = np.zeros(0, np.int64)

    def _fill(self, files: list[tuple[Path, int]], indptr: np.ndarray, idf_f32: np.ndarray,
              lengths: np.ndarray, distinct: np.ndarray, k1: float, b: float,
              avg: np.floating, sizes: tuple[int, int], int_dtype: type) -> None:
        """Scores of every (row, term), written where the CSC layout puts them (within a
        term, rows ascending, as scipy orders bm25s' matrix): terms are taken in ranges
        (``sizes``: postings per range and per read, see :meth:`save`), each filled in
        memory from one pass over the scratch files and written at its place, so memory
        stays bounded however large the matrix."""
        per_pass, per_read = sizes
        ends = np.cumsum(distinct)
        # bm25s scores each row as float32 tf over (k1 * (1 - b + b * len / avg)), the
        # denominator a NumPy float64 scalar: its promotion with the float32 tf (float64
        # under NumPy 2, float32 under 1.x) is reproduced, so every score rounds the same.
        wide = (np.float64(1.0) + np.ones(1, np.float32)).dtype
        n_terms = len(indptr) - 1
        t_lo = 0
        while t_lo < n_terms:
            t_hi = max(int(np.searchsorted(indptr, indptr[t_lo] + per_pass, "right")) - 1,
                       t_lo + 1)
            p_lo, p_hi = int(indptr[t_lo]), int(indptr[t_hi])
            data = np.empty(p_hi - p_lo, np.float32)
            rows_out: np.ndarray = np.empty(p_hi - p_lo, int_dtype)
            fill = indptr[t_lo:t_hi] - p_lo  # next free slot of each term in the range
            with open(self.directory / "terms.tmp", "rb") as ft, \
                    open(self.directory / "counts.tmp", "rb") as fc:
                lo = 0
                while lo < len(lengths):
                    base = int(ends[lo - 1]) if lo else 0
                    hi = max(int(np.searchsorted(ends, base + per_read, "right")), lo + 1)
                    size = int(ends[hi - 1]) - base
                    tids = np.fromfile(ft, np.int32, size)
                    tf = np.fromfile(fc, np.int32, size)
                    rows = np.repeat(np.arange(lo, hi, dtype=np.int64), distinct[lo:hi])
                    lo = hi
                    keep = np.flatnonzero((tids >= t_lo) & (tids < t_hi))
                    if not len(keep):
                        continue
                    tids, rows, tff = tids[keep], rows[keep], tf[keep].astype(np.float32)
                    denom = (k1 * ((1 - b) + b * lengths[rows] / avg)).astype(wide)
                    scores = (idf_f32[tids] * (tff / (denom + tff))).astype(np.float32)
                    order = np.argsort(tids, kind="stable")
                    t_sorted = tids[order] - t_lo
                    first, starts, counts = np.unique(t_sorted, return_index=True,
                                                      return_counts=True)
                    dest = fill[t_sorted] + (np.arange(len(keep)) - np.repeat(starts, counts))
                    data[dest] = scores[order]
                    rows_out[dest] = rows[order]
                    fill[first] += counts
            for (path, offset), part in zip(files, (data, rows_out), strict=True):
                with open(path, "r+b") as f:
                    f.seek(offset + p_lo * part.itemsize)
                    f.write(part.tobytes())
            t_lo = t_hi


def _load_lengths(directory: Path, n_rows: int, mmap: bool) -> np.ndarray | None:
    """Each row's length in terms, as saved beside the index (``None``: saved before they
    were kept); :class:`IndexCorruptError` when the file is unreadable or the wrong size."""
    path = directory / LENGTHS
    if not path.exists():
        return None
    try:
        lengths = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    # numpy parses a .npy header as a Python literal: damage surfaces as any of these
    except (OSError, ValueError, EOFError, TypeError, SyntaxError, RecursionError,
            TokenError) as e:
        raise IndexCorruptError(f"{path}: row lengths unreadable "
                                f"({type(e).__name__}: {e})") from None
    if lengths.shape != (n_rows,) or lengths.dtype.kind not in "iu":
        raise IndexCorruptError(f"{path}: row lengths of shape {lengths.shape} and type "
                                f"{lengths.dtype}, the index has {n_rows} chunks")
    return lengths


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
