"""PDF conversion: speed, recovered headings and memory of :class:`PdfConverter`.

Usage::

    python -m benchmarks.speed.bench_convert [--out-dir DIR] [--big-pages 2000]

For each PDF in ``../shared/data/financebench-dev/docs`` (skipped with a message when the
folder is absent) it measures, pinned to one CPU:

* pages, seconds and pages/s of ``PdfConverter().convert``, against pypdfium2's plain
  ``get_text_range`` over every page (the floor any pypdfium2 converter pays);
* headings per level in the Markdown;
* the share of "Item" headings recovered: the Items a filing has are the lines of plain
  pypdfium2 page text matching ``^\\s*Item\\s+\\d+[A-Z]?\\.`` (case-insensitive) outside
  contents pages (pages where four or more Item lines end in a page number), deduplicated
  by item number; an Item counts as recovered when a heading names it.

Then peak resident memory (``VmHWM`` of a child process that converts one file): the
largest filing, and synthetic 100-page and ``--big-pages`` PDFs built by repeating a filing's
pages (pypdfium2 ``import_pages``, in a temporary folder): bounded memory means the big one
needs about what the small one does, plus its Markdown. Writes
``benchmarks/results/convert/convert-pdf.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..common import DATA, RESULTS, environment, peak_rss_mib, run_child, write_report
from ..harness.dataset import pdf_page_texts

DOCS = DATA / "financebench-dev" / "docs"
ITEM_LINE = re.compile(r"^\s*Item\s+(\d+[A-Z]?)\.", re.IGNORECASE)
ITEM_HEADING = re.compile(r"^#+\s+(?:PART\s+\w+\W+)?Item\s+(\d+[A-Z]?)\b", re.IGNORECASE)
TOC_ENTRY = re.compile(r"^\s*Item\s+\d+[A-Z]?\b.*\s\d{1,3}\s*$", re.IGNORECASE)


def pin_one_cpu() -> None:
    """Run on one CPU, so pages/s is a one-core number."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def plain_pages(path: Path) -> tuple[list[str], float]:
    """Every page's plain text and the seconds pypdfium2 took to read it."""
    t0 = time.perf_counter()
    texts = pdf_page_texts(path)
    return texts, time.perf_counter() - t0


def expected_items(texts: list[str]) -> list[str]:
    """Item numbers a filing has, in order (see the module docstring)."""
    found: dict[str, None] = {}
    for text in texts:
        lines = text.splitlines()
        if sum(1 for ln in lines if TOC_ENTRY.match(ln)) >= 4:
            continue
        for ln in lines:
            m = ITEM_LINE.match(ln)
            if m:
                found.setdefault(m[1].upper(), None)
    return list(found)


def measure(path: Path) -> dict[str, Any]:
    from proxy_pointer.convert.pdf import PdfConverter

    data = path.read_bytes()
    texts, plain_s = plain_pages(path)
    t0 = time.perf_counter()
    conv = PdfConverter().convert(data, path.name)
    seconds = time.perf_counter() - t0
    headings = [ln for ln in conv.markdown.splitlines() if ln.startswith("#")]
    levels = Counter(len(h) - len(h.lstrip("#")) for h in headings)
    want = expected_items(texts)
    got = {m[1].upper() for h in headings if (m := ITEM_HEADING.match(h))}
    return {
        "pages": conv.pages, "seconds": round(seconds, 3),
        "pages_per_s": round(conv.pages / seconds, 1),
        "plain_pages_per_s": round(len(texts) / plain_s, 1),
        "ratio_vs_plain": round(seconds / plain_s, 2),
        "headings": len(headings),
        "levels": {str(k): levels[k] for k in sorted(levels)},
        "items_expected": want, "items_missing": [i for i in want if i not in got],
        "item_share": round(sum(i in got for i in want) / len(want), 3) if want else None,
        "warnings": list(conv.warnings),
        "heading_lines": headings,
    }


def child_rss(path: Path) -> dict[str, Any]:
    """Convert ``path`` in a fresh process; its pages, seconds and peak RSS."""
    out = run_child([sys.executable, "-m", "benchmarks.speed.bench_convert", "--rss", str(path)])
    return json.loads(out.stdout.strip().splitlines()[-1])


def rss_main(path: str) -> int:
    from proxy_pointer.convert.pdf import PdfConverter

    data = Path(path).read_bytes()
    base = peak_rss_mib()
    t0 = time.perf_counter()
    conv = PdfConverter().convert(data, path)
    print(json.dumps({"pages": conv.pages, "seconds": round(time.perf_counter() - t0, 2),
                      "markdown_mib": round(len(conv.markdown.encode()) / 2**20, 1),
                      "file_mib": round(len(data) / 2**20, 1),
                      "rss_before_mib": round(base, 1), "peak_rss_mib": round(peak_rss_mib(), 1)}))
    return 0


def synthetic(src: Path, pages: int, out: Path) -> Path:
    """A PDF of ``pages`` pages: ``src``'s pages repeated."""
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(str(src))
    dest = pdfium.PdfDocument.new()
    n = len(source)
    while len(dest) < pages:
        take = min(n, pages - len(dest))
        dest.import_pages(source, list(range(take)))
    dest.save(str(out))
    dest.close()
    source.close()
    return out


#: The converter's tuned constants and the values swept around each default.
SWEEP = {"HEADING_SIZE": (1.05, 1.1, 1.15, 1.25, 1.4), "TITLE_SIZE": (1.15, 1.3, 1.6),
         "RUNNING_SHARE": (0.1, 0.2, 0.4), "WRAP_EMS": (4, 8, 16)}


def sensitivity(out_dir: Path) -> int:
    """Headings, Item share and titles over the filings as each constant moves alone."""
    from proxy_pointer.convert import pdf as module
    from proxy_pointer.convert.pdf import layout as pdf_layout
    from proxy_pointer.convert.pdf import lines as pdf_lines

    home = {name: pdf_layout if hasattr(pdf_layout, name) else pdf_lines for name in SWEEP}

    paths = sorted(DOCS.glob("*.pdf"))
    texts = {p.name: plain_pages(p)[0] for p in paths}
    wanted = {name: expected_items(t) for name, t in texts.items()}
    rows = []
    for name, values in SWEEP.items():
        default = getattr(home[name], name)
        for value in values:
            setattr(home[name], name, value)
            try:
                n_headings = titled = 0
                shares, pages_total, footers = [], 0, 0
                for p in paths:
                    conv = module.PdfConverter().convert(p.read_bytes(), p.name)
                    lines = conv.markdown.splitlines()
                    heads = [ln for ln in lines if ln.startswith("#")]
                    n_headings += len(heads)
                    pages_total += conv.pages
                    # a title: a level-1 heading on the first page
                    first = lines[:conv.page_starts[1] - 1] if conv.pages > 1 else lines
                    titled += any(ln.startswith("# ") for ln in first)
                    got = {m[1].upper() for h in heads if (m := ITEM_HEADING.match(h))}
                    if wanted[p.name]:
                        shares.append(sum(i in got for i in wanted[p.name])
                                      / len(wanted[p.name]))
                    # running text left in: lines repeated on a third of the pages or more
                    counts = Counter(ln for ln in lines if ln and not ln.startswith("#"))
                    footers += sum(1 for c in counts.values() if c >= max(3, conv.pages / 3))
            finally:
                setattr(home[name], name, default)
            rows.append({"constant": name, "value": value, "default": value == default,
                         "headings": n_headings,
                         "headings_per_page": round(n_headings / pages_total, 3),
                         "item_share": round(sum(shares) / len(shares), 3),
                         "documents_with_title": titled, "repeated_lines_left": footers})
            print(rows[-1], flush=True)
    lines = ["# PDF converter: sensitivity of its constants", "",
             f"Nine FinanceBench filings ({sum(len(t) for t in texts.values())} pages); "
             "one constant moved at a time, the others at their defaults (**bold**). "
             "`Items`: mean share of each filing's Items that are headings; `with a title`: "
             "filings with a level-1 heading on page 1; `repeated lines`: "
             "distinct body lines left on a third of a filing's pages or more (running "
             "headers or footers that survived).", "",
             "| constant | value | headings | per page | Items | with a title | "
             "repeated lines |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        v = f"**{r['value']}**" if r["default"] else str(r["value"])
        lines.append(f"| `{r['constant']}` | {v} | {r['headings']} | {r['headings_per_page']} "
                     f"| {r['item_share']:.0%} | {r['documents_with_title']}/{len(paths)} "
                     f"| {r['repeated_lines_left']} |")
    write_report(out_dir, "convert-pdf-sensitivity", {"rows": rows,
                 "environment": environment("pypdfium2")}, lines, indent=1)
    print("\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", type=Path, default=RESULTS / "convert")
    ap.add_argument("--big-pages", type=int, default=2000)
    ap.add_argument("--rss", help=argparse.SUPPRESS)
    ap.add_argument("--sensitivity", action="store_true",
                    help="sweep the converter's constants instead (convert-pdf-sensitivity)")
    opts = ap.parse_args(argv)
    if opts.rss:
        return rss_main(opts.rss)
    if not DOCS.is_dir():
        print(f"{DOCS} not found: nothing to measure (the filings live next to the checkout)",
              file=sys.stderr)
        return 0
    pin_one_cpu()
    if opts.sensitivity:
        return sensitivity(opts.out_dir)
    rows: dict[str, dict[str, Any]] = {}
    for path in sorted(DOCS.glob("*.pdf")):
        rows[path.name] = measure(path)
        r = rows[path.name]
        print(f"{path.name}: {r['pages']} pages {r['pages_per_s']} p/s "
              f"(plain {r['plain_pages_per_s']}), {r['headings']} headings, "
              f"items {r['item_share']} missing {r['items_missing']}", flush=True)
    largest = max(DOCS.glob("*.pdf"), key=lambda p: rows[p.name]["pages"])
    memory = {"largest": {"file": largest.name, **child_rss(largest)}}
    with tempfile.TemporaryDirectory(prefix="bench-convert-") as tmp:
        for pages in (100, opts.big_pages):
            pdf = synthetic(largest, pages, Path(tmp) / f"synthetic-{pages}.pdf")
            memory[f"synthetic_{pages}"] = child_rss(pdf)
            print(f"synthetic {pages} pages: {memory[f'synthetic_{pages}']}", flush=True)
    total_pages = sum(r["pages"] for r in rows.values())
    total_s = sum(r["seconds"] for r in rows.values())
    shares = [r["item_share"] for r in rows.values() if r["item_share"] is not None]
    summary = {"pages": total_pages, "seconds": round(total_s, 2),
               "pages_per_s": round(total_pages / total_s, 1),
               "mean_item_share": round(sum(shares) / len(shares), 3) if shares else None}
    data = {"summary": summary, "documents": rows, "memory": memory,
            "environment": environment("pypdfium2")}
    lines = [
        "# PDF conversion (pypdfium2 + layout headings)",
        "",
        "One CPU. `plain p/s`: pypdfium2 `get_text_range` over every page, the floor; "
        "`Items`: share of the filing's Items (found in plain text outside contents pages) "
        "that are headings in the Markdown.",
        "",
        "| document | pages | s | pages/s | plain p/s | x plain | headings | per level "
        "(1..6) | Items | missing |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for name, r in rows.items():
        per_level = "/".join(str(r["levels"].get(str(k), 0)) for k in range(1, 7))
        share = "-" if r["item_share"] is None else f"{r['item_share']:.0%}"
        lines.append(f"| {name} | {r['pages']} | {r['seconds']} | {r['pages_per_s']} "
                     f"| {r['plain_pages_per_s']} | {r['ratio_vs_plain']} | {r['headings']} "
                     f"| {per_level} | {share} | {', '.join(r['items_missing']) or '-'} |")
    lines += ["", f"All: {total_pages} pages in {summary['seconds']} s, "
                  f"{summary['pages_per_s']} pages/s; mean Item share "
                  f"{summary['mean_item_share']}.", "",
              "## Peak memory (VmHWM of a child that converts one file)", "",
              "| input | pages | file MiB | Markdown MiB | s | RSS before MiB | peak RSS MiB |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for key, m in memory.items():
        label = m.get("file", key) if key == "largest" else key.replace("_", " ") + " pages"
        lines.append(f"| {label} | {m['pages']} | {m['file_mib']} | {m['markdown_mib']} "
                     f"| {m['seconds']} | {m['rss_before_mib']} | {m['peak_rss_mib']} |")
    write_report(opts.out_dir, "convert-pdf", data, lines, indent=1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
