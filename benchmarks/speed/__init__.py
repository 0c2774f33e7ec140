"""What the library costs: indexing, embedding on each CPU path, parsing, conversion,
queries, routing, serving, Ray and Milvus, and the capacity model built from them.

Each module is a script: ``python -m benchmarks.speed.<name>`` from the repository root;
its results go to ``benchmarks/results/<name without bench_>/``."""
