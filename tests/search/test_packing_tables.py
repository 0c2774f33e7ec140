"""Tables in the packer: a table that fits its share of the budget comes whole; a larger
one as its header (the lines that name its columns) plus the rows around the hit, never
rows without their header; the token counts stay exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.parse.blocks import table_layout
from proxy_pointer.tokens import count_tokens

_WORDS = ("copper bronze marble timber cement glass rubber cotton silver nickel cobalt "
          "zinc quartz amber cedar maple walnut linen velvet ivory").split()
TARGET = 40  # the asked row, far from both ends of a 60-row table
QUESTION = "How much were the purchases of zeppelin hangars?"
PROSE = ("The company reviews its capital allocation every year and reports the results "
         "to the board, which approves the plan for the next period.")


def _label(k: int) -> str:
    if k == TARGET:
        return "Purchases of zeppelin hangars"
    return f"{_WORDS[k % 20].capitalize()} {_WORDS[(k * 7 + 3) % 20]} line {k}"


def _amounts(k: int) -> tuple[str, str, str]:
    return f"{1000 + 37 * k:,}", f"{900 + 29 * k:,}", f"({100 + 11 * k:,})"


def text_table(rows: int = 60) -> list[str]:
    """A statement as the PDF converter writes it: caption, units, years, one row a line."""
    return ["Consolidated Statement of Cash Flows Years ended December 31",
            "(Millions) 2022 2021 2020",
            *(f"{_label(k)} {' '.join(_amounts(k))}" for k in range(rows))]


def pipe_table(rows: int = 60) -> list[str]:
    return ["| (Millions) | 2022 | 2021 | 2020 |", "|---|---:|---:|---:|",
            *(f"| {_label(k)} | {' | '.join(_amounts(k))} |" for k in range(rows))]


def html_table(rows: int = 60) -> list[str]:
    out = ["<table>", "  <thead>", "    <tr><th>(Millions)</th><th>2022</th><th>2021</th>"
           "<th>2020</th></tr>", "  </thead>", "  <tbody>"]
    out += [f"    <tr><td>{_label(k)}</td>" + "".join(f"<td>{a}</td>" for a in _amounts(k))
            + "</tr>" for k in range(rows)]
    return [*out, "  </tbody>", "</table>"]


def _index(tmp_path: Path, table: list[str]) -> Index:
    doc = "\n".join(["# Annual Report", "", "## Overview", "", PROSE, "",
                     "## Cash Flows", "", *table, "", "## Outlook", "", PROSE, ""])
    (tmp_path / "report.md").write_text(doc, encoding="utf-8")
    return Index.build([tmp_path], embedder=HashEmbedder(256))


def _table_section(res, header: list[str]):  # type: ignore[no-untyped-def]
    assert res.tokens_used == sum(count_tokens(s.text) for s in res.sections)
    return next(s for s in res.sections if s.title == "Cash Flows")


@pytest.mark.parametrize(("shape", "header"), [
    (text_table, ["Consolidated Statement of Cash Flows Years ended December 31",
                  "(Millions) 2022 2021 2020"]),
    (pipe_table, ["| (Millions) | 2022 | 2021 | 2020 |", "|---|---:|---:|---:|"]),
])
def test_a_table_larger_than_its_room_keeps_its_header_and_the_rows_around_the_hit(
        tmp_path: Path, shape, header: list[str]) -> None:  # type: ignore[no-untyped-def]
    table = shape()
    assert count_tokens("\n".join(table)) > 500  # over its share of a budget of 500
    res = Index.retrieve(_index(tmp_path, table), QUESTION, budget=500)
    assert res.tokens_used <= 500
    sec = _table_section(res, header)
    lines = sec.text.splitlines()
    assert sec.trimmed
    assert all(h in lines for h in header)  # the lines that say which year is which
    assert lines.index(header[-1]) < next(k for k, x in enumerate(lines) if "zeppelin" in x)
    for k in (TARGET - 1, TARGET + 1):  # its neighbours came with it
        assert any(_label(k) in x for x in lines), k
    for k in (0, 1, 2, 59):  # rows far away did not
        assert not any(f"{_label(k)} " in x or f"{_label(k)}<" in x for x in lines), k
    assert "[…]" in sec.text


def test_a_table_within_its_share_of_the_budget_comes_whole(tmp_path: Path) -> None:
    table = text_table()
    size = count_tokens("\n".join(table))
    assert 400 < size <= 1000  # over the section cap (400), within a quarter of the budget
    index = _index(tmp_path, table)
    res = index.retrieve(QUESTION, budget=4000, max_section_share=0.1, section_floor=400)
    sec = _table_section(res, table[:2])
    assert not sec.trimmed
    assert "\n".join(table) in sec.text
    assert res.tokens_used <= 4000


def test_table_layout_names_each_shape_header() -> None:
    assert table_layout(text_table(5)) == (2, [(k, k + 1) for k in range(2, 7)])
    assert table_layout(pipe_table(3)) == (2, [(2, 3), (3, 4), (4, 5)])
    assert table_layout(html_table(3)) is None  # left to the line cut (see table_layout)
    assert table_layout([PROSE, PROSE, PROSE]) is None
    # a converted table whose first row is a caption: its years row heads it too
    captioned = ["| Years ended | | |", "| --- | --- | --- |", "|  | 2022 | 2021 |",
                 "| Net sales | 34,229 | 35,355 |", "| Cost | 19,232 | 18,795 |"]
    assert table_layout(captioned) == (3, [(3, 4), (4, 5)])
    # years and dates are not amounts: the header runs to the first row holding one
    for years in ("December 31, 2022 2021", "Years ended December 31, 2022, December 25, 2021"):
        assert table_layout([years, "Cash 3,655 4,564", "Debt 1,938 1,307"]
                            ) == (1, [(1, 2), (2, 3)])
