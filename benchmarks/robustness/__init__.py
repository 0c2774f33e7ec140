"""What the library survives: killed writers, hostile and fuzzed input, generated HTTP
requests, and the public surfaces kept byte-identical across a refactor.

Each module is a script: ``python -m benchmarks.robustness.<name>`` from the repository root;
its results go to ``benchmarks/results/<name without bench_>/``."""
