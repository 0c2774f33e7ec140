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
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .access import Access, check_metadata_of
from .documents import DEFAULT_INCLUDE, check_doc_id, discover
from .embeddings import Embedder, make_embedder
from .errors import ConfigError, DocumentError
from .ingest import (
    DEFAULT_BATCH_BYTES,
    Executor,
    IngestProgress,
    Source,
    UpdateReport,
    duplicate_pairs,
    ingest,
    run_order,
    source_bytes,
)
from .package import VERSION
from .parse.chunking import CHUNKER_VERSION, Chunk, ChunkConfig
from .refs import Ref, SectionText, open_ref, resolve
from .search.corpus import ChunkRows, DocumentTable, Reader
from .search.refine import Refiner, refiner_for
from .search.retrieval import Retrieval, RetrievalConfig, Retriever
from .search.synthesis import Answer, synthesize
from .stores import (
    DocumentParts,
    DocumentRecord,
    EmbedderInfo,
    Manifest,
    MemorySegment,
    SegmentSet,
    Store,
    VocabularyInfo,
    open_store,
)
from .stores.staging import DiskStaging, Labelling, MemoryStaging
from .stores.vectors import VectorIndexConfig
from .vocab.filings import FILINGS, Vocabulary

if TYPE_CHECKING:
    from .llm import LLM

__all__ = ["SPILL_BYTES", "ChunkRows", "DocumentTable", "Index", "IngestProgress",
           "UpdateReport", "update_directory"]

_log = logging.getLogger(__name__)

#: Text to read above which an update of an index held in memory streams its documents
#: into a segment in the temporary folder rather than holding them (about 25,000 chunks).
SPILL_BYTES = 16_000_000



def _info(vocabulary: Vocabulary) -> VocabularyInfo:
    """What a manifest records of ``vocabulary``: its name and its file's SHA-256."""
    return VocabularyInfo(vocabulary.name, vocabulary.sha256)

class Index:
    """Chunks of many documents with their vectors and pointers, plus the source copies.

    Thread-safe for concurrent readers; one writer at a time per store (see
    :meth:`proxy_pointer.stores.Store.lock`). ``embedder`` defaults to the bundled MiniLM.
    ``index_llm`` is the index-time LLM, needed only when ``chunk_config.noise.use_llm`` is
    set (it then labels each document's noise sections: one call per document, rules as
    fallback) or ``chunk_config.summaries`` (one summary per section, cached by content).
    ``refiner`` rescores queries' best chunks with a second embedder (:mod:`.search.refine`);
    by default the embedder's teacher where it has one (fast mode: MiniLM).
    """

    def __init__(self, *, embedder: Embedder | None = None,
                 chunk_config: ChunkConfig | None = None,
                 vector_config: VectorIndexConfig | None = None,
                 recover_headings: bool = False, encoding: str = "utf-8",
                 index_llm: LLM | None = None, refiner: Refiner | None = None,
                 vocabulary: Vocabulary | None = None) -> None:
        if embedder is None:
            from .embeddings import default_embedder

            embedder = default_embedder()
        self.embedder = embedder
        #: The second-stage embedder of queries (:mod:`~.search.refine`): fast mode's is the
        #: MiniLM it was distilled from; ``None`` for an embedder without a teacher.
        self.refiner = refiner if refiner is not None else refiner_for(embedder)
        # Chunks are sized to what the embedder reads (its max_tokens), not to one model's.
        self.chunk_config = (ChunkConfig.for_window(embedder.max_tokens) if chunk_config is None
                             else chunk_config.fitted(embedder.max_tokens))
        self.recover_headings = recover_headings
        self.encoding = encoding
        self.index_llm = index_llm
        self._segments = SegmentSet([], int(embedder.dimension))
        self._reader = Reader(self._segments, embedder, vector_config=vector_config,
                              recover_headings=recover_headings)
        # Where the current contents were read from or last saved to; None once they
        # change in memory.
        self._origin: tuple[Store, str] | None = None
        self._chunker_version = CHUNKER_VERSION
        #: The vocabulary this index reads documents (their cards) and questions (routing,
        #: the document choice, understanding) with: the shipped ``filings.toml`` unless
        #: another is given (:func:`~proxy_pointer.vocab.filings.read_vocabulary`).
        self.vocabulary: Vocabulary = FILINGS if vocabulary is None else vocabulary
        #: The vocabulary its documents were read with, as the manifest records it
        #: (``None``: an index saved before manifests said).
        self.read_with: VocabularyInfo | None = _info(self.vocabulary)
        #: Where an update streams its documents into a segment on disk (see
        #: :mod:`~.stores.staging`): ``None`` keeps them in memory unless the files to
        #: read hold more than :data:`SPILL_BYTES`, then the system's temporary folder.
        #: :func:`update_directory` sets the store's own scratch folder.
        self.staging_dir: Path | None = None
        # segments staged on disk, read until the next save takes them in
        self._staged: list[DiskStaging] = []

    # --- construction -------------------------------------------------------------------
    @classmethod
    def build(cls, paths: Iterable[str | os.PathLike[str]], *, root: str | None = None,
              include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = (),
              progress: Callable[[IngestProgress], None] | None = None,
              batch_bytes: int = DEFAULT_BATCH_BYTES, workers: int | None = None,
              executor: Executor | None = None, **kwargs: Any) -> Index:
        """Index the files under ``paths`` (see :func:`~.documents.discover` and
        :meth:`update`); other keywords go to the constructor."""
        idx = cls(**kwargs)
        idx.update(paths, root=root, include=include, exclude=exclude, progress=progress,
                   batch_bytes=batch_bytes, workers=workers, executor=executor)
        return idx

    @classmethod
    def from_parts(cls, *, documents: Mapping[str, DocumentRecord], texts: Mapping[str, str],
                   chunks: Sequence[Chunk], vectors: np.ndarray, **kwargs: Any) -> Index:
        """An index over contents made elsewhere (row ``i`` of ``vectors`` is chunk ``i``).

        For tools that assemble an index directly, e.g. the scale benchmarks. Raises
        :class:`ConfigError` when the parts do not fit together.
        """
        idx = cls(**kwargs)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(chunks), idx.embedder.dimension):
            raise ConfigError(f"vectors of shape {vectors.shape} for {len(chunks)} chunks of "
                              f"dimension {idx.embedder.dimension}")
        if set(texts) != set(documents) or {c.doc_id for c in chunks} - set(documents):
            raise ConfigError("documents, texts and chunks name different documents")
        rows: dict[str, list[int]] = {d: [] for d in documents}
        for i, c in enumerate(chunks):
            rows[c.doc_id].append(i)
        parts = [DocumentParts(documents[d], texts[d], tuple(chunks[i] for i in r),
                               vectors[r] if r else np.zeros((0, vectors.shape[1]), np.float32))
                 for d, r in rows.items()]
        idx._set(SegmentSet([(MemorySegment(parts, idx.embedder.dimension), ())],
                            idx.embedder.dimension))
        return idx

    @classmethod
    def load(cls, location: str | os.PathLike[str] | Store, *,
             embedder: Embedder | None = None, refiner: Refiner | None = None,
             vocabulary: Vocabulary | None = None) -> Index:
        """Open a saved index. Without ``embedder`` the one recorded in the manifest is used;
        without ``refiner``, that embedder's (:func:`~.search.refine.refiner_for`);
        ``vocabulary``: what it reads with from now on (the shipped one by default), a
        warning when its documents were read with another.

        Raises :class:`IndexCorruptError` or :class:`IndexMismatchError` (wrong embedder,
        dimension or schema) with what was expected and what was found.
        """
        store = open_store(location)
        opened = store.open(
            expect_embedder=embedder.model_id if embedder is not None else None,
            expect_dimension=embedder.dimension if embedder is not None else None,
        )
        m = opened.manifest
        if embedder is None:
            embedder = make_embedder(m.embedder.model_id)
            m.check_embedder(store.location, expect_dimension=embedder.dimension)
        idx = cls(embedder=embedder, vector_config=m.vector_index,
                  recover_headings=m.recover_headings, refiner=refiner, vocabulary=vocabulary)
        idx.chunk_config = m.chunking  # as recorded: an index opens as it was built
        idx._set(opened.segments)
        idx._origin = (store, opened.generation)
        idx._chunker_version = m.chunker_version
        idx.read_with = m.vocabulary
        now = _info(idx.vocabulary)
        if m.vocabulary is not None and m.vocabulary != now:
            _log.warning("%s: index was read with vocabulary %s (sha256 %s), this reader "
                         "reads with %s (sha256 %s): its documents' cards follow the other "
                         "one until an update reads them again",
                         store.location, m.vocabulary.name, m.vocabulary.sha256[:12],
                         now.name, now.sha256[:12])
        return idx

    def manifest(self) -> Manifest:
        """The manifest this index would be saved with."""
        return Manifest(
            embedder=EmbedderInfo(self.embedder.model_id, int(self.embedder.dimension)),
            chunking=self.chunk_config,
            vector_index=self.vector_config,
            recover_headings=self.recover_headings,
            chunker_version=self._chunker_version,
            library_version=VERSION,
            saved_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            n_documents=self._segments.n_documents(),
            n_chunks=self._segments.n_rows,
            vocabulary=self.read_with,
        )

    def save(self, location: str | os.PathLike[str] | Store, *,
             lock_timeout: float = 10.0) -> str:
        """Write the index to ``location`` atomically; returns the generation name.

        A crash mid-save leaves the previous contents committed. Raises
        :class:`IndexLockedError` when another writer holds the store longer than
        ``lock_timeout`` seconds.
        """
        store = open_store(location)
        with store.lock(timeout=lock_timeout):
            return self.save_locked(store)

    def save_locked(self, store: Store) -> str:
        """:meth:`save` for a caller that already holds ``store``'s writer lock.

        Only what changed since the index was loaded from ``store`` is written (new
        documents as a new segment, replaced and removed ones marked deleted), and the
        index then reads from the saved files; an index saved elsewhere is written whole
        and keeps its contents in memory (what an update staged on disk is read from the
        saved files too, and its staging folder deleted).
        """
        same = self._origin is not None and self._origin[0].location == store.location
        generation, segments = store.write(self.manifest(), self._segments)
        if same or self._staged:
            # Read back from where it came from (or from the store that took in what was
            # staged on disk): memory is freed, the next save only writes what changes.
            self._set(segments)
            for staging in self._staged:
                staging.remove()
            self._staged = []
        self._origin = (store, generation)
        return generation

    # --- the current generation ---------------------------------------------------------
    @property
    def reader(self) -> Reader:
        """The current contents as a :class:`~.search.corpus.Reader` (a
        :class:`~.search.corpus.Corpus`): what to read documents, chunks, vectors, texts and
        trees from, and what a query should hold on to, since it never changes (an update
        makes a new one). The index itself is the writer and reads nothing on its own."""
        return self._reader

    @property
    def version(self) -> int:
        """Bumped on every change of contents or row order."""
        return self._reader.version

    @property
    def generation(self) -> str:
        """The store generation the contents were read from or saved as ("" if neither)."""
        return self._origin[1] if self._origin is not None else ""

    @property
    def vector_config(self) -> VectorIndexConfig:
        """How dense search runs (exact or approximate). Setting it hands out a new reader
        (:meth:`Reader.configured <.search.corpus.Reader.configured>`; a reader already held
        answers as it did); saved segments get the new structure when the index is next
        saved (vectors are reused, nothing is re-embedded)."""
        return self._reader.vector_config

    @vector_config.setter
    def vector_config(self, config: VectorIndexConfig) -> None:
        self._reader = self._reader.configured(config)

    # --- changing contents --------------------------------------------------------------
    def _set(self, segments: SegmentSet) -> None:
        """Swap in new contents: a new reader, which keeps only what is still valid."""
        self._reader = self._reader.successor(segments)
        self._segments = segments
        self._origin = None

    def add_text(self, doc_id: str, text: str, *, source_path: str = "",
                 kind: str | None = None, metadata: Mapping[str, Any] | None = None) -> bool:
        """Add or replace one document from memory (with its ``metadata``, see
        :meth:`update`); returns ``False`` if nothing changed."""
        report = self._apply([Source(doc_id, source_path or doc_id, kind, text)], remove=(),
                             metadata=None if metadata is None else {doc_id: metadata})
        return bool(report.added or report.updated or report.relabelled)

    def add_texts(self, texts: Iterable[tuple[str, str]], *, source_prefix: str = "",
                  metadata: Mapping[str, Mapping[str, Any]] | None = None) -> UpdateReport:
        """Add or replace documents from memory, ``(doc_id, text)`` pairs, in one batch
        (source path ``source_prefix + doc_id``; kind from the doc id's ending;
        ``metadata`` as in :meth:`update`); the report says what was added, updated or
        unchanged and how many chunks were embedded."""
        t0 = time.perf_counter()
        report = self._apply([Source(d, source_prefix + d, None, t) for d, t in texts],
                             remove=(), metadata=metadata)
        return dataclasses.replace(report, seconds=time.perf_counter() - t0)

    def set_metadata(self, metadata: Mapping[str, Mapping[str, Any]]) -> UpdateReport:
        """Replace the metadata of indexed documents (``doc_id -> object``, see
        :meth:`update`) without reading or embedding anything; the report's ``relabelled``
        names those whose metadata changed."""
        t0 = time.perf_counter()
        report = self._apply([], remove=(), metadata=metadata)
        return dataclasses.replace(report, seconds=time.perf_counter() - t0)

    def remove(self, doc_ids: Iterable[str]) -> list[str]:
        """Remove documents by id; returns the ids that were present."""
        gone = [d for d in doc_ids if d in self._segments]
        if gone:
            self._apply([], remove=gone)
        return gone

    def update(self, paths: Iterable[str | os.PathLike[str]], *, root: str | None = None,
               include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = (),
               prune: bool = False, progress: Callable[[IngestProgress], None] | None = None,
               batch_bytes: int = DEFAULT_BATCH_BYTES, workers: int | None = None,
               executor: Executor | None = None,
               metadata: Mapping[str, Mapping[str, Any]] | None = None) -> UpdateReport:
        """Bring the index up to date with the files under ``paths``.

        ``metadata`` (``doc_id -> object``, :mod:`~.access`: ``access`` lists the groups
        that may read a document, any other fields are the user's) replaces the named
        documents' metadata; a document whose text is unchanged is not read again and
        nothing is re-embedded (``UpdateReport.relabelled``), and a changed document keeps
        its metadata unless given new. A doc id that is neither indexed nor under
        ``paths`` raises :class:`ConfigError` before any work.

        New files are added, changed ones re-chunked (only changed chunks re-embedded),
        unchanged ones skipped. With ``prune``, documents whose files are gone from
        ``paths`` are removed. A file that cannot be read is skipped and reported in
        ``UpdateReport.skipped``; the rest is indexed. Nothing changes if embedding fails.
        An index whose chunks were made by another chunker version is re-chunked whole.

        Files stream through in batches of about ``batch_bytes`` of text, parsed by
        ``workers`` processes while this one embeds (see :func:`~.ingest.ingest`; ``None``
        picks a count from the CPUs, ``0`` parses here). ``progress`` is called with an
        :class:`~.ingest.IngestProgress` as the work advances. ``executor`` parses elsewhere
        instead (an :class:`~.ingest.Executor` with its own workers, e.g.
        :class:`~.ingest.RayExecutor`: Ray actors parse and embed), with the same result;
        giving ``workers`` with it raises :class:`ConfigError`.
        """
        t0 = time.perf_counter()
        found = discover(paths, root=root, include=include, exclude=exclude)
        remove: list[str] = []
        if prune:
            present = {s.doc_id for s in found}
            remove = [d for d in self._segments.doc_ids() if d not in present]
        report = self._apply([Source(s.doc_id, str(s.path)) for s in found], remove=remove,
                             progress=progress, batch_bytes=batch_bytes, workers=workers,
                             started=t0, executor=executor, metadata=metadata)
        return dataclasses.replace(report, seconds=time.perf_counter() - t0)

    def _apply(self, sources: list[Source], *, remove: Sequence[str],
               progress: Callable[[IngestProgress], None] | None = None,
               batch_bytes: int = DEFAULT_BATCH_BYTES, workers: int | None = None,
               started: float | None = None, executor: Executor | None = None,
               metadata: Mapping[str, Mapping[str, Any]] | None = None) -> UpdateReport:
        """Chunk and embed ``sources``, drop ``remove``, set ``metadata``; commit only if
        all succeed."""
        for s in sources:
            check_doc_id(s.doc_id)
        # Chunks of another chunker version, or documents read with another vocabulary,
        # must not mix with new ones: every stored document is read again.
        rechunk = (self._chunker_version != CHUNKER_VERSION
                   or self.read_with not in (None, _info(self.vocabulary)))
        stored = self._segments.sha256s()
        meta = check_metadata_of(metadata or {}, set(stored) | {s.doc_id for s in sources})
        if rechunk:
            # Re-read every stored document (unchanged chunk texts keep their vectors).
            named = {s.doc_id for s in sources} | set(remove)
            docs = self._reader.documents
            sources = sources + [Source(d, docs[d].source_path, docs[d].kind,
                                        self._reader.text(d),
                                        pages=docs[d].pages, converter=docs[d].converter)
                                 for d in stored if d not in named]
        sources, staging = self._staging(sources)
        labelled = Labelling(staging, meta, self._segments)
        try:
            run = ingest(
                sources, embedder=self.embedder, config=self.chunk_config,
                recover_headings=self.recover_headings, encoding=self.encoding,
                index_llm=self.index_llm, stored_sha256={} if rechunk else stored,
                stored_vectors=self._stored_vectors, batch_bytes=batch_bytes,
                workers=workers, progress=progress, started=started, executor=executor,
                staging=labelled, vocabulary=self.vocabulary,
            )
            timings = {**run.timings, "index": 0.0}
            t = time.perf_counter()
            remove = [d for d in remove if d in stored]
            relabelled = self._segments.relabelled(meta, set(run.staged) | set(remove))
            segments = self._segments
            if isinstance(staging, DiskStaging):
                if run.staged:
                    segments = segments.with_segment(staging.finish(), remove)
                else:  # nothing new: no segment
                    staging.abort()
                    segments = segments.with_changes([], remove) if remove else segments
                if relabelled:
                    segments = segments.with_changes(list(relabelled.values()), ())
            elif staging.documents or relabelled or remove:
                segments = segments.with_changes(
                    [*staging.documents.values(), *relabelled.values()], remove)
        except BaseException:
            staging.abort()
            raise
        if run.staged or relabelled or remove:
            # Commit in memory: nothing above mutated the index.
            added = [d for d in run.staged if d not in stored]
            updated = [d for d in run.staged if d in stored]
            self._set(segments)
            if isinstance(staging, DiskStaging) and run.staged:
                self._staged.append(staging)
        else:
            added = updated = []
        self._chunker_version = CHUNKER_VERSION
        self.read_with = _info(self.vocabulary)
        timings["index"] += time.perf_counter() - t
        return UpdateReport(
            duplicates=duplicate_pairs(self._segments.sha256s(), [*added, *updated]),
            added=tuple(sorted(added)), updated=tuple(sorted(updated)),
            unchanged=tuple(sorted(run.unchanged)), removed=tuple(sorted(remove)),
            relabelled=tuple(sorted(relabelled)),
            skipped=tuple(run.skipped), sections_skipped=run.sections_skipped,
            warnings=tuple(run.warnings),
            chunks=self._segments.n_rows, embedded=run.embedded, reused=run.reused,
            deduplicated=run.deduplicated, timings=timings,
        )

    def _staging(self, sources: list[Source]
                 ) -> tuple[list[Source], MemoryStaging | DiskStaging]:
        """Where an update stages ``sources``: in memory, or streamed into a segment in
        :attr:`staging_dir` (the temporary folder past :data:`SPILL_BYTES` of text), with
        the sources in the order that staging reads them."""
        scratch = self.staging_dir
        if scratch is None and sources and source_bytes(sources) > SPILL_BYTES:
            scratch = Path(tempfile.gettempdir())
        if scratch is None:
            return sources, MemoryStaging(self.embedder.dimension)
        # A segment keeps its documents in doc id order, large files last (run_order):
        # stream them in that order (the last of repeated ids wins, as in memory).
        ordered = run_order(sorted({s.doc_id: s for s in sources}.values(),
                                   key=lambda s: s.doc_id))
        return ordered, DiskStaging(scratch, dimension=self.embedder.dimension,
                                    config=self.vector_config,
                                    order=[s.doc_id for s in ordered])

    def _stored_vectors(self, doc_id: str) -> Iterable[tuple[str, np.ndarray]]:
        """``(embed_text, vector)`` of a stored document's chunks, for reuse on re-chunking."""
        if doc_id not in self._segments:
            return []
        seg = self._segments.segment_of(doc_id)
        rows = seg.doc_rows(doc_id)
        return zip(seg.embed_texts(rows.tolist()), seg.vectors(rows), strict=True)

    # --- querying (facades over the reader, retrieval and synthesis) --------------------
    def section(self, ref: Ref | str, *, access: Access | None = None) -> SectionText:
        """What ``ref`` (``doc#0003``, ``doc#L12-30``…) points at: :func:`~.refs.resolve`,
        then :func:`~.refs.open_ref`, which say what they raise. A document ``access``
        may not see is not found, exactly as a missing one."""
        reader = self._reader  # one generation throughout
        docs = reader.documents
        r = resolve(ref, docs if access is None else reader.visible_documents(access))
        return open_ref(reader.tree(r.doc_id), r, docs[r.doc_id].pages)

    def retrieve(self, question: str, config: RetrievalConfig | None = None,
                 **options: Any) -> Retrieval:
        """Retrieve whole sections for ``question``; see :class:`~.retrieval.RetrievalConfig`.

        Keyword options override fields of ``config`` (``budget=1000, k=3, doc_ids=[...]``).
        """
        return Retriever(self.reader, config, refiner=self.refiner,
                         vocabulary=self.vocabulary).retrieve(question, **options)

    def ask(self, question: str, llm: LLM | None = None, config: RetrievalConfig | None = None,
            **options: Any) -> Answer:
        """Retrieve sections and have ``llm`` answer from them with citations: the one path
        to an answer (the CLI's ``ask`` and :meth:`Service.ask <.service.Service.ask>` call
        it). ``llm`` defaults to the one the environment names (:func:`~.llm.llm_from_env`)."""
        from .llm import llm_from_env

        if llm is None:
            llm = llm_from_env()
        if llm is None:
            raise ConfigError("no LLM configured for synthesis; set GEMINI_API_KEY")
        retrieval = self.retrieve(question, config, **options)
        return synthesize(question, retrieval.sections, llm, note=retrieval.routing.note)

    def __len__(self) -> int:
        return self._segments.n_documents()

    def __repr__(self) -> str:
        return (f"Index({len(self)} documents, {self._segments.n_rows} chunks, "
                f"embedder={self.embedder.model_id!r})")


def update_directory(location: str | os.PathLike[str] | Store,
                     paths: Iterable[str | os.PathLike[str]],
                     *, embedder: Embedder | None = None, chunk_config: ChunkConfig | None = None,
                     vector_config: VectorIndexConfig | None = None,
                     recover_headings: bool = False, lock_timeout: float = 0.0,
                     index_llm: LLM | None = None, encoding: str = "utf-8",
                     **update_options: Any) -> tuple[Index, UpdateReport]:
    """Open (or create) the index at ``location``, update it from ``paths``, save atomically.

    The writer lock is held from load to commit, so two concurrent runs never lose each
    other's work: the second waits ``lock_timeout`` seconds, then raises
    :class:`IndexLockedError`. For an existing index, ``vector_config=None`` keeps its
    vector-index setting and another one switches it (vectors are reused, nothing is
    re-embedded); other chunking settings raise :class:`ConfigError`. An index made by
    another chunker version is re-chunked (unchanged chunk texts are not re-embedded).
    Text files are decoded with ``encoding``.

    Raises :class:`DocumentError` naming ``paths`` when they hold no document or every
    file was skipped (unreadable, undecodable, a corrupt PDF); nothing is written then, so
    an existing index stays as it was.
    """
    paths = list(paths)
    store = open_store(location)
    with store.lock(timeout=lock_timeout):
        existing = store.exists()
        if existing:
            idx = Index.load(store, embedder=embedder)
            idx.index_llm = index_llm
            idx.encoding = encoding
            if (chunk_config is not None
                    and chunk_config.fitted(idx.embedder.max_tokens).to_dict()
                    != idx.chunk_config.to_dict()):
                raise ConfigError(
                    f"{store.location}: index was built with other chunking settings; "
                    "rebuild it in a new directory"
                )
            switched = vector_config is not None and vector_config != idx.vector_config
            if vector_config is not None:
                idx.vector_config = vector_config
            stale = idx.manifest().chunker_version != CHUNKER_VERSION
        else:
            idx = Index(embedder=embedder, chunk_config=chunk_config,
                        vector_config=vector_config, recover_headings=recover_headings,
                        encoding=encoding, index_llm=index_llm)
            switched = stale = False
        idx.staging_dir = store.scratch()
        report = idx.update(paths, **update_options)
        if not (report.added or report.updated or report.unchanged):
            raise DocumentError(", ".join(str(p) for p in paths) or "(no paths)",
                                _nothing_indexed(report.skipped, update_options))
        if (report.added or report.updated or report.removed or report.relabelled
                or switched or stale or not existing):
            t = time.perf_counter()
            idx.save_locked(store)
            report.timings["write"] = time.perf_counter() - t
        return idx, report


def _nothing_indexed(skipped: Sequence[str], options: Mapping[str, Any]) -> str:
    """Why an update found nothing to index: no documents (and the globs looked for), or
    the first few skipped files with their problems."""
    if not skipped:
        globs = options.get("include") or DEFAULT_INCLUDE
        return f"no documents found (looked for {', '.join(globs)})"
    shown = "; ".join(skipped[:3]) + (f"; and {len(skipped) - 3} more" if len(skipped) > 3
                                      else "")
    return f"every file was skipped ({len(skipped)}): {shown}"
