"""First query in a fresh process: the BM25 index saved with the index vs rebuilt on load.

Each trial runs ``proxy-pointer query`` in a new Python process on an existing index, once
as saved (``bm25/`` in the generation: BM25 is loaded) and once on a copy whose ``bm25/``
folder was removed (what every index before the lexical index was saved looked like: BM25 is
rebuilt from every chunk's text on the first hybrid query). Trials alternate so both see the
same machine load. A second, in-process measurement splits the first query into opening the
index, getting the lexical index, and the query itself.

    python -m benchmarks.bench_first_query --index IDX [--trials 5] [--name first-query]

Writes ``benchmarks/results/<name>.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from proxy_pointer import Index
from proxy_pointer.stores import current_generation

from .common import RESULTS, ROOT, environment, run_child, write_report

QUESTION = "Which baselines do they compare against?"

_IN_PROCESS = r"""
import json, sys, time
t0 = time.perf_counter()
from proxy_pointer import Index
idx = Index.load(sys.argv[1])
t1 = time.perf_counter()
idx.embedder.embed_query("warm up the model")
t2 = time.perf_counter()
idx.lexical_search("warm up", 1)  # opens the saved BM25 index
t3 = time.perf_counter()
res = idx.retrieve(sys.argv[2])
t4 = time.perf_counter()
print(json.dumps({"open_s": t1 - t0, "model_s": t2 - t1, "lexical_s": t3 - t2,
                  "query_s": t4 - t3, "chunks": len(idx.chunks), "sections": len(res.sections)}))
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
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args()
    saved = Path(args.index)
    n_chunks = len(Index.load(saved).chunks)
    with tempfile.TemporaryDirectory() as tmp:
        rebuilt = Path(tmp) / "idx"
        shutil.copytree(saved, rebuilt, symlinks=True)
        gen = current_generation(rebuilt)
        if gen is None or not (gen / "bm25").is_dir():
            raise SystemExit(f"{saved}: not an index saved with its BM25 index")
        shutil.rmtree(gen / "bm25")
        cli: dict[str, list[float]] = {"saved": [], "rebuilt": []}
        stages: dict[str, list[dict[str, float]]] = {"saved": [], "rebuilt": []}
        for trial in range(args.trials):
            for kind, path in (("saved", saved), ("rebuilt", rebuilt)):
                cli[kind].append(_cli_seconds(path))
                stages[kind].append(_stages(path))
            print(f"trial {trial + 1}: cli saved {cli['saved'][-1]:.2f}s, "
                  f"rebuilt {cli['rebuilt'][-1]:.2f}s", file=sys.stderr)

    def med(kind: str, key: str) -> float:
        return statistics.median(s[key] for s in stages[kind])

    result = {
        "index_chunks": n_chunks, "trials": args.trials, "question": QUESTION,
        "cli_wall_s": {k: statistics.median(v) for k, v in cli.items()},
        "cli_wall_all_s": cli,
        "in_process_median_s": {k: {key: med(k, key) for key in
                                    ("open_s", "model_s", "lexical_s", "query_s")}
                                for k in ("saved", "rebuilt")},
        "environment": environment(),
    }
    s, r = result["in_process_median_s"]["saved"], result["in_process_median_s"]["rebuilt"]
    lines = [
        f"# First query in a fresh process ({n_chunks:,} chunks, median of {args.trials})",
        "",
        "| | BM25 saved with the index | BM25 rebuilt on load (before) | ratio |",
        "|---|---|---|---|",
        f"| `proxy-pointer query` wall time | {result['cli_wall_s']['saved']:.2f} s | "
        f"{result['cli_wall_s']['rebuilt']:.2f} s | "
        f"{result['cli_wall_s']['rebuilt'] / result['cli_wall_s']['saved']:.2f}x |",
    ]
    for key, label in (("open_s", "open the index"), ("model_s", "load the query model"),
                       ("lexical_s", "get the BM25 index"), ("query_s", "first query")):
        ratio = r[key] / s[key] if s[key] else float("nan")
        lines.append(f"| {label} | {s[key]:.3f} s | {r[key]:.3f} s | {ratio:.1f}x |")
    write_report(args.out_dir, args.name, result, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
