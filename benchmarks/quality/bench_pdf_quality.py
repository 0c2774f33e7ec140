#!/usr/bin/env python3
"""Retrieval on real PDF filings: proxy-pointer's own PDF conversion against plain-text
baselines, and against LlamaParse Markdown of the same filings.

Usage::

    python -m benchmarks.quality.bench_pdf_quality [--budgets 500 1000 2000] [--embedder minilm]

(from the repository root). Two runs, per-document scope, the harness's packing and metrics:

1. ``financebench-dev`` (9 FinanceBench PDFs, 28 questions): ``proxy-pointer`` indexes the
   PDFs through the library's converter; ``flat`` (2,000/200-character windows, vectors)
   and ``bm25`` read the plain pypdfium2 page text; ``oracle`` returns the gold pages' plain
   text. Writes ``benchmarks/results/pdf_quality/financebench-dev.{json,md,png}``, the harness
   report plus per-filing counts.
2. The filings that ``finance-10k`` also holds as LlamaParse Markdown (American Express,
   Boeing, PepsiCo 2022 10-Ks): the same questions, with the same loose matching, over that
   Markdown (``proxy-pointer``, ``flat``, ``bm25``), set beside run 1's numbers on those
   filings. Writes ``benchmarks/results/pdf_quality/financebench-pdf-vs-llamaparse.{json,md}``.

Gold passages were written by FinanceBench's extractor, so they are matched loosely
(:mod:`benchmarks.harness.matching`). Page hits need a page map: the PDF runs have one
(the converter's, or the plain text's pages), LlamaParse Markdown has none, so its page hits
are n/a. The report also says how many gold passages each text holds at all (the ceiling
any retriever over it has). Embeddings come from the harness's cache
(``benchmarks/.work/cache``): a rerun embeds nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from .. import common
from ..common import CACHE, DATA, RESULTS
from ..harness.dataset import Dataset, Question, load_dataset
from ..harness.matching import flatten, loose_found, shingles
from ..harness.report import markdown_report, plot_any_hit
from ..harness.runner import run_benchmark

PDF_METHODS = ["proxy-pointer", "flat", "bm25", "oracle"]
MARKDOWN_METHODS = ["proxy-pointer", "flat", "bm25"]
SCOPE = "per-doc"


def _log(msg: str) -> None:
    print(f"[pdf-quality] {msg}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pdf-dataset", default=str(DATA / "financebench-dev"))
    p.add_argument("--markdown-dataset", default=str(DATA / "finance-10k"),
                   help="dataset whose docs/<filing>.md are LlamaParse Markdown of some PDFs")
    p.add_argument("--budgets", nargs="+", type=int, default=[500, 1000, 2000])
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--cache-dir", default=str(CACHE))
    p.add_argument("--out-dir", default=str(RESULTS / "pdf_quality"))
    p.add_argument("--date", default=time.strftime("%Y-%m-%d"), help="date in the file name")
    return p.parse_args(argv)


def markdown_twin(pdf: Dataset, markdown_root: Path) -> Dataset:
    """``pdf``'s questions on the filings that ``markdown_root/docs`` holds as Markdown
    (``X.pdf`` -> ``X.md``), matched loosely like the PDFs; no page map."""
    docs: dict[str, str] = {}
    for doc_id in pdf.docs:
        md = markdown_root / "docs" / f"{doc_id.removesuffix('.pdf')}.md"
        if md.is_file():
            docs[md.stem] = md.read_text(encoding="utf-8")
    questions = tuple(
        Question(id=q.id, doc_id=q.doc_id.removesuffix(".pdf"), question=q.question,
                 evidence=q.evidence, sections=q.sections, answers=q.answers, meta=q.meta)
        for q in pdf.questions if q.doc_id.removesuffix(".pdf") in docs)
    return Dataset(name=f"{pdf.name}-llamaparse", root=markdown_root, docs=docs,
                   questions=questions, matching="loose")


def passages_in_text(questions: tuple[Question, ...], texts: dict[str, str]
                     ) -> dict[str, list[int]]:
    """Per document: ``[gold passages loosely found anywhere in its text, passages]``."""
    out: dict[str, list[int]] = {}
    for doc_id, text in texts.items():
        flat = flatten(text)
        have = shingles(flat)
        found = total = 0
        for q in questions:
            if q.doc_id != doc_id:
                continue
            for ann in q.evidence:
                for p in ann:
                    total += 1
                    found += loose_found(flatten(p), flat, context_shingles=have)
        out[doc_id] = [found, total]
    return out


def converted_texts(pdf: Dataset, doc_ids: list[str]) -> dict[str, str]:
    """The library's Markdown of each PDF (what proxy-pointer indexes)."""
    from proxy_pointer.convert import convert_file

    return {d: convert_file(pdf.doc_path(d)).markdown for d in doc_ids}


def per_filing(results: dict, details: list[dict], questions: tuple[Question, ...],
               budgets: list[int]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{filing: {method: {"questions": n, "any@b": hits, "page@b": hits or None}}}``."""
    doc_of = {q.id: q.doc_id.removesuffix(".pdf") for q in questions}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in results["methods"]:
        for b in budgets:
            rows = [r for r in details if r["method"] == name and r["scope"] == SCOPE
                    and r["budget"] == b]
            for r in rows:
                cell = out.setdefault(doc_of[r["question_id"]], {}).setdefault(
                    name, {"questions": 0})
                if b == budgets[0]:
                    cell["questions"] += 1
                for metric in ("any", "page"):
                    v = r[f"{metric}_hit"]
                    key = f"{metric}@{b}"
                    if v is None:
                        cell.setdefault(key, None)
                    else:
                        cell[key] = (cell.get(key) or 0) + int(v)
    return dict(sorted(out.items()))


def _cell(hits: int | None, n: int) -> str:
    return "n/a" if hits is None else f"{hits}/{n}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def filing_table(table: dict[str, dict[str, dict[str, Any]]], budgets: list[int],
                 label: dict[str, str] | None = None) -> list[str]:
    head = ["filing", "method", "questions", *[f"any@{b}" for b in budgets],
            *[f"page@{b}" for b in budgets]]
    lines = [_row(head), _row(["---"] * len(head))]
    for filing, methods in table.items():
        for name, c in methods.items():
            n = c["questions"]
            lines.append(_row([filing, (label or {}).get(name, name), str(n),
                               *[_cell(c.get(f"any@{b}"), n) for b in budgets],
                               *[_cell(c.get(f"page@{b}"), n) for b in budgets]]))
    return lines


def totals(table: dict[str, dict[str, dict[str, Any]]], budgets: list[int],
           filings: list[str]) -> dict[str, dict[str, Any]]:
    """Per method, the counts of ``table`` summed over ``filings``."""
    out: dict[str, dict[str, Any]] = {}
    for f in filings:
        for name, c in table.get(f, {}).items():
            t = out.setdefault(name, {"questions": 0})
            t["questions"] += c["questions"]
            for b in budgets:
                for metric in ("any", "page"):
                    key = f"{metric}@{b}"
                    v = c.get(key)
                    t[key] = None if v is None or (key in t and t[key] is None) else (
                        t.get(key, 0) + v)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from ..common import make_embedder

    budgets = sorted(set(args.budgets))
    embedder = make_embedder(args.embedder, args.cache_dir)
    pdf = load_dataset(args.pdf_dataset)
    for w in pdf.warnings:
        _log(f"warning: {w}")

    _log(f"run 1: {pdf.name} ({len(pdf.docs)} PDFs, {len(pdf.questions)} questions)")
    pdf_details: list[dict] = []
    pdf_results = run_benchmark(pdf, methods=PDF_METHODS, scopes=[SCOPE], budgets=budgets,
                                embedder=embedder, memory=False, details=pdf_details)
    pdf_table = per_filing(pdf_results, pdf_details, pdf.questions, budgets)
    stem = f"{pdf.name}-{args.date}"
    pdf_results["per_filing"] = pdf_table
    md = markdown_report(pdf_results, plot_name=f"{stem}.png").rstrip("\n").split("\n")
    md += ["", "## Per filing (counts of questions)", "", *filing_table(pdf_table, budgets)]
    paths = common.write_report(args.out_dir, stem, pdf_results, md,
                                plot=lambda png: plot_any_hit(pdf_results, png))

    twin = markdown_twin(pdf, Path(args.markdown_dataset))
    filings = sorted(twin.docs)
    _log(f"run 2: {twin.name} ({', '.join(filings)}; {len(twin.questions)} questions)")
    lp_details: list[dict] = []
    lp_results = run_benchmark(twin, methods=MARKDOWN_METHODS, scopes=[SCOPE],
                               budgets=budgets, embedder=embedder, memory=False,
                               details=lp_details)
    lp_table = per_filing(lp_results, lp_details, twin.questions, budgets)

    texts = {
        "pdf plain text (pypdfium2)": passages_in_text(
            twin.questions, {f: pdf.docs[f"{f}.pdf"] for f in filings}),
        "proxy-pointer PDF conversion": passages_in_text(
            twin.questions, {f: t for f, t in zip(filings, converted_texts(
                pdf, [f"{f}.pdf" for f in filings]).values(), strict=True)}),
        "LlamaParse Markdown": passages_in_text(twin.questions, twin.docs),
    }
    label_pdf = {"proxy-pointer": "proxy-pointer, own PDF conversion",
                 "flat": "flat, pypdfium2 text", "bm25": "bm25, pypdfium2 text",
                 "oracle": "oracle, gold pages"}
    label_lp = {"proxy-pointer": "proxy-pointer, LlamaParse .md",
                "flat": "flat, LlamaParse .md", "bm25": "bm25, LlamaParse .md"}
    combined: dict[str, dict[str, dict[str, Any]]] = {}
    for f in filings:
        combined[f] = {**{label_pdf[m]: c for m, c in pdf_table.get(f, {}).items()},
                       **{label_lp[m]: c for m, c in lp_table.get(f, {}).items()}}
    both = totals(combined, budgets, filings)
    comparison = {
        "date": args.date, "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "filings": filings, "questions": len(twin.questions), "scope": SCOPE,
        "budgets": budgets, "embedder": embedder.model_id, "matching": "loose",
        "all_three": both, "per_filing": combined, "passages_in_text": texts,
        "pdf_run": f"{stem}.json", "markdown_run": lp_results,
        "environment": common.environment(),
    }
    lines = _comparison_lines(args.date, filings, len(twin.questions), budgets,
                              embedder.model_id, stem, both, combined, texts)
    out = common.write_report(args.out_dir, "financebench-pdf-vs-llamaparse", comparison, lines)
    print("\n".join(md))
    print()
    print("\n".join(lines))
    for kind, path in {**paths, **{f"comparison {k}": v for k, v in out.items()}}.items():
        _log(f"wrote {kind}: {path}")
    return 0


def _comparison_lines(date: str, filings: list[str], n: int, budgets: list[int],
                      model_id: str, stem: str, both: dict[str, Any],
                      combined: dict[str, dict[str, dict[str, Any]]],
                      texts: dict[str, dict[str, list[int]]]) -> list[str]:
    """The comparison report: all three filings, per filing, gold passages in each text."""
    lines = [
        f"# Own PDF conversion vs LlamaParse Markdown ({date})",
        "",
        f"FinanceBench questions on the {len(filings)} filings that `finance-10k` also holds "
        f"as LlamaParse Markdown ({', '.join(filings)}): {n} questions, per-document scope, "
        f"budgets {', '.join(map(str, budgets))} MiniLM word pieces, embedder "
        f"`{model_id}`. Same questions, same loose matching (both sides case-folded, "
        "HTML tags and every character that is not a letter or digit removed; a passage is "
        "found when at least half of its distinct 14-character substrings occur in the "
        "context). *page* = a returned piece covers a gold page; LlamaParse Markdown has no "
        "page map, so its page hits are n/a. The PDF rows come from the full run "
        f"(`{stem}.md`). Counts are questions with a hit.",
        "",
        "## All three filings",
        "",
    ]
    head = ["method, text", *[f"any@{b}" for b in budgets], *[f"page@{b}" for b in budgets]]
    lines += [_row(head), _row(["---"] * len(head))]
    for name, c in both.items():
        lines.append(_row([name, *[_cell(c.get(f"any@{b}"), c["questions"]) for b in budgets],
                           *[_cell(c.get(f"page@{b}"), c["questions"]) for b in budgets]]))
    lines += ["", "## Per filing", "", *filing_table(combined, budgets)]
    lines += ["", "## Gold passages present in each text at all", "",
              "Loosely found anywhere in the whole document: the ceiling of any retriever over "
              "that text.", ""]
    head = ["text", *filings, "all"]
    lines += [_row(head), _row(["---"] * len(head))]
    for text, per_doc in texts.items():
        found = sum(v[0] for v in per_doc.values())
        total = sum(v[1] for v in per_doc.values())
        lines.append(_row([text, *[f"{per_doc[f][0]}/{per_doc[f][1]}" for f in filings],
                           f"{found}/{total}"]))
    return lines


if __name__ == "__main__":
    sys.exit(main())
