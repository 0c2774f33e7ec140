"""Indexing throughput, index size and query latency of :class:`proxy_pointer.index.Index`.

Usage::

    python -m benchmarks.speed.bench_index [--base-docs 30] [--scales 1 10 100] [--sample 300]

1. **Throughput.** Indexes all of ``../shared/data/qasper-dev`` (281 papers) and the four
   10-Ks of ``../shared/data/finance-10k`` with the bundled MiniLM behind the embedding cache
   shared with the other benchmarks (``benchmarks/.work/cache``), and breaks wall time down
   into tree, chunking, embedding and index update (``UpdateReport.timings``), the save
   (``Index.save``) and the rest (finding, reading, hashing files). It reports how many texts
   the model computed and how many the cache served, the model's throughput on the computed
   ones, and the non-embedding share of wall time (target < 10 % when embedding is real
   work). When the cache served most texts, that share says little, so the model is also
   timed on ``--sample`` chunks (without the cache) and the embedding cost of the whole
   corpus extrapolated from it; the report says which figure is which. Peak memory is the
   process's peak RSS (:func:`benchmarks.common.peak_rss_mib`; it includes the model).
2. **Scale.** A base index of the first ``--base-docs`` qasper papers is replicated to
   ``--scales`` times its size *through Index internals* (each copy gets fresh doc ids; its
   chunks and vectors are the base's, so no re-chunking or embedding is needed). For each
   scale: size on disk, load time, search latency p50/p95 (``k_search`` = 200 chunks, query
   vectors precomputed) for exact (``flat``) and approximate (``hnsw``) search, full
   ``retrieve()`` latency, and HNSW recall@10 against exact search. Replicated vectors
   get a little noise (``--jitter``, cosine about 0.9 to the original): with exact
   duplicates (``--jitter 0``) FAISS's HNSW graph degenerates - at 100 copies recall@10
   stays near 0.27 whatever ``efSearch`` - which a real corpus with that much duplication
   would suffer too, but which says nothing about HNSW on ordinary data. The full qasper
   index of step 1 (real, distinct vectors, about 10x the base) is measured as a check.
   Recall counts an HNSW hit when it scores at least the exact 10th score, so exact ties
   are interchangeable; ``recall_at_10_ids`` is plain id overlap.

Writes ``benchmarks/results/index/index-bench.json``, ``index-bench.md`` and (with matplotlib)
``index-bench.png``. The first run on an empty cache embeds every chunk (minutes per
thousand chunks on a laptop CPU); later runs read the vectors from the cache.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from proxy_pointer.embeddings import CachedEmbedder, Embedder, make_embedder
from proxy_pointer.index import Index
from proxy_pointer.stores import current_generation
from proxy_pointer.stores.vectors import VectorIndex, VectorIndexConfig

from ..common import (
    CACHE,
    DATA,
    RESULTS,
    environment,
    peak_rss_mib,
    percentile,
    pyplot,
    write_report,
)

TARGET_SHARE = 0.10
K_SEARCH = 200


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--cache-dir", type=Path, default=CACHE)
    p.add_argument("--out-dir", type=Path, default=RESULTS / "index")
    p.add_argument("--base-docs", type=int, default=30)
    p.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    p.add_argument("--sample", type=int, default=300,
                   help="chunks to time the model on when the cache is warm")
    p.add_argument("--queries", type=int, default=150)
    p.add_argument("--jitter", type=float, default=0.5,
                   help="noise norm added to replicated vectors (0 = exact duplicates)")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--embedder", default="minilm",
                   help="embedder spec (default minilm; 'hash' for a quick smoke run)")
    return p.parse_args()


def dir_bytes(path: Path) -> dict[str, int]:
    """Bytes of each part of an index directory (segments, sources, manifests)."""
    assert current_generation(path) is not None
    parts = {"vectors": 0, "chunks": 0, "sources": 0, "other": 0}
    for f in path.rglob("*"):
        if not f.is_file():
            continue
        size = f.stat().st_size
        key = ("vectors" if f.name == "vectors.npy" else "chunks" if f.name == "meta.sqlite"
               else "sources" if f.parent.name == "sources" else "other")
        parts[key] += size
    parts["total"] = sum(parts.values())
    return parts


# --- 1. throughput ----------------------------------------------------------------------
def throughput(args: argparse.Namespace, emb: CachedEmbedder, work: Path
               ) -> tuple[list[dict[str, Any]], dict[str, Index]]:
    corpora = [("qasper-dev", args.data / "qasper-dev" / "docs"),
               ("finance-10k", args.data / "finance-10k" / "docs")]
    rows, built = [], {}
    for name, docs in corpora:
        idx = Index(embedder=emb)
        hits0, misses0 = emb.hits, emb.misses
        print(f"[throughput] indexing {name} ...", flush=True)
        rep = idx.update([docs])
        t = time.perf_counter()
        idx.save(work / name)
        write = time.perf_counter() - t
        tm = rep.timings
        wall = rep.seconds + write
        computed, cached = emb.misses - misses0, emb.hits - hits0
        parts = {"tree": tm["tree"], "chunking": tm["chunking"], "embedding": tm["embedding"],
                 "index": tm["index"], "write": write}
        # tree/chunking are summed over parse workers, so they can overlap embedding.
        parts["other"] = max(0.0, wall - sum(parts.values()))
        row = {
            "corpus": name, "documents": len(idx), "chunks": rep.chunks,
            "bytes": sum(r.size for r in idx.reader.documents.values()),
            "texts_embedded": rep.embedded, "computed": computed, "from_cache": cached,
            "seconds": parts, "wall_s": wall,
            "non_embedding_s": wall - tm["embedding"],
            "non_embedding_share_measured": (wall - tm["embedding"]) / wall,
            "model_rate_measured": computed / tm["embedding"] if computed >= 100 else None,
            "peak_rss_mb": peak_rss_mib(),
            "index_bytes": dir_bytes(work / name)["total"],
        }
        rows.append(row)
        built[name] = idx
        print(f"  {rep.summary()}; computed {computed}, cached {cached}; "
              f"write {write:.1f}s; peak RSS {row['peak_rss_mb']:.0f} MB", flush=True)
    return rows, built


def model_rate(st: Embedder, idx: Index, n: int) -> dict[str, float]:
    """Chunks per second of the bare model (no cache) on ``n`` random chunks of ``idx``."""
    texts = [c.embed_text for c in idx.reader.chunks]
    sample = random.Random(0).sample(texts, min(n, len(texts)))
    t = time.perf_counter()
    st.embed_documents(sample)
    secs = time.perf_counter() - t
    return {"n": len(sample), "seconds": secs, "rate": len(sample) / secs,
            "mean_chars": sum(map(len, sample)) / len(sample)}


# --- 2. scale ---------------------------------------------------------------------------
def replicate(base: Index, times: int, jitter: float) -> Index:
    """``times`` copies of ``base`` under fresh doc ids, built from its chunks and vectors.

    Copy 0 is ``base``; every other copy's vectors are the base's plus Gaussian noise of
    norm about ``jitter``, renormalized (cosine about ``1 / sqrt(1 + jitter**2)`` to the
    original), so the index holds distinct vectors: with exact duplicates FAISS's HNSW
    graph falls apart (see the module docstring) and recall would measure that instead.
    """
    docs, texts, chunks = {}, {}, []
    n, d = base.reader.vectors.shape
    parts = [base.reader.vectors]
    for j in range(1, times):
        noise = np.random.default_rng(j).standard_normal((n, d)).astype(np.float32)
        v = base.reader.vectors + noise * (jitter / np.sqrt(d))
        parts.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    for j in range(times):
        prefix = "" if j == 0 else f"copy{j:03d}/"
        for doc_id, rec in base.reader.documents.items():
            docs[prefix + doc_id] = dataclasses.replace(rec, doc_id=prefix + doc_id)
            texts[prefix + doc_id] = base.reader.text(doc_id)
        chunks.extend(dataclasses.replace(c, doc_id=prefix + c.doc_id) for c in base.reader.chunks)
    return Index.from_parts(documents=docs, texts=texts, chunks=chunks,
                            vectors=np.concatenate(parts), embedder=base.embedder,
                            chunk_config=base.chunk_config)


def recall_at_10(vectors: np.ndarray, exact: list[np.ndarray], approx: list[np.ndarray],
                 queries: np.ndarray) -> tuple[float, float]:
    """(tie-aware recall, id recall): an approximate hit counts for the first when it scores
    at least the exact 10th score, for the second when it is one of the exact top-10 rows."""
    tie = ids = 0.0
    for q, e, a in zip(queries, exact, approx, strict=True):
        e, a = e[:10], a[:10]
        tenth = float(vectors[e[-1]] @ q)
        tie += sum(float(vectors[r] @ q) >= tenth - 1e-5 for r in a) / len(e)
        ids += len(set(e.tolist()) & set(a.tolist())) / len(e)
    return tie / len(queries), ids / len(queries)


def _one_thread_p50(vi: Any, qvecs: np.ndarray) -> float:
    """Search p50 with FAISS limited to one OpenMP thread (cores busy with other work)."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        lat = []
        for q in qvecs:
            t = time.perf_counter()
            vi.search(q, K_SEARCH)
            lat.append((time.perf_counter() - t) * 1000)
    finally:
        faiss.omp_set_num_threads(before)
    return percentile(lat, 50)


def _ef_sweep(vi: Any, vectors: np.ndarray, qvecs: np.ndarray, exact: list[np.ndarray]
              ) -> list[dict[str, float]]:
    """Recall@10 and p50 latency (k=10) of the HNSW index at several efSearch values."""
    hnsw = vi._faiss.hnsw
    saved, out = hnsw.efSearch, []
    try:
        for ef in (16, 32, 64, 128, 256, 512):
            hnsw.efSearch = ef
            lat, found = [], []
            for q in qvecs:
                t = time.perf_counter()
                found.append(vi.search(q, 10)[1])
                lat.append((time.perf_counter() - t) * 1000)
            tie, ids = recall_at_10(vectors, exact, found, qvecs)
            out.append({"ef_search": ef, "recall_at_10": tie, "recall_at_10_ids": ids,
                        "p50_ms": percentile(lat, 50)})
    finally:
        hnsw.efSearch = saved
    return out


def measure(idx: Index, label: str, questions: list[str], qvecs: np.ndarray, work: Path,
            save: bool = True, sweep: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {"label": label, "documents": len(idx), "chunks": len(idx.reader.chunks)}
    if save:
        target = work / f"scale-{label}"
        t = time.perf_counter()
        idx.save(target)
        row["save_s"] = time.perf_counter() - t
        row["disk"] = dir_bytes(target)
        t = time.perf_counter()
        loaded = Index.load(target, embedder=idx.embedder)
        row["load_s"] = time.perf_counter() - t
        del loaded
        shutil.rmtree(target)
    for kind in ("flat", "hnsw"):
        idx.vector_config = VectorIndexConfig(kind=kind)
        t = time.perf_counter()
        vi = VectorIndex(idx.reader.vectors, idx.vector_config)
        build = time.perf_counter() - t
        lat, found = [], []
        for q in qvecs:
            t = time.perf_counter()
            _, rows = vi.search(q, K_SEARCH)
            lat.append((time.perf_counter() - t) * 1000)
            found.append(rows)
        rlat: list[float] = []
        for question in questions:
            t = time.perf_counter()
            try:
                idx.retrieve(question)
            except Exception as e:  # retrieval is not what this measures; report, go on
                print(f"  retrieve() failed, skipping its latency: {e!r}", file=sys.stderr)
                rlat = []
                break
            rlat.append((time.perf_counter() - t) * 1000)
        row[kind] = {"build_s": build, "search_p50_ms": percentile(lat, 50),
                     "search_p95_ms": percentile(lat, 95),
                     "search_p50_ms_1thread": _one_thread_p50(vi, qvecs),
                     "retrieve_p50_ms": percentile(rlat, 50),
                     "retrieve_p95_ms": percentile(rlat, 95), "_found": found}
        if kind == "hnsw":
            import faiss

            row[kind]["bytes"] = len(faiss.serialize_index(vi._faiss))
            if sweep:
                row[kind]["ef_sweep"] = _ef_sweep(vi, idx.reader.vectors, qvecs,
                                                  row["flat"]["_found"])
    tie, ids = recall_at_10(idx.reader.vectors, row["flat"].pop("_found"),
                            row["hnsw"].pop("_found"), qvecs)
    row["hnsw"]["recall_at_10"] = tie
    row["hnsw"]["recall_at_10_ids"] = ids
    print(f"  [{label}] {row['chunks']} chunks: flat p50 {row['flat']['search_p50_ms']:.2f} ms, "
          f"hnsw p50 {row['hnsw']['search_p50_ms']:.2f} ms, recall@10 {tie:.3f} "
          f"(ids {ids:.3f}), peak RSS {peak_rss_mib():.0f} MB", flush=True)
    return row


def scale(args: argparse.Namespace, emb: CachedEmbedder, full: Index | None, work: Path
          ) -> list[dict[str, Any]]:
    docs_dir = args.data / "qasper-dev" / "docs"
    base_files = sorted(docs_dir.glob("*.md"))[: args.base_docs]
    print(f"[scale] base index of {len(base_files)} qasper papers ...", flush=True)
    base = Index.build(base_files, embedder=emb)
    stems = {p.stem for p in base_files}
    questions = []
    for line in (args.data / "qasper-dev" / "questions.jsonl").read_text().splitlines():
        item = json.loads(line)
        if item["doc_id"] in stems:
            questions.append(item["question"])
    if len(questions) < args.queries:  # top up with other papers' questions
        for line in (args.data / "qasper-dev" / "questions.jsonl").read_text().splitlines():
            q = json.loads(line)["question"]
            if len(questions) >= args.queries:
                break
            if q not in questions:
                questions.append(q)
    questions = questions[: args.queries]
    qvecs = np.stack([emb.embed_query(q) for q in questions]).astype(np.float32)
    rows = []
    for times in args.scales:
        idx = base if times == 1 else replicate(base, times, args.jitter)
        rows.append(measure(idx, f"{times}x", questions, qvecs, work,
                            sweep=times == max(args.scales)))
        rows[-1]["scale"] = times
        del idx
    if full is None:
        print("[scale] full qasper index (vectors from the cache) ...", flush=True)
        full = Index.build([docs_dir], embedder=emb)
    if full is not None:
        row = measure(full, "qasper-281 (distinct)", questions, qvecs, work, save=False,
                      sweep=True)
        row["scale"] = len(full.reader.chunks) / len(base.reader.chunks)
        rows.append(row)
    return rows


# --- report -----------------------------------------------------------------------------
def markdown(result: dict[str, Any]) -> str:
    out = ["# Index benchmark", "",
           f"Machine: {result['machine']}. Embedder: {result['embedder']} via the shared cache.",
           ""]
    if result.get("throughput"):
        out += _throughput(result)
    if result.get("scale"):
        out += _scale(result)
    out.append(f"Total benchmark time: {result['total_s']:.0f} s.")
    return "\n".join(out) + "\n"


def _throughput(result: dict[str, Any]) -> list[str]:
    tp = result["throughput"]
    out: list[str] = []
    if "throughput_from" in result:
        out += [f"Throughput section from the run finished {result['throughput_from']} "
                f"({result.get('throughput_total_s') or 0:.0f} s).", ""]
    out += ["## Indexing throughput", "",
            "| corpus | docs | chunks | MB | computed / cached | tree s | chunking s | "
            "embedding s | index s | write s | other s | wall s | non-embedding share "
            "(measured) | est. embedding s (model) | non-embedding share (est.) | "
            "peak RSS MB |",
            "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in tp:
        s = r["seconds"]
        out.append(
            f"| {r['corpus']} | {r['documents']} | {r['chunks']} | {r['bytes'] / 1e6:.1f} "
            f"| {r['computed']} / {r['from_cache']} | {s['tree']:.1f} | {s['chunking']:.1f} "
            f"| {s['embedding']:.1f} | {s['index']:.2f} | {s['write']:.1f} | "
            f"{s['other']:.1f} | {r['wall_s']:.1f} | "
            f"{r['non_embedding_share_measured']:.1%} | {r['est_embedding_s']:.0f} | "
            f"{r['non_embedding_share_estimated']:.1%} | {r['peak_rss_mb']:.0f} |")
    out += ["",
            "*computed* = texts the model embedded in this run, *cached* = served by the "
            "embedding cache. *Measured* share = (wall - embedding) / wall of this run; "
            "it is only meaningful when most texts were computed. *Est.* = embedding "
            "every text with the bare model at the sampled rate below, i.e. a cold run.",
            ""]
    for name, m in result["model_rate"].items():
        out.append(f"- model on {m['n']} random {name} chunks (mean {m['mean_chars']:.0f} "
                   f"chars, no cache): {m['rate']:.1f} chunks/s")
    for r in tp:
        if r["model_rate_measured"] and r["computed"] >= r["texts_embedded"] / 2:
            out.append(f"- {r['corpus']}: {r['computed']} computed texts at "
                       f"{r['model_rate_measured']:.1f} texts/s (cache lookups included)")
    out.append("")
    return out


def _scale(result: dict[str, Any]) -> list[str]:
    sc = result["scale"]
    out: list[str] = []
    out += ["## Scale: size and query latency", "",
            f"Base: {result['base_docs']} qasper papers; larger scales replicate them "
            "through Index internals (fresh ids, same chunks; replicated vectors get "
            f"noise of norm {result.get('jitter', 0)}, i.e. cosine "
            f"~{1 / (1 + result.get('jitter', 0) ** 2) ** 0.5:.2f} to the original, so "
            "they are distinct). Search = the "
            f"vector search for {K_SEARCH} chunks (query vector precomputed); retrieve = "
            f"Index.retrieve() end to end (query vector from the cache); "
            f"{result['queries']} queries. HNSW M=32, efConstruction=80, efSearch=128.",
            "",
            "| index | docs | chunks | disk MB (vectors / meta.sqlite / sources) | "
            "load s | flat search p50 / p95 ms | hnsw search p50 / p95 ms | "
            "flat retrieve p50 / p95 ms | hnsw retrieve p50 / p95 ms | hnsw build s | "
            "hnsw.faiss MB | recall@10 |",
            "|---|---:|---:|---|---:|---|---|---|---|---:|---:|---:|"]
    for r in sc:
        f, h = r["flat"], r["hnsw"]
        disk = r.get("disk")
        disk_s = (f"{disk['total'] / 1e6:.1f} ({disk['vectors'] / 1e6:.1f} / "
                  f"{disk['chunks'] / 1e6:.1f} / {disk['sources'] / 1e6:.1f})"
                  if disk else "-")
        load = f"{r['load_s']:.1f}" if "load_s" in r else "-"
        rec = f"{h['recall_at_10']:.3f}"
        out.append(
            f"| {r['label']} | {r['documents']} | {r['chunks']} | {disk_s} | {load} | "
            f"{f['search_p50_ms']:.2f} / {f['search_p95_ms']:.2f} | "
            f"{h['search_p50_ms']:.2f} / {h['search_p95_ms']:.2f} | "
            f"{f['retrieve_p50_ms']:.1f} / {f['retrieve_p95_ms']:.1f} | "
            f"{h['retrieve_p50_ms']:.1f} / {h['retrieve_p95_ms']:.1f} | "
            f"{h['build_s']:.1f} | {h['bytes'] / 1e6:.1f} | {rec} |")
    out += ["", "Search p50 with FAISS on one OpenMP thread (the default uses every core, "
            "which costs when the cores are busy):", ""]
    for r in sc:
        out.append(f"- {r['label']}: flat {r['flat']['search_p50_ms_1thread']:.2f} ms, "
                   f"hnsw {r['hnsw']['search_p50_ms_1thread']:.2f} ms")
    for r in sc:
        if "ef_sweep" in r["hnsw"]:
            out += ["", f"HNSW efSearch sweep on {r['label']} (k=10):", "",
                    "| efSearch | recall@10 | id recall@10 | p50 ms |",
                    "|---:|---:|---:|---:|"]
            out += [f"| {e['ef_search']} | {e['recall_at_10']:.3f} | "
                    f"{e['recall_at_10_ids']:.3f} | {e['p50_ms']:.2f} |"
                    for e in r["hnsw"]["ef_sweep"]]
    out += ["", "Recall@10 = share of HNSW's top 10 scoring at least the exact 10th "
            "score (equal to id overlap when there are no exact ties). With exact "
            "duplicate replicas (`--jitter 0`) HNSW's graph degenerates: at 100x, "
            "recall@10 stayed at 0.27 for every efSearch from 16 to 512. *qasper-281* is "
            "the real, distinct 281-paper index (about 10x the base) as a check. Sources "
            "are stored once per content hash, so replicas add no source bytes.", ""]
    return out


def plot(result: dict[str, Any], path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    rows = [r for r in result.get("scale", []) if not r["label"].endswith("(distinct)")]
    if not rows:
        return False
    chunks = [r["chunks"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for kind, style, color in (("flat", "o-", "tab:blue"), ("hnsw", "s-", "tab:green")):
        ax.plot(chunks, [r[kind]["search_p50_ms"] for r in rows], style, color=color,
                label=f"{kind} p50")
        ax.plot(chunks, [r[kind]["search_p95_ms"] for r in rows], style, color=color,
                alpha=0.4, label=f"{kind} p95")
        ax.plot(chunks, [r[kind]["search_p50_ms_1thread"] for r in rows], ":", color=color,
                label=f"{kind} p50, 1 thread")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in index")
    ax.set_ylabel(f"search latency, k={K_SEARCH} (ms)")
    ax.set_title("proxy-pointer vector search latency")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main() -> int:
    args = _args()
    for need in (args.data / "qasper-dev" / "docs", args.data / "finance-10k" / "docs"):
        if not need.is_dir():
            print(f"bench_index: {need} not found; this benchmark needs the evaluation data "
                  f"in {args.data} (pass --data)", file=sys.stderr)
            return 2
    t_start = time.perf_counter()
    st = make_embedder(args.embedder)
    t = time.perf_counter()
    st.embed_documents(["warm up the model"])
    load_model = time.perf_counter() - t
    emb = CachedEmbedder(st, args.cache_dir)
    env = environment()
    result: dict[str, Any] = {
        "machine": f"{env['cpus']} CPUs (shared with other jobs)", "environment": env,
        "embedder": st.model_id, "model_load_s": load_model,
        "base_docs": args.base_docs, "queries": args.queries, "k_search": K_SEARCH,
        "jitter": args.jitter,
    }
    previous = args.out_dir / "index-bench.json"
    if args.skip_throughput and previous.is_file():
        old = json.loads(previous.read_text())
        if "throughput" in old:
            result["throughput"], result["model_rate"] = old["throughput"], old["model_rate"]
            result["throughput_from"] = old.get("finished_at", "a previous run")
            result["throughput_total_s"] = old.get("throughput_total_s")
    work = Path(tempfile.mkdtemp(prefix="bench-index-"))
    full = None
    try:
        if not args.skip_throughput:
            rows, built = throughput(args, emb, work)
            result["model_rate"] = {}
            for r in rows:
                m = model_rate(st, built[r["corpus"]], args.sample // len(rows))
                result["model_rate"][r["corpus"]] = m
                est = r["texts_embedded"] / m["rate"]
                r["est_embedding_s"] = est
                r["non_embedding_share_estimated"] = r["non_embedding_s"] / (
                    r["non_embedding_s"] + est)
                print(f"[throughput] {r['corpus']}: model {m['rate']:.1f} chunks/s on "
                      f"{m['n']} chunks; measured non-embedding share "
                      f"{r['non_embedding_share_measured']:.1%}, estimated cold "
                      f"{r['non_embedding_share_estimated']:.1%}", flush=True)
            result["throughput"] = rows
            result["throughput_total_s"] = time.perf_counter() - t_start
            full = built["qasper-dev"]
            del built["finance-10k"]
        result["scale"] = scale(args, emb, full, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        emb.close()
    result["total_s"] = time.perf_counter() - t_start
    result["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
    paths = write_report(args.out_dir, "index-bench", result, markdown(result),
                         plot=lambda png: plot(result, png))
    print(markdown(result))
    print(f"wrote {paths['json']}, .md" + (", .png" if "png" in paths else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
