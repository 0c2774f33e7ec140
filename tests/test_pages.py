"""PDF, HTML and Word files through the whole library: indexing, pages on every context,
page refs, citations with pages, PageIndex page fields, the CLI's ``convert`` and ``tree``,
incremental re-conversion, and bad files as warnings that never cost the index."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from proxy_pointer.cli import main
from proxy_pointer.convert import convert_file, converter_for, converter_id
from proxy_pointer.documents import CONVERTED_SUFFIXES
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import NotFoundError
from proxy_pointer.index import Index, update_directory
from proxy_pointer.llm import ScriptedLLM
from proxy_pointer.parse.tree import build_tree
from proxy_pointer.serve.service import Service
from proxy_pointer.text.pages import page_of, page_span

fpdf = pytest.importorskip("fpdf")

# page -> (heading or None, body paragraphs); a known sentence per page.
PAGES = [
    ("PART I", ["Widgets are made in the northern plant, which opened in 1998 and employs "
                "four hundred people making brass widgets for harbour cranes."]),
    ("Item 1. Business", ["The company sells brass widgets to crane makers in twelve countries "
                          "and to shipyards along the coast."]),
    ("Item 1A. Risk Factors", ["Floods at the northern plant could stop widget output for "
                               "months, because the plant lies below the river dike."]),
    (None, ["The flood insurance covers only half of the lost output, and the insurer may "
            "cancel the policy after a second claim."]),
    ("Item 7. Management's Discussion", ["Revenue grew twelve percent to 410 million dollars, "
                                         "led by crane widgets sold in Norway."]),
]


def make_pdf(path: Path, pages=PAGES, *, extra: str = "") -> Path:
    """A PDF with one numbered heading (big, bold) and body text per page, and a running
    footer with the page number, so page boundaries are known."""
    pdf = fpdf.FPDF()
    pdf.set_auto_page_break(False)
    for n, (heading, paras) in enumerate(pages, 1):
        pdf.add_page()
        pdf.set_font("helvetica", size=8)
        pdf.set_xy(10, 285)
        pdf.cell(0, 5, f"Acme Widgets Annual Report  {n}")
        pdf.set_xy(10, 20)
        if heading:
            pdf.set_font("helvetica", "B", 16)
            pdf.cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
        pdf.set_font("helvetica", size=10)
        for para in paras + ([extra] if extra and n == len(pages) else []):
            pdf.multi_cell(0, 5, para, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    pdf.output(str(path))
    return path


def _page_of_text(text: str, needle: str, starts: tuple[int, ...]) -> int | None:
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return page_of(starts, n)
    return None


@pytest.fixture
def pdf_docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "report.pdf")
    (docs / "notes.md").write_text("# Notes\n\nMarkdown notes about widget paint colours.\n")
    return docs


def test_every_converted_suffix_has_a_converter() -> None:
    for suffix in CONVERTED_SUFFIXES:
        conv = converter_for("x" + suffix.upper())
        assert conv is not None and suffix in conv.suffixes
        assert converter_id(conv).startswith(conv.name + "/")
    assert converter_for("x.md") is None


def test_page_map_helpers() -> None:
    starts = (1, 1, 5, 9)  # page 1 holds no line
    assert [page_of(starts, n) for n in (1, 4, 5, 8, 9, 30)] == [2, 2, 3, 3, 4, 4]
    assert page_span(starts, 3, 9) == (2, 4)
    assert page_span((), 1, 3) is None


def test_converted_pdf_maps_every_known_sentence_to_its_page(pdf_docs: Path) -> None:
    conv = convert_file(pdf_docs / "report.pdf")
    assert conv.pages == len(PAGES)
    for n, (_, paras) in enumerate(PAGES, 1):
        assert _page_of_text(conv.markdown, paras[0][:30], conv.page_starts) == n
    assert "Annual Report  3" not in conv.markdown  # the running footer is gone


def test_index_carries_pages_to_every_context_ref_and_citation(pdf_docs: Path,
                                                               tmp_path: Path) -> None:
    idx, rep = update_directory(tmp_path / "idx", [pdf_docs], embedder=HashEmbedder(64))
    assert sorted(rep.added) == ["notes.md", "report.pdf"] and not rep.skipped
    rec = idx.reader.documents["report.pdf"]
    assert len(rec.pages) == len(PAGES) and rec.converter == converter_id(
        converter_for("report.pdf"))  # type: ignore[arg-type]
    assert idx.reader.documents["notes.md"].pages == ()

    res = idx.retrieve("flood insurance policy claim", budget=4000, k=8)
    s = next(x for x in res.sections if "insurer" in x.text)
    assert s.doc_id == "report.pdf" and s.pages is not None and s.pages[0] <= 4 <= s.pages[1]
    assert "insurer" in s.text
    # Every section of the PDF has pages, and they agree with its lines.
    for sec in res.sections:
        if sec.doc_id == "report.pdf":
            assert sec.pages == page_span(rec.pages, sec.start_line, sec.end_line)
        else:
            assert sec.pages is None
    payload = res.to_dict()
    assert all(("pages" in c) for c in payload["contexts"])

    # A page ref opens exactly that page's lines.
    page4 = idx.section("report.pdf#p4")
    assert "insurer may cancel" in page4.text.replace("\n", " ")
    assert "Revenue grew" not in page4.text and page4.pages == (4, 4)
    with pytest.raises(NotFoundError, match="has 5 pages"):
        idx.section("report.pdf#p9")
    with pytest.raises(NotFoundError, match="no pages"):
        idx.section("notes.md#p1")

    # A citation of the section's lines gets their pages, and prints them.
    line = next(n for n in range(s.start_line, s.end_line + 1)
                if "insurer" in idx.reader.text("report.pdf").splitlines()[n - 1])
    llm = ScriptedLLM(f"Only half is covered [{s.ref}, line {line}].")
    answer = idx.ask("flood insurance policy claim", llm, budget=4000, k=8)
    assert answer.grounded
    (cit,) = answer.citations
    assert cit.pages == (4, 4)
    assert str(cit) == f"[{s.ref}, p. 4]"
    assert answer.to_dict()["citations"][0]["pages"] == [4, 4]
    assert 'pages="' in llm.calls[0][0] or 'page="' in llm.calls[0][0]


def test_service_outline_and_documents_show_pages(pdf_docs: Path, tmp_path: Path) -> None:
    update_directory(tmp_path / "idx", [pdf_docs], embedder=HashEmbedder(64))
    svc = Service(tmp_path / "idx")
    docs = {d["doc_id"]: d for d in svc.documents()}
    assert docs["report.pdf"]["pages"] == 5 and docs["report.pdf"]["converter"]
    assert docs["notes.md"]["pages"] is None
    # a PDF's format is "pdf", whatever its card says it is (10-K, ...)
    assert (docs["report.pdf"]["format"], docs["notes.md"]["format"]) == ("pdf", "markdown")
    outline = svc.outline("report.pdf")
    assert outline["nodes"] and all(n["pages"] is not None for n in outline["nodes"])
    assert svc.section_by_ref("report.pdf#p2")["pages"] == [2, 2]


def test_pageindex_tree_has_start_and_end_index(pdf_docs: Path) -> None:
    conv = convert_file(pdf_docs / "report.pdf")
    tree = build_tree(conv.markdown, doc_id="report.pdf")
    out = tree.to_pageindex(pages=conv.page_starts)

    def walk(nodes):
        for n in nodes:
            yield n
            yield from walk(n.get("nodes", []))

    nodes = list(walk(out["structure"]))
    assert nodes and all(1 <= n["start_index"] <= n["end_index"] <= 5 for n in nodes)
    risk = next(n for n in nodes if "Risk" in n["title"])
    assert (risk["start_index"], risk["end_index"]) == (3, 4)  # runs on over page 4
    assert "start_index" not in json.dumps(build_tree("# A\n\ntext\n").to_pageindex())


@dataclass
class _Out:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    def run(*args: str, cwd: Path) -> _Out:
        monkeypatch.chdir(cwd)
        code = main(list(args))
        out = capsys.readouterr()
        return _Out(code, out.out, out.err)
    return run


def test_cli_convert_and_tree(pdf_docs: Path, cli) -> None:
    _cli = cli
    out = _cli("convert", "report.pdf", cwd=pdf_docs)
    assert out.returncode == 0, out.stderr
    marks = [line for line in out.stdout.splitlines() if line.startswith("<!-- page ")]
    assert marks == [f"<!-- page {n} -->" for n in range(1, 6)]
    plain = _cli("convert", "report.pdf", "--no-pages", cwd=pdf_docs)
    assert "<!-- page" not in plain.stdout and "Floods at the northern plant" in plain.stdout
    tree = _cli("tree", "report.pdf", cwd=pdf_docs)
    assert tree.returncode == 0 and "Risk Factors" in tree.stdout and "p. 3-4" in tree.stdout
    pi = _cli("tree", "report.pdf", "--format", "pageindex", cwd=pdf_docs)
    assert '"start_index"' in pi.stdout
    bad = _cli("convert", "notes.md", cwd=pdf_docs)
    assert bad.returncode != 0 and "notes.md" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_reconversion_on_new_bytes_or_converter_version(pdf_docs: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    loc = tmp_path / "idx"
    update_directory(loc, [pdf_docs], embedder=HashEmbedder(64))
    _, rep = update_directory(loc, [pdf_docs], embedder=HashEmbedder(64))
    assert sorted(rep.unchanged) == ["notes.md", "report.pdf"]

    make_pdf(pdf_docs / "report.pdf", extra="Dividends rose to two dollars a share.")
    idx, rep = update_directory(loc, [pdf_docs], embedder=HashEmbedder(64))
    assert rep.updated == ("report.pdf",) and rep.unchanged == ("notes.md",)
    assert "Dividends rose" in idx.reader.text("report.pdf")

    conv = converter_for("report.pdf")
    assert conv is not None
    monkeypatch.setattr(conv, "version", conv.version + "-next")
    idx, rep = update_directory(loc, [pdf_docs], embedder=HashEmbedder(64))
    assert rep.updated == ("report.pdf",)
    assert idx.reader.documents["report.pdf"].converter.endswith("-next")


def _bad_files(docs: Path) -> dict[str, str]:
    """name -> what the skip message must say."""
    good = make_pdf(docs / "tmp.pdf").read_bytes()
    (docs / "tmp.pdf").unlink()
    (docs / "truncated.pdf").write_bytes(good[: len(good) // 2])
    (docs / "garbage.pdf").write_bytes(b"this is not a PDF at all\n" * 20)
    (docs / "notzip.docx").write_bytes(b"plain text pretending to be Word")
    scanned = fpdf.FPDF()
    scanned.add_page()
    scanned.rect(20, 20, 100, 60, style="F")
    scanned.output(str(docs / "scanned.pdf"))
    locked = fpdf.FPDF()
    locked.set_encryption(owner_password="owner", user_password="secret")
    locked.add_page()
    locked.set_font("helvetica", size=12)
    locked.cell(0, 10, "Secret widget prices")
    locked.output(str(docs / "locked.pdf"))
    return {"truncated.pdf": "", "garbage.pdf": "", "notzip.docx": "zip",
            "scanned.pdf": "text layer", "locked.pdf": "password"}


def test_bad_files_are_skipped_with_their_names_and_the_index_survives(
        pdf_docs: Path, tmp_path: Path) -> None:
    loc = tmp_path / "idx"
    update_directory(loc, [pdf_docs], embedder=HashEmbedder(64))
    expected = _bad_files(pdf_docs)
    idx, rep = update_directory(loc, [pdf_docs], embedder=HashEmbedder(64))
    assert sorted(rep.unchanged) == ["notes.md", "report.pdf"]
    skipped = {Path(s.split(":", 1)[0]).name: s for s in rep.skipped}
    assert sorted(skipped) == sorted(expected)
    for name, words in expected.items():
        assert str(pdf_docs / name) in skipped[name]
        assert words.lower() in skipped[name].lower()
    assert "report.pdf" in idx.reader.documents and not set(expected) & set(idx.reader.documents)

    # A PDF that was indexed and then got corrupted keeps its last good version.
    (pdf_docs / "report.pdf").write_bytes(b"%PDF-1.7\n%broken")
    idx, rep = update_directory(loc, [pdf_docs], embedder=HashEmbedder(64), prune=True)
    assert any("report.pdf" in s for s in rep.skipped)
    assert "Floods at the northern plant" in idx.reader.text("report.pdf").replace("\n", " ")


def test_bad_files_through_the_cli_are_one_line_errors(pdf_docs: Path, cli) -> None:
    _cli = cli
    _bad_files(pdf_docs)
    for name in ("garbage.pdf", "notzip.docx", "scanned.pdf", "locked.pdf"):
        out = _cli("tree", name, cwd=pdf_docs)
        assert out.returncode != 0
        assert name in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_docx_and_html_index_beside_markdown(pdf_docs: Path, tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.add_heading("Maintenance Manual", level=1)
    d.add_heading("Greasing the winch", level=2)
    d.add_paragraph("Grease the winch bearings every forty hours of running.")
    d.save(str(pdf_docs / "manual.docx"))
    (pdf_docs / "page.html").write_text(
        "<html><head><title>Harbour guide</title></head><body><h1>Harbour guide</h1>"
        "<h2>Tides</h2><p>Ships over ten metres enter only at high tide.</p></body></html>")
    idx, rep = update_directory(tmp_path / "idx", [pdf_docs], embedder=HashEmbedder(64))
    assert {"manual.docx", "page.html"} <= set(rep.added)
    res = idx.retrieve("winch bearings grease hours", budget=500, k=1,
                       doc_ids=["manual.docx"])
    (s,) = res.sections
    assert s.title == "Greasing the winch" and "forty hours" in s.text
    assert idx.reader.documents["page.html"].converter.startswith("html/")


@pytest.mark.parametrize("workers", [0, 2])
def test_conversion_runs_where_parsing_runs(pdf_docs: Path, tmp_path: Path,
                                            workers: int) -> None:
    idx = Index(embedder=HashEmbedder(64))
    rep = idx.update([pdf_docs], workers=workers)
    assert "report.pdf" in rep.added and rep.timings["convert"] > 0
    assert len(idx.reader.documents["report.pdf"].pages) == 5


def test_batch_query_contexts_carry_pages(pdf_docs: Path, tmp_path: Path, cli) -> None:
    update_directory(tmp_path / "idx", [pdf_docs], embedder=HashEmbedder(64))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "flood insurance insurer",
                                     "doc_id": "report"}) + "\n")
    out = tmp_path / "out.jsonl"
    res = cli("query", "--index", str(tmp_path / "idx"), "--questions", str(questions),
              "--output", str(out), "--per-doc", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["contexts"] and all(c["doc_id"] == "report.pdf" for c in row["contexts"])
    assert all(c["pages"] and c["ref"].startswith("report.pdf#") for c in row["contexts"])


def test_a_trimmed_sections_pages_are_those_its_text_came_from(tmp_path: Path) -> None:
    filler = ("The committee met in the boardroom and reviewed routine matters of the "
              "quarter, including staffing, travel and the cafeteria contract. ") * 6
    pages = [("Item 9. Minutes", [filler]),
             (None, ["Lighthouse lenses were polished with walnut oil on this page.", filler]),
             (None, [filler]), (None, [filler])]
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "minutes.pdf", pages)
    idx, _ = update_directory(tmp_path / "idx", [docs], embedder=HashEmbedder(64))
    whole = idx.retrieve("lighthouse lenses polished walnut oil", budget=4000, k=1)
    assert whole.sections[0].pages == (1, 4) and not whole.sections[0].trimmed
    res = idx.retrieve("lighthouse lenses polished walnut oil", budget=120, k=1)
    (s,) = res.sections
    assert s.trimmed and "walnut oil" in s.text
    assert s.pages is not None and s.pages[0] == 1 and s.pages[1] == 2


def test_a_page_without_text_is_a_warning_not_a_skip(tmp_path: Path, cli) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    pdf = fpdf.FPDF()
    for n in range(3):
        pdf.add_page()
        if n == 1:
            pdf.rect(20, 20, 100, 60, style="F")  # a scanned page: an image, no text
            continue
        pdf.set_font("helvetica", size=11)
        pdf.multi_cell(0, 6, f"Page {n + 1} tells of harbour cranes and brass widgets.")
    pdf.output(str(docs / "mixed.pdf"))
    idx, rep = update_directory(tmp_path / "idx", [docs], embedder=HashEmbedder(64))
    assert rep.added == ("mixed.pdf",) and not rep.skipped
    (note,) = rep.warnings
    assert "mixed.pdf" in note and "2" in note and "text" in note
    assert idx.section("mixed.pdf#p3").text.startswith("Page 3")
    out = cli("index", str(docs), "--index", str(tmp_path / "idx2"), "--embedder", "hash:64",
              "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)
    assert out.returncode == 0 and f"warning: {note}" in out.stderr
