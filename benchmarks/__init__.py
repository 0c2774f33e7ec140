"""The benchmarks: one package, each script a module run from the repository root.

    python -m benchmarks.run_benchmark --dataset data/sample --embedder hash --no-memory

:mod:`benchmarks.harness` is the retrieval benchmark's harness (datasets, methods, packing,
metrics, report); :mod:`benchmarks.common` holds what every script shares (report writer,
environment stamp, peak memory, percentiles, child processes). ``pageindex_runner.py`` is
the exception: a standalone script run by file path inside PageIndex's own virtualenv.
"""
