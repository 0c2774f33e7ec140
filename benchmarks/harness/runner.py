"""Run methods over a dataset: build each once, then retrieve, pack and score per question.

Costs recorded per method: index build seconds (embedding included; ``embed_computed`` says
how much of it a warm cache saved), texts embedded, LLM calls and tokens at index time and
per query, index size on disk, query latency p50/p95 (retrieve + pack, per question and
budget; query vectors are computed once per question beforehand and shared, so latency
excludes the query encoder, reported separately), and peak memory: the ``tracemalloc`` peak
of a second, from-scratch build (Python and numpy allocations; the embedding model's torch
tensors are not traced and a warm cache serves the vectors), plus the process's peak RSS
at the end (:func:`benchmarks.common.peak_rss_mib`).
"""

from __future__ import annotations

import hashlib
import sys
import time
import tracemalloc
from dataclasses import asdict
from typing import Any

from .. import common
from .answers import answer_question
from .context import __doc__ as PACKING_RULE
from .context import pack
from .dataset import Dataset
from .methods import (
    SCOPES,
    BuildStats,
    CountingEmbedder,
    MethodUnavailable,
    fresh_caches,
    make_method,
)
from .metrics import aggregate, score_context

__all__ = ["run_benchmark"]


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def run_benchmark(dataset: Dataset, *, methods: list[str], scopes: list[str],
                  budgets: list[int], embedder: Any, k: int | None = None, memory: bool = True,
                  llm: Any = None, answer_budget: int | None = None,
                  details: list[dict] | None = None) -> dict:
    """Benchmark ``methods`` on ``dataset``; returns the results dict the report writes.

    ``embedder`` is shared by every embedding method. ``llm`` (a proxy_pointer.llm LLM)
    turns on answer quality at ``answer_budget`` (default: the largest budget). When
    ``details`` is a list, one row per question, method, scope and budget is appended to it.
    Raises ValueError for an unknown scope or method.
    """
    for s in scopes:
        if s not in SCOPES:
            raise ValueError(f"unknown scope {s!r}; choose from {', '.join(SCOPES)}")
    budgets = sorted(set(budgets))
    answer_budget = answer_budget or budgets[-1]
    started = time.perf_counter()
    counting = CountingEmbedder(embedder)
    questions = dataset.questions
    needs_vectors = any(getattr(make_method(n, k=k), "uses_embedder", True) for n in methods)
    query_embedding = _embed_queries(dataset, embedder, counting, needs_vectors)
    out: dict[str, Any] = {}
    peaks: dict[str, float] = {}
    for name in methods:
        method = make_method(name, k=k)
        out[name] = entry = {"description": method.description,
                             "points_at_sections": method.points_at_sections}
        _log(f"{name}: building ({method.description})")
        try:
            stats: BuildStats = method.build(dataset, counting)
        except MethodUnavailable as exc:
            _log(f"{name}: SKIPPED - {exc}")
            entry.update(status="skipped", reason=str(exc))
            continue
        build = asdict(stats)
        build["peak_mib"] = _peak(name, method, dataset, counting, k, peaks) if memory else None
        entry.update(status="ok", build=build)
        quality = getattr(method, "quality", True)
        entry["quality_measured"] = quality
        _log(f"{name}: built in {stats.seconds:.1f}s ({stats.units} units, "
             f"{stats.embed_computed} embedded now)")
        entry["scopes"] = {scope: _scope_entry(name, dataset, method, scope, budgets, quality,
                                               llm, answer_budget, details) for scope in scopes}
    return {
        "dataset": {"name": dataset.name, "path": _display_path(dataset.root),
                    "documents": len(dataset.docs), "questions": len(questions),
                    "warnings": list(dataset.warnings),
                    **({"matching": dataset.matching} if dataset.matching != "exact" else {}),
                    **({"pages": sum(map(len, dataset.pages.values()))}
                       if dataset.paged else {})},
        "date": time.strftime("%Y-%m-%d"),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": {"methods": methods, "scopes": scopes, "budgets": budgets, "k": k,
                   "embedder": embedder.model_id, "packing_rule": " ".join(
                       PACKING_RULE.split("**Packing rule.**", 1)[-1].split()),
                   "answer_budget": answer_budget if llm is not None else None,
                   "llm": getattr(llm, "model_id", None)},
        "environment": common.environment(),
        "query_embedding": query_embedding,
        "embedder_texts": counting.texts,
        "seconds": time.perf_counter() - started,
        "maxrss_mib": common.peak_rss_mib(),
        "methods": out,
    }


def _embed_queries(dataset: Dataset, embedder: Any, counting: CountingEmbedder,
                   needs_vectors: bool) -> dict[str, Any]:
    """Every question embedded once up front (timed apart from retrieval)."""
    questions = dataset.questions
    load_seconds = _load_model(embedder) if needs_vectors else 0.0
    t0 = time.perf_counter()
    computed = counting.precompute(q.question.strip() for q in questions) if needs_vectors else 0
    query_embedding = {"queries": len(questions), "computed": computed,
                       "seconds": time.perf_counter() - t0,
                       "ms_per_query": (1000 * (time.perf_counter() - t0) / computed
                                        if computed else None),
                       "model_load_seconds": load_seconds}
    _log(f"{dataset.name}: {len(dataset.docs)} documents, {len(questions)} questions; "
         f"embedded {computed} queries in {query_embedding['seconds']:.1f}s")
    return query_embedding


def _scope_entry(name: str, dataset: Dataset, method: Any, scope: str, budgets: list[int],
                 quality: bool, llm: Any, answer_budget: int, details: list[dict] | None
                 ) -> dict:
    """One method's results in one scope, or why there are none."""
    if scope not in method.scopes:
        reason = getattr(method, "scope_notes", {}).get(scope, "not supported")
        return {"status": "n/a", "reason": reason}
    try:
        return _run_scope(dataset, method, scope, budgets, quality, llm, answer_budget, details)
    except Exception as exc:  # one failing method must not lose the others' results
        _log(f"{name} [{scope}]: FAILED - {type(exc).__name__}: {exc}")
        return {"status": "error", "reason": f"{type(exc).__name__}: {exc}"}


def _run_scope(dataset: Dataset, method: Any, scope: str, budgets: list[int], quality: bool,
               llm: Any, answer_budget: int, details: list[dict] | None) -> dict:
    scores: dict[int, list] = {b: [] for b in budgets}
    latencies: list[float] = []
    answers: list = []
    own_latency = getattr(method, "query_seconds", None)
    n = len(dataset.questions)
    for i, q in enumerate(dataset.questions, 1):
        for b in budgets:
            t0 = time.perf_counter()
            ctx = pack(method.retrieve(q, scope, b), b)
            latencies.append(time.perf_counter() - t0)
            if not quality:
                continue
            s = score_context(q, ctx, sections=method.points_at_sections,
                              matching=dataset.matching, pages=dataset.paged)
            scores[b].append(s)
            if details is not None:
                details.append({"method": method.name, "scope": scope, "budget": b,
                                **asdict(s), "context_sha256": hashlib.sha256(
                                    ctx.text.encode("utf-8")).hexdigest()})
            if llm is not None and b == answer_budget:
                answers.append(answer_question(q, ctx, llm))
        if i % 100 == 0 or i == n:
            _log(f"{method.name} [{scope}]: {i}/{n} questions")
    if own_latency is not None:  # an LLM method's latency is its LLM call, timed in-process
        latencies = [t for q in dataset.questions if (t := own_latency(q)) is not None]
    result: dict[str, Any] = {
        "status": "ok",
        "latency_ms": {**common.percentiles(latencies, (50, 95), scale=1000, empty=0.0),
                       "calls": len(latencies)},
    }
    if own_latency is not None and not quality:
        result["latency_ms"] = None  # a placeholder LLM's latency is not the method's
    if quality:
        result["budgets"] = {str(b): aggregate(scores[b]) for b in budgets}
    else:
        result["budgets"] = None
        result["reason"] = "no LLM configured: quality not measured (placeholder replies)"
    if answers:
        f1s = [a.f1 for a in answers if a.f1 is not None]
        result["answers"] = {
            "budget": answer_budget, "questions": len(answers),
            "f1": sum(f1s) / len(f1s) if f1s else None,
            "llm_calls_per_query": sum(a.calls for a in answers) / len(answers),
            "llm_in_tokens_per_query": sum(a.in_tokens for a in answers) / len(answers),
            "llm_out_tokens_per_query": sum(a.out_tokens for a in answers) / len(answers),
        }
    return result


def _peak(name: str, method: Any, dataset: Dataset, counting: CountingEmbedder, k: int,
          peaks: dict[str, float]) -> float | None:
    """tracemalloc peak (MiB) of a second, from-scratch build; None for subprocess methods."""
    if name == "pageindex":
        return None  # runs in another process: see build.extra.runner_maxrss_mib
    key = getattr(method, "memory_key", name)
    if key in peaks:
        return peaks[key]
    fresh = make_method(name, k=k)
    texts = counting.texts
    with fresh_caches():
        tracemalloc.start()
        try:
            fresh.build(dataset, counting)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    counting.texts = texts  # the repeat build is not part of the method's embedding cost
    peaks[key] = peak / 2**20
    return peaks[key]


def _load_model(embedder: Any) -> float:
    """Load a lazily loaded model now, so no method's build time pays for it; returns seconds.

    Embeds one text with the innermost embedder, past any cache.
    """
    inner = embedder
    while hasattr(inner, "inner"):
        inner = inner.inner
    t0 = time.perf_counter()
    inner.embed_documents(["warm-up"])
    return time.perf_counter() - t0


def _display_path(path: Any) -> str:
    """``path`` relative to the working directory when it lies below it (no home paths)."""
    import os

    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
