"""Sensitivity of the bfloat16 embedder's constants: batch size and padding multiple.

Each setting embeds the same chunk texts (a seeded sample of a dataset's chunks, as the
default chunker makes them) in a fresh child process: chunks/s after a warm-up, the child's
peak RSS, and the cosine of each vector to float32's (ONNX Runtime). Needs a CPU with native
bfloat16 to mean anything (elsewhere bfloat16 is emulated); the report says which it ran on.

    python -m benchmarks.speed.bench_bf16 --dataset ../shared/data/financebench-dev --texts 1500
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from ..common import (
    RESULTS,
    ROOT,
    bench_command,
    environment,
    peak_rss_mib,
    run_child,
    write_report,
)

PADS = (1, 16, 32, 64)
BATCHES = (8, 16, 32)


def sample_texts(docs: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` embedded texts of the default chunker over ``docs``, seeded."""
    from ..harness.ingest_profile import chunk_texts

    texts = chunk_texts(docs)[2]
    random.Random(seed).shuffle(texts)
    return texts[:n]


def child(texts_file: Path, pad: int, batch: int, reference: Path) -> None:
    import numpy as np

    from proxy_pointer.embeddings import bf16

    texts = json.loads(texts_file.read_text())
    bf16.PAD_MULTIPLE = pad
    emb = bf16.Bf16Embedder(batch_size=batch)
    emb.embed_documents(texts[:64])
    t = time.perf_counter()
    vecs = emb.embed_documents(texts)
    seconds = time.perf_counter() - t
    cos = (vecs * np.load(reference)).sum(axis=1)
    print(json.dumps({"pad": pad, "batch": batch, "chunks_per_s": len(texts) / seconds,
                      "peak_rss_mib": peak_rss_mib(), "cosine_mean": float(cos.mean()),
                      "cosine_min": float(cos.min())}))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=str(ROOT / "data" / "sample"))
    p.add_argument("--texts", type=int, default=1500)
    p.add_argument("--out-dir", default=str(RESULTS / "bf16"))
    p.add_argument("--name", default="bf16-sensitivity")
    p.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        texts_file, pad, batch, reference = args.child
        child(Path(texts_file), int(pad), int(batch), Path(reference))
        return
    import numpy as np

    from proxy_pointer.embeddings import make_embedder
    from proxy_pointer.embeddings.sentence_transformers import native_bf16

    dataset = Path(args.dataset).resolve()
    texts = sample_texts(dataset / "docs", args.texts)
    work = Path(tempfile.mkdtemp(prefix="bench-bf16-"))
    (work / "texts.json").write_text(json.dumps(texts))
    np.save(work / "fp32.npy", make_embedder("minilm-fp32").embed_documents(texts))
    rows = []
    for pad in PADS:
        for batch in BATCHES:
            rows.append(run_child(bench_command("speed.bench_bf16", "--child", work / "texts.json",
                                                pad, batch, work / "fp32.npy")).json())
            print(rows[-1], flush=True)
    results = {"dataset": dataset.name, "texts": len(texts), "native_bf16": native_bf16(),
               "date": time.strftime("%Y-%m-%d"), "rows": rows, "environment": environment()}
    lines = [f"# bfloat16 embedder: batch size and padding multiple ({results['date']})", "",
             f"{len(texts)} chunk texts of `{dataset.name}` (seeded sample, default chunker), "
             f"each setting in a fresh process, {results['environment']['cpus']} cores, native "
             f"bfloat16: {results['native_bf16']}. Default: batch 16, padding multiple 16. "
             "chunks/s is after a warm-up; on a shared machine it moves by ~10% run to run.",
             "", "| pad multiple | batch | chunks/s | peak RSS MiB | cosine to fp32 (mean / min) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['pad']} | {r['batch']} | {r['chunks_per_s']:.1f} | "
                     f"{r['peak_rss_mib']:.0f} | {r['cosine_mean']:.6f} / "
                     f"{r['cosine_min']:.6f} |")
    write_report(Path(args.out_dir), args.name, results, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
