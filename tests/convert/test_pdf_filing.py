"""A filing's shape (:mod:`proxy_pointer.convert.pdf.filing`): PARTs at the top, Items in
the PART the contents say, the statements, the auditor's report and the notes siblings,
running heads never headings; on a filing built with run-in Item titles, and labelled on
every financebench-dev filing (``../shared/data``, skipped without it)."""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fpdf import FPDF

from proxy_pointer.convert.pdf import PdfConverter
from proxy_pointer.convert.pdf.filing import filing_levels
from proxy_pointer.parse.tree import Tree, build_tree

ROWS = [(f"Line item {k}", f"{1000 + 37 * k:,}", f"{900 + 41 * k:,}") for k in range(12)]
CONTENTS = [("PART I", None), ("Item 1. Business", 1), ("Item 1A. Risk Factors", 2),
            ("PART II", None), ("Item 7. Management's Discussion and Analysis", 3),
            ("Item 8. Financial Statements and Supplementary Data", 4),
            ("Item 9. Controls and Procedures", 9), ("PART III", None),
            ("Item 10. Directors and Executive Officers", 10)]
PROSE = ("of ordinary body text that runs over a second line, as paragraphs in a filing do, "
         "and then it ends with a full stop.")


class _RunIn(FPDF):
    """Every body page opens with the running head "Acme Widgets, Inc." and ends with its
    printed number."""

    def header(self) -> None:
        if self.page_no() > 2:
            self.set_font("helvetica", size=8)
            self.cell(0, 5, "Acme Widgets, Inc.", new_x="LMARGIN", new_y="NEXT")
            self.ln(4)

    def footer(self) -> None:
        if self.page_no() > 2:
            self.set_y(-15)
            self.set_font("helvetica", size=9)
            self.cell(0, 6, str(self.page_no() - 2), align="C")


def _text(pdf: FPDF, text: str, style: str = "") -> None:
    pdf.set_font("helvetica", style, 10)
    pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)


def run_in_filing(caption: Callable[[str], str] = str) -> bytes:
    """A 10-K whose Item titles run into their first sentence ("Item 1. Business. Unless
    ..."), whose Item 8 has no index, whose statements carry their titles on their pages
    as ``caption`` prints them."""
    pdf = _RunIn()
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.cell(0, 12, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
             new_x="LMARGIN", new_y="NEXT")
    _text(pdf, "FORM 10-K\nAcme Widgets, Inc.")
    pdf.add_page()
    _text(pdf, "Table of Contents")
    for title, page in CONTENTS:
        pdf.set_x(10 if page is None else 14)
        _text(pdf, title if page is None else f"{title} {page}")
    body: list[list[str | list[tuple[str, str, str]]]] = [
        ["PART I", "Item 1. Business. Unless the context otherwise requires, the business "
         + PROSE],
        ["Item 1A. Risk Factors. Our business faces risks, and this paragraph " + PROSE],
        ["PART II", "Item 7. Management's Discussion and Analysis. The discussion " + PROSE],
        ["Item 8. Financial Statements and Supplementary Data. The statements follow " + PROSE,
         "Report of Independent Registered Public Accounting Firm",
         "To the shareholders: we have audited the statements, and this opinion " + PROSE],
        [caption("Consolidated Statements of Operations"), ROWS],
        [caption("Consolidated Balance Sheets"), ROWS],
        [caption("Consolidated Statements of Cash Flows"), ROWS],
        ["Notes to Consolidated Financial Statements",
         "Note 1. Summary of Significant Accounting Policies",
         "The policies are stated in this paragraph " + PROSE],
        ["Item 9. Controls and Procedures. Our management evaluated controls; this " + PROSE],
        ["PART III", "Item 10. Directors and Executive Officers. The information " + PROSE],
    ]
    for page in body:
        pdf.add_page()
        for part in page:
            if isinstance(part, list):
                for label, a, b in [("(In millions)", "2022", "2021"), *part]:
                    pdf.set_font("helvetica", size=10)
                    pdf.cell(100, 5, label)
                    pdf.cell(30, 5, a, align="R")
                    pdf.cell(30, 5, b, align="R", new_x="LMARGIN", new_y="NEXT")
            else:
                _text(pdf, part)
    return bytes(pdf.output())


def _outline(tree: Tree, page_starts: tuple[int, ...]) -> list[tuple[int, str, str, int]]:
    """(level, title, parent title, page) of every heading."""
    return [(n.level, n.title, tree.get(n.parent_id).title if n.parent_id else "",
             bisect.bisect_right(page_starts, n.start + 1)) for n in tree.heading_nodes]


def test_run_in_items_parts_and_statements_take_the_filing_shape() -> None:
    conv = PdfConverter().convert(run_in_filing(), "acme.pdf")
    got = _outline(build_tree(conv.markdown, "acme.pdf"), conv.page_starts)
    item8 = "Item 8. Financial Statements and Supplementary Data."  # the full stop is printed
    assert got == [
        (1, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION", "", 1),
        (1, "PART I", "", 3),
        (2, "Item 1. Business.", "PART I", 3),
        (2, "Item 1A. Risk Factors.", "PART I", 4),
        (1, "PART II", "", 5),
        (2, "Item 7. Management's Discussion and Analysis.", "PART II", 5),
        (2, item8, "PART II", 6),
        (3, "Report of Independent Registered Public Accounting Firm", item8, 6),
        (3, "Consolidated Statements of Operations", item8, 7),
        (3, "Consolidated Balance Sheets", item8, 8),
        (3, "Consolidated Statements of Cash Flows", item8, 9),
        (3, "Notes to Consolidated Financial Statements", item8, 10),
        (2, "Item 9. Controls and Procedures.", "PART II", 11),
        (1, "PART III", "", 12),
        (2, "Item 10. Directors and Executive Officers.", "PART III", 12),
    ]
    # the run-in sentence stays in its Item's text, never a heading of its own
    assert "Unless the context otherwise requires" in conv.markdown
    assert "Acme Widgets, Inc." not in [t for _, t, _, _ in got]
    assert dict(conv.structure)["contents_found"] == len(CONTENTS)


# Statement titles the converter once missed, as filings beyond the dev set print them: after
# the filer's name on one line (a running head: "Acme Widgets, Inc. - Consolidated Balance
# Sheets"; "ACME ... AND SUBSIDIARIES CONSOLIDATED BALANCE SHEETS" in capitals, as 10-Ks
# typeset in one font do) and broken after "of" over two lines (a narrow title column).
CAPTIONS = {
    "after the filer's name": lambda t: f"Acme Widgets, Inc. - {t}",
    "in capitals after the filer and subsidiaries": (
        lambda t: f"ACME WIDGETS, INC. AND SUBSIDIARIES {t.upper()}"),
    "broken after 'of'": lambda t: t.replace(" of ", " of\n", 1),
}


@pytest.mark.parametrize("layout", sorted(CAPTIONS))
def test_statement_titles_printed_other_ways_become_the_statements_sections(layout: str
                                                                            ) -> None:
    conv = PdfConverter().convert(run_in_filing(CAPTIONS[layout]), "acme.pdf")
    got = _outline(build_tree(conv.markdown, "acme.pdf"), conv.page_starts)
    item8 = "Item 8. Financial Statements and Supplementary Data."
    statements = [(lv, t.lower(), parent, page) for lv, t, parent, page in got
                  if parent == item8 and t.lower().startswith("consolidated")]
    assert statements == [(3, "consolidated statements of operations", item8, 7),
                          (3, "consolidated balance sheets", item8, 8),
                          (3, "consolidated statements of cash flows", item8, 9)]
    assert dict(conv.structure)["statements"] == 3
    if "filer" in layout:  # the name stays in the text, a line of its own
        assert re.search(r"^ACME WIDGETS, INC\.( AND SUBSIDIARIES)?$", conv.markdown,
                         re.IGNORECASE | re.MULTILINE)


def test_filing_levels_puts_parts_on_top_and_keeps_stray_headings_inside_items() -> None:
    titles = ["Annual Report", "PART I", "Item 1. Business", "Overview", "(ii)",
              "PART II", "Item 8. Financial Statements", "Index", "Report of Independent "
              "Registered Public Accounting Firm", "Opinion", "Consolidated Balance Sheets",
              "Acme Inc", "Consolidated Statements of Income", "Notes to Financial Statements",
              "Note 1. Policies", "Income Statement", "Item 9. Controls"]
    levels = [1, 2, 3, 4, 1, 1, 2, 3, 4, 5, 3, 4, 3, 4, 3, 4, 1]
    assert filing_levels(titles, levels) == [
        1, 1, 2, 4, 3, 1, 2, 3, 3, 4, 3, 4, 3, 3, 4, 5, 2]


def test_filing_levels_leave_documents_without_two_parts_alone() -> None:
    titles = ["PART I", "Item 1. Business", "Consolidated Balance Sheets", "Notes"]
    assert filing_levels(titles, [2, 3, 1, 4]) == [2, 3, 1, 4]
    assert filing_levels(["Guide", "Part II of the guide"], [1, 3]) == [1, 3]
    book = ["A Book", "Part I", "Chapter 1", "Part II", "Chapter 2"]  # no Items: no filing
    assert filing_levels(book, [1, 2, 3, 2, 3]) == [1, 2, 3, 2, 3]


# ------------------------------------------------------------------ financebench-dev, labelled

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "financebench-dev" / "docs"
#: filing -> 1-based pages of its income statement, balance sheet and cash flows (each page
#: checked by hand to open with the statement's title)
LABELS = {
    "3M_2019_10K.pdf": (56, 58, 60), "3M_2020_10K.pdf": (57, 59, 61),
    "3M_2021_10K.pdf": (45, 47, 49), "3M_2022_10K.pdf": (48, 50, 52),
    "AMCOR_2022_10K.pdf": (49, 51, 52), "AMCOR_2023Q2_10Q.pdf": (5, 7, 8),
    "AMERICANEXPRESS_2022_10K.pdf": (96, 98, 99), "BLOCK_2019_10K.pdf": (73, 72, 77),
    "BLOCK_2020_10K.pdf": (86, 85, 90), "BLOCK_2021_10K.pdf": (84, 83, 88),
    "BOEING_2020_10K.pdf": (64, 66, 68), "BOEING_2021_10K.pdf": (60, 62, 63),
    "BOEING_2022_10K.pdf": (55, 57, 59), "CORNING_2019_10K.pdf": (70, 72, 73),
    "CORNING_2021_10K.pdf": (65, 67, 68), "LOCKHEEDMARTIN_2019_10K.pdf": (59, 61, 62),
    "LOCKHEEDMARTIN_2021_10K.pdf": (66, 68, 69), "LOCKHEEDMARTIN_2022Q2_10Q.pdf": (3, 5, 6),
    "PEPSICO_2020_10K.pdf": (60, 64, 62), "PEPSICO_2022_10K.pdf": (62, 66, 64),
}
_PRE = r"^(?:condensed\s+)?(?:consolidated\s+)?"
STATEMENTS = [re.compile(_PRE + r"(?:statements?\s+of\s+(?:income|operations|earnings)"
                         r"|income\s+statements?)", re.I),
              re.compile(_PRE + r"(?:balance\s+sheets?|statements?\s+of\s+financial\s+"
                         r"(?:position|condition))", re.I),
              re.compile(_PRE + r"statements?\s+of\s+cash\s+flows?", re.I)]
AUDITOR = re.compile(r"^reports?\s+of\s+independent\s+registered", re.I)
NOTES = re.compile(r"^notes\s+to\s+(?:the\s+)?(?:condensed\s+)?(?:consolidated\s+)?"
                   r"financial\s+statements", re.I)
PART = re.compile(r"^part\s+(i{1,3}|iv)\b", re.I)


@pytest.mark.slow
@pytest.mark.skipif(not DEV.is_dir(), reason="../shared/data/financebench-dev is not here")
@pytest.mark.parametrize("name", sorted(LABELS))
def test_dev_filing_shape(name: str) -> None:
    conv = PdfConverter().convert((DEV / name).read_bytes(), name)
    tree = build_tree(conv.markdown, name)
    nodes = tree.heading_nodes
    page = {n.node_id: bisect.bisect_right(conv.page_starts, n.start + 1) for n in nodes}
    parts = [n for n in nodes if PART.match(n.title)]
    assert len(parts) >= 2 and all(p.parent_id is None for p in parts)
    found = [next(n for n in nodes if rx.match(n.title) and page[n.node_id] == want)
             for rx, want in zip(STATEMENTS, LABELS[name], strict=True)]
    parent = {n.parent_id for n in found}
    assert len(parent) == 1 and None not in parent
    item = tree.get(parent.pop())  # type: ignore[arg-type]
    assert re.match(r"item\s+\d", item.title, re.I), item.title  # 8; 7 or 16 for some
    siblings = [tree.get(c).title for c in item.children]
    assert any(NOTES.match(t) for t in siblings), siblings
    if "10Q" not in name:
        assert any(AUDITOR.match(t) for t in siblings), siblings


def test_dev_labels_name_every_question_filing() -> None:
    if not DEV.is_dir():
        pytest.skip("../shared/data/financebench-dev is not here")
    filings = {p.name for p in DEV.iterdir() if re.search(r"_10[KQ]\.pdf$", p.name)}
    assert filings == set(LABELS), os.linesep.join(sorted(filings ^ set(LABELS)))
