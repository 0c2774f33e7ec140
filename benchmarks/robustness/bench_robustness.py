"""Two robustness runs: a bigger haystack (distractor documents) and documents without headings.

* **Distractors.** finance-10k's questions searched over finance-10k *plus* every qasper-dev
  paper (corpus scope), against the same questions over finance-10k alone. The target: a
  bigger haystack costs at most one point.
* **Headerless.** qasper-dev with every ATX heading line removed, per-doc: the default
  (topical segments, ``segmentation.py``) against sliding windows (``proxy-pointer-windows``),
  with the real headings as the reference.

The derived datasets are folders of symlinks (and, for the headerless run, rewritten copies)
under ``benchmarks/.work/robustness``. Same harness, packing rule and metrics as
``run_benchmark``.

    python -m benchmarks.robustness.bench_robustness [--data ../shared/data] [--cache-dir DIR]

Writes ``benchmarks/results/robustness/robustness.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ..common import CACHE, DATA, RESULTS, WORK, make_embedder, write_report
from ..harness.dataset import load_dataset
from ..harness.runner import run_benchmark

_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
BUDGETS = [500, 1000, 2000]


def _distractor_view(data: Path, work: Path) -> Path:
    """finance-10k's questions over finance-10k and qasper-dev documents (symlinks)."""
    out = work / "finance-10k-plus-qasper-dev"
    shutil.rmtree(out, ignore_errors=True)
    (out / "docs").mkdir(parents=True)
    for name in ("finance-10k", "qasper-dev"):
        for doc in sorted((data / name / "docs").glob("*.md")):
            (out / "docs" / doc.name).symlink_to(doc.resolve())
    shutil.copy(data / "finance-10k" / "questions.jsonl", out / "questions.jsonl")
    (out / "SOURCE.md").write_text("finance-10k questions; finance-10k and qasper-dev "
                                   "documents (see their SOURCE.md files)\n")
    return out


def _headerless_view(data: Path, work: Path) -> Path:
    """qasper-dev with every ATX heading line removed."""
    out = work / "qasper-dev-no-headings"
    shutil.rmtree(out, ignore_errors=True)
    (out / "docs").mkdir(parents=True)
    for doc in sorted((data / "qasper-dev" / "docs").glob("*.md")):
        lines = doc.read_text(encoding="utf-8").splitlines(keepends=True)
        (out / "docs" / doc.name).write_text(
            "".join(line for line in lines if not _HEADING.match(line)), encoding="utf-8")
    shutil.copy(data / "qasper-dev" / "questions.jsonl", out / "questions.jsonl")
    (out / "SOURCE.md").write_text("qasper-dev with its heading lines removed "
                                   "(see qasper-dev/SOURCE.md)\n")
    return out


def _any(results: dict, method: str, scope: str) -> dict[int, float]:
    budgets = results["methods"][method]["scopes"][scope]["budgets"]
    return {b: 100 * budgets[str(b)]["any_hit"] for b in BUDGETS}


def _section(results: dict, method: str, scope: str) -> dict[int, float | None]:
    budgets = results["methods"][method]["scopes"][scope]["budgets"]
    return {b: None if budgets[str(b)]["section_hit"] is None
            else 100 * budgets[str(b)]["section_hit"] for b in BUDGETS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--cache-dir", default=str(CACHE))
    ap.add_argument("--out", default=str(RESULTS / "robustness" / "robustness"),
                    help="output path without suffix: writes OUT.json and OUT.md")
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "finance-10k").is_dir() or not (data / "qasper-dev").is_dir():
        print(f"{data}: needs finance-10k/ and qasper-dev/", file=sys.stderr)
        return 2
    work = WORK / "robustness"
    embedder = make_embedder("minilm", args.cache_dir)

    def run(path: Path, methods: list[str], scope: str) -> dict:
        return run_benchmark(load_dataset(path), methods=methods, scopes=[scope],
                             budgets=BUDGETS, embedder=embedder, memory=False)

    alone = run(data / "finance-10k", ["proxy-pointer"], "corpus")
    haystack = run(_distractor_view(data, work), ["proxy-pointer"], "corpus")
    headed = run(data / "qasper-dev", ["proxy-pointer"], "per-doc")
    stripped = run(_headerless_view(data, work), ["proxy-pointer", "proxy-pointer-windows"],
                   "per-doc")
    rows = {
        "finance-10k corpus, 4 documents": (_any(alone, "proxy-pointer", "corpus"),
                                            _section(alone, "proxy-pointer", "corpus")),
        "finance-10k corpus, + 281 qasper-dev distractors": (
            _any(haystack, "proxy-pointer", "corpus"),
            _section(haystack, "proxy-pointer", "corpus")),
        "qasper-dev per-doc, real headings": (_any(headed, "proxy-pointer", "per-doc"), None),
        "qasper-dev per-doc, headings removed: topical segments (default)": (
            _any(stripped, "proxy-pointer", "per-doc"), None),
        "qasper-dev per-doc, headings removed: sliding windows": (
            _any(stripped, "proxy-pointer-windows", "per-doc"), None),
    }
    # Run name -> numbers, as before; no environment stamp (it is not a run).
    report = {name: {"any_hit": a, "section_hit": s} for name, (a, s) in rows.items()}
    out = Path(args.out).with_suffix("")
    lines = ["# Robustness: distractor documents and documents without headings", "",
             "| run | any@500 | any@1000 | any@2000 | section@500 | section@1000 | "
             "section@2000 |", "|---|---|---|---|---|---|---|"]
    for name, (a, s) in rows.items():
        secs = [f"{s[b]:.1f}%" if s and s[b] is not None else "n/a" for b in BUDGETS]
        lines.append(f"| {name} | " + " | ".join(f"{a[b]:.1f}%" for b in BUDGETS)
                     + " | " + " | ".join(secs) + " |")
    write_report(out.parent, out.name, report, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
