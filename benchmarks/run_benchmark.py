#!/usr/bin/env python3
"""Benchmark proxy-pointer against flat vector RAG, BM25, PageIndex and a gold-section oracle.

Usage::

    python -m benchmarks.run_benchmark --dataset ../shared/data/qasper-dev \\
        --scope per-doc corpus --budgets 500 1000 2000 [--methods ...] [--limit N]

(from the repository root, which puts this checkout's ``proxy_pointer`` first on the path).

Writes ``benchmarks/results/retrieval/<dataset>.{json,md,png}`` and prints the Markdown report.
Progress goes to stderr. Every embedding method shares one embedder (the bundled MiniLM by
default) behind an on-disk cache in ``benchmarks/.work/cache``, so a rerun embeds nothing.
Methods: see ``--help``; ``pageindex`` is opt-in (its own virtualenv, created on first use;
set ``PAGEINDEX_LLM_MODEL`` for quality numbers, otherwise it reports call counts only).
"""

from __future__ import annotations

import sys

from .harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
