"""Query latency on an index of the whole qasper-dev corpus, split into stages.

Stages (``Retrieval.timings``): ``embed`` (the query vector, MiniLM on the CPU), ``search``
(FAISS inner product, plus BM25 and fusion when hybrid is on), ``dedupe`` (chunks grouped by
node, then ranked as sections) and ``slice`` (selection, duplicates, sections cut from the
stored copies and packed into the budget). The target: everything after the embedding
(search + dedupe + slice) costs less than the query embedding itself, at the median. The
first mode meets every document cold (its tree, per-line terms and pages are read for the
first time); the last row repeats it with those caches warm.

Access filters: every document gets ``access: ["gN"]`` (N = its position mod 10), and the
same questions run with no filter and as principals holding all ten groups (every
document visible through the filter), five (half) and one (a tenth), each question through
every view in turn so that the views share the machine's state. The target: a principal
filter within 10% of no filter at the median.

    python -m benchmarks.speed.bench_query [--dataset ../shared/data/qasper-dev] [--questions 300]

Writes ``benchmarks/results/query/query-latency.{json,md}``. Query vectors are *not* served from
the embedding cache here (the embed stage is the real model), chunk vectors are.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from proxy_pointer import Index
from proxy_pointer.embeddings import CachedEmbedder, SentenceTransformerEmbedder

from ..common import environment, time_views, write_report
from ..harness.latency import DocsCachedQueriesLive, corpus_args, corpus_questions, measure
from ..harness.latency import ms as _ms

#: Principal filter views: label -> groups (None: no filter). Documents carry ``g0..g9``.
VIEWS: dict[str, list[str] | None] = {
    "no filter": None,
    "principal: all 10 groups (100% of documents)": [f"g{i}" for i in range(10)],
    "principal: 5 groups (50%)": [f"g{i}" for i in range(5)],
    "principal: 1 group (10%)": ["g0"],
}


def measure_views(idx: Index, questions: list[str]) -> dict[str, Any]:
    """Each question through every :data:`VIEWS` entry in turn (:func:`time_views`),
    p50/p95 of the total and of the part after the embedding, and both medians over no
    filter's."""
    timed = time_views(idx.retrieve, questions, VIEWS)
    total = {label: t for label, (t, _) in timed.items()}
    after = {label: a for label, (_, a) in timed.items()}
    labels = list(VIEWS)
    base_total, base_after = (statistics.median(total["no filter"]),
                              statistics.median(after["no filter"]))
    return {label: {"total_ms": _ms(total[label]), "after_embed_ms": _ms(after[label]),
                    "total_over_no_filter_p50": statistics.median(total[label]) / base_total,
                    "after_embed_over_no_filter_p50":
                        statistics.median(after[label]) / base_after}
            for label in labels}


def main() -> int:
    args = corpus_args(__doc__, questions=300, out="query/query-latency")
    ds = args.dataset
    live = SentenceTransformerEmbedder()
    emb = DocsCachedQueriesLive(CachedEmbedder(live, args.cache_dir), live)
    t0 = time.perf_counter()
    idx = Index.build([ds / "docs"], embedder=emb)
    build_s = time.perf_counter() - t0
    questions = corpus_questions(ds, args.questions)
    live.embed_query("warm up the model")
    rows = {}
    modes = (("default (chunks, evidence packing)", {}),
             ("whole sections (before)", {"packing": "sections"}),
             ("collapsed", {"mode": "collapsed"}), ("traverse", {"mode": "traverse"}),
             ("dense only", {"hybrid": False}),
             # The same questions again: trees, per-line terms and pages are cached now.
             ("default, second pass (warm caches)", {}))
    for label, options in modes:
        idx.retrieve("warm up the BM25 index and caches", **options)
        rows[label] = measure(idx, questions, **options)
    idx.set_metadata({d: {"access": [f"g{i % 10}"]}
                      for i, d in enumerate(sorted(idx.reader.documents))})
    for groups in VIEWS.values():  # each view's rows are worked out once per generation
        idx.retrieve("warm up the views", principal=groups)
    views = measure_views(idx, questions)
    report = {
        "dataset": str(ds.name), "documents": len(idx.reader.documents),
        "chunks": len(idx.reader.chunks),
        "index_build_seconds_cached_vectors": build_s, "budget": 2000, "k": 10,
        "results": rows, "access_views": views, "environment": environment(),
    }
    out = Path(args.out).with_suffix("")
    lines = [
        f"# Query latency: {ds.name}, {len(idx.reader.documents)} documents, "
        f"{len(idx.reader.chunks)} chunks,"
        f" whole-corpus search, budget 2000, k 10, {len(questions)} questions",
        "",
        "| mode | total p50/p95 ms | embed | search | dedupe | slice | after embed | "
        "after embed / embed (p50) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, r in rows.items():
        def cell(k: str, r: dict = r) -> str:
            return f"{r[k]['p50']:.1f} / {r[k]['p95']:.1f}"

        lines.append(
            f"| {label} | {cell('total_ms')} | {cell('embed_ms')} | {cell('search_ms')} | "
            f"{cell('dedupe_ms')} | {cell('slice_ms')} | {cell('after_embed_ms')} | "
            f"{r['after_embed_over_embed_p50']:.2f}x |"
        )
    lines += ["", "## Principal filters (each question through every view in turn)", "",
              "| view | total p50/p95 ms | after embed p50/p95 ms | total / no filter (p50) | "
              "after embed / no filter (p50) |", "|---|---|---|---|---|"]
    for label, r in views.items():
        lines.append(f"| {label} | {r['total_ms']['p50']:.1f} / {r['total_ms']['p95']:.1f} | "
                     f"{r['after_embed_ms']['p50']:.1f} / {r['after_embed_ms']['p95']:.1f} | "
                     f"{r['total_over_no_filter_p50']:.2f}x | "
                     f"{r['after_embed_over_no_filter_p50']:.2f}x |")
    write_report(out.parent, out.name, report, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
