"""Coverage-guided fuzzing of the input-facing parts, for a fixed time per target.

    python -m benchmarks.robustness.fuzz [--seconds 120] [--targets tree,chunking,...]
    python -m benchmarks.robustness.fuzz --seconds 5 --out-dir /tmp/fuzz   # CI smoke run
    python -m benchmarks.robustness.fuzz --minimize index FILE   # shrink one crashing input

Targets (:mod:`benchmarks.harness.fuzz_targets` says what each checks and how its input is
laid out):
``tree`` (``build_tree`` on any text, with the tree's invariants), ``chunking`` (blocks and
chunks of a built tree, with the chunk invariants, sized by the tests' word tokenizer),
``pdf``/``html``/``docx`` (a converter's ``convert(data, name)``: only ``ConversionError``),
``refs`` (``Ref.parse`` and its round trip) and ``index`` (a saved index with one file
damaged, opened and searched once: only ``ProxyPointerError``).

Each target runs in its own process under atheris (libFuzzer) for ``--seconds`` of
``-max_total_time``, the library imported under atheris' instrumentation so it is
coverage-guided, seeded from real inputs: the Markdown of ``data/sample`` and
``tests/fixtures``, PDFs and Word files written here with fpdf2 and python-docx (the tests'
generators), HTML pages, refs, and the files of a small saved index. A *crash* is an exception
the target does not allow, a broken invariant, a hang (libFuzzer's per-input ``-timeout``)
or a native crash. Python-level crashes are recorded and fuzzing goes on: each distinct one
(by exception type and where it was raised) is kept under ``benchmarks/.work/fuzz/<target>/``
with its smallest input so far; a hang or native crash ends the process, which is restarted
for the time left. Found crashes are shrunk with ``--minimize``, fixed and pinned by
``tests/test_fuzz_regressions.py`` (listed in :data:`FIXED`).

Records per target: seconds, CPU seconds of its process, executions, coverage (libFuzzer's
``cov``: instrumented edges), corpus size and the crashes found. Writes
``benchmarks/results/fuzz/fuzz.{json,md}``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common import RESULTS, ROOT, WORK, environment, write_report

FUZZ_WORK = WORK / "fuzz"
DEFAULT_SECONDS = 120


@dataclass(frozen=True)
class TargetInfo:
    """How one target is run: the packages instrumented for coverage, libFuzzer's
    ``-max_len`` (bytes) and ``-timeout`` (seconds one input may take before it is a hang)."""

    include: tuple[str, ...]
    max_len: int
    timeout: int


TARGETS: dict[str, TargetInfo] = {
    "tree": TargetInfo(("proxy_pointer", "markdown_it"), 16_384, 20),
    "chunking": TargetInfo(("proxy_pointer", "markdown_it", "langchain_text_splitters"),
                           16_384, 30),
    "pdf": TargetInfo(("proxy_pointer", "pypdfium2"), 32_768, 20),
    "html": TargetInfo(("proxy_pointer",), 16_384, 20),
    "docx": TargetInfo(("proxy_pointer", "docx"), 65_536, 20),
    "refs": TargetInfo(("proxy_pointer",), 512, 10),
    "index": TargetInfo(("proxy_pointer", "bm25s"), 40_000, 20),
}

#: Crashes earlier runs found, each fixed and pinned by a test in
#: ``tests/test_fuzz_regressions.py``: target -> those tests' names.
FIXED: dict[str, tuple[str, ...]] = {
    "chunking": ("test_a_splitter_piece_of_overlap_alone_is_found_at_its_own_place",
                 # found by the next run in the first fix of the crash above
                 "test_a_splitter_piece_after_its_predecessor_is_not_taken_from_inside_it",
                 "test_a_splitter_piece_starting_where_the_previous_one_starts_is_found",
                 "test_character_sized_table_pieces_fit_the_chunk_size"),
    "pdf": ("test_pdf_text_placed_at_a_coordinate_too_large_for_a_float_still_converts",),
    "html": ("test_html_colspan_of_a_digit_that_is_not_ascii_counts_one_column",),
    "docx": ("test_encrypted_docx_is_a_conversion_error_not_a_runtime_error",),
    "index": ("test_current_that_is_not_utf8_is_corrupt",
              "test_bm25_params_with_an_unknown_key_is_corrupt",
              "test_bm25_array_with_a_damaged_header_is_corrupt",
              "test_vectors_with_a_damaged_header_length_are_corrupt",
              "test_bm25_scores_shorter_than_their_postings_are_corrupt",
              "test_manifest_naming_an_embedder_of_another_dimension_is_refused",
              "test_chunk_rows_naming_a_document_the_segment_lacks_are_corrupt",
              "test_chunk_rows_with_text_for_a_line_number_are_corrupt",
              "test_chunk_rows_with_damaged_titles_are_corrupt",
              "test_a_stored_tree_whose_node_ids_changed_is_corrupt",
              "test_a_schema_sqlite_cannot_parse_or_decode_is_corrupt",
              "test_a_document_its_key_index_lost_is_corrupt",
              "test_chunk_rows_naming_a_node_id_no_tree_spells_are_corrupt",
              "test_a_document_record_with_text_for_its_line_counts_is_corrupt"),
}
#: Crashes of the same kind found by hand next to a fuzzed one, fixed and pinned alike.
BY_HAND: dict[str, tuple[str, ...]] = {
    "index": ("test_current_naming_a_generation_too_long_for_a_file_name_is_corrupt",
              "test_bm25_postings_past_the_last_row_are_corrupt"),
}


# --- seeds -----------------------------------------------------------------------------------
def _markdown_files() -> list[Path]:
    roots = [ROOT / "data" / "sample" / "docs", ROOT / "tests" / "fixtures"]
    return sorted(p for r in roots for p in r.rglob("*")
                  if p.suffix in (".md", ".txt") and p.name != "SOURCE.md")


def _cut(data: bytes, most: int) -> bytes:
    """``data`` cut to at most ``most`` bytes, at a line end where there is one."""
    if len(data) <= most:
        return data
    end = data.rfind(b"\n", 0, most)
    return data[:end + 1] if end > 0 else data[:most]


def _pdf_seeds() -> list[bytes]:
    from fpdf import FPDF

    out = []
    for compress, outline in ((False, False), (True, False), (False, True)):
        pdf = FPDF()
        pdf.set_compression(compress)
        for page, (part, items) in enumerate([("PART I", ["Item 1. Business", "1.1 Scope"]),
                                               ("PART II", ["Item 7. Results"])]):
            pdf.add_page()
            pdf.set_font("helvetica", "B", 16)
            if outline:
                pdf.start_section(part)
            pdf.cell(0, 10, part, new_x="LMARGIN", new_y="NEXT")
            for item in items:
                pdf.set_font("helvetica", "B", 12)
                if outline:
                    pdf.start_section(item, level=1)
                pdf.cell(0, 8, item, new_x="LMARGIN", new_y="NEXT")
                pdf.set_font("helvetica", size=11)
                for k in range(3):
                    pdf.cell(0, 6, f"Sentence {k} of {item.lower()} continues with a hyphen-",
                             new_x="LMARGIN", new_y="NEXT")
            for row in (("Plant", "Area"), ("North", "1,200"), ("South", "$ 80 %")):
                pdf.cell(40, 6, row[0])
                pdf.cell(40, 6, row[1], new_x="LMARGIN", new_y="NEXT")
            pdf.set_y(-15)
            pdf.set_font("helvetica", size=8)
            pdf.cell(0, 6, f"Page {page + 1}", align="C")
        out.append(bytes(pdf.output()))
    return out


_HTML = [
    "<html><head><title>Report</title><style>p{}</style></head><body><h1>Annual Report</h1>"
    "<p>Intro text.</p><h2>Results</h2><p>Revenue grew.</p><h3>Detail</h3><ul><li>one</li>"
    "<li>two</li></ul><table><thead><tr><th>Year</th><th>$</th></tr></thead><tr><td>2022</td>"
    "<td>1,200</td></tr></table></body></html>",
    '<html><head><meta charset="windows-1252"></head><body><div><b>PART I</b></div>'
    "<div><b>Item 1. Business</b></div><p>We make widgets \u201cquoted\u201d.</p>"
    '<div style="page-break-after:always"></div><p>2</p><div style="font-weight:700">'
    "Item 7. Management\u2019s Discussion</div><p>Text.</p>"
    '<div style="display:none"><ix:header>hidden</ix:header></div></body></html>',
    '<?xml version="1.0" encoding="utf-8"?><html><body><h2>Notes</h2><ol><li>a<ol><li>b'
    "</li></ol></li></ol><table><tr><td colspan=2>wide</td></tr><tr><td>x</td><td>%</td></tr>"
    "</table><pre># not a heading</pre></body></html>",
]


def _docx_seeds() -> list[bytes]:
    import docx
    from docx.enum.text import WD_BREAK

    out = []
    for variant in range(2):
        doc = docx.Document()
        if variant:
            doc.add_heading("Report Title", 0)
        doc.add_heading("Introduction", 1)
        doc.add_paragraph("The introduction paragraph says what the report covers.")
        doc.add_heading("Scope", 2)
        doc.add_paragraph("First point", style="List Bullet")
        doc.add_paragraph("Second point", style="List Number")
        run = doc.add_paragraph("Before the break.").add_run()
        run.add_break(WD_BREAK.PAGE)
        p = doc.add_paragraph()
        p.add_run("1.2 Bold numbered line").bold = True
        table = doc.add_table(rows=3, cols=3)
        for r, row in enumerate(table.rows):
            for c, cell in enumerate(row.cells):
                cell.text = f"r{r}c{c}"
        table.cell(0, 0).merge(table.cell(0, 1))
        buf = io.BytesIO()
        doc.save(buf)
        out.append(buf.getvalue())
    return out


_REFS = ["doc.md#0003", "notes/a.md#L12-30", "a#b.md#p3", "x.md#preamble", "  d.pdf#L1  ",
         "d.pdf#p3-5", "d#L0", "doc#", "#0001", "d#L12-12", "d#p-3", "d#Lx", "a/b c.md#0010"]


def write_seeds(target: str, seed_dir: Path) -> int:
    """Write ``target``'s seed inputs into ``seed_dir`` (the index's: see the child)."""
    info = TARGETS[target]
    seeds: list[bytes] = []
    if target in ("tree", "chunking"):
        for k, path in enumerate(_markdown_files()):
            body = _cut(path.read_bytes(), info.max_len - 1)
            flags = [0, 1] if target == "tree" else [k % 16]
            seeds.extend(bytes([f]) + body for f in flags)
    elif target == "pdf":
        seeds = _pdf_seeds()
    elif target == "html":
        seeds = [h.encode("cp1252" if "windows-1252" in h else "utf-8") for h in _HTML]
    elif target == "docx":
        seeds = _docx_seeds()
    elif target == "refs":
        seeds = [r.encode() for r in _REFS]
    for seed in seeds:
        (seed_dir / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
    return len(seeds)


def _index_seeds(base: Path, seed_dir: Path) -> None:
    """Per file of the saved index ``base``: its content to mutate whole, some bit flips and
    a cut."""
    from ..harness.fuzz_targets import index_files

    for k, rel in enumerate(index_files(base)):
        content = (base / rel).read_bytes()
        for seed in (bytes([k, 0]) + content, bytes([k, 1, 7, 0, 0x40]),
                     bytes([k, 2]) + (len(content) // 2).to_bytes(2, "little")):
            (seed_dir / hashlib.sha1(seed).hexdigest()).write_bytes(seed)


# --- the child: one target under atheris -----------------------------------------------------
def signature(exc: BaseException) -> str:
    """What tells crashes apart: the exception type and where in the library (or, for a
    broken invariant, which one) it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    lib = [f for f in frames if f"{os.sep}proxy_pointer{os.sep}" in f.filename]
    where = lib[-1] if lib else (frames[-1] if frames else None)
    place = f"{Path(where.filename).name}:{where.lineno}" if where else "?"
    if type(exc).__name__ == "Invariant":
        return f"Invariant({exc}) at {place}"
    return f"{type(exc).__name__} at {place}"


class Recorder:
    """Runs a target on each input and records the crashes it raises (fuzzing goes on): per
    signature, the smallest input so far under ``artifacts/`` and a line in ``crashes.json``."""

    def __init__(self, run: Callable[[bytes], None], artifacts: Path) -> None:
        self.run = run
        self.artifacts = artifacts
        self.log = artifacts / "crashes.json"
        self.crashes: dict[str, dict[str, Any]] = (
            json.loads(self.log.read_text()) if self.log.exists() else {})

    def __call__(self, data: bytes) -> None:
        try:
            self.run(data)
        except Exception as exc:  # every undocumented exception is a crash
            self.record(data, exc)

    def record(self, data: bytes, exc: Exception) -> None:
        sig = signature(exc)
        seen = self.crashes.get(sig)
        if seen is not None:
            seen["hits"] += 1
            if len(data) >= seen["size"]:
                return
        name = "crash-" + hashlib.sha1(sig.encode()).hexdigest()[:12]
        (self.artifacts / name).write_bytes(data)
        tb = "".join(traceback.format_exception(exc, limit=-6))
        self.crashes[sig] = {"signature": sig, "file": name, "size": len(data),
                             "hits": seen["hits"] if seen else 1,
                             "message": f"{type(exc).__name__}: {str(exc)[:300]}",
                             "traceback": tb[-3000:]}
        if seen is None:
            print(f"NEW CRASH {sig}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        self.log.write_text(json.dumps(self.crashes, indent=1))


def child(target: str, seconds: int, folder: Path) -> None:
    """Fuzz ``target`` in this process for ``seconds`` (libFuzzer's ``-max_total_time``)."""
    import atheris  # type: ignore[import-untyped]

    info = TARGETS[target]
    with atheris.instrument_imports(include=list(info.include)):
        from ..harness import fuzz_targets

        if target == "index":
            _index_seeds(fuzz_targets.setup_index(folder), folder / "seeds")
        recorder = Recorder(fuzz_targets.TARGETS[target], folder / "artifacts")
        # The library imports some modules on first use (a converter, bm25s): one pass over
        # the seeds here imports them under the instrumentation too.
        for seed in sorted((folder / "seeds").iterdir()):
            recorder(seed.read_bytes())
    args = [sys.argv[0], str(folder / "corpus"), str(folder / "seeds"),
            f"-max_total_time={seconds}", f"-timeout={info.timeout}",
            f"-max_len={info.max_len}", "-rss_limit_mb=3072", "-print_final_stats=1",
            f"-artifact_prefix={folder / 'artifacts'}{os.sep}", "-seed=1"]
    atheris.Setup(args, recorder)
    atheris.Fuzz()


# --- the parent: runs, parses, reports -------------------------------------------------------
_STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.M)
_COV = re.compile(r"^#\d+\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)", re.M)
_NATIVE = ("crash-", "timeout-", "oom-", "leak-", "slow-unit-")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fuzz_target(target: str, seconds: int) -> dict[str, Any]:
    """Run ``target`` for ``seconds``, restarting after a hang or native crash for the time
    left; the target's row of the results."""
    folder = FUZZ_WORK / target
    for sub in ("corpus", "seeds", "artifacts"):
        shutil.rmtree(folder / sub, ignore_errors=True)
        (folder / sub).mkdir(parents=True)
    n_seeds = write_seeds(target, folder / "seeds")
    log = folder / "fuzz.log"
    log.write_text("")
    t0, cpu0 = time.monotonic(), _cpu()
    execs, cov, ft, corp, runs = 0, 0, 0, 0, 0
    natives: list[dict[str, Any]] = []
    left = seconds
    while left >= 1 and runs < 6:
        runs += 1
        with open(log, "a") as out:
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.robustness.fuzz",
                                     "--child", target,
                                     "--seconds", str(left)], cwd=ROOT, stdout=out,
                                    stderr=subprocess.STDOUT)
            try:
                proc.wait(timeout=left + 180)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                natives.append({"signature": "hang: the fuzzing process stopped responding",
                                "file": None})
        text = log.read_text(errors="replace")
        run_text = text.rsplit("INFO: Running with entropic power schedule", 1)[-1]
        stats = dict(_STAT.findall(run_text))
        execs += int(stats.get("number_of_executed_units", 0))
        found = _COV.findall(run_text)
        if found:
            last = [int(x) for x in found[-1]]
            cov, ft, corp = max(cov, last[0]), max(ft, last[1]), max(corp, last[2])
        left = seconds - int(time.monotonic() - t0)
        if proc.returncode == 0:
            break
    known = {n["file"] for n in natives}
    for p in sorted((folder / "artifacts").iterdir()):
        if p.name.startswith(_NATIVE) and not re.fullmatch(r"crash-[0-9a-f]{12}", p.name) \
                and p.name not in known:
            kind = p.name.split("-")[0]
            natives.append({"signature": f"{kind}: libFuzzer stopped the process",
                            "file": p.name, "size": p.stat().st_size})
    log_path = folder / "artifacts" / "crashes.json"
    crashes = list(json.loads(log_path.read_text()).values()) if log_path.exists() else []
    crashes += natives
    row = {"target": target, "seconds": seconds, "wall_s": round(time.monotonic() - t0, 1),
           "cpu_s": round(_cpu() - cpu0, 1), "execs": execs, "coverage": cov, "features": ft,
           "corpus": corp, "seeds": n_seeds, "processes": runs,
           "crashes_found": len(crashes), "crashes": crashes,
           "crashes_fixed": list(FIXED.get(target, ()))}
    print(f"{target}: {row['execs']} execs, cov {cov}, {len(crashes)} crashes "
          f"({row['wall_s']} s, {row['cpu_s']} CPU s)", flush=True)
    for c in crashes:
        print(f"  {c['signature']}  [{c.get('file')}]", flush=True)
    return row


def report(rows: list[dict[str, Any]], seconds: int) -> list[str]:
    """The Markdown summary."""
    md = ["# Fuzzing the input-facing parts",
          "",
          f"`python -m benchmarks.robustness.fuzz --seconds {seconds}`: atheris (libFuzzer), "
          "one process per "
          "target, the library coverage-instrumented; CPU s is the target process's user + "
          "system time, coverage libFuzzer's `cov` (instrumented edges). *Crashes found* are "
          "this run's; *crashes fixed* are the ones earlier runs found, fixed and pinned in "
          "`tests/test_fuzz_regressions.py`.",
          "",
          "| target | seconds | CPU s | execs | coverage | crashes found | crashes fixed |",
          "|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['target']} | {r['seconds']} | {r['cpu_s']} | {r['execs']} | "
                  f"{r['coverage']} | {r['crashes_found']} | {len(r['crashes_fixed'])} |")
    found = [(r["target"], c) for r in rows for c in r["crashes"]]
    if found:
        md += ["", "Crashes found in this run:", ""]
        md += [f"- {t}: `{c['signature']}`" for t, c in found]
    fixed = [(t, n) for t, names in FIXED.items() for n in names]
    if fixed:
        md += ["", "Found by earlier runs and fixed, with their regression tests:", ""]
        md += [f"- {t}: `{n}`" for t, n in fixed]
    hand = [(t, n) for t, names in BY_HAND.items() for n in names]
    if hand:
        md += ["", "Found by hand next to a fuzzed crash (not counted above), fixed alike:", ""]
        md += [f"- {t}: `{n}`" for t, n in hand]
    return md


def minimize(target: str, path: Path) -> bytes:
    """The smallest input (removing chunks, then single bytes) that crashes ``target`` with
    the same signature as ``path``'s content; run without instrumentation."""
    from ..harness import fuzz_targets

    if target == "index":
        fuzz_targets.setup_index(FUZZ_WORK / target)
    run = fuzz_targets.TARGETS[target]

    def sig(data: bytes) -> str | None:
        try:
            run(data)
        except Exception as exc:
            return signature(exc)
        return None

    data = path.read_bytes()
    want = sig(data)
    if want is None:
        raise SystemExit(f"{path}: does not crash {target}")
    keep = 2 if target == "index" else 0  # the index target's file and mode bytes
    step = max(1, (len(data) - keep) // 2)
    while step >= 1:
        k, changed = keep, False
        while k < len(data):
            trial = data[:k] + data[k + step:]
            if sig(trial) == want:
                data, changed = trial, True
            else:
                k += step
        if not changed:
            step //= 2
    print(f"{want}\n{len(data)} bytes: {data!r}")
    return data


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=DEFAULT_SECONDS,
                    help=f"fuzzing time per target (default {DEFAULT_SECONDS})")
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help=f"comma-separated targets (default all: {','.join(TARGETS)})")
    ap.add_argument("--out-dir", type=Path, default=RESULTS / "fuzz",
                    help="where fuzz.json and fuzz.md go (a smoke run: a scratch folder)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--minimize", nargs=2, metavar=("TARGET", "FILE"),
                    help="shrink one crashing input and print it")
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.seconds, FUZZ_WORK / args.child)
        return
    if args.minimize:
        minimize(args.minimize[0], Path(args.minimize[1]))
        return
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        ap.error(f"unknown targets {unknown}; known: {', '.join(TARGETS)}")
    rows = [fuzz_target(t, args.seconds) for t in targets]
    data = {"seconds_per_target": args.seconds, "targets": rows,
            "environment": environment("atheris", "pypdfium2", "lxml", "python-docx",
                                       "markdown-it-py")}
    paths = write_report(args.out_dir, "fuzz", data, report(rows, args.seconds))
    print(f"wrote {paths['json']} and {paths['md']}")


if __name__ == "__main__":
    main()
