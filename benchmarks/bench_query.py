"""Query latency on an index of the whole qasper-dev corpus, split into stages.

Stages (``Retrieval.timings``): ``embed`` (the query vector, MiniLM on the CPU), ``search``
(FAISS inner product, plus BM25 and fusion when hybrid is on), ``dedupe`` (chunks grouped by
node, then ranked as sections) and ``slice`` (selection, duplicates, sections cut from the
stored copies and packed into the budget). The target: everything after the embedding
(search + dedupe + slice) costs less than the query embedding itself, at the median. The
first mode meets every document cold (its tree, per-line terms and pages are read for the
first time); the last row repeats it with those caches warm.

    python3 benchmarks/bench_query.py [--dataset ../shared/data/qasper-dev] [--questions 300]

Writes ``benchmarks/results/query-latency.{json,md}``. Query vectors are *not* served from
the embedding cache here (the embed stage is the real model), chunk vectors are.
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
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from proxy_pointer import Index  # noqa: E402
from proxy_pointer.embeddings import CachedEmbedder, SentenceTransformerEmbedder  # noqa: E402


class _DocsCachedQueriesLive:
    """Chunk vectors from the cache (they were computed before), query vectors live."""

    def __init__(self, cached: CachedEmbedder, live: SentenceTransformerEmbedder) -> None:
        self._cached, self._live = cached, live
        self.model_id, self.dimension = live.model_id, live.dimension

    def embed_documents(self, texts):
        return self._cached.embed_documents(texts)

    def embed_query(self, text: str):
        return self._live.embed_query(text)


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def corpus_args(doc: str, *, questions: int, out: str) -> argparse.Namespace:
    """The options of a whole-corpus latency benchmark (dataset, embedding cache, question
    count, output stem); exits with status 2 when the dataset folder is not there."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "qasper-dev"))
    ap.add_argument("--cache-dir", default=str(ROOT / "benchmarks" / ".work" / "cache"),
                    help="embedding cache folder")
    ap.add_argument("--questions", type=int, default=questions)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / out))
    args = ap.parse_args()
    args.dataset = Path(args.dataset)
    if not (args.dataset / "docs").is_dir():
        sys.exit(f"{args.dataset}: no dataset here (needs docs/ and questions.jsonl)")
    return args


def corpus_questions(ds: Path, n: int) -> list[str]:
    """``n`` of the dataset's questions in a fixed shuffled order."""
    questions = [json.loads(line)["question"] for line in open(ds / "questions.jsonl")]
    random.Random(0).shuffle(questions)
    return questions[:n]


def measure(idx: Index, questions: list[str], **options: object) -> dict[str, Any]:
    """Retrieve each question once: total and per-stage (``Retrieval.timings``) p50/p95 in
    ms, "after embed" (search + dedupe + slice) and its median over the embedding's."""
    stages: dict[str, list[float]] = {"embed": [], "search": [], "dedupe": [], "slice": []}
    total: list[float] = []
    for q in questions:
        t = time.perf_counter()
        res = idx.retrieve(q, **options)
        total.append(time.perf_counter() - t)
        for k in stages:
            stages[k].append(res.timings.get(k, 0.0))
    after = [a + d + s for a, d, s in zip(stages["search"], stages["dedupe"],
                                          stages["slice"], strict=True)]
    return {
        "queries": len(questions),
        "total_ms": {"p50": _pct(total, 50), "p95": _pct(total, 95)},
        **{f"{k}_ms": {"p50": _pct(v, 50), "p95": _pct(v, 95)} for k, v in stages.items()},
        "after_embed_ms": {"p50": _pct(after, 50), "p95": _pct(after, 95)},
        "after_embed_over_embed_p50": statistics.median(after) / statistics.median(
            stages["embed"]),
    }


def main() -> int:
    args = corpus_args(__doc__, questions=300, out="query-latency")
    ds = args.dataset
    live = SentenceTransformerEmbedder()
    emb = _DocsCachedQueriesLive(CachedEmbedder(live, args.cache_dir), live)
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
    report = {
        "dataset": str(ds.name), "documents": len(idx.documents), "chunks": len(idx.chunks),
        "index_build_seconds_cached_vectors": build_s, "budget": 2000, "k": 10,
        "results": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# Query latency: {ds.name}, {len(idx.documents)} documents, {len(idx.chunks)} chunks,"
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
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
