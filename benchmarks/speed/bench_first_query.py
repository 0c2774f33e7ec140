"""First query in a fresh process on a saved index: wall time, and where it goes.

Each trial runs ``proxy-pointer query`` in a new Python process on an existing index, and a
second, in-process measurement splits the first query into opening the index, loading the
query model, getting the lexical (BM25) index of every segment, and the query itself.

Until the segment layout (schema 2), this script also timed a copy of the index without its
saved BM25 index, which was then rebuilt from every chunk's text on the first query
(``results/first-query.md`` keeps that run: 0.015 s loaded vs 2.2 s rebuilt). Segments
always carry their BM25 index, so that comparison no longer has a "before" to run.

    python -m benchmarks.speed.bench_first_query --index IDX [--trials 5] [--name first-query]

Writes ``benchmarks/results/first_query/<name>.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from proxy_pointer import Index

from ..common import RESULTS, ROOT, environment, run_child, write_report

QUESTION = "Which baselines do they compare against?"

_IN_PROCESS = r"""
import json, sys, time
t0 = time.perf_counter()
from proxy_pointer import Index
idx = Index.load(sys.argv[1])
t1 = time.perf_counter()
idx.embedder.embed_query("warm up the model")
t2 = time.perf_counter()
idx.reader.lexical_search("warm up", 1)  # opens the saved BM25 index
t3 = time.perf_counter()
res = idx.retrieve(sys.argv[2])
t4 = time.perf_counter()
print(json.dumps({"open_s": t1 - t0, "model_s": t2 - t1, "lexical_s": t3 - t2,
                  "query_s": t4 - t3, "chunks": len(idx.reader.chunks),
                  "sections": len(res.sections)}))
"""


def _cli_seconds(index: Path) -> float:
    return run_child([sys.executable, "-m", "proxy_pointer.cli", "query", "--index", str(index),
                      QUESTION], cwd=ROOT).seconds


def _stages(index: Path) -> dict[str, float]:
    return run_child([sys.executable, "-c", _IN_PROCESS, str(index), QUESTION], cwd=ROOT).json()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--name", default="first-query")
    ap.add_argument("--out-dir", default=str(RESULTS / "first_query"))
    args = ap.parse_args()
    saved = Path(args.index)
    n_chunks = len(Index.load(saved).reader.chunks)
    cli: list[float] = []
    stages: list[dict[str, float]] = []
    for trial in range(args.trials):
        cli.append(_cli_seconds(saved))
        stages.append(_stages(saved))
        print(f"trial {trial + 1}: cli {cli[-1]:.2f}s", file=sys.stderr)
    keys = ("open_s", "model_s", "lexical_s", "query_s")
    result = {
        "index_chunks": n_chunks, "trials": args.trials, "question": QUESTION,
        "cli_wall_s": statistics.median(cli), "cli_wall_all_s": cli,
        "in_process_median_s": {k: statistics.median(s[k] for s in stages) for k in keys},
        "environment": environment(),
    }
    med = result["in_process_median_s"]
    lines = [
        f"# First query in a fresh process ({n_chunks:,} chunks, median of {args.trials})",
        "",
        "| step | seconds |",
        "|---|---|",
        f"| `proxy-pointer query` wall time | {result['cli_wall_s']:.2f} |",
    ]
    for key, label in (("open_s", "open the index"), ("model_s", "load the query model"),
                       ("lexical_s", "get the BM25 indexes"), ("query_s", "first query")):
        lines.append(f"| {label} | {med[key]:.3f} |")
    write_report(args.out_dir, args.name, result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
