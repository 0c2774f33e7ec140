"""Ingestion on Ray: :class:`RayExecutor`, actors that parse and embed whole batches.

The pipeline (:func:`~proxy_pointer.ingest.ingest`) keeps reading, the SHA-256 checks
(unchanged documents are skipped exactly as in a local run), vector reuse and staging in
this process; it hands each batch of changed documents to the executor. An actor parses
every document of the batch and embeds the batch's distinct chunk texts, except those the
pipeline already holds vectors for (the stored chunks of re-parsed documents). The embedder
is rebuilt once per actor from its ``model_id``
(:func:`~proxy_pointer.embeddings.embedder_from_id`; a :class:`CachedEmbedder` is rebuilt
around the same cache folder, which on one machine is the same SQLite file), or, for an
embedder no id describes, unpickled from a copy; the model loads once per actor, not per batch.

Each actor takes one CPU and runs its model on one thread (``OMP_NUM_THREADS``, which ONNX
Runtime and PyTorch follow): with one actor per core, more threads only oversubscribe the
cores.

Ray is an optional dependency (``pip install 'proxy-pointer[ray]'``), imported when a run
starts. ``RAY_ADDRESS`` names a running cluster to join (its nodes need proxy-pointer
installed); without it a local Ray is started with one CPU per usable core and no dashboard.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np

from ..embeddings import CachedEmbedder, Embedder, embedder_from_id
from ..errors import ConfigError, ExecutorError, ProxyPointerError
from ..package import needs
from ..parse.chunking import ChunkConfig
from ..vocab.filings import FILINGS, Vocabulary
from .executor import EMBED_STEP, Batch, Job, check_workers, embed_checked, usable_cpus
from .parsing import ParsedDocument, ReadDocument

__all__ = ["RAY_HINT", "RayExecutor", "start_ray"]

RAY_HINT = needs("executor='ray'", "Ray", "ray")


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_HINT) from None
    return ray


def start_ray() -> Any:
    """The ``ray`` module, connected: to ``RAY_ADDRESS`` when set, else to a local Ray
    started here (one CPU per usable core, no dashboard, quiet). A Ray that the caller
    initialised already is used as it is. Raises :class:`ConfigError` without Ray."""
    ray = _ray()
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS") or None
        options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
        if address is None:
            options.update(num_cpus=usable_cpus(), include_dashboard=False,
                           # Actors must import this very package, installed or not.
                           runtime_env={"env_vars": {"PYTHONPATH": _package_root()}})
        try:
            ray.init(address=address, **options)
        except Exception as e:  # Ray raises several kinds (timeouts, connection, runtime)
            where = f"at RAY_ADDRESS={address}" if address else "on this machine"
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            raise ExecutorError(
                f"could not start or reach Ray {where}: {first} (check `ray status`, or "
                "index without --executor ray)") from None
    return ray


def _package_root() -> str:
    """PYTHONPATH for actors: the folder holding ``proxy_pointer/``, then the caller's."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    extra = os.environ.get("PYTHONPATH")
    return os.pathsep.join([root, extra]) if extra else root


def _recipe(embedder: Embedder, dumps: Callable[[Any], bytes]
            ) -> tuple[str, bytes | None, str | None]:
    """How an actor gets ``embedder``: ``(model_id, None, cache_dir)`` when the id rebuilds
    it, else ``(model_id, embedder pickled by dumps, cache_dir)``; ``cache_dir`` for a
    CachedEmbedder."""
    cache_dir = None
    if isinstance(embedder, CachedEmbedder):
        cache_dir = str(embedder.cache_dir)
        embedder = embedder.inner
    try:
        embedder_from_id(embedder.model_id)
        return embedder.model_id, None, cache_dir
    except ConfigError:
        pass
    try:
        return embedder.model_id, dumps(embedder), cache_dir
    except Exception as e:
        raise ConfigError(
            f"executor='ray' cannot hand embedder {embedder.model_id!r} to its workers: it is "
            f"not a known embedder id and cannot be pickled ({e})") from None


class _Worker:
    """One actor: an embedder loaded once, then any number of batches."""

    def __init__(self, recipe: tuple[str, bytes | None, str | None],
                 config: ChunkConfig, recover_headings: bool, threads: int,
                 vocabulary: Vocabulary = FILINGS) -> None:
        # Before any model library loads: one thread per actor (see the module docstring).
        os.environ["OMP_NUM_THREADS"] = str(threads)
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        model_id, blob, cache_dir = recipe
        inner: Embedder = (embedder_from_id(model_id) if blob is None else pickle.loads(blob))
        self.embedder: Embedder = (inner if cache_dir is None
                                   else CachedEmbedder(inner, cache_dir))
        self.config, self.recover_headings = config, recover_headings
        self.vocabulary = vocabulary

    def run(self, docs: list[ReadDocument], skip: frozenset[str]) -> Batch:
        parsed = [d.parse(self.config, self.recover_headings, tokenizer=self.embedder.tokenizer,
                          vocabulary=self.vocabulary) for d in docs]
        todo = sorted({c.embed_text for p in parsed if isinstance(p, ParsedDocument)
                       for c in p.chunks} - skip)
        t = time.perf_counter()
        parts = [embed_checked(self.embedder, todo[i:i + EMBED_STEP])
                 for i in range(0, len(todo), EMBED_STEP)]
        vectors = (np.concatenate(parts) if parts
                   else np.zeros((0, self.embedder.dimension), np.float32))
        return Batch(parsed, todo, vectors, time.perf_counter() - t)


class RayExecutor:
    """Ray actors that parse and embed batches (an :class:`~.executor.Executor`).

    ``workers``: actors to start per run (``None`` or ``0``: one per CPU of the Ray
    cluster), one CPU each (:attr:`size` once started). :attr:`window` is how many batches
    may be in flight at once (two per actor, so none waits while the pipeline stages a
    result). Same staged documents, chunks and counts as a local run, vectors equal up to
    float noise; progress comes per batch. :meth:`start` raises :class:`ConfigError`
    without Ray, for an embedder the actors cannot rebuild, or for an index-time LLM (the
    client cannot travel to actors).

    >>> RayExecutor(workers=2).workers      # Ray itself starts with the first run
    2
    """

    def __init__(self, workers: int | None = None) -> None:
        check_workers(workers)
        self.workers = workers
        self.size = self.window = 0
        self._ray: Any = None
        self._actors: list[Any] = []
        self._load: list[list[Any]] = []  # refs in flight per actor
        self._dimension = 0

    def start(self, job: Job, *, batches: int) -> Self:
        if job.config.noise.use_llm or job.config.summaries:
            raise ConfigError("executor='ray' cannot use an index-time LLM (index_llm); "
                              "use executor='local'")
        # cloudpickle: an embedder class defined in the caller's script travels too.
        recipe = _recipe(job.embedder, _ray().cloudpickle.dumps)  # before Ray starts (slow)
        self._ray = ray = start_ray()
        n = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor = ray.remote(num_cpus=1)(_Worker)
        self._actors = [actor.remote(recipe, job.config, job.recover_headings, 1,
                                     job.vocabulary) for _ in range(n)]
        self._load = [[] for _ in range(n)]
        self._dimension = int(job.embedder.dimension)
        self.size, self.window = n, 2 * n
        return self

    def batch_bytes(self, requested: int, total: int) -> int:
        # A batch is an actor's unit of work: at least four per actor, so that all of them
        # work, and evenly, however small the update.
        return max(1, min(requested, total // (4 * max(1, self.size))))

    def submit(self, docs: Sequence[ReadDocument], *, skip: frozenset[str] = frozenset()
               ) -> Any:
        """Start parsing and embedding ``docs`` on the least busy actor; texts in ``skip``
        are not embedded. Returns a handle for :meth:`result`."""
        ray = self._ray
        if not docs:
            return ray.put(Batch([], [], np.zeros((0, self._dimension), np.float32)))
        refs = [r for load in self._load for r in load]
        finished, _ = ray.wait(refs, num_returns=len(refs), timeout=0) if refs else ([], [])
        gone = set(finished)
        for load in self._load:
            load[:] = [r for r in load if r not in gone]
        i = min(range(len(self._actors)), key=lambda k: len(self._load[k]))
        ref = self._actors[i].run.remote(list(docs), skip)
        self._load[i].append(ref)
        return ref

    def result(self, handle: Any) -> Batch:
        """The batch's :class:`~.executor.Batch`, once ready. An error on the actor is
        raised here as it was raised there (an :class:`EmbeddingError` stays one); a lost
        actor raises :class:`ProxyPointerError`."""
        ray = self._ray
        t = time.perf_counter()
        try:
            batch: Batch = ray.get(handle)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause
            if isinstance(cause, BaseException):
                raise cause from None
            raise
        except ray.exceptions.RayError as e:
            raise ProxyPointerError(f"a Ray worker was lost while ingesting: {e}") from None
        return Batch(batch.parsed, batch.texts, batch.vectors, batch.embed_seconds,
                     wait_seconds=time.perf_counter() - t)

    def close(self) -> None:
        """Stop the actors (Ray itself keeps running for the next run)."""
        for a in self._actors:
            self._ray.kill(a)
        self._actors, self._load = [], []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
