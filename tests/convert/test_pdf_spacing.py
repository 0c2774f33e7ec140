"""Letter-spaced (tracked) text: pdfium reads the tracking as word spaces ("OVERVI EW",
"F I N A N C I A L"); the PDF reader joins such words again and keeps real word spaces."""

from __future__ import annotations

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pytest
from fpdf import FPDF

from proxy_pointer.convert.pdf import PdfConverter
from proxy_pointer.convert.pdf.lines import Reader

HEADINGS = ["FINANCIAL CONDITION AND LIQUIDITY", "PART IV", "OVERVIEW",
            "MANAGEMENT'S DISCUSSION AND ANALYSIS"]
FONTS = [("helvetica", "B", 16), ("times", "", 12), ("times", "B", 20), ("courier", "", 10)]
TRACKS = [0.05, 0.1, 0.15, 0.2, 0.3, 0.5]  # tracking in em


def _placed(pdf: FPDF, text: str, y: float, track: float, word_gap: float | None = None,
            x: float = 40) -> None:
    """Draw ``text`` glyph by glyph (as typesetting programs write tracked text): no space
    characters, each glyph ``track`` points after the last; a word gap is a space's width
    plus the tracking, or ``word_gap`` points where given (justified text)."""
    for ch in text:
        if ch == " ":
            x += word_gap if word_gap is not None else pdf.get_string_width(" ") + track
            continue
        pdf.text(x, y, ch)
        x += pdf.get_string_width(ch) + track


def _lines(data: bytes) -> list[str]:
    doc = pdfium.PdfDocument(data)
    try:
        reader = Reader()
        return [ln.text for i in range(len(doc)) for ln in reader.lines(doc[i], i)]
    finally:
        doc.close()


def _pdfium_lines(data: bytes) -> list[str]:
    doc = pdfium.PdfDocument(data)
    try:
        return [t.strip() for i in range(len(doc))
                for t in doc[i].get_textpage().get_text_range().splitlines() if t.strip()]
    finally:
        doc.close()


def _tracked_pdf(font: tuple[str, str, float], tracks: list[float]) -> bytes:
    pdf = FPDF(unit="pt")
    pdf.add_page()
    pdf.set_font(*font)
    y = 40.0
    for track in tracks:
        for text in HEADINGS:
            _placed(pdf, text, y, track * font[2])
            y += 1.5 * font[2]
    return bytes(pdf.output())


@pytest.mark.parametrize("font", FONTS, ids=lambda f: f"{f[0]}{f[1]}{f[2]}")
def test_tracked_headings_come_out_whole(font: tuple[str, str, float]) -> None:
    data = _tracked_pdf(font, TRACKS)
    raw = _pdfium_lines(data)
    assert len(raw) == len(_lines(data)) == len(HEADINGS) * len(TRACKS)
    assert set(raw) - set(HEADINGS), "pdfium no longer splits tracked words: test is moot"
    assert _lines(data) == HEADINGS * len(TRACKS)


def test_pdfium_splits_both_ways() -> None:
    # the two shapes of the fault: fragments of a word, and a run of single letters
    raw = _pdfium_lines(_tracked_pdf(("helvetica", "B", 16), [0.15, 0.3]))
    assert any(" " in line and line.replace(" ", "") == "OVERVIEW"
               and "O V E R" not in line for line in raw)
    assert "O V E R V I E W" in raw
    assert "P A R T I V" in raw


def test_char_spacing_with_space_characters_stays_whole() -> None:
    # fpdf2's set_char_spacing writes the space characters themselves: nothing to repair
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", "B", 16)
    for spacing in (1, 3, 5):
        pdf.set_char_spacing(spacing)
        for text in HEADINGS:
            pdf.cell(0, 10, text, new_x="LMARGIN", new_y="NEXT")
    assert _lines(bytes(pdf.output())) == HEADINGS * 3


def _report(track: float) -> str:
    """Markdown of a body page, then a page of bold 16 pt headings tracked by ``track``
    em, each followed by body text."""
    pdf = FPDF(unit="pt")
    body = ("Plain body text about the period, written as whole sentences with ordinary "
            "spacing between the words. ")
    pdf.add_page()  # on a first page only the title counts: headings go on the second
    pdf.set_font("helvetica", size=10)
    pdf.multi_cell(500, 13, body * 3)
    pdf.add_page()
    y = 60.0
    for heading in ("OVERVIEW", "LIQUIDITY AND CAPITAL RESOURCES", "PART IV"):
        pdf.set_font("helvetica", "B", 16)
        _placed(pdf, heading, y, track * 16)
        pdf.set_xy(40, y + 16)
        pdf.set_font("helvetica", size=10)
        pdf.multi_cell(500, 13, body * 2)
        y = pdf.get_y() + 40
    return PdfConverter().convert(bytes(pdf.output()), "tracked.pdf").markdown


@pytest.mark.parametrize("track", [0.15, 0.3])
def test_converted_markdown_is_as_if_untracked(track: float) -> None:
    plain = _report(0.0)
    assert [line for line in plain.splitlines() if line.startswith("#")] == [
        "# OVERVIEW", "# LIQUIDITY AND CAPITAL RESOURCES", "# PART IV"]
    assert _report(track) == plain


def test_ordinary_and_justified_text_keep_their_spaces() -> None:
    # Words placed one by one (pdfium generates every space, as it does for many filings):
    # untracked, justified with wide word gaps, single-letter column labels, lone letters.
    pdf = FPDF(unit="pt")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 12)
    cases = [("NET SALES BY SEGMENT AND REGION", None),
             ("TOTAL NET REVENUE OF THE GROUP", 14.0),  # justified: wide word gaps
             ("SEGMENT A B C", None),
             ("A B C", 80.0),  # column labels
             ("I V X", None)]
    y = 40.0
    for text, gap in cases:
        _placed(pdf, text, y, 0.0, gap)
        y += 20
    for x, letter in ((40, "A"), (52.5, "B"), (68, "C")):  # unequal gaps: nothing alike
        pdf.text(x, y, letter)
    y += 20
    pdf.set_font("helvetica", size=10)
    sentence = "Plan B pays x and y to holders of class C shares"
    _placed(pdf, sentence, y, 0.0)
    assert _lines(bytes(pdf.output())) == [c[0] for c in cases] + ["A B C", sentence]


@pytest.mark.parametrize(("track", "word_gap"), [(2.4, 8.0), (2.4, 12.0), (4.0, 20.0)])
def test_tracked_and_justified_keeps_word_spaces(track: float, word_gap: float) -> None:
    pdf = FPDF(unit="pt")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 12)
    _placed(pdf, "TOTAL NET REVENUE OF THE GROUP", 40, track, word_gap)
    data = bytes(pdf.output())
    assert _pdfium_lines(data) != ["TOTAL NET REVENUE OF THE GROUP"]
    assert _lines(data) == ["TOTAL NET REVENUE OF THE GROUP"]
