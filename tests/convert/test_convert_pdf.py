"""PdfConverter on PDFs written by fpdf2 with a known structure, and on bad input."""

from __future__ import annotations

import os
import re

import pytest
from fpdf import FPDF

from proxy_pointer.convert import ConversionError, convert_bytes
from proxy_pointer.convert.pdf import PdfConverter
from proxy_pointer.text.pages import page_of

HEADER = "Example Corp Annual Report 2022"


class _Report(FPDF):
    """Running header and a "Page N of M" footer on every page."""

    def header(self) -> None:
        self.set_font("helvetica", size=8)
        self.cell(0, 6, HEADER, new_x="LMARGIN", new_y="NEXT", align="C")
        self.ln(4)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("helvetica", size=8)
        self.cell(0, 6, f"Page {self.page_no()} of {{nb}}", align="C")


def _heading(pdf: FPDF, text: str, size: float) -> None:
    pdf.ln(3)
    pdf.set_font("helvetica", "B", size)
    pdf.cell(0, size * 0.6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)


def _lines(pdf: FPDF, *lines: str) -> None:
    """Body lines exactly as given (one paragraph), then a paragraph gap."""
    pdf.set_font("helvetica", size=11)
    for line in lines:
        pdf.cell(0, 5.5, line, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)


def _body(pdf: FPDF, topic: str, paragraphs: int = 2) -> None:
    for k in range(paragraphs):
        _lines(pdf, f"The {topic} paragraph {k} opens with a plain sentence about the topic,",
               "and it continues on a second line that ends the paragraph quietly.")


def report_pdf() -> bytes:
    pdf = _Report()
    pdf.set_auto_page_break(False)
    # page 1: title and an introduction
    pdf.add_page()
    pdf.set_font("helvetica", "B", 24)
    pdf.cell(0, 14, "Annual Report of Example Corp", new_x="LMARGIN", new_y="NEXT")
    _lines(pdf, "Cover sentence: this report describes the company and its results.")
    # page 2: contents
    pdf.add_page()
    _heading(pdf, "Table of Contents", 14)
    pdf.set_font("helvetica", size=11)
    for entry, page in [("PART I", 3), ("Item 1. Business", 3), ("Item 2. Properties", 4),
                        ("PART II", 5), ("Item 7. Management Discussion", 5),
                        ("1 Introduction", 5), ("1.1 Scope", 5)]:
        pdf.cell(0, 6, f"{entry} {'.' * 40} {page}", new_x="LMARGIN", new_y="NEXT")
    # page 3
    pdf.add_page()
    _heading(pdf, "PART I", 16)
    _heading(pdf, "Item 1. Business", 13)
    _lines(pdf, "Business sentence: we make widgets and sell them in many markets,",
           "for example through distributors. A long word is hyphen-",
           "ated here at the end of a line and joined again.")
    _body(pdf, "business")
    # page 4: a table
    pdf.add_page()
    _heading(pdf, "Item 2. Properties", 13)
    _lines(pdf, "Properties sentence: the company owns three plants and leases two offices.")
    pdf.set_font("helvetica", size=11)
    for cells in [("Plant", "Area", "Year"), ("North", "1,200", "2001"),
                  ("South", "3,400", "2010")]:
        for cell in cells:
            pdf.cell(40, 6, cell)
        pdf.ln(6)
    pdf.ln(4)
    _body(pdf, "properties", 1)
    # page 5
    pdf.add_page()
    _heading(pdf, "PART II", 16)
    _heading(pdf, "Item 7. Management Discussion", 13)
    _body(pdf, "discussion", 1)
    _heading(pdf, "1 Introduction", 12)
    _lines(pdf, "Introduction sentence: results improved over the year in every segment.")
    _heading(pdf, "1.1 Scope", 11)
    _lines(pdf, "Scope sentence: this section covers the operating segments only.")
    # page 6
    pdf.add_page()
    _body(pdf, "closing", 2)
    _lines(pdf, "Closing sentence: the board approved these statements.")
    return bytes(pdf.output())


@pytest.fixture(scope="module")
def report() -> tuple[str, tuple[int, ...]]:
    conv = PdfConverter().convert(report_pdf(), "report.pdf")
    assert conv.warnings == ()
    return conv.markdown, conv.page_starts


def _headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#")]


def test_headings_and_levels(report: tuple[str, tuple[int, ...]]) -> None:
    assert _headings(report[0]) == [
        "# Annual Report of Example Corp",  # the cover's title: no parent of the parts
        "# PART I",
        "## Item 1. Business",
        "## Item 2. Properties",
        "# PART II",
        "## Item 7. Management Discussion",
        "### 1 Introduction",
        "#### 1.1 Scope",
    ]


def test_running_header_footer_and_page_numbers_removed(
        report: tuple[str, tuple[int, ...]]) -> None:
    markdown = report[0]
    assert HEADER not in markdown
    assert not re.search(r"Page \d+ of \d+", markdown)


def test_toc_entries_are_not_headings(report: tuple[str, tuple[int, ...]]) -> None:
    headings = _headings(report[0])
    assert not any("...." in h or "Contents" in h for h in headings)
    assert sum("Item 1. Business" in h for h in headings) == 1


def test_paragraphs_hyphenation_and_table(report: tuple[str, tuple[int, ...]]) -> None:
    lines = report[0].splitlines()
    assert ("Business sentence: we make widgets and sell them in many markets, for example "
            "through distributors. A long word is hyphenated here at the end of a line and "
            "joined again.") in lines
    assert "North 1,200 2001" in lines and "South 3,400 2010" in lines


def test_page_starts_map_sentences_to_pages(report: tuple[str, tuple[int, ...]]) -> None:
    markdown, starts = report
    assert len(starts) == 6 and starts[0] == 1
    assert list(starts) == sorted(starts)
    lines = markdown.splitlines()
    for sentence, page in [("Cover sentence", 1), ("Business sentence", 3),
                           ("Properties sentence", 4), ("Introduction sentence", 5),
                           ("Scope sentence", 5), ("Closing sentence", 6),
                           ("North 1,200", 4), ("# PART II", 5), ("Item 2. Properties ...", 2)]:
        line = next(i for i, text in enumerate(lines, 1) if text.startswith(sentence)
                    or (sentence.endswith("...") and sentence[:-4] in text))
        assert page_of(starts, line) == page, sentence


def test_outline_is_the_tree() -> None:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for title, level, body in [("Introduction", 0, "Intro text."),
                               ("Background", 1, "Background text."),
                               ("Method", 0, "Method text.")]:
        pdf.add_page()
        pdf.start_section(title, level=level)
        pdf.cell(0, 6, title, new_x="LMARGIN", new_y="NEXT")  # body font: no layout cue
        pdf.cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    conv = PdfConverter().convert(bytes(pdf.output()), "outline.pdf")
    assert _headings(conv.markdown) == ["# Introduction", "## Background", "# Method"]
    assert "Method text." in conv.markdown


def test_outline_titles_are_found_behind_section_numbers() -> None:
    # Bookmarks often leave out the number the page shows ("Naming" for "2.2 Naming").
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    for title, shown, level in [("Utilities", "3 Utilities", 0),
                                ("Invoking the parser", "3.1 Invoking the parser", 1),
                                ("Invoking the coder", "3.2 Invoking the coder", 1)]:
        pdf.start_section(title, level=level)
        pdf.cell(0, 6, shown, new_x="LMARGIN", new_y="NEXT")
        pdf.cell(0, 6, f"Text about {title.lower()}.", new_x="LMARGIN", new_y="NEXT")
    conv = PdfConverter().convert(bytes(pdf.output()), "numbered.pdf")
    assert _headings(conv.markdown) == ["# 3 Utilities", "## 3.1 Invoking the parser",
                                        "## 3.2 Invoking the coder"]
    assert "Text about invoking the coder." in conv.markdown.split("3.2 Invoking")[1]


def test_a_heading_joins_its_wrapped_line_but_not_the_next_heading() -> None:
    pdf = FPDF()
    body = "Plain body text about the period, written as whole sentences. " * 3
    pdf.add_page()  # a first page of body text: its largest line would be the title
    pdf.set_font("helvetica", size=10)
    pdf.multi_cell(0, 5, body, new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 14)
    pdf.cell(0, 8, "Item 7. Management's Discussion", new_x="LMARGIN", new_y="NEXT")
    pdf.cell(0, 8, "Overview", new_x="LMARGIN", new_y="NEXT")  # ends short: not a wrap
    pdf.set_font("helvetica", size=10)
    pdf.multi_cell(0, 5, body, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", "B", 14)
    pdf.multi_cell(0, 8, "Liquidity and capital resources of the consolidated group including "
                   "its financing subsidiaries", new_x="LMARGIN", new_y="NEXT")  # wraps
    pdf.set_font("helvetica", size=10)
    pdf.multi_cell(0, 5, body, new_x="LMARGIN", new_y="NEXT")
    heads = _headings(PdfConverter().convert(bytes(pdf.output()), "wrap.pdf").markdown)
    assert heads[:2] == ["## Item 7. Management's Discussion", "### Overview"] or heads[:2] == [
        "# Item 7. Management's Discussion", "## Overview"]
    assert heads[2].endswith("Liquidity and capital resources of the consolidated group "
                             "including its financing subsidiaries")


def test_image_only_pdf_has_no_text_layer() -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")
    with pytest.raises(ConversionError, match="text layer") as err:
        PdfConverter().convert(bytes(pdf.output()), "scan.pdf")
    assert "scan.pdf" in str(err.value)


def test_encrypted_pdf() -> None:
    pdf = FPDF()
    pdf.set_encryption(owner_password="owner", user_password="user")
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.cell(0, 6, "Secret text.")
    with pytest.raises(ConversionError, match=r"password|encrypted"):
        PdfConverter().convert(bytes(pdf.output()), "secret.pdf")


@pytest.mark.parametrize("data", [report_pdf()[:len(report_pdf()) // 2],
                                  b"this is not a PDF at all\n" * 50, b"", b"%PDF-1.7\n%%EOF"])
def test_broken_bytes(data: bytes) -> None:
    with pytest.raises(ConversionError) as err:
        convert_bytes(data, "broken.pdf")
    assert "broken.pdf" in str(err.value)


def test_blank_page_warns() -> None:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in ["First page text.", None, "Third page text."]:
        pdf.add_page()
        if text:
            pdf.cell(0, 6, text)
    conv = PdfConverter().convert(bytes(pdf.output()), "gappy.pdf")
    assert len(conv.warnings) == 1
    assert "gappy.pdf" in conv.warnings[0] and "page 2 " in conv.warnings[0]
    assert conv.page_starts == (1, 3, 3)
    assert page_of(conv.page_starts, 3) == 3


def test_body_text_that_looks_like_markup_is_escaped() -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    for text in ["# Denotes a variance of 100 percent or more", "Plain text line here."]:
        pdf.cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    conv = PdfConverter().convert(bytes(pdf.output()), "hash.pdf")
    assert _headings(conv.markdown) == []


def _unmapped_ligatures_pdf() -> bytes:
    """A PDF whose font maps its fi, fl, ffi and ff ligature glyphs to no text (their
    ToUnicode entries emptied), as some filings' fonts do: pdfium reads each as U+FFFE."""
    matplotlib = pytest.importorskip("matplotlib")
    pdf = FPDF()
    pdf.compress = False  # the ToUnicode map in clear, to empty four entries
    pdf.add_page()
    pdf.add_font("dejavu", fname=os.path.join(matplotlib.get_data_path(),
                                              "fonts", "ttf", "DejaVuSans.ttf"))
    pdf.set_font("dejavu", size=10)
    for line in ("FISCAL YEAR CASH FLOWS",
                 "Our \ufb01scal 2023 \ufb01rst quarter cash \ufb02ows, the o\ufb03ce and its "
                 "e\ufb00ect."):
        pdf.cell(0, 5, line, new_x="LMARGIN", new_y="NEXT")
    data = bytes(pdf.output())
    for lig in (b"FB01", b"FB02", b"FB03", b"FB00"):
        entry = re.search(rb"<(\w{4})> <" + lig + rb">", data)
        assert entry is not None
        data = data.replace(entry[0], b"<" + entry[1] + b"> <0000>")  # same length
    return data


def test_ligatures_a_font_maps_to_nothing_are_spelled_again() -> None:
    conv = PdfConverter().convert(_unmapped_ligatures_pdf(), "release.pdf")
    assert "Our fiscal 2023 first quarter cash flows, the office and its effect." in (
        conv.markdown)
    assert "\ufffe" not in conv.markdown
    (warning,) = conv.warnings
    assert warning.startswith("release.pdf: 5 glyphs the PDF maps to no text read as ligatures")
