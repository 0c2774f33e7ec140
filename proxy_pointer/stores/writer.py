"""Writing a segment as a stream: documents appended one at a time, in bounded memory.

A :class:`SegmentWriter` puts each document's rows where the finished segment keeps them as
it is added: its record and chunk rows into SQLite, its vectors appended to ``vectors.npy``
(the header is rewritten with the final row count), its chunk texts tokenized into
:class:`~proxy_pointer.stores.lexical.LexicalWriter`'s scratch files, its source into a sources
folder. What stays in memory is the BM25 vocabulary and a few numbers per row, so a
million-chunk segment is written in a few hundred megabytes; the IVF index of a large
segment is built at the end from the vectors read back in blocks.

:func:`write_segment` writes a list of documents with it, so a segment written at once
(a save, a merge) and one streamed by an update are the same files. The layout is
:mod:`.disk`'s (the reader), whose names this module owns.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexCorruptError
from ..vocab.keys import heading_key
from .lexical import LexicalIndex, LexicalWriter
from .segments import DocumentParts, chunk_crumbs
from .vectors import VectorIndexConfig, build_approximate

__all__ = ["APPROX", "CHUNK_COLS", "INFO", "LEXICAL", "META", "SEGMENT_FORMAT", "VECTORS",
           "NpyRows", "SegmentWriter", "fsync_path", "npy_layout", "read_source",
           "store_source", "write_segment"]

SEGMENT_FORMAT = 1
META, VECTORS, LEXICAL, INFO = "meta.sqlite", "vectors.npy", "bm25", "segment.json"
APPROX = {"ivf": "ivf.faiss", "hnsw": "hnsw.faiss"}
CHUNK_COLS = ("doc_id, node_id, title, path, start_char, end_char, start_line, end_line, "
              "own_start, own_end, section_start, section_end")
#: Chunk texts tokenized for BM25 at a time, and documents per SQLite transaction.
_TEXTS_PER_BATCH = 4096
_DOCS_PER_COMMIT = 512


def fsync_path(path: Path) -> None:
    """Flush a file or a folder (its entries) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def store_source(folder: Path, sha256: str, text: str, *, flush: bool = True) -> None:
    """Keep a document's text as ``folder/<sha256>`` unless it is there: written beside it
    and renamed into place (``flush``: synced to disk first)."""
    target = folder / sha256
    if target.exists():
        return
    tmp = target.with_name(f".tmp-{sha256}-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(text.encode("utf-8"))
        if flush:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, target)


def read_source(folder: Path, sha256: str) -> str:
    """The text kept as ``folder/<sha256>``; :class:`IndexCorruptError` naming the file
    when it is missing or not UTF-8."""
    path = folder / sha256
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise IndexCorruptError(f"{path}: stored copy of a document is missing") from None
    except UnicodeDecodeError as e:
        raise IndexCorruptError(f"{path}: stored copy is damaged ({e})") from None


def _npy_header(rows: int, dimension: int) -> bytes:
    """The ``.npy`` header ``np.save`` writes for a float32 ``(rows, dimension)`` array.
    NumPy pads it for the row count to grow in place, so its length never changes."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
              "fortran_order": False, "shape": (rows, dimension)})
    return buf.getvalue()


class SegmentWriter:
    """A segment being written at ``folder`` (in a temporary sibling until :meth:`finish`).

    ``sources``: a folder to store each document's text in as ``<sha256>`` (as the local
    store's pool), or ``None`` when the caller keeps the texts itself. Not thread-safe.
    """

    def __init__(self, folder: Path, *, dimension: int, config: VectorIndexConfig,
                 sources: Path | None = None) -> None:
        self.folder, self.dimension, self.config, self.sources = folder, dimension, config, sources
        self.n_rows = self.n_documents = 0
        self._tmp = folder.with_name(f".tmp-{folder.name}-{os.getpid()}")
        if self._tmp.exists():
            shutil.rmtree(self._tmp)
        self._tmp.mkdir(parents=True)
        if sources is not None:
            sources.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self._tmp / META)
        self._con.execute("PRAGMA journal_mode=OFF")
        self._con.execute("PRAGMA synchronous=OFF")
        self._con.execute(
            "CREATE TABLE documents (doc_id TEXT PRIMARY KEY, source_path TEXT, size INTEGER,"
            " sha256 TEXT, kind TEXT, title TEXT, n_chunks INTEGER, line_tokens BLOB,"
            " row_lo INTEGER, row_hi INTEGER, tree TEXT, pages BLOB, converter TEXT,"
            " metadata TEXT, card TEXT)")
        self._con.execute(
            f"CREATE TABLE chunks (row INTEGER PRIMARY KEY, {CHUNK_COLS}, crumbs TEXT,"
            " norm TEXT, embed_text TEXT)")
        self._header = _npy_header(0, dimension)
        self._vectors = os.open(self._tmp / VECTORS, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(self._vectors, self._header)
        self._lexical = LexicalWriter(self._tmp / ".bm25-scratch")
        self._texts: list[str] = []
        self._open = True

    def add(self, parts: DocumentParts) -> int:
        """Append one document's rows; returns the row its first chunk got."""
        r, row0 = parts.record, self.n_rows
        vectors = np.ascontiguousarray(parts.vectors, np.float32)
        if vectors.shape != (len(parts.chunks), self.dimension):
            raise ValueError(f"{r.doc_id}: {vectors.shape} vectors for {len(parts.chunks)} "
                             f"chunks of dimension {self.dimension}")
        self._con.execute(
            "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (r.doc_id, r.source_path, r.size, r.sha256, r.kind, r.title, r.n_chunks,
             np.asarray(r.line_tokens, "<i4").tobytes(), row0, row0 + len(parts.chunks),
             parts.tree_json, np.asarray(r.pages, "<i4").tobytes(), r.converter,
             json.dumps(r.metadata, ensure_ascii=False) if r.metadata else None,
             json.dumps(r.card, ensure_ascii=False) if r.card else None))
        rows = []
        for i, c in enumerate(parts.chunks):
            crumbs = chunk_crumbs(c, r.title)
            rows.append((row0 + i, c.doc_id, c.node_id, c.title, json.dumps(c.path),
                         c.start_char, c.end_char, c.start_line, c.end_line, c.own_start,
                         c.own_end, c.section_start, c.section_end, json.dumps(crumbs),
                         "\x1f".join(heading_key(t) for t in crumbs), c.embed_text))
        self._con.executemany(f"INSERT INTO chunks VALUES ({','.join('?' * 16)})", rows)
        if len(parts.chunks):
            os.pwrite(self._vectors, vectors.tobytes(),
                      len(self._header) + row0 * self.dimension * 4)
        self._texts.extend(c.embed_text for c in parts.chunks)
        if len(self._texts) >= _TEXTS_PER_BATCH:
            self._lexical.add(self._texts)
            self._texts = []
        if self.sources is not None:
            store_source(self.sources, r.sha256, parts.text, flush=False)
        self.n_rows += len(parts.chunks)
        self.n_documents += 1
        if self.n_documents % _DOCS_PER_COMMIT == 0:
            self._con.commit()
        return row0

    def vectors(self, rows: Iterable[int]) -> np.ndarray:
        """Vectors of rows already added (read back from the file)."""
        return _pread_rows(self._vectors, len(self._header), (self.n_rows, self.dimension),
                           np.dtype(np.float32), np.fromiter(rows, np.int64))

    def finish(self, *, lexical: LexicalIndex | None = None) -> Path:
        """Complete the segment's files, flush them and rename the folder into place.
        ``lexical``: a BM25 index already built over exactly these rows, saved instead."""
        tmp, n = self._tmp, self.n_rows
        self._con.commit()
        self._con.close()
        fsync_path(tmp / META)
        header = _npy_header(n, self.dimension)
        if len(header) != len(self._header):  # never: NumPy leaves room for the count
            raise ValueError(f"{tmp / VECTORS}: header of {n} rows does not fit")
        os.pwrite(self._vectors, header, 0)
        os.fsync(self._vectors)
        os.close(self._vectors)
        self._open = False
        if self._texts:
            self._lexical.add(self._texts)
            self._texts = []
        if n:
            if lexical is not None and lexical.n_rows == n:
                lexical.save(tmp / LEXICAL)
            else:
                self._lexical.save(tmp / LEXICAL)
            for p in (tmp / LEXICAL).iterdir():
                fsync_path(p)
        shutil.rmtree(tmp / ".bm25-scratch", ignore_errors=True)
        kind = self.config.approximate_kind(n)
        if kind is not None and n:
            import faiss

            with NpyRows(tmp / VECTORS) as rows:
                index = build_approximate(rows, self.config, kind)
            faiss.write_index(index, str(tmp / APPROX[kind]))
            del index
        files = {str(p.relative_to(tmp)): p.stat().st_size for p in sorted(tmp.rglob("*"))
                 if p.is_file()}
        info = {"format": SEGMENT_FORMAT, "rows": n, "documents": self.n_documents,
                "dimension": self.dimension, "approximate": kind if n else None,
                "files": files}
        with open(tmp / INFO, "w", encoding="utf-8") as f:
            json.dump(info, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        fsync_path(tmp)
        os.rename(tmp, self.folder)
        return self.folder

    def abort(self) -> None:
        """Delete what was written (the finished folder is never touched)."""
        if self._open:
            with contextlib.suppress(sqlite3.Error):
                self._con.close()
            os.close(self._vectors)
            self._open = False
        shutil.rmtree(self._tmp, ignore_errors=True)


def write_segment(folder: Path, docs: Iterable[DocumentParts], *, dimension: int,
                  config: VectorIndexConfig, lexical: LexicalIndex | None = None) -> None:
    """Write ``docs`` (in row order) as a segment at ``folder``, atomically: files go to a
    temporary sibling folder, are flushed, then the folder is renamed into place.
    ``lexical`` reuses a BM25 index already built over the same rows."""
    writer = SegmentWriter(folder, dimension=dimension, config=config)
    try:
        for d in docs:
            writer.add(d)
        writer.finish(lexical=lexical)
    except BaseException:
        writer.abort()
        raise


def npy_layout(path: Path) -> tuple[int, tuple[int, ...], np.dtype]:
    """``(data offset, shape, dtype)`` of a C-order numeric ``.npy`` file (never unpickles)."""
    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read_header = (np.lib.format.read_array_header_1_0 if major == 1
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(f)
        if fortran or dtype.hasobject:
            raise ValueError("not a C-order numeric array")
        offset = f.tell()
        if os.fstat(f.fileno()).st_size < offset + int(np.prod(shape)) * dtype.itemsize:
            raise ValueError(f"file shorter than its {shape} {dtype} array")
    return offset, tuple(shape), dtype


def _pread_rows(fd: int, offset: int, shape: tuple[int, int], dtype: np.dtype,
                rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` of a C-order ``shape`` array stored at ``offset`` in ``fd``, read one
    by one with ``pread``; :class:`IndexError` for a row out of range."""
    n, d = shape
    size = d * dtype.itemsize
    out = np.empty((len(rows), d), dtype)
    view = out.data.cast("B")
    for i, r in enumerate(rows.tolist()):
        if not 0 <= r < n:
            raise IndexError(f"row {r} out of range")
        os.preadv(fd, [view[i * size:(i + 1) * size]], offset + r * size)
    return out


class NpyRows:
    """Rows of a 2-D ``.npy`` read with ``pread``: random access without mapping the file.

    A segment searched through its IVF index reads only the few hundred rows it re-scores
    per query, and an IVF index is built from blocks read in turn; reading rows, rather
    than faulting them in through a map, keeps the file's pages out of the process (they
    stay in the shared page cache). ``rows[i:j]`` and ``rows[array]`` read; ``rows(array)``
    is the latter.
    """

    def __init__(self, path: Path) -> None:
        self._offset, shape, dtype = npy_layout(path)
        self._fd = os.open(path, os.O_RDONLY)
        self._n, self._d = shape
        self.shape, self.dtype = (self._n, self._d), dtype
        self._row = self._d * dtype.itemsize

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, slice):
            lo, hi, step = key.indices(self._n)
            if step == 1:
                out = np.empty((max(hi - lo, 0), self._d), self.dtype)
                if len(out):
                    os.preadv(self._fd, [out.data.cast("B")], self._offset + lo * self._row)
                return out
            key = np.arange(lo, hi, step)
        return self(np.asarray(key, np.int64))

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return _pread_rows(self._fd, self._offset, self.shape, self.dtype,
                           np.asarray(rows, np.int64))

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> NpyRows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
