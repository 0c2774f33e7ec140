"""Streaming ingestion: documents are read, parsed and embedded in bounded batches.

:meth:`Index.update <proxy_pointer.index.Index.update>` hands :func:`ingest` the documents to
(re)index. They are cut into batches of about ``batch_bytes`` of text; each batch is read,
parsed (tree, chunks, per-line token counts) and its new chunk texts embedded before the
next one is read, so a folder of thousands of files never holds all its raw texts or all
its texts to embed at once. With a worker pool, parsing batch ``i + 1`` (pure Python, CPU
bound) runs in other processes while this one embeds batch ``i``. With ``executor="ray"``
(:mod:`.distributed`), Ray actors parse and embed whole batches, several at a time; reading,
the SHA-256 checks and staging stay here, so the result is the same as a local run's.

Only what the index will keep is staged (record, stored text, chunks, vectors); nothing is
committed here: the caller swaps the staged documents in once every batch has succeeded.

>>> from proxy_pointer.embeddings import HashEmbedder
>>> run = ingest([Source("a.md", "a.md", text="# A\\n\\n" + "Apples grow on trees. " * 9)],
...              embedder=HashEmbedder(16), config=ChunkConfig())
>>> run.staged["a.md"].vectors.shape, run.embedded
((1, 16), 1)
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from hashlib import sha256 as _sha256
from typing import TYPE_CHECKING

import numpy as np

from .chunking import Chunk, ChunkConfig, chunk_text, chunk_tree, skip_reasons
from .documents import document_kind, read_document
from .embeddings import Embedder
from .errors import ConfigError, DocumentError
from .noise import classify_noise
from .segmentation import segmented_tree
from .stores import DocumentParts, DocumentRecord
from .summaries import SummaryCache, summary_chunks
from .tokens import count_tokens_batch
from .tree import build_tree, split_lines

if TYPE_CHECKING:
    from .noise import TextGenerator

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "EMBED_STEP",
    "EXECUTORS",
    "IngestProgress",
    "IngestResult",
    "ParsedDocument",
    "Source",
    "UpdateReport",
    "default_workers",
    "duplicate_pairs",
    "embed_checked",
    "ingest",
    "parse_document",
    "usable_cpus",
]

#: Text per batch. Big enough that a batch's embedding calls are full (256 texts) and the
#: per-batch overhead vanishes, small enough that the pipeline fills quickly and the raw
#: text in flight (about two batches) stays a few megabytes.
DEFAULT_BATCH_BYTES = 2_000_000
#: Files per batch at most, so a folder of tiny files still streams.
DEFAULT_BATCH_FILES = 512
#: Texts per embedder call, here and on Ray actors: the steps Index used before batching.
EMBED_STEP = 256
#: Where ingestion runs: in this process (with its parsing pool), or on Ray actors.
EXECUTORS = ("local", "ray")


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


@dataclass(frozen=True)
class Source:
    """One document to (re)index: a file at ``source_path``, or ``text`` held in memory.

    ``kind`` ``None`` means "from the file name" (:func:`~.documents.document_kind`).
    """

    doc_id: str
    source_path: str
    kind: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class ParsedDocument:
    """What parsing one document yields: its record and chunks, and the seconds spent
    building the tree (plus line token counts) and chunking, for ``UpdateReport.timings``."""

    record: DocumentRecord
    chunks: tuple[Chunk, ...]
    tree_seconds: float
    chunk_seconds: float
    tree_json: str = ""  # the skeleton tree without its text, saved so queries never parse
    sections_skipped: int = 0  # sections with own text that got no chunk (noise, or short)


@dataclass
class IngestResult:
    """What :func:`ingest` staged and found: nothing in it has touched an index yet.

    ``skipped`` holds ``"path: problem"`` for unreadable files, in the order given;
    ``embedded`` counts distinct texts sent to the embedder.
    """

    staged: dict[str, DocumentParts] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    embedded: int = 0
    sections_skipped: int = 0
    timings: dict[str, float] = field(default_factory=lambda: {
        "tree": 0.0, "chunking": 0.0, "embedding": 0.0, "waiting": 0.0})


def parse_document(text: str, doc_id: str, source_path: str, kind: str | None,
                   config: ChunkConfig, recover_headings: bool, *, digest: str | None = None,
                   noise_llm: TextGenerator | None = None) -> ParsedDocument:
    """Tree, chunks and per-line token counts of one document.

    Module-level with picklable arguments so that a worker process can run it. ``digest``
    is the SHA-256 of ``text`` when the caller has it already. Raises
    :class:`~proxy_pointer.errors.ConfigError` when ``config.noise.use_llm`` is set without
    ``noise_llm``; never raises on document content.
    """
    kind = kind or document_kind(source_path)
    t = time.perf_counter()
    tree = None if kind == "text" else build_tree(text, doc_id=doc_id,
                                                  recover_headings=recover_headings)
    lines = tree.lines if tree is not None else split_lines(text)
    line_tokens = tuple(count_tokens_batch(lines))
    if (config.mode == "structure" and config.headerless == "segments"
            and (tree is None or not tree.has_headings)):
        # No headings: topical segments stand in for sections (see segmentation.py).
        title = tree.title if tree is not None else doc_id
        tree = segmented_tree(doc_id, lines, title, tokens=line_tokens)
    tt = time.perf_counter()
    skipped = 0
    if tree is None:
        chunks = chunk_text(text, doc_id, config)
    else:
        structured = config.mode == "structure" and tree.has_headings
        # Without the LLM that use_llm asks for, chunk_tree raises the ConfigError.
        decisions = (classify_noise(tree, config.noise, llm=noise_llm)
                     if structured and (noise_llm is not None or not config.noise.use_llm)
                     else None)
        chunks = chunk_tree(tree, config, noise=decisions, noise_llm=noise_llm,
                            markdown=kind != "text")
        if decisions is not None and any(c.node_id is not None for c in chunks):
            # Sections with own text that got no chunk, for the summary.
            skipped = sum(1 for n in skip_reasons(tree, config, noise=decisions)
                          if tree.slice(tree.get(n).body_start, tree.get(n).own_end).strip())
    if config.summaries and tree is not None:
        if noise_llm is None:
            raise ConfigError("ChunkConfig(summaries=True) needs an index-time LLM "
                              "(Index(..., noise_llm=LLM))")
        chunks = chunks + summary_chunks(tree, chunks, noise_llm, cache=_summary_cache(),
                                         max_breadcrumb_tokens=config.max_breadcrumb_tokens)
    tc = time.perf_counter()
    record = DocumentRecord(
        doc_id=doc_id, source_path=source_path, size=len(text.encode("utf-8")),
        sha256=digest or _digest(text), kind=kind, title=tree.title if tree else doc_id,
        n_chunks=len(chunks), line_tokens=line_tokens,
    )
    tree_json = tree.to_json(include_text=False) if tree is not None else ""
    return ParsedDocument(record, tuple(chunks), (tt - t) + (time.perf_counter() - tc),
                          tc - tt, tree_json, skipped)


@dataclass(frozen=True)
class UpdateReport:
    """What one build or update did. ``embedded`` counts texts sent to the embedder.

    ``duplicates`` pairs each added or changed document whose text is byte-identical to
    another indexed one with that document (retrieval hands identical sections over once,
    naming the copies in ``Section.also_in``).

    ``timings``: seconds spent on ``tree`` (and line token counts) and ``chunking`` (summed
    over worker processes when parsing ran in a pool, so they can exceed the wall time),
    ``embedding``, ``waiting`` (the embedder idle, waiting for parsed batches), ``index``
    (assembling the new contents) and, for :func:`update_directory`, ``write``.
    """

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # "path: problem" for files that could not be read
    sections_skipped: int = 0  # sections of the parsed documents left unchunked (noise, short)
    duplicates: tuple[tuple[str, str], ...] = ()  # (doc_id, identical earlier doc_id)
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
            + (f"; {len(self.duplicates)} duplicate documents" if self.duplicates else "")
            + (f"; {self.sections_skipped} section{'s' * (self.sections_skipped != 1)} "
               "skipped as noise or short (see 'proxy-pointer tree FILE --noise')"
               if self.sections_skipped else "")
        )


def duplicate_pairs(shas: Mapping[str, str], changed: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``(doc_id, first doc_id with the same text)`` in each group of identical documents
    that holds a changed one."""
    groups: dict[str, list[str]] = {}
    for doc_id in sorted(shas):
        groups.setdefault(shas[doc_id], []).append(doc_id)
    touched = set(changed)
    return tuple((d, g[0]) for g in groups.values()
                 if len(g) > 1 and touched.intersection(g) for d in g[1:])


_SUMMARY_CACHE: SummaryCache | None = None


def _summary_cache() -> SummaryCache:
    """The process's summary cache (in the user cache folder), opened once."""
    global _SUMMARY_CACHE
    if _SUMMARY_CACHE is None or _SUMMARY_CACHE.path != SummaryCache.default_path():
        _SUMMARY_CACHE = SummaryCache()
    return _SUMMARY_CACHE


def usable_cpus() -> int:
    """Cores this process may run on (its CPU affinity where the OS says, else all)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_workers() -> int:
    """Parsing processes used when ``workers`` is not given: one per usable core, at most
    four; none on a single core, and none off Linux (workers would be spawned there, which
    requires the caller's script to have an ``if __name__ == "__main__":`` guard).

    Not "cores minus one for the embedder": parsing in this process already keeps two
    cores busy (the tokenizer is multi-threaded) while a worker's tokenizer must run on one,
    so on two cores one worker is slower than none and two are a quarter faster than none
    (qasper-dev, 281 papers, hash embedder). Four is plenty: a worker parses about 1 MB of
    Markdown a second, more than any real embedder consumes per core.
    """
    if not sys.platform.startswith("linux"):
        return 0
    cpus = usable_cpus()
    return 0 if cpus < 2 else min(4, cpus)


def embed_checked(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """``embedder``'s float32 vectors of ``texts``; raises
    :class:`~proxy_pointer.errors.ConfigError` when their shape is wrong."""
    vecs = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    expected = (len(texts), embedder.dimension)
    if vecs.shape != expected:
        raise ConfigError(f"embedder {embedder.model_id} returned shape {vecs.shape}, "
                          f"expected {expected}")
    return vecs


def ingest(sources: Sequence[Source], *, embedder: Embedder, config: ChunkConfig,
           recover_headings: bool = False, encoding: str = "utf-8",
           noise_llm: TextGenerator | None = None,
           stored_sha256: Mapping[str, str] | None = None,
           stored_vectors: Callable[[str], Iterable[tuple[str, np.ndarray]]] | None = None,
           batch_bytes: int = DEFAULT_BATCH_BYTES, workers: int | None = None,
           progress: Callable[[IngestProgress], None] | None = None,
           started: float | None = None, executor: str = "local") -> IngestResult:
    """Read, parse and embed ``sources`` batch by batch; returns what to commit.

    A document whose text hashes to its ``stored_sha256`` entry is unchanged and not parsed.
    ``stored_vectors(doc_id)`` yields ``(embed_text, vector)`` of a stored document's
    current chunks: once that document is re-parsed, its unchanged chunk texts reuse those
    vectors. Texts are embedded once per run, however many documents share them.

    ``batch_bytes`` bounds the text per batch (at least one file). ``workers``: parsing
    processes (``0``: parse here, in turn with embedding; ``None``: :func:`default_workers`).
    A pool is used only for more than one batch, and never when the noise filter asks an
    LLM (the client object stays in this process). ``progress`` gets an
    :class:`IngestProgress` after every embedder call and at the end of every batch.

    ``executor="ray"`` parses and embeds on Ray actors (``workers`` of them; ``None`` or
    ``0``: one per CPU of the cluster), see :mod:`.distributed`: same staged documents,
    chunks and counts, vectors equal up to float noise; ``progress`` then comes per batch.

    Raises :class:`~proxy_pointer.errors.ConfigError` for a bad argument, an embedder
    returning vectors of the wrong shape, or ``"ray"`` without Ray installed (or with an
    index-time LLM); errors of the embedder propagate unchanged. Unreadable files are
    reported in ``IngestResult.skipped``, not raised.
    """
    if not isinstance(batch_bytes, int) or batch_bytes < 1:
        raise ConfigError(f"batch_bytes must be a positive integer, got {batch_bytes!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 0):
        raise ConfigError(f"workers must be an integer >= 0, got {workers!r}")
    if executor not in EXECUTORS:
        raise ConfigError(f"executor must be 'local' or 'ray', got {executor!r}")
    run = _Run(embedder, config, recover_headings, encoding, noise_llm,
               stored_sha256 or {}, stored_vectors, progress,
               time.perf_counter() if started is None else started)
    batches = _plan(sources, batch_bytes)
    run.total_docs = len(sources)
    run.total_bytes = sum(size for batch in batches for _, size in batch)
    if executor == "ray":
        return _ingest_on_ray(run, sources, batch_bytes, workers)
    n = default_workers() if workers is None else workers
    if n == 0 or len(batches) < 2 or config.noise.use_llm or config.summaries:
        pool: ProcessPoolExecutor | None = None
    else:
        pool = _start_pool(n)
    try:
        run.report()
        pending = run.read(batches[0], pool) if batches else []
        for i in range(len(batches)):
            # Queue the next batch's parsing before embedding this one: the pool works on
            # it meanwhile. Without a pool this just reads the files.
            following = run.read(batches[i + 1], pool) if i + 1 < len(batches) else []
            run.finish(pending, len(batches[i]), sum(size for _, size in batches[i]))
            pending = following
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return run.result


def _ingest_on_ray(run: _Run, sources: Sequence[Source], batch_bytes: int,
                   workers: int | None) -> IngestResult:
    """Batches read here, parsed and embedded by Ray actors (a bounded number in flight),
    staged here in order."""
    if run.config.noise.use_llm or run.config.summaries:
        raise ConfigError("executor='ray' cannot use an index-time LLM (noise_llm); "
                          "use executor='local'")
    from .distributed import RayWorkers

    pool = RayWorkers(run.embedder, run.config, run.recover_headings, workers)
    # A batch is an actor's unit of work: at least four per actor, so that all of them
    # work, and evenly, however small the update.
    batches = _plan(sources, max(1, min(batch_bytes, run.total_bytes // (4 * pool.size))))
    # Batch -> (read documents, their stored vectors, the batch's counts, the actor's result)
    flight: deque[tuple[list[_Pending], list[tuple[str, np.ndarray]], int, int, object]]
    flight = deque()
    try:
        run.report()
        for i in range(len(batches) + 1):
            if i < len(batches):
                pending = run.read(batches[i], None)
                stored = [pair for src, *_ in pending if run.stored_vectors is not None
                          for pair in run.stored_vectors(src.doc_id)]
                handle = pool.submit([(text, src.doc_id, src.source_path, src.kind, digest)
                                      for src, text, digest, _ in pending],
                                     skip=frozenset(text for text, _ in stored))
                flight.append((pending, stored, len(batches[i]),
                               sum(size for _, size in batches[i]), handle))
            while flight and (i == len(batches) or len(flight) > pool.window):
                pending, stored, n_docs, size, handle = flight.popleft()
                t = time.perf_counter()
                done = pool.result(handle)
                run.result.timings["waiting"] += time.perf_counter() - t
                run.result.timings["embedding"] += done.embed_seconds
                run.known.update((text, vec) for text, vec in stored
                                 if text not in run.known)
                run.finish(pending, n_docs, size,
                           remote=(done.parsed, dict(zip(done.texts, done.vectors, strict=True))))
    finally:
        pool.close()
    return run.result


# --- the pipeline -------------------------------------------------------------------------
def _digest(text: str) -> str:
    return _sha256(text.encode("utf-8")).hexdigest()


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


# A document read and queued for parsing: its source, text, digest and either the worker's
# future or None (parse here when the batch is finished).
_Pending = tuple[Source, str, str, Future[ParsedDocument] | None]


class _Run:
    """State of one :func:`ingest` call: counters, reusable vectors, what is staged."""

    def __init__(self, embedder: Embedder, config: ChunkConfig, recover_headings: bool,
                 encoding: str, noise_llm: TextGenerator | None,
                 stored_sha256: Mapping[str, str],
                 stored_vectors: Callable[[str], Iterable[tuple[str, np.ndarray]]] | None,
                 progress: Callable[[IngestProgress], None] | None, started: float) -> None:
        self.embedder, self.config = embedder, config
        self.recover_headings, self.encoding, self.noise_llm = recover_headings, encoding, noise_llm
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

    def read(self, batch: list[tuple[Source, int]], pool: ProcessPoolExecutor | None
             ) -> list[_Pending]:
        """Read a batch, set aside unchanged and unreadable files, queue the rest."""
        out: list[_Pending] = []
        for src, _ in batch:
            text = src.text if src.text is not None else self._read_file(src.source_path)
            if text is None:
                continue
            digest = _digest(text)
            if self.stored_sha256.get(src.doc_id) == digest:
                self.result.unchanged.append(src.doc_id)
                continue
            fut = None if pool is None else pool.submit(
                parse_document, text, src.doc_id, src.source_path, src.kind, self.config,
                self.recover_headings, digest=digest)
            out.append((src, text, digest, fut))
        return out

    def _read_file(self, path: str) -> str | None:
        try:
            return read_document(path, encoding=self.encoding)
        except DocumentError as e:
            self.result.skipped.append(str(e))
        except OSError as e:
            self.result.skipped.append(f"{path}: {e.strerror or e}")
        return None

    def finish(self, pending: list[_Pending], n_docs: int, batch_size: int,
               remote: tuple[list[ParsedDocument], dict[str, np.ndarray]] | None = None
               ) -> None:
        """Collect a batch's parses, embed its new texts, stage its documents; ``n_docs``
        and ``batch_size``: the whole batch's documents and bytes, for progress.

        ``remote``: the batch parsed elsewhere, with vectors of (at least) its texts not
        known here; the caller has already added the stored vectors to ``known``."""
        timings = self.result.timings
        parsed: list[tuple[str, ParsedDocument]] = []
        for i, (src, text, digest, fut) in enumerate(pending):
            if remote is not None:
                p = remote[0][i]
            elif fut is None:
                p = parse_document(text, src.doc_id, src.source_path, src.kind, self.config,
                                   self.recover_headings, digest=digest,
                                   noise_llm=self.noise_llm)
            else:
                t = time.perf_counter()
                p = fut.result()
                timings["waiting"] += time.perf_counter() - t
            timings["tree"] += p.tree_seconds
            timings["chunking"] += p.chunk_seconds
            self.result.sections_skipped += p.sections_skipped
            parsed.append((text, p))
            if self.stored_vectors is not None and remote is None:
                for embed_text, vec in self.stored_vectors(src.doc_id):
                    self.known.setdefault(embed_text, vec)
        todo = sorted({c.embed_text for _, p in parsed for c in p.chunks
                       if c.embed_text not in self.known and c.embed_text not in self.fresh})
        t = time.perf_counter()
        if remote is not None:
            self.fresh.update((text, remote[1][text]) for text in todo)
            self.result.embedded += len(todo)
            todo = []
        for start in range(0, len(todo), EMBED_STEP):
            step = todo[start:start + EMBED_STEP]
            self.fresh.update(zip(step, self._embed(step), strict=True))
            self.result.embedded += len(step)
            done = min(start + EMBED_STEP, len(todo))
            self.report(self.bytes_done + batch_size * done // (len(todo) + 1))
        timings["embedding"] += time.perf_counter() - t
        d = self.embedder.dimension
        for text, p in parsed:
            vecs = (np.stack([self._vector(c.embed_text) for c in p.chunks]) if p.chunks
                    else np.zeros((0, d), np.float32))
            self.result.staged[p.record.doc_id] = DocumentParts(p.record, text, p.chunks, vecs,
                                                                p.tree_json)
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

    def _embed(self, texts: list[str]) -> np.ndarray:
        return embed_checked(self.embedder, texts)


# --- the parsing pool ---------------------------------------------------------------------
def _start_pool(workers: int) -> ProcessPoolExecutor:
    """A pool whose worker processes exist when this returns.

    On Linux the workers are forked: no start-up cost (the parser's modules are already
    imported) and, unlike "spawn" and "forkserver", no re-import of the caller's
    ``__main__``, so a script without an ``if __name__ == "__main__":`` guard still works.
    Forking a process that has threads (an ONNX Runtime or PyTorch pool, the tokenizer's)
    is safe here because a worker only runs the pure-Python parser and the tokenizer (which
    notices the fork and drops its thread pool), never code whose locks those threads might
    hold; and the workers are forked now, before this run embeds anything. Elsewhere (only
    with an explicit ``workers``) they are spawned: scripts then need the ``__main__`` guard.
    """
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    pool = ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context(method),
                               initializer=_worker_init, initargs=(os.getpid(),))
    pool.submit(os.getpid).result()  # with fork, the first submit forks every worker
    return pool


def _worker_init(parent: int) -> None:
    # Ctrl-C reaches the whole process group: the parent handles it and shuts the pool
    # down; workers dying on it would only print tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # One tokenizer thread per worker: the workers already take one core each.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """A worker outlives a parent killed by SIGKILL (it blocks reading its task queue,
    whose write end it inherited): notice the re-parenting and leave."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)
