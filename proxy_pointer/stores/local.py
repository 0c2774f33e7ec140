"""The embedded default store: an index directory of atomic, pickle-free generations.

Layout of an index directory::

    DIR/
      CURRENT              name of the committed generation, e.g. "gen-000007"
      lock                 advisory lock file held by a writer
      gen-000007/
        manifest.json      schema version, library version, embedder id and dimension,
                           chunking settings, vector-index settings, counts
        documents.jsonl    one line per document: id, source path, size, sha256, ...
        chunks.jsonl       one line per chunk (row i of vectors.npy), the chunk's pointers
        vectors.npy        float32 (n_chunks, dimension), saved with allow_pickle=False
        sources/<sha256>   the exact text of each document as it was indexed
        hnsw.faiss         only for an approximate index (rebuilt otherwise)
        bm25/              the lexical index (bm25s' arrays and JSON); an index saved
                           without it gets one built in memory on its first hybrid query

A save writes a complete new generation, flushes it, then swaps ``CURRENT`` with an atomic
``os.replace``; a crash at any point leaves the previous generation committed and loadable.
Unchanged source copies are hard-linked from the previous generation, so a save costs what
changed. The previous generation is kept for readers that are still loading it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..chunking import Chunk
from ..errors import IndexCorruptError, IndexLockedError, IndexMismatchError
from ..lexical import LexicalIndex
from ..vectors import VectorIndex
from .base import SCHEMA_VERSION, DocumentRecord, IndexData, Manifest

__all__ = ["LocalStore", "current_generation", "index_size_bytes", "write_lock"]

_CURRENT = "CURRENT"
_LEXICAL = "bm25"


# --- locking ----------------------------------------------------------------------------
@contextlib.contextmanager
def write_lock(directory: str | os.PathLike[str], *, timeout: float = 0.0) -> Iterator[None]:
    """Hold the index's writer lock; a second writer waits ``timeout`` seconds, then fails.

    Raises :class:`IndexLockedError` naming the directory. The lock is advisory (``flock``)
    and released by the OS if the holder dies, so a crash never leaves a stale lock.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise IndexLockedError(
                        f"{directory}: another process is writing this index; "
                        "wait for it to finish (or pass a lock timeout)"
                    ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# --- saving -----------------------------------------------------------------------------
def _fsync(path: Path) -> None:
    """Flush a file or a folder (its entries) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def current_generation(directory: str | os.PathLike[str]) -> Path | None:
    """The committed generation folder, or ``None`` when the directory holds no index."""
    directory = Path(directory)
    try:
        name = (directory / _CURRENT).read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise IndexCorruptError(f"{directory}: cannot read {_CURRENT}: {e}") from e
    if not name.startswith("gen-") or "/" in name:
        raise IndexCorruptError(f"{directory}/{_CURRENT}: unexpected content {name!r}")
    return directory / name


def _chunk_from_row(row: dict[str, Any]) -> Chunk:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
    return Chunk(**fields)


class LocalStore:
    """An index directory on the local file system (see the module docstring for layout).

    >>> store = LocalStore(".proxy-pointer-index")        # doctest: +SKIP
    >>> data = store.read()                               # doctest: +SKIP
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"LocalStore({str(self.directory)!r})"

    @property
    def location(self) -> str:
        return str(self.directory)

    def exists(self) -> bool:
        return current_generation(self.directory) is not None

    def lock(self, *, timeout: float = 0.0) -> contextlib.AbstractContextManager[None]:
        return write_lock(self.directory, timeout=timeout)

    def size_bytes(self) -> int:
        """Bytes on disk of the committed generation (what a reader loads)."""
        return index_size_bytes(self.directory)

    # --- writing ------------------------------------------------------------------------
    def write(self, data: IndexData) -> str:
        """Write ``data`` as a new generation and commit it atomically; returns its name.

        The caller holds :meth:`lock`.
        """
        directory = self.directory
        directory.mkdir(parents=True, exist_ok=True)
        previous = current_generation(directory)
        prev_num = int(previous.name.split("-")[1]) if previous is not None else 0
        existing = [int(p.name.split("-")[1]) for p in directory.glob("gen-*")
                    if p.name[4:].isdigit()]
        num = max([prev_num, *existing]) + 1
        gen = directory / f"gen-{num:06d}"
        tmp = directory / f".tmp-{gen.name}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        (tmp / "sources").mkdir(parents=True)

        n = data.vectors.shape[0] if data.vectors.ndim == 2 else 0
        if n != len(data.chunks):
            raise IndexCorruptError(f"{n} vectors for {len(data.chunks)} chunks")
        manifest = dataclasses.replace(data.manifest, schema_version=SCHEMA_VERSION,
                                       n_documents=len(data.documents),
                                       n_chunks=len(data.chunks))
        docs = sorted(data.documents.values(), key=lambda r: r.doc_id)
        _write_file(tmp / "documents.jsonl", _jsonl([r.to_dict() for r in docs]))
        _write_file(tmp / "chunks.jsonl", _jsonl([dataclasses.asdict(c) for c in data.chunks]))
        with open(tmp / "vectors.npy", "wb") as f:
            np.save(f, np.ascontiguousarray(data.vectors, dtype=np.float32), allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        blob = data.vector_index.faiss_bytes() if data.vector_index is not None else None
        if blob is not None:
            _write_file(tmp / "hnsw.faiss", blob)
        if data.lexical is not None and data.lexical.n_rows:
            data.lexical.save(tmp / _LEXICAL)
            for part in (tmp / _LEXICAL).iterdir():
                _fsync(part)
            _fsync(tmp / _LEXICAL)
        for rec in docs:
            target = tmp / "sources" / rec.sha256
            if target.exists():
                continue
            old = previous / "sources" / rec.sha256 if previous is not None else None
            if old is not None and old.is_file():
                try:
                    os.link(old, target)
                    continue
                except OSError:
                    pass  # another file system: fall through and write a copy
            _write_file(target, data.texts[rec.doc_id].encode("utf-8"))
        # The manifest goes last: a generation without one is never committed.
        _write_file(tmp / "manifest.json",
                    json.dumps(manifest.to_dict(), indent=2, sort_keys=True).encode())
        _fsync(tmp / "sources")
        _fsync(tmp)
        os.rename(tmp, gen)
        pointer = directory / f".{_CURRENT}.tmp"
        _write_file(pointer, (gen.name + "\n").encode())
        os.replace(pointer, directory / _CURRENT)
        _fsync(directory)
        _collect_garbage(directory, keep={gen.name} | ({previous.name} if previous else set()))
        return gen.name

    # --- reading ------------------------------------------------------------------------
    def read_manifest(self) -> Manifest:
        """The committed generation's manifest.

        Raises :class:`IndexCorruptError` (missing, unparsable) or
        :class:`IndexMismatchError` (a schema version this library does not read).
        """
        return self._manifest()[1]

    def _manifest(self) -> tuple[Path, Manifest]:
        directory = self.directory
        if not directory.is_dir():
            raise IndexCorruptError(f"{directory}: no index here (not a directory)")
        gen = current_generation(directory)
        if gen is None:
            raise IndexCorruptError(f"{directory}: no index here (no {_CURRENT} file)")
        if not gen.is_dir():
            raise IndexCorruptError(
                f"{directory}/{_CURRENT}: names generation {gen.name}, which is missing"
            )
        try:
            raw = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexCorruptError(f"{gen}/manifest.json: missing") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise IndexCorruptError(f"{gen}/manifest.json: not valid JSON ({e})") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("embedder", {}), dict):
            raise IndexCorruptError(f"{gen}/manifest.json: not an index manifest")
        schema = raw.get("schema_version")
        if schema != SCHEMA_VERSION:
            raise IndexMismatchError(
                f"{directory}: index schema version {schema!r}, this library reads "
                f"{SCHEMA_VERSION}; rebuild it in a new directory: "
                "proxy-pointer index DOCS --index NEW_DIR"
            )
        return gen, Manifest.from_dict(raw, source=f"{gen}/manifest.json")

    def read(self, *, expect_embedder: str | None = None,
             expect_dimension: int | None = None) -> IndexData:
        """Read the committed generation.

        Raises :class:`IndexCorruptError` for a missing or unreadable file and
        :class:`IndexMismatchError` for an unknown schema or another embedder than expected.
        """
        directory = self.directory
        gen, manifest = self._manifest()
        emb = manifest.embedder
        if expect_embedder is not None and emb.model_id != expect_embedder:
            raise IndexMismatchError(
                f"{directory}: index was built with embedder {emb.model_id!r}, "
                f"but {expect_embedder!r} was requested"
            )
        if expect_dimension is not None and emb.dimension != expect_dimension:
            raise IndexMismatchError(
                f"{directory}: index vectors have dimension {emb.dimension!r}, "
                f"the embedder produces {expect_dimension}"
            )
        docs = {}
        for row in _read_jsonl(gen / "documents.jsonl"):
            rec = DocumentRecord.from_dict(row, source=f"{gen}/documents.jsonl")
            docs[rec.doc_id] = rec
        try:
            chunks = [_chunk_from_row(r) for r in _read_jsonl(gen / "chunks.jsonl")]
        except (TypeError, AttributeError) as e:
            raise IndexCorruptError(f"{gen}/chunks.jsonl: bad chunk record ({e})") from None
        orphans = {c.doc_id for c in chunks} - set(docs)
        if orphans:
            raise IndexCorruptError(
                f"{gen}/chunks.jsonl: chunks of documents not in documents.jsonl: "
                f"{sorted(orphans)[:3]}"
            )
        try:
            vectors = np.load(gen / "vectors.npy", allow_pickle=False)
        except FileNotFoundError:
            raise IndexCorruptError(f"{gen}/vectors.npy: missing") from None
        except (ValueError, OSError, EOFError) as e:
            raise IndexCorruptError(f"{gen}/vectors.npy: unreadable ({e})") from None
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise IndexCorruptError(
                f"{gen}/vectors.npy: shape {vectors.shape} does not match {len(chunks)} chunks"
            )
        if len(chunks) and vectors.shape[1] != emb.dimension:
            raise IndexCorruptError(
                f"{gen}/vectors.npy: dimension {vectors.shape[1]}, manifest says {emb.dimension}"
            )
        vectors = vectors.astype(np.float32, copy=False)
        texts = {}
        for rec in docs.values():
            src = gen / "sources" / rec.sha256
            try:
                texts[rec.doc_id] = src.read_bytes().decode("utf-8")
            except FileNotFoundError:
                raise IndexCorruptError(
                    f"{src}: stored copy of {rec.doc_id} is missing") from None
            except UnicodeDecodeError as e:
                raise IndexCorruptError(
                    f"{src}: stored copy of {rec.doc_id} is damaged ({e})"
                ) from None
        vindex = None
        if (gen / "hnsw.faiss").exists():
            vindex = VectorIndex.from_bytes(vectors, manifest.vector_index,
                                            (gen / "hnsw.faiss").read_bytes(),
                                            name=f"{gen}/hnsw.faiss")
        return IndexData(manifest=manifest, documents=docs, texts=texts, chunks=chunks,
                         vectors=vectors, vector_index=vindex, generation=gen.name)

    def read_lexical(self, generation: str, n_rows: int) -> LexicalIndex | None:
        """The BM25 index saved with ``generation``; ``None`` when it was saved without one
        or the generation has since been collected (the caller then builds one)."""
        folder = self.directory / generation / _LEXICAL
        if not folder.is_dir():
            return None
        return LexicalIndex.load(folder, n_rows)


def _collect_garbage(directory: Path, keep: set[str]) -> None:
    """Delete generations other than ``keep`` and temp folders of writers that died."""
    for p in directory.glob("gen-*"):
        if p.is_dir() and p.name not in keep:
            shutil.rmtree(p, ignore_errors=True)
    for p in directory.glob(".tmp-gen-*"):
        # We hold the writer lock, so nobody is writing these now.
        shutil.rmtree(p, ignore_errors=True)


# --- loading ----------------------------------------------------------------------------
def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        # Split on "\n" only: json.dumps leaves U+2028, U+0085 and friends raw inside
        # strings, and str.splitlines() would cut a record there.
        lines = path.read_bytes().decode("utf-8").split("\n")
    except FileNotFoundError:
        raise IndexCorruptError(f"{path}: missing; the index is incomplete") from None
    except UnicodeDecodeError as e:
        raise IndexCorruptError(f"{path}: not UTF-8 ({e})") from None
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise IndexCorruptError(f"{path}: line {i}: not valid JSON ({e})") from None
    return rows


def index_size_bytes(directory: str | os.PathLike[str]) -> int:
    """Bytes on disk of the committed generation (what a reader loads)."""
    gen = current_generation(directory)
    if gen is None:
        return 0
    return sum(p.stat().st_size for p in gen.rglob("*") if p.is_file())
