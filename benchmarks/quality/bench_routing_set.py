#!/usr/bin/env python3
"""The right filing first, on questions written as analysts ask them, over both dev shelves.

Usage::

    python -m benchmarks.quality.bench_routing_set [--questions FILE ...] [--shelves NAME ...]
        [--index DIR] [--aliases FILE] [--budget 2000]

``benchmarks/routing/dev-shelf.jsonl`` holds questions over financebench-dev's 22 filings and
``benchmarks/routing/filings-shelf.jsonl`` questions over filings-shelf's 31 (and eight more
on the dev shelf's PepsiCo release, 10-K and 8-K), by category, each with the documents
that answer it and the part it belongs to (``split``: ``tune`` or ``check``, drawn once,
seeded, per category; nothing is tuned on ``check``). Both shelves are indexed as one
(53 filings, the bundled MiniLM behind the benchmark cache; ``--index`` keeps the index
for the next run) and each question is retrieved over all of it with the library's
defaults. A question counts as *first* when its first section comes from an expected
filing, and *in two* when one of the first two filings its sections come from is.

Also checks every card against ``benchmarks/routing/cards.jsonl`` (company, form, period
or date, read by hand from each cover). Writes
``benchmarks/results/routing_set/routing-set.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ..common import CACHE, DATA, RESULTS, ROOT, environment, percentile, write_report

ROUTING = ROOT / "benchmarks" / "routing"
QUESTIONS = (ROUTING / "dev-shelf.jsonl", ROUTING / "filings-shelf.jsonl")
SHELVES = ("financebench-dev", "filings-shelf")
CARD_FIELDS = ("entity", "kind", "period", "period_end")


def company(doc_id: str) -> str:
    """The company part of a dev file name ("BOEING_2021_10K.pdf" -> BOEING)."""
    return doc_id.split("_", 1)[0]


def load_index(shelves: list[str], index_dir: str | None, cache: str):
    """The shelves indexed as one (kept in ``index_dir`` when given, loaded from it next
    time), and each document's shelf."""
    from proxy_pointer import Index

    from ..common import make_embedder

    paths = {p: s for s in shelves for p in sorted((DATA / s / "docs").glob("*.pdf"))}
    embedder = make_embedder("minilm", cache)
    if index_dir and (Path(index_dir) / "CURRENT").exists():
        idx = Index.load(index_dir, embedder=embedder)
    else:
        idx = Index.build([str(p) for p in paths], root=None, embedder=embedder)
        if index_dir:
            idx.save(index_dir)
    return idx, {p.name: s for p, s in paths.items()}


def cards_right(idx, shelf_of: dict[str, str]) -> dict:
    """Each shelf's share of cards that match the labelled table, and the wrong ones."""
    labelled = {r["document"]: r for r in map(json.loads, (ROUTING / "cards.jsonl")
                                              .read_text(encoding="utf-8").splitlines())}
    cards = idx.reader.cards()
    out: dict[str, dict] = {}
    for doc, shelf in sorted(shelf_of.items()):
        s = out.setdefault(shelf, {"right": 0, "filings": 0, "wrong": []})
        s["filings"] += 1
        want = labelled.get(doc)
        got = {f: getattr(cards[doc], f) for f in CARD_FIELDS} if doc in cards else {}
        if want is not None and all(got.get(f) == want[f] for f in CARD_FIELDS):
            s["right"] += 1
        else:
            s["wrong"].append({"document": doc, "card": got, "labelled": want})
    return out


#: The document score's weights tried on the tuning part (content, cue, margin).
GRID = [(c, u, m) for c in (0.0, 0.5, 1.0, 2.0) for u in (0.0, 0.25, 0.5, 1.0)
        for m in (0.0, 0.1, 0.3)]


def run(questions: list[dict], idx, aliases: str | None, budget: int,
        choice: object = "default") -> list[dict]:
    """Each question retrieved over the whole shelf: the library's document choice, or
    ``choice`` (a :class:`~proxy_pointer.search.choice.Weights`, ``None``: the cards alone)."""
    from proxy_pointer import Retriever

    retriever = (None if choice == "default" else
                 Retriever(idx.reader, refiner=idx.refiner, choice=choice))
    rows = []
    for q in questions:
        options = {"aliases": aliases} if aliases else {}
        t = time.perf_counter()
        res = (idx.retrieve(q["question"], budget=budget, **options) if retriever is None
               else retriever.retrieve(q["question"], budget=budget, **options))
        ms = (time.perf_counter() - t) * 1000
        docs = list(dict.fromkeys(s.doc_id for s in res.sections))
        first = docs[0] if docs else ""
        rows.append({**q, "first": first, "right": first in q["expected"],
                     "in_two": any(d in q["expected"] for d in docs[:2]),
                     "documents": docs[:4], "routed": list(res.routing.documents), "ms": ms,
                     "scores": res.routing.to_dict()["scores"][:4], "note": res.routing.note})
    return rows


def sensitivity(questions: list[dict], idx, aliases: str | None, budget: int) -> list[dict]:
    """First and in-two on the tuning part for every weight setting of :data:`GRID`, and
    for the cards alone (``content`` None)."""
    from proxy_pointer.search.choice import Weights

    tune = [q for q in questions if q["split"] == "tune"]
    out = []
    for setting in [None, *GRID]:
        w = None if setting is None else Weights(*setting)
        rows = run(tune, idx, aliases, budget, choice=w)
        c, u, m = setting if setting is not None else (None, None, None)
        out.append({"content": c, "cue": u, "margin": m, "questions": len(rows),
                    "first": sum(r["right"] for r in rows),
                    "in_two": sum(r["in_two"] for r in rows),
                    "p50_ms": percentile([r["ms"] for r in rows], 50)})
        print(f"[grid] {setting}: first {out[-1]['first']}, in two {out[-1]['in_two']}",
              flush=True)
    return out


def summarize(rows: list[dict], shelf_of: dict[str, str]) -> dict:
    parts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    confusion: Counter[tuple[str, str]] = Counter()
    for r in rows:
        shelf = shelf_of.get(r["expected"][0], "?")
        for key in (r["split"], f"{r['split']} / {shelf}", "all"):
            parts[key][0] += r["right"]
            parts[key][1] += r["in_two"]
            parts[key][2] += 1
        by[r["category"]][0] += r["right"]
        by[r["category"]][1] += r["in_two"]
        by[r["category"]][2] += 1
        confusion[(company(r["expected"][0]), company(r["first"]) if r["first"] else "-")] += 1
    ms = [r["ms"] for r in rows]
    return {"parts": dict(sorted(parts.items())), "by_category": dict(by),
            "ms": {"p50": percentile(ms, 50), "p95": percentile(ms, 95)},
            "confusion": [[e, g, n] for (e, g), n in sorted(confusion.items())],
            "misses": [r for r in rows if not r["right"]], "rows": rows}


def markdown(result: dict) -> list[str]:
    lines = ["# The right filing first: the routing set over both dev shelves", "",
             f"{result['questions']} questions over {result['filings']} filings indexed as one "
             f"shelf (financebench-dev and filings-shelf), defaults, budget {result['budget']} "
             "(`python -m benchmarks.quality.bench_routing_set`). *first*: the first section comes "
             "from an expected filing; *in two*: one of the first two filings is expected. "
             "`check` was never tuned on.", "",
             "| part | first | in two | questions |", "|---|---|---|---|"]
    for k, (r, two, t) in result["parts"].items():
        lines.append(f"| {k} | {r} ({r / t:.1%}) | {two} ({two / t:.1%}) | {t} |")
    lines += ["", f"Retrieval per question, the document choice included: p50 "
              f"{result['ms']['p50']:.1f} ms, p95 {result['ms']['p95']:.1f} ms "
              f"({result['environment']['cpu']}).", "",
              "| category | first | in two | questions |", "|---|---|---|---|"]
    lines += [f"| {c} | {r} | {two} | {t} |" for c, (r, two, t) in result["by_category"].items()]
    lines += ["", "## Cards (against benchmarks/routing/cards.jsonl)", "",
              "| shelf | right | filings |", "|---|---|---|"]
    lines += [f"| {s} | {c['right']} | {c['filings']} |" for s, c in result["cards"].items()]
    if result.get("sensitivity"):
        lines += ["", "## Sensitivity of the document score (tuning part only)", "",
                  "| content | cue | margin | first | in two | p50 ms |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {_w(g['content'])} | {_w(g['cue'])} | {_w(g['margin'])} | {g['first']} "
                  f"| {g['in_two']} | {g['p50_ms']:.1f} |" for g in result["sensitivity"]]
    lines += ["", "## Misses", "", "| part | question | expected | first | routed to |",
              "|---|---|---|---|---|"]
    lines += [f"| {m['split']} | {m['question']} | {', '.join(m['expected'])} | "
              f"{m['first'] or '-'} | {', '.join(m['routed']) or 'not routed'} |"
              for m in result["misses"]]
    lines += ["", "## Confusion (expected company -> company of the first section)", "",
              "| expected | first | questions |", "|---|---|---|"]
    lines += [f"| {e} | {g} | {k} |" for e, g, k in result["confusion"]]
    return lines


def _w(v: float | None) -> str:
    return "cards alone" if v is None else f"{v:g}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", nargs="+", default=[str(q) for q in QUESTIONS])
    p.add_argument("--shelves", nargs="+", default=list(SHELVES))
    p.add_argument("--index", default=None, help="keep the index here (loaded when present)")
    p.add_argument("--aliases", default=None, help="an aliases file for routing")
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--split", choices=("tune", "check", "all"), default="all")
    p.add_argument("--grid", action="store_true",
                   help="also try every weight setting of GRID on the tuning part")
    p.add_argument("--cache-dir", default=str(CACHE))
    p.add_argument("--out-dir", default=str(RESULTS / "routing_set"))
    p.add_argument("--name", default="routing-set")
    args = p.parse_args(argv)
    questions = [json.loads(line) for f in args.questions
                 for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = [q for q in questions if args.split in ("all", q["split"])]
    idx, shelf_of = load_index(args.shelves, args.index, args.cache_dir)
    questions = [q for q in questions if q["expected"][0] in shelf_of]
    result = {"questions": len(questions), "filings": len(shelf_of), "budget": args.budget,
              **summarize(run(questions, idx, args.aliases, args.budget), shelf_of),
              "cards": cards_right(idx, shelf_of), "environment": environment()}
    if args.grid:
        result["sensitivity"] = sensitivity(questions, idx, args.aliases, args.budget)
    lines = markdown(result)
    write_report(args.out_dir, args.name, result, lines)
    print("\n".join(lines[:30]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
