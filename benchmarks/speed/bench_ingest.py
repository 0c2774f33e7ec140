"""Indexing throughput, per-stage profile, peak memory and retrieval quality per embedder mode.

Modes: ``today`` (bundled MiniLM on PyTorch, batch 32: the path before ONNX), ``default``
(the default embedder on this CPU's path: ``proxy_pointer.embeddings.cpu``), ``int8`` (ONNX,
int8 weights), ``fast`` (the static model distilled from MiniLM), ``hash`` (no model: for
smoke runs only). Each run is a fresh child process indexing the dataset end to end (read
-> tree -> chunks -> vectors -> saved index) with a cold embedding cache, so its wall time,
MB/s and peak RSS are its own. One-off model preparation (ONNX export, fast mode's
distillation) is done before timing, as it is once per machine.

* **Throughput**: MB/s and chunks/s per ``--modes``, with the stages of
  ``UpdateReport.timings`` (parse stages summed over the parse pool's worker processes) and
  its counts (``embedded``, ``reused``, ``deduplicated``, where the library reports them).
* **Memory**: each ``--memory-modes`` indexes ``--copies`` folders (1x, 4x, 20x: the dataset
  in sub-folders of hard links: the same texts, so the number of files, documents and
  chunks grows while a library that deduplicates texts embeds each one once; ``embedded``
  says how many it embedded). Peak RSS of the largest process: the
  indexing child's own ``VmHWM`` and the largest ``VmHWM`` among its parse-pool workers
  (sampled from ``/proc`` while they live, and ``ru_maxrss`` of the waited-for ones).
  Target: the largest process at Nx within 20% of 1x, or under 2 GB (2048 MiB).
* **Quality**: ``benchmarks.run_benchmark`` (proxy-pointer method, full retriever) on each
  mode's own vectors (the throughput run's cache), per-doc on the dataset and per-doc +
  corpus on each ``--quality-dataset``.

    python -m benchmarks.speed.bench_ingest --dataset ../shared/data/qasper-dev \
        --quality-dataset ../shared/data/finance-10k
    python -m benchmarks.speed.bench_ingest --quick --out-dir /tmp/ingest-smoke   # seconds

* **Baseline** (``--baseline DIR``, a checkout of an older commit, e.g. a git worktree): its
  ``default`` mode is timed in the same run, by that checkout's own code, as mode
  ``baseline``, and scored by its own ``run_benchmark`` (``--baseline-cache``: a warm cache
  of its own vectors, else its throughput run's). Issue 38's target: ``default`` at least 3x
  the baseline's chunks/s, any-hit no lower anywhere.
* **What is embedded** (:mod:`benchmarks.harness.ingest_profile`, on this checkout and the
  baseline's): chunks, distinct texts and word pieces per page, split into breadcrumbs,
  table rows and the rest.

Quality runs on ``--quality-dataset`` use ``--quality-cache``/``<mode>``: modes that share a
``model_id`` (``default``, ``fp32``, ``bf16``) must not read each other's vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..common import (
    BENCH,
    CACHE,
    RESULTS,
    ROOT,
    bench_command,
    environment,
    git_state,
    peak_rss_mib,
    run_child,
    status_mib,
    write_report,
)

MODES = {
    "today": "minilm-torch",
    "default": "minilm",
    "fp32": "minilm-fp32",
    "bf16": "minilm-bf16",
    "int8": "minilm-int8",
    "fast": "fast",
    "hash": "hash:384",
}

#: ``UpdateReport.timings`` keys in pipeline order; a library that does not time a stage
#: yet reads as 0. ``tokenize`` is the part of ``tree`` and ``chunking`` spent counting
#: tokens (not added to them); the parse stages are summed over worker processes.
STAGES = ("read", "convert", "tree", "tokenize", "chunking", "embedding", "waiting",
          "staging", "index", "write")
#: ``UpdateReport`` counts recorded when the library has them (None where it does not).
COUNTS = ("chunks", "embedded", "reused", "deduplicated")

#: Issue 26: the largest process at Nx copies within 20% of 1x, or under 2 GB.
MEMORY_RATIO, MEMORY_MIB = 1.2, 2048.0


def make_mode(mode: str):
    from proxy_pointer.embeddings import SentenceTransformerEmbedder, make_embedder

    if mode == "today":
        return SentenceTransformerEmbedder(backend="torch", batch_size=32, precision="fp32")
    return make_embedder(MODES[mode])


def prepare(mode: str) -> None:
    """Export / distil the mode's model once, outside the timed runs."""
    emb = make_mode(mode)
    emb.embed_documents(["warm up"])


# --------------------------------------------------------------------------- worker memory


def _children() -> set[str]:
    pids: set[str] = set()
    try:
        for task in Path("/proc/self/task").iterdir():
            try:
                pids.update((task / "children").read_text().split())
            except OSError:
                continue
    except OSError:
        pass
    return pids


class WorkerPeak:
    """The largest ``VmHWM`` among this process's child processes (the parse pool's
    workers) while a block runs, in MiB (``mib``; None when there were none or no
    ``/proc``). Sampled every ``interval`` seconds, since a worker's ``/proc`` entry goes
    when it exits; ``ru_maxrss`` of the children waited for during the block is folded in.
    Forked workers count the pages they share with this process at fork in their own RSS.
    """

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.mib: float | None = None
        self.workers = 0
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            for pid in _children():
                hwm = status_mib("VmHWM", pid)
                if hwm is not None:
                    self._seen.add(pid)
                    self.mib = max(self.mib or 0.0, hwm)
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> WorkerPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.workers = len(self._seen)
        try:
            import resource

            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            waited = peak / 2**20 if sys.platform == "darwin" else peak / 1024
        except (ImportError, OSError):
            waited = 0.0
        if waited:
            self.mib = max(self.mib or 0.0, waited)


# --------------------------------------------------------------------------- runs

def child(args: argparse.Namespace) -> None:
    """One timed indexing run; prints a JSON line."""
    from proxy_pointer.documents import discover
    from proxy_pointer.embeddings import CachedEmbedder
    from proxy_pointer.index import update_directory

    t0 = time.perf_counter()
    embedder = CachedEmbedder(make_mode(args.child), args.cache)
    sources = list(discover([args.docs]))
    nbytes = sum(s.path.stat().st_size for s in sources)
    with WorkerPeak() as workers:
        idx, report = update_directory(args.index, [args.docs], embedder=embedder)
    seconds = time.perf_counter() - t0
    own = peak_rss_mib()
    print(json.dumps({
        "mode": args.child, "seconds": seconds, "bytes": nbytes, "files": len(sources),
        "documents": len(idx), "chunks": report.chunks,
        "embedded": getattr(report, "embedded", None),
        "counts": {name: getattr(report, name, None) for name in COUNTS},
        "timings": dict(report.timings), "peak_rss_mib": own,
        "workers_peak_rss_mib": workers.mib, "workers": workers.workers,
        "largest_rss_mib": max(own, workers.mib or 0.0),
        "mb_per_s": nbytes / 1e6 / seconds, "chunks_per_s": report.chunks / seconds,
    }))


def _code(tree: Path | None) -> dict[str, Any]:
    """``run_child`` options that run a ``benchmarks`` command with ``tree``'s code."""
    if tree is None:
        return {}
    return {"cwd": tree, "env": {**os.environ, "PYTHONPATH": str(tree)}}


def index_in_child(mode: str, docs: Path, work: Path, tag: str = "",
                   tree: Path | None = None) -> dict:
    """One timed indexing run of ``mode`` on ``docs`` in a fresh child process; its row.
    ``tree``: another checkout whose code runs it (its ``default`` mode, named ``baseline``)."""
    name = f"{'baseline' if tree else mode}-{docs.name}{tag}"
    cache, index = work / f"cache-{name}", work / f"index-{name}"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(index, ignore_errors=True)
    done = run_child(bench_command("speed.bench_ingest", "--child", mode, "--docs", docs,
                                   "--cache", cache, "--index", index), **_code(tree))
    row = done.json()
    if tree is not None:
        row["mode"] = "baseline"
    row["cache"] = str(cache)
    # resource's ru_maxrss over the whole waited-for tree (an upper bound: see TreePeak).
    row["tree_peak_rss_mib"] = done.peak_rss_mib
    shutil.rmtree(index, ignore_errors=True)
    return row


def copies(docs: Path, n: int, work: Path) -> Path:
    """A folder holding ``n`` copies of ``docs`` (hard links where possible)."""
    target = work / f"docs-x{n}"
    if target.exists():
        return target
    for i in range(n):
        part = target / f"copy{i}"
        part.mkdir(parents=True)
        for f in sorted(docs.iterdir()):
            if f.is_file():
                try:
                    os.link(f, part / f.name)
                except OSError:
                    shutil.copy2(f, part / f.name)
    return target


def profile(docs: Path, tree: Path | None = None) -> dict:
    """:mod:`benchmarks.harness.ingest_profile` of ``docs`` with ``tree``'s library (default:
    this)."""
    env = {**os.environ, "PYTHONPATH": str(tree or ROOT)}
    return run_child([sys.executable, BENCH / "harness" / "ingest_profile.py", docs], env=env,
                     cwd=tree or ROOT).json()


def quality(dataset: Path, mode: str, cache: str, scopes: list[str], work: Path,
            tree: Path | None = None) -> dict:
    """Any-hit % per scope and budget of ``mode`` (``baseline``: ``tree``'s default)."""
    name = f"{dataset.name}-{mode}"
    spec = MODES["default" if mode == "baseline" else mode]
    run_child(bench_command(
        "run_benchmark", "--dataset", dataset, "--methods", "proxy-pointer", "--embedder", spec,
        "--cache-dir", cache, "--scope", *scopes, "--no-memory", "--name", name,
        "--out-dir", work), **_code(tree))
    data = json.loads((work / f"{name}.json").read_text())
    scopes_out = data["methods"]["proxy-pointer"]["scopes"]
    return {scope: {b: round(100 * v["any_hit"], 1)
                    for b, v in scopes_out[scope]["budgets"].items()} for scope in scopes}


# --------------------------------------------------------------------------- verdicts

def memory_verdicts(results: dict) -> dict[str, list[dict]]:
    """Per memory mode, per copies: the largest process, its ratio to the 1x run (the
    first of ``copies``) and whether the target holds (ratio <= 1.2 or < 2048 MiB)."""
    out: dict[str, list[dict]] = {}
    for mode, rows in results.get("memory", {}).items():
        base = _largest(rows[0]) if rows else 0.0
        out[mode] = []
        for n, r in zip(results["copies"], rows, strict=True):
            largest = _largest(r)
            ratio = largest / base if base else float("nan")
            out[mode].append({"copies": n, "largest_rss_mib": largest, "ratio": ratio,
                              "met": ratio <= MEMORY_RATIO or largest < MEMORY_MIB})
    return out


def _largest(row: dict) -> float:
    return row.get("largest_rss_mib") or row["peak_rss_mib"]


def _hits(results: dict, dataset: str, scope: str, mode: str) -> dict[str, float] | None:
    for q in results.get("quality", []):
        if q["dataset"] == dataset and q["mode"] == mode and scope in q["any_hit"]:
            return q["any_hit"][scope]
    return None


def _any2000(results: dict, dataset: str, scope: str, mode: str) -> float | None:
    hits = _hits(results, dataset, scope, mode)
    return None if hits is None else hits.get("2000")


def targets(results: dict) -> list[str]:
    """One line per target the results can answer, met or missed, from the numbers."""
    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    lines = []
    rows = {r["mode"]: r for r in results["throughput"]}

    def against_baseline(mode: str) -> tuple[float, str]:
        old, new = rows["baseline"]["seconds"], rows[mode]["seconds"]
        return old / new, f"{old / new:.2f}x ({old:.0f} s -> {new:.0f} s)"

    if "baseline" in rows and "default" in rows:
        x, text = against_baseline("default")
        cpu = results.get("environment", {}).get("cpu", "this CPU")
        lines.append(f"- Default indexes the folder >= 3x faster than the baseline (issues 38 "
                     f"and 50, on {cpu}): {verdict(x >= 3)}, {text}.")
    for mode in sorted(set(rows) - {"baseline", "default"}):
        if "baseline" in rows:
            lines.append(f"- `{mode}` against the baseline: {against_baseline(mode)[1]}.")
    for ds in dict.fromkeys(q["dataset"] for q in results.get("quality", [])):
        for scope in ("per-doc", "corpus"):
            old, new = (_hits(results, ds, scope, m) for m in ("baseline", "default"))
            if old and new:
                deltas = {b: new[b] - old[b] for b in old if b in new}
                lines.append(f"- Any-hit no lower than the baseline ({ds}, {scope}; issue 38): "
                             f"{verdict(min(deltas.values()) >= 0)}, "
                             + " / ".join(f"{d:+.1f}" for d in deltas.values())
                             + " at " + " / ".join(deltas) + " tokens.")
    if "today" in rows and "default" in rows:
        x = rows["default"]["chunks_per_s"] / rows["today"]["chunks_per_s"]
        lines.append(f"- Default >= 2x today's chunks/s (issue 10): {verdict(x >= 2)}, "
                     f"{x:.2f}x.")
    if "fast" in rows:
        mbs = rows["fast"]["mb_per_s"]
        lines.append(f"- Fast mode >= 1 MB/s end to end (issue 10): {verdict(mbs >= 1)}, "
                     f"{mbs:.2f} MB/s." if results["mb"] >= 1 else
                     f"- Fast mode >= 1 MB/s end to end (issue 10): not judged on "
                     f"{results['mb']:.2f} MB (start-up dominates), {mbs:.2f} MB/s.")
    datasets = dict.fromkeys(q["dataset"] for q in results.get("quality", []))
    for ds in datasets:
        for scope in ("per-doc", "corpus"):
            fast, default = (_any2000(results, ds, scope, m) for m in ("fast", "default"))
            if fast is not None and default is not None:
                d = fast - default
                lines.append(f"- Fast mode loses <= 3 points of any@2000 ({ds}, {scope}): "
                             f"{verdict(d >= -3)}, {d:+.1f}.")
    for mode, checks in memory_verdicts(results).items():
        for c in checks[1:]:
            lines.append(
                f"- Peak RSS {c['copies']}x vs 1x within 20% or under 2 GB ({mode}): "
                f"{verdict(c['met'])}, {c['ratio']:.2f}x, {c['largest_rss_mib']:.0f} MiB.")
    return lines


# --------------------------------------------------------------------------- report

def _num(value: Any, fmt: str = "{:.1f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def markdown(results: dict) -> list[str]:
    """The report's Markdown lines, from a results dict as :func:`main` builds it."""
    base = next((r for r in results["throughput"] if r["mode"] == "today"), None)
    before = next((r for r in results["throughput"] if r["mode"] == "baseline"), None)
    lines = [f"# Indexing throughput, stages, memory and quality per embedder mode "
             f"({results['date']})", "",
             f"Dataset `{results['dataset']}` ({results['mb']:.2f} MB, "
             f"{results['documents']} files), end to end (read, tree, chunks, vectors, saved "
             f"index), cold embedding cache, one child process per run, {results['cpus']} "
             "cores." + (" Ratios are to `today` (PyTorch MiniLM, batch 32) in this same run."
                         if base else "")
             + (f" `baseline` is the default embedder of commit {results['baseline_commit']}, "
                "run by that commit's code in this same run; x baseline compares wall times."
                if before else ""), "",
             "| mode | embedder | seconds | MB/s | chunks/s | x today (chunks/s) | "
             "x baseline (time) | peak RSS MiB (child / largest worker) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results["throughput"]:
        ratio = f"{r['chunks_per_s'] / base['chunks_per_s']:.2f}" if base else "n/a"
        speedup = f"{before['seconds'] / r['seconds']:.2f}" if before else "n/a"
        spec = (f"minilm @ {results['baseline_commit']}" if r["mode"] == "baseline"
                else MODES.get(r["mode"], r["mode"]))
        lines.append(
            f"| {r['mode']} | `{spec}` | {r['seconds']:.1f} | "
            f"{r['mb_per_s']:.3f} | {r['chunks_per_s']:.1f} | {ratio} | {speedup} | "
            f"{r['peak_rss_mib']:.0f} / {_num(r.get('workers_peak_rss_mib'), '{:.0f}')} |")
    lines += ["", "Stages (seconds, `UpdateReport.timings`; read, convert, tree, tokenize and "
              "chunking are summed over the parse workers, so they can exceed the wall time; "
              "tokenize is part of tree + chunking) and counts (n/a: not reported by this "
              "version of the library):", "",
              "| mode | " + " | ".join(STAGES) + " | " + " | ".join(COUNTS) + " |",
              "|---|" + "---|" * (len(STAGES) + len(COUNTS))]
    for r in results["throughput"]:
        t, c = r["timings"], r.get("counts", {})
        lines.append(f"| {r['mode']} | " + " | ".join(f"{t.get(s, 0.0):.2f}" for s in STAGES)
                     + " | " + " | ".join(_num(c.get(k, r.get(k)), "{}") for k in COUNTS)
                     + " |")
    lines += _profile_lines(results) + _memory_lines(results) + _quality_lines(results)
    found = targets(results)
    if found:
        lines += ["", "## Targets (computed from the tables above)", "", *found]
    return lines


def _profile_lines(results: dict) -> list[str]:
    lines: list[str] = []
    if results.get("profile"):
        lines += ["", "What is embedded, per page (`benchmarks/harness/ingest_profile.py`: "
                  "the default "
                  "chunk config; word pieces as the model reads them, split into breadcrumbs, "
                  "table rows and the rest):", "",
                  "| code | pages | chunks | embedded texts | word pieces | breadcrumb | "
                  "table rows | other |", "|---|---|---|---|---|---|---|---|"]
        for code, pr in results["profile"].items():
            pp = pr["per_page"]
            lines.append(f"| {code} | {pr['pages']} | {pp['chunks']:.2f} | "
                         f"{pp['embedded texts']:.2f} | {pp['word pieces']:.0f} | "
                         f"{pp['breadcrumb']:.0f} | {pp['table rows']:.0f} | "
                         f"{pp['other']:.0f} |")
        for code, pr in results["profile"].items():
            if pr.get("duplicates"):
                lines += ["", f"Chunks repeating another chunk's text ({code}, of "
                          f"{pr['chunks']}): " + ", ".join(
                              f"{k} {v}" for k, v in pr["duplicates"].items()) + "."]
    return lines


def _memory_lines(results: dict) -> list[str]:
    lines: list[str] = []
    verdicts = memory_verdicts(results)
    if results.get("memory"):
        lines += ["", "Peak RSS against the number of files (the same texts at each copies "
                  "count): the indexing child's `VmHWM`, the largest parse worker's, and the "
                  "larger of the two against the 1x run. Target: within 20% of 1x or under "
                  f"{MEMORY_MIB:.0f} MiB.", "",
                  "| mode | copies | files | chunks | embedded | seconds | MB/s | child MiB | "
                  "worker MiB | largest MiB | x 1x | target |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for mode, rows in results["memory"].items():
            for r, v in zip(rows, verdicts[mode], strict=True):
                lines.append(
                    f"| {mode} | {v['copies']} | {r.get('files', r['documents'])} | "
                    f"{r['chunks']} | {_num(r.get('embedded'), '{}')} | {r['seconds']:.1f} | "
                    f"{r['mb_per_s']:.3f} | {r['peak_rss_mib']:.0f} | "
                    f"{_num(r.get('workers_peak_rss_mib'), '{:.0f}')} | "
                    f"{v['largest_rss_mib']:.0f} | {v['ratio']:.2f} | "
                    f"{'met' if v['met'] else 'missed'} |")
    return lines


def _quality_lines(results: dict) -> list[str]:
    lines: list[str] = []
    if results.get("quality"):
        lines += ["", "Quality (any-hit %, proxy-pointer with the full retriever, each mode "
                  "on its own vectors):", "", "| dataset | scope | mode | any@500 | any@1000 | "
                  "any@2000 |", "|---|---|---|---|---|---|"]
        for q in results["quality"]:
            for scope, budgets in q["any_hit"].items():
                lines.append(f"| {q['dataset']} | {scope} | {q['mode']} | "
                             + " | ".join(f"{budgets.get(b, float('nan'))}"
                                          for b in ("500", "1000", "2000")) + " |")
    return lines


def write(results: dict, out_dir: Path, name: str) -> list[str]:
    """Write ``<name>.json`` and ``<name>.md`` under ``out_dir``; the Markdown lines."""
    results = {**results, "memory_verdicts": memory_verdicts(results),
               "targets": targets(results)}
    lines = markdown(results)
    write_report(out_dir, name, results, lines)
    return lines


# --------------------------------------------------------------------------- main

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=None,
                   help="a folder with docs/ (default data/sample)")
    p.add_argument("--modes", nargs="+", default=None, choices=list(MODES),
                   help="modes timed end to end (default: today default int8 fast)")
    p.add_argument("--memory-modes", nargs="*", default=None, choices=list(MODES),
                   help="modes indexed at each of --copies (default: fast)")
    p.add_argument("--copies", nargs="+", type=int, default=None,
                   help="dataset copies for the memory runs (default: 1 4 20)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run in seconds: data/sample, hash embedder, copies 1 2, "
                        "per-doc quality (explicit options still win)")
    p.add_argument("--quality-dataset", nargs="*", default=[],
                   help="more datasets scored per-doc and corpus (their own cache)")
    p.add_argument("--quality-cache", default=str(CACHE),
                   help="embedding cache for --quality-dataset runs")
    p.add_argument("--no-quality", action="store_true")
    p.add_argument("--quality-scopes", nargs="+", default=["per-doc"],
                   choices=["per-doc", "corpus"], help="scopes scored on --dataset")
    p.add_argument("--baseline", type=Path, default=None,
                   help="a checkout of an older commit: its default mode timed and scored too")
    p.add_argument("--baseline-cache", default=None,
                   help="a warm embedding cache of the baseline's own vectors, for its quality")
    p.add_argument("--no-profile", action="store_true", help="skip the per-page profile")
    p.add_argument("--work", default=None, help="scratch folder (default: a temp dir)")
    p.add_argument("--out-dir", default=str(RESULTS / "ingest"))
    p.add_argument("--name", default="ingest", help="output file stem")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--docs", default=None, help=argparse.SUPPRESS)
    p.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    p.add_argument("--index", default=None, help=argparse.SUPPRESS)
    return p


def _timed(results: dict, runs: list[tuple[str, Path | None]], memory_modes: list[str],
           n_copies: list[int], docs: Path, work: Path) -> None:
    """Each run's throughput, then each memory mode at every number of copies."""
    for mode, code in runs:
        row = index_in_child(mode, docs, work, tree=code)
        print(f"{row['mode']}: {row['seconds']:.1f}s {row['mb_per_s']:.3f} MB/s "
              f"{row['chunks_per_s']:.1f} chunks/s rss {row['largest_rss_mib']:.0f} MiB",
              flush=True)
        results["throughput"].append(row)
    for mode in memory_modes:
        rows = []
        for n in n_copies:
            rows.append(index_in_child(mode, copies(docs, n, work), work, tag="-mem"))
            print(f"{mode} x{n}: {rows[-1]['chunks']} chunks {rows[-1]['seconds']:.1f}s "
                  f"rss {rows[-1]['peak_rss_mib']:.0f} MiB (workers "
                  f"{_num(rows[-1]['workers_peak_rss_mib'], '{:.0f}')})", flush=True)
            shutil.rmtree(rows[-1]["cache"], ignore_errors=True)
        results["memory"][mode] = rows


def _scored(results: dict, args: argparse.Namespace, dataset: Path, tree: Path | None,
            runs: list[tuple[str, Path | None]], work: Path) -> None:
    """Any-hit of every timed run on the dataset, and of each mode on the extra datasets."""
    for row in results["throughput"]:
        code = tree if row["mode"] == "baseline" else None
        cache = (args.baseline_cache if code and args.baseline_cache else row["cache"])
        results["quality"].append({"dataset": dataset.name, "mode": row["mode"], "any_hit":
                                   quality(dataset, row["mode"], str(Path(cache).resolve()),
                                           args.quality_scopes, work, code)})
        print(results["quality"][-1], flush=True)
    for extra in args.quality_dataset:
        for mode, code in runs:
            name = "baseline" if code else mode
            if name == "today":
                continue  # default's vectors on another backend: scored by default
            cache = (Path(args.baseline_cache) if code and args.baseline_cache
                     else Path(args.quality_cache) / name)
            results["quality"].append({
                "dataset": Path(extra).name, "mode": name,
                "any_hit": quality(Path(extra).resolve(), name, str(cache.resolve()),
                                   ["per-doc", "corpus"], work, code)})
            print(results["quality"][-1], flush=True)


def main(argv: list[str] | None = None) -> None:
    p = _parser()
    args = p.parse_args(argv)
    if args.child:
        child(args)
        return
    quick = args.quick
    modes = args.modes or (["hash"] if quick else ["today", "default", "int8", "fast"])
    memory_modes = (args.memory_modes if args.memory_modes is not None
                    else ["hash"] if quick else ["fast"])
    n_copies = args.copies or ([1, 2] if quick else [1, 4, 20])
    if n_copies[0] != 1:
        p.error("--copies must start with 1 (the baseline the others are compared to)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Absolute: the children run in the repository root.
    dataset = Path(args.dataset or ROOT / "data" / "sample").resolve()
    docs = dataset / "docs"
    if not docs.is_dir():
        p.error(f"{dataset} has no docs/ folder")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-ingest-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    for mode in sorted(set(modes) | set(memory_modes)):
        prepare(mode)
    files = [f for f in docs.iterdir() if f.is_file()]
    env = environment()
    results: dict = {
        "dataset": dataset.name, "date": time.strftime("%Y-%m-%d"), "cpus": env["cpus"],
        "python": env["python"], "documents": len(files),
        "mb": sum(f.stat().st_size for f in files) / 1e6, "throughput": [], "memory": {},
        "copies": n_copies, "quality": [], "quick": quick, "environment": env,
        "memory_target": {"ratio": MEMORY_RATIO, "mib": MEMORY_MIB},
    }
    tree = args.baseline.resolve() if args.baseline else None
    if tree is not None:
        results["baseline_commit"] = (git_state(tree).get("commit") or "")[:7] or str(tree)
    if not args.no_profile:
        codes = {f"baseline ({results['baseline_commit']})": tree} if tree else {}
        results["profile"] = {name: profile(docs, code)
                              for name, code in {**codes, "this": None}.items()}
        print(results["profile"], flush=True)
    runs: list[tuple[str, Path | None]] = ([("default", tree)] if tree else []) + [
        (mode, None) for mode in modes]
    _timed(results, runs, memory_modes, n_copies, docs, work)
    if not args.no_quality and (dataset / "questions.jsonl").exists():
        _scored(results, args, dataset, tree, runs, work)
    print("\n".join(write(results, Path(args.out_dir), args.name)))


if __name__ == "__main__":
    main()
