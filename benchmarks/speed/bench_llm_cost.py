"""What the opt-in LLM steps cost: section summaries per document, the rerank per query.

Both run through the real OpenAI-compatible client against the local recording
endpoint (:mod:`benchmarks.harness.llm_stub`), which counts every request and answers with a
placeholder. A placeholder names no section, so the rerank order stays as it was, and a
placeholder summary says nothing: this run measures cost only and reports no quality. The
summaries are written into a fresh, temporary cache (the hash embedder embeds them: only
the LLM side is measured). Prompt tokens are MiniLM word pieces of the
system and user messages (``proxy_pointer.tokens``), like every other count here.

    python -m benchmarks.speed.bench_llm_cost [--dataset ../shared/data/qasper-dev] \
        [--questions 200]

Writes ``benchmarks/results/llm_cost/llm-cost.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from proxy_pointer import Index
from proxy_pointer.embeddings import CachedEmbedder, HashEmbedder, make_embedder
from proxy_pointer.llm.openai_compatible import OpenAICompatibleLLM
from proxy_pointer.parse.chunking import ChunkConfig
from proxy_pointer.tokens import count_tokens

from ..common import CACHE, DATA, RESULTS, environment, write_report
from ..harness.llm_stub import RecordingLLMServer


def _rerank_cost(idx: Index, rows: list[dict], llm: Any, server: Any, tops: list[int]
                 ) -> dict[str, dict[str, Any]]:
    """Calls and prompt tokens of the LLM rerank per query, per ``top`` and scope."""
    results = {}
    for top in tops:
        for scope in ("per-doc", "corpus"):
            before = len(server.calls)
            latency = []
            for r in rows:
                doc_ids = [r["doc_id"] + ".md"] if scope == "per-doc" else None
                t = time.perf_counter()
                idx.retrieve(r["question"], doc_ids=doc_ids, rerank_llm=llm, rerank_top=top)
                latency.append(time.perf_counter() - t)
            calls = server.calls[before:]
            prompt_tokens = [count_tokens(c.prompt) for c in calls]
            results[f"top {top}, {scope}"] = {
                "queries": len(rows), "calls": len(calls),
                "calls_per_query": len(calls) / len(rows),
                "prompt_tokens_per_call": statistics.mean(prompt_tokens) if calls else 0,
                "prompt_tokens_per_query": sum(prompt_tokens) / len(rows),
                "retrieve_p50_ms_with_local_llm": 1000 * statistics.median(latency),
            }
    return results


def _summaries_cost(docs: Path, llm: Any, server: Any) -> dict[str, Any]:
    """Section summaries at indexing: one call per section with text, cached by content."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        before = len(server.calls)
        t = time.perf_counter()
        summarized = Index.build([docs], embedder=HashEmbedder(64), index_llm=llm,
                                 chunk_config=ChunkConfig(summaries=True))
        seconds = time.perf_counter() - t
        calls = server.calls[before:]
        again = len(server.calls)
        Index.build([docs], embedder=HashEmbedder(64), index_llm=llm,
                    chunk_config=ChunkConfig(summaries=True))
        rebuilt_calls = len(server.calls) - again
    prompt_tokens = [count_tokens(c.prompt) for c in calls]
    n_docs = len(summarized.reader.documents)
    return {"documents": n_docs, "calls": len(calls),
            "calls_per_document": len(calls) / n_docs,
            "prompt_tokens_per_call": statistics.mean(prompt_tokens),
            "prompt_tokens_per_document": sum(prompt_tokens) / n_docs,
            "calls_on_rebuild_with_cache": rebuilt_calls,
            "seconds_with_local_llm": seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=str(DATA / "qasper-dev"))
    ap.add_argument("--cache-dir", default=str(CACHE),
                    help="embedding cache folder")
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--top", type=int, nargs="+", default=[20, 50])
    ap.add_argument("--out", default=str(RESULTS / "llm_cost" / "llm-cost"),
                    help="output path without suffix: writes OUT.json and OUT.md")
    args = ap.parse_args()
    ds = Path(args.dataset)
    if not (ds / "docs").is_dir():
        print(f"{ds}: no dataset here (needs docs/ and questions.jsonl)", file=sys.stderr)
        return 2
    emb = CachedEmbedder(make_embedder("minilm"), args.cache_dir)
    idx = Index.build([ds / "docs"], embedder=emb)
    rows = [json.loads(line) for line in open(ds / "questions.jsonl")]
    random.Random(0).shuffle(rows)
    rows = rows[: args.questions]
    with RecordingLLMServer() as server:
        llm = OpenAICompatibleLLM(server.base_url, "recorder")
        results = _rerank_cost(idx, rows, llm, server, args.top)
        summaries = _summaries_cost(ds / "docs", llm, server)
    report = {"dataset": ds.name, "documents": len(idx.reader.documents),
              "chunks": len(idx.reader.chunks),
              "quality": "not measured: the recording endpoint answers with placeholders",
              "rerank": results, "summaries": summaries, "environment": environment()}
    out = Path(args.out).with_suffix("")
    lines = [f"# Opt-in LLM steps: cost on {ds.name} (placeholder replies: cost only, no "
             "quality)", "", f"Rerank, {len(rows)} questions:", "",
             "| setting | LLM calls/query | prompt tokens/call | prompt tokens/query |",
             "|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['calls_per_query']:.2f} | "
                     f"{r['prompt_tokens_per_call']:.0f} | {r['prompt_tokens_per_query']:.0f} |")
    lines += ["", f"Section summaries at indexing, {summaries['documents']} documents: "
              f"{summaries['calls']} calls ({summaries['calls_per_document']:.1f} per document), "
              f"{summaries['prompt_tokens_per_call']:.0f} prompt tokens per call, "
              f"{summaries['prompt_tokens_per_document']:.0f} per document; "
              f"a rebuild with the cache made {summaries['calls_on_rebuild_with_cache']} calls."]
    write_report(out.parent, out.name, report, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
