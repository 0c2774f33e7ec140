"""Ingestion throughput: single process (``executor="local"``) against Ray actors.

Both runs index the same documents end to end (read, tree, chunks, vectors, saved index)
into a fresh folder with the default embedder (MiniLM on ONNX Runtime) and no embedding
cache, so the model really runs; ratios come from one invocation on one machine. The local
run uses its default parse pool; the Ray run starts a local Ray (timed apart: a cluster is
started once, not per update) with ``--ray-workers`` actors, one CPU and one model thread
each. The Ray run's timings split the work into what runs on the actors (parsing and
embedding, summed over actors) and what the driver does alone (reading, SHA-256, handing
batches over, staging, the commit and the store write: the wall time it did not spend
waiting for actors), which gives the Amdahl bound for more workers.

    python -m benchmarks.speed.bench_ray --dataset ../shared/data/qasper-dev --limit 60
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from ..common import DATA, RESULTS, ROOT, environment, write_report


def subset(dataset: Path, limit: int, work: Path) -> Path:
    """The first ``limit`` documents of the dataset (by name), copied into ``work``."""
    files = sorted((dataset / "docs").glob("*.md"))[:limit]
    out = work / "docs"
    out.mkdir(parents=True)
    for f in files:
        shutil.copy(f, out / f.name)
    return out


def one_run(docs: Path, target: Path, executor: str, workers: int | None) -> dict:
    from proxy_pointer.embeddings import make_embedder
    from proxy_pointer.index import update_directory
    from proxy_pointer.ingest import make_executor

    t0 = time.perf_counter()
    idx, report = update_directory(target, [docs], embedder=make_embedder("minilm"),
                                   executor=make_executor(executor, workers=workers))
    seconds = time.perf_counter() - t0
    nbytes = sum(f.stat().st_size for f in docs.iterdir())
    timings = {k: round(v, 3) for k, v in report.timings.items()}
    row = {"executor": executor, "workers": workers, "seconds": round(seconds, 2),
           # Other work on the machine shows here: two busy cores are a load of about 2.
           "load_avg_1min_after": os.getloadavg()[0],
           "documents": len(idx), "chunks": report.chunks, "embedded": report.embedded,
           "mb_per_s": round(nbytes / 1e6 / seconds, 4),
           "docs_per_s": round(len(idx) / seconds, 3), "timings": timings}
    if executor == "ray":
        parallel = timings["embedding"] + timings["tree"] + timings["chunking"]
        serial = max(0.0, seconds - timings["waiting"])
        row.update(actor_seconds=round(parallel, 2), driver_seconds=round(serial, 2),
                   serial_share=round(serial / (serial + parallel), 4))
    return row


def same_contents(a: Path, b: Path) -> dict:
    import numpy as np

    from proxy_pointer.index import Index

    x, y = Index.load(a), Index.load(b)
    return {"same_chunks": list(x.reader.chunks) == list(y.reader.chunks),
            "max_abs_vector_diff": float(np.abs(x.reader.vectors - y.reader.vectors).max())}


def amdahl(serial_share: float, n: int) -> float:
    return 1.0 / (serial_share + (1.0 - serial_share) / n)


def write(results: dict, out_dir: Path, name: str) -> None:
    local, ray = results["runs"]
    s = ray["serial_share"]
    lines = [
        f"# Ingestion on Ray against one process ({results['date']})", "",
        f"`{results['dataset']}`, first {results['documents']} papers by name "
        f"({results['mb']:.2f} MB of Markdown), default embedder (MiniLM, ONNX Runtime), no "
        f"embedding cache, end to end into a fresh index; {results['cpus']} cores, "
        f"{results['machine']} (1-minute load after each run: "
        f"{', '.join(format(r['load_avg_1min_after'], '.2f') for r in results['runs'])}). "
        "Both runs in one invocation. Ray was started once before its "
        f"run ({results['ray_start_seconds']:.1f} s, not counted); actor start and model "
        "loading are counted.", "",
        "| executor | workers | seconds | MB/s | docs/s | chunks | embedded | x local |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        lines.append(
            f"| {r['executor']} | {r['workers'] if r['workers'] is not None else 'default'} | "
            f"{r['seconds']:.1f} | {r['mb_per_s']:.4f} | {r['docs_per_s']:.3f} | {r['chunks']} | "
            f"{r['embedded']} | {local['seconds'] / r['seconds']:.2f}x |")
    lines += [
        *(["", f"Note: {results['note']}"] if results.get("note") else []),
        "", f"Same chunks: {results['check']['same_chunks']}; largest vector difference "
        f"{results['check']['max_abs_vector_diff']:.1e}.", "",
        "## Where the Ray run's time went", "",
        f"- On the actors (parallel): {ray['actor_seconds']:.1f} s of parsing and embedding, "
        f"summed over {ray['workers']} actors (embedding {ray['timings']['embedding']:.1f} s, "
        f"tree + chunking {ray['timings']['tree'] + ray['timings']['chunking']:.1f} s).",
        f"- In the driver alone (serial): {ray['driver_seconds']:.1f} s, the wall time it was "
        "not waiting for an actor: reading files and their SHA-256, handing batches over, "
        f"staging results in order, the commit ({ray['timings']['index']:.2f} s) and the "
        f"store write ({ray['timings'].get('write', 0.0):.2f} s), plus starting the actors.",
        f"- Serial share s = {ray['driver_seconds']:.1f} / ({ray['driver_seconds']:.1f} + "
        f"{ray['actor_seconds']:.1f}) = {s:.3f}.", "",
        "## Scaling to N machines", "",
        "Parsing and embedding are independent per batch (at most 2 MB of text, and at "
        "least four batches per actor), so they "
        "spread over every worker of the cluster (`RAY_ADDRESS`): one actor per core, one "
        "model thread each, a model loaded once per actor. Reading and hashing every file "
        "(unchanged ones are skipped there, so the cluster only sees changed documents), "
        "collecting the results in order and the single store write stay in the driver. "
        "With two cores, two actors do the work one process already spreads over both "
        "cores (ONNX Runtime's two threads plus the parse pool), so ~1x is the expected "
        "result here: Ray adds cores, it does not make a core faster. What the Ray run "
        "loses here is loading the model once per actor, the last batch running on one "
        "actor while the other is done, and ONNX Runtime being a little less efficient on "
        "two single-threaded sessions than on one two-threaded session.", "",
        f"Amdahl with the measured serial share s = {s:.3f}: speedup over one worker "
        "<= 1 / (s + (1 - s) / N) for N workers (cores across machines):", "",
        "| N workers | bound |", "|---|---|",
        *[f"| {n} | {amdahl(s, n):.1f}x |" for n in (2, 8, 32, 128)],
        f"| unbounded | {1 / s:.0f}x |" if s > 0 else "| unbounded | - |",
        "",
        "The bound ignores transfer: each batch's text goes to an actor and its chunks and "
        "vectors (384 float32 per chunk, about 1.5 KB) come back, which over a network is "
        "small next to MiniLM's ~0.01 MB/s of text per core. Past the bound the driver is "
        "the limit (reading, SHA-256 and staging at tens of MB/s, the store write); "
        "sharding the update by folder across drivers would be the next step.",
    ]
    write_report(out_dir, name, results, lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rewrite", action="store_true",
                   help="only rewrite the Markdown from the saved JSON")
    p.add_argument("--dataset", default=str(DATA / "qasper-dev"))
    p.add_argument("--limit", type=int, default=60, help="papers to index (first by name)")
    p.add_argument("--ray-workers", type=int, default=2)
    p.add_argument("--work", default=None, help="scratch folder (default: a temp dir)")
    p.add_argument("--out-dir", default=str(RESULTS / "ray"))
    p.add_argument("--name", default="ray-ingest")
    args = p.parse_args(argv)
    if args.rewrite:
        saved = Path(args.out_dir) / f"{args.name}.json"
        write(json.loads(saved.read_text()), Path(args.out_dir), args.name)
        return

    import ray

    dataset = Path(args.dataset)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-ray-"))
    docs = subset(dataset, args.limit, work)
    from proxy_pointer.embeddings import make_embedder

    make_embedder("minilm").embed_documents(["warm up"])  # the ONNX export, once per machine
    runs = [one_run(docs, work / "local", "local", None)]
    print(json.dumps(runs[-1]), flush=True)
    t = time.perf_counter()
    ray.init(num_cpus=len(os.sched_getaffinity(0)), include_dashboard=False,
             log_to_driver=False, logging_level="ERROR",
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    ray_start = time.perf_counter() - t
    runs.append(one_run(docs, work / "ray", "ray", args.ray_workers))
    print(json.dumps(runs[-1]), flush=True)
    ray.shutdown()
    env = environment("ray")
    results = {
        "date": time.strftime("%Y-%m-%d"), "dataset": dataset.name,
        "documents": runs[0]["documents"],
        "mb": sum(f.stat().st_size for f in docs.iterdir()) / 1e6,
        "cpus": env["cpus"], "machine": env["processor"], "environment": env,
        "ray_version": ray.__version__, "ray_start_seconds": round(ray_start, 2),
        "runs": runs, "check": same_contents(work / "local", work / "ray"),
        "ratio_ray_over_local": round(runs[0]["seconds"] / runs[1]["seconds"], 3),
    }
    write(results, Path(args.out_dir), args.name)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
