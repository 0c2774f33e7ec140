"""Headings from a PDF's own contents pages (:mod:`proxy_pointer.convert.pdf.contents`), on
filings written by fpdf2 whose titles are plain body text: only the contents can find them."""

from __future__ import annotations

import re

from fpdf import FPDF
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy_pointer.convert.pdf import PdfConverter
from proxy_pointer.convert.pdf.contents import read_entries, set_depths
from proxy_pointer.convert.pdf.lines import Line
from proxy_pointer.text.pages import page_of
from proxy_pointer.vocab.keys import title_key

FRONT = 2  # cover and contents carry no page number; the body is printed 1, 2, ...


class _Filing(FPDF):
    """A printed page number at the bottom of every body page (when ``numbered``)."""

    numbered = True

    def footer(self) -> None:
        if self.numbered and self.page_no() > FRONT:
            self.set_y(-15)
            self.set_font("helvetica", size=9)
            self.cell(0, 6, str(self.page_no() - FRONT), align="C")


def _plain(pdf: FPDF, *lines: str, x: float | None = None) -> None:
    pdf.set_font("helvetica", size=10)
    for line in lines:
        if x is not None:
            pdf.set_x(x)
        pdf.cell(0, 5, line, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)


def _prose(pdf: FPDF, topic: str) -> None:
    _plain(pdf, f"The {topic} discussion opens with a sentence of ordinary body text that",
           "runs over a second line, as paragraphs in a filing do, and then it ends.")


def _table(pdf: FPDF, rows: list[tuple[str, str, str]]) -> None:
    pdf.set_font("helvetica", size=10)
    for label, a, b in [("(In millions)", "2022", "2021"), *rows]:
        pdf.cell(100, 5, label)
        pdf.cell(30, 5, a, align="R")
        pdf.cell(30, 5, b, align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)


ROWS = [(f"Line item {k}", f"{1000 + 37 * k:,}", f"{900 + 41 * k:,}") for k in range(12)]

#: (contents title, indentation in mm, printed page or None for a group header)
CONTENTS = [
    ("PART I", 10, None),
    ("Item 1. Business", 14, 1),
    ("Item 1A. Risk Factors", 14, 2),
    ("PART II", 10, None),
    ("Item 7. Management's Discussion and Analysis", 14, 3),
    ("Overview", 30, 3),
    ("Liquidity and Capital Resources", 30, 4),
    ("Item 8. Financial Statements and Supplementary Data", 14, 5),
    ("Consolidated Statements of Operations for the years ended December 31, 2022 and 2021",
     30, 5),
    ("Consolidated Balance Sheet", 30, 6),
    ("Consolidated Statement of Cash Flows", 30, 7),
    ("Segment Reconciliation", 30, 7),  # on no page: reported, not invented
    ("Item 9. Controls and Procedures", 14, 8),
]

#: (level, heading, physical page) the converter must give
EXPECTED = [
    (1, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 1),
    (1, "PART I", 3),
    (2, "Item 1. Business", 3),
    (2, "Item 1A. Risk Factors", 4),
    (1, "PART II", 5),
    (2, "Item 7. Management's Discussion and Analysis of Financial Condition", 5),
    (3, "OVERVIEW", 5),
    (3, "LIQUIDITY AND CAPITAL RESOURCES", 6),
    (2, "Item 8. Financial Statements and Supplementary Data", 7),
    (3, "CONSOLIDATED STATEMENTS OF OPERATIONS", 7),
    (3, "CONSOLIDATED BALANCE SHEETS", 8),
    (3, "CONSOLIDATED STATEMENTS OF CASH FLOWS", 9),
    (3, "Note 1. Accounting Policies", 9),  # a statement's sibling, found by layout
    (2, "Item 9. Controls and Procedures", 10),
]


def filing_pdf(*, numbered: bool = True, contents: bool = True) -> bytes:
    """A small 10-K: a cover with a large title, a contents page (``contents``), then the
    body, whose every title is plain 10-point text like its paragraphs."""
    pdf = _Filing()
    pdf.numbered = numbered
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.cell(0, 12, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
             new_x="LMARGIN", new_y="NEXT")
    _plain(pdf, "FORM 10-K", "Example Corp", "Commission file number 1-2345")
    pdf.add_page()
    _plain(pdf, "Table of Contents")
    if contents:
        for title, indent, page in CONTENTS:
            _plain(pdf, title if page is None else f"{title} {page}", x=indent)
    pages = [
        ["PART I", "Item 1. Business", "business"],
        ["Item 1A. Risk Factors", "risk"],
        ["PART II", "Item 7. Management's Discussion and Analysis of Financial Condition",
         "management", "OVERVIEW", "overview"],
        ["LIQUIDITY AND CAPITAL RESOURCES", "liquidity"],
        ["Item 8. Financial Statements and Supplementary Data", "statements",
         "CONSOLIDATED STATEMENTS OF OPERATIONS", ROWS],
        ["CONSOLIDATED BALANCE SHEETS", ROWS, "*Liabilities and Equity", "Current liabilities",
         ROWS],
        ["CONSOLIDATED STATEMENTS OF CASH FLOWS", ROWS, "*Note 1. Accounting Policies", "note"],
        ["Item 9. Controls and Procedures", "controls"],
    ]
    for page in pages:
        pdf.add_page()
        for part in page:
            if isinstance(part, list):
                _table(pdf, part)
            elif part[0] == "*":  # bold and big: a layout heading, or a statement's label
                pdf.set_font("helvetica", "B", 12)
                pdf.cell(0, 5, part[1:], new_x="LMARGIN", new_y="NEXT")
            elif part[0].isupper():
                _plain(pdf, part)
            else:
                _prose(pdf, part)
    return bytes(pdf.output())


def _headings(data: bytes) -> tuple[list[tuple[int, str, int]], tuple[str, ...]]:
    conv = PdfConverter().convert(data, "filing.pdf")
    lines = conv.markdown.splitlines()
    out = [(len(m[1]), m[2], page_of(conv.page_starts, n))
           for n, line in enumerate(lines, 1) if (m := re.match(r"(#+) (.*)", line))]
    return out, conv.warnings


def test_contents_entries_become_headings_on_the_pages_they_name() -> None:
    """Plain-text titles found only through the contents, at the contents' depth, on their
    physical page (printed page + 2), with the cover's title a sibling of PART I; a bold
    row label inside the balance sheet is no heading, a bold note after a statement is its
    sibling."""
    headings, warnings = _headings(filing_pdf())
    assert headings == EXPECTED
    (warning,) = warnings
    assert "1 of 13 contents entries not found" in warning
    assert "'Segment Reconciliation' (p. 7)" in warning
    assert "Segment Reconciliation" not in {h for _, h, _ in headings}


def test_without_printed_page_numbers_the_offset_comes_from_the_titles() -> None:
    """No page prints its number: the offset most titles agree on (+2) places them."""
    headings, _ = _headings(filing_pdf(numbered=False))
    assert headings == EXPECTED


def test_statements_without_contents_nest_under_their_item() -> None:
    """No contents list: the layout finds nothing (all plain text) but the statement titles
    over tables, each a heading of its own page, at one level (no Item is a heading here)."""
    headings, warnings = _headings(filing_pdf(contents=False))
    titles = [(level, h, p) for level, h, p in headings if "CONSOLIDATED" in h]
    assert [(h, p) for _, h, p in titles] == [
        ("CONSOLIDATED STATEMENTS OF OPERATIONS", 7), ("CONSOLIDATED BALANCE SHEETS", 8),
        ("CONSOLIDATED STATEMENTS OF CASH FLOWS", 9)]
    assert len({level for level, _, _ in titles}) == 1
    assert warnings == ()


def test_statement_titles_nest_under_a_layout_item_8_and_appear_once() -> None:
    """A bold Item 8 found by layout is the statements' parent; a continued page and a later
    note's "Balance Sheet" table are not second headings of the same statement."""
    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("helvetica", "B", 12)
    pdf.cell(0, 8, "Item 8. Financial Statements", new_x="LMARGIN", new_y="NEXT")
    _prose(pdf, "statements")
    for title in ("Consolidated Balance Sheets", "Consolidated Balance Sheets (continued)",
                  "Consolidated Statements of Income"):
        pdf.add_page()
        _plain(pdf, "Example Corp and Subsidiaries", title)
        _table(pdf, ROWS)
    pdf.add_page()
    pdf.set_font("helvetica", "B", 12)
    pdf.cell(0, 8, "Note 4. Investments", new_x="LMARGIN", new_y="NEXT")
    _plain(pdf, "Balance Sheet")
    _table(pdf, ROWS)
    headings, _ = _headings(bytes(pdf.output()))
    assert [(level, h) for level, h, _ in headings] == [
        (1, "Item 8. Financial Statements"), (2, "Consolidated Balance Sheets"),
        (2, "Consolidated Statements of Income"), (2, "Note 4. Investments")]


def _line(text: str, left: float = 20.0, top: float = 0.0, right: float = 300.0) -> Line:
    return Line(text, 1, 10.0, False, top, top + 10, right=right, left=left)


def _entries(*rows: tuple[str, float]) -> list[tuple[int, str, int | None]]:
    lines = [_line(text, left, 20.0 * k, right=200.0 + 2 * len(text))
             for k, (text, left) in enumerate(rows)]
    entries = read_entries(lines, 0, pages=300)
    set_depths(entries)
    return [(e.depth, e.title, e.page) for e in entries]


def test_read_entries_joins_wraps_and_keeps_group_headers() -> None:
    assert _entries(
        ("Beginning Page", 400), ("PART II Page", 20),
        ("Item 5. Market for Registrant's Common Equity, Related Stockholder Matters and "
         "Issuer Purchases of Equity", 25), ("Securities 19", 25),
        ("Item 7. Discussion .......... 21", 25), ("OUR BUSINESS", 60),
        ("Executive Overview 21", 60), ("Our Operations 22", 60),
        ("Statement of Income for the years ended December 31, 2022 and 2021 40", 60),
        ("Appendix A A-1", 25), ("Annual Report Pursuant to the Act of 1934", 25),
    ) == [
        (1, "PART II", None),
        (2, "Item 5. Market for Registrant's Common Equity, Related Stockholder Matters "
            "and Issuer Purchases of Equity Securities", 19),
        (2, "Item 7. Discussion", 21), (3, "OUR BUSINESS", None),
        (4, "Executive Overview", 21), (4, "Our Operations", 22),
        (4, "Statement of Income for the years ended December 31, 2022 and 2021", 40)]


def test_depth_from_numbering_at_one_indentation() -> None:
    assert _entries(("PART I", 20), ("Item 1. Business 3", 20), ("Item 2. Properties 9", 20),
                    ("PART II", 20), ("Item 5. Market 12", 20), ("Note 1. Policies 40", 20)
                    ) == [(1, "PART I", None), (2, "Item 1. Business", 3),
                          (2, "Item 2. Properties", 9), (1, "PART II", None),
                          (2, "Item 5. Market", 12), (3, "Note 1. Policies", 40)]


def test_title_key_ignores_case_plural_and_punctuation() -> None:
    assert title_key("Consolidated Statements of Cash Flows") == title_key(
        "CONSOLIDATED STATEMENT OF CASH FLOW")
    assert title_key("Management’s Discussion") == title_key("MANAGEMENT'S DISCUSSION")
    assert title_key("Item 7A. Risk") != title_key("Item 7. Risk")


_WORDS = ["PART I", "PART II", "Item 1.", "Item 7A.", "Note 3", "1.", "2.1", "Overview",
          "Consolidated", "Statements of", "Cash Flows", "Balance Sheets", "Income", "loss",
          "Contents", "Page", "for the years ended December 31, 2022", "(continued)",
          "1,234", "$", "2022", "2021", "iv", "A-1", "....", "•", "of", "and", "Securities"]


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6),
    st.integers(0, 200), st.integers(0, 60), st.booleans()), max_size=25),
    min_size=1, max_size=12), st.data())
def test_any_pages_place_without_error_at_valid_levels(
        pages_spec: list[list[tuple[list[str], int, int, bool]]], data: st.DataObject) -> None:
    """Whatever the pages hold, contents, statements and layout place headings only on
    existing lines, at levels 1-6, and never raise."""
    from proxy_pointer.convert.pdf.contents import place_contents, place_statements
    from proxy_pointer.convert.pdf.layout import layout_headings
    from proxy_pointer.convert.pdf.lines import is_toc_page

    pages = [[Line(" ".join(words) + (f" {num}" if num % 3 else ""), p, 10.0 + bold, bold,
                   20.0 * k, 20.0 * k + 10, right=300.0, left=float(indent))
              for k, (words, num, indent, bold) in enumerate(spec)]
             for p, spec in enumerate(pages_spec)]
    printed = data.draw(st.lists(st.one_of(st.none(), st.integers(1, 300)),
                                 min_size=len(pages), max_size=len(pages)))
    toc = {i for i, p in enumerate(pages) if is_toc_page(p)}
    placed = place_contents(pages, toc, printed)
    place_statements(pages, placed.anchors)
    layout_headings(pages, toc, placed.anchors)
    assert all(0 <= ln.heading <= 6 for page in pages for ln in page)
    assert all(ln.heading >= 1 for page in pages for ln in page if ln.fixed or ln.caption)
