"""Streaming ingestion: documents are read, parsed and embedded in bounded batches.

:meth:`Index.update <proxy_pointer.index.Index.update>` hands :func:`ingest` the documents to
(re)index. They are cut into batches of about ``batch_bytes`` of text; each batch is read,
parsed (tree, chunks, per-line token counts) and its new chunk texts embedded before the
batches after it are read, so a folder of thousands of files never holds all its raw texts
or all its texts to embed at once. Where batches are parsed is an
:class:`~proxy_pointer.ingest.Executor`'s business: with the default
:class:`~proxy_pointer.ingest.LocalExecutor`, worker processes parse batch ``i + 1`` (pure
Python, CPU bound) while this process embeds batch ``i``; a
:class:`~proxy_pointer.ingest.RayExecutor` parses and embeds whole batches on Ray actors,
several at a time. Reading, the SHA-256 checks and staging stay here, so the result is the
same wherever the work ran.

Only what the index will keep is staged (record, stored text, chunks, vectors); nothing is
committed here: the caller swaps the staged documents in once every batch has succeeded.

>>> from proxy_pointer.chunking import ChunkConfig
>>> from proxy_pointer.embeddings import HashEmbedder
>>> run = ingest([Source("a.md", "a.md", text="# A\\n\\n" + "Apples grow on trees. " * 9)],
...              embedder=HashEmbedder(16), config=ChunkConfig())
>>> run.staged["a.md"].vectors.shape, run.embedded
((1, 16), 1)
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..chunking import ChunkConfig
from ..convert import converter_for
from ..documents import read_bytes, read_document
from ..embeddings import Embedder
from ..errors import ConfigError, DocumentError
from ..stores import DocumentParts
from .executor import EMBED_STEP, Batch, Executor, Job, LocalExecutor, embed_checked
from .parsing import FailedDocument, ReadDocument, Source, bytes_digest, text_digest

if TYPE_CHECKING:
    from ..llm.base import LLM

__all__ = ["DEFAULT_BATCH_BYTES", "IngestProgress", "IngestResult", "UpdateReport", "ingest"]

#: Text per batch. Big enough that a batch's embedding calls are full (256 texts) and the
#: per-batch overhead vanishes, small enough that the pipeline fills quickly and the raw
#: text in flight (about two batches) stays a few megabytes.
DEFAULT_BATCH_BYTES = 2_000_000
#: Files per batch at most, so a folder of tiny files still streams.
DEFAULT_BATCH_FILES = 512


@dataclass(frozen=True)
class IngestProgress:
    """Where a build or update stands; passed to the ``progress`` callback.

    ``documents_*`` count every document looked at (unchanged and unreadable ones too);
    ``bytes_*`` their file sizes (``bytes_done`` moves within a batch as its texts are
    embedded). ``chunks_done``: chunks of finished documents, vectors ready (reused or new);
    ``chunks_embedded``: texts sent to the embedder so far. ``elapsed``: seconds since the
    update began. Events come in order and every counter only grows; the last one has
    ``documents_done == documents_total`` and ``bytes_done == bytes_total``.
    """

    documents_done: int
    documents_total: int
    bytes_done: int
    bytes_total: int
    chunks_done: int
    chunks_embedded: int
    elapsed: float


@dataclass
class IngestResult:
    """What :func:`ingest` staged and found: nothing in it has touched an index yet.

    ``skipped`` holds ``"path: problem"`` for unreadable files (and files their converter
    could not read: corrupt, encrypted, scanned), in the order given; ``warnings`` what
    converters reported about files they did convert; ``embedded`` counts distinct texts
    sent to the embedder.
    """

    staged: dict[str, DocumentParts] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    embedded: int = 0
    sections_skipped: int = 0
    timings: dict[str, float] = field(default_factory=lambda: {
        "convert": 0.0, "tree": 0.0, "chunking": 0.0, "embedding": 0.0, "waiting": 0.0})


@dataclass(frozen=True)
class UpdateReport:
    """What one build or update did. ``embedded`` counts texts sent to the embedder.

    ``duplicates`` pairs each added or changed document whose text is byte-identical to
    another indexed one with that document (retrieval hands identical sections over once,
    naming the copies in ``Section.also_in``).

    ``timings``: seconds spent on ``convert`` (PDF, HTML, Word to Markdown), ``tree`` (and
    line token counts) and ``chunking`` (these three summed over worker processes when
    parsing ran in a pool, so they can exceed the wall time),
    ``embedding``, ``waiting`` (the embedder idle, waiting for parsed batches), ``index``
    (assembling the new contents) and, for :func:`update_directory`, ``write``.
    """

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # "path: problem" for files that could not be read
    sections_skipped: int = 0  # sections of the parsed documents left unchunked (noise, short)
    warnings: tuple[str, ...] = ()  # "path: ..." from converters ("pages 3, 9 have no text")
    duplicates: tuple[tuple[str, str], ...] = ()  # (doc_id, identical earlier doc_id)
    relabelled: tuple[str, ...] = ()  # unchanged documents whose metadata alone changed
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
            + (f"; metadata changed for {len(self.relabelled)}" if self.relabelled else "")
            + (f"; {len(self.duplicates)} duplicate documents" if self.duplicates else "")
            + (f"; {len(self.warnings)} warning{'s' * (len(self.warnings) != 1)}"
               if self.warnings else "")
            + (f"; {self.sections_skipped} section{'s' * (self.sections_skipped != 1)} "
               "skipped as noise or short (see 'proxy-pointer tree FILE --noise')"
               if self.sections_skipped else "")
        )


def ingest(sources: Sequence[Source], *, embedder: Embedder, config: ChunkConfig,
           recover_headings: bool = False, encoding: str = "utf-8",
           index_llm: LLM | None = None,
           stored_sha256: Mapping[str, str] | None = None,
           stored_vectors: Callable[[str], Iterable[tuple[str, np.ndarray]]] | None = None,
           batch_bytes: int = DEFAULT_BATCH_BYTES, workers: int | None = None,
           progress: Callable[[IngestProgress], None] | None = None,
           started: float | None = None, executor: Executor | None = None) -> IngestResult:
    """Read, parse and embed ``sources`` batch by batch; returns what to commit.

    A document whose text hashes to its ``stored_sha256`` entry is unchanged and not parsed.
    ``stored_vectors(doc_id)`` yields ``(embed_text, vector)`` of a stored document's
    current chunks: once that document is re-parsed, its unchanged chunk texts reuse those
    vectors. Texts are embedded once per run, however many documents share them.

    ``batch_bytes`` bounds the text per batch (at least one file; an executor may ask for
    smaller ones). ``executor`` parses the batches (``None``: ``LocalExecutor(workers)``,
    whose ``workers`` are parsing processes; ``0``: parse here, in turn with embedding;
    ``None``: one per core, at most four); ``workers`` is only for that default.
    ``progress`` gets an :class:`IngestProgress` at the start, after every embedder call
    made here and at the end of every batch.

    Raises :class:`~proxy_pointer.errors.ConfigError` for a bad argument (``workers`` with
    an ``executor``, too), an embedder returning vectors of the wrong shape, or a job the
    executor cannot run (a :class:`~proxy_pointer.ingest.RayExecutor` without Ray, or with an
    index-time LLM); errors of the embedder propagate unchanged. Unreadable files are
    reported in ``IngestResult.skipped``, not raised.
    """
    if not isinstance(batch_bytes, int) or batch_bytes < 1:
        raise ConfigError(f"batch_bytes must be a positive integer, got {batch_bytes!r}")
    if executor is None:
        executor = LocalExecutor(workers)
    elif not isinstance(executor, Executor):
        raise ConfigError(f"executor must be an Executor (LocalExecutor(), RayExecutor()), "
                          f"got {executor!r}")
    elif workers is not None:
        raise ConfigError(f"workers={workers!r} is for the default executor; give the "
                          "executor its workers instead")
    run = _Run(embedder, encoding, stored_sha256 or {}, stored_vectors, progress,
               time.perf_counter() if started is None else started)
    batches = _plan(sources, batch_bytes)
    run.total_docs = len(sources)
    run.total_bytes = sum(size for batch in batches for _, size in batch)
    job = Job(embedder, config, recover_headings, index_llm)
    with executor.start(job, batches=len(batches)) as pool:
        wanted = pool.batch_bytes(batch_bytes, run.total_bytes)
        if wanted != batch_bytes:
            batches = _plan(sources, wanted)
        # Submitted batches, oldest first: (read documents, their stored vectors, the
        # batch's documents and bytes, the executor's handle).
        flight: deque[tuple[list[ReadDocument], list[tuple[str, np.ndarray]], int, int,
                            object]] = deque()
        run.report()
        for i in range(len(batches) + 1):
            if i < len(batches):
                docs = run.read(batches[i])
                stored = run.stored(docs)
                handle = pool.submit(docs, skip=frozenset(text for text, _ in stored))
                flight.append((docs, stored, len(batches[i]),
                               sum(size for _, size in batches[i]), handle))
            # The executor works on the batches after the oldest while it is staged.
            while flight and (i == len(batches) or len(flight) > pool.window):
                docs, stored, n_docs, size, handle = flight.popleft()
                run.finish(docs, stored, pool.result(handle), n_docs, size)
    return run.result


def _plan(sources: Sequence[Source], batch_bytes: int) -> list[list[tuple[Source, int]]]:
    """Consecutive batches of ``(source, size)``; sizes from ``stat`` (0 if it fails: the
    read reports the problem)."""
    batches: list[list[tuple[Source, int]]] = []
    batch: list[tuple[Source, int]] = []
    total = 0
    for src in sources:
        if src.text is not None:
            size = len(src.text.encode("utf-8"))
        else:
            try:
                size = os.stat(src.source_path).st_size
            except OSError:
                size = 0
        if batch and (total + size > batch_bytes or len(batch) >= DEFAULT_BATCH_FILES):
            batches.append(batch)
            batch, total = [], 0
        batch.append((src, size))
        total += size
    if batch:
        batches.append(batch)
    return batches


class _Run:
    """State of one :func:`ingest` call: counters, reusable vectors, what is staged."""

    def __init__(self, embedder: Embedder, encoding: str, stored_sha256: Mapping[str, str],
                 stored_vectors: Callable[[str], Iterable[tuple[str, np.ndarray]]] | None,
                 progress: Callable[[IngestProgress], None] | None, started: float) -> None:
        self.embedder, self.encoding = embedder, encoding
        self.stored_sha256, self.stored_vectors = stored_sha256, stored_vectors
        self.progress, self.started = progress, started
        self.result = IngestResult()
        # embed_text -> vector: from re-parsed documents' stored chunks, and from this run.
        self.known: dict[str, np.ndarray] = {}
        self.fresh: dict[str, np.ndarray] = {}
        self.total_docs = self.total_bytes = 0
        self.docs_done = self.bytes_done = self.chunks_done = 0

    def report(self, bytes_done: int | None = None) -> None:
        if self.progress is not None:
            self.progress(IngestProgress(
                documents_done=self.docs_done, documents_total=self.total_docs,
                bytes_done=self.bytes_done if bytes_done is None else bytes_done,
                bytes_total=self.total_bytes, chunks_done=self.chunks_done,
                chunks_embedded=self.result.embedded,
                elapsed=time.perf_counter() - self.started,
            ))

    def read(self, batch: list[tuple[Source, int]]) -> list[ReadDocument]:
        """Read a batch; set aside unchanged and unreadable files, return the rest."""
        out: list[ReadDocument] = []
        for src, _ in batch:
            kind, data = src.kind, None
            if src.text is None and converter_for(src.source_path) is not None:
                # PDF, HTML, Word: hashed as bytes here, converted where it is parsed.
                data = self._read_bytes(src.source_path)
                if data is None:
                    continue
                kind, text, digest = "markdown", "", bytes_digest(data, src.source_path)
            else:
                read = src.text if src.text is not None else self._read_file(src.source_path)
                if read is None:
                    continue
                text, digest = read, text_digest(read)
            if self.stored_sha256.get(src.doc_id) == digest:
                self.result.unchanged.append(src.doc_id)
                continue
            out.append(ReadDocument(src.doc_id, src.source_path, kind, text, digest, data=data,
                                    pages=src.pages, converter=src.converter))
        return out

    def stored(self, docs: list[ReadDocument]) -> list[tuple[str, np.ndarray]]:
        """``(embed_text, vector)`` of the stored chunks of ``docs``."""
        if self.stored_vectors is None:
            return []
        return [pair for d in docs for pair in self.stored_vectors(d.doc_id)]

    def _read_bytes(self, path: str) -> bytes | None:
        try:
            return read_bytes(path)
        except DocumentError as e:
            self.result.skipped.append(str(e))
        return None

    def _read_file(self, path: str) -> str | None:
        try:
            return read_document(path, encoding=self.encoding)
        except DocumentError as e:
            self.result.skipped.append(str(e))
        except OSError as e:
            self.result.skipped.append(f"{path}: {e.strerror or e}")
        return None

    def finish(self, docs: list[ReadDocument], stored: list[tuple[str, np.ndarray]],
               batch: Batch, n_docs: int, batch_size: int) -> None:
        """Embed what the executor left of a batch's new texts, stage its documents;
        ``stored``: the stored vectors of ``docs``; ``n_docs`` and ``batch_size``: the
        whole batch's documents and bytes, for progress."""
        timings = self.result.timings
        timings["waiting"] += batch.wait_seconds
        timings["embedding"] += batch.embed_seconds
        for embed_text, vec in stored:
            self.known.setdefault(embed_text, vec)
        pairs = []
        for doc, p in zip(docs, batch.parsed, strict=True):
            if isinstance(p, FailedDocument):
                self.result.skipped.append(p.problem)
                continue
            pairs.append((doc, p))
            timings["convert"] += p.convert_seconds
            timings["tree"] += p.tree_seconds
            timings["chunking"] += p.chunk_seconds
            self.result.sections_skipped += p.sections_skipped
            self.result.warnings.extend(p.warnings)
        todo = sorted({c.embed_text for _, p in pairs for c in p.chunks
                       if c.embed_text not in self.known and c.embed_text not in self.fresh})
        t = time.perf_counter()
        given = dict(zip(batch.texts, batch.vectors, strict=True))
        self.fresh.update((text, given[text]) for text in todo if text in given)
        here = [text for text in todo if text not in given]
        self.result.embedded += len(todo) - len(here)
        for start in range(0, len(here), EMBED_STEP):
            step = here[start:start + EMBED_STEP]
            self.fresh.update(zip(step, embed_checked(self.embedder, step), strict=True))
            self.result.embedded += len(step)
            done = min(start + EMBED_STEP, len(here))
            self.report(self.bytes_done + batch_size * done // (len(here) + 1))
        timings["embedding"] += time.perf_counter() - t
        d = self.embedder.dimension
        for doc, p in pairs:
            vecs = (np.stack([self._vector(c.embed_text) for c in p.chunks]) if p.chunks
                    else np.zeros((0, d), np.float32))
            text = doc.text if p.text is None else p.text
            self.result.staged[p.record.doc_id] = DocumentParts(p.record, text, p.chunks,
                                                                vecs, p.tree_json)
            # Later batches find this run's vectors in the staged array, so the embedder's
            # output arrays can be freed (one copy of each vector is kept, not two).
            for c, v in zip(p.chunks, vecs, strict=True):
                if c.embed_text in self.fresh:
                    self.fresh[c.embed_text] = v
            self.chunks_done += len(p.chunks)
        self.docs_done += n_docs
        self.bytes_done += batch_size
        self.report()

    def _vector(self, text: str) -> np.ndarray:
        vec = self.known.get(text)
        return self.fresh[text] if vec is None else vec
