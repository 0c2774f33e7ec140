"""The retrieval benchmark's command line (``python -m benchmarks.run_benchmark``): its
options, and ``main``, which loads a dataset, runs every method and writes the report.
``main`` takes the embedder factory so that an experiment can wrap the default embedder
(``quality/bench_dense_view``) without reaching into this module."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

# Before anything imports huggingface_hub or tokenizers, which read these once.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from .. import common
from ..common import CACHE, RESULTS, ROOT
from .dataset import load_dataset
from .methods import DEFAULT_METHODS, METHODS, SCOPES
from .report import markdown_report, write_report
from .runner import run_benchmark

__all__ = ["OUT", "main", "parse_args"]

#: Where the retrieval benchmark's results go: one file set per dataset.
OUT = RESULTS / "retrieval"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Benchmark proxy-pointer against flat vector RAG, "
                                "BM25, PageIndex and a gold-section oracle.",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default=str(ROOT / "data" / "sample"),
                   help="dataset folder in FORMAT.md layout (default: data/sample)")
    p.add_argument("--scope", nargs="+", default=list(SCOPES), choices=SCOPES,
                   help="per-doc: search only the question's document; corpus: all of them")
    p.add_argument("--budgets", nargs="+", type=int, default=[500, 1000, 2000],
                   help="context budgets in MiniLM word pieces")
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS),
                   help=f"any of {', '.join(METHODS)}, or 'all' (default: all but pageindex)")
    p.add_argument("--limit", type=int, default=None,
                   help="first N questions only (and only their documents are indexed)")
    p.add_argument("--k", type=int, default=None,
                   help="proxy-pointer sections per query (default: the library default)")
    p.add_argument("--embedder", default="minilm",
                   help="minilm (default), hash[:dim] (fast, for smoke runs), st:<model>")
    p.add_argument("--cache-dir", default=str(CACHE),
                   help="embedding cache folder")
    p.add_argument("--no-cache", action="store_true", help="embed without the on-disk cache")
    p.add_argument("--out-dir", default=str(OUT))
    p.add_argument("--name", default=None, help="output file stem (default: the dataset's name)")
    p.add_argument("--no-memory", action="store_true",
                   help="skip the second, traced build that measures peak memory")
    p.add_argument("--answers", action="store_true",
                   help="also answer with the LLM of PROXY_POINTER_LLM/GEMINI_API_KEY and "
                        "score QASPER token F1")
    p.add_argument("--answer-budget", type=int, default=None,
                   help="budget whose contexts are answered (default: the largest)")
    p.add_argument("--details", action="store_true",
                   help="also write <name>.details.jsonl with one row per question and budget: "
                        "its scores and the SHA-256 of the context it packed")
    args = p.parse_args(argv)
    if args.methods == ["all"]:
        args.methods = list(METHODS)
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        p.error(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    if any(b <= 0 for b in args.budgets):
        p.error("budgets must be positive")
    return args


def main(argv: list[str] | None = None, *,
         make_embedder: Callable[[str, str | None], Any] = common.make_embedder) -> int:
    """Run the benchmark of ``argv``; ``make_embedder(spec, cache_dir)`` gives its embedder."""
    args = parse_args(argv)
    dataset = load_dataset(args.dataset, limit=args.limit)
    for w in dataset.warnings[:10]:
        print(f"[bench] warning: {w}", file=sys.stderr)
    embedder = make_embedder(args.embedder, None if args.no_cache else args.cache_dir)
    llm = None
    if args.answers:
        from proxy_pointer.llm import llm_from_env

        llm = llm_from_env()
        if llm is None:
            print("[bench] --answers: no LLM configured (set PROXY_POINTER_LLM or "
                  "GEMINI_API_KEY); answer quality not measured", file=sys.stderr)
    details: list[dict] | None = [] if args.details else None
    results = run_benchmark(dataset, methods=args.methods, scopes=args.scope,
                            budgets=args.budgets, embedder=embedder, k=args.k,
                            memory=not args.no_memory, llm=llm,
                            answer_budget=args.answer_budget, details=details)
    paths = write_report(results, args.out_dir, args.name)
    if details is not None:
        stem = paths["json"].with_suffix("")
        with open(f"{stem}.details.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in details)
    print(markdown_report(results))
    for kind, path in paths.items():
        print(f"[bench] wrote {kind}: {path}", file=sys.stderr)
    return 0
