#!/usr/bin/env python3
"""How sensitive retrieval is to each packing and chunking constant added for document shapes.

Each constant is moved alone, the rest kept at the defaults, on the datasets where it acts:
the original dev sets and their ``long-lines`` variant (whole sections on one line), both
written by :mod:`benchmarks.quality.bench_shapes` under ``benchmarks/.work/shapes``. Constants:

* ``_PIECE`` (packing.py, 128): most tokens of one piece of a long line;
* ``_MIN_WINDOW`` (packing.py, 48): a section holding only pieces of a long line adding up
  to fewer tokens gives them back;
* ``_PARAGRAPH_LINE`` (packing.py, 1.5): a line up to this many times a section's share is
  a long paragraph, whose pieces wait behind whole blocks (1.0: no line waits);
* ``max_section_share`` (0.3, with ``section_floor`` 400): the share one section may take
  before the others had their turn, which decides when a block is cut into lines and pieces;
* ``min_section_chars`` (chunking, 0): sections with less own text get no chunk (the value
  before this change was 100); on the ``short-sections`` variant as well.

Same harness, packing rule and metrics as ``run_benchmark``; any-hit at 500/1000/2000.

    python -m benchmarks.quality.bench_shapes --label after   # writes the variants first
    python -m benchmarks.quality.bench_packing_sensitivity

Writes ``benchmarks/results/packing_sensitivity/packing-sensitivity.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ..common import CACHE, RESULTS, WORK, environment, make_embedder, write_report
from ..harness.dataset import load_dataset
from ..harness.methods import METHODS
from ..harness.methods import proxy as proxy_methods
from ..harness.methods.proxy import ProxyPointerMethod
from ..harness.runner import run_benchmark

BUDGETS = [500, 1000, 2000]
# name -> (module constants of proxy_pointer.search.packing, retrieval options, chunking)
SETTINGS: dict[str, tuple[dict[str, float], dict[str, Any], int]] = {
    "defaults": ({}, {}, 0),
    "_PIECE=32": ({"_PIECE": 32}, {}, 0),
    "_PIECE=64": ({"_PIECE": 64}, {}, 0),
    "_PIECE=256": ({"_PIECE": 256}, {}, 0),
    "_MIN_WINDOW=24": ({"_MIN_WINDOW": 24}, {}, 0),
    "_MIN_WINDOW=96": ({"_MIN_WINDOW": 96}, {}, 0),
    "_PARAGRAPH_LINE=1.0": ({"_PARAGRAPH_LINE": 1.0}, {}, 0),
    "_PARAGRAPH_LINE=2.0": ({"_PARAGRAPH_LINE": 2.0}, {}, 0),
    "_PARAGRAPH_LINE=3.0": ({"_PARAGRAPH_LINE": 3.0}, {}, 0),
    "max_section_share=0.2": ({}, {"max_section_share": 0.2, "section_floor": 200}, 0),
    "max_section_share=0.5": ({}, {"max_section_share": 0.5}, 0),
    "min_section_chars=100": ({}, {}, 100),
}


class _Setting(ProxyPointerMethod):
    """The library's defaults with some packing constants changed while it retrieves, and
    (``min_chars``) its own index chunked with another ``min_section_chars``."""

    def __init__(self, name: str, constants: dict[str, float], options: dict[str, Any],
                 min_chars: int) -> None:
        # A distinct store name gives an index built with other chunking its own cache key.
        super().__init__(name, store=f"local-min{min_chars}", **options)
        self.constants, self.min_chars = constants, min_chars

    def build(self, dataset: Any, embedder: Any) -> Any:
        from proxy_pointer.parse.chunking import ChunkConfig

        original = proxy_methods._chunk_config
        proxy_methods._chunk_config = lambda noise, chunking: ChunkConfig(
            min_section_chars=self.min_chars)
        try:
            return super().build(dataset, embedder)
        finally:
            proxy_methods._chunk_config = original

    def retrieve(self, question: Any, scope: str, budget: int) -> Any:
        import proxy_pointer.search.packing as packing

        saved = {k: getattr(packing, k) for k in self.constants}
        for k, v in self.constants.items():
            setattr(packing, k, v)
        try:
            return list(super().retrieve(question, scope, budget))
        finally:
            for k, v in saved.items():
                setattr(packing, k, v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=str(WORK / "shapes"))
    ap.add_argument("--datasets", nargs="+", default=["finance-10k", "qasper-dev"])
    ap.add_argument("--variants", nargs="+", default=["original", "long-lines",
                                                       "short-sections"])
    ap.add_argument("--cache-dir", default=str(CACHE))
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS),
                    help="which rows to measure (defaults is always measured)")
    ap.add_argument("--scope", default=None, help="per-doc or corpus (default: per-doc for "
                    "qasper-dev, corpus for the 10-Ks)")
    ap.add_argument("--out", default=str(RESULTS / "packing_sensitivity" / "packing-sensitivity"),
                    help="output path without suffix: writes OUT.json and OUT.md")
    args = ap.parse_args()
    embedder = make_embedder("minilm", args.cache_dir)
    for name, (constants, options, min_chars) in SETTINGS.items():
        METHODS[f"pp[{name}]"] = (lambda k, n=name, c=constants, o=options, m=min_chars:
                                  _Setting(f"pp[{n}]", c, o, m))
    target = Path(args.out).with_suffix("")
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "budgets": BUDGETS, "runs": {}}
    previous = target.parent / f"{target.name}.json"
    if previous.is_file():  # runs of other datasets are kept
        out["runs"] = json.loads(previous.read_text())["runs"]
    for ds in args.datasets:
        scope = args.scope or ("per-doc" if ds == "qasper-dev" else "corpus")
        for variant in args.variants:
            path = Path(args.work) / f"{ds}-{variant}"
            if not (path / "questions.jsonl").is_file():
                print(f"{path}: missing; run benchmarks.quality.bench_shapes first",
                      file=sys.stderr)
                continue
            # min_section_chars only changes anything where sections are short.
            names = [n for n in SETTINGS if (n == "defaults" or n in args.settings)
                     and (SETTINGS[n][2] == 0 or variant != "long-lines")]
            res = run_benchmark(load_dataset(path), methods=[f"pp[{n}]" for n in names],
                                scopes=[scope], budgets=BUDGETS, embedder=embedder,
                                memory=False)
            out["runs"][f"{ds}/{variant}/{scope}"] = {
                n: [100 * res["methods"][f"pp[{n}]"]["scopes"][scope]["budgets"][str(b)]
                    ["any_hit"] for b in BUDGETS] for n in names}
    out["environment"] = environment()
    lines = ["# Sensitivity of the packing and chunking constants (any-hit % at 500 / 1000 / "
             "2000 tokens)", "", "Each row moves one constant; `defaults` is the library as "
             "shipped. Written by `benchmarks/quality/bench_packing_sensitivity.py`.", ""]
    for run, rows in out["runs"].items():
        lines += [f"## {run}", "", "| setting | any@500 | any@1000 | any@2000 |",
                  "|---|---|---|---|"]
        base = rows["defaults"]
        for n, vals in rows.items():
            cells = [f"{v:.1f}" + ("" if n == "defaults" else f" ({v - b:+.1f})")
                     for v, b in zip(vals, base, strict=True)]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")
    write_report(target.parent, target.name, out, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
