"""Embedding speed of each document path on this CPU, and with its features masked.

The default embedder's path is chosen from what the CPU offers (``proxy_pointer.embeddings.
cpu``). This measures each path on the same chunk texts of a dataset (its first ``--texts`` chunks
in file order, as the default chunker cuts them, breadcrumbs included:
:func:`benchmarks.harness.ingest_profile.chunk_texts`), each in a fresh child process after a
warm-up:

* ``fp32``: float32 on ONNX Runtime, one session of a thread per core: the default of
  commit b226cd2 (issue 50's baseline) and of every CPU without bfloat16 until now;
* ``bf16``: bfloat16 weights on PyTorch (the default with AMX, and before issue 50 with
  AVX-512 BF16);
* ``int8``: int8 weights on ONNX Runtime, one one-thread run per core;
* ``int8+crumbs``: the same with breadcrumbs embedded once (the default without AMX);
* ``default``: whatever ``default_embedder()`` chooses under that mask.

Masks are oneDNN's ``ONEDNN_MAX_CPU_ISA`` (PyTorch's kernels; the library's choice honours
it too). ONNX Runtime has no such switch: its rows run on the whole CPU under every mask,
which the report says. Texts per second count the chunk texts (what an index embeds), so
paths that read fewer word pieces per chunk are compared by what a user waits for.
Cosine: median and minimum to the ``fp32`` vectors of the same texts.

    python -m benchmarks.speed.bench_cpu --dataset ../shared/data/finance-10k
    python -m benchmarks.speed.bench_cpu --quick          # data/sample, a few texts: seconds
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..common import RESULTS, ROOT, bench_command, environment, run_child, write_report
from ..harness.ingest_profile import chunk_texts

PATHS = ("fp32", "bf16", "int8", "int8+crumbs", "default")
MASKS = ("", "AVX512_CORE_VNNI", "AVX2")


def child(path: str, texts_file: Path, vectors_file: Path) -> None:
    """Time one path on the texts; print its row as JSON, save its vectors."""
    from proxy_pointer.embeddings import default_embedder, make_embedder
    from proxy_pointer.embeddings.cpu import cpu_kind
    from proxy_pointer.embeddings.onnx import OnnxEmbedder

    texts = json.loads(texts_file.read_text())
    embedder = (OnnxEmbedder(None, workers=1) if path == "fp32"
                else default_embedder() if path == "default"
                else make_embedder(f"minilm-{path}"))
    embedder.embed_documents(texts[:32])  # load, export once, warm the kernels
    t = time.perf_counter()
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    seconds = time.perf_counter() - t
    np.save(vectors_file, vectors)
    print(json.dumps({"path": path, "model_id": embedder.model_id, "seconds": seconds,
                      "texts_per_s": len(texts) / seconds, "cpu": cpu_kind().describe(),
                      "chosen": cpu_kind().document_path()}))


def run(dataset: Path, limit: int, masks: list[str], paths: list[str], work: Path) -> dict:
    texts = chunk_texts(dataset / "docs")[2][:limit]
    texts_file = work / "texts.json"
    texts_file.write_text(json.dumps(texts))
    rows = []
    for mask in masks:
        env = {k: v for k, v in os.environ.items() if k != "ONEDNN_MAX_CPU_ISA"}
        if mask:
            env["ONEDNN_MAX_CPU_ISA"] = mask
        for path in paths:
            vec = work / f"{mask or 'none'}-{path}.npy"
            done = run_child(bench_command("speed.bench_cpu", "--child", path, "--texts-file",
                                           texts_file, "--vectors", vec), env=env)
            row = {"mask": mask or "none", **json.loads(done.stdout.strip().splitlines()[-1])}
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    for row in rows:
        ref = next(r for r in rows if r["mask"] == row["mask"] and r["path"] == "fp32")
        a = np.load(work / f"{row['mask']}-{row['path']}.npy")
        b = np.load(work / f"{ref['mask']}-fp32.npy")
        cos = (a * b).sum(axis=1)
        row["x_fp32"] = row["texts_per_s"] / ref["texts_per_s"]
        row["cosine_median"], row["cosine_min"] = float(np.median(cos)), float(cos.min())
    return {"dataset": dataset.name, "texts": len(texts), "rows": rows,
            "environment": environment("torch", "onnxruntime")}


def report(results: dict) -> list[str]:
    env = results["environment"]
    lines = [
        "# Embedding paths per CPU kind (issue 50)", "",
        f"{results['texts']} chunk texts of `{results['dataset']}` (default chunks, "
        f"breadcrumbs included), one child process per row after a 32-text warm-up, "
        f"{env['cpus']} cores, {env['cpu']}. "
        "x fp32: texts per second over the `fp32` row's under the same mask (float32 on "
        "ONNX Runtime, one session: commit b226cd2's default). Masks are oneDNN's "
        "`ONEDNN_MAX_CPU_ISA`, which PyTorch (`bf16`) and the library's choice honour; "
        "ONNX Runtime has no such switch, so its rows use the whole CPU under every mask.",
        "", "| mask | path | model id | chosen here | texts/s | x fp32 | cosine median | "
        "cosine min |", "|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        lines.append(f"| {r['mask']} | {r['path']} | `{r['model_id']}` | {r['chosen']} | "
                     f"{r['texts_per_s']:.1f} | {r['x_fp32']:.2f} | {r['cosine_median']:.4f} "
                     f"| {r['cosine_min']:.4f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", type=Path, default=None)
    p.add_argument("--texts", type=int, default=1024)
    p.add_argument("--masks", nargs="*", default=list(MASKS))
    p.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    p.add_argument("--quick", action="store_true", help="data/sample, 48 texts, no masks")
    p.add_argument("--out-dir", default=str(RESULTS / "cpu"))
    p.add_argument("--name", default="any-cpu-paths")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--texts-file", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--vectors", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.texts_file, args.vectors)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.quick:
        args.dataset, args.texts, args.masks = args.dataset or ROOT / "data" / "sample", 48, [""]
    dataset = (args.dataset or ROOT / "data" / "sample").resolve()
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as work:
        results = run(dataset, args.texts, args.masks or [""], args.paths, Path(work))
    paths = write_report(args.out_dir, args.name, results, report(results))
    print("\n".join(str(p) for p in paths.values()))


if __name__ == "__main__":
    main()
