"""What fast mode's refiner costs a query: latency and MiniLM work per question.

Fast mode indexes with static vectors; at query time its refiner (the MiniLM it was
distilled from) embeds the question and the chunks it rescores (:mod:`proxy_pointer.search.
refine`). This script builds a fast index of a dataset's documents and, for every question
asked of its own document (per-doc scope, the default budget), times:

* ``cold@N``: the first retrieval with a refiner whose cache is empty (a question no one
  asked before: every chunk it reads is embedded then), for each ``--refine`` N;
* ``warm``: the same question again (everything cached);
* ``unrefined``: the same index with ``refine=0`` (the stored static vectors alone);
* ``default``: an index of the default embedder (MiniLM vectors stored), for reference.

It also counts the chunks each cold question embedded. The MiniLM model is loaded before
the first timing (its load is reported apart). Chunk vectors of both indexes come from the
embedding cache (``--cache-dir``), so builds are quick; the refiner's own vectors never do.

    python -m benchmarks.speed.bench_refine [--dataset ../shared/data/financebench-dev]
        [--refine 50 100 200] [--limit N] [--quick]

Writes ``benchmarks/results/refine/latency-<dataset>.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from proxy_pointer import Index
from proxy_pointer.defaults import REFINE
from proxy_pointer.embeddings import CachedEmbedder, make_embedder
from proxy_pointer.search.refine import Refiner

from ..common import CACHE, RESULTS, ROOT, environment, percentiles, write_report
from ..harness.dataset import load_dataset

OUT = RESULTS / "refine"


def _build(dataset, spec: str, cache_dir: str) -> Index:
    paths = [str(dataset.doc_path(d)) for d in dataset.docs]
    return Index.build(paths, root=str(dataset.docs_dir),
                       embedder=CachedEmbedder(make_embedder(spec), cache_dir))


def _seconds(fn, *args, **kwargs) -> float:
    t = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "financebench-dev"))
    p.add_argument("--cache-dir", default=str(CACHE))
    p.add_argument("--refine", type=int, nargs="+", default=[REFINE],
                   help="pool sizes timed cold (default: the library's, %(default)s)")
    p.add_argument("--limit", type=int, default=None, help="the first N questions only")
    p.add_argument("--quick", action="store_true",
                   help="the bundled sample's first 5 questions (a smoke run)")
    p.add_argument("--out-dir", default=str(OUT))
    args = p.parse_args(argv)
    if args.quick:
        args.dataset, args.limit = str(ROOT / "data" / "sample"), 5
    dataset = load_dataset(args.dataset, limit=args.limit)
    fast = _build(dataset, "fast", args.cache_dir)
    default = _build(dataset, "minilm", args.cache_dir)
    if fast.refiner is None:
        raise SystemExit("the fast index has no refiner")
    teacher = fast.refiner.embedder
    load_s = _seconds(teacher.embed_query, "load the model")
    default.embedder.embed_query("load the model")
    cold = {n: f"cold@{n}" for n in args.refine}
    rows: dict[str, list[float]] = {k: [] for k in (*cold.values(), "warm", "unrefined",
                                                    "default")}
    embedded: dict[str, list[int]] = {k: [] for k in cold.values()}
    for q in dataset.questions:
        ask = {"doc_ids": [dataset.doc_file(q.doc_id)]}
        for n, key in cold.items():
            fast.refiner = Refiner(teacher)  # nothing cached: a question no one asked before
            rows[key].append(_seconds(fast.retrieve, q.question, refine=n, **ask))
            embedded[key].append(fast.refiner.embedded)
        rows["warm"].append(_seconds(fast.retrieve, q.question, refine=args.refine[-1], **ask))
        rows["unrefined"].append(_seconds(fast.retrieve, q.question, refine=0, **ask))
        rows["default"].append(_seconds(default.retrieve, q.question, **ask))
    stats = {k: percentiles(v, (50, 95, 100), scale=1000, ndigits=1) for k, v in rows.items()}
    made = {k: {"mean": round(sum(v) / max(1, len(v)), 1),
                **percentiles(v, (50, 95, 100), ndigits=1)} for k, v in embedded.items()}
    texts = [c.embed_text for c in fast.reader.chunks[:256]]
    rate = len(texts) / _seconds(teacher.embed_documents, texts)
    data = {"dataset": dataset.name, "questions": len(dataset.questions),
            "chunks": len(fast.reader.chunks), "refiner": teacher.model_id,
            "model_load_s": round(load_s, 2), "latency_ms": stats, "embedded": made,
            "refiner_texts_per_s": round(rate, 1), "environment": environment()}
    md = [f"# Fast mode's refiner: query cost on {dataset.name}", "",
          f"{len(dataset.questions)} questions, each of its own document (per-doc), default "
          f"budget; {len(fast.reader.chunks)} chunks; refiner `{teacher.model_id}` "
          f"(loaded once in {load_s:.1f} s, {rate:.1f} chunk texts/s here); CPU: "
          f"{data['environment']['cpu']}.", "",
          "| retrieval | p50 ms | p95 ms | max ms | chunks MiniLM embedded (mean / max) |",
          "| --- | ---: | ---: | ---: | ---: |"]
    names = {**{key: f"fast, `refine={n}`, nothing cached (a new question)"
                for n, key in cold.items()},
             "warm": f"fast, `refine={args.refine[-1]}`, asked before",
             "unrefined": "fast, `refine=0` (static vectors alone)",
             "default": "default embedder's index (MiniLM vectors stored)"}
    for k, name in names.items():
        s, e = stats[k], made.get(k)
        cost = f"{e['mean']} / {e['max']}" if e else "0"
        md.append(f"| {name} | {s['p50']} | {s['p95']} | {s['max']} | {cost} |")
    md += ["", "A new question's chunks: the stored vectors' best `refine` and BM25's best "
           "`refine` (less their overlap), and the rows later steps read (statement sections, "
           "named sections, the selected sections' best chunks)."]
    stem = f"latency-{dataset.name}"
    paths = write_report(args.out_dir, stem, data, md)
    print("\n".join(md))
    for kind, path in paths.items():
        print(f"[bench] wrote {kind}: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
