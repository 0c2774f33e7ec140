"""The benchmarks: one package, each script a module run from the repository root.

    python -m benchmarks.run_benchmark --dataset data/sample --embedder hash --no-memory

* :mod:`benchmarks.quality`, :mod:`benchmarks.speed`, :mod:`benchmarks.robustness`: the
  scripts, by what they measure; no script imports another.
* :mod:`benchmarks.harness`: what the scripts share beyond paths and reports: the
  retrieval benchmark (datasets, methods, packing, metrics, report; its command line is
  ``run_benchmark``), latency passes, crash machinery, fuzz targets and hostile inputs.
  ``harness/pageindex_runner.py`` and ``harness/ingest_profile.py`` also run as standalone
  scripts by file path (inside PageIndex's virtualenv; against another checkout).
* :mod:`benchmarks.common`: paths, report writer, environment stamp, peak memory,
  percentiles, child processes.
* ``results/<benchmark>/``: each benchmark's latest result (earlier ones are in git);
  ``results/notes/`` holds the written analyses that cite them.
"""
