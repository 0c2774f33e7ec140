#!/usr/bin/env python3
"""Any-hit per question kind, with the filing vocabulary off and on, in one run.

Usage::

    python -m benchmarks.quality.bench_concepts --dataset ../shared/data/financebench-dev \\
        [--dataset ../shared/data/finance-10k ...] [--scope per-doc corpus]

Each dataset is run once through the benchmark harness with two methods that share one
index: ``proxy-pointer-no-vocabulary`` (``RetrievalConfig(vocabulary=False)``: the search
as it was before query understanding) and ``proxy-pointer`` (the defaults). Questions are
split by what they say (:func:`question_kind`), the first that applies: one that **spans
periods** ("FY2019 - FY2021 average", "year-over-year"), one that **names a statement**
("... shown in the cash flow statement"), one that **needs a note** (its concepts need a
note or Item 1: acquisitions, lawsuits, segments, where it operates), one that **names a
concept** of the vocabulary ("Is the company's quick ratio healthy?"), and **other**.
Questions this project wrote about a dataset's documents
(``benchmarks/questions/<dataset>.jsonl``, its ``meta.written`` says so) are read with the
dataset's own. Writes ``benchmarks/results/concepts/concepts.{json,md}`` and each run's harness
report beside them.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from proxy_pointer.parse.periods import asked_periods
from proxy_pointer.vocab.filings import FILINGS
from proxy_pointer.vocab.phrases import PhraseSet
from proxy_pointer.vocab.understanding import understand

from ..common import CACHE, RESULTS
from ..harness.dataset import load_dataset
from ..harness.report import write_report
from ..harness.runner import run_benchmark

KINDS = ("spans periods", "names a statement", "needs a note", "names a concept", "other")
QUESTIONS = Path(__file__).resolve().parents[1] / "questions"
METHODS = ("proxy-pointer-no-vocabulary", "proxy-pointer")
_NAMED = PhraseSet((n, s.key) for s in FILINGS.statements if s.kind == "statement"
                   for n in (*s.named, *s.titles))


def question_kind(question: str) -> str:
    """The first of :data:`KINDS` that applies (module docstring)."""
    if asked_periods(question).span:
        return "spans periods"
    if _NAMED.find(question):
        return "names a statement"
    understood = understand(question)
    if any(FILINGS.statement(k).kind == "note" or k == "business"
           for k in understood.statements):
        return "needs a note"
    return "names a concept" if understood.concepts else "other"


def tally(details: list[dict], kinds: dict[str, str]) -> dict:
    """``{scope: {method: {kind: {budget: [hits, questions]}}}}`` from harness detail rows."""
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for row in details:
        if row["any_hit"] is None:  # a question without gold passages (section paths only)
            continue
        cell = out[row["scope"]][row["method"]][kinds[row["question_id"]]].setdefault(
            str(row["budget"]), [0, 0])
        cell[0] += bool(row["any_hit"])
        cell[1] += 1
    return json.loads(json.dumps(out))


def markdown(results: dict) -> str:
    lines = ["# Questions that name a concept: the filing vocabulary off and on", "",
             "Any-hit (the context holds a gold passage) per question kind, "
             "`proxy-pointer-no-vocabulary` → `proxy-pointer`, one run per dataset "
             "(`python -m benchmarks.quality.bench_concepts`). Kinds: the first that applies of "
             + ", ".join(KINDS) + ". *written*: of them, questions this project wrote "
             "(`benchmarks/questions/`).", ""]
    for name, res in results.items():
        budgets = res["budgets"]
        written = set(res.get("written", ()))
        lines += [f"## {name}", "", "| scope | kind | questions | written | "
                  + " | ".join(f"any@{b}" for b in budgets) + " |",
                  "|---|---|---|---|" + "---|" * len(budgets)]
        for scope, methods in res["tally"].items():
            for kind in KINDS:
                before = methods.get(METHODS[0], {}).get(kind)
                after = methods.get(METHODS[1], {}).get(kind)
                if not before or not after:
                    continue
                n = next(iter(after.values()))[1]
                w = sum(1 for q, k in res["kinds"].items() if k == kind and q in written)
                cells = [f"{before[str(b)][0]} → {after[str(b)][0]}" for b in budgets]
                lines.append(f"| {scope} | {kind} | {n} | {w} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", required=True)
    p.add_argument("--scope", nargs="+", default=["per-doc", "corpus"])
    p.add_argument("--budgets", nargs="+", type=int, default=[500, 1000, 2000])
    p.add_argument("--cache-dir", default=str(CACHE))
    p.add_argument("--out-dir", default=str(RESULTS / "concepts"))
    args = p.parse_args(argv)
    from ..common import make_embedder

    out = Path(args.out_dir)
    results = {}
    for path in args.dataset:
        written = QUESTIONS / f"{Path(path).resolve().name}.jsonl"
        dataset = load_dataset(path, extra=written if written.is_file() else None)
        details: list[dict] = []
        report = run_benchmark(dataset, methods=list(METHODS), scopes=args.scope,
                               budgets=args.budgets,
                               embedder=make_embedder("minilm", args.cache_dir), memory=False,
                               details=details)
        write_report(report, out, f"concepts-{dataset.name}")
        with open(out / f"concepts-{dataset.name}.details.jsonl", "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in details)
        kinds = {q.id: question_kind(q.question) for q in dataset.questions}
        results[dataset.name] = {"budgets": args.budgets, "tally": tally(details, kinds),
                                 "kinds": dict(sorted(kinds.items())),
                                 "written": sorted(q.id for q in dataset.questions
                                                   if q.meta.get("written"))}
    (out / "concepts.json").write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(results)
    (out / "concepts.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
