"""What the benchmark scripts share beyond :mod:`benchmarks.common`.

The retrieval benchmark, run through ``python -m benchmarks.run_benchmark`` (its command
line is :mod:`.cli`); its modules follow the data: :mod:`.dataset` -> :mod:`.methods`
(build, retrieve) -> :mod:`.context` (pack under a budget) -> :mod:`.metrics` ->
:mod:`.report`, with :mod:`.runner` driving them and :mod:`.matching`, :mod:`.answers`,
:mod:`.llm_stub` and :mod:`.llama_server` beside. The other scripts' machinery:
:mod:`.latency` (whole-corpus query passes), :mod:`.crash` (killed writers and their
readers), :mod:`.shapes` (documents rewritten into shapes), :mod:`.fuzz_targets`,
:mod:`.hostile_inputs`, :mod:`.ingest_profile` and :mod:`.pageindex_runner` (the last two
also run as scripts by file path).

Importing this package imports nothing else: ``quality/bench_shapes`` reads
:mod:`.shapes` before it decides which checkout's ``proxy_pointer`` to measure.
"""
