"""HTML and Word converters: headings and levels, tables, lists, pages, bad files."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE
from docx.enum.text import WD_BREAK
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from proxy_pointer.convert import ConversionError, Converted, convert_file, converter_for
from proxy_pointer.convert.docx import DocxConverter
from proxy_pointer.convert.html import HtmlConverter
from proxy_pointer.parse.tree import build_tree


def html(body: str, head: str = "") -> bytes:
    return f"<html><head>{head}</head><body>{body}</body></html>".encode()


def outline(conv: Converted) -> list[tuple[int, str]]:
    """(level, title) of every heading the tree finds in the converted Markdown."""
    return [(n.level, n.title) for n in build_tree(conv.markdown).heading_nodes]


def to_html(body: str, head: str = "") -> Converted:
    return HtmlConverter().convert(html(body, head), "page.html")


# --- HTML -------------------------------------------------------------------------------------
def test_html_heading_tags_keep_their_levels() -> None:
    conv = to_html("<h1>Guide</h1><p>Intro text.</p><h2>Setup</h2><p>Install <b>it</b>.</p>"
                   "<h3>Linux</h3><p>apt</p><h2>Use</h2><p>run</p>",
                   head="<title>Ignored when h1 exists</title>")
    assert outline(conv) == [(1, "Guide"), (2, "Setup"), (3, "Linux"), (2, "Use")]
    assert build_tree(conv.markdown).title == "Guide"
    assert "Install it." in conv.markdown
    assert conv.page_starts == () and conv.pages == 0
    assert conv.markdown.endswith("\n") and "\n\n\n" not in conv.markdown


def test_html_title_is_level_one_only_without_h1() -> None:
    conv = to_html("<h2>Part</h2><p>x</p>", head="<title>The Doc</title>")
    assert outline(conv) == [(1, "The Doc"), (2, "Part")]


def test_html_bold_is_not_a_heading_when_the_page_has_heading_tags() -> None:
    conv = to_html("<h1>Doc</h1><p><b>Just emphasis</b></p><p>text</p>")
    assert outline(conv) == [(1, "Doc")]


def test_bold_numbered_blocks_are_headings_under_heading_tags_too() -> None:
    conv = to_html("<h1>Acme Corp Annual Report</h1><p>Cover text.</p>"
                   "<p><b>PART II</b></p><div style='font-weight:700'>Item 7. Management's "
                   "Discussion and Analysis</div><p>We grew.</p><p><b>Note 3 Revenue</b></p>"
                   "<p>Revenue text.</p><table><tr><td>Line</td><td>Total</td></tr>"
                   "<tr><td><b>Note 4 Leases</b></td><td>5</td></tr></table>"
                   "<p><b>Item 8. Financial Statements</b></p><p>t</p><p><b>PART III</b></p>")
    assert outline(conv) == [(1, "Acme Corp Annual Report"), (2, "PART II"),
                             (3, "Item 7. Management's Discussion and Analysis"),
                             (4, "Note 3 Revenue"), (3, "Item 8. Financial Statements"),
                             (2, "PART III")]
    assert "| Note 4 Leases | 5 |" in conv.markdown  # a table cell stays a cell


def test_bold_numbered_blocks_nest_under_the_numbered_tag_of_a_higher_rank() -> None:
    conv = to_html("<h2>PART II</h2><p><b>Item 7. Results</b></p><p>t</p>"
                   "<p><b>Note 3 Revenue</b></p><p>t</p><h2>PART III</h2>"
                   "<p><b>Item 10. Directors</b></p><p>t</p>", head="<title>acme-10k</title>")
    assert outline(conv) == [(1, "acme-10k"), (2, "PART II"), (3, "Item 7. Results"),
                             (4, "Note 3 Revenue"), (2, "PART III"), (3, "Item 10. Directors")]
    # A rank above the tagged one counts up from the tag: PART over <h2> items.
    conv = to_html("<h2>Item 7. Results</h2><p>t</p><p><b>PART III</b></p>"
                   "<h2>Item 10. Directors</h2><p><b>Note 3 Revenue</b></p><p>t</p>")
    assert outline(conv) == [(2, "Item 7. Results"), (1, "PART III"), (2, "Item 10. Directors"),
                             (3, "Note 3 Revenue")]


def test_bold_emphasis_stays_a_paragraph_on_a_page_with_heading_tags() -> None:
    body = ("<h1>User Guide</h1><h2>Install</h2><p><b>Note:</b></p><p>Needs Python.</p>"
            "<p><strong>Warning</strong></p><p><b>Back up your data first</b></p>"
            "<h2>Configure</h2><p><b>Important information</b></p><p><b>RISK FACTORS</b></p>"
            "<p><b>Note: the defaults are safe.</b></p><p><b>Item 7. Topic</b></p><p>t</p>"
            "<h2>Contents</h2>" + "<p><b>Item 7. Topic</b></p>" * 5)
    conv = to_html(body)
    titles = [t for _, t in outline(conv)]
    assert titles == ["User Guide", "Install", "Configure", "Contents"]  # 6 repeats: running
    assert "Back up your data first" in conv.markdown and "RISK FACTORS" in conv.markdown


EDGAR = """
<div style="display:none"><ix:header><ix:hidden><ix:nonNumeric name="dei:Secret">
HIDDEN XBRL FACT</ix:nonNumeric></ix:hidden></ix:header></div>
<p style="text-align:center"><span style="font-weight:bold">PART I</span></p>
<div><span style="font-weight:700;font-family:Arial">Item 1.</span>
     <span style="font-weight:700"> Business</span></div>
<div><span>We design <b>widgets</b> and sell them worldwide.</span></div>
<div><b>Competition</b></div>
<div><span>Markets are competitive.</span></div>
<p style="text-align:center">12</p>
<hr style="page-break-after:always"/>
<div><strong>Item 1A. Risk Factors</strong></div>
<div><b>This whole sentence is bold, and it says something important to investors.</b></div>
<table><tr><td><b>Year</b></td><td><b>Total</b></td></tr><tr><td>2023</td><td>5</td></tr></table>
<div><b>(in millions)</b></div>
<div style="font-weight:bold">Note 1 &#8212; Summary of Policies</div>
<div>Policies text.</div>
"""


def test_edgar_bold_blocks_become_headings_levelled_by_numbering() -> None:
    conv = to_html(EDGAR)
    assert outline(conv) == [(1, "PART I"), (2, "Item 1. Business"), (3, "Competition"),
                             (2, "Item 1A. Risk Factors"), (3, "Note 1 — Summary of Policies")]
    md = conv.markdown
    assert "HIDDEN XBRL FACT" not in md
    assert "We design widgets and sell them worldwide." in md
    assert "This whole sentence is bold" in md  # a paragraph, not a heading
    assert "\n12\n" not in md  # the page number before the page break
    assert "| Year | Total |" in md


def test_edgar_title_sits_above_recovered_headings() -> None:
    conv = to_html(EDGAR, head="<title>acme-10k</title>")
    assert outline(conv)[:3] == [(1, "acme-10k"), (2, "PART I"), (3, "Item 1. Business")]


def test_unnumbered_mixed_case_headings_go_under_upper_case_ones() -> None:
    conv = to_html("<p><b>RISK FACTORS</b></p><p><b>Market Risks</b></p><p>t</p>"
                   "<p><b>USE OF PROCEEDS</b></p><p>t</p>")
    assert outline(conv) == [(1, "RISK FACTORS"), (2, "Market Risks"), (1, "USE OF PROCEEDS")]


def test_running_footers_at_page_breaks_are_dropped() -> None:
    page = "<p><b>Item {0}. Topic</b></p><p>Text {0}.</p><p>Acme Corp | 2024 Form 10-K | {0}</p>"
    body = "<hr style='page-break-after:always'>".join(page.format(i) for i in range(1, 5))
    md = to_html(body).markdown
    assert "Acme Corp" not in md and "Text 4." in md


def test_repeated_bold_line_is_a_running_header_not_a_heading() -> None:
    body = "".join(f"<p><b>Table of Contents</b></p><p><b>Item {i}. Topic</b></p><p>t</p>"
                   for i in range(8))
    titles = [t for _, t in outline(to_html(body))]
    assert "Table of Contents" not in titles and "Item 7. Topic" in titles


def test_contents_lines_are_not_headings() -> None:
    conv = to_html("<p><b>Item 1. Business 3</b></p><p><b>Item 1A. Risk Factors ..... 12</b></p>"
                   "<p><b>Note 12</b></p><p><b>Appendix 2</b></p>")
    assert outline(conv) == [(2, "Note 12"), (1, "Appendix 2")]  # appendix outranks note


def test_html_table_becomes_pipe_table() -> None:
    conv = to_html("""
    <table>
      <thead><tr><th>Segment</th><th></th><th colspan="2">2023</th><th></th>
                 <th colspan="2">2022</th></tr></thead>
      <tr><td>Cloud | AI</td><td></td><td>$</td><td>1,234</td><td></td><td>$</td>
          <td>1,000</td></tr>
      <tr><td>Devices</td><td></td><td></td><td>(56</td><td>)</td><td></td><td>70</td></tr>
      <tr><td></td><td></td><td></td><td></td><td></td><td></td><td></td></tr>
    </table>""")
    table = [line for line in conv.markdown.splitlines() if line.startswith("|")]
    assert table == ["| Segment | 2023 | 2022 |",
                     "| --- | --- | --- |",
                     "| Cloud \\| AI | $1,234 | $1,000 |",
                     "| Devices | (56) | 70 |"]


def test_layout_tables_become_paragraphs_and_lists() -> None:
    conv = to_html("<table><tr><td>&#8226;</td><td>first point</td></tr>"
                   "<tr><td>&#8226;</td><td>second point</td></tr></table>"
                   "<table><tr><td>Only one cell</td></tr></table>")
    assert "- first point\n- second point\n\nOnly one cell\n" in conv.markdown


def test_html_lists() -> None:
    conv = to_html("<ul><li>apples</li><li>pears<ul><li>green</li></ul></li></ul>"
                   "<p>between</p><ol><li>one</li><li><p>two</p></li></ol>")
    assert "- apples\n- pears\n  - green\n\nbetween\n\n1. one\n2. two\n" in conv.markdown


def test_scripts_styles_and_hidden_elements_are_dropped() -> None:
    conv = to_html("<script>var secret = 1;</script><style>p { color: red }</style>"
                   "<noscript>enable js</noscript><template><p>tpl</p></template>"
                   "<nav><a href='/'>Home</a></nav><p hidden>gone</p>"
                   "<p>Visible <span style='DISPLAY: none'>not this</span>text</p>",
                   head="<style>.x{}</style><script>alert(1)</script>")
    assert conv.markdown == "Visible text\n"


def test_markdown_lookalike_text_stays_a_paragraph() -> None:
    conv = to_html("<h1>Doc</h1><p># of shares</p><p>- 5%</p><p>1. not a list</p>"
                   "<p>&lt;div&gt; literal</p>")
    assert outline(conv) == [(1, "Doc")]
    assert "\\# of shares" in conv.markdown and "1\\. not a list" in conv.markdown


def test_charset_from_meta_windows_1252() -> None:
    page = ('<html><head><meta http-equiv="Content-Type" content="text/html; '
            'charset=windows-1252"></head><body><p>Caf\xe9 \u201cquoted\u201d \u20ac5</p>'
            '</body></html>').encode("cp1252")
    assert HtmlConverter().convert(page, "old.htm").markdown == "Café “quoted” €5\n"


def test_charset_bom_and_bad_bytes() -> None:
    utf16 = "\ufeff<p>naïve</p>".encode("utf-16-le")
    assert HtmlConverter().convert(utf16, "a.html").markdown == "naïve\n"
    bad = b"<p>ok \xff\xfe\x00 caf\xc3\xa9</p>"  # UTF-8 with stray bytes and a NUL
    md = HtmlConverter().convert(bad, "b.html").markdown
    assert md.startswith("ok ") and "café" in md
    legacy = b"<p>na\xefve</p>"  # no declaration, no UTF-8 sequence: windows-1252
    assert HtmlConverter().convert(legacy, "c.html").markdown == "naïve\n"


@pytest.mark.parametrize("data", [b"", b"   \n", b"<html><head><title></title></head></html>",
                                  b"<script>x()</script>", b"\x00\x01\x02"])
def test_html_without_text_is_an_error_naming_the_file(data: bytes) -> None:
    with pytest.raises(ConversionError, match=r"^empty\.html: has no text"):
        HtmlConverter().convert(data, "empty.html")


def test_html_through_registry_and_file(tmp_path: Path) -> None:
    path = tmp_path / "page.htm"
    path.write_bytes(html("<h1>A</h1><p>b</p>"))
    conv = converter_for(str(path))
    assert isinstance(conv, HtmlConverter) and (conv.name, conv.version) == ("html", "3")
    assert convert_file(path).markdown == "# A\n\nb\n"


# --- DOCX -------------------------------------------------------------------------------------
def docx_bytes(doc: docx.document.Document) -> bytes:
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def to_md(doc: docx.document.Document) -> Converted:
    return DocxConverter().convert(docx_bytes(doc), "report.docx")


def test_docx_heading_styles_give_levels() -> None:
    doc = docx.Document()
    doc.add_heading("Overview", level=1)
    doc.add_paragraph("Intro.")
    doc.add_heading("Scope", level=2)
    doc.add_heading("Details", level=3)
    doc.add_paragraph("Body text.")
    doc.add_heading("Results", level=1)
    conv = to_md(doc)
    assert outline(conv) == [(1, "Overview"), (2, "Scope"), (3, "Details"), (1, "Results")]
    assert conv.page_starts == ()


def test_docx_title_shifts_headings_only_when_there_is_a_heading_1() -> None:
    doc = docx.Document()
    doc.add_heading("Annual", level=0)  # the Title style
    doc.add_heading("Report", level=0)  # a title on two lines is one heading
    doc.add_heading("One", level=1)
    doc.add_heading("Two", level=2)
    assert outline(to_md(doc)) == [(1, "Annual Report"), (2, "One"), (3, "Two")]
    doc = docx.Document()
    doc.add_heading("Memo", level=0)
    doc.add_heading("Topic", level=2)
    assert outline(to_md(doc)) == [(1, "Memo"), (2, "Topic")]


def test_docx_custom_and_outline_level_styles() -> None:
    doc = docx.Document()
    custom = doc.styles.add_style("Chapter Head", WD_STYLE_TYPE.PARAGRAPH)
    custom.base_style = doc.styles["Heading 2"]
    outlined = doc.styles.add_style("Ueberschrift Eins", WD_STYLE_TYPE.PARAGRAPH)
    ppr = outlined.element.get_or_add_pPr()
    lvl = OxmlElement("w:outlineLvl")
    lvl.set(qn("w:val"), "0")
    ppr.append(lvl)
    doc.add_paragraph("Top", style="Ueberschrift Eins")
    doc.add_paragraph("Child", style="Chapter Head")
    doc.add_paragraph("text")
    assert outline(to_md(doc)) == [(1, "Top"), (2, "Child")]


def test_docx_without_heading_styles_recovers_bold_and_numbered_lines() -> None:
    doc = docx.Document()
    for text in ("PART I", "Item 1. Business", "Item 1A. Risk Factors", "Note 1 Basis"):
        doc.add_paragraph().add_run(text).bold = True
        doc.add_paragraph("Plain body text that runs on for a while.")
    doc.add_paragraph("Item 7. Management Discussion")  # numbered, not bold
    p = doc.add_paragraph("Mixed ")
    p.add_run("bold").bold = True
    assert outline(to_md(doc)) == [(1, "PART I"), (2, "Item 1. Business"),
                                   (2, "Item 1A. Risk Factors"), (3, "Note 1 Basis"),
                                   (2, "Item 7. Management Discussion")]


def test_docx_table_with_merged_cells() -> None:
    doc = docx.Document()
    doc.add_paragraph("Before.")
    table = doc.add_table(rows=3, cols=3)
    for c, text in enumerate(("Region", "2023", "2022")):
        table.cell(0, c).text = text
    table.cell(1, 0).merge(table.cell(1, 1)).text = "All regions"
    table.cell(1, 2).text = "a|b"
    for c, text in enumerate(("North", "1", "2")):
        table.cell(2, c).text = text
    doc.add_paragraph("After.")
    md = to_md(doc).markdown
    assert ("Before.\n\n| Region | 2023 | 2022 |\n| --- | --- | --- |\n"
            "| All regions |  | a\\|b |\n| North | 1 | 2 |\n\nAfter.\n") == md


def test_docx_lists() -> None:
    doc = docx.Document()
    doc.add_paragraph("Shopping:")
    doc.add_paragraph("milk", style="List Bullet")
    doc.add_paragraph("skimmed", style="List Bullet 2")
    doc.add_paragraph("bread", style="List Number")
    doc.add_paragraph("Done.")
    assert to_md(doc).markdown == "Shopping:\n\n- milk\n  - skimmed\n- bread\n\nDone.\n"


def test_docx_explicit_page_breaks_give_page_starts() -> None:
    doc = docx.Document()
    doc.add_heading("One", level=1)
    doc.add_paragraph("page one")
    doc.add_page_break()
    doc.add_heading("Two", level=1)
    p = doc.add_paragraph("still page two")
    p.add_run().add_break(WD_BREAK.PAGE)  # a break after text: page 3 starts at the next line
    doc.add_paragraph("page three")
    conv = to_md(doc)
    lines = conv.markdown.splitlines()
    assert conv.page_starts == (1, lines.index("# Two") + 1, lines.index("page three") + 1)
    assert conv.pages == 3


def test_docx_rendered_page_breaks_win_over_explicit_ones() -> None:
    doc = docx.Document()
    doc.add_paragraph("first")
    doc.add_page_break()
    second = doc.add_paragraph()
    second._p.append(OxmlElement("w:r"))
    second._p[-1].append(OxmlElement("w:lastRenderedPageBreak"))
    second.add_run("second")
    doc.add_paragraph("third")
    third = doc.paragraphs[-1]
    third.runs[0]._r.insert(0, OxmlElement("w:lastRenderedPageBreak"))
    conv = to_md(doc)
    assert conv.markdown == "first\n\nsecond\n\nthird\n"
    assert conv.page_starts == (1, 3, 5)  # two rendered breaks; the manual one not again


def test_docx_tracked_insertions_and_hyperlinks_keep_their_text() -> None:
    doc = docx.Document()
    p = doc.add_paragraph("Kept ")
    ins = OxmlElement("w:ins")
    run = OxmlElement("w:r")
    t = OxmlElement("w:t")
    t.text = "inserted"
    run.append(t)
    ins.append(run)
    p._p.append(ins)
    assert to_md(doc).markdown == "Kept inserted\n"


def _zip(**files: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name.replace("__", "/"), data)
    return buf.getvalue()


def test_docx_bad_files_raise_conversion_error_naming_the_file(tmp_path: Path) -> None:
    conv = converter_for("x.docx")
    assert isinstance(conv, DocxConverter) and conv.suffixes == (".docx",)
    good = docx_bytes(docx.Document())
    cases = {
        "text.docx": (b"plain text, no zip", "not a zip archive"),
        "old.docx": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500), "not a zip archive"),
        "sheet.docx": (_zip(xl__workbook_xml=b"<w/>"), "without word/document.xml"),
        "cut.docx": (good[: len(good) // 2], "damaged"),
        "empty.docx": (good, "has no text"),
    }
    for name, (data, problem) in cases.items():
        with pytest.raises(ConversionError, match=problem) as err:
            conv.convert(data, name)
        assert err.value.path == name
    path = tmp_path / "garbled.docx"
    with zipfile.ZipFile(io.BytesIO(good)) as src:
        parts = {i.filename: src.read(i.filename) for i in src.infolist()}
    parts["word/document.xml"] = parts["word/document.xml"][:200]
    with zipfile.ZipFile(path, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    with pytest.raises(ConversionError, match="damaged") as err:
        convert_file(path)
    assert err.value.path == str(path)


def test_mangled_bytes_never_raise_anything_else() -> None:
    good = docx_bytes(docx.Document())
    page = html(EDGAR)
    for k in range(0, 400, 7):
        for conv, data in ((DocxConverter(), good), (HtmlConverter(), page)):
            broken = bytearray(data)
            for j in range(k % 5 + 1):
                broken[(k * 131 + j * 977) % len(broken)] ^= 0x5A
            try:
                conv.convert(bytes(broken), "f")
            except ConversionError:
                pass


def test_html_nested_deeper_than_the_parser_keeps_is_read_and_said() -> None:
    from proxy_pointer.convert import convert_bytes

    deep = ("<html><body><h1>Top</h1>" + "<div><span>" * 1300 + "deep <b>text</b>"
            + "</span></div>" * 1300 + "<p>after the divs</p></body></html>")
    got = convert_bytes(deep.encode(), "deep.html")
    # libxml2 keeps 2,048 levels and drops the rest, the text after them too
    assert got.markdown == "# Top\n\ndeep text\n\nafter the divs\n"
    assert got.warnings == ("deep.html: HTML nested deeper than 2048 elements; its wrappers "
                            "(div, span, ...) were read as plain line breaks",)
    shallow = convert_bytes(b"<html><body><div><p>fine</p></div></body></html>", "ok.html")
    assert shallow.warnings == ()
