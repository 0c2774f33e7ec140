"""Ingestion: documents read, parsed and embedded in bounded batches, staged for one commit.

``parsing.py`` (one document into tree, chunks and record), ``executor.py`` (the
:class:`Executor` protocol: where batches are parsed, and perhaps embedded;
:class:`LocalExecutor`, a process pool or this process), ``ray.py`` (:class:`RayExecutor`,
Ray actors; needs ``proxy-pointer[ray]``), ``pipeline.py`` (:func:`ingest`, the one loop over
batches, written against :class:`Executor`), ``factory.py`` (executors by name, for the CLI).

>>> from proxy_pointer.index import Index                                  # doctest: +SKIP
>>> Index.build(["docs/"], executor=RayExecutor(workers=8))                # doctest: +SKIP
"""

from .executor import (
    EMBED_STEP,
    Batch,
    Executor,
    Job,
    LocalExecutor,
    check_workers,
    default_workers,
    embed_checked,
    usable_cpus,
)
from .factory import EXECUTORS, make_executor
from .parsing import (
    ParsedDocument,
    ReadDocument,
    Source,
    duplicate_pairs,
    parse_document,
    text_digest,
)
from .pipeline import (
    DEFAULT_BATCH_BYTES,
    FIRST_EMBED_STEP,
    LARGE_FILE_BYTES,
    MAX_FILE_BYTES,
    PAGE_BYTES,
    PARSE_SHARE,
    IngestProgress,
    IngestResult,
    UpdateReport,
    ingest,
    run_order,
    source_bytes,
)
from .ray import RAY_HINT, RayExecutor, start_ray

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "EMBED_STEP",
    "EXECUTORS",
    "FIRST_EMBED_STEP",
    "LARGE_FILE_BYTES",
    "MAX_FILE_BYTES",
    "PAGE_BYTES",
    "PARSE_SHARE",
    "RAY_HINT",
    "Batch",
    "Executor",
    "IngestProgress",
    "IngestResult",
    "Job",
    "LocalExecutor",
    "ParsedDocument",
    "RayExecutor",
    "ReadDocument",
    "Source",
    "UpdateReport",
    "check_workers",
    "default_workers",
    "duplicate_pairs",
    "embed_checked",
    "ingest",
    "make_executor",
    "parse_document",
    "run_order",
    "source_bytes",
    "start_ray",
    "text_digest",
    "usable_cpus",
]
