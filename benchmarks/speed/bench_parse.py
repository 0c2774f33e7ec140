"""Speed of parsing (tree, line token counts, chunks) against another checkout, and proof
that the output is the same.

Usage::

    python -m benchmarks.speed.bench_parse --compare-with /tmp/parse-base [--repeats 3]
    python -m benchmarks.speed.bench_parse --compare-with /tmp/parse-base --identity-only

``--compare-with PATH`` is another checkout of the repository (``git worktree add PATH
HEAD``: the code before a change). Every run is a child process that imports
``proxy_pointer`` from one checkout (``PYTHONPATH``), so both are timed in one run,
alternately, on the same machine load.

* **Identity.** Each checkout parses every ``.md`` of ``qasper-dev`` and ``finance-10k``
  (``../shared/data``), the test fixtures, ``data/sample`` and generated "shape" documents
  (long one-line paragraphs, tiny sections, tables, no headings, setext headings, fences
  with ``#`` lines, HTML blocks, front matter, CRLF, tabs, Unicode) with
  ``parse_document`` and the default ``ChunkConfig`` fitted to the bundled MiniLM, as an
  index does; the digest of everything it returns (record, every chunk field, tree JSON,
  line token counts, sections skipped, warnings) must be equal document by document.
* **Speed.** Seconds and MB/s of ``parse_document`` over each corpus in one process (best
  of ``--repeats``), and a per-stage profile (cProfile, cumulative seconds: headings,
  tree, token counting, blocks, chunking, noise, tree JSON).

Writes ``benchmarks/results/parse/parse.json`` and ``parse.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
CORPORA = ("qasper-dev", "finance-10k")
# cProfile names (file suffix, function) of the stages reported, cumulative seconds.
STAGES = {
    "headings (markdown-it)": ("headings.py", "find_headings"),
    "tree (build_tree)": ("tree.py", "build_tree"),
    # before: count_tokens_batch(lines); after: DocumentTokens(lines), tokens.py's __init__s
    "line token counts": ("tokens.py", "count_tokens_batch|__init__"),
    "span token counts": ("tokens.py", "span_counters"),
    "blocks (split_bodies)": ("blocks.py", "split_bodies"),
    "chunking (chunk_tree)": ("chunking.py", "chunk_tree"),
    "breadcrumbs": ("chunking.py", "breadcrumb_text"),
    "noise rules": ("noise.py", "classify_noise"),
    "tree JSON": ("tree.py", "to_json"),
    "tokenizer (encode, all)": ("~", "encode|encode_batch"),
}


# --------------------------------------------------------------------------- documents
def shape_documents() -> list[tuple[str, str]]:
    """Small documents of the shapes that stress the parser, deterministic."""
    word = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod".split()
    para = " ".join(word[i % len(word)] for i in range(400)) + "."
    long_line = " ".join(f"{word[i % len(word)]}{i}" for i in range(30_000)) + "\n"
    table = "| a | b |\n|---|---|\n" + "".join(f"| {i} | {para[:60]} |\n" for i in range(300))
    html_table = ("<table><thead><tr><th>k</th><th>v</th></tr></thead>\n"
                  + "".join(f"<tr><td>{i}</td><td>{para[:80]}</td></tr>\n" for i in range(200))
                  + "</table>\n")
    docs = {
        "long-one-line.md": "# Long\n" + long_line + "## After\nshort text\n",
        "no-space-run.md": "# Run\n" + "x" * 45_000 + "\n\n" + para + "\n",
        "tiny-sections.md": "".join(f"{'#' * (1 + i % 4)} S{i}\nx{i}\n" for i in range(500)),
        "tables.md": "# T\n" + table + "\n## H\n" + html_table + para + "\n",
        "no-headings.md": "\n\n".join(para + f" p{i}" for i in range(60)),
        "setext.md": "Title\n=====\n\n" + para + "\n\nSub\n---\n" + para + "\n\nNot *a* head\n",
        "fences.md": ("# Code\n```\n# not a heading\n## nor this\n```\n" + para
                      + "\n~~~~python\n# x\n~~~~\n## Real\ntext\n```\nunclosed\n# inside\n"),
        "html-blocks.md": ("<div>\n# inside html\n</div>\n\n# Out\n" + para
                           + "\n<!--\n# comment\n-->\n## Two\nt\n"),
        "front-matter.md": "---\ntitle: 'Front Title'\nx: 1\n---\n# H1\n" + para + "\n",
        "rule-start.md": "---\n\n# A\ntext\n---\n# B\ntext\n",
        "crlf.md": ("# CR\r\n" + para + "\r\n\r\n## Two\r\nline\r\nmore\r\n"
                    + "Old\rmac\r# Three\r" + para),
        "tabs.md": "#\tTab title\n\tindented code # x\n\n# Real\n\tcol\tcol\n  # spaced\n",
        "unicode.md": ("# Überblick — ñandú\n"
                       + "ĉu vi parolas? 中文的文本。日本語のテキスト。" * 200
                       + "\n## Ελληνικά ΣΊΣΥΦΟΣ\nc\u0301afe\u0301 \u200bzero\u200b width\ufeff\n"
                       + "\n## Emoji 😀\n" + "😀👍🏽 " * 500 + "\n\x00ctl\x7f\n"),
        "bom.md": "\ufeff# Bom\ntext\n",
        "lists-quotes.md": ("# L\n- item\n  # in list\n> # in quote\n>\n> text\n\n"
                            "1. one\n2. two\n# After\n" + para),
        "empty.md": "",
        "blank.md": "\n\n   \n",
        "closing-hashes.md": "# Title ##\n## Sub #\n### #\ntext\n",
        "deep.md": "".join(f"{'#' * (1 + i % 6)} D{i}\n" + para[: (i * 37) % 400] + "\n"
                           for i in range(120)),
    }
    return sorted(docs.items())


def corpus_documents(name: str) -> list[tuple[str, str]]:
    """``(doc id, text)`` of a corpus: a data set's docs, ``fixtures``, or ``shapes``."""
    if name == "shapes":
        return shape_documents()
    if name == "fixtures":
        paths = sorted([*(ROOT / "tests" / "fixtures").rglob("*.md"),
                        *(ROOT / "data" / "sample" / "docs").rglob("*.md")])
    else:
        paths = sorted((DATA / name / "docs").glob("*.md"))
    out = []
    for p in paths:
        with open(p, encoding="utf-8", newline="") as f:
            out.append((str(p.relative_to(ROOT.parent)), f.read()))
    return out


# --------------------------------------------------------------------------- child side
def _config() -> Any:
    from proxy_pointer.bundled import MAX_TOKENS
    from proxy_pointer.parse.chunking import ChunkConfig

    return ChunkConfig.for_window(MAX_TOKENS)  # what Index() uses for the bundled MiniLM


def _parse(text: str, doc_id: str, config: Any) -> Any:
    from proxy_pointer.ingest.parsing import parse_document

    return parse_document(text, doc_id, doc_id, None, config, False)


def _digest(parsed: Any) -> str:
    """SHA-256 of everything a parse returns except its timings."""
    out = {
        "record": dataclasses.asdict(parsed.record),
        "chunks": [dataclasses.asdict(c) for c in parsed.chunks],
        "tree_json": parsed.tree_json,
        "sections_skipped": parsed.sections_skipped,
        "warnings": list(parsed.warnings),
        "text": parsed.text,
    }
    blob = json.dumps(out, ensure_ascii=False, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def child_identity(corpora: list[str]) -> dict[str, dict[str, str]]:
    config = _config()
    return {c: {d: _digest(_parse(t, d, config)) for d, t in corpus_documents(c)}
            for c in corpora}


def child_time(corpus: str, profile: bool) -> dict[str, Any]:
    from proxy_pointer.tokens import count_tokens

    count_tokens("warm up")
    config = _config()
    docs = corpus_documents(corpus)
    nbytes = sum(len(t.encode("utf-8")) for _, t in docs)
    t0, c0 = time.perf_counter(), time.process_time()
    tree = chunk = tok = 0.0
    for d, t in docs:
        p = _parse(t, d, config)
        tree, chunk = tree + p.tree_seconds, chunk + p.chunk_seconds
        tok += getattr(p, "token_seconds", 0.0)
    out: dict[str, Any] = {"seconds": time.perf_counter() - t0,
                           "cpu_seconds": time.process_time() - c0, "bytes": nbytes,
                           "docs": len(docs), "tree_seconds": tree, "chunk_seconds": chunk,
                           "token_seconds": tok}
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for d, t in docs:
            _parse(t, d, config)
        prof.disable()
        stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        stages: dict[str, float] = {}
        for label, (where, names) in STAGES.items():
            wanted = names.split("|")
            if where == "~":  # built-in methods: distinct calls, added up
                stages[label] = sum(ct for (file, _, fn), (_, _, _, ct, _) in stats.items()
                                    if file == "~" and any(f"'{w}'" in fn for w in wanted))
            else:  # functions of one name may nest (a method calling the function): the outer
                stages[label] = max((ct for (file, _, fn), (_, _, _, ct, _) in stats.items()
                                     if file.endswith(where) and fn in wanted), default=0.0)
        total = sum(ct for (_, _, fn), (_, _, _, ct, _) in stats.items()
                    if fn == "parse_document")
        out["profile"] = {"total (cProfile)": total, **stages}
    return out


# --------------------------------------------------------------------------- parent side
def run_in(checkout: Path, *args: str) -> Any:
    """Run this file as a script with ``args`` in a child that imports ``proxy_pointer`` from
    ``checkout`` (``PYTHONPATH`` and ``cwd``); its last stdout line, read as JSON."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], cwd=checkout,
                         env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"child in {checkout} failed:\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def compare_identity(base: Path, corpora: list[str]) -> dict[str, Any]:
    before = run_in(base, "--child-identity", *corpora)
    after = run_in(ROOT, "--child-identity", *corpora)
    out: dict[str, Any] = {}
    for c in corpora:
        differ = sorted(d for d in before[c] if before[c][d] != after[c].get(d))
        out[c] = {"documents": len(before[c]), "identical": len(before[c]) - len(differ),
                  "differ": differ}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare-with", type=Path, help="the checkout to compare with")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--identity-only", action="store_true")
    ap.add_argument("--corpora", nargs="*", default=list(CORPORA))
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results" / "parse")
    ap.add_argument("--child-identity", nargs="*")
    ap.add_argument("--child-time")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    if args.child_identity is not None:
        print(json.dumps(child_identity(args.child_identity)))
        return 0
    if args.child_time:
        print(json.dumps(child_time(args.child_time, args.profile)))
        return 0
    if args.compare_with is None:
        ap.error("--compare-with PATH is needed (a checkout of the code before)")
    base = args.compare_with.resolve()
    identity = compare_identity(base, [*args.corpora, "fixtures", "shapes"])
    print(json.dumps(identity, indent=1), flush=True)
    same = all(not v["differ"] for v in identity.values())
    if args.identity_only:
        return 0 if same else 1
    checkouts = {"before": base, "after": ROOT}
    speed: dict[str, Any] = {}
    for corpus in args.corpora:
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in checkouts}
        for _ in range(args.repeats):
            for k, path in checkouts.items():
                runs[k].append(run_in(path, "--child-time", corpus))
        prof = {k: run_in(path, "--child-time", corpus, "--profile")["profile"]
                for k, path in checkouts.items()}
        best = {k: min(v, key=lambda r: r["seconds"]) for k, v in runs.items()}
        speed[corpus] = {k: {**best[k], "mb_per_s": best[k]["bytes"] / 1e6 / best[k]["seconds"],
                             "all_seconds": [r["seconds"] for r in runs[k]],
                             "profile": prof[k]} for k in checkouts}
        speed[corpus]["speedup"] = best["before"]["seconds"] / best["after"]["seconds"]
        print(corpus, json.dumps({k: round(v["seconds"], 3) for k, v in best.items()}),
              flush=True)
    write(args.out_dir, identity, speed, args.repeats)
    return 0 if same else 1


def write(out_dir: Path, identity: dict[str, Any], speed: dict[str, Any], repeats: int) -> None:
    # Imported here, not at the top: the children run this file as a script (see run_in),
    # outside the package, and need only the child_* functions.
    from ..common import environment, write_report

    data = {"identity": identity, "speed": speed, "repeats": repeats,
            "environment": environment("tokenizers", "markdown-it-py")}
    md = ["# Parsing speed (`parse_document`, one process)", "",
          f"Best of {repeats} alternating runs per checkout, each in its own process; "
          "default `ChunkConfig` fitted to the bundled MiniLM.", "",
          "Wall seconds let the tokenizer use a second core; CPU seconds (of the process, "
          "its threads included) are what a worker per core pays.", "",
          "| corpus | MB | before s | after s | before MB/s | after MB/s | speedup "
          "| before CPU s | after CPU s | CPU speedup |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c, s in speed.items():
        b, a = s["before"], s["after"]
        md.append(f"| {c} | {b['bytes'] / 1e6:.2f} | {b['seconds']:.2f} | {a['seconds']:.2f} "
                  f"| {b['mb_per_s']:.2f} | {a['mb_per_s']:.2f} | {s['speedup']:.2f}x "
                  f"| {b['cpu_seconds']:.2f} | {a['cpu_seconds']:.2f} "
                  f"| {b['cpu_seconds'] / a['cpu_seconds']:.2f}x |")
    md += ["", "## Stages (cProfile cumulative seconds; stages nest, so they do not add up)", "",
           "After the change one tokenizer pass (`DocumentTokens`) gives the line counts and "
           "the span counts, so its time is under \"line token counts\".", ""]
    for c, s in speed.items():
        md += [f"### {c}", "", "| stage | before | after |", "|---|---:|---:|"]
        for stage in s["before"]["profile"]:
            md.append(f"| {stage} | {s['before']['profile'][stage]:.2f} "
                      f"| {s['after']['profile'][stage]:.2f} |")
        md.append("")
    md += ["## Identity (digest of every output, document by document)", "",
           "| corpus | documents | identical |", "|---|---:|---:|"]
    md += [f"| {c} | {v['documents']} | {v['identical']} |" for c, v in identity.items()]
    write_report(out_dir, "parse", data, md)


if __name__ == "__main__":
    raise SystemExit(main())
