"""What the library finds: evidence hit per question kind, per document shape, per
converter, routing over a shelf, against PageIndex and a local LLM.

Each module is a script: ``python -m benchmarks.quality.<name>`` from the repository root;
its results go to ``benchmarks/results/<name without bench_>/``."""
