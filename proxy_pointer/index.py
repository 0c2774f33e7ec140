"""The :class:`Index`: documents, their chunks and vectors, built once and updated in place.

>>> idx = Index.build(["data/sample/docs"])            # doctest: +SKIP
>>> idx.save(".proxy-pointer-index")                   # doctest: +SKIP
>>> idx = Index.load(".proxy-pointer-index")           # doctest: +SKIP
>>> for s in idx.retrieve("What datasets are used?").sections:   # doctest: +SKIP
...     print(s.ref, s.breadcrumb, s.start_line, s.end_line)

Updating is incremental: a document whose SHA-256 is unchanged is skipped; a changed one is
re-chunked, and only chunks whose text changed are embedded again (vectors of unchanged
chunks are reused, and the embedding cache makes repeats free across indexes).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .chunking import Chunk, ChunkConfig, chunk_text, chunk_tree
from .documents import doc_id_for, read_document
from .embeddings import Embedder, make_embedder
from .errors import ConfigError, DocumentError, IndexCorruptError
from .store import (
    DocumentRecord,
    StoredIndex,
    VectorIndex,
    VectorIndexConfig,
    load_index,
    save_index,
    write_lock,
)
from .tokens import count_tokens_batch
from .tree import Tree, build_tree, split_lines

if TYPE_CHECKING:
    from .retrieval import Retrieval, RetrievalConfig
    from .synthesis import LLM, Answer

__all__ = ["DEFAULT_INCLUDE", "Index", "UpdateReport", "discover", "update_directory"]

DEFAULT_INCLUDE = ("*.md", "*.markdown", "*.txt")
_TEXT_SUFFIXES = (".txt",)


def _library_version() -> str:
    try:
        return version("proxy-pointer")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class UpdateReport:
    """What one build or update did. ``embedded`` counts texts sent to the embedder."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # "path: problem" for files that could not be read
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for people: counts and seconds."""
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.removed)} removed, "
            f"{len(self.skipped)} skipped; {self.chunks} chunks "
            f"({self.embedded} embedded) in {self.seconds:.1f}s"
        )


@dataclass(frozen=True)
class _Source:
    path: Path
    doc_id: str


def discover(paths: Iterable[str | os.PathLike[str]], *, root: str | os.PathLike[str] | None = None,
             include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = ()
             ) -> list[_Source]:
    """Files to index under ``paths`` with their doc ids (sorted, duplicates rejected).

    A folder is searched recursively for ``include`` globs; its files get ids relative to
    the folder (or to ``root``). A file named directly gets its name (or its path relative
    to ``root``) as id. ``exclude`` globs match the id or the file name. Raises
    :class:`DocumentError` for a path that does not exist or two files with one id.
    """
    found: dict[str, _Source] = {}
    root_path = Path(root) if root is not None else None

    def excluded(doc_id: str) -> bool:
        name = doc_id.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatch(doc_id, g) or fnmatch.fnmatch(name, g) for g in exclude)

    def add(file: Path, base: Path) -> None:
        # Ids come from the path as given, not the resolved one: a symbolic link is indexed
        # under its own name, even when it points outside the folder.
        doc_id = doc_id_for(file, root_path or base)
        if excluded(doc_id):
            return
        if doc_id in found and found[doc_id].path.resolve() != file.resolve():
            raise DocumentError(
                str(file), f"duplicate doc id {doc_id!r} (also {found[doc_id].path}); "
                "index the folders under a common root"
            )
        found[doc_id] = _Source(file, doc_id)

    for p in map(Path, paths):
        if p.is_dir():
            base = p
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if any(fnmatch.fnmatch(name, g) for g in include):
                        add(Path(dirpath) / name, base)
        elif p.exists():
            add(p, p.parent)
        else:
            raise DocumentError(str(p), "no such file or directory")
    return [found[k] for k in sorted(found)]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunk_row(c: Chunk) -> dict[str, Any]:
    return dataclasses.asdict(c)


def _row_chunk(row: dict[str, Any]) -> Chunk:
    return Chunk(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})


class Index:
    """Chunks of many documents with their vectors and pointers, plus the source copies.

    Thread-safe for concurrent readers; one writer at a time per directory (see
    :func:`proxy_pointer.store.write_lock`). ``embedder`` defaults to the bundled MiniLM.
    """

    def __init__(self, *, embedder: Embedder | None = None,
                 chunk_config: ChunkConfig | None = None,
                 vector_config: VectorIndexConfig | None = None,
                 recover_headings: bool = False, encoding: str = "utf-8") -> None:
        if embedder is None:
            from .embeddings import default_embedder

            embedder = default_embedder()
        self.embedder = embedder
        self.chunk_config = chunk_config or ChunkConfig()
        self.vector_config = vector_config or VectorIndexConfig()
        self.recover_headings = recover_headings
        self.encoding = encoding
        self.documents: dict[str, DocumentRecord] = {}
        self._texts: dict[str, str] = {}
        self._trees: dict[str, Tree] = {}
        self._chunks: list[Chunk] = []
        self._vectors = np.zeros((0, embedder.dimension), np.float32)
        self._vindex: VectorIndex | None = None
        self._rows_by_doc: dict[str, np.ndarray] | None = None
        self._retriever_cache: dict[str, Any] = {}

    # --- construction -------------------------------------------------------------------
    @classmethod
    def build(cls, paths: Iterable[str | os.PathLike[str]], *, root: str | None = None,
              include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = (),
              progress: Callable[[int, int], None] | None = None, **kwargs: Any) -> Index:
        """Index the files under ``paths`` (see :func:`discover`); returns the new index."""
        idx = cls(**kwargs)
        idx.update(paths, root=root, include=include, exclude=exclude, progress=progress)
        return idx

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *, embedder: Embedder | None = None
             ) -> Index:
        """Open a saved index. Without ``embedder`` the one recorded in the manifest is used.

        Raises :class:`IndexCorruptError` or :class:`IndexMismatchError` (wrong embedder,
        dimension or schema) with what was expected and what was found.
        """
        stored = load_index(
            directory,
            expect_embedder=embedder.model_id if embedder is not None else None,
            expect_dimension=embedder.dimension if embedder is not None else None,
        )
        m = stored.manifest
        gen = Path(directory) / stored.generation
        # A file that parses but holds the wrong shapes is as corrupt as one that does not
        # parse: say which file, never leak a KeyError or TypeError.
        try:
            model_id = m["embedder"]["model_id"]
            chunk_config = ChunkConfig.from_dict(m["chunking"])
            vector_config = VectorIndexConfig(**m.get("vector_index", {}))
            recover = bool(m.get("tree", {}).get("recover_headings", False))
        except (KeyError, TypeError, AttributeError, ConfigError) as e:
            raise IndexCorruptError(f"{gen}/manifest.json: bad settings ({e!r})") from None
        try:
            chunks = [_row_chunk(r) for r in stored.chunks]
        except (TypeError, AttributeError) as e:
            raise IndexCorruptError(f"{gen}/chunks.jsonl: bad chunk record ({e})") from None
        orphans = {c.doc_id for c in chunks} - set(stored.documents)
        if orphans:
            raise IndexCorruptError(
                f"{gen}/chunks.jsonl: chunks of documents not in documents.jsonl: "
                f"{sorted(orphans)[:3]}"
            )
        if embedder is None:
            embedder = make_embedder(model_id)
        idx = cls(embedder=embedder, chunk_config=chunk_config, vector_config=vector_config,
                  recover_headings=recover)
        idx.documents = dict(stored.documents)
        idx._texts = dict(stored.texts)
        idx._chunks = chunks
        idx._vectors = stored.vectors
        if stored.faiss_blob is not None:
            import faiss

            try:
                pre = faiss.deserialize_index(np.frombuffer(stored.faiss_blob, dtype=np.uint8))
            except RuntimeError as e:
                raise IndexCorruptError(
                    f"{gen}/hnsw.faiss: unreadable ({str(e).splitlines()[0]})") from None
            if pre.ntotal != len(chunks) or pre.d != stored.vectors.shape[1]:
                raise IndexCorruptError(
                    f"{gen}/hnsw.faiss: holds {pre.ntotal} vectors of dimension {pre.d}, "
                    f"expected {len(chunks)} of {stored.vectors.shape[1]}"
                )
            idx._vindex = VectorIndex(stored.vectors, idx.vector_config, prebuilt=pre)
        return idx

    def manifest(self) -> dict[str, Any]:
        """The manifest this index would be saved with."""
        return {
            "library_version": _library_version(),
            "embedder": {"model_id": self.embedder.model_id,
                         "dimension": int(self.embedder.dimension)},
            "chunking": self.chunk_config.to_dict(),
            "vector_index": dataclasses.asdict(self.vector_config),
            "tree": {"recover_headings": self.recover_headings},
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    def save(self, directory: str | os.PathLike[str], *, lock_timeout: float = 10.0) -> str:
        """Write the index to ``directory`` atomically; returns the generation name.

        A crash mid-save leaves the previous contents committed. Raises
        :class:`IndexLockedError` when another writer holds the directory longer than
        ``lock_timeout`` seconds.
        """
        with write_lock(directory, timeout=lock_timeout):
            return self._save_locked(directory)

    def _save_locked(self, directory: str | os.PathLike[str]) -> str:
        stored = StoredIndex(
            manifest=self.manifest(), documents=self.documents, texts=self._texts,
            chunks=[_chunk_row(c) for c in self._chunks], vectors=self._vectors,
            faiss_blob=self.vector_index.faiss_bytes() if self._chunks else None,
        )
        return save_index(directory, stored)

    # --- documents ----------------------------------------------------------------------
    @property
    def chunks(self) -> list[Chunk]:
        return list(self._chunks)

    @property
    def vectors(self) -> np.ndarray:
        return self._vectors

    def text(self, doc_id: str) -> str:
        """The stored copy of a document's source, exactly as indexed."""
        return self._texts[doc_id]

    def tree(self, doc_id: str) -> Tree:
        """The skeleton tree of a stored document (built from the stored copy, cached)."""
        t = self._trees.get(doc_id)
        if t is None:
            t = build_tree(self._texts[doc_id], doc_id=doc_id,
                           recover_headings=self.recover_headings)
            self._trees[doc_id] = t
        return t

    def line_tokens(self, doc_id: str) -> tuple[int, ...]:
        """Word pieces of each line of a stored document (recorded at indexing time)."""
        counts = self.documents[doc_id].line_tokens
        if not counts and self._texts[doc_id]:
            # An index saved before line counts were recorded: count once, keep in memory.
            counts = tuple(count_tokens_batch(self.tree(doc_id).lines))
            self.documents[doc_id] = dataclasses.replace(self.documents[doc_id],
                                                         line_tokens=counts)
        return counts

    def rows_for(self, doc_ids: Iterable[str]) -> np.ndarray:
        """Chunk rows of the given documents (unknown ids give no rows)."""
        if self._rows_by_doc is None:
            by: dict[str, list[int]] = {}
            for i, c in enumerate(self._chunks):
                by.setdefault(c.doc_id, []).append(i)
            self._rows_by_doc = {k: np.asarray(v, np.int64) for k, v in by.items()}
        parts = [self._rows_by_doc[d] for d in doc_ids if d in self._rows_by_doc]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    @property
    def vector_index(self) -> VectorIndex:
        if self._vindex is None:
            self._vindex = VectorIndex(self._vectors, self.vector_config)
        return self._vindex

    def _invalidate(self) -> None:
        self._vindex = None
        self._rows_by_doc = None
        self._retriever_cache.clear()

    def add_text(self, doc_id: str, text: str, *, source_path: str = "",
                 kind: str | None = None) -> bool:
        """Add or replace one document from memory; returns ``False`` if it was unchanged."""
        report = self._apply({doc_id: (text, source_path or doc_id, kind)}, remove=())
        return bool(report.added or report.updated)

    def remove(self, doc_ids: Iterable[str]) -> list[str]:
        """Remove documents by id; returns the ids that were present."""
        gone = [d for d in doc_ids if d in self.documents]
        if gone:
            self._apply({}, remove=gone)
        return gone

    def update(self, paths: Iterable[str | os.PathLike[str]], *, root: str | None = None,
               include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = (),
               prune: bool = False, progress: Callable[[int, int], None] | None = None
               ) -> UpdateReport:
        """Bring the index up to date with the files under ``paths``.

        New files are added, changed ones re-chunked (only changed chunks re-embedded),
        unchanged ones skipped. With ``prune``, documents whose files are gone from
        ``paths`` are removed. A file that cannot be read is skipped and reported in
        ``UpdateReport.skipped``; the rest is indexed. Nothing changes if embedding fails.
        """
        t0 = time.perf_counter()
        sources = discover(paths, root=root, include=include, exclude=exclude)
        loaded: dict[str, tuple[str, str, str | None]] = {}
        skipped: list[str] = []
        for src in sources:
            try:
                text = read_document(src.path, encoding=self.encoding)
            except DocumentError as e:
                skipped.append(str(e))
                continue
            except OSError as e:
                skipped.append(f"{src.path}: {e.strerror or e}")
                continue
            loaded[src.doc_id] = (text, str(src.path), None)
        remove: list[str] = []
        if prune:
            present = {s.doc_id for s in sources}
            remove = [d for d in self.documents if d not in present]
        report = self._apply(loaded, remove=remove, progress=progress)
        return dataclasses.replace(report, skipped=tuple(skipped),
                                   seconds=time.perf_counter() - t0)

    def _apply(self, new: dict[str, tuple[str, str, str | None]], *, remove: Sequence[str],
               progress: Callable[[int, int], None] | None = None) -> UpdateReport:
        """Chunk and embed ``new`` documents, drop ``remove``; commit only if all succeed."""
        timings = {"tree": 0.0, "chunking": 0.0, "embedding": 0.0, "index": 0.0}
        added, updated, unchanged = [], [], []
        staged: dict[str, tuple[DocumentRecord, str, list[Chunk]]] = {}
        for doc_id, (text, source_path, kind) in new.items():
            digest = _sha256(text)
            old = self.documents.get(doc_id)
            if old is not None and old.sha256 == digest:
                unchanged.append(doc_id)
                continue
            kind = kind or ("text" if source_path.lower().endswith(_TEXT_SUFFIXES) else "markdown")
            t = time.perf_counter()
            if kind == "text":
                tree = None
                tt = time.perf_counter()
                chunks = chunk_text(text, doc_id, self.chunk_config)
            else:
                tree = build_tree(text, doc_id=doc_id, recover_headings=self.recover_headings)
                tt = time.perf_counter()
                chunks = chunk_tree(tree, self.chunk_config)
            timings["tree"] += tt - t
            timings["chunking"] += time.perf_counter() - tt
            t = time.perf_counter()
            lines = tree.lines if tree is not None else split_lines(text)
            rec = DocumentRecord(
                doc_id=doc_id, source_path=source_path, size=len(text.encode("utf-8")),
                sha256=digest, kind=kind, title=tree.title if tree else doc_id,
                n_chunks=len(chunks), line_tokens=tuple(count_tokens_batch(lines)),
            )
            timings["tree"] += time.perf_counter() - t
            staged[doc_id] = (rec, text, chunks)
            (updated if old is not None else added).append(doc_id)

        # Reuse vectors of chunks whose embedded text is unchanged; embed the rest.
        known: dict[str, int] = {}
        for i, c in enumerate(self._chunks):
            if c.doc_id in staged:
                known.setdefault(c.embed_text, i)
        todo = sorted({c.embed_text for _, _, cs in staged.values() for c in cs
                       if c.embed_text not in known})
        t = time.perf_counter()
        fresh = self._embed(todo, progress)
        timings["embedding"] += time.perf_counter() - t
        fresh_row = {text: i for i, text in enumerate(todo)}

        t = time.perf_counter()
        drop = set(remove) | set(staged)
        keep_rows = [i for i, c in enumerate(self._chunks) if c.doc_id not in drop]
        new_chunks = [self._chunks[i] for i in keep_rows]
        parts = [self._vectors[keep_rows]] if keep_rows else []
        for doc_id in sorted(staged):
            _, _, cs = staged[doc_id]
            if not cs:
                continue
            vecs = np.stack([
                self._vectors[known[c.embed_text]] if c.embed_text in known
                else fresh[fresh_row[c.embed_text]] for c in cs
            ])
            parts.append(vecs)
            new_chunks.extend(cs)
        vectors = (np.concatenate(parts).astype(np.float32, copy=False) if parts
                   else np.zeros((0, self.embedder.dimension), np.float32))
        # Commit in memory: nothing above mutated the index.
        for doc_id in remove:
            self.documents.pop(doc_id, None)
            self._texts.pop(doc_id, None)
            self._trees.pop(doc_id, None)
        for doc_id, (rec, text, _) in staged.items():
            self.documents[doc_id] = rec
            self._texts[doc_id] = text
            self._trees.pop(doc_id, None)
        self._chunks = new_chunks
        self._vectors = vectors
        self._invalidate()
        timings["index"] += time.perf_counter() - t
        return UpdateReport(
            added=tuple(sorted(added)), updated=tuple(sorted(updated)),
            unchanged=tuple(sorted(unchanged)),
            removed=tuple(sorted(d for d in remove)), chunks=len(self._chunks),
            embedded=len(todo), timings=timings,
        )

    def _embed(self, texts: list[str], progress: Callable[[int, int], None] | None
               ) -> np.ndarray:
        d = self.embedder.dimension
        if not texts:
            return np.zeros((0, d), np.float32)
        out = []
        step = 256
        for start in range(0, len(texts), step):
            vecs = np.asarray(self.embedder.embed_documents(texts[start:start + step]),
                              dtype=np.float32)
            if vecs.shape != (min(step, len(texts) - start), d):
                raise ConfigError(
                    f"embedder {self.embedder.model_id} returned shape {vecs.shape}, "
                    f"expected ({min(step, len(texts) - start)}, {d})"
                )
            out.append(vecs)
            if progress is not None:
                progress(min(start + step, len(texts)), len(texts))
        return np.concatenate(out)

    # --- querying -----------------------------------------------------------------------
    def retrieve(self, question: str, config: RetrievalConfig | None = None,
                 **options: Any) -> Retrieval:
        """Retrieve whole sections for ``question``; see :class:`~.retrieval.RetrievalConfig`.

        Keyword options override fields of ``config`` (``budget=1000, k=3, doc_ids=[...]``).
        """
        from .retrieval import Retriever

        return Retriever(self, config).retrieve(question, **options)

    def ask(self, question: str, llm: LLM | None = None, config: RetrievalConfig | None = None,
            **options: Any) -> Answer:
        """Retrieve sections and have ``llm`` answer from them with citations."""
        from .synthesis import synthesize

        if llm is None:
            from .synthesis import llm_from_env

            llm = llm_from_env()
        if llm is None:
            raise ConfigError("no LLM configured for synthesis; set GEMINI_API_KEY")
        retrieval = self.retrieve(question, config, **options)
        return synthesize(question, retrieval.sections, llm)

    def __len__(self) -> int:
        return len(self.documents)

    def __repr__(self) -> str:
        return (f"Index({len(self.documents)} documents, {len(self._chunks)} chunks, "
                f"embedder={self.embedder.model_id!r})")


def update_directory(directory: str | os.PathLike[str], paths: Iterable[str | os.PathLike[str]],
                     *, embedder: Embedder | None = None, chunk_config: ChunkConfig | None = None,
                     vector_config: VectorIndexConfig | None = None,
                     recover_headings: bool = False, lock_timeout: float = 0.0,
                     **update_options: Any) -> tuple[Index, UpdateReport]:
    """Open (or create) the index in ``directory``, update it from ``paths``, save atomically.

    The writer lock is held from load to commit, so two concurrent runs never lose each
    other's work: the second waits ``lock_timeout`` seconds, then raises
    :class:`IndexLockedError`. For an existing index, ``vector_config=None`` keeps its
    vector-index setting and another one switches it (vectors are reused, nothing is
    re-embedded); other chunking settings raise :class:`ConfigError`.
    """
    from .store import current_generation

    switched = False
    with write_lock(directory, timeout=lock_timeout):
        existing = current_generation(directory) is not None
        if existing:
            idx = Index.load(directory, embedder=embedder)
            if chunk_config is not None and chunk_config.to_dict() != idx.chunk_config.to_dict():
                raise ConfigError(
                    f"{directory}: index was built with other chunking settings; "
                    "rebuild it in a new directory"
                )
            if vector_config is not None and vector_config != idx.vector_config:
                idx.vector_config = vector_config
                idx._invalidate()
                switched = True
        else:
            idx = Index(embedder=embedder, chunk_config=chunk_config,
                        vector_config=vector_config, recover_headings=recover_headings)
        report = idx.update(paths, **update_options)
        if report.added or report.updated or report.removed or switched or not existing:
            t = time.perf_counter()
            idx._save_locked(directory)
            report.timings["write"] = time.perf_counter() - t
        return idx, report
