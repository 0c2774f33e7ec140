#!/usr/bin/env python3
"""Any-hit per question kind, with the filing vocabulary off and on, in one run.

Usage::

    python -m benchmarks.bench_concepts --dataset ../shared/data/financebench-dev \\
        [--dataset ../shared/data/finance-10k ...] [--scope per-doc corpus]

Each dataset is run once through the benchmark harness with two methods that share one
index: ``proxy-pointer-no-vocabulary`` (``RetrievalConfig(vocabulary=False)``: the search
as it was before query understanding) and ``proxy-pointer`` (the defaults). Questions are
split by what they say (:func:`question_kind`): one that **names a statement** ("... shown
in the cash flow statement"), one that **names a concept** of the vocabulary and no
statement ("Is the company's quick ratio healthy?"), and **other**. Writes
``benchmarks/results/concepts.{json,md}`` and each run's harness report beside them.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from proxy_pointer.vocab.filings import FILINGS
from proxy_pointer.vocab.phrases import PhraseSet
from proxy_pointer.vocab.understanding import understand

from .common import CACHE, RESULTS
from .harness.dataset import load_dataset
from .harness.report import write_report
from .harness.runner import run_benchmark

KINDS = ("names a statement", "names a concept", "other")
METHODS = ("proxy-pointer-no-vocabulary", "proxy-pointer")
_NAMED = PhraseSet((n, s.key) for s in FILINGS.statements if s.kind == "statement"
                   for n in (*s.named, *s.titles))


def question_kind(question: str) -> str:
    """``"names a statement"`` when the question names a primary statement by any name the
    vocabulary knows, ``"names a concept"`` when it names a concept and no statement,
    ``"other"`` otherwise."""
    if _NAMED.find(question):
        return KINDS[0]
    return KINDS[1] if understand(question).concepts else KINDS[2]


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
             "(`python -m benchmarks.bench_concepts`).", ""]
    for name, res in results.items():
        budgets = res["budgets"]
        lines += [f"## {name}", "", "| scope | kind | questions | "
                  + " | ".join(f"any@{b}" for b in budgets) + " |",
                  "|---|---|---|" + "---|" * len(budgets)]
        for scope, methods in res["tally"].items():
            for kind in KINDS:
                before = methods.get(METHODS[0], {}).get(kind)
                after = methods.get(METHODS[1], {}).get(kind)
                if not before or not after:
                    continue
                n = next(iter(after.values()))[1]
                cells = [f"{before[str(b)][0]} → {after[str(b)][0]}" for b in budgets]
                lines.append(f"| {scope} | {kind} | {n} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", required=True)
    p.add_argument("--scope", nargs="+", default=["per-doc", "corpus"])
    p.add_argument("--budgets", nargs="+", type=int, default=[500, 1000, 2000])
    p.add_argument("--cache-dir", default=str(CACHE))
    p.add_argument("--out-dir", default=str(RESULTS))
    args = p.parse_args(argv)
    from .run_benchmark import make_embedder

    out = Path(args.out_dir)
    results = {}
    for path in args.dataset:
        dataset = load_dataset(path)
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
                                 "kinds": dict(sorted(kinds.items()))}
    (out / "concepts.json").write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(results)
    (out / "concepts.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
