"""On-disk index storage: vectors, chunk pointers, document copies; atomic and pickle-free.

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

A save writes a complete new generation, flushes it, then swaps ``CURRENT`` with an atomic
``os.replace``; a crash at any point leaves the previous generation committed and loadable.
Unchanged source copies are hard-linked from the previous generation, so a save costs what
changed. The previous generation is kept for readers that are still loading it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError, IndexCorruptError, IndexLockedError, IndexMismatchError

__all__ = [
    "SCHEMA_VERSION",
    "DocumentRecord",
    "StoredIndex",
    "VectorIndex",
    "VectorIndexConfig",
    "load_index",
    "load_manifest",
    "save_index",
    "write_lock",
]

SCHEMA_VERSION = 1
_CURRENT = "CURRENT"


@dataclass(frozen=True)
class DocumentRecord:
    """What the index keeps about one source document.

    ``doc_id`` is the path relative to the indexed root (POSIX separators), so an index
    built on one machine means the same on another. ``sha256`` is over the UTF-8 text.
    """

    doc_id: str
    source_path: str
    size: int
    sha256: str
    kind: str = "markdown"  # "markdown" or "text" (sliding-window only)
    title: str = ""
    n_chunks: int = 0
    # Word pieces of each line of the stored copy (tokens.py), so that a section's size is a
    # sum at query time rather than a tokenizer pass; () for indexes saved without them.
    line_tokens: tuple[int, ...] = ()


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


@dataclass
class StoredIndex:
    """Everything an index directory holds, in memory."""

    manifest: dict[str, Any]
    documents: dict[str, DocumentRecord]
    texts: dict[str, str]  # doc_id -> source text as indexed
    chunks: list[dict[str, Any]]  # row order == vectors order
    vectors: np.ndarray
    faiss_blob: bytes | None = None
    generation: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# --- locking ----------------------------------------------------------------------------
@contextlib.contextmanager
def write_lock(directory: str | Path, *, timeout: float = 0.0) -> Iterator[None]:
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
def _fsync_dir(path: Path) -> None:
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


def current_generation(directory: str | Path) -> Path | None:
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


def save_index(directory: str | Path, stored: StoredIndex) -> str:
    """Write ``stored`` as a new generation of ``directory`` and commit it atomically.

    The caller holds :func:`write_lock`. Returns the new generation's name.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    previous = current_generation(directory)
    prev_num = int(previous.name.split("-")[1]) if previous is not None else 0
    existing = [int(p.name.split("-")[1]) for p in directory.glob("gen-*") if p.name[4:].isdigit()]
    num = max([prev_num, *existing]) + 1
    gen = directory / f"gen-{num:06d}"
    tmp = directory / f".tmp-{gen.name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / "sources").mkdir(parents=True)

    n = stored.vectors.shape[0] if stored.vectors.ndim == 2 else 0
    if n != len(stored.chunks):
        raise IndexCorruptError(f"{n} vectors for {len(stored.chunks)} chunks")
    manifest = {**stored.manifest, "schema_version": SCHEMA_VERSION,
                "n_documents": len(stored.documents), "n_chunks": len(stored.chunks)}
    docs = sorted(stored.documents.values(), key=lambda r: r.doc_id)
    _write_file(tmp / "documents.jsonl", _jsonl([asdict(r) for r in docs]))
    _write_file(tmp / "chunks.jsonl", _jsonl(stored.chunks))
    with open(tmp / "vectors.npy", "wb") as f:
        np.save(f, np.ascontiguousarray(stored.vectors, dtype=np.float32), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    if stored.faiss_blob is not None:
        _write_file(tmp / "hnsw.faiss", stored.faiss_blob)
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
        _write_file(target, stored.texts[rec.doc_id].encode("utf-8"))
    # The manifest goes last: a generation without one is never committed.
    _write_file(tmp / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True).encode())
    _fsync_dir(tmp / "sources")
    _fsync_dir(tmp)
    os.rename(tmp, gen)
    pointer = directory / f".{_CURRENT}.tmp"
    _write_file(pointer, (gen.name + "\n").encode())
    os.replace(pointer, directory / _CURRENT)
    _fsync_dir(directory)
    _collect_garbage(directory, keep={gen.name} | ({previous.name} if previous else set()))
    return gen.name


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


def load_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of the committed generation; raises :class:`IndexCorruptError`."""
    return _read_manifest(Path(directory))[1]


def _read_manifest(directory: Path) -> tuple[Path, dict[str, Any]]:
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
        manifest = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexCorruptError(f"{gen}/manifest.json: missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IndexCorruptError(f"{gen}/manifest.json: not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("embedder", {}), dict):
        raise IndexCorruptError(f"{gen}/manifest.json: not an index manifest")
    return gen, manifest


def load_index(directory: str | Path, *, expect_embedder: str | None = None,
               expect_dimension: int | None = None) -> StoredIndex:
    """Read the committed generation of ``directory``.

    Raises :class:`IndexCorruptError` for a missing or unreadable file and
    :class:`IndexMismatchError` for an unknown schema or another embedder than expected.
    """
    directory = Path(directory)
    gen, manifest = _read_manifest(directory)
    schema = manifest.get("schema_version")
    if schema != SCHEMA_VERSION:
        raise IndexMismatchError(
            f"{directory}: index schema version {schema!r}, this library reads {SCHEMA_VERSION}; "
            "rebuild the index"
        )
    emb = manifest.get("embedder", {})
    if expect_embedder is not None and emb.get("model_id") != expect_embedder:
        raise IndexMismatchError(
            f"{directory}: index was built with embedder {emb.get('model_id')!r}, "
            f"but {expect_embedder!r} was requested"
        )
    if expect_dimension is not None and emb.get("dimension") != expect_dimension:
        raise IndexMismatchError(
            f"{directory}: index vectors have dimension {emb.get('dimension')!r}, "
            f"the embedder produces {expect_dimension}"
        )
    docs = {}
    for row in _read_jsonl(gen / "documents.jsonl"):
        try:
            if isinstance(row, dict) and isinstance(row.get("line_tokens"), list):
                row["line_tokens"] = tuple(row["line_tokens"])
            rec = DocumentRecord(**row)
        except TypeError as e:
            raise IndexCorruptError(f"{gen}/documents.jsonl: bad record ({e})") from None
        docs[rec.doc_id] = rec
    chunks = _read_jsonl(gen / "chunks.jsonl")
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
    if len(chunks) and vectors.shape[1] != emb.get("dimension"):
        raise IndexCorruptError(
            f"{gen}/vectors.npy: dimension {vectors.shape[1]}, manifest says {emb.get('dimension')}"
        )
    texts = {}
    for rec in docs.values():
        src = gen / "sources" / rec.sha256
        try:
            texts[rec.doc_id] = src.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise IndexCorruptError(f"{src}: stored copy of {rec.doc_id} is missing") from None
        except UnicodeDecodeError as e:
            raise IndexCorruptError(
                f"{src}: stored copy of {rec.doc_id} is damaged ({e})"
            ) from None
    blob = None
    if (gen / "hnsw.faiss").exists():
        blob = (gen / "hnsw.faiss").read_bytes()
    return StoredIndex(manifest=manifest, documents=docs, texts=texts, chunks=chunks,
                       vectors=vectors.astype(np.float32, copy=False), faiss_blob=blob,
                       generation=gen.name)


def index_size_bytes(directory: str | Path) -> int:
    """Bytes on disk of the committed generation (what a reader loads)."""
    gen = current_generation(directory)
    if gen is None:
        return 0
    return sum(p.stat().st_size for p in gen.rglob("*") if p.is_file())
