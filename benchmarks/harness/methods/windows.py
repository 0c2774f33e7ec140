"""The baselines: sliding character windows ranked by vectors (``flat``) or by BM25 (``bm25``).

Windows are cut with langchain's ``RecursiveCharacterTextSplitter`` from each document's raw
Markdown (2,000 characters with 200 overlap, as in the reference comparison, or 500/50) and
embedded as they are, without breadcrumbs. A PDF's windows are cut from its plain page text
(:mod:`..dataset`) and keep the pages they span, for page hits. Both scopes search one index
over all windows; per-document scope keeps only the rows of the question's document, like a
metadata filter.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from proxy_pointer.tokens import count_tokens_many

from ..context import Piece
from ..dataset import Dataset, Question
from .base import BuildStats, MethodUnavailable, dir_bytes

__all__ = ["BM25Method", "FlatMethod", "Windows", "restore_cache", "save_cache", "split_windows"]


@dataclass(frozen=True)
class Windows:
    """All windows of a dataset: texts, their document, token counts and per-doc rows."""

    texts: list[str]
    doc_ids: list[str]
    tokens: np.ndarray
    rows: dict[str, np.ndarray]
    seconds: float  # time to cut and count them, charged to every method that uses them
    pages: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)  # PDFs' rows

    def piece(self, row: int) -> Piece:
        return Piece(text=self.texts[row], doc_id=self.doc_ids[row], path=None,
                     tokens=int(self.tokens[row]), pages=self.pages.get(row, ()))

    def candidates(self, question: Question, scope: str) -> np.ndarray:
        if scope == "per-doc":
            return self.rows.get(question.doc_id, np.empty(0, np.int64))
        return np.arange(len(self.texts))


_WINDOW_CACHE: dict[tuple[int, int, int], Windows] = {}


def save_cache() -> dict:
    """A copy of the windows shared between flat and bm25."""
    return dict(_WINDOW_CACHE)


def restore_cache(saved: dict) -> None:
    """Replace the windows shared between flat and bm25 with ``saved``."""
    _WINDOW_CACHE.clear()
    _WINDOW_CACHE.update(saved)


def split_windows(dataset: Dataset, size: int, overlap: int) -> Windows:
    """Cut every document into windows (cached per dataset object and setting)."""
    key = (id(dataset), size, overlap)
    if key in _WINDOW_CACHE:
        return _WINDOW_CACHE[key]
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MethodUnavailable("langchain-text-splitters is not installed") from exc
    t0 = time.perf_counter()
    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    texts: list[str] = []
    doc_ids: list[str] = []
    rows: dict[str, np.ndarray] = {}
    pages: dict[int, tuple[tuple[int, int], ...]] = {}
    for doc_id, text in dataset.docs.items():
        parts = [p for p in splitter.split_text(text) if p.strip()]
        if doc_id in dataset.pages:
            for row, (part, start) in enumerate(zip(parts, _offsets(text, parts), strict=True),
                                                len(texts)):
                pages[row] = dataset.page_marks(doc_id, start, start + len(part))
        rows[doc_id] = np.arange(len(texts), len(texts) + len(parts), dtype=np.int64)
        texts.extend(parts)
        doc_ids.extend([doc_id] * len(parts))
    tokens = np.asarray(count_tokens_many(texts), dtype=np.int64)
    win = Windows(texts=texts, doc_ids=doc_ids, tokens=tokens, rows=rows,
                  seconds=time.perf_counter() - t0, pages=pages)
    _WINDOW_CACHE[key] = win
    return win


def _offsets(text: str, parts: list[str]) -> list[int]:
    """Where each window starts in ``text``: the splitter keeps windows in order and
    overlapping by less than a window, so each is searched for from the previous start."""
    out, at = [], 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:  # pragma: no cover - the splitter only strips whitespace
            raise ValueError("a window is not a span of its document")
        out.append(found)
        at = found + 1
    return out


def _ranked(win: Windows, rows: np.ndarray, scores: np.ndarray) -> Iterator[Piece]:
    # Stable sort on descending score: ties keep document order, so runs are repeatable.
    for i in np.argsort(-scores, kind="stable"):
        yield win.piece(int(rows[i]))


def _save_windows(win: Windows, directory: Path) -> None:
    rows = [{"doc_id": d, "text": t} for d, t in zip(win.doc_ids, win.texts, strict=True)]
    (directory / "windows.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


class FlatMethod:
    """Vector RAG over sliding windows: exact inner product over unit vectors."""

    points_at_sections = False
    scopes = ("per-doc", "corpus")

    def __init__(self, name: str = "flat", size: int = 2000, overlap: int = 200) -> None:
        self.name = name
        self.size = size
        self.overlap = overlap
        self.description = (f"vector search over {size}-character windows ({overlap} overlap, "
                            "RecursiveCharacterTextSplitter)")
        self._win: Windows | None = None
        self._vectors: np.ndarray | None = None
        self._embedder: Any = None

    def build(self, dataset: Dataset, embedder: Any) -> BuildStats:
        computed0 = embedder.computed
        win = split_windows(dataset, self.size, self.overlap)
        t0 = time.perf_counter()
        vecs = np.asarray(embedder.embed_documents(win.texts), dtype=np.float32)
        seconds = time.perf_counter() - t0 + win.seconds
        self._win, self._vectors, self._embedder = win, vecs, embedder
        with tempfile.TemporaryDirectory() as tmp:
            np.save(Path(tmp) / "vectors.npy", vecs, allow_pickle=False)
            _save_windows(win, Path(tmp))
            size = dir_bytes(tmp)
        return BuildStats(seconds=seconds, units=len(win.texts), embed_texts=len(win.texts),
                          embed_computed=embedder.computed - computed0, index_bytes=size)

    def retrieve(self, question: Question, scope: str, budget: int) -> Iterator[Piece]:
        assert self._win is not None and self._vectors is not None
        rows = self._win.candidates(question, scope)
        q = self._embedder.embed_query(question.question.strip())
        # Corpus scope: all rows in order, so skip the fancy-indexing copy of the matrix.
        vecs = self._vectors if len(rows) == len(self._vectors) else self._vectors[rows]
        return _ranked(self._win, rows, vecs @ q)


class BM25Method:
    """BM25 (bm25s, Lucene variant, English stopwords, no stemmer) over the same windows.

    Windows that share no term with the question score 0 and are not returned.
    """

    points_at_sections = False
    uses_embedder = False
    scopes = ("per-doc", "corpus")

    def __init__(self, name: str = "bm25", size: int = 2000, overlap: int = 200) -> None:
        self.name = name
        self.size = size
        self.overlap = overlap
        self.description = f"BM25 (bm25s) over {size}-character windows ({overlap} overlap)"
        self._win: Windows | None = None
        self._bm25: Any = None

    def build(self, dataset: Dataset, embedder: Any) -> BuildStats:
        try:
            import bm25s
        except ImportError as exc:
            raise MethodUnavailable("bm25s is not installed") from exc
        win = split_windows(dataset, self.size, self.overlap)
        t0 = time.perf_counter()
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(win.texts, stopwords="en", show_progress=False),
                        show_progress=False)
        seconds = time.perf_counter() - t0 + win.seconds
        self._win, self._bm25 = win, retriever
        with tempfile.TemporaryDirectory() as tmp:
            retriever.save(tmp, show_progress=False)
            _save_windows(win, Path(tmp))
            size = dir_bytes(tmp)
        return BuildStats(seconds=seconds, units=len(win.texts), index_bytes=size)

    def retrieve(self, question: Question, scope: str, budget: int) -> Iterator[Piece]:
        import bm25s

        assert self._win is not None
        rows = self._win.candidates(question, scope)
        tokens = bm25s.tokenize([question.question], stopwords="en", return_ids=False,
                                show_progress=False)[0]
        scores = self._bm25.get_scores(tokens) if tokens else np.zeros(len(self._win.texts))
        scores = scores if len(rows) == len(scores) else scores[rows]
        keep = scores > 0
        return _ranked(self._win, rows[keep], scores[keep])
