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

Only what the index will keep is staged (record, stored text, chunks, vectors), each
document as soon as its batch is embedded, into a :class:`~proxy_pointer.stores.Staging`:
in memory, or streamed into a segment on disk, so a build holds its batches and not its
corpus. Identical chunk texts are embedded once per run: a later one takes the staged
vector (read back by row). Nothing is committed here: the caller swaps the staged
documents in once every batch has succeeded.

>>> from proxy_pointer.parse.chunking import ChunkConfig
>>> from proxy_pointer.embeddings import HashEmbedder
>>> run = ingest([Source("a.md", "a.md", text="# A\\n\\n" + "Apples grow on trees. " * 9)],
...              embedder=HashEmbedder(16), config=ChunkConfig())
>>> run.staging.documents["a.md"].vectors.shape, run.embedded
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

from ..convert import converter_for, count_pages
from ..convert.base import MAX_INPUT_BYTES
from ..documents import read_bytes, read_document
from ..embeddings import Embedder
from ..embeddings.base import text_key
from ..errors import ConfigError, DocumentError
from ..parse.chunking import Chunk, ChunkConfig
from ..stores import DocumentParts
from ..stores.staging import MemoryStaging, Staging
from ..vocab.filings import FILINGS, Vocabulary
from .executor import EMBED_STEP, Batch, Executor, Job, LocalExecutor, embed_checked
from .parsing import FailedDocument, ReadDocument, Source, bytes_digest, text_digest

if TYPE_CHECKING:
    from ..llm.base import LLM

__all__ = ["DEFAULT_BATCH_BYTES", "LARGE_FILE_BYTES", "MAX_FILE_BYTES", "IngestProgress",
           "IngestResult", "UpdateReport", "ingest", "run_order", "source_bytes"]

#: Text per batch. Big enough that a batch's embedding calls are full (256 texts) and the
#: per-batch overhead vanishes, small enough that the pipeline fills quickly and the raw
#: text in flight (about two batches) stays a few megabytes.
DEFAULT_BATCH_BYTES = 2_000_000
#: Files per batch at most, so a folder of tiny files still streams.
DEFAULT_BATCH_FILES = 512
#: Bytes of a file without pages of its own (Markdown, text, HTML, Word) counted as one page
#: of progress: about a printed page of prose.
PAGE_BYTES = 3_000
#: The share of a batch's progress that is parsing (its PDF pages counted as they are read
#: where it is parsed in this process); embedding its texts is the rest. About its share of
#: the time with the default model: 13 filings, 1,153 pages, indexed in 472 s (0.41 s a
#: page), of which converting and parsing a page takes 0.01 to 0.04 s; so time left is not
#: read off the fast page reading alone.
PARSE_SHARE = 0.1
#: Texts in the first embedder call of a batch, doubling up to ``EMBED_STEP``: progress
#: moves after a few dozen chunks, not a few hundred.
FIRST_EMBED_STEP = 32
#: The largest file a run indexes: a larger one is skipped, named in
#: ``UpdateReport.skipped`` (``ingest(max_file_bytes=)`` moves the limit). Indexing costs
#: about 20 MB of memory per megabyte of text at its peak. A .docx may unpack to no more
#: (:data:`~proxy_pointer.convert.base.MAX_INPUT_BYTES`, the one bound).
MAX_FILE_BYTES = MAX_INPUT_BYTES
#: Files larger than this are read after every smaller one of a run (:func:`run_order`), so a
#: huge file delays no other; a progress callback sees it move as its texts are embedded.
LARGE_FILE_BYTES = 4 * DEFAULT_BATCH_BYTES


@dataclass(frozen=True)
class IngestProgress:
    """Where a build or update stands; passed to the ``progress`` callback.

    ``documents_*`` count every document looked at (unchanged and unreadable ones too);
    ``bytes_*`` their file sizes; ``pages_*`` their pages, the unit people follow: a PDF's
    own page count (read before it is converted), one page per :data:`PAGE_BYTES` of any
    other file. ``bytes_done`` and ``pages_done`` move within a batch as its texts are
    embedded. ``chunks_done``: chunks of finished documents, vectors ready (reused or new);
    ``chunks_embedded``: texts sent to the embedder so far. ``elapsed``: seconds since the
    update began. Events come in order and every counter only grows; the last one has
    ``documents_done == documents_total``, ``bytes_done == bytes_total`` and ``pages_done
    == pages_total``.
    """

    documents_done: int
    documents_total: int
    bytes_done: int
    bytes_total: int
    chunks_done: int
    chunks_embedded: int
    elapsed: float
    pages_done: float = 0.0
    pages_total: int = 0

    @property
    def seconds_left(self) -> float | None:
        """Time left at the rate so far (pages per second), None until a page is done."""
        if self.pages_done <= 0:
            return None
        return max(0.0, self.elapsed * (self.pages_total - self.pages_done) / self.pages_done)


@dataclass
class IngestResult:
    """What :func:`ingest` staged and found: nothing in it has touched an index yet.

    ``staging`` holds the staged documents (``staged``: their ids, in the order staged).
    ``skipped`` holds ``"path: problem"`` for unreadable files (and files their converter
    could not read: corrupt, encrypted, scanned), in the order given; ``warnings`` what
    converters reported about files they did convert. Of the staged chunks, ``embedded``
    counts distinct texts sent to the embedder, ``reused`` chunks that kept the vector of
    a stored chunk of a re-read document with the same text, ``deduplicated`` chunks whose
    text another chunk of this run already had (so each is one or another of the three).
    """

    staging: Staging
    staged: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    embedded: int = 0
    reused: int = 0
    deduplicated: int = 0
    sections_skipped: int = 0
    timings: dict[str, float] = field(default_factory=lambda: {
        "read": 0.0, "convert": 0.0, "tree": 0.0, "tokenize": 0.0, "chunking": 0.0,
        "embedding": 0.0, "waiting": 0.0, "staging": 0.0})


@dataclass(frozen=True)
class UpdateReport:
    """What one build or update did. Of the chunks of added and changed documents,
    ``embedded`` counts the distinct texts sent to the embedder, ``reused`` the chunks that
    kept a stored vector (a text a re-read document's stored chunks already had),
    ``deduplicated`` the chunks whose text was already embedded or reused in this run
    (boilerplate repeated across files).

    ``duplicates`` pairs each added or changed document whose text is byte-identical to
    another indexed one with that document (retrieval hands identical sections over once,
    naming the copies in ``Section.also_in``).

    ``timings``: seconds spent on ``read`` (reading and hashing files), ``convert`` (PDF,
    HTML, Word to Markdown), ``tree`` (with the one tokenizer pass over the document),
    ``tokenize`` (that pass: a part of ``tree``, not added to it) and ``chunking`` (these
    summed over worker processes when parsing ran in a pool, so they can exceed the wall
    time),
    ``embedding``, ``waiting`` (the embedder idle, waiting for parsed batches),
    ``staging`` (writing staged documents), ``index`` (assembling the new contents) and,
    for :func:`update_directory`, ``write`` (committing).
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
    reused: int = 0
    deduplicated: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for people: counts and seconds."""
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.removed)} removed, "
            f"{len(self.skipped)} skipped; {self.chunks} chunks "
            f"({self.embedded} embedded"
            + (f", {self.reused} reused" if self.reused else "")
            + (f", {self.deduplicated} deduplicated" if self.deduplicated else "")
            + f") in {self.seconds:.1f}s"
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
           started: float | None = None, executor: Executor | None = None,
           staging: Staging | None = None, max_file_bytes: int = MAX_FILE_BYTES,
           vocabulary: Vocabulary = FILINGS) -> IngestResult:
    """Read, parse and embed ``sources`` batch by batch; returns what to commit.

    A document whose text hashes to its ``stored_sha256`` entry is unchanged and not parsed.
    ``stored_vectors(doc_id)`` yields ``(embed_text, vector)`` of a stored document's
    current chunks: once that document is re-parsed, its unchanged chunk texts reuse those
    vectors. Texts are embedded once per run, however many documents share them.
    Documents are staged into ``staging`` as their batches finish (default: a
    :class:`~proxy_pointer.stores.staging.MemoryStaging`; a disk one wants them in the
    order they come: :func:`run_order` of ``sources``, which is how they are read). A file
    over ``max_file_bytes`` is skipped and named in ``IngestResult.skipped``.

    ``batch_bytes`` bounds the text per batch (at least one file; an executor may ask for
    smaller ones). ``executor`` parses the batches (``None``: ``LocalExecutor(workers)``,
    whose ``workers`` are parsing processes; ``0``: parse here, in turn with embedding;
    ``None``: one per core, at most four); ``workers`` is only for that default.
    ``progress`` gets an :class:`IngestProgress` at the start, after every embedder call
    made here and at the end of every batch. Cards are read with ``vocabulary``.

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
               time.perf_counter() if started is None else started,
               MemoryStaging(embedder.dimension) if staging is None else staging,
               max_file_bytes)
    sized = _sized(sources)  # in run_order, each file's size read once
    batches = _plan(sized, batch_bytes)
    run.total_docs = len(sources)
    run.total_bytes = sum(size for batch in batches for _, size in batch)
    run.pages = {id(src): _pages(src, size) for src, size in sized}
    run.total_pages = sum(run.pages.values())
    job = Job(embedder, config, recover_headings, index_llm, run.page_read, vocabulary)
    with executor.start(job, batches=len(batches)) as pool:
        wanted = pool.batch_bytes(batch_bytes, run.total_bytes)
        if wanted != batch_bytes:
            batches = _plan(sized, wanted)
        # Submitted batches, oldest first: (read documents, their stored vectors, the
        # batch's documents, bytes and pages, the executor's handle).
        flight: deque[tuple[list[ReadDocument], list[tuple[str, np.ndarray]], int, int,
                            int, object]] = deque()
        run.report()
        for i in range(len(batches) + 1):
            if i < len(batches):
                t = time.perf_counter()
                docs = run.read(batches[i])
                run.result.timings["read"] += time.perf_counter() - t
                stored = run.stored(docs)
                handle = pool.submit(docs, skip=frozenset(text for text, _ in stored))
                flight.append((docs, stored, len(batches[i]),
                               sum(size for _, size in batches[i]),
                               sum(run.pages[id(src)] for src, _ in batches[i]), handle))
            # The executor works on the batches after the oldest while it is staged.
            while flight and (i == len(batches) or len(flight) > pool.window):
                docs, stored, n_docs, size, pages, handle = flight.popleft()
                run.begin((size, pages))
                run.finish(docs, stored, pool.result(handle), n_docs, (size, pages))
    return run.result


def _size(src: Source) -> int:
    """Bytes of a source's text: in memory, else its file's size from ``stat`` (0 if it
    fails: the read reports the problem)."""
    if src.text is not None:
        return len(src.text.encode("utf-8", "surrogatepass"))
    try:
        return os.stat(src.source_path).st_size
    except OSError:
        return 0


def _pages(src: Source, size: int) -> int:
    """A source's pages of progress (:class:`IngestProgress`)."""
    counted = count_pages(src.source_path) if src.text is None else None
    return counted if counted is not None else max(1, -(-size // PAGE_BYTES))


def run_order(sources: Sequence[Source]) -> list[Source]:
    """``sources`` in the order a run reads, parses, embeds and stages them: those of at
    most :data:`LARGE_FILE_BYTES` as given, then the larger ones as given, so that a huge
    file holds up no other (a segment's rows follow this order)."""
    return [src for src, _ in _sized(sources)]


def _sized(sources: Sequence[Source]) -> list[tuple[Source, int]]:
    """``(source, size)`` in :func:`run_order`."""
    sized = [(s, _size(s)) for s in sources]
    return ([x for x in sized if x[1] <= LARGE_FILE_BYTES]
            + [x for x in sized if x[1] > LARGE_FILE_BYTES])


def source_bytes(sources: Sequence[Source]) -> int:
    """Bytes of text ``sources`` hold (what :class:`IngestProgress` counts)."""
    return sum(_size(s) for s in sources)


def _plan(sized: Sequence[tuple[Source, int]], batch_bytes: int
          ) -> list[list[tuple[Source, int]]]:
    """Consecutive batches of ``(source, size)``; the first holds one file, so the first
    results (and progress) come after one file's parsing, not a whole batch's."""
    batches: list[list[tuple[Source, int]]] = []
    batch: list[tuple[Source, int]] = []
    total = 0
    for src, size in sized:
        if batch and (total + size > batch_bytes or len(batch) >= DEFAULT_BATCH_FILES
                      or not batches):
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
                 progress: Callable[[IngestProgress], None] | None, started: float,
                 staging: Staging, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.embedder, self.encoding = embedder, encoding
        self.stored_sha256, self.stored_vectors = stored_sha256, stored_vectors
        self.progress, self.started = progress, started
        self.result = IngestResult(staging)
        self.staging = staging
        # embed_text -> vector, from re-parsed documents' stored chunks
        self.known: dict[str, np.ndarray] = {}
        # digest of an embed_text -> the staged row holding its vector (a digest, not the
        # text, so a million distinct chunks cost tens of megabytes here)
        self.fresh: dict[bytes, int] = {}
        self.total_docs = self.total_bytes = 0
        self.max_file_bytes = max_file_bytes
        self.docs_done = self.bytes_done = self.chunks_done = 0
        self.pages: dict[int, int] = {}  # id(source) -> its pages of progress
        self.total_pages = self.pages_done = 0
        # The batch in hand, (bytes, pages), and its PDF pages read so far where it is
        # parsed in this process: parsing is PARSE_SHARE of a batch's progress.
        self.current, self.pages_read = (0, 0), 0

    def begin(self, batch: tuple[int, int]) -> None:
        """The batch of ``(bytes, pages)`` whose result is awaited next (its pages may be
        read here, :meth:`page_read`)."""
        self.current, self.pages_read = batch, 0

    def page_read(self) -> None:
        """A PDF page of the batch in hand was read (``Job.on_page``)."""
        self.pages_read += 1
        self.report(PARSE_SHARE * min(1.0, self.pages_read / max(1, self.current[1])),
                    self.current)

    def report(self, share: float = 0.0, batch: tuple[int, int] = (0, 0)) -> None:
        """An event; ``share`` of the ``(bytes, pages)`` of the batch in hand is done."""
        if self.progress is not None:
            self.progress(IngestProgress(
                documents_done=self.docs_done, documents_total=self.total_docs,
                bytes_done=self.bytes_done + int(batch[0] * share),
                bytes_total=self.total_bytes, chunks_done=self.chunks_done,
                chunks_embedded=self.result.embedded,
                elapsed=time.perf_counter() - self.started,
                pages_done=self.pages_done + batch[1] * share, pages_total=self.total_pages,
            ))

    def read(self, batch: list[tuple[Source, int]]) -> list[ReadDocument]:
        """Read a batch; set aside unchanged, unreadable and too large files, return the
        rest."""
        out: list[ReadDocument] = []
        for src, size in batch:
            if size > self.max_file_bytes:
                self.result.skipped.append(
                    f"{src.source_path}: {size / 2**20:,.1f} MB, over the "
                    f"{self.max_file_bytes / 2**20:,.1f} MB a file may hold (MAX_FILE_BYTES)")
                continue
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
               batch: Batch, n_docs: int, batch_size: tuple[int, int]) -> None:
        """Embed what the executor left of a batch's new texts, stage its documents;
        ``stored``: the stored vectors of ``docs``; ``n_docs`` and ``batch_size``: the
        whole batch's documents and ``(bytes, pages)``, for progress."""
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
            timings["tokenize"] += p.token_seconds
            timings["chunking"] += p.chunk_seconds
            self.result.sections_skipped += p.sections_skipped
            self.result.warnings.extend(p.warnings)
        keys = {c.embed_text: text_key(c.embed_text) for _, p in pairs for c in p.chunks}
        todo = sorted(text for text, key in keys.items()
                      if text not in self.known and key not in self.fresh)
        t = time.perf_counter()
        given = dict(zip(batch.texts, batch.vectors, strict=True))
        new = {text: given[text] for text in todo if text in given}
        here = [text for text in todo if text not in given]
        self.result.embedded += len(todo) - len(here)
        start, size = 0, FIRST_EMBED_STEP
        while start < len(here):
            step = here[start:start + size]
            new.update(zip(step, embed_checked(self.embedder, step), strict=True))
            self.result.embedded += len(step)
            start, size = start + len(step), min(EMBED_STEP, size * 2)
            self.report(PARSE_SHARE + (1 - PARSE_SHARE) * start / (len(here) + 1), batch_size)
        timings["embedding"] += time.perf_counter() - t
        t = time.perf_counter()
        for doc, p in pairs:
            text = doc.text if p.text is None else p.text
            vecs, firsts = self._vectors(p.chunks, keys, new)
            row0 = self.staging.add(DocumentParts(p.record, text, p.chunks, vecs, p.tree_json))
            for i in firsts:
                self.fresh[keys[p.chunks[i].embed_text]] = row0 + i
            self.result.staged.append(p.record.doc_id)
            self.chunks_done += len(p.chunks)
        timings["staging"] += time.perf_counter() - t
        self.docs_done += n_docs
        self.bytes_done += batch_size[0]
        self.pages_done += batch_size[1]
        self.report()

    def _vectors(self, chunks: Sequence[Chunk], keys: Mapping[str, bytes],
                 new: dict[str, np.ndarray]) -> tuple[np.ndarray, list[int]]:
        """The vectors of one document's chunks, and the chunks that are the first of this
        run to use a text embedded in their batch (``new``: taken from it as used). A
        text's vector is its stored one, else the one embedded (or staged) in this run."""
        vecs = np.zeros((len(chunks), self.embedder.dimension), np.float32)
        firsts: list[int] = []
        here: dict[str, int] = {}  # text -> its first chunk in this document
        staged: list[tuple[int, int]] = []  # (chunk, staged row of its text)
        copies: list[tuple[int, int]] = []  # (chunk, earlier chunk of the same text)
        for i, c in enumerate(chunks):
            text = c.embed_text
            vec = self.known.get(text)
            if vec is not None:
                vecs[i] = vec
                self.result.reused += 1
            elif text in here:
                copies.append((i, here[text]))
                self.result.deduplicated += 1
            elif text in new:
                vecs[i] = new.pop(text)
                here[text] = i
                firsts.append(i)
            else:
                here[text] = i
                staged.append((i, self.fresh[keys[text]]))
                self.result.deduplicated += 1
        if staged:
            read = self.staging.vectors([row for _, row in staged])
            for (i, _), vec in zip(staged, read, strict=True):
                vecs[i] = vec
        for i, j in copies:
            vecs[i] = vecs[j]
        return vecs, firsts
