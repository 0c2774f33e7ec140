"""Query latency and write time: the same index in the local store and in Milvus Lite.

One index of the whole qasper-dev corpus (chunk vectors from the embedding cache) is saved
to a local directory and to a Milvus Lite file, each loaded back as a query process would,
and the same questions are asked of both in turn (whole-corpus search, library defaults).
Per store: total ``retrieve`` time and its stages (``Retrieval.timings``) at p50 and p95, a
first pass (cold: documents, trees and rows read for the first time) and a second (warm).
The query embedding is the same model call for both, so "after embed" is where the
stores differ. Also the seconds to save the index into each store.

    python -m benchmarks.speed.bench_milvus [--dataset ../shared/data/qasper-dev] [--questions 892]

Writes ``benchmarks/results/milvus/milvus-latency.{json,md}``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from proxy_pointer import Index
from proxy_pointer.embeddings import CachedEmbedder, SentenceTransformerEmbedder

from ..common import environment, write_report
from ..harness.latency import DocsCachedQueriesLive, corpus_args, corpus_questions, measure


def main() -> int:
    args = corpus_args(__doc__, questions=892, out="milvus/milvus-latency")
    ds = args.dataset
    live = SentenceTransformerEmbedder()
    emb = DocsCachedQueriesLive(CachedEmbedder(live, args.cache_dir), live)
    built = Index.build([ds / "docs"], embedder=emb)
    questions = corpus_questions(ds, args.questions)
    live.embed_query("warm up the model")
    tmp = Path(tempfile.mkdtemp(prefix="pp-milvus-bench-"))
    stores = {"local": str(tmp / "local"), "milvus-lite": f"milvus:{tmp / 'milvus.db'}"}
    save_s, loaded = {}, {}
    for name, loc in stores.items():
        t = time.perf_counter()
        built.save(loc)
        save_s[name] = time.perf_counter() - t
        loaded[name] = Index.load(loc, embedder=emb)
        loaded[name].retrieve("warm up the connection")
    rows: dict[str, dict] = {}
    for label in ("cold", "warm"):
        for name, idx in loaded.items():
            rows[f"{name}, {label}"] = measure(idx, questions)
    ratio = {label: rows[f"milvus-lite, {label}"]["total_ms"]["p50"]
             / rows[f"local, {label}"]["total_ms"]["p50"] for label in ("cold", "warm")}
    report = {"dataset": ds.name, "documents": len(built.reader.documents),
              "chunks": len(built.reader.chunks),
              "questions": len(questions), "budget": 2000, "k": 10, "save_seconds": save_s,
              "milvus_over_local_total_p50": ratio, "results": rows,
              "environment": environment("pymilvus", "milvus-lite")}
    out = Path(args.out).with_suffix("")
    lines = [
        f"# Local store vs Milvus Lite: {ds.name}, {len(built.reader.documents)} documents, "
        f"{len(built.reader.chunks)} chunks, whole-corpus search, defaults, "
        f"{len(questions)} questions",
        "",
        "| store, pass | total p50 / p95 ms | embed | search | dedupe | slice | after embed |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, r in rows.items():
        cells = " | ".join(f"{r[k]['p50']:.1f} / {r[k]['p95']:.1f}" for k in (
            "total_ms", "embed_ms", "search_ms", "dedupe_ms", "slice_ms", "after_embed_ms"))
        lines.append(f"| {label} | {cells} |")
    lines += ["", f"Milvus Lite / local, total p50: {ratio['cold']:.1f}x cold, "
              f"{ratio['warm']:.1f}x warm. Save: local {save_s['local']:.1f} s, Milvus Lite "
              f"{save_s['milvus-lite']:.1f} s."]
    write_report(out.parent, out.name, report, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
