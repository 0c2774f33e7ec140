"""Filing structure: are a filing's statements sections, and is its contents list the tree?

For each FinanceBench dev filing with questions (``../shared/data/financebench-dev``) the
PDF converter's tree is checked against a small hand-written label list (:data:`LABELS`):
the title and physical page (1-based) of the three primary statements, read off the PDFs.
A statement counts when a section whose title is that statement's (compared by
:func:`~proxy_pointer.convert.pdf.contents.title_key`, so case and plural ``s`` do not
matter) starts on the labelled page or the page after it. Also reported per filing: the
contents entries read and how many were found on the page they name
(:attr:`Converted.structure`), statement titles placed without an entry, the headings,
the level-1 headings that are a document's front matter over its parts (a ``PART``
heading below level 1), and headings with a letter-spaced split ("OVERVI EW": a
capitals word followed by a fragment of one or two capitals that is no word of its own).

``--code DIR`` converts with another checkout's library (a ``git worktree`` of the commit
before a change), so before and after come from the same labels and the same rules::

    python -m benchmarks.quality.bench_filing_structure --code /tmp/before --label before
    python -m benchmarks.quality.bench_filing_structure --label after

Each run writes ``benchmarks/results/filing_structure/filing-structure-<label>.json``;
``--report`` joins
the labels present into ``filing-structure.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..common import RESULTS as _ALL

RESULTS = _ALL / "filing_structure"

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT.parent / "shared" / "data" / "financebench-dev" / "docs"

#: filing -> ((statement title as the filing prints it, physical page), ...)
LABELS: dict[str, tuple[tuple[str, int], ...]] = {
    "3M_2022_10K.pdf": (("Consolidated Statement of Income", 48),
                        ("Consolidated Balance Sheet", 50),
                        ("Consolidated Statement of Cash Flows", 52)),
    "AMCOR_2023Q2_10Q.pdf": (("Condensed Consolidated Statements of Income", 5),
                             ("Condensed Consolidated Balance Sheets", 7),
                             ("Condensed Consolidated Statements of Cash Flows", 8)),
    "AMERICANEXPRESS_2022_10K.pdf": (("Consolidated Statements of Income", 96),
                                     ("Consolidated Balance Sheets", 98),
                                     ("Consolidated Statements of Cash Flows", 99)),
    "BLOCK_2020_10K.pdf": (("Consolidated Statements of Operations", 86),
                           ("Consolidated Balance Sheets", 85),
                           ("Consolidated Statements of Cash Flows", 90)),
    "BOEING_2022_10K.pdf": (("Consolidated Statements of Operations", 55),
                            ("Consolidated Statements of Financial Position", 57),
                            ("Consolidated Statements of Cash Flows", 59)),
    "CORNING_2021_10K.pdf": (("Consolidated Statements of Income", 65),
                             ("Consolidated Balance Sheets", 67),
                             ("Consolidated Statements of Cash Flows", 68)),
    "LOCKHEEDMARTIN_2021_10K.pdf": (("Consolidated Statements of Earnings", 66),
                                    ("Consolidated Balance Sheets", 68),
                                    ("Consolidated Statements of Cash Flows", 69)),
    "PEPSICO_2022_10K.pdf": (("Consolidated Statement of Income", 62),
                             ("Consolidated Balance Sheet", 66),
                             ("Consolidated Statement of Cash Flows", 64)),
    "PEPSICO_2023_8K_dated-2023-05-05.pdf": (),  # an 8-K with no statements
}

_WORD = re.compile(r"[a-z0-9]+")
_PART = re.compile(r"^PART\s+[IVX]+\b", re.IGNORECASE)
_AUDITOR = re.compile(r"^reports?\s+of\s+independent\s+registered", re.IGNORECASE)
_NOTES = re.compile(r"^notes\s+to\s+(?:the\s+)?(?:condensed\s+)?(?:consolidated\s+)?"
                    r"financial\s+statements", re.IGNORECASE)
_FRAGMENT = re.compile(r"\b([A-Z]{2,})\s([A-Z]{1,2})\b")
_LABEL_WORD = re.compile(r"^(?:PART|ITEM|NOTE|SECTION|ARTICLE|SCHEDULE|APPENDIX|EXHIBIT|ANNEX)$")
_ROMAN = re.compile(r"^[IVXLC]+$")
_SHORT_WORDS = {"A", "I", "II", "IV", "V", "VI", "AN", "AS", "AT", "BE", "BY", "DO", "IF",
                "IN", "IS", "IT", "NO", "OF", "ON", "OR", "SO", "TO", "UP", "US", "WE"}


def _key(text: str) -> str:
    words = (w[:-1] if len(w) > 3 and w.endswith("s") else w for w in _WORD.findall(text.lower()))
    return "".join(w for w in words if w != "s")


def measure(path: Path) -> dict[str, Any]:
    """One filing's structure (module docstring)."""
    from proxy_pointer.convert.pdf import PdfConverter
    from proxy_pointer.parse.tree import build_tree
    from proxy_pointer.text.pages import page_of

    t0 = time.perf_counter()
    conv = PdfConverter().convert(path.read_bytes(), path.name)
    seconds = time.perf_counter() - t0
    tree = build_tree(conv.markdown, path.name)
    nodes = [n for n in tree if not n.is_preamble]
    statements, hits = [], []
    for title, page in LABELS[path.name]:
        want = _key(title)
        hit = next((n for n in nodes if _key(n.title).startswith(want)
                    and page_of(conv.page_starts, n.start + 1) in (page, page + 1)), None)
        hits += [hit] if hit is not None else []
        statements.append({"title": title, "page": page, "section": hit is not None,
                           "level": hit.level if hit else None,
                           "path": " > ".join(hit.path) if hit else None})
    structure = dict(getattr(conv, "structure", ()))
    split = [n.title for n in nodes for m in _FRAGMENT.finditer(n.title)
             if m[2] not in _SHORT_WORDS and not _ROMAN.match(m[2])
             and not _LABEL_WORD.match(m[1])]
    parts = [n for n in nodes if _PART.match(n.title)]
    return {
        "filing": path.name, "pages": conv.pages, "seconds": round(seconds, 2),
        "headings": len(nodes),
        "contents_entries": structure.get("contents_entries"),
        "contents_found": structure.get("contents_found"),
        "statements_placed": structure.get("statements"),
        "statements": statements,
        "statement_sections": sum(s["section"] for s in statements),
        "parts_below_level_1": sum(n.level > 1 for n in parts),
        "siblings": _siblings(tree, hits) if hits else None,
        "front_level_1": [n.title for n in nodes if n.level == 1 and not _PART.match(n.title)
                          and any(p.path[:1] == n.path[:1] for p in parts)][:3],
        "split_headings": split[:10],
    }


def _siblings(tree: Any, hits: list[Any]) -> bool:
    """Whether the statements found share one parent, and the auditor's report and the
    notes' title are among its children (a 10-Q has no auditor's report)."""
    parents = {n.parent_id for n in hits}
    if len(parents) != 1 or None in parents:
        return False
    titles = [tree.get(c).title for c in tree.get(parents.pop()).children]
    notes = any(_NOTES.match(t) for t in titles)
    return notes and (any(_AUDITOR.match(t) for t in titles) or "10Q" in tree.doc_id)


def run(label: str) -> dict[str, Any]:
    rows = [measure(DOCS / name) for name in LABELS]
    labelled = sum(len(v) for v in LABELS.values())
    found = sum(r["statement_sections"] for r in rows)
    out = {"label": label, "filings": rows, "statements_labelled": labelled,
           "statement_sections": found,
           "split_headings": sum(len(r["split_headings"]) for r in rows),
           "siblings": sum(bool(r.get("siblings")) for r in rows),
           "with_statements": sum(r.get("siblings") is not None for r in rows),
           "parts_below_level_1": sum(r["parts_below_level_1"] for r in rows)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"filing-structure-{label}.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"[{label}] statements as sections {found}/{labelled}; split headings "
          f"{out['split_headings']}; PART below level 1: {out['parts_below_level_1']}; "
          f"statements, auditor's report and notes siblings: {out['siblings']}/"
          f"{out['with_statements']}")
    return out


def report() -> None:
    runs = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("filing-structure-*.json"))]
    runs.sort(key=lambda r: r["label"] != "before")
    (RESULTS / "filing-structure.json").write_text(json.dumps(runs, indent=1) + "\n")
    labels = [r["label"] for r in runs]
    md = ["# Filing structure: statements as sections, contents entries placed", "",
          "From `python -m benchmarks.quality.bench_filing_structure` (see its docstring). "
          "Statements: of the three primary statements (hand-labelled title and page), "
          "how many are a section starting on their page. Contents: entries found on the "
          "page they name / entries read. Split: headings with a letter-spaced split. "
          "PART<1: PART headings below level 1 (front matter as their ancestor). "
          "Siblings: the statements share a parent, with the auditor's report (not in a "
          "10-Q) and the notes' title among its children.", "",
          "| filing | pages | " + " | ".join(f"statements {lb} | contents {lb} | split {lb} "
                                              f"| PART<1 {lb} | siblings {lb}"
                                              for lb in labels) + " |",
          "|---|---:|" + "---:|---:|---:|---:|---:|" * len(labels)]
    for i, row in enumerate(runs[0]["filings"]):
        cells = [row["filing"], str(row["pages"])]
        for r in runs:
            f = r["filings"][i]
            n = len(f["statements"])
            cells += [f"{f['statement_sections']}/{n}" if n else "n/a",
                      "-" if f["contents_entries"] is None
                      else f"{f['contents_found']}/{f['contents_entries']}",
                      str(len(f["split_headings"])), str(f["parts_below_level_1"]),
                      {True: "yes", False: "no"}.get(f.get("siblings"), "n/a")]
        md.append("| " + " | ".join(cells) + " |")
    md += ["", "Totals: " + "; ".join(
        f"{r['label']}: statements {r['statement_sections']}/{r['statements_labelled']}, "
        f"split headings {r['split_headings']}, PART below level 1 "
        f"{r['parts_below_level_1']}, siblings {r.get('siblings', 'n/a')}/"
        f"{r.get('with_statements', 'n/a')}" for r in runs), ""]
    last = runs[-1]
    md += [f"Where each statement sits ({last['label']}):", ""]
    for f in last["filings"]:
        for s in f["statements"]:
            md.append(f"- {f['filing']}: {s['title']} (p. {s['page']}): "
                      + (f"level {s['level']}, `{s['path']}`" if s["section"] else "not a section"))
    (RESULTS / "filing-structure.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="after")
    ap.add_argument("--code", type=Path, help="another checkout whose proxy_pointer to measure")
    ap.add_argument("--report", action="store_true", help="join the stored labels")
    args = ap.parse_args(argv)
    if args.report:
        report()
        return 0
    if args.code is not None:  # that checkout's library, this harness: in a child process
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "proxy_pointer").symlink_to(args.code.resolve() / "proxy_pointer")
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)])}
            return subprocess.call([sys.executable, "-P", "-m", __spec__.name,
                                    "--label", args.label], env=env, cwd=ROOT)
    run(args.label)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
