"""Chunking cost vs embedding cost, and chunk sizes of the two settings.

1. For each 10-K filing: time ``chunk_tree`` (best of ``--repeats``, after a warm-up) with
   the default token setting and with ``ChunkConfig.chars(2000, 200)``, and time embedding
   a seeded random sample of ``--sample`` default chunks with the bundled MiniLM on CPU; the
   time to embed all chunks is *extrapolated* from the sample (chunks/s x chunk count).
2. For every QASPER dev paper: chunk counts and the token-size distribution of the embedded
   texts for both settings (the quality comparison is the retrieval benchmark's job).

    python -m benchmarks.quality.bench_chunking [--sample 200] [--repeats 3] [--no-embed] \
        [--out-dir DIR]

Writes benchmarks/results/chunking/chunking-speed.{json,md} and chunking-sizes.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from proxy_pointer.parse.chunking import ChunkConfig, chunk_tree
from proxy_pointer.parse.tree import build_tree
from proxy_pointer.tokens import count_tokens, count_tokens_many

from ..common import DATA, RESULTS, environment, write_report

TEN_K = DATA / "finance-10k" / "docs"
QASPER = DATA / "qasper-dev" / "docs"
WINDOW = 256
SETTINGS = {"tokens (default)": ChunkConfig(), "chars(2000, 200)": ChunkConfig.chars(2000, 200)}


def best_time(fn: Any, repeats: int) -> float:
    fn()  # warm-up: imports, tokenizer load
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def distribution(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    q = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
    return {"min": min(values), "p10": round(q[0]), "median": round(statistics.median(values)),
            "p90": round(q[8]), "max": max(values), "mean": round(statistics.fmean(values), 1)}


def speed(opts: argparse.Namespace) -> dict[str, Any]:
    embedder = None
    if not opts.no_embed:
        from proxy_pointer.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(batch_size=32, device="cpu")
        embedder.embed_documents(["warm-up"])
    rows: dict[str, Any] = {}
    for path in sorted(TEN_K.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        tree = build_tree(text, doc_id=path.name)
        row: dict[str, Any] = {"mb": round(len(text.encode("utf-8")) / 1e6, 3)}
        for name, cfg in SETTINGS.items():
            chunks = chunk_tree(tree, cfg)
            row[name] = {"chunks": len(chunks),
                         "chunk_s": round(best_time(lambda c=cfg, t=tree: chunk_tree(t, c),
                                                    opts.repeats), 3)}
        if embedder is not None:
            chunks = chunk_tree(tree)
            sample = random.Random(0).sample(chunks, min(opts.sample, len(chunks)))
            t0 = time.perf_counter()
            embedder.embed_documents([c.embed_text for c in sample])
            dt = time.perf_counter() - t0
            per_s = len(sample) / dt
            est = len(chunks) / per_s
            d = row["tokens (default)"]
            d.update(embed_sample=len(sample), embed_sample_s=round(dt, 2),
                     embed_chunks_per_s=round(per_s, 1), embed_all_s_extrapolated=round(est, 1),
                     chunk_over_embed=round(d["chunk_s"] / est, 4))
        rows[path.name] = row
        print(path.name, json.dumps(row), flush=True)
    return rows


def sizes() -> dict[str, Any]:
    out: dict[str, Any] = {}
    files = sorted(QASPER.glob("*.md"))
    for name, cfg in SETTINGS.items():
        per_doc, embed_tokens, body_tokens = [], [], []
        for path in files:
            chunks = chunk_tree(build_tree(path.read_text(encoding="utf-8"), doc_id=path.stem),
                                cfg)
            per_doc.append(len(chunks))
            embed_tokens += count_tokens_many([c.embed_text for c in chunks])
            body_tokens += count_tokens_many([c.embed_text.partition("\n")[2] for c in chunks])
        over = sum(1 for n in embed_tokens if n + 2 > WINDOW)
        out[name] = {
            "documents": len(files), "chunks": sum(per_doc),
            "chunks_per_doc": distribution(per_doc),
            "embed_text_tokens": distribution(embed_tokens),
            "body_tokens": distribution(body_tokens),
            "over_window": over, "over_window_share": round(over / max(1, len(embed_tokens)), 3),
        }
        print(name, json.dumps(out[name]), flush=True)
    return out


def write_speed(rows: dict[str, Any], opts: argparse.Namespace) -> None:
    env = environment()
    meta = {"python": env["python"], "machine": env["machine"], "cpus": env["cpus"],
            "sample": opts.sample, "repeats": opts.repeats}
    d = "tokens (default)"
    lines = [
        "# Chunking time vs embedding time (four 10-K filings)",
        "",
        f"`chunk_tree` best of {opts.repeats} runs after a warm-up, on a shared "
        f"{env['cpus']}-core machine. Embedding: bundled all-MiniLM-L6-v2 on CPU, batch "
        f"32, a seeded random sample of {opts.sample} default chunks; **the time to embed "
        "all chunks is extrapolated from the sample** (chunks/s x chunk count).",
        "",
        "| filing | MB | chunks (tokens) | chunk s (tokens) | embed chunks/s "
        "| embed all s (extrapolated) | chunk / embed | chunks (chars 2000/200) "
        "| chunk s (chars) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        t, c = r[d], r["chars(2000, 200)"]
        lines.append(
            f"| {name} | {r['mb']} | {t['chunks']} | {t['chunk_s']} "
            f"| {t.get('embed_chunks_per_s', '-')} | {t.get('embed_all_s_extrapolated', '-')} "
            f"| {t.get('chunk_over_embed', '-')} | {c['chunks']} | {c['chunk_s']} |")
    if rows and all("embed_all_s_extrapolated" in r[d] for r in rows.values()):
        chunk = sum(r[d]["chunk_s"] for r in rows.values())
        embed = sum(r[d]["embed_all_s_extrapolated"] for r in rows.values())
        lines += ["", f"All four: chunking {chunk:.2f} s, embedding ~{embed:.0f} s "
                      f"(extrapolated): chunking is {100 * chunk / embed:.1f}% of embedding."]
    write_report(opts.out_dir, "chunking-speed",
                 {**meta, "documents": rows, "environment": env}, lines, indent=1)
    print("\n".join(lines))


def write_sizes(out: dict[str, Any], opts: argparse.Namespace) -> None:
    lines = [
        "# Chunk counts and sizes on QASPER dev (281 papers)",
        "",
        "Sizes in MiniLM word pieces (no special tokens) of the embedded text (breadcrumb "
        f"included) and of the body alone. `over window`: embedded texts longer than the "
        f"model's {WINDOW}-piece input (with [CLS]/[SEP]); the model ignores their rest.",
        "",
        "| setting | chunks | chunks/doc median (p10-p90) | embed tokens median (p10-p90, max) "
        "| body tokens median (p10-p90) | over window |",
        "|---|---:|---|---|---|---:|",
    ]
    for name, r in out.items():
        e, b, p = r["embed_text_tokens"], r["body_tokens"], r["chunks_per_doc"]
        lines.append(
            f"| {name} | {r['chunks']} | {p['median']} ({p['p10']}-{p['p90']}) "
            f"| {e['median']} ({e['p10']}-{e['p90']}, {e['max']}) "
            f"| {b['median']} ({b['p10']}-{b['p90']}) "
            f"| {r['over_window']} ({100 * r['over_window_share']:.1f}%) |")
    write_report(opts.out_dir, "chunking-sizes", out, lines, indent=1)
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-embed", action="store_true", help="skip the embedding timing")
    ap.add_argument("--out-dir", type=Path, default=RESULTS / "chunking")
    opts = ap.parse_args(argv)
    if not TEN_K.is_dir() or not QASPER.is_dir():
        print(f"needs {TEN_K} and {QASPER}", file=sys.stderr)
        return 2
    count_tokens("warm-up")
    write_speed(speed(opts), opts)
    write_sizes(sizes(), opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
