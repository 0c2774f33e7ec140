"""Document shapes: retrieval on variants of each dev set shaped like manuals and converted files.

Users index manuals and converted PDFs and HTML, not tidy papers. Each dataset is rewritten
into six *shapes* (the questions stay the same) and measured with the common harness (same
packing rule and metrics as ``run_benchmark.py``):

* ``original``: unchanged (a folder of symlinks);
* ``long-lines``: in every section body all prose lines and paragraphs joined into ONE line
  (single spaces); heading lines, fenced code and Markdown table rows kept as they are. In
  finance-10k the HTML ``<table>`` blocks are prose to this rule and are joined too;
* ``no-headings``: every ATX heading line (outside fenced code) removed;
* ``html-tables``: every Markdown table rewritten as one HTML ``<table>`` (one ``<tr>`` per
  row, ``<th>`` for the header row, the delimiter row dropped). Gold passages copied from
  table rows no longer occur in the text; that is accepted and reported (``gold gone``);
* ``short-sections``: before each paragraph of a section's body after the first, a heading
  one level deeper (at most 6) titled ``<section title> (part N)``; gold section paths are
  not changed, so section hits drop by construction (any-hit is the measure);
* ``duplicates``: every document twice (``X.md`` and ``X-copy.md``, identical text).

The variant writers are pure functions (text -> text) over one line scanner that knows ATX
headings, fences (``` / ~~~) and table rows (lines starting with ``|``).

Methods: ``proxy-pointer`` (library defaults, evidence packing) and
``proxy-pointer-sections`` (whole-section packing); scopes per-doc and corpus; budgets 500,
1000 and 2000 MiniLM word pieces; the bundled MiniLM behind the shared embedding cache in
``benchmarks/.work/cache`` (always this repository's, whatever code is measured).

``--code DIR`` measures another checkout's library (e.g. a ``git worktree`` of the commit
before a change): the measuring runs in a child process (``python -P -m
benchmarks.quality.bench_shapes``, same arguments) whose ``PYTHONPATH`` holds a folder with only a
``proxy_pointer`` link to ``DIR/proxy_pointer``, then this repository; so the library is
DIR's and the harness (``benchmarks``) is always this repository's, even though DIR holds a
``benchmarks`` folder of its own. Results are stored per (label, dataset, variant)
in ``benchmarks/.work/shapes/results/<label>-<dataset>-<variant>.json`` as soon as each is
done and reused unless ``--force``; ``--report`` reads them all and writes
``benchmarks/results/shapes/shapes.{json,md}`` (labels ``before`` and ``after``)::

    git worktree add /work/baseline <commit-before>
    HF_HUB_OFFLINE=1 python -m benchmarks.quality.bench_shapes --code /work/baseline --label before
    HF_HUB_OFFLINE=1 python -m benchmarks.quality.bench_shapes --label after
    python -m benchmarks.quality.bench_shapes --report

Smoke run: ``--embedder hash --limit 5 --label smoke --datasets finance-10k``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .. import common
from ..common import CACHE, DATA, ROOT, git_state, run_child, write_json, write_report
from ..harness.shapes import WORK, gold_coverage, prepare_variant, self_check

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

RESULTS = WORK / "results"  # one stored result per (label, dataset, variant)
OUT_NAME = "shapes"  # the report: <--out-dir>/shapes.{json,md}
#: Set in the child process that measures another checkout (its directory).
CODE_ENV = "BENCH_SHAPES_CODE"

DATASETS = ("finance-10k", "qasper-dev")
# Cheapest first: original, duplicates and html-tables are mostly embedding-cache hits.
VARIANTS = ("original", "duplicates", "html-tables", "long-lines", "no-headings",
            "short-sections")
METHODS = ("proxy-pointer", "proxy-pointer-sections")
SCOPES = ("per-doc", "corpus")
BUDGETS = (500, 1000, 2000)
MINILM = "sentence-transformers:all-MiniLM-L6-v2"  # the model_id the report accepts


# --------------------------------------------------------------------------- measuring

def library_checkout() -> Path | None:
    """The checkout whose ``proxy_pointer`` an import here would load (found, not imported)."""
    spec = importlib.util.find_spec("proxy_pointer")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent.parent


def measure_in_child(code: Path, argv: list[str]) -> int:
    """Run this script with ``argv`` in a child process that imports ``proxy_pointer`` from
    ``code`` and everything else (the ``benchmarks`` package) from this repository.

    The child's ``PYTHONPATH`` is a temporary folder holding only a ``proxy_pointer`` link
    to ``code/proxy_pointer``, then this repository; ``-P`` keeps the working directory off
    the path. Its spawned workers inherit the same. Returns the child's exit status.
    """
    with tempfile.TemporaryDirectory(prefix="bench-shapes-code-") as shim:
        (Path(shim) / "proxy_pointer").symlink_to(code / "proxy_pointer",
                                                  target_is_directory=True)
        path = [shim, str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), CODE_ENV: str(code)}
        cmd = [sys.executable, "-P", "-m", "benchmarks.quality.bench_shapes", *argv]
        return run_child(cmd, env=env, capture=False, check=False).returncode


def load_harness(code: Path) -> dict[str, Any]:
    """Import ``proxy_pointer`` (checking that it is ``code``'s), then the harness."""
    import proxy_pointer

    where = Path(proxy_pointer.__file__).resolve()
    if code not in where.parents:
        raise SystemExit(f"proxy_pointer imported from {where}, not from {code}")
    from ..common import make_embedder
    from ..harness.dataset import load_dataset
    from ..harness.methods import proxy as proxy_adapter
    from ..harness.methods import windows as windows_adapter
    from ..harness.runner import run_benchmark

    return {"load_dataset": load_dataset, "run_benchmark": run_benchmark,
            "make_embedder": make_embedder, "proxy_adapter": proxy_adapter,
            "windows_adapter": windows_adapter, "proxy_pointer": where.parent}


def _summary(raw: dict, method: str) -> dict:
    entry = raw["methods"][method]
    out: dict[str, Any] = {"status": entry.get("status"), "reason": entry.get("reason")}
    if entry.get("status") != "ok":
        return out
    build = entry["build"]
    out.update(chunks=build["units"], build_seconds=build["seconds"],
               embed_texts=build["embed_texts"], embed_computed=build["embed_computed"],
               index_bytes=build["index_bytes"], scopes={})
    for scope, res in entry["scopes"].items():
        if res.get("status") != "ok":
            out["scopes"][scope] = {"status": res.get("status"), "reason": res.get("reason")}
            continue
        out["scopes"][scope] = {
            "latency_ms": res["latency_ms"],
            "budgets": {b: {key: agg.get(key) for key in (
                "questions", "any_hit", "any_hit_n", "full_hit", "mrr", "section_hit",
                "section_hit_n", "section_exact", "tokens_mean", "cut_share")}
                for b, agg in res["budgets"].items()}}
    return out


def _log(msg: str) -> None:
    print(f"[shapes {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def measure(args: argparse.Namespace, argv: list[str]) -> int:
    code = Path(args.code).resolve()
    if not (code / "proxy_pointer" / "__init__.py").is_file():
        raise SystemExit(f"{code}: no proxy_pointer package there")
    if library_checkout() != code:
        if os.environ.get(CODE_ENV):
            raise SystemExit(f"proxy_pointer would not be imported from {code}")
        return measure_in_child(code, argv)
    h = load_harness(code)
    git = git_state(code)
    _log(f"label {args.label}: measuring {h['proxy_pointer']} (commit "
         f"{(git['commit'] or '?')[:12]}{', dirty' if git['dirty'] else ''})")
    embedder = h["make_embedder"](args.embedder, str(CACHE))
    data = Path(args.data)
    failures = 0
    for dataset in args.datasets:
        for variant in args.variants:
            path = RESULTS / f"{args.label}-{dataset}-{variant}.json"
            record: dict[str, Any] | None = None
            if path.is_file() and not args.force:
                record = json.loads(path.read_text(encoding="utf-8"))
                if (record.get("embedder") != embedder.model_id
                        or record.get("limit") != args.limit):
                    _log(f"{path.name}: stored with another embedder/limit; measuring again")
                    record = None
            done = {m for m, s in (record or {}).get("methods", {}).items()
                    if s.get("status") == "ok"}
            todo = [m for m in args.methods if m not in done]
            if not todo:
                _log(f"{dataset}/{variant}: stored in {path.name}, reused")
                continue
            folder, stats = prepare_variant(data, dataset, variant)
            ds = h["load_dataset"](folder, limit=args.limit)
            coverage = gold_coverage(ds.docs, ds.questions)
            _log(f"{dataset}/{variant}: {len(ds.docs)} documents ({stats['rewritten']} "
                 f"rewritten), {len(ds.questions)} questions, gold wholly gone for "
                 f"{coverage['all_gold_missing']}/{coverage['evidence_questions']}; "
                 f"running {', '.join(todo)}")
            t0 = time.perf_counter()
            try:
                raw = h["run_benchmark"](ds, methods=todo, scopes=list(args.scopes),
                                         budgets=list(BUDGETS), embedder=embedder,
                                         memory=False)
            except Exception as exc:  # keep the other variants going
                failures += 1
                _log(f"{dataset}/{variant}: FAILED - {type(exc).__name__}: {exc}")
                continue
            finally:
                # Indexes are shared by id(dataset): drop them before the next dataset object
                # can reuse that id (and free their memory).
                h["proxy_adapter"].restore_cache({})
                h["windows_adapter"].restore_cache({})
            seconds = time.perf_counter() - t0
            if record is None:
                record = {"label": args.label, "dataset": dataset, "variant": variant,
                          "embedder": embedder.model_id, "limit": args.limit,
                          "documents": len(ds.docs), "questions": len(ds.questions),
                          "variant_stats": stats, "gold": coverage, "methods": {},
                          "runs": []}
            record["methods"].update({m: _summary(raw, m) for m in todo})
            record["runs"].append({
                "date": time.strftime("%Y-%m-%d"),
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "methods": todo,
                "code": git, "seconds": seconds, "harness_seconds": raw["seconds"],
                "query_embedding": raw["query_embedding"], "environment": raw["environment"],
                "config": raw["config"], "harness_methods": raw["methods"]})
            write_json(path, record)
            bad = [m for m in todo if record["methods"][m].get("status") != "ok"]
            failures += bool(bad)
            _log(f"{dataset}/{variant}: done in {seconds:.0f}s -> {path}"
                 + (f" (NOT ok: {', '.join(bad)})" if bad else ""))
            _log(f"{dataset}/{variant}: " + _brief(record))
    return 1 if failures else 0


def _brief(record: dict) -> str:
    parts = []
    for m, s in record["methods"].items():
        for scope, res in s.get("scopes", {}).items():
            if "budgets" in res:
                vals = "/".join(_pct(res["budgets"][str(b)]["any_hit"]) for b in BUDGETS)
                parts.append(f"{m} {scope} any {vals}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- report

SERIES = (("before: evidence (default)", "before", "proxy-pointer"),
          ("before: whole sections", "before", "proxy-pointer-sections"),
          ("after: default", "after", "proxy-pointer"),
          ("after: whole sections", "after", "proxy-pointer-sections"))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _metric(records: dict, label: str, dataset: str, variant: str, method: str, scope: str,
            budget: int, key: str = "any_hit") -> float | None:
    rec = records.get((label, dataset, variant))
    try:
        return rec["methods"][method]["scopes"][scope]["budgets"][str(budget)][key]
    except (KeyError, TypeError):
        return None


def _stored() -> tuple[dict[tuple[str, str, str], dict], list[str]]:
    """Stored full MiniLM results by ``(label, dataset, variant)``; the others, named."""
    records: dict[tuple[str, str, str], dict] = {}
    skipped = []
    for path in sorted(RESULTS.glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        if rec.get("limit") is not None or rec.get("embedder") != MINILM:
            skipped.append(f"{path.name} (embedder {rec.get('embedder')}, limit "
                           f"{rec.get('limit')})")
            continue
        records[(rec["label"], rec["dataset"], rec["variant"])] = rec
    return records, skipped


def _report_summary(records: dict[tuple[str, str, str], dict], skipped: list[str]
                    ) -> dict[str, Any]:
    codes: dict[str, list[dict]] = {}
    for (label, _, _), rec in sorted(records.items()):
        for run in rec["runs"]:
            c = run["code"]
            if c not in codes.setdefault(label, []):
                codes[label].append(c)
    summary: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "script": "benchmarks/quality/bench_shapes.py",
        "methods": list(METHODS), "scopes": list(SCOPES), "budgets": list(BUDGETS),
        "code": codes, "skipped_results": skipped, "results": {}}
    for (label, dataset, variant), rec in sorted(records.items()):
        summary["results"].setdefault(label, {}).setdefault(dataset, {})[variant] = {
            "documents": rec["documents"], "questions": rec["questions"],
            "variant_stats": rec["variant_stats"], "gold": rec["gold"],
            "embedder": rec["embedder"],
            "runs": [{"date": r["date"], "commit": r["code"]["commit"],
                      "dirty": r["code"]["dirty"], "code_dir": r["code"]["dir"],
                      "methods": r["methods"], "seconds": round(r["seconds"], 1)}
                     for r in rec["runs"]],
            "methods": {m: {
                "chunks": s.get("chunks"), "build_seconds": s.get("build_seconds"),
                "embed_computed": s.get("embed_computed"), "status": s.get("status"),
                "scopes": {scope: {b: {k: v[k] for k in ("any_hit", "any_hit_n", "section_hit",
                                                         "section_hit_n", "full_hit", "mrr")}
                                   for b, v in res.get("budgets", {}).items()}
                           for scope, res in s.get("scopes", {}).items()}}
                for m, s in rec["methods"].items()}}
    return summary


def _intro(summary: dict[str, Any]) -> list[str]:
    md = ["# Document shapes: retrieval on manual-like and converted variants (issue 21)", "",
          "Produced by `benchmarks/quality/bench_shapes.py` "
          f"({summary['date']}). Each dev set is rewritten into document *shapes* "
          "(see the script's docstring) with the questions unchanged, and measured with "
          "the common harness (packing rule and metrics of `run_benchmark.py`, MiniLM). "
          "Cells are **any-hit %** (the context contains a gold passage); section hits "
          "are in `shapes.json` only. `before`/`after` are the library code before and "
          "after the change; *after minus best of before* compares `after: default` with "
          "the better of the two `before` packings, in points.", ""]
    for label, cs in summary["code"].items():
        md.append(f"- `{label}`: " + "; ".join(
            f"commit `{(c['commit'] or '?')[:12]}`{' (dirty)' if c['dirty'] else ''}"
            for c in cs))
    return [
        *md, "", "Shapes: `original`; `duplicates` (every document twice); `html-tables` "
        "(Markdown tables as HTML `<table>`); `long-lines` (each section's prose as one "
        "line); `no-headings` (ATX heading lines removed); `short-sections` (a "
        "`<title> (part N)` sub-heading before every paragraph after the first).", "",
        "Notes:", "",
        "- *gold gone* counts evidence questions none of whose gold passages occurs in "
        "the rewritten text any more: they cannot be hit in that shape. In `html-tables` "
        "gold copied from Markdown table rows no longer matches the HTML text; this is "
        "accepted and reported as measured.",
        "- finance-10k's tables are already HTML (LlamaParse), and only one qasper-dev "
        "paper has Markdown tables, so `html-tables` changes little text; in `long-lines` "
        "the 10-Ks' HTML table lines are prose to the rule and are joined too.",
        "- `short-sections` leaves the gold section paths as they were, so section hits "
        "drop by construction; `no-headings` has no paths at all.",
        "- finance-10k any-hit counts only its FinanceBench questions (those with "
        "evidence; the others have only section paths): one question is "
        "several points.", ""]


def _shape_rows(records: dict[tuple[str, str, str], dict], dataset: str, scope: str,
                variants: list[str], present: list[tuple[str, str, str]]
                ) -> tuple[list[tuple[str, str, list[str]]], dict[tuple[str, int], float]]:
    """One table's rows (shape, gold gone, cells) and its after-minus-best-before points."""
    rows, deltas = [], {}
    for variant in variants:
        cells = [_pct(_metric(records, label, dataset, variant, m, scope, b))
                 for _, label, m in present for b in BUDGETS]
        for b in BUDGETS:
            after = _metric(records, "after", dataset, variant, "proxy-pointer", scope, b)
            before = [v for m in METHODS if (v := _metric(
                records, "before", dataset, variant, m, scope, b)) is not None]
            if after is not None and before:
                deltas[(variant, b)] = 100 * (after - max(before))
        gold = next((r["gold"] for k, r in records.items()
                     if k[1] == dataset and k[2] == variant), None)
        gone = f"{gold['all_gold_missing']}/{gold['evidence_questions']}" if gold else "n/a"
        rows.append((variant, gone, cells))
    return rows, deltas


def _shape_tables(records: dict[tuple[str, str, str], dict], datasets: list[str],
                  variants: list[str], present: list[tuple[str, str, str]]
                  ) -> tuple[list[str], tuple[float, str] | None]:
    """A table per dataset and scope, and the largest shortfall of ``after``."""
    worst: tuple[float, str] | None = None
    tables: list[str] = []
    for dataset in datasets:
        for scope in SCOPES:
            rows, deltas = _shape_rows(records, dataset, scope, variants, present)
            low = min(deltas.items(), key=lambda kv: kv[1]) if deltas else None
            if low and low[1] < 0 and (worst is None or low[1] < worst[0]):
                worst = (low[1], f"{dataset} {scope}, {low[0][0]} @{low[0][1]}")
            head = ["shape", "gold gone"] + [f"{name} @{b}" for name, _, _ in present
                                             for b in BUDGETS]
            head += [f"after minus best of before @{b}" for b in BUDGETS]
            tables += [f"## {dataset}, {scope}", "", "| " + " | ".join(head) + " |",
                       "|" + "---|" * len(head)]
            for variant, gone, cells in rows:
                ds = []
                for b in BUDGETS:
                    d = deltas.get((variant, b))
                    text = "n/a" if d is None else f"{d:+.1f}"
                    if low and d is not None and (variant, b) == low[0] and d < 0:
                        text = f"**{text}** (max shortfall)"
                    ds.append(text)
                tables.append(f"| {variant} | {gone} | " + " | ".join(cells + ds) + " |")
            tables.append("")
    return tables, worst


def report(args: argparse.Namespace) -> int:
    records, skipped = _stored()
    if not records:
        print(f"no stored full MiniLM results under {RESULTS}", file=sys.stderr)
        return 2
    datasets = [d for d in DATASETS if any(k[1] == d for k in records)]
    datasets += sorted({k[1] for k in records} - set(datasets))
    variants = [v for v in VARIANTS if any(k[2] == v for k in records)]
    summary = _report_summary(records, skipped)
    md = _intro(summary)
    present = [(name, label, m) for name, label, m in SERIES
               if any(k[0] == label and m in r["methods"] for k, r in records.items())]
    tables, worst = _shape_tables(records, datasets, variants, present)
    if worst:
        md += [f"Largest shortfall of `after` against the best `before` packing: "
               f"**{worst[0]:+.1f} points** ({worst[1]}).", ""]
    elif any(k[0] == "after" for k in records):
        md += ["`after` is at least as good as the best `before` packing everywhere.", ""]
    else:
        md += ["No `after` results stored yet: the difference columns are n/a.", ""]
    md += tables
    paths = write_report(args.out_dir, OUT_NAME, summary, md)
    print("\n".join(md))
    print(f"wrote {paths['json']} and {paths['md']}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- command line

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code", default=str(ROOT),
                   help="checkout whose proxy_pointer is measured (default: this repository)")
    p.add_argument("--label", default="after", help="name the results are stored under")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--data", default=str(DATA), help="folder holding the datasets")
    p.add_argument("--embedder", default="minilm",
                   help="minilm (default); hash for smoke runs (not reported)")
    p.add_argument("--limit", type=int, default=None,
                   help="first N questions and their documents only (smoke runs; not reported)")
    p.add_argument("--force", action="store_true", help="measure again even when stored")
    p.add_argument("--scopes", nargs="+", default=list(SCOPES), choices=SCOPES,
                   help="search scopes to measure (default: both)")
    p.add_argument("--report", action="store_true",
                   help="only write benchmarks/results/shapes/shapes.{json,md} from stored results")
    p.add_argument("--out-dir", type=Path, default=common.RESULTS / "shapes",
                   help="where --report writes shapes.{json,md} (default: benchmarks/results)")
    args = p.parse_args(argv)
    if not args.report:
        for d in args.datasets:
            if not (Path(args.data) / d / "docs").is_dir():
                p.error(f"{Path(args.data) / d}: not a dataset folder")
        if not re.fullmatch(r"[A-Za-z0-9._]+", args.label):
            p.error("--label: letters, digits, '.' and '_' only")
    return args


def main(argv: list[str] | None = None) -> int:
    self_check()
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    return report(args) if args.report else measure(args, argv)


if __name__ == "__main__":
    sys.exit(main())
