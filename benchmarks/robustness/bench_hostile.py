"""Hostile input: a 20 MB Markdown file on one line.

Usage::

    python -m benchmarks.robustness.bench_hostile [--mb 20] [--baseline DIR] [--skip-default]

1. **Fast embedder** (a child process): the file alone indexed with ``make_embedder("fast")``
   and saved; wall time and the process tree's peak RSS. Then a fresh child opens the index
   and asks two questions: the open time, the first query (the one that reaches the huge
   document first) and the second.
2. **Default embedder, with other files** (a child process): the file and the bundled
   sample's documents in one ``Index.update``, a progress callback recording when each
   document was finished: the other files must be done first, and progress must move while
   the large file is embedded.

``--baseline DIR`` runs step 1 with the ``proxy_pointer`` of another checkout too (a git
worktree of an older commit), on the same file, in the same run.
Writes ``benchmarks/results/hostile/hostile.{json,md}``.

``--inputs`` measures instead what each kind of hostile input (a month-like question, a card
filter over HTTP, a cover page naming a long company, a .docx that inflates) costs at 1x,
10x and 100x its size, with ``--baseline``'s code too (:mod:`.hostile_inputs`); writes
``benchmarks/results/hostile/hostile-inputs.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

from ..common import RESULTS, ROOT, WORK, environment, git_state, run_child, write_report
from ..harness import hostile_inputs

WORDS = ("the revenue of the company grew in fiscal year while costs fell and margins rose "
         "as demand for products held steady across regions").split()

# Each child script starts with this: its imports and its own memory high-water mark.
_PRELUDE = hostile_inputs.PRELUDE

_INDEX = _PRELUDE + """
from proxy_pointer.embeddings.factory import make_embedder
from proxy_pointer.index import Index
t = time.perf_counter()
idx = Index(embedder=make_embedder("fast"))
report = idx.update([sys.argv[1]])
idx.save(sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - t, "chunks": len(idx.reader.chunks),
                  "warnings": list(getattr(report, "warnings", ())), "hwm_mib": hwm()}))
"""

_QUERY = _PRELUDE + """
t = time.perf_counter()
from proxy_pointer.embeddings.factory import make_embedder
from proxy_pointer.index import Index
idx = Index.load(sys.argv[1], embedder=make_embedder("fast"))
opened = time.perf_counter() - t
out = {"open_s": opened}
for name, q in (("first_query_s", "revenue margins demand"), ("second_query_s", "costs fell")):
    t = time.perf_counter()
    r = idx.retrieve(q)
    out[name] = time.perf_counter() - t
    out[name.replace("_s", "_tokens")] = r.tokens_used
out["hwm_mib"] = hwm()
print(json.dumps(out))
"""

_DEFAULT_RUN = _PRELUDE + """
from pathlib import Path
from proxy_pointer.index import Index
events = []
idx = Index()
t = time.perf_counter()
def seen(p):
    events.append((time.perf_counter() - t, p.documents_done, p.documents_total,
                   p.bytes_done, p.bytes_total, p.chunks_done))
files = [Path(a) for a in sys.argv[1:]]
report = idx.update(files, progress=seen)
print(json.dumps({"seconds": time.perf_counter() - t, "events": events,
                  "chunks": len(idx.reader.chunks), "added": list(report.added),
                  "hwm_mib": hwm()}))
"""


def write_file(path: Path, mb: float, seed: int = 1) -> Path:
    """``mb`` megabytes of words on one line under one heading."""
    rng = random.Random(seed)
    parts, n = [], 0
    while n < mb * 1_000_000:
        w = rng.choice(WORDS)
        parts.append(w)
        n += len(w) + 1
    path.write_text("# Big\n\n" + " ".join(parts) + "\n", encoding="utf-8")
    return path


def _child(script: str, *args: str | Path, code: Path | None = None) -> tuple[dict, float]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if code is not None:
        env["PYTHONPATH"] = str(code)
    child = run_child([sys.executable, "-c", script, *map(str, args)], env=env,
                      cwd=code or ROOT)
    return json.loads(child.stdout.strip().splitlines()[-1]), child.peak_rss_mib


def fast(big: Path, work: Path, code: Path | None) -> dict:
    index = work / ("idx-baseline" if code else "idx")
    built, build_peak = _child(_INDEX, big, index, code=code)
    asked, query_peak = _child(_QUERY, index, code=code)
    # the process's own high-water mark; the tree sampler's where it saw more (workers)
    build_hwm, query_hwm = built.pop("hwm_mib"), asked.pop("hwm_mib")
    return {**built, "build_peak_mib": max(build_peak or 0, build_hwm), **asked,
            "query_peak_mib": max(query_peak or 0, query_hwm)}


def default_run(big: Path) -> dict:
    others = sorted((ROOT / "data" / "sample" / "docs").glob("*.md"))
    out, peak = _child(_DEFAULT_RUN, *others, big)
    peak = max(peak or 0, out.pop("hwm_mib"))
    events = out.pop("events")
    n = len(others) + 1
    others_done = next((e[0] for e in events if e[1] >= n - 1), None)
    during = [e for e in events if others_done is not None and e[0] > others_done and e[1] < n]
    return {**out, "peak_mib": peak, "documents": n, "other_files_done_s": others_done,
            "progress_events_while_large_file": len(during),
            "large_file_last": out["added"] and others_done is not None
            and others_done < out["seconds"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--baseline", type=Path, help="a checkout to measure step 1 with too")
    ap.add_argument("--skip-default", action="store_true", help="skip step 2")
    ap.add_argument("--out-dir", type=Path, default=RESULTS / "hostile")
    ap.add_argument("--inputs", action="store_true",
                    help="each hostile input kind at 1x, 10x and 100x (hostile_inputs.py)")
    args = ap.parse_args()
    if args.inputs:
        return _inputs(args.baseline, args.out_dir)
    WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        work = Path(tmp)
        big = write_file(work / "one-line.md", args.mb)
        results: dict = {"mb": args.mb, "bytes": big.stat().st_size,
                         "environment": environment()}
        results["fast"] = fast(big, work, None)
        print("[hostile] fast", results["fast"], flush=True)
        if args.baseline:
            results["baseline_commit"] = git_state(args.baseline).get("commit", "")[:7]
            results["fast_baseline"] = fast(big, work, args.baseline.resolve())
            print("[hostile] baseline", results["fast_baseline"], flush=True)
        if not args.skip_default:
            results["default"] = default_run(big)
            print("[hostile] default", results["default"], flush=True)
    write_report(args.out_dir, "hostile", results, _markdown(results, args.baseline))
    return 0


def _inputs(baseline: Path | None, out_dir: Path) -> int:
    """Each hostile input kind at growing sizes, this checkout and ``baseline``."""
    after = hostile_inputs.measure_all(None)
    before = hostile_inputs.measure_all(baseline.resolve()) if baseline else None
    commit = git_state(baseline).get("commit", "")[:7] if baseline else ""
    results = {"after": after, "before": before, "baseline_commit": commit,
               "environment": environment()}
    write_report(out_dir, "hostile-inputs", results,
                 hostile_inputs.markdown(after, before, commit))
    return 0


def _markdown(r: dict, baseline: Path | None) -> list[str]:
    lines = [f"# Hostile input: {r['mb']:.0f} MB of Markdown on one line", "",
             f"{r['environment'].get('cpus', '?')} cores. Fast embedder, the file alone: "
             "build (index and save) and a fresh process's open and first two queries; peaks "
             "are the process tree's RSS.", "",
             "| code | build s | build peak MiB | chunks | open s | first query s | "
             "second query s | query peak MiB |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [("now", r["fast"])]
    if "fast_baseline" in r:
        rows.insert(0, (f"before ({r.get('baseline_commit') or baseline})", r["fast_baseline"]))
    for name, f in rows:
        lines.append(f"| {name} | {f['seconds']:.1f} | {f['build_peak_mib']:.0f} | "
                     f"{f['chunks']:,} | {f['open_s']:.2f} | {f['first_query_s']:.2f} | "
                     f"{f['second_query_s']:.2f} | {f['query_peak_mib']:.0f} |")
    if r["fast"].get("warnings"):
        lines += ["", f"Warning: {r['fast']['warnings'][0]}"]
    d = r.get("default")
    if d:
        lines += ["", f"Default embedder, the file and the sample's {d['documents'] - 1} "
                  f"documents in one update: {d['seconds']:.0f} s in all, {d['chunks']:,} "
                  f"chunks, peak {d['peak_mib']:.0f} MiB; the other files were done at "
                  f"{d['other_files_done_s']:.1f} s and progress reported "
                  f"{d['progress_events_while_large_file']} times while the large file was "
                  "embedded."]
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
