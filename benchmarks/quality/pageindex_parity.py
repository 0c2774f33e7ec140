"""Parity of ``Tree.to_pageindex()`` with the real PageIndex ``md_to_tree`` (pageindex 0.4.7).

Usage::

    python -m benchmarks.quality.pageindex_parity [--record-fixtures] [--out-dir DIR] [DOC.md ...]

PageIndex is installed in its own virtualenv, ``benchmarks/.work/pageindex-venv`` (created on
the first run with ``pip install pageindex==0.4.7``; it pins dependencies that conflict with
ours, so it never goes into the package's environment). Its ``md_to_tree`` runs there, offline
(``if_thinning=False``, summaries and node text off), on every document of
``../shared/data/finance-10k/docs`` and ``../shared/data/qasper-dev/docs`` when that folder
exists, and on the fixtures in ``tests/fixtures/tree``; or on the documents named on the
command line.

How documents are compared
--------------------------
A document is *identical* when PageIndex's whole result (``doc_name``, ``line_count``,
``structure`` with titles, node ids and 1-based line numbers) equals ours. Both build the
tree from the flat list of (line, level, title) headings with the same rule (a heading nests
under the nearest shallower one; ids count headings in pre-order from ``0000``) - checked
here on every document - so every difference comes down to a heading line that one side has
and the other lacks, or a title that differs. Each such line is classified by what
CommonMark says the line is (via markdown-it-py). Known PageIndex regex bugs:

* a ``#`` line inside a ``~~~`` fence, a longer fence, an indented code block, an HTML block,
  YAML front matter or a list item is read as a heading;
* a line that merely starts with ````` `` ````` toggles "in code" and hides later headings;
* setext headings, empty ATX headings and a heading after a UTF-8 BOM are missed;
* the closing ``#`` sequence is kept in the title.

**Bold-only lines.** PageIndex 0.4.7 also turns any line that is only ``**bold text**``
into a level-1 heading. That is a heuristic, not CommonMark; proxy-pointer does not do it by
default (``recover_headings=True`` does something more careful). Such lines are counted as
their own class, and the report also compares PageIndex with those lines removed from its
heading list (re-nested and renumbered as ``md_to_tree`` would): "identical without bold
promotion".

Exit status 1 when any difference is not explained by a known class, 0 otherwise. Writes
``benchmarks/results/pageindex_parity/pageindex-parity.json`` and ``.md`` (or under ``--out-dir``).
``--record-fixtures`` also stores PageIndex's output on the fixtures in
``tests/fixtures/tree/pageindex-0.4.7.json`` for the tests, which do not need PageIndex
installed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import venv
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from proxy_pointer.documents import read_document

# classification must see the very parse the tree came from
from proxy_pointer.parse.headings import block_parser
from proxy_pointer.parse.tree import Tree, build_tree

from ..common import DATA, RESULTS, ROOT, WORK, environment, run_child, write_json, write_report

PAGEINDEX_VERSION = "0.4.7"
VENV = WORK / "pageindex-venv"
CORPORA = ("finance-10k", "qasper-dev")
FIXTURES = ROOT / "tests" / "fixtures" / "tree"
RECORDED = FIXTURES / f"pageindex-{PAGEINDEX_VERSION}.json"

BOLD = "pageindex promotes a bold-only line to a level-1 heading"
KNOWN = {
    "tilde_fence": "pageindex ignores ~~~ fences: reads a '#' line inside one as a heading",
    "fence": "pageindex's ``` toggle loses a fence (longer fence, ``` line inside it): "
             "reads a '#' line inside as a heading",
    "code_block": "pageindex reads a '#' line in an indented code block as a heading",
    "html_block": "pageindex reads a '#' line inside an HTML block as a heading",
    "front_matter": "pageindex reads a '#' line in YAML front matter as a heading",
    "nested": "pageindex reads a '#' line inside a list item or block quote as a heading",
    "toggle": "pageindex misses a heading: its ``` toggle is out of step with the real "
              "fences (a line merely starting with ```, a longer fence)",
    "setext": "pageindex does not recognise setext headings",
    "empty": "pageindex ignores an empty ATX heading ('#' alone)",
    "bom": "pageindex misses a heading on the first line after a UTF-8 BOM",
    "closing": "pageindex keeps the closing '#' sequence in the title",
    "bold": BOLD,
}

# Runs inside the pageindex virtualenv: paths on stdin, one JSON result per path on stdout.
DRIVER = r"""
import asyncio, contextlib, io, json, sys
from pageindex.page_index_md import extract_nodes_from_markdown, md_to_tree
out = {}
for path in json.load(sys.stdin):
    with contextlib.redirect_stdout(io.StringIO()):
        result = asyncio.run(md_to_tree(path, if_thinning=False, if_add_node_summary="no",
                                        if_add_node_text="no"))
    with open(path, encoding="utf-8") as f:
        nodes, _ = extract_nodes_from_markdown(f.read())
    out[path] = {"result": result,
                 "levels": [[n["line_num"], n["level"], n["node_title"]] for n in nodes]}
json.dump(out, sys.stdout, ensure_ascii=False)
"""

# PageIndex 0.4.7's own patterns (page_index_md.extract_nodes_from_markdown), used only to
# say why it saw a line as it did.
PI_HEADER = re.compile(r"^(#{1,6})\s+(.+)$")
PI_BOLD = re.compile(r"^\*\*(.+?)\*\*\s*$")


def venv_python() -> Path:
    """The virtualenv's python with pageindex installed, creating it on first use."""
    py = VENV / "bin" / "python"
    check = [str(py), "-c", "import importlib.metadata as m; print(m.version('pageindex'))"]
    if py.exists():
        done = subprocess.run(check, capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == PAGEINDEX_VERSION:
            return py
    print(f"creating {VENV} with pageindex=={PAGEINDEX_VERSION} ...", file=sys.stderr)
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        subprocess.run([str(py), "-m", "pip", "install", "-q",
                        f"pageindex=={PAGEINDEX_VERSION}"], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"could not install pageindex=={PAGEINDEX_VERSION} into {VENV}: {exc}")
    return py


def run_pageindex(paths: list[Path]) -> dict[str, Any]:
    done = run_child([venv_python(), "-c", DRIVER], input=json.dumps([str(p) for p in paths]),
                     check=False)
    if done.returncode != 0:
        sys.exit(f"pageindex failed:\n{(done.stderr or '')[-3000:]}")
    return json.loads(done.stdout or "")


def nest(levels: list[tuple[int, int, str]]) -> list[dict[str, Any]]:
    """Headings (line, level, title) nested and numbered the way md_to_tree does."""
    roots: list[dict[str, Any]] = []
    stack: list[tuple[dict[str, Any], int]] = []
    for k, (line, level, title) in enumerate(levels):
        node: dict[str, Any] = {"title": title, "node_id": f"{k:04d}", "line_num": line}
        while stack and stack[-1][1] >= level:
            stack.pop()
        if stack:
            stack[-1][0].setdefault("nodes", []).append(node)
        else:
            roots.append(node)
        stack.append((node, level))
    return roots


def block_kinds(tree: Tree) -> list[tuple[str, str]]:
    """For each line: (top-level block type, fence markup) per markdown-it."""
    kinds = [("blank", "")] * len(tree.lines)
    src = tree.text[1:] if tree.text.startswith("\ufeff") else tree.text
    for tok in block_parser(tree.lines).parse(src):
        if tok.level != 0 or not tok.map or tok.nesting == -1:
            continue
        kind = tok.type.removesuffix("_open")
        if kind in ("bullet_list", "ordered_list", "blockquote"):
            kind = "nested"
        for i in range(tok.map[0], tok.map[1]):
            kinds[i] = (kind, tok.markup if kind == "fence" else "")
    return kinds


def pageindex_in_code(lines: list[str]) -> list[bool]:
    """Per line, whether PageIndex's ``` toggle thinks it is inside code."""
    flags, inside = [], False
    for line in lines:
        if line.strip().startswith("```"):
            inside = not inside
            flags.append(True)
        else:
            flags.append(inside)
    return flags


def classify(path: Path, tree: Tree, pi: dict[str, Any]) -> dict[str, Any]:
    """Compare one document; every differing heading line gets a class (None = unexplained)."""
    ours = tree.to_pageindex(doc_name=path.stem)
    levels = [(int(a), int(b), c) for a, b, c in pi["levels"]]
    problems: list[str] = []
    if nest(levels) != pi["result"]["structure"]:
        problems.append("md_to_tree's tree differs from nesting its own heading list")
    if ours["line_count"] != pi["result"]["line_count"]:
        problems.append(f"line_count {ours['line_count']} != {pi['result']['line_count']}")
    if ours["doc_name"] != pi["result"]["doc_name"]:
        problems.append("doc_name differs")

    lines = [line.rstrip("\r\n") for line in tree.lines]
    kinds = block_kinds(tree)
    in_code = pageindex_in_code(lines)
    theirs = {line: (level, title) for line, level, title in levels}
    mine = {n.start + 1: n for n in tree.heading_nodes}
    diffs: list[dict[str, Any]] = []

    def add(line: int, cls: str | None, what: str) -> None:
        diffs.append({"line": line, "class": cls, "what": what, "text": lines[line - 1][:120]})

    for line in sorted(set(theirs) | set(mine)):
        text = lines[line - 1]
        if line in theirs and line not in mine:
            stripped = text.strip()
            kind, markup = kinds[line - 1]
            if not PI_HEADER.match(stripped) and PI_BOLD.match(stripped):
                add(line, "bold", "extra in pageindex")
            elif kind == "fence":
                add(line, "tilde_fence" if markup.startswith("~") else "fence",
                    "extra in pageindex")
            elif kind in ("code_block", "html_block", "front_matter", "nested"):
                add(line, kind, "extra in pageindex")
            else:
                add(line, None, f"extra in pageindex (CommonMark: {kind})")
        elif line in mine and line not in theirs:
            node = mine[line]
            if node.body_start - node.start > 1:
                add(line, "setext", "missing in pageindex")
            elif line == 1 and tree.lines[0].startswith("\ufeff"):
                add(line, "bom", "missing in pageindex")
            elif node.raw_title == "":
                add(line, "empty", "missing in pageindex")
            elif in_code[line - 1]:
                add(line, "toggle", "missing in pageindex")
            else:
                add(line, None, "missing in pageindex")
        else:
            level, title = theirs[line]
            node = mine[line]
            if node.body_start - node.start > 1:
                add(line, "setext", f"pageindex {title!r} (level {level}), ours setext")
            elif title != node.raw_title:
                closed = re.sub(r"(?:^|[ \t]+)#+$", "", title).rstrip()
                add(line, "closing" if closed == node.raw_title else None,
                    f"title {title!r} vs ours {node.raw_title!r}")
            elif level != node.level:
                add(line, None, f"level {level} vs ours {node.level}")

    bold = {d["line"] for d in diffs if d["class"] == "bold"}
    unbold = {**pi["result"], "structure": nest([t for t in levels if t[0] not in bold])}
    return {
        "doc": doc_name(path),
        "identical": ours == pi["result"] and not problems,
        "identical_without_bold": ours == unbold and not problems,
        "pageindex_headings": len(levels),
        "our_headings": len(tree.heading_nodes),
        "problems": problems,
        "differences": diffs,
    }


def doc_name(path: Path) -> str:
    for base in (DATA, ROOT):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return str(path)


def corpus_of(doc: str) -> str:
    return next((c for c in CORPORA if doc.startswith(f"{c}/")), "fixtures")


def label(diff: dict[str, Any]) -> str:
    if diff["class"] is None:
        return f"UNEXPLAINED: {diff['what']}"
    return KNOWN[diff["class"]]


def fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.md") if p.name != "SOURCE.md")


def collect(args: list[str]) -> list[Path]:
    if args:
        return [Path(a).resolve() for a in args]
    paths: list[Path] = []
    if DATA.is_dir():
        for corpus in CORPORA:
            paths.extend(sorted((DATA / corpus / "docs").glob("*.md")))
    else:
        print(f"{DATA} not found: comparing on the fixtures only", file=sys.stderr)
    paths.extend(fixtures())
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("docs", nargs="*", help="documents to compare (default: all)")
    parser.add_argument("--record-fixtures", action="store_true",
                        help=f"store pageindex's output on the fixtures in {RECORDED.name}")
    parser.add_argument("--out-dir", type=Path, default=RESULTS / "pageindex_parity",
                        help="where pageindex-parity.{json,md} go (default: benchmarks/results)")
    opts = parser.parse_args(argv)
    paths = collect(opts.docs)
    venv_python()  # install first, so the run time below is the comparison's own
    t0 = time.perf_counter()
    pageindex = run_pageindex(paths)
    reports = [classify(p, build_tree(read_document(p), p.name), pageindex[str(p)])
               for p in paths]
    seconds = time.perf_counter() - t0

    if opts.record_fixtures:
        recorded = {p.name: pageindex[str(p)]["result"] for p in fixtures()}
        write_json(RECORDED, recorded, indent=1)

    classes: Counter[str] = Counter()
    class_docs: dict[str, set[str]] = defaultdict(set)
    examples: dict[str, list[str]] = defaultdict(list)
    unexplained = 0
    for r in reports:
        for problem in r["problems"]:
            unexplained += 1
            classes[f"UNEXPLAINED: {problem}"] += 1
            class_docs[f"UNEXPLAINED: {problem}"].add(r["doc"])
        for d in r["differences"]:
            key = label(d)
            unexplained += d["class"] is None
            classes[key] += 1
            class_docs[key].add(r["doc"])
            if len(examples[key]) < 3:
                examples[key].append(f"{r['doc']}:{d['line']}: {d['text']}")

    summary = {
        "pageindex_version": PAGEINDEX_VERSION,
        "documents": len(reports),
        "identical": sum(r["identical"] for r in reports),
        "identical_without_bold": sum(r["identical_without_bold"] for r in reports),
        "pageindex_headings": sum(r["pageindex_headings"] for r in reports),
        "our_headings": sum(r["our_headings"] for r in reports),
        "unexplained_differences": unexplained,
        "seconds": round(seconds, 2),
        "by_corpus": {
            group: {"documents": len(rs), "identical": sum(r["identical"] for r in rs),
                    "identical_without_bold": sum(r["identical_without_bold"] for r in rs)}
            for group in (*CORPORA, "fixtures")
            if (rs := [r for r in reports if corpus_of(r["doc"]) == group])
        },
        "classes": {k: {"count": v, "documents": len(class_docs[k]), "examples": examples[k]}
                    for k, v in classes.most_common()},
    }
    md = render(summary)
    write_report(opts.out_dir, "pageindex-parity",
                 {"summary": summary, "documents": reports, "environment": environment()},
                 md, indent=1)
    print(md)
    return 1 if unexplained else 0


def render(s: dict[str, Any]) -> str:
    out = [
        f"# Tree parity with pageindex {s['pageindex_version']} `md_to_tree`",
        "",
        f"Documents compared: {s['documents']}. Headings: pageindex "
        f"{s['pageindex_headings']}, proxy-pointer {s['our_headings']}.",
        "",
        "| corpus | documents | identical | identical without bold promotion |",
        "|---|---:|---:|---:|",
        *(f"| {k} | {v['documents']} | {v['identical']} | {v['identical_without_bold']} |"
          for k, v in s["by_corpus"].items()),
        "",
        f"- identical (titles, node ids, line numbers, nesting): **{s['identical']}**",
        f"- identical once pageindex's bold-only-line promotions are removed from its "
        f"heading list: **{s['identical_without_bold']}**",
        f"- differences not explained by a known pageindex bug: "
        f"**{s['unexplained_differences']}**",
        "",
        "Bold-only lines: pageindex 0.4.7 makes every `**bold**`-only line a level-1 heading; "
        "proxy-pointer does not by default, so those lines are reported as their own class "
        "and excluded in the second count.",
        "",
        "| difference (each: pageindex is wrong per CommonMark, or its bold heuristic) "
        "| lines | documents |",
        "|---|---:|---:|",
    ]
    for key, c in s["classes"].items():
        cell = key.replace("|", "\\|")
        out.append(f"| {cell} | {c['count']} | {c['documents']} |")
    out += ["", f"Run time: {s['seconds']} s.", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
