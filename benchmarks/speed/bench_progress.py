"""How soon indexing progress shows work done, this checkout against a baseline tree.

``python -m benchmarks.speed.bench_progress [--docs DIR] [--baseline DIR] [--runs N]``: for each
tree, a child process (``PYTHONPATH`` = the tree) loads the default embedder, embeds one
query so the model is warm, then times ``Index.update`` over ``--docs`` (default: the 22
financebench-dev PDFs) until the first progress event that shows work done (``pages_done``
where the tree has it, else ``bytes_done``) and exits; nothing is written. Trees alternate,
``--runs`` times each; the median is reported. Results:
``benchmarks/results/progress/progress.{json,md}``
(issue 49: a user indexing a shelf should see progress move from the first second).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import common
from ..common import ROOT

DOCS = ROOT.parent / "shared" / "data" / "financebench-dev" / "docs"
RESULTS = ROOT / "benchmarks" / "results" / "progress"

_CHILD = """
import os, sys, threading, time
from proxy_pointer.index import Index
idx = Index()
idx.embedder.embed_query("warm up")
t0 = time.perf_counter()
def seen(e):
    if getattr(e, "pages_done", 0) > 0 or e.bytes_done > 0:
        print(f"{time.perf_counter() - t0:.3f}", flush=True)
        os._exit(0)
threading.Timer(float(sys.argv[2]), lambda: (print("nan", flush=True), os._exit(0))).start()
idx.update([sys.argv[1]], progress=seen)
"""


def first_move(tree: Path, docs: Path, limit: float = 300.0) -> float:
    """Seconds from the start of an update to its first progress event with work done."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(docs), str(limit)], env=env,
                          capture_output=True, text=True, timeout=limit + 120, cwd="/")
    return float(done.stdout.strip().splitlines()[-1])


def measure(trees: dict[str, Path], docs: Path, runs: int) -> dict[str, Any]:
    seconds: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, tree in trees.items():
            seconds[name].append(first_move(tree, docs))
            print(f"[progress] {name}: {seconds[name][-1]:.2f} s", flush=True)
    files = sorted(p.name for p in docs.iterdir() if p.is_file())
    return {"docs": str(docs), "files": len(files), "runs": runs,
            "environment": common.environment(), "seconds": seconds,
            "median": {name: statistics.median(v) for name, v in seconds.items()}}


def write(out: dict[str, Any]) -> None:
    env = out["environment"]
    md = ["# Time to the first progress that shows work done", "",
          "From `python -m benchmarks.speed.bench_progress` (see its docstring): seconds from the "
          "start of `Index.update` to the first progress event with work done, the default "
          f"model loaded; {out['files']} files of `{Path(out['docs']).name}`, "
          f"{out['runs']} runs a tree, alternating, median. CPU: {env['cpu']}, "
          f"{env['cpus']} cores.", "",
          "| tree | median s | runs |", "|---|---:|---|"]
    md += [f"| {name} | {out['median'][name]:.2f} | "
           + ", ".join(f"{s:.2f}" for s in out["seconds"][name]) + " |"
           for name in out["seconds"]]
    common.write_report(RESULTS, "progress", out, md)
    print("\n".join(md))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=Path, default=DOCS)
    ap.add_argument("--baseline", type=Path, help="another checkout (a git worktree)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    trees = {"this checkout": ROOT}
    if args.baseline is not None:
        commit = common.git_state(args.baseline)["commit"] or args.baseline.name
        trees = {f"baseline ({commit[:7]})": args.baseline.resolve(), **trees}
    write(measure(trees, args.docs, args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
