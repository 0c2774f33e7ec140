"""Where an ingest run's batches are parsed: the :class:`Executor` protocol, and
:class:`LocalExecutor`, this machine (a pool of worker processes, or this process).

The pipeline (:func:`~proxy_pointer.ingest.ingest`) reads each batch, hands its changed
documents to the executor (:meth:`~Executor.submit`) and stages the parsed documents it gets
back (:meth:`~Executor.result`), in order. An executor may embed a batch's chunk texts too
(:class:`~proxy_pointer.ingest.RayExecutor` does, on its actors); the pipeline embeds here
whatever texts a :class:`Batch` brings no vector for, so a local executor only parses.
Another backend is a new module with a class that satisfies :class:`Executor`.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

import numpy as np

from ..embeddings import Embedder
from ..errors import ConfigError
from ..parse.chunking import ChunkConfig
from ..vocab.filings import FILINGS, Vocabulary
from .parsing import FailedDocument, ParsedDocument, ReadDocument

if TYPE_CHECKING:
    from ..llm.base import LLM

__all__ = ["EMBED_STEP", "Batch", "Executor", "Job", "LocalExecutor", "check_workers",
           "default_workers", "embed_checked", "usable_cpus"]

#: Texts per embedder call, in the ingesting process and on Ray actors alike.
EMBED_STEP = 256


@dataclass(frozen=True)
class Job:
    """What every batch of one ingest run is parsed and embedded with."""

    embedder: Embedder
    config: ChunkConfig
    recover_headings: bool = False
    index_llm: LLM | None = None  # only where parsing runs in this process
    # Called after each PDF page converted in this process (progress); never sent elsewhere.
    on_page: Callable[[], None] | None = None
    #: what documents are read with (their cards): it travels to workers as its file
    vocabulary: Vocabulary = FILINGS


@dataclass(frozen=True)
class Batch:
    """An executor's result for one batch: the documents parsed (in the order submitted);
    the texts it embedded and their vectors (row ``i`` is ``texts[i]``; none when it left
    embedding to the pipeline); the seconds it spent embedding, and those the ingesting
    process spent waiting for this result."""

    parsed: list[ParsedDocument | FailedDocument]
    texts: list[str]
    vectors: np.ndarray
    embed_seconds: float = 0.0
    wait_seconds: float = 0.0


@runtime_checkable
class Executor(Protocol):
    """Where an ingest run's batches are parsed (and perhaps embedded).

    Per run, the pipeline calls :meth:`start` (``with executor.start(job, batches=n):``,
    whose end calls :meth:`close`), asks :meth:`batch_bytes` how big to cut the batches,
    then :meth:`submit` for each batch in order, taking the :meth:`result` of the oldest
    once more than :attr:`window` others are submitted after it. An executor object may
    serve several runs, one at a time.
    """

    @property
    def window(self) -> int:
        """Batches submitted ahead of the one being staged (at least 1)."""
        ...

    def start(self, job: Job, *, batches: int) -> Self:
        """Get ready to run ``job`` over about ``batches`` batches; returns ``self``.
        Raises :class:`~proxy_pointer.errors.ConfigError` for a job it cannot run."""
        ...

    def batch_bytes(self, requested: int, total: int) -> int:
        """Text per batch for a run of ``total`` bytes when the caller asked ``requested``."""
        ...

    def submit(self, docs: Sequence[ReadDocument], *, skip: frozenset[str] = frozenset()
               ) -> object:
        """Start on one batch; texts in ``skip`` need no vector. Returns a handle for
        :meth:`result`."""
        ...

    def result(self, handle: object) -> Batch:
        """The batch of ``handle``, once done; an error parsing or embedding it is raised
        here."""
        ...

    def close(self) -> None:
        """End the run: stop what :meth:`start` started."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


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


def check_workers(workers: int | None) -> None:
    """Raises :class:`~proxy_pointer.errors.ConfigError` unless ``workers`` is ``None`` or
    an integer >= 0."""
    if workers is not None and (not isinstance(workers, int) or workers < 0):
        raise ConfigError(f"workers must be an integer >= 0, got {workers!r}")


def embed_checked(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """``embedder``'s float32 vectors of ``texts``; raises
    :class:`~proxy_pointer.errors.ConfigError` when their shape is wrong."""
    vecs = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    expected = (len(texts), embedder.dimension)
    if vecs.shape != expected:
        raise ConfigError(f"embedder {embedder.model_id} returned shape {vecs.shape}, "
                          f"expected {expected}")
    return vecs


@dataclass(frozen=True)
class _Queued:
    """A submitted batch: its documents and, with a pool, their parses under way."""

    docs: tuple[ReadDocument, ...]
    futures: tuple[Future[ParsedDocument | FailedDocument], ...] | None


class LocalExecutor:
    """Parsing on this machine, embedding left to the pipeline (here, in this process).

    ``workers``: parsing processes that work on the next batch while this process embeds
    the current one (``None``: :func:`default_workers`; ``0``: parse here, in turn with
    embedding). The pool is started only for a run of more than one batch, and never when
    the noise filter or summaries ask an LLM (the client object stays in this process).
    The first batch is parsed here, while the pool starts on the second, so that its pages
    are counted as they are read (``Job.on_page``).
    Raises :class:`~proxy_pointer.errors.ConfigError` for a bad ``workers``.

    >>> LocalExecutor(workers=0).window
    1
    """

    window = 1  # parse batch i + 1 while batch i is embedded

    def __init__(self, workers: int | None = None) -> None:
        check_workers(workers)
        self.workers = workers
        self._job: Job | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._submitted = 0

    def start(self, job: Job, *, batches: int) -> Self:
        n = default_workers() if self.workers is None else self.workers
        self._job, self._submitted = job, 0
        if n > 0 and batches >= 2 and not job.config.noise.use_llm and not job.config.summaries:
            self._pool = _start_pool(n)
        return self

    def batch_bytes(self, requested: int, total: int) -> int:
        return requested

    def submit(self, docs: Sequence[ReadDocument], *, skip: frozenset[str] = frozenset()
               ) -> _Queued:
        job = self._started()
        self._submitted += 1
        if self._pool is None or self._submitted == 1:  # parsed in result(), after the
            return _Queued(tuple(docs), None)             # next batch is submitted
        pool = self._pool
        tokenizer = job.embedder.tokenizer
        return _Queued(tuple(docs), tuple(pool.submit(d.parse, job.config, job.recover_headings,
                                                      tokenizer=tokenizer,
                                                      vocabulary=job.vocabulary)
                                          for d in docs))

    def result(self, handle: object) -> Batch:
        job = self._started()
        if not isinstance(handle, _Queued):
            raise TypeError(f"not a handle of this executor: {handle!r}")
        waited = 0.0
        parsed: list[ParsedDocument | FailedDocument]
        if handle.futures is None:
            parsed = [d.parse(job.config, job.recover_headings, index_llm=job.index_llm,
                              tokenizer=job.embedder.tokenizer, on_page=job.on_page,
                              vocabulary=job.vocabulary)
                      for d in handle.docs]
        else:
            parsed = []
            for fut in handle.futures:
                t = time.perf_counter()
                parsed.append(fut.result())
                waited += time.perf_counter() - t
        return Batch(parsed, [], np.zeros((0, job.embedder.dimension), np.float32),
                     wait_seconds=waited)

    def close(self) -> None:
        pool, self._pool, self._job = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _started(self) -> Job:
        if self._job is None:
            raise RuntimeError("LocalExecutor.start() was not called")
        return self._job


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
    # Garbage the caller has not collected yet (an ONNX Runtime session of an embedder it
    # dropped) would be finalized in a forked worker, whose copies of that runtime's
    # threads do not exist: its destructor waits on them forever (a random-order test run
    # hung so). It is collected here, where they live; workers freeze what they inherit.
    gc.collect()
    pool = ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context(method),
                               initializer=_worker_init, initargs=(os.getpid(),))
    pool.submit(os.getpid).result()  # with fork, the first submit forks every worker
    return pool


def _worker_init(parent: int) -> None:
    gc.freeze()  # never finalize the parent's objects here (see _start_pool)
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
