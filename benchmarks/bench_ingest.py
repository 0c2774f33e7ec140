"""Indexing throughput, peak memory and retrieval quality of each embedder mode.

Modes: ``today`` (bundled MiniLM on PyTorch, batch 32: the path before ONNX), ``default``
(the same model on ONNX Runtime, batch 8), ``int8`` (ONNX, int8 weights), ``fast`` (the
static model distilled from MiniLM). Each run is a fresh child process indexing the dataset
end to end (read -> tree -> chunks -> vectors -> saved index) with a cold embedding cache, so
its wall time, MB/s and peak RSS are its own. One-off model preparation (ONNX export, fast
mode's distillation) is done before timing, as it is once per machine.

Memory: the ``--copies`` folders hold the dataset 1x and 4x (copies under sub-folders, same
texts, so embedding work is the same and only the number of files grows).

Quality: ``benchmarks.run_benchmark`` (proxy-pointer method, full retriever) on each mode's own
vectors (the throughput run's cache), per-doc on the dataset and per-doc + corpus on each
``--quality-dataset``.

    python -m benchmarks.bench_ingest --dataset ../shared/data/qasper-dev \
        --quality-dataset ../shared/data/finance-10k
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from .common import (
    CACHE,
    RESULTS,
    ROOT,
    bench_command,
    environment,
    peak_rss_mib,
    run_child,
    write_report,
)

MODES = {
    "today": "minilm-torch",
    "default": "minilm",
    "int8": "minilm-int8",
    "fast": "fast",
}


def make_mode(mode: str):
    from proxy_pointer.embeddings import SentenceTransformerEmbedder, make_embedder

    if mode == "today":
        return SentenceTransformerEmbedder(backend="torch", batch_size=32)
    return make_embedder(MODES[mode])


def prepare(mode: str) -> None:
    """Export / distil the mode's model once, outside the timed runs."""
    emb = make_mode(mode)
    emb.embed_documents(["warm up"])


def child(args: argparse.Namespace) -> None:
    """One timed indexing run; prints a JSON line."""
    from proxy_pointer.documents import discover
    from proxy_pointer.embeddings import CachedEmbedder
    from proxy_pointer.index import update_directory

    t0 = time.perf_counter()
    embedder = CachedEmbedder(make_mode(args.child), args.cache)
    nbytes = sum(s.path.stat().st_size for s in discover([args.docs]))
    idx, report = update_directory(args.index, [args.docs], embedder=embedder)
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "mode": args.child, "seconds": seconds, "bytes": nbytes, "documents": len(idx),
        "chunks": report.chunks, "embedded": report.embedded,
        "timings": report.timings, "peak_rss_mib": peak_rss_mib(),
        "mb_per_s": nbytes / 1e6 / seconds, "chunks_per_s": report.chunks / seconds,
    }))


def index_in_child(mode: str, docs: Path, work: Path) -> dict:
    """One timed indexing run of ``mode`` on ``docs`` in a fresh child process; its row."""
    cache, index = work / f"cache-{mode}-{docs.name}", work / f"index-{mode}-{docs.name}"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(index, ignore_errors=True)
    row = run_child(bench_command("bench_ingest", "--child", mode, "--docs", docs,
                                  "--cache", cache, "--index", index)).json()
    row["cache"] = str(cache)
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


def quality(dataset: Path, mode: str, cache: str, scopes: list[str], work: Path) -> dict:
    name = f"{dataset.name}-{mode}"
    spec = MODES[mode]
    run_child(bench_command(
        "run_benchmark", "--dataset", dataset, "--methods", "proxy-pointer", "--embedder", spec,
        "--cache-dir", cache, "--scope", *scopes, "--no-memory", "--name", name,
        "--out-dir", work))
    data = json.loads((work / f"{name}.json").read_text())
    scopes_out = data["methods"]["proxy-pointer"]["scopes"]
    return {scope: {b: round(100 * v["any_hit"], 1)
                    for b, v in scopes_out[scope]["budgets"].items()} for scope in scopes}


def write(results: dict, out_dir: Path, name: str) -> None:
    base = next((r for r in results["throughput"] if r["mode"] == "today"), None)
    lines = [f"# Indexing throughput and quality per embedder mode ({results['date']})", "",
             f"Dataset `{results['dataset']}` ({results['mb']:.2f} MB of Markdown, "
             f"{results['documents']} files), end to end (read, tree, chunks, vectors, saved "
             f"index), cold embedding cache, one child process per run, {results['cpus']} "
             "cores. Ratios are to `today` (PyTorch MiniLM, batch 32) in this same run.", "",
             "| mode | embedder | seconds | MB/s | chunks/s | x today (chunks/s) | "
             "embedding s | tree+chunk s | peak RSS MiB |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results["throughput"]:
        ratio = f"{r['chunks_per_s'] / base['chunks_per_s']:.2f}" if base else "n/a"
        t = r["timings"]
        lines.append(
            f"| {r['mode']} | `{MODES[r['mode']]}` | {r['seconds']:.1f} | {r['mb_per_s']:.3f} | "
            f"{r['chunks_per_s']:.1f} | {ratio} | {t.get('embedding', 0):.1f} | "
            f"{t.get('tree', 0) + t.get('chunking', 0):.1f} | {r['peak_rss_mib']:.0f} |")
    if results["memory"]:
        lines += ["", "Peak RSS against the number of files (the same texts 1x and 4x, so the "
                  "embedding work is equal):", "",
                  "| mode | copies | files | chunks | seconds | peak RSS MiB | 4x / 1x |",
                  "|---|---|---|---|---|---|---|"]
        for mode, rows in results["memory"].items():
            one = rows[0]["peak_rss_mib"]
            for n, r in zip(results["copies"], rows, strict=True):
                lines.append(f"| {mode} | {n} | {r['documents']} | {r['chunks']} | "
                             f"{r['seconds']:.1f} | {r['peak_rss_mib']:.0f} | "
                             f"{r['peak_rss_mib'] / one:.2f} |")
    if results["quality"]:
        lines += ["", "Quality (any-hit %, proxy-pointer with the full retriever, each mode "
                  "on its own vectors):", "", "| dataset | scope | mode | any@500 | any@1000 | "
                  "any@2000 |", "|---|---|---|---|---|---|"]
        for q in results["quality"]:
            for scope, budgets in q["any_hit"].items():
                lines.append(f"| {q['dataset']} | {scope} | {q['mode']} | "
                             + " | ".join(f"{budgets.get(b, float('nan'))}"
                                          for b in ("500", "1000", "2000")) + " |")
    write_report(out_dir, name, results, lines)
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=str(ROOT / "data" / "sample"))
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    p.add_argument("--memory-modes", nargs="*", default=["default", "fast"],
                   choices=list(MODES), help="modes indexed at each of --copies")
    p.add_argument("--copies", nargs="+", type=int, default=[1, 4])
    p.add_argument("--quality-dataset", nargs="*", default=[],
                   help="more datasets scored per-doc and corpus (their own cache)")
    p.add_argument("--quality-cache", default=str(CACHE),
                   help="embedding cache for --quality-dataset runs")
    p.add_argument("--no-quality", action="store_true")
    p.add_argument("--work", default=None, help="scratch folder (default: a temp dir)")
    p.add_argument("--out-dir", default=str(RESULTS))
    p.add_argument("--name", default="ingest")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--docs", default=None, help=argparse.SUPPRESS)
    p.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    p.add_argument("--index", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Absolute: the children run in the repository root.
    dataset = Path(args.dataset).resolve()
    docs = dataset / "docs"
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-ingest-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    for mode in sorted(set(args.modes) | set(args.memory_modes)):
        prepare(mode)
    files = [f for f in docs.iterdir() if f.is_file()]
    env = environment()
    results: dict = {
        "dataset": dataset.name, "date": time.strftime("%Y-%m-%d"), "cpus": env["cpus"],
        "python": env["python"], "documents": len(files),
        "mb": sum(f.stat().st_size for f in files) / 1e6, "throughput": [], "memory": {},
        "copies": args.copies, "quality": [], "environment": env,
    }
    for mode in args.modes:
        row = index_in_child(mode, docs, work)
        print(f"{mode}: {row['seconds']:.1f}s {row['mb_per_s']:.3f} MB/s "
              f"{row['chunks_per_s']:.1f} chunks/s rss {row['peak_rss_mib']:.0f} MiB", flush=True)
        results["throughput"].append(row)
    for mode in args.memory_modes:
        rows = []
        for n in args.copies:
            rows.append(index_in_child(mode, copies(docs, n, work), work))
            print(f"{mode} x{n}: rss {rows[-1]['peak_rss_mib']:.0f} MiB", flush=True)
        results["memory"][mode] = rows
    if not args.no_quality:
        for row in results["throughput"]:
            results["quality"].append({"dataset": dataset.name, "mode": row["mode"], "any_hit":
                                       quality(dataset, row["mode"], row["cache"], ["per-doc"],
                                               work)})
            print(results["quality"][-1], flush=True)
        for extra in args.quality_dataset:
            for mode in args.modes:
                if mode == "today":
                    continue  # same model_id as default: the shared cache would not tell them apart
                results["quality"].append({
                    "dataset": Path(extra).name, "mode": mode,
                    "any_hit": quality(Path(extra).resolve(), mode,
                                       str(Path(args.quality_cache).resolve()),
                                       ["per-doc", "corpus"], work)})
                print(results["quality"][-1], flush=True)
    write(results, Path(args.out_dir), args.name)


if __name__ == "__main__":
    main()
