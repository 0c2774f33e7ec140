#!/usr/bin/env python3
"""The right filing first, on questions written as analysts ask them, over the dev shelf.

Usage::

    python -m benchmarks.bench_routing_set [--questions benchmarks/routing/dev-shelf.jsonl]
        [--docs ../shared/data/financebench-dev/docs] [--aliases FILE]

``benchmarks/routing/dev-shelf.jsonl`` holds questions over financebench-dev's 22 filings by
category (company and year, lower case, loose form, a name no filing prints, a period the
question is anchored to, a quarter, a fiscal calendar, a current report, two filings that
fit, no company at all), each with the documents that answer it (several where either
does). The whole folder is indexed (the bundled MiniLM behind the benchmark cache) and each
question retrieved over all of it with the library's defaults; a question counts when its
first section comes from an expected document. Prints and writes
``benchmarks/results/routing-set.{json,md}``: the share per category, every miss with where
routing sent it, and a confusion table (expected company -> company of the first section).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from .common import CACHE, RESULTS, ROOT

QUESTIONS = ROOT / "benchmarks" / "routing" / "dev-shelf.jsonl"
DOCS = ROOT.parent / "shared" / "data" / "financebench-dev" / "docs"


def company(doc_id: str) -> str:
    """The company part of a dev file name ("BOEING_2021_10K.pdf" -> BOEING)."""
    return doc_id.split("_", 1)[0]


def run(questions: list[dict], docs: Path, aliases: str | None, cache: str) -> dict:
    from proxy_pointer import Index

    from .run_benchmark import make_embedder

    idx = Index.build([str(p) for p in sorted(docs.glob("*.pdf"))], root=str(docs),
                      embedder=make_embedder("minilm", cache))
    rows = []
    for q in questions:
        options = {"aliases": aliases} if aliases else {}
        res = idx.retrieve(q["question"], budget=500, **options)
        first = res.sections[0].doc_id if res.sections else ""
        rows.append({**q, "first": first, "right": first in q["expected"],
                     "routed": list(res.routing.documents), "why": res.routing.to_dict()})
    return summarize(rows)


def summarize(rows: list[dict]) -> dict:
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    confusion: Counter[tuple[str, str]] = Counter()
    for r in rows:
        by[r["category"]][0] += r["right"]
        by[r["category"]][1] += 1
        confusion[(company(r["expected"][0]), company(r["first"]) if r["first"] else "-")] += 1
    right = sum(r["right"] for r in rows)
    return {"right": right, "questions": len(rows), "by_category": dict(by),
            "confusion": [[e, g, n] for (e, g), n in sorted(confusion.items())],
            "misses": [r for r in rows if not r["right"]], "rows": rows}


def markdown(result: dict) -> str:
    n, right = result["questions"], result["right"]
    lines = ["# The right filing first: the dev-shelf routing set", "",
             f"**{right} of {n}** questions ({right / n:.1%}) get their first section from an "
             "expected filing (financebench-dev's 22 filings, whole folder, defaults; "
             "`python -m benchmarks.bench_routing_set`).", "",
             "| category | right | questions |", "|---|---|---|"]
    lines += [f"| {c} | {r} | {t} |" for c, (r, t) in result["by_category"].items()]
    lines += ["", "## Misses", "", "| question | expected | first | routed to |",
              "|---|---|---|---|"]
    lines += [f"| {m['question']} | {', '.join(m['expected'])} | {m['first'] or '-'} | "
              f"{', '.join(m['routed']) or 'not routed'} |" for m in result["misses"]]
    lines += ["", "## Confusion (expected company -> company of the first section)", "",
              "| expected | first | questions |", "|---|---|---|"]
    lines += [f"| {e} | {g} | {k} |" for e, g, k in result["confusion"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", default=str(QUESTIONS))
    p.add_argument("--docs", default=str(DOCS))
    p.add_argument("--aliases", default=None, help="an aliases file for routing")
    p.add_argument("--cache-dir", default=str(CACHE))
    p.add_argument("--out-dir", default=str(RESULTS))
    p.add_argument("--name", default="routing-set")
    args = p.parse_args(argv)
    questions = [json.loads(line) for line in Path(args.questions).read_text().splitlines()
                 if line.strip()]
    result = run(questions, Path(args.docs), args.aliases, args.cache_dir)
    out = Path(args.out_dir)
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    (out / f"{args.name}.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
