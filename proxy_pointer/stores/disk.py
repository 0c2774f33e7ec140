"""A segment saved on disk and read on demand: SQLite rows, memory-mapped arrays.

Layout of one segment folder (written once, never changed)::

    seg-000004/
      segment.json   row, document and dimension counts, the size of every file below
      meta.sqlite    tables ``documents`` (one row per document: record, line token
                     counts, its chunk rows) and ``chunks`` (row -> pointers, breadcrumb,
                     embedded text); opened read-only and immutable
      vectors.npy    float32 (rows, dimension), memory-mapped
      bm25/          bm25s' arrays, memory-mapped, and its vocabulary
      ivf.faiss      approximate segments only (IVF lists, memory-mapped); or hnsw.faiss

Why SQLite for the metadata: point lookups by row and by document are what a query does
(a few hundred per query), it ships with Python, pages in only what is read, and one file
holds both tables with their keys. (Arrow/Parquet reads columns in bulk, which a query
never needs.) Chunk texts are not stored: they are sliced from the stored source by their
character offsets. The documents' sources live in the store's shared ``sources/`` folder.

Opening a segment reads ``segment.json`` and checks every file's size (a truncated file is
caught before it is read); contents are checked when first read (SQLite, ``.npy`` headers,
FAISS and bm25s parsers), and every failure is an :class:`IndexCorruptError` naming the file.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from tokenize import TokenError
from typing import Any

import numpy as np

from ..errors import DocumentError, IndexCorruptError
from ..parse.chunking import Chunk
from ..parse.tree import Tree
from .lexical import LexicalIndex
from .records import DocumentRecord
from .segments import DocumentParts, Pointer, remember
from .vectors import VectorIndex, VectorIndexConfig, build_approximate, open_approximate
from .writer import APPROX, CHUNK_COLS, INFO, LEXICAL, META, VECTORS, NpyRows

__all__ = ["DiskSegment"]


class DiskSegment:
    """A saved segment, opened without reading its contents (see the module docstring).

    ``source`` maps a document's sha256 to its stored text (the store's shared pool).
    Safe for concurrent readers: SQLite access is serialized by a lock.
    """

    def __init__(self, folder: Path, *, source: Callable[[str], str], dimension: int) -> None:
        self.folder = folder
        self.name = folder.name
        self._source = source
        info_path = folder / INFO
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
            self._rows = int(info["rows"])
            files = dict(info["files"])
            self._approx = info.get("approximate")
            dim = int(info["dimension"])
        except FileNotFoundError:
            raise IndexCorruptError(f"{info_path}: missing; the segment is incomplete") from None
        except (ValueError, KeyError, TypeError) as e:
            raise IndexCorruptError(f"{info_path}: unreadable ({e!r})") from None
        if dim != dimension:
            raise IndexCorruptError(f"{info_path}: dimension {dim}, manifest says {dimension}")
        for rel, size in files.items():
            p = folder / rel
            try:
                actual = p.stat().st_size
            except FileNotFoundError:
                raise IndexCorruptError(f"{p}: missing") from None
            if actual != size:
                raise IndexCorruptError(
                    f"{p}: {actual} bytes, {size} were written (truncated or overwritten)")
        self.dimension = dimension
        self._lock = threading.Lock()  # SQLite access
        self._cache_lock = threading.Lock()  # the LRU caches below
        self._con = self._connect()
        self._vectors = self._open_vectors()
        self._vindex: VectorIndex | None = None
        self._lexical: LexicalIndex | None = None
        self._docs: dict[str, tuple[str, int, int]] | None = None
        self._records: OrderedDict[str, DocumentRecord] = OrderedDict()
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._cols: frozenset[str] | None = None
        self._meta: dict[str, dict[str, Any]] | None = None
        self._cards: dict[str, dict[str, Any]] | None = None

    @property
    def approximate(self) -> str | None:
        """The approximate structure saved with the segment (``"ivf"``, ``"hnsw"``, None)."""
        return self._approx

    def __repr__(self) -> str:
        return f"DiskSegment({str(self.folder)!r}, rows={self._rows})"

    # --- opening ------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        path = self.folder / META
        uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
        try:
            con = sqlite3.connect(uri, uri=True, check_same_thread=False)
            n = con.execute("SELECT max(row) FROM chunks").fetchone()[0]
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # damaged text: not UTF-8
            raise IndexCorruptError(f"{path}: not a readable index database ({e})") from None
        if (n if n is not None else -1) != self._rows - 1:
            raise IndexCorruptError(f"{path}: holds {0 if n is None else n + 1} chunk rows, "
                                    f"the segment has {self._rows}")
        return con

    def _open_vectors(self) -> np.ndarray:
        path = self.folder / VECTORS
        try:
            v = np.load(path, mmap_mode="r" if self._rows else None, allow_pickle=False)
            self._reader = NpyRows(path) if self._rows and self._approx else None
        except (ValueError, OSError, EOFError, TokenError) as e:  # TokenError: a bad header
            raise IndexCorruptError(f"{path}: unreadable ({e})") from None
        if v.dtype != np.float32 or v.shape != (self._rows, self.dimension):
            raise IndexCorruptError(f"{path}: {v.dtype} {v.shape}, expected float32 "
                                    f"({self._rows}, {self.dimension})")
        return v

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._con.execute(sql, args).fetchall()
            except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
                raise IndexCorruptError(f"{self.folder / META}: unreadable ({e})") from None

    # --- documents ----------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return self._rows

    def _columns(self) -> frozenset[str]:
        """The documents table's columns: segments written before converted formats lack
        ``pages`` and ``converter``, those written before metadata lack ``metadata``."""
        if self._cols is None:
            self._cols = frozenset(r[1] for r in self._query("PRAGMA table_info(documents)"))
        return self._cols

    def metadata(self) -> dict[str, dict[str, Any]]:
        """Every document's metadata (``{}`` where none), in one read."""
        if self._meta is None:
            if "metadata" not in self._columns():
                self._meta = {d: {} for d in self._doc_table()}
            else:
                self._meta = {d: self._metadata(raw, d) for d, raw in
                              self._query("SELECT doc_id, metadata FROM documents")}
        return self._meta

    def cards(self) -> dict[str, dict[str, Any]]:
        """Every document's card (``{}`` where none: segments written before cards), in
        one read."""
        if self._cards is None:
            if "card" not in self._columns():
                self._cards = {d: {} for d in self._doc_table()}
            else:
                self._cards = {d: self._metadata(raw, d, "card") for d, raw in
                               self._query("SELECT doc_id, card FROM documents")}
        return self._cards

    def _metadata(self, raw: str | None, doc_id: str, what: str = "metadata"
                  ) -> dict[str, Any]:
        if not raw:
            return {}
        try:
            meta = json.loads(raw)
        except ValueError:
            meta = None
        if not isinstance(meta, dict):
            raise IndexCorruptError(f"{self.folder / META}: {what} of {doc_id} is not a "
                                    "JSON object")
        return meta

    def _doc_table(self) -> dict[str, tuple[str, int, int]]:
        if self._docs is None:
            self._docs = {d: (h, lo, hi) for d, h, lo, hi in
                          self._query("SELECT doc_id, sha256, row_lo, row_hi FROM documents")}
        return self._docs

    def sha256s(self) -> dict[str, str]:
        return {d: v[0] for d, v in self._doc_table().items()}

    def record(self, doc_id: str) -> DocumentRecord:
        rec = self._records.get(doc_id)
        if rec is None:
            # Segments written before converted formats have no pages or converter column.
            cols = self._columns()
            paged = "pages" in cols
            rows = self._query("SELECT doc_id, source_path, size, sha256, kind, title, n_chunks,"
                               " line_tokens" + (", pages, converter" if paged else ", 0, 0")
                               + (", metadata" if "metadata" in cols else ", NULL")
                               + (", card" if "card" in cols else ", NULL")
                               + " FROM documents WHERE doc_id = ?", (doc_id,))
            if not rows:
                if doc_id in self._doc_table():  # listed, yet not found by its key
                    raise IndexCorruptError(f"{self.folder / META}: the record of {doc_id} "
                                            "cannot be found (a damaged table index)")
                raise KeyError(doc_id)
            d, path, size, sha, kind, title, n, lt, pages, conv, meta, card = rows[0]
            try:
                rec = DocumentRecord(doc_id=d, source_path=path, size=size, sha256=sha,
                                     kind=kind, title=title, n_chunks=n,
                                     line_tokens=tuple(np.frombuffer(lt, "<i4").tolist()),
                                     pages=tuple(np.frombuffer(pages, "<i4").tolist())
                                     if pages else (), converter=conv or "",
                                     metadata=self._metadata(meta, d),
                                     card=self._metadata(card, d, "card"))
            except (TypeError, ValueError):  # counts stored as text, not packed integers
                raise IndexCorruptError(f"{self.folder / META}: the record of {doc_id} is "
                                        "damaged (its line or page counts)") from None
            with self._cache_lock:
                remember(self._records, doc_id, rec, 256)
        return rec

    def text(self, doc_id: str) -> str:
        text = self._texts.get(doc_id)
        if text is None:
            text = self._source(self._doc_table()[doc_id][0])
            with self._cache_lock:
                remember(self._texts, doc_id, text, 64)
        return text

    def _tree_json(self, doc_id: str) -> str:
        rows = self._query("SELECT tree FROM documents WHERE doc_id = ?", (doc_id,))
        return rows[0][0] or "" if rows else ""

    def tree(self, doc_id: str) -> Tree | None:
        raw = self._tree_json(doc_id)
        if not raw:
            return None
        try:
            return Tree.from_json(raw, text=self.text(doc_id))
        except (IndexCorruptError, DocumentError) as e:
            raise IndexCorruptError(f"{self.folder / META}: tree of {doc_id}: {e}") from None

    def pointers(self, rows: Sequence[int]) -> list[Pointer]:
        found = self._rows_where("doc_id, node_id, start_char, start_line, end_line", rows)
        out = [found[int(r)] for r in rows]
        for r, (doc_id, node_id, *ints) in zip(rows, out, strict=True):
            self._check_row(int(r), doc_id, node_id, ints)
        return out

    def _check_row(self, row: int, doc_id: Any, node_id: Any, ints: Sequence[Any],
                   texts: Sequence[Any] = ()) -> None:
        """:class:`IndexCorruptError` for a chunk row SQLite returned damaged (it checks no
        content): a doc id the segment does not hold, a text where a number belongs."""
        if (doc_id not in self._doc_table() or not (node_id is None or _is_node_id(node_id))
                or not all(type(v) is int for v in ints)
                or not all(type(t) is str for t in texts)):
            raise IndexCorruptError(f"{self.folder / META}: chunk row {row} is damaged "
                                    f"({doc_id!r}, {node_id!r}, {list(ints)!r})"[:300])

    def doc_rows(self, doc_id: str) -> np.ndarray:
        _, lo, hi = self._doc_table()[doc_id]
        return np.arange(lo, hi, dtype=np.int64)

    # --- rows ---------------------------------------------------------------------------
    def _rows_where(self, columns: str, rows: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        out: dict[int, tuple[Any, ...]] = {}
        want = sorted(set(int(r) for r in rows))
        for lo in range(0, len(want), 500):
            part = want[lo:lo + 500]
            sql = (f"SELECT row, {columns} FROM chunks WHERE row IN "
                   f"({','.join('?' * len(part))})")
            for rec in self._query(sql, part):
                out[rec[0]] = rec[1:]
        if len(out) != len(want):
            raise IndexCorruptError(f"{self.folder / META}: chunk rows missing")
        return out

    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        found = self._rows_where(CHUNK_COLS + ", embed_text", rows)
        out = []
        for r in rows:
            (doc_id, node_id, title, path, sc, ec, sl, el, os_, oe, ss, se,
             embed) = found[int(r)]
            self._check_row(int(r), doc_id, node_id, (sc, ec, sl, el, os_, oe, ss, se),
                            (title, embed))
            out.append(Chunk(doc_id=doc_id, node_id=node_id, title=title,
                             path=self._json_list(int(r), path), start_char=sc, end_char=ec,
                             start_line=sl, end_line=el, own_start=os_, own_end=oe,
                             section_start=ss, section_end=se,
                             text=self.text(doc_id)[sc:ec], embed_text=embed))
        return out

    def embed_texts(self, rows: Sequence[int]) -> list[str]:
        found = self._rows_where("embed_text", rows)
        return [found[int(r)][0] for r in rows]

    def crumbs(self, rows: Sequence[int]) -> list[tuple[str, ...]]:
        found = self._rows_where("crumbs", rows)
        return [self._json_list(int(r), found[int(r)][0]) for r in rows]

    def _json_list(self, row: int, raw: Any) -> tuple[str, ...]:
        """A chunk row's JSON list of titles; :class:`IndexCorruptError` if it is damaged."""
        try:
            items = json.loads(raw)
        except (ValueError, TypeError):
            items = None
        if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
            raise IndexCorruptError(f"{self.folder / META}: chunk row {row} is damaged "
                                    f"(titles {str(raw)[:80]!r})")
        return tuple(items)

    def rows_mentioning(self, needle: str) -> np.ndarray:
        rows = self._query("SELECT row FROM chunks WHERE instr(norm, ?) > 0", (needle,))
        return np.asarray([r[0] for r in rows], np.int64)

    def vectors(self, rows: np.ndarray | None = None) -> np.ndarray:
        if rows is None:
            return self._vectors
        if self._reader is not None:
            return self._reader(rows)
        return np.asarray(self._vectors[rows])

    def vector_index(self, config: VectorIndexConfig) -> VectorIndex:
        if self._vindex is None or self._vindex.config != config:
            pre = None
            kind = self._approx if config.kind in ("auto", self._approx) else None
            if kind is not None and self._rows:
                pre = open_approximate(self.folder / APPROX[kind], self._rows, self.dimension)
            elif config.kind == "hnsw" and self._rows:
                pre = build_approximate(self._vectors, config, "hnsw")
            self._vindex = VectorIndex(self._vectors, config, prebuilt=pre,
                                       fetch=self._reader)
        return self._vindex

    def lexical(self) -> LexicalIndex:
        if self._lexical is None:
            self._lexical = (LexicalIndex.load(self.folder / LEXICAL, self._rows)
                             if self._rows else LexicalIndex.build([]))
        return self._lexical

    def parts(self, doc_id: str) -> DocumentParts:
        rows = self.doc_rows(doc_id)
        return DocumentParts(self.record(doc_id), self.text(doc_id),
                             tuple(self.chunks(rows.tolist())), self.vectors(rows),
                             self._tree_json(doc_id))

    def close(self) -> None:
        with self._lock:
            self._con.close()
        if self._reader is not None:
            self._reader.close()


def _is_node_id(node_id: Any) -> bool:
    """Whether ``node_id`` is spelled as a tree's node ids are (``preamble``, ``0003``)."""
    return type(node_id) is str and (node_id == "preamble"
                                     or (node_id.isascii() and node_id.isdigit()))
