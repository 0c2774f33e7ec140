"""The document shapes of the shapes benchmark (``quality/bench_shapes``): a line scanner
that knows headings, fences and tables; one writer per shape (long lines, no headings, HTML
tables, short sections, duplicates); and the folders of a dataset rewritten into a shape,
with the share of gold passages each rewrite keeps."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import common

#: Where the shaped datasets are written, one folder per (dataset, shape).
WORK = common.WORK / "shapes"


# --------------------------------------------------------------------------- line scanner

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)")
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TABLE = re.compile(r"^ {0,3}\|")
_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")


def heading(line: str) -> tuple[int, str] | None:
    """``(level, title)`` of an ATX heading line, else None (title without closing #s)."""
    m = _ATX.match(line)
    if not m:
        return None
    return len(m.group(1)), _CLOSING.sub("", line[m.end():].rstrip()).strip()


def scan(text: str) -> list[tuple[str, list[str]]]:
    """The blocks of ``text`` in order, as ``(kind, lines)``; joining every block's lines
    with newlines gives ``text`` back.

    Kinds: ``heading`` (one line), ``fence`` (one fenced block, its fences included; an
    unclosed fence runs to the end), ``table`` (consecutive table rows), ``text`` (consecutive
    other non-blank lines) and ``blank`` (consecutive blank lines). Headings, tables and
    blank lines inside a fence are part of the fence.
    """
    blocks: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            blocks[-1][1].append(line)
            stripped = line.strip()
            if (len(line) - len(line.lstrip(" ")) <= 3 and stripped
                    and set(stripped) == {fence[0]} and len(stripped) >= len(fence)):
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            blocks.append(("fence", [line]))
            continue
        if heading(line):
            blocks.append(("heading", [line]))
            continue
        kind = "table" if _TABLE.match(line) else "blank" if not line.strip() else "text"
        if blocks and blocks[-1][0] == kind and kind != "heading":
            blocks[-1][1].append(line)
        else:
            blocks.append((kind, [line]))
    return blocks


def _join(blocks: list[tuple[str, list[str]]]) -> str:
    return "\n".join(line for _, lines in blocks for line in lines)


# --------------------------------------------------------------------------- variant writers

def long_lines(text: str) -> str:
    """Every run of prose between headings, fences and tables joined into one line.

    Blank lines inside a run go (its paragraphs are joined with single spaces too); blocks are
    separated by one blank line; heading lines, fences and table rows are unchanged.
    """
    groups: list[list[str]] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            groups.append([" ".join(prose)])
            prose.clear()

    for kind, lines in scan(text):
        if kind == "text":
            prose.extend(line.strip() for line in lines)
        elif kind == "blank":
            continue
        else:
            flush()
            groups.append(lines)
    flush()
    return "\n\n".join("\n".join(g) for g in groups) + ("\n" if text.endswith("\n") else "")


def no_headings(text: str) -> str:
    """Every ATX heading line outside fenced code removed."""
    return _join([b for b in scan(text) if b[0] != "heading"])


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)]


def table_html(rows: list[str]) -> list[str]:
    """Markdown table rows as HTML lines: ``<table>``, one ``<tr>`` per row, ``</table>``.

    The row before a delimiter row is a header (``<th>``); delimiter rows are dropped; cell
    text is kept as written (not escaped).
    """
    out = ["<table>"]
    for i, row in enumerate(rows):
        if _DELIMITER.match(row):
            continue
        tag = "th" if i + 1 < len(rows) and _DELIMITER.match(rows[i + 1]) else "td"
        out.append("<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in _cells(row)) + "</tr>")
    out.append("</table>")
    return out


def html_tables(text: str) -> str:
    """Every Markdown table rewritten as one HTML ``<table>``; nothing else changes."""
    return _join([("table", table_html(lines)) if kind == "table" else (kind, lines)
                  for kind, lines in scan(text)])


def short_sections(text: str) -> str:
    """Before each paragraph of a section's body after the first, a heading one level deeper
    (at most 6) titled ``<section title> (part N)``, N = 2, 3, ...

    A paragraph is a run of non-blank blocks (text, table, fence) between blank lines or
    headings. Text before the first heading belongs to no section and is left alone.
    """
    out: list[tuple[str, list[str]]] = []
    section: tuple[int, str] | None = None
    part = 0
    previous = "blank"
    for kind, lines in scan(text):
        if kind == "heading":
            section, part = heading(lines[0]), 0
        elif kind != "blank" and section is not None and previous in ("blank", "heading"):
            part += 1
            if part > 1:
                level, title = section
                name = f"{title} (part {part})" if title else f"(part {part})"
                out.append(("heading", ["#" * min(level + 1, 6) + " " + name, ""]))
        out.append((kind, lines))
        previous = kind
    return _join(out)


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "long-lines": long_lines,
    "no-headings": no_headings,
    "html-tables": html_tables,
    "short-sections": short_sections,
}


def self_check() -> None:
    """Cheap assertions on a tiny document (runs at every start)."""
    doc = ("# Title\n\nIntro one\nintro two.\n\nSecond para.\n\n## Data #\n\n| a | b |\n"
           "|---|:-:|\n| 1 | 2 |\n\n```\n# not a heading\n\ncode\n```\nAfter code.\n")
    assert [k for k, _ in scan(doc)] == ["heading", "blank", "text", "blank", "text", "blank",
                                         "heading", "blank", "table", "blank", "fence", "text",
                                         "blank"], scan(doc)
    assert _join(scan(doc)) == doc
    assert heading("## Data #") == (2, "Data") and heading("#5 ways") is None
    assert long_lines(doc) == ("# Title\n\nIntro one intro two. Second para.\n\n## Data #\n\n"
                               "| a | b |\n|---|:-:|\n| 1 | 2 |\n\n```\n# not a heading\n\n"
                               "code\n```\n\nAfter code.\n"), long_lines(doc)
    assert no_headings(doc) == doc.replace("# Title\n", "").replace("## Data #\n", "")
    assert "<tr><th>a</th><th>b</th></tr>\n<tr><td>1</td><td>2</td></tr>" in html_tables(doc)
    assert "|" not in html_tables(doc)
    ss = short_sections(doc)
    assert ss.count("## Title (part 2)\n\nSecond para.") == 1 and "(part 3)" not in ss, ss
    assert "### Data (part 2)\n\n```\n# not a heading" in ss and "Data (part 3)" not in ss, ss
    for f in TRANSFORMS.values():
        assert " ".join(f(doc).split()).count("Second para.") == 1


# --------------------------------------------------------------------------- variant folders

def _variant_files(src: Path, variant: str) -> dict[str, str | Path]:
    """Output file name -> new text, or the source Path to symlink (unchanged)."""
    files: dict[str, str | Path] = {}
    for doc in sorted((src / "docs").glob("*.md")):
        if variant == "original":
            files[doc.name] = doc
        elif variant == "duplicates":
            files[doc.name] = doc
            files[f"{doc.stem}-copy.md"] = doc
        else:
            text = doc.read_text(encoding="utf-8")
            new = TRANSFORMS[variant](text)
            files[doc.name] = doc if new == text else new
    return files


def prepare_variant(data: Path, dataset: str, variant: str) -> tuple[Path, dict]:
    """The derived dataset folder (written once, reused while its content is the same) and
    counts of what the variant changed."""
    src = data / dataset
    files = _variant_files(src, variant)
    digest = hashlib.sha256(variant.encode())
    for name, item in files.items():
        digest.update(name.encode())
        digest.update(str(item.resolve()).encode() if isinstance(item, Path)
                      else item.encode("utf-8"))
    digest.update((src / "questions.jsonl").read_bytes())
    stamp = digest.hexdigest()
    out = WORK / f"{dataset}-{variant}"
    stats = {"files": len(files),
             "rewritten": sum(not isinstance(v, Path) for v in files.values())}
    if (out / ".digest").is_file() and (out / ".digest").read_text() == stamp:
        return out, stats
    tmp = WORK / f".{dataset}-{variant}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "docs").mkdir(parents=True)
    for name, item in files.items():
        if isinstance(item, Path):
            (tmp / "docs" / name).symlink_to(item.resolve())
        else:
            (tmp / "docs" / name).write_text(item, encoding="utf-8")
    shutil.copy(src / "questions.jsonl", tmp / "questions.jsonl")
    (tmp / "SOURCE.md").write_text(
        f"{dataset} in the `{variant}` shape of benchmarks/quality/bench_shapes.py "
        "(see its docstring "
        f"and {dataset}/SOURCE.md); {stats['rewritten']} of {stats['files']} documents "
        "rewritten, the others are symlinks; questions.jsonl unchanged.\n", encoding="utf-8")
    (tmp / ".digest").write_text(stamp)
    old = WORK / f".{dataset}-{variant}.old-{os.getpid()}"
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    return out, stats


def gold_coverage(docs: dict[str, str], questions: Any) -> dict:
    """How many evidence questions lost some / all of their gold passages in the variant."""
    norm: dict[str, str] = {}
    some = every = n = 0
    for q in questions:
        if not q.evidence:
            continue
        n += 1
        text = norm.setdefault(q.doc_id, " ".join(docs[q.doc_id].split()).casefold())
        found = [" ".join(p.split()).casefold() in text for ann in q.evidence for p in ann]
        some += not all(found)
        every += not any(found)
    return {"evidence_questions": n, "some_gold_missing": some, "all_gold_missing": every}


