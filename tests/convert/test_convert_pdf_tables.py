"""A PDF financial statement converts to one table block: its column header on top, its
label lines between the rows, and no prose or heading taken in."""

from __future__ import annotations

from fpdf import FPDF

from proxy_pointer.convert.pdf import PdfConverter

ROWS_OPERATING = [("Net income", "5,791", "5,929", "5,453"),
                  ("Depreciation and amortization", "1,831", "1,915", "1,911"),
                  ("Net cash provided by operating activities", "5,591", "7,454", "8,113")]
ROWS_INVESTING = [("Purchases of property, plant and equipment", "(1,749)", "(1,603)", "(1,501)"),
                  ("Proceeds from sale of businesses", "13", "-", "576"),
                  ("Net cash used in investing activities", "(1,046)", "(1,317)", "(580)")]


def _line(pdf: FPDF, *cells: str, bold: bool = False, gap: float = 0.0) -> None:
    pdf.set_font("helvetica", "B" if bold else "", 10)
    if len(cells) == 1:
        pdf.cell(0, 5, cells[0], new_x="LMARGIN", new_y="NEXT")
    else:
        pdf.cell(100, 5, cells[0])
        for cell in cells[1:]:
            pdf.cell(25, 5, cell, align="R")
        pdf.ln(5)
    pdf.ln(gap)


def statement_pdf(prose_between: bool = False) -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", "B", 16)
    pdf.cell(0, 10, "Item 8. Financial Statements", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    _line(pdf, "The statement below shows where the cash of the year came from and went to.",
          gap=4)
    _line(pdf, "The following table presents the cash flows:", gap=4)
    _line(pdf, "Consolidated Statement of Cash Flows", bold=True)
    _line(pdf, "Years ended December 31", gap=3)
    _line(pdf, "(Millions)", "2022", "2021", "2020", gap=2)
    _line(pdf, "Cash Flows from Operating Activities", bold=True, gap=2)
    for row in ROWS_OPERATING:
        _line(pdf, *row)
    pdf.ln(3)
    if prose_between:
        _line(pdf, "Investing activities are described in Note 7, which explains the large "
              "purchases made during the year.", gap=3)
    _line(pdf, "Cash Flows from Investing Activities", bold=True, gap=2)
    for row in ROWS_INVESTING:
        _line(pdf, *row)
    pdf.ln(4)
    _line(pdf, "The accompanying notes are an integral part of this statement.")
    return bytes(pdf.output())


def _blocks(markdown: str) -> list[list[str]]:
    return [b.splitlines() for b in markdown.split("\n\n") if b.strip()]


def test_a_statement_is_one_block_with_its_year_header() -> None:
    markdown = PdfConverter().convert(statement_pdf(), "statement.pdf").markdown
    blocks = _blocks(markdown)
    table = next(b for b in blocks if "Net income 5,791 5,929 5,453" in b)
    # the statement title is its heading (convert/pdf/contents), the rest heads the table
    assert ["## Consolidated Statement of Cash Flows"] in blocks
    assert table[0] == "Years ended December 31"
    assert table[1] == "(Millions) 2022 2021 2020"
    assert table[2:] == ["Cash Flows from Operating Activities",
                         *(" ".join(r) for r in ROWS_OPERATING),
                         "Cash Flows from Investing Activities",
                         *(" ".join(r) for r in ROWS_INVESTING)]
    # the heading, the prose before the table and its lead-in, the note after: their own
    assert ["# Item 8. Financial Statements"] in blocks
    assert ["The following table presents the cash flows:"] in blocks
    assert ["The accompanying notes are an integral part of this statement."] in blocks


def test_prose_between_two_runs_of_rows_splits_them() -> None:
    markdown = PdfConverter().convert(statement_pdf(prose_between=True), "s.pdf").markdown
    blocks = _blocks(markdown)
    first = next(b for b in blocks if "Net income 5,791 5,929 5,453" in b)
    second = next(b for b in blocks if "Proceeds from sale of businesses 13 - 576" in b)
    assert first is not second
    assert not any("Note 7" in line for line in first + second)
    assert second[0] == "Cash Flows from Investing Activities"  # a label above: its header
