"""An on-disk SQLite cache around any embedder: unchanged text is never embedded twice."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError, EmbeddingError
from .base import Embedder, Wrapping, as_text_list

__all__ = ["CachedEmbedder"]

_CACHE_FILE = "embeddings.sqlite"
_CACHE_SCHEMA = 1
# SQLite's default limit on "?" parameters is 999 on old builds; stay below it.
_SQL_CHUNK = 500
_DOC, _QUERY = "d", "q"


# Result codes that mean the file itself is damaged (SQLITE_CORRUPT, SQLITE_FORMAT,
# SQLITE_NOTADB), as opposed to "busy", "read-only" or "disk full", which leave it intact.
_CORRUPTION_CODES = frozenset({11, 24, 26})


def _is_corruption(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _CORRUPTION_CODES
    # No result code: raised by this module (wrong schema) or a bare DatabaseError.
    return type(exc) is sqlite3.DatabaseError


def _text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder(Wrapping):
    """Any embedder plus an on-disk cache, so unchanged text is never embedded twice.

    Vectors live in ``cache_dir/embeddings.sqlite`` keyed by ``(model_id, kind,
    sha256(text))`` - kind separates documents from queries, which some models embed
    differently - as raw little-endian float32 bytes (no pickle). SQLite in WAL mode lets
    several processes read while one writes; each write batch is one atomic transaction,
    so an interrupted indexing run keeps what it finished. Duplicate texts in one call are
    embedded once.

    Counters: ``misses`` counts texts sent to the inner embedder, ``hits`` every other text
    asked for (found in the cache or a duplicate), so ``hits + misses`` is the number of texts
    requested; ``embed_calls`` counts calls made to the inner embedder.

    A cache file that cannot be read is deleted and rebuilt with a warning: a cache must never
    stop indexing. Errors of the inner embedder propagate unchanged.

    >>> import tempfile
    >>> from proxy_pointer.embeddings import HashEmbedder
    >>> emb = CachedEmbedder(HashEmbedder(16), tempfile.mkdtemp())
    >>> _ = emb.embed_documents(["a b", "a b", "c d"])
    >>> (emb.misses, emb.hits)
    (2, 1)
    """

    def __init__(
        self, inner: Embedder, cache_dir: str | os.PathLike[str], *, write_batch: int = 512
    ) -> None:
        if not isinstance(write_batch, int) or write_batch < 1:
            raise ConfigError(f"write_batch must be a positive integer, got {write_batch!r}")
        self.inner = inner
        self.cache_dir = Path(cache_dir)
        self.path = self.cache_dir / _CACHE_FILE
        self.write_batch = write_batch
        self.hits = 0
        self.misses = 0
        self.embed_calls = 0
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._open()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {str(self.cache_dir)!r})"

    @property
    def model_id(self) -> str:
        """The inner embedder's ``model_id``: a cache does not change the vectors."""
        return self.inner.model_id

    # -- storage -------------------------------------------------------------------------------

    def _open(self) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._in_memory(f"cannot create embedding cache folder {self.cache_dir} ({exc})")
            return
        try:
            self._conn = self._connect(str(self.path))
        except sqlite3.Error as exc:
            if _is_corruption(exc):
                self._rebuild(exc)
                return
            self._in_memory(f"cannot open embedding cache {self.path} ({exc})")

    def _in_memory(self, problem: str) -> None:
        """Cache in memory for this run, saying why the file cannot be used."""
        warnings.warn(f"{problem}; caching in memory for this run only", RuntimeWarning,
                      stacklevel=4)
        self._conn = self._connect(":memory:")

    def _connect(self, target: str) -> sqlite3.Connection:
        # isolation_level=None: transactions are opened explicitly, one per write batch.
        conn = sqlite3.connect(target, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors ("
                " model_id TEXT NOT NULL, kind TEXT NOT NULL, text_sha256 BLOB NOT NULL,"
                " vector BLOB NOT NULL, PRIMARY KEY (model_id, kind, text_sha256)"
                ") WITHOUT ROWID"
            )
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(_CACHE_SCHEMA),)
                )
            elif row[0] != str(_CACHE_SCHEMA):
                raise sqlite3.DatabaseError(f"cache schema {row[0]}, expected {_CACHE_SCHEMA}")
            # Touch the table so a file with a valid header but broken pages fails here.
            conn.execute("SELECT count(*) FROM (SELECT 1 FROM vectors LIMIT 1)").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    def _rebuild(self, exc: BaseException) -> None:
        warnings.warn(
            f"embedding cache {self.path} is unreadable ({exc}); deleting and rebuilding it",
            RuntimeWarning,
            stacklevel=4,
        )
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError:
                pass
        try:
            self._conn = self._connect(str(self.path))
        except (sqlite3.Error, OSError) as again:
            warnings.warn(
                f"cannot recreate embedding cache {self.path} ({again}); "
                "caching in memory for this run only",
                RuntimeWarning,
                stacklevel=4,
            )
            self._conn = self._connect(":memory:")

    def _lookup(self, kind: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        model_id, dim = self.model_id, self.dimension
        found: dict[bytes, np.ndarray] = {}
        assert self._conn is not None
        for i in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[i : i + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT text_sha256, vector FROM vectors WHERE model_id = ? AND kind = ?"
                f" AND text_sha256 IN ({marks})",
                (model_id, kind, *chunk),
            ).fetchall()
            for key, blob in rows:
                # A vector of the wrong size (a truncated write) is a miss, and is overwritten.
                if isinstance(blob, bytes) and len(blob) == 4 * dim:
                    found[bytes(key)] = np.frombuffer(blob, dtype="<f4")
        return found

    def _store(self, kind: str, keys: list[bytes], vectors: np.ndarray) -> None:
        assert self._conn is not None
        model_id = self.model_id
        rows = [
            (model_id, kind, key, np.ascontiguousarray(vec, dtype="<f4").tobytes())
            for key, vec in zip(keys, vectors, strict=True)
        ]
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _safe_lookup(self, kind: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        try:
            return self._lookup(kind, keys)
        except sqlite3.Error as exc:
            if _is_corruption(exc):
                self._rebuild(exc)
            else:  # busy for 30 s, I/O error: embed afresh rather than fail the run
                warnings.warn(
                    f"embedding cache read failed ({exc}); embedding afresh",
                    RuntimeWarning,
                    stacklevel=4,
                )
            return {}

    def _safe_store(self, kind: str, keys: list[bytes], vectors: np.ndarray) -> None:
        try:
            self._store(kind, keys, vectors)
            return
        except sqlite3.Error as exc:
            if not _is_corruption(exc):
                warnings.warn(
                    f"embedding cache write failed ({exc}); vectors not cached",
                    RuntimeWarning,
                    stacklevel=4,
                )
                return
            self._rebuild(exc)
        try:
            self._store(kind, keys, vectors)
        except sqlite3.Error as again:
            warnings.warn(
                f"embedding cache write failed ({again}); vectors not cached",
                RuntimeWarning,
                stacklevel=4,
            )

    # -- embedding -----------------------------------------------------------------------------

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        keys = [_text_key(t) for t in texts]
        with self._lock:
            if self._conn is None:
                raise EmbeddingError(f"embedding cache {self.path} is closed")
            found = self._safe_lookup(kind, list(dict.fromkeys(keys)))
            todo: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in found and key not in todo:
                    todo[key] = text
            pending = list(todo.items())
            for i in range(0, len(pending), self.write_batch):
                batch = pending[i : i + self.write_batch]
                batch_texts = [t for _, t in batch]
                self.embed_calls += 1
                if kind == _QUERY:
                    vecs = np.stack([self.inner.embed_query(t) for t in batch_texts])
                else:
                    vecs = self.inner.embed_documents(batch_texts)
                vecs = np.ascontiguousarray(vecs, dtype=np.float32)
                if vecs.shape != (len(batch), self.dimension):
                    raise EmbeddingError(
                        f"{self.model_id} returned shape {vecs.shape}, "
                        f"expected {(len(batch), self.dimension)}"
                    )
                self.misses += len(batch)
                batch_keys = [k for k, _ in batch]
                self._safe_store(kind, batch_keys, vecs)
                found.update(zip(batch_keys, vecs, strict=True))
            self.hits += len(texts) - len(pending)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's vectors for ``texts``, computing only those not cached."""
        items = as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._embed(items, _DOC)

    def embed_query(self, text: str) -> np.ndarray:
        """The inner embedder's query vector for ``text``, cached like documents."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        return self._embed([text], _QUERY)[0]

    def close(self) -> None:
        """Close the cache file; embedding afterwards raises EmbeddingError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

