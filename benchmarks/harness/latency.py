"""Whole-corpus query latency, shared by the latency benchmarks (``speed/bench_query``,
``speed/bench_milvus``): chunk vectors cached with query vectors live, the options of a
corpus run, its questions in a fixed order, and one pass's per-stage percentiles."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from proxy_pointer import Index
from proxy_pointer.embeddings import CachedEmbedder, SentenceTransformerEmbedder

from ..common import CACHE, DATA, RESULTS, percentiles

__all__ = ["DocsCachedQueriesLive", "corpus_args", "corpus_questions", "measure", "ms"]


class DocsCachedQueriesLive:
    """Chunk vectors from the cache (they were computed before), query vectors live (also
    shared by the latency benchmarks)."""

    def __init__(self, cached: CachedEmbedder, live: SentenceTransformerEmbedder) -> None:
        self._cached, self._live = cached, live
        self.model_id, self.dimension = live.model_id, live.dimension

    @property
    def max_tokens(self) -> int:
        return self._live.max_tokens

    @property
    def tokenizer(self) -> Any:
        return self._live.tokenizer

    def embed_documents(self, texts):
        return self._cached.embed_documents(texts)

    def embed_query(self, text: str):
        return self._live.embed_query(text)


def ms(values: list[float]) -> dict[str, float]:
    """p50 and p95 of ``values`` (seconds) in milliseconds."""
    return percentiles(values, (50, 95), scale=1000.0)


def corpus_args(doc: str, *, questions: int, out: str) -> argparse.Namespace:
    """The options of a whole-corpus latency benchmark (dataset, embedding cache, question
    count, output stem); exits with status 2 when the dataset folder is not there."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--dataset", default=str(DATA / "qasper-dev"))
    ap.add_argument("--cache-dir", default=str(CACHE), help="embedding cache folder")
    ap.add_argument("--questions", type=int, default=questions)
    ap.add_argument("--out", default=str(RESULTS / out),
                    help="output path without suffix: writes OUT.json and OUT.md")
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
        "total_ms": ms(total),
        **{f"{k}_ms": ms(v) for k, v in stages.items()},
        "after_embed_ms": ms(after),
        "after_embed_over_embed_p50": statistics.median(after) / statistics.median(
            stages["embed"]),
    }
