"""A million chunks on one machine: size, build, open, query latency, memory, recall, update.

Usage::

    python -m benchmarks.speed.bench_scale [--sizes 10000 100000 1000000] [--queries 200]

1. **Corpus.** Varied copies of ``../shared/data/qasper-dev`` (281 papers) and
   ``../shared/data/finance-10k`` (four 10-Ks), written to ``--work-dir``: copy ``j`` of a
   document gets a copy number in its title, about 8% of its prose words swapped for other
   words of the same document and every digit run shifted, all seeded by ``j``, so no two
   copies embed alike while headings (the tree) survive. Copies are taken in a fixed order
   until the expected chunk count reaches the size (the actual count is reported).
2. **Build** (a child process): ``update_directory`` with the fast embedder
   (``make_embedder("fast")``, model2vec distilled from the bundled MiniLM), the default
   settings (``kind="auto"``: exact search below 200k chunks per segment, memory-mapped IVF
   from there). Wall time, peak RSS, disk size.
3. **Query** (a fresh child process): open time, first query (``retrieve``, budget 1000)
   wall time, then p50/p95 of the rest, with and without the query embedding
   (``Retrieval.timings["embed"]``), and the child's peak RSS (``VmHWM``, the model
   included). Questions: qasper-dev and finance-10k questions, alternating.
4. **Recall@10** of the index's default search against exact search
   (``Index.reader.dense_search(q, 10)`` vs ``exact=True``); a hit is a row in the exact top 10 or
   scoring at least the exact 10th (ties are interchangeable).
5. **Add 10 documents** (a child process): 10 unseen copies added with ``update_directory``;
   wall time, bytes the index grew by, and a check that the new documents are found.

Writes ``benchmarks/results/scale/scale.json``, ``scale.md`` and ``scale.png``.

With ``--access-groups N`` it measures access filters instead: each document is built with
``access: ["gI"]`` (I = its position mod N, so one group sees 1/N of the documents), and
the query phase runs every question with no filter, as a principal of one group and of
half the groups, each question through every view in turn. Writes ``scale-access.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import time
from pathlib import Path

from ..common import (
    DATA,
    RESULTS,
    WORK,
    bench_command,
    environment,
    peak_rss_mib,
    percentile,
    pyplot,
    run_child,
    status_mib,
    time_views,
    write_report,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SOURCES = [DATA / "qasper-dev" / "docs", DATA / "finance-10k" / "docs"]
QUESTIONS = [DATA / "qasper-dev" / "questions.jsonl", DATA / "finance-10k" / "questions.jsonl"]
# Chunks per document with default settings (qasper-dev: 10,862 / 281; a 10-K: ~1,250).
CHUNKS_PER_QASPER, CHUNKS_PER_10K = 38.7, 1250.0
TARGETS = {"open_first_s": 2.0, "p50_ms_no_embed": 100.0, "rss_mib": 1536.0,
           "recall_at_10": 0.95, "add10_s": 30.0}
_WORD = re.compile(r"[A-Za-z]{4,}")
_DIGITS = re.compile(r"\d+")


def vary(text: str, j: int) -> str:
    """Copy ``j`` of a document: title tagged, ~8% of prose words swapped, digits shifted."""
    rng = random.Random(j * 7919 + len(text))
    words = _WORD.findall(text) or ["word"]
    out, titled = [], False
    for line in text.split("\n"):
        if line.startswith("#"):
            if not titled:
                line, titled = f"{line} (copy {j})", True
            out.append(line)
            continue
        if line.startswith("|") or not line.strip():
            out.append(line)
            continue
        line = _WORD.sub(lambda m: rng.choice(words) if rng.random() < 0.08 else m.group(0),
                         line)
        line = _DIGITS.sub(lambda m: str(int(m.group(0)) + j) if len(m.group(0)) < 9
                           else m.group(0), line)
        out.append(line)
    return "\n".join(out)


def source_docs() -> list[Path]:
    return [p for folder in SOURCES for p in sorted(folder.glob("*.md"))]


def make_corpus(work: Path, size: int, start_copy: int = 0) -> tuple[Path, int]:
    """Folder of varied copies expected to hold about ``size`` chunks; (folder, files)."""
    folder = work / f"corpus-{size}" if start_copy == 0 else work / f"extra-{size}"
    if folder.exists():
        return folder, len(list(folder.glob("*.md")))
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    docs = source_docs()
    texts = {p: p.read_text(encoding="utf-8") for p in docs}
    expected, n, j = 0.0, 0, start_copy

    def full() -> bool:  # a corpus stops at the size; the extra folder at ten files
        return n >= 10 if start_copy else expected >= size

    while not full():
        for p in docs:
            if full():
                break
            if start_copy and "finance" in str(p):
                continue  # ten small additions: papers only
            (tmp / f"c{j:05d}-{p.name}").write_text(vary(texts[p], j), encoding="utf-8")
            expected += CHUNKS_PER_10K if "finance" in str(p) else CHUNKS_PER_QASPER
            n += 1
        j += 1
    tmp.rename(folder)
    return folder, n


def disk_bytes(folder: Path) -> int:
    seen, total = set(), 0
    for p in folder.rglob("*"):
        st = p.lstat()
        if p.is_file() and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def questions(n: int) -> list[str]:
    lists = [[json.loads(line)["question"] for line in q.read_text().splitlines() if line.strip()]
             for q in QUESTIONS]
    out = []
    for i in range(n):
        lst = lists[i % 2]
        out.append(lst[(i // 2) % len(lst)])
    return out


# --- children ---------------------------------------------------------------------------
def child_build(corpus: str, index: str, groups: int = 0) -> dict:
    from proxy_pointer.documents import discover
    from proxy_pointer.embeddings import make_embedder
    from proxy_pointer.index import update_directory

    emb = make_embedder("fast")
    emb.embed_query("warm up")
    metadata = None
    if groups:
        ids = sorted(s.doc_id for s in discover([corpus]))
        metadata = {d: {"access": [f"g{i % groups}"]} for i, d in enumerate(ids)}
    t0 = time.perf_counter()
    idx, rep = update_directory(index, [corpus], embedder=emb, metadata=metadata)
    return {"seconds": time.perf_counter() - t0, "documents": len(idx), "chunks": rep.chunks,
            "timings": rep.timings, "peak_rss_mib": peak_rss_mib()}


def child_query(index: str, n: int) -> dict:
    t0 = time.perf_counter()
    from proxy_pointer.index import Index

    idx = Index.load(index)
    t_open = time.perf_counter() - t0
    qs = questions(n)
    t1 = time.perf_counter()
    idx.retrieve(qs[0], budget=1000)
    t_first = time.perf_counter() - t1
    wall, no_embed, embed = [], [], []
    for q in qs[1:]:
        t = time.perf_counter()
        r = idx.retrieve(q, budget=1000)
        dt = time.perf_counter() - t
        wall.append(dt * 1000)
        embed.append(r.timings["embed"] * 1000)
        no_embed.append((dt - r.timings["embed"]) * 1000)
    rss = peak_rss_mib()
    anon, mapped = status_mib("RssAnon") or 0.0, status_mib("RssFile") or 0.0
    hits = total = 0
    exact_ms = []
    for q in qs[:100]:
        v = idx.embedder.embed_query(q)
        s_a, r_a = idx.reader.dense_search(v, 10)
        t = time.perf_counter()
        s_e, r_e = idx.reader.dense_search(v, 10, exact=True)
        exact_ms.append((time.perf_counter() - t) * 1000)
        floor = float(s_e[-1]) - 1e-6 if len(s_e) else -1.0
        top = set(r_e.tolist())
        hits += sum(1 for r, s in zip(r_a.tolist(), s_a.tolist(), strict=True)
                    if r in top or s >= floor)
        total += len(r_e)

    # Sensitivity of the IVF knob: recall@10 and dense-search latency per nprobe.
    import dataclasses

    sweep = {}
    base = idx.vector_config
    vecs = [idx.embedder.embed_query(q) for q in qs[:100]]
    exact = [idx.reader.dense_search(v, 10, exact=True) for v in vecs]
    for nprobe in (8, 16, 32, 64, 128):
        idx.vector_config = dataclasses.replace(base, nprobe=nprobe)
        ms, h = [], 0
        for v, (s_e, r_e) in zip(vecs, exact, strict=True):
            t = time.perf_counter()
            s_a, r_a = idx.reader.dense_search(v, 10)
            ms.append((time.perf_counter() - t) * 1000)
            floor = float(s_e[-1]) - 1e-6
            h += sum(1 for r, sc in zip(r_a.tolist(), s_a.tolist(), strict=True)
                     if r in set(r_e.tolist()) or sc >= floor)
        sweep[nprobe] = {"recall_at_10": h / max(10 * len(vecs), 1), "p50_ms": percentile(ms, 50)}
    idx.vector_config = base

    return {"open_s": t_open, "first_query_s": t_first, "open_first_s": t_open + t_first,
            "queries": len(wall), "p50_ms": percentile(wall, 50), "p95_ms": percentile(wall, 95),
            "p50_ms_no_embed": percentile(no_embed, 50),
            "p95_ms_no_embed": percentile(no_embed, 95),
            "p50_embed_ms": percentile(embed, 50), "rss_mib": rss, "rss_anon_mib": anon,
            "rss_file_mib": mapped,
            "recall_at_10": hits / max(total, 1), "exact_search_p50_ms": percentile(exact_ms, 50),
            "nprobe_sweep": sweep,
            "segments_approximate": idx.vector_config.kind}


def child_query_access(index: str, n: int, groups: int) -> dict:
    """Latency with no filter, one group's view (1/``groups`` of the documents) and half
    the groups' view, each question through every view in turn."""
    from proxy_pointer.access import Access
    from proxy_pointer.index import Index

    idx = Index.load(index)
    views = {"no filter": None, f"1 group ({100 / groups:.0f}% of documents)": ["g0"],
             f"{groups // 2} groups (50%)": [f"g{i}" for i in range(groups // 2)]}
    t = time.perf_counter()
    for groups_ in views.values():
        idx.retrieve("warm up", budget=1000, principal=groups_)
    warm_s = time.perf_counter() - t
    qs = questions(n)
    timed = time_views(idx.retrieve, qs, views, budget=1000)
    wall = {label: [t * 1000 for t in w] for label, (w, _) in timed.items()}
    no_embed = {label: [t * 1000 for t in a] for label, (_, a) in timed.items()}
    labels = list(views)
    base, base_ne = percentile(wall["no filter"], 50), percentile(no_embed["no filter"], 50)
    visible = {label: len(idx.reader.visible_documents(Access.of(g))) for label, g in views.items()}
    return {"documents": len(idx), "chunks": len(idx.reader.chunks), "queries": len(qs),
            "first_views_s": warm_s, "rss_mib": peak_rss_mib(),
            "views": {label: {"visible_documents": visible[label],
                              "p50_ms": percentile(wall[label], 50),
                              "p95_ms": percentile(wall[label], 95),
                              "p50_ms_no_embed": percentile(no_embed[label], 50),
                              "p95_ms_no_embed": percentile(no_embed[label], 95),
                              "p50_over_no_filter": percentile(wall[label], 50) / base,
                              "p50_no_embed_over_no_filter":
                                  percentile(no_embed[label], 50) / base_ne}
                      for label in labels}}


def write_access(results: dict, out: Path) -> None:
    lines = [f"# Access filters at scale ({results['date']})", "",
             f"{results['cpus']} cores, embedder `{results['embedder']}` (fast mode), default "
             "settings. Each document readable by one of "
             f"{results['groups']} groups; each question runs through every view in turn; "
             "budget 1000. The first query of each view works out its rows once per "
             "generation (`first views s`: all views together).", "",
             "| chunks | docs | view | visible docs | p50 / p95 ms | p50 / p95 ms w/o embedding "
             "| p50 / no filter | p50 w/o embedding / no filter |",
             "|---:|---:|---|---:|---|---|---:|---:|"]
    for row in results["sizes"]:
        q = row["query"]
        for label, v in q["views"].items():
            lines.append(f"| {q['chunks']:,} | {q['documents']:,} | {label} | "
                         f"{v['visible_documents']:,} | {v['p50_ms']:.1f} / {v['p95_ms']:.1f} | "
                         f"{v['p50_ms_no_embed']:.1f} / {v['p95_ms_no_embed']:.1f} | "
                         f"{v['p50_over_no_filter']:.2f}x | "
                         f"{v['p50_no_embed_over_no_filter']:.2f}x |")
        lines.append("")
        lines.append(f"Build {row['build']['seconds']:.0f} s (peak RSS "
                     f"{row['build']['peak_rss_mib']:.0f} MiB); query process peak RSS "
                     f"{q['rss_mib']:.0f} MiB; first views {q['first_views_s']:.2f} s.")
    write_report(out, "scale-access", results, lines)


def child_add(index: str, corpus: str, extra: str) -> dict:
    from proxy_pointer.embeddings import make_embedder
    from proxy_pointer.index import update_directory

    emb = make_embedder("fast")
    emb.embed_query("warm up")
    before = disk_bytes(Path(index))
    # Into the indexed folder (same root, so existing doc ids stay), under names never
    # indexed before; taken out again afterwards so the corpus stays as generated.
    added = []
    for f in sorted(Path(extra).glob("*.md")):
        added.append(Path(corpus) / f"added-{os.getpid()}-{f.name}")
        shutil.copy2(f, added[-1])
    t0 = time.perf_counter()
    try:
        idx, rep = update_directory(index, [corpus], embedder=emb)
    finally:
        for f in added:
            f.unlink()
    seconds = time.perf_counter() - t0
    new = sorted(rep.added)
    found = bool(new) and bool(idx.retrieve("results", doc_ids=[new[0]], budget=500).sections)
    return {"seconds": seconds, "summary": rep.summary(), "added": len(rep.added),
            "grew_bytes": disk_bytes(Path(index)) - before, "found_new": found,
            "timings": rep.timings}


def in_child(*args: str) -> dict:
    """Run one phase (``build``, ``query``, ``add``) in a fresh process; its result."""
    return run_child(bench_command("speed.bench_scale", "--child", *args)).json()


# --- report -----------------------------------------------------------------------------
def write(results: dict, out: Path) -> None:
    rows = results["sizes"]
    lines = [f"# Scale: one machine, up to a million chunks ({results['date']})", "",
             f"{results['cpus']} cores, embedder `{results['embedder']}` (fast mode), default "
             "settings (exact search below 200k chunks per segment, memory-mapped IVF above: 8-bit "
             "lists, nprobe 64, candidates re-scored exactly). Each phase in its own process.", "",
             "| chunks | docs | disk MB | build s | build RSS MiB | open s | first query s | "
             "open+first s | p50 / p95 ms | p50 / p95 ms w/o embedding | "
             "query RSS MiB (anon + file) | recall@10 | exact search p50 ms | add 10 docs s | "
             "grew MB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        q, b, a = r["query"], r["build"], r["add"]
        lines.append(
            f"| {b['chunks']:,} | {b['documents']:,} | {r['disk_mb']:.0f} | {b['seconds']:.0f} "
            f"| {b['peak_rss_mib']:.0f} | {q['open_s']:.2f} | {q['first_query_s']:.2f} | "
            f"{q['open_first_s']:.2f} | {q['p50_ms']:.1f} / {q['p95_ms']:.1f} | "
            f"{q['p50_ms_no_embed']:.1f} / {q['p95_ms_no_embed']:.1f} | {q['rss_mib']:.0f} "
            f"({q['rss_anon_mib']:.0f} + {q['rss_file_mib']:.0f}) | "
            f"{q['recall_at_10']:.3f} | {q['exact_search_p50_ms']:.1f} | {a['seconds']:.1f} | "
            f"{a['grew_bytes'] / 1e6:.1f} |")
    big = rows[-1]
    lines += ["", "## IVF sensitivity (nprobe, default 64)", "",
              "| chunks | " + " | ".join(f"nprobe {n}: recall@10 / dense p50 ms"
                                       for n in big["query"]["nprobe_sweep"]) + " |",
              "|---:|" + "---|" * len(big["query"]["nprobe_sweep"])]
    for r in rows:
        sw = r["query"].get("nprobe_sweep")
        if not sw:
            continue
        lines.append(f"| {r['build']['chunks']:,} | " + " | ".join(
            f"{v['recall_at_10']:.3f} / {v['p50_ms']:.1f}" for v in sw.values()) + " |")
    lines += ["", "Below 200k chunks per segment search is exact whatever nprobe says.", ""]
    lines += ["", f"## Targets at {big['build']['chunks']:,} chunks", ""]
    got = {"open_first_s": big["query"]["open_first_s"],
           "p50_ms_no_embed": big["query"]["p50_ms_no_embed"],
           "rss_mib": big["query"]["rss_mib"], "recall_at_10": big["query"]["recall_at_10"],
           "add10_s": big["add"]["seconds"]}
    for key, limit in TARGETS.items():
        ok = got[key] >= limit if key == "recall_at_10" else got[key] < limit
        rel = ">=" if key == "recall_at_10" else "<"
        lines.append(f"- {key}: {got[key]:.3f} (target {rel} {limit}): "
                     f"{'met' if ok else 'MISSED'}")
    lines += ["", "Query latency is `Index.retrieve` end to end (budget 1000 tokens, hybrid "
              "dense + BM25, dedupe, slicing); *w/o embedding* subtracts the query embedding. "
              "RSS is the query process's peak (`VmHWM`), the embedding model included; in "
              "brackets its anonymous memory and its resident pages of memory-mapped index "
              "files at the end of the queries (the latter is page cache the kernel can reclaim). "
              "*grew MB*: bytes the index directory grew by when 10 documents were added "
              "(a new segment; nothing else rewritten).", ""]
    write_report(out, "scale", results, lines, plot=lambda png: plot(rows, png))


def plot(rows: list[dict], path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    xs = [r["build"]["chunks"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    series = [("open + first query (s)", [r["query"]["open_first_s"] for r in rows], 2.0),
              ("p50 query w/o embedding (ms)", [r["query"]["p50_ms_no_embed"] for r in rows],
               100.0),
              ("query process peak RSS (MiB)", [r["query"]["rss_mib"] for r in rows], 1536.0)]
    for ax, (title, ys, limit) in zip(axes, series, strict=True):
        ax.plot(xs, ys, marker="o")
        ax.axhline(limit, color="red", linestyle="--", linewidth=1, label="target")
        ax.set_xscale("log")
        ax.set_xlabel("chunks")
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--work-dir", type=Path, default=WORK / "scale")
    ap.add_argument("--out-dir", type=Path, default=RESULTS / "scale")
    ap.add_argument("--skip-build", action="store_true", help="reuse indexes in the work dir")
    ap.add_argument("--access-groups", type=int, default=0, metavar="N",
                    help="measure access filters (documents in N groups) instead")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        fn = {"build": child_build, "query": child_query, "add": child_add,
              "query-access": child_query_access}[kind]
        call = [int(x) if x.isdigit() else x for x in rest]
        print(json.dumps(fn(*call)), flush=True)
        return
    from proxy_pointer.embeddings import make_embedder

    args.work_dir = args.work_dir.resolve()  # the children run in the repository root
    env = environment("model2vec")
    results = {"date": time.strftime("%Y-%m-%d"), "cpus": env["cpus"],
               "embedder": make_embedder("fast").model_id, "sizes": [], "environment": env}
    if args.access_groups:
        results["groups"] = args.access_groups
        for size in args.sizes:
            corpus, n = make_corpus(args.work_dir, size)
            index = args.work_dir / f"index-{size}-access"
            if not args.skip_build or not index.exists():
                shutil.rmtree(index, ignore_errors=True)
                build = in_child("build", str(corpus), str(index), str(args.access_groups))
                (index.parent / f"build-{size}-access.json").write_text(json.dumps(build))
            else:
                build = json.loads((index.parent / f"build-{size}-access.json").read_text())
            print(f"[scale] built {build['chunks']} chunks in {build['seconds']:.0f}s", flush=True)
            row = {"size": size, "files": n, "build": build,
                   "query": in_child("query-access", str(index), str(args.queries),
                                     str(args.access_groups))}
            print(f"[scale] access {row['query']}", flush=True)
            results["sizes"].append(row)
            write_access(results, args.out_dir)
        return
    for size in args.sizes:
        corpus, n = make_corpus(args.work_dir, size)
        extra, _ = make_corpus(args.work_dir, size, start_copy=90_000)
        index = args.work_dir / f"index-{size}"
        print(f"[scale] {size}: {n} files", flush=True)
        if not args.skip_build or not index.exists():
            shutil.rmtree(index, ignore_errors=True)
            build = in_child("build", str(corpus), str(index))
        else:
            build = json.loads((index.parent / f"build-{size}.json").read_text())
        (index.parent / f"build-{size}.json").write_text(json.dumps(build))
        print(f"[scale] built {build['chunks']} chunks in {build['seconds']:.0f}s", flush=True)
        row = {"size": size, "files": n, "build": build, "disk_mb": disk_bytes(index) / 1e6}
        row["query"] = in_child("query", str(index), str(args.queries))
        print(f"[scale] query {row['query']}", flush=True)
        row["add"] = in_child("add", str(index), str(corpus), str(extra))
        print(f"[scale] add {row['add']['seconds']:.1f}s", flush=True)
        results["sizes"].append(row)
        write(results, args.out_dir)


if __name__ == "__main__":
    main()
