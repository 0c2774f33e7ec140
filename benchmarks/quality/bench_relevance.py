#!/usr/bin/env python3
"""How to pick a relevance cutoff: what each cutoff on ``Section.relevance`` keeps and drops.

A retrieved section's ``relevance`` is the cosine similarity of the question and the
section's best-matching chunk, clipped to 0-1; LlamaIndex nodes are scored by it, so
``SimilarityPostprocessor(similarity_cutoff=x)`` keeps the sections with ``relevance >= x``.
This measures that rule on real data, with the library's defaults (budget 2,000, k 10,
the bundled MiniLM behind the embedding cache in ``benchmarks/.work/cache``), per document
(each question searches only its own document, as ``run_benchmark``'s per-doc scope) and
over the whole corpus:

* every retrieved section's relevance, rank (1-based, the library's order) and whether it
  holds gold evidence: the harness's rule (:func:`.harness.metrics.score_context`, exact or
  loose as the dataset says) applied to that section's text alone, after the harness's
  packing rule; and whether its heading path is a gold section (or an ancestor of one);
* for each cutoff in :data:`CUTOFFS`, over the questions with gold evidence: *answerable*
  (the share of questions that keep at least one evidence-holding section), *kept* (the
  share of retrieved sections kept), *precision* (evidence-holding kept / kept) and *empty*
  (the share of questions left with no section at all); *gold section* is answerable by
  gold section path, over the questions that have one;
* the median, p10 and p90 of the relevance of the top (rank 1) section, of
  evidence-holding sections and of the other sections;
* **off-topic** questions, for want of a set of unanswerable ones: each document is asked
  :data:`OFF_TOPIC` questions drawn (seeded by the document) from the datasets of the other
  domain (10-K questions against qasper papers and vice versa); the corpus scope asks each
  of the drawn questions once over the whole corpus. Reported: the top section's relevance
  and, per cutoff, the share of off-topic questions still left with a section (what a
  cutoff should drop).

Nothing is tuned: one run of the defaults, then every cutoff is applied to its results.

    python -m benchmarks.quality.bench_relevance                 # qasper-dev and finance-10k
    python -m benchmarks.quality.bench_relevance --datasets finance-10k --limit 5 --out-dir /tmp/r

Writes ``<out-dir>/relevance.{json,md,png}`` (the PNG needs matplotlib); ``--sections`` adds
every section's relevance, rank and gold flags to the JSON.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from proxy_pointer import defaults

from ..common import (
    CACHE,
    DATA,
    RESULTS,
    environment,
    make_embedder,
    percentiles,
    pyplot,
    write_report,
)
from ..harness.context import Context, Piece, pack
from ..harness.dataset import Dataset, Question, load_dataset
from ..harness.methods import CountingEmbedder
from ..harness.methods.proxy import ProxyPointerMethod
from ..harness.metrics import score_context

#: The cutoffs applied to every run's sections (kept: ``relevance >= cutoff``).
CUTOFFS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: Off-topic questions asked of each document.
OFF_TOPIC = 20
#: The domain of each dataset; off-topic questions come from those of another domain.
DOMAINS = {"qasper-dev": "papers", "finance-10k": "filings", "financebench-dev": "filings"}
#: The datasets whose questions may serve as off-topic questions elsewhere.
POOLS = ("qasper-dev", "finance-10k")
SCOPES = ("per-doc", "corpus")


@dataclass(frozen=True)
class Hit:
    """One retrieved section: its relevance and, for on-topic questions, whether it holds
    a gold passage (``None``: the question has none) or is a gold section (``None``: the
    question has no section path). Its rank is its position in the list plus one."""

    relevance: float
    evidence: bool | None = None
    section: bool | None = None


class _Scored(ProxyPointerMethod):
    """The library's defaults (the ``proxy-pointer`` method), keeping each section's
    relevance beside the piece the harness scores."""

    def scored(self, question: str, doc_id: str | None, budget: int
               ) -> list[tuple[Piece, float]]:
        """The sections of ``question`` (searched in ``doc_id`` only, or everywhere when
        None), packed by the harness's rule, each with its relevance, in rank order."""
        doc_ids = [self._doc_file[doc_id]] if doc_id is not None else None
        res = self._index.retrieve(question, budget=budget, doc_ids=doc_ids, **self.options)
        pieces = [Piece(text=s.text, doc_id=self._dataset_id.get(s.doc_id, s.doc_id),
                        path=tuple(s.path)) for s in res.sections]
        # The library keeps to the budget, so this cuts nothing; it is the harness's rule.
        ctx = pack(pieces, budget)
        return list(zip(ctx.pieces, (s.relevance for s in res.sections), strict=False))


def _gold(question: Question, piece: Piece, relevance: float, matching: str,
          budget: int) -> Hit:
    """One section with the harness's verdict on its text alone."""
    s = score_context(question, Context((piece,), piece.tokens, budget, False),
                      matching=matching)
    return Hit(relevance, s.any_hit, s.section_hit)


def _resolve(name: str) -> Path:
    path = Path(name)
    return path if (path / "questions.jsonl").is_file() else DATA / name


def _pool(dataset: Dataset, limit: int | None) -> list[str]:
    """Distinct questions of the datasets of another domain than ``dataset``'s."""
    mine = DOMAINS.get(dataset.name, dataset.name)
    texts: set[str] = set()
    for name in POOLS:
        if DOMAINS[name] != mine:
            texts.update(q.question.strip() for q in load_dataset(DATA / name).questions)
    return sorted(texts)[: None if limit is None else max(limit, OFF_TOPIC)]


def _off_topic(dataset: Dataset, pool: Sequence[str]) -> dict[str, list[str]]:
    """Each document's off-topic questions, drawn from ``pool`` seeded by its id."""
    n = min(OFF_TOPIC, len(pool))
    return {d: random.Random(f"{dataset.name}/{d}").sample(list(pool), n) for d in dataset.docs}


def _measure(dataset: Dataset, method: _Scored, scope: str, off_topic: dict[str, list[str]],
             budget: int) -> dict[str, Any]:
    """One scope's sections of the on-topic and off-topic questions."""
    t0 = time.perf_counter()
    on: dict[str, list[Hit]] = {}
    context_any: dict[str, bool] = {}
    for i, q in enumerate(dataset.questions, 1):
        got = method.scored(q.question, q.doc_id if scope == "per-doc" else None, budget)
        on[q.id] = [_gold(q, piece, rel, dataset.matching, budget) for piece, rel in got]
        whole = score_context(q, Context(tuple(p for p, _ in got), 0, budget, False),
                              matching=dataset.matching)
        if whole.any_hit is not None:
            context_any[q.id] = whole.any_hit
        if i % 200 == 0:
            print(f"[relevance] {dataset.name} [{scope}]: {i}/{len(dataset.questions)}",
                  file=sys.stderr, flush=True)
    asks = ([(d, text) for d, texts in off_topic.items() for text in texts]
            if scope == "per-doc" else
            [(None, text) for text in sorted({t for ts in off_topic.values() for t in ts})])
    off = [[rel for _, rel in method.scored(text, d, budget)] for d, text in asks]
    return {"seconds": round(time.perf_counter() - t0, 1), "on": on, "off": off,
            "context_any_hit": context_any}


def _share(num: int, den: int) -> float | None:
    return round(100 * num / den, 1) if den else None


def _dist(values: Sequence[float]) -> dict[str, Any]:
    return {"n": len(values), **percentiles(values, (10, 50, 90), ndigits=3)}


def _summary(run: dict[str, Any], questions: Sequence[Question]) -> dict[str, Any]:
    """Per-cutoff rates and relevance distributions of one scope's sections."""
    on: dict[str, list[Hit]] = run["on"]
    with_ev = [q.id for q in questions if q.evidence]
    with_sec = [q.id for q in questions if q.sections]
    ev_hits = [h for qid in with_ev for h in on[qid]]
    rows = []
    for c in CUTOFFS:
        kept = {qid: [h for h in hits if h.relevance >= c] for qid, hits in on.items()}
        n_kept = sum(len(kept[qid]) for qid in with_ev)
        n_good = sum(bool(h.evidence) for qid in with_ev for h in kept[qid])
        rows.append({
            "cutoff": c,
            "answerable": _share(sum(any(h.evidence for h in kept[qid]) for qid in with_ev),
                                 len(with_ev)),
            "kept": _share(n_kept, len(ev_hits)),
            "precision": _share(n_good, n_kept),
            "empty": _share(sum(not kept[qid] for qid in with_ev), len(with_ev)),
            "gold_section": _share(sum(any(h.section for h in kept[qid]) for qid in with_sec),
                                   len(with_sec)),
            "off_topic_kept": _share(sum(any(r >= c for r in rels) for rels in run["off"]),
                                     len(run["off"])),
        })
    ctx = run["context_any_hit"]
    return {
        "questions": len(questions), "with_evidence": len(with_ev),
        "with_sections": len(with_sec), "sections": sum(len(h) for h in on.values()),
        "off_topic_questions": len(run["off"]), "seconds": run["seconds"],
        "context_any_hit": _share(sum(ctx.values()), len(ctx)),
        "cutoffs": rows,
        "relevance": {
            "top": _dist([hits[0].relevance for hits in on.values() if hits]),
            "evidence": _dist([h.relevance for h in ev_hits if h.evidence]),
            "other": _dist([h.relevance for h in ev_hits if not h.evidence]),
            "off_topic_top": _dist([rels[0] for rels in run["off"] if rels]),
        },
    }


def _sections_json(run: dict[str, Any]) -> dict[str, Any]:
    """Every section compactly: per question, relevance, evidence and gold-section flags in
    rank order; per off-topic question, the relevances in rank order."""
    return {"on_topic": {qid: {"relevance": [round(h.relevance, 4) for h in hits],
                               "evidence": [h.evidence for h in hits],
                               "section": [h.section for h in hits]}
                         for qid, hits in run["on"].items()},
            "off_topic": [[round(r, 4) for r in rels] for rels in run["off"]]}


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def _markdown(out: dict[str, Any]) -> list[str]:
    lines = ["# Relevance cutoffs: what `relevance >= cutoff` keeps", "",
             f"{out['date']}, defaults (budget {out['budget']}, k {out['k']}, embedder "
             f"`{out['embedder']}`), written by `benchmarks/quality/bench_relevance.py`. "
             "*answerable*: questions keeping a section that holds a gold passage; *kept*: "
             "retrieved sections kept; *precision*: evidence-holding / kept; *empty*: "
             "questions left with no section (all four over the questions with evidence); "
             "*gold section*: questions keeping a gold section (over those with a section "
             f"path); *off-topic*: questions of the other domain ({OFF_TOPIC} per document "
             "per-doc; each once over the corpus) still left with a section. All in %.", ""]
    for ds, entry in out["datasets"].items():
        lines += [f"## {ds}", ""]
        for scope, s in entry["scopes"].items():
            lines += [f"**{scope}**: {s['questions']} questions ({s['with_evidence']} with "
                      f"evidence, {s['with_sections']} with a section path), {s['sections']} "
                      f"sections, {s['off_topic_questions']} off-topic questions; any-hit of "
                      f"the whole context {_pct(s['context_any_hit'])}%; {s['seconds']} s.",
                      "", "| cutoff | answerable | kept | precision | empty | gold section "
                      "| off-topic kept |", "|---|---|---|---|---|---|---|"]
            for r in s["cutoffs"]:
                lines.append(f"| {r['cutoff']:.1f} | {_pct(r['answerable'])} | "
                             f"{_pct(r['kept'])} | {_pct(r['precision'])} | "
                             f"{_pct(r['empty'])} | {_pct(r['gold_section'])} | "
                             f"{_pct(r['off_topic_kept'])} |")
            lines += ["", "| relevance (p10 / median / p90) | n | value |", "|---|---|---|"]
            names = {"top": "top section", "evidence": "evidence-holding sections",
                     "other": "other sections", "off_topic_top": "off-topic top section"}
            for key, label in names.items():
                d = s["relevance"][key]
                lines.append(f"| {label} | {d['n']} | {d['p10']:.2f} / {d['p50']:.2f} / "
                             f"{d['p90']:.2f} |")
            lines.append("")
    lines += ["**Conclusion.** " + out["conclusion"], ""]
    return lines


def _conclusion(out: dict[str, Any]) -> str:
    """Per dataset and scope: the highest cutoff losing at most one point of answerable
    questions, and the lowest one that lets at most 10% of off-topic questions through,
    with what that one keeps."""
    parts = []
    for ds, entry in out["datasets"].items():
        said = []
        for scope, s in entry["scopes"].items():
            rows = s["cutoffs"]
            base = rows[0]["answerable"]
            if base is None:
                continue
            safe = [r for r in rows if (r["answerable"] or 0.0) >= base - 1.0][-1]
            guard = next((r for r in rows if (r["off_topic_kept"] or 0.0) <= 10.0), None)
            text = (f"{scope}, at most a point of answerable questions lost up to "
                    f"{safe['cutoff']:.1f}")
            if guard is not None:
                text += (f"; {guard['cutoff']:.1f} lets {_pct(guard['off_topic_kept'])}% of "
                         f"off-topic questions through and keeps {_pct(guard['answerable'])}% "
                         f"answerable (of {_pct(base)}%) and {_pct(guard['kept'])}% of "
                         "sections")
            said.append(text)
        parts.append(f"{ds}: " + "; ".join(said))
    return ". ".join(parts) + "."


def _plot(out: dict[str, Any]) -> Any:
    def draw(path: Path) -> bool:
        plt = pyplot()
        if plt is None:
            return False
        names = list(out["datasets"])
        fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2), squeeze=False)
        for ax, ds in zip(axes[0], names, strict=True):
            for scope, s in out["datasets"][ds]["scopes"].items():
                style = "-" if scope == "per-doc" else "--"
                xs = [r["cutoff"] for r in s["cutoffs"]]
                for key, label, color in (("answerable", "answerable", "tab:blue"),
                                          ("kept", "sections kept", "tab:orange"),
                                          ("off_topic_kept", "off-topic kept", "tab:red")):
                    ys = [r[key] if r[key] is not None else float("nan")
                          for r in s["cutoffs"]]
                    ax.plot(xs, ys, style, marker="o", color=color, label=f"{label} ({scope})")
            ax.set_title(ds)
            ax.set_xlabel("relevance cutoff")
            ax.set_ylabel("%")
            ax.set_ylim(-2, 102)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return True

    return draw


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["qasper-dev", "finance-10k"],
                    help="dataset names under ../shared/data, or dataset folders")
    ap.add_argument("--scopes", nargs="+", default=list(SCOPES), choices=SCOPES)
    ap.add_argument("--out-dir", default=str(RESULTS / "relevance"))
    ap.add_argument("--limit", type=int, default=None,
                    help="first N questions per dataset (and only their documents)")
    ap.add_argument("--cache-dir", default=str(CACHE), help="embedding cache folder")
    ap.add_argument("--sections", action="store_true",
                    help="also write every retrieved section's relevance, rank and gold flags "
                         "to the JSON (about 1 MB for both datasets)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    embedder = CountingEmbedder(make_embedder(defaults.EMBEDDER, args.cache_dir))
    budget, k = defaults.BUDGET, defaults.K
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "budget": budget, "k": k,
                           "embedder": defaults.EMBEDDER, "model": embedder.model_id,
                           "cutoffs": list(CUTOFFS), "off_topic_per_doc": OFF_TOPIC,
                           "limit": args.limit, "datasets": {}}
    sections: dict[str, Any] = {}
    for name in args.datasets:
        dataset = load_dataset(_resolve(name), limit=args.limit)
        off_topic = _off_topic(dataset, _pool(dataset, args.limit))
        embedder.precompute([q.question.strip() for q in dataset.questions]
                            + sorted({t for ts in off_topic.values() for t in ts}))
        method = _Scored()
        stats = method.build(dataset, embedder)
        print(f"[relevance] {dataset.name}: {len(dataset.docs)} documents, "
              f"{len(dataset.questions)} questions, index in {stats.seconds:.1f}s "
              f"({stats.embed_computed} texts embedded now)", file=sys.stderr, flush=True)
        entry: dict[str, Any] = {"documents": len(dataset.docs), "matching": dataset.matching,
                                 "index_seconds": round(stats.seconds, 1), "scopes": {}}
        out["datasets"][dataset.name] = entry
        for scope in args.scopes:
            run = _measure(dataset, method, scope, off_topic, budget)
            entry["scopes"][scope] = _summary(run, dataset.questions)
            sections[f"{dataset.name}/{scope}"] = _sections_json(run)
            print(f"[relevance] {dataset.name} [{scope}]: {run['seconds']} s",
                  file=sys.stderr, flush=True)
    out["conclusion"] = _conclusion(out)
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["environment"] = environment()
    if args.sections:
        out["sections"] = sections
    lines = _markdown(out)
    paths = write_report(args.out_dir, "relevance", out, lines, plot=_plot(out), indent=None)
    print("\n".join(lines))
    for kind, path in paths.items():
        print(f"[relevance] wrote {kind}: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
