"""PDF to Markdown with pypdfium2 and heading recovery: :class:`PdfConverter`.

PDFs carry no structure, only positioned glyphs, so the tree comes from what the document
declares, then from layout:

* **Lines** are read and running headers and footers dropped by :mod:`.lines`; the page
  numbers the pages print are kept.
* **Outline.** With bookmarks the outline is the tree: each bookmark title is found on its
  page and takes the outline's depth.
* **Contents.** Without one, the document's contents pages are read
  (:mod:`.contents`): each entry's title is placed as a heading on the page it names,
  verified there, at the depth its indentation and numbering give; a financial
  statement's title over its table is a heading even where no entry names it. A contents
  page's own lines stay plain lines, never headings.
* **Layout** (:mod:`.layout`) finds the other headings (bigger or bolder short lines)
  and nests them below the contents' headings.
* **Body.** A paragraph's lines are joined (a hyphen at a line end is dropped when the next
  line starts lower-case); table rows stay one per line, and a table's header and label
  lines join its rows in one block (:mod:`.tables`). Paragraphs never cross pages, so
  :attr:`Converted.page_starts` is exact.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

from ...documents import CONVERTED_FORMATS
from ...text.rows import is_table_row
from ...vocab.keys import alnum
from ..base import ConversionError, Converted
from .contents import Placement, place_contents, place_statements
from .filing import shape_filing
from .layout import layout_headings
from .lines import BULLET, Line, Reader, drop_running_lines, is_toc_page, repair_ligatures
from .tables import group_tables

__all__ = ["PdfConverter", "count_pages"]

_MARKDOWN_START = re.compile(r"^(?:#|```|~~~|>|[-=_*\s]{3,}$)")
_HYPHENS = "-\u00ad\ufffe"


class PdfConverter:
    """PDF to Markdown (pypdfium2, layout-based headings); see the module docstring."""

    name = "pdf"
    version = "5"
    suffixes = CONVERTED_FORMATS["pdf:PdfConverter"]

    def convert(self, data: bytes, name: str, *,
                on_page: Callable[[], None] | None = None) -> Converted:
        """Convert a PDF's bytes; :class:`ConversionError` naming ``name`` for a PDF that is
        encrypted, damaged, not a PDF, or has no text layer at all. ``on_page`` is called
        after each page is read (progress)."""
        pages, outline = self._read(data, name, on_page)
        ligatures = repair_ligatures(pages)
        empty = [i + 1 for i, p in enumerate(pages) if not p]
        if len(empty) == len(pages):
            raise ConversionError(name, "has no text layer (a scanned PDF?); OCR is not "
                                  "available offline, so it is skipped")
        warnings = []
        if empty:
            warnings.append(f"{name}: page{'s' if len(empty) > 1 else ''} "
                            f"{_page_list(empty)} ha{'ve' if len(empty) > 1 else 's'} "
                            "no text layer (scanned?); "
                            f"{'their' if len(empty) > 1 else 'its'} text is missing")
        if ligatures:
            warnings.append(f"{name}: {ligatures} glyph{'s' * (ligatures > 1)} the PDF maps to "
                            "no text read as ligatures (fi, fl, ff, ffi, ffl)")
        printed = drop_running_lines(pages)
        toc = {i for i, p in enumerate(pages) if is_toc_page(p)}
        structure: tuple[tuple[str, int], ...] = ()
        if outline:
            pages = _outline_headings(pages, outline)
        else:
            placed = place_contents(pages, toc, printed)
            statements = place_statements(pages, placed.anchors)
            layout_headings(pages, toc, placed.anchors)
            shape_filing(pages, toc)
            if placed.missing:
                warnings.append(_missing_entries(name, placed))
            structure = (("contents_entries", placed.found + len(placed.missing)),
                         ("contents_found", placed.found), ("statements", statements))
        markdown, starts = _render(pages, toc)
        return Converted(markdown, starts, tuple(warnings), structure)

    def _read(self, data: bytes, name: str, on_page: Callable[[], None] | None = None
              ) -> tuple[list[list[Line]], list[tuple[int, str, int]]]:
        """Every page's lines (one page open at a time) and the outline as
        ``(depth, title, page)`` items."""
        if b"%PDF" not in data[:1024]:
            raise ConversionError(name, "is not a PDF (no %PDF header)")
        if b"%%EOF" not in data[-2048:]:  # pdfium would rebuild a partial file silently
            raise ConversionError(name, "is truncated (no %%EOF end marker); download it "
                                  "again")
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
                raise ConversionError(name, "is encrypted (needs a password); decrypt it "
                                      "first") from None
            raise ConversionError(name, f"cannot be read as a PDF (damaged or truncated?): "
                                  f"{exc}") from None
        try:
            reader = Reader()
            pages = []
            for i in range(len(pdf)):
                page = pdf[i]
                try:
                    pages.append(reader.lines(page, i))
                finally:
                    page.close()
                if on_page is not None:
                    on_page()
            return pages, _outline(pdf)
        except pdfium.PdfiumError as exc:
            raise ConversionError(name, f"cannot be read as a PDF (damaged?): {exc}") from None
        finally:
            pdf.close()


def count_pages(path: str) -> int | None:
    """The page count of the PDF at ``path``, or None where pdfium cannot open it."""
    try:
        pdf = pdfium.PdfDocument(path)
    except (pdfium.PdfiumError, OSError, ValueError):
        return None
    try:
        return len(pdf)
    finally:
        pdf.close()


def _outline(pdf: pdfium.PdfDocument) -> list[tuple[int, str, int]]:
    items = []
    try:
        for item in pdf.get_toc(max_depth=12):
            dest = item.get_dest()
            items.append((item.level, (item.get_title() or "").strip(),
                          dest.get_index() if dest is not None else None))
    except (pdfium.PdfiumError, ValueError, AttributeError):
        return []
    return [(lv, title, p) for lv, title, p in items if title and p is not None]


def _missing_entries(name: str, placed: Placement) -> str:
    """One warning line for the contents entries not found on the pages they name."""
    shown = "; ".join(f"{e.title[:60]!r} (p. {e.page})" for e in placed.missing[:5])
    more = f" and {len(placed.missing) - 5} more" if len(placed.missing) > 5 else ""
    total = placed.found + len(placed.missing)
    return (f"{name}: {len(placed.missing)} of {total} contents entries not found on the "
            f"page they name, left out of the headings: {shown}{more}")


def _page_list(pages: list[int]) -> str:
    return ", ".join(map(str, pages[:20])) + (f" and {len(pages) - 20} more"
                                             if len(pages) > 20 else "")



# --------------------------------------------------------------------------- outline

# a leading section number that bookmarks often leave out of their titles ("3.1 ", "A.2. ")
_UNNUMBERED = re.compile(r"^\s*(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?\s+")


def _outline_match(text: str, want: str) -> bool:
    """Whether a line is (the start of) a bookmark's title, also behind a section number."""
    for have in (alnum(text), alnum(_UNNUMBERED.sub("", text))):
        if have and (have == want or (want.startswith(have) and len(have) * 2 >= len(want))):
            return True
    return False


def _outline_headings(pages: list[list[Line]], outline: list[tuple[int, str, int]]
                      ) -> list[list[Line]]:
    """Mark each bookmark's title on its page as a heading at the outline's depth; a title
    not found there is inserted at the top of its page."""
    inserted: Counter[int] = Counter()
    for depth, title, p in outline:
        if not 0 <= p < len(pages):
            continue
        level, want = min(6, depth + 1), alnum(title)
        lines = pages[p]
        hit = next((k for k, ln in enumerate(lines) if not ln.heading and want
                    and _outline_match(ln.text, want)), None)
        if hit is None:
            top = lines[0].top if lines else 0.0
            lines.insert(inserted[p], Line(title, p, 0.0, True, top, top, level))
            inserted[p] += 1
            continue
        got = alnum(_UNNUMBERED.sub("", lines[hit].text))
        # "3.1 Invoking asn1Parser" for the bookmark "Invoking asn1Parser": keep the number
        numbered = got == want and alnum(lines[hit].text) != want
        lines[hit].text = lines[hit].text.strip() if numbered else title
        lines[hit].heading = level
        while hit + 1 < len(lines) and len(got) < len(want):
            nxt = alnum(lines[hit + 1].text)
            if not nxt or not want.startswith(got + nxt):
                break
            got += nxt
            del lines[hit + 1]
    return pages


# --------------------------------------------------------------------------- output

def _unhyphenate(text: str) -> str:
    """pdfium joins a word hyphenated over two lines with U+FFFE: drop it before a
    lower-case letter ("exam-ple"), keep a hyphen otherwise ("Covid-19")."""
    return re.sub("\ufffe(?![a-z])", "-", text).replace("\ufffe", "")


def _join(text: str, more: str) -> str:
    """Join a paragraph's next line, dropping a line-end hyphen before a lower-case word."""
    if text[-1] in _HYPHENS and len(text) > 1 and text[-2].isalpha() and more[0].islower():
        return text[:-1] + more
    return f"{text} {more}"


def _blocks(lines: list[Line], plain: bool) -> Iterator[tuple[str, list[str]]]:
    """A page's output blocks as ``(kind, lines)``: headings (``"heading"``), paragraphs of
    joined lines (``"para"``) and runs of table rows (``"rows"``)."""
    para: list[str] = []
    rows: list[str] = []
    prev: Line | None = None
    for ln in lines:
        text = _unhyphenate(ln.text)
        if not ln.heading and _MARKDOWN_START.match(text):
            text = "\\" + text  # "# Denotes ..." or "---" in body text is not markup
        if ln.heading:
            yield from _flush(para, rows)
            para, rows, prev = [], [], None
            yield "heading", ["#" * ln.heading + " " + text]
            continue
        if plain or is_table_row(text):
            if para:
                yield "para", para
                para = []
            rows.append(text)
            prev = None
            continue
        if rows:
            yield "rows", rows
            rows = []
        size = max(ln.size, prev.size, 1.0) if prev is not None else 0.0
        if (prev is not None and para and -0.5 * size < ln.top - prev.bottom <= 0.5 * size
                and not BULLET.match(text)):
            para[-1] = _join(para[-1], text)
        else:
            if para:
                yield "para", para
            para = [text]
        prev = ln
    yield from _flush(para, rows)


def _flush(para: list[str], rows: list[str]) -> Iterator[tuple[str, list[str]]]:
    """The open paragraph and run of rows, those that hold lines."""
    if para:
        yield "para", para
    if rows:
        yield "rows", rows


def _render(pages: list[list[Line]], toc: set[int]) -> tuple[str, tuple[int, ...]]:
    """The Markdown and the 1-based line where each page starts."""
    out: list[str] = []
    firsts: list[int | None] = []
    for p, lines in enumerate(pages):
        first = None
        blocks = _blocks(lines, p in toc)
        for block in (group_tables(blocks) if p not in toc else (b for _, b in blocks)):
            if out:
                out.append("")
            if first is None:
                first = len(out) + 1
            out.extend(block)
        firsts.append(first)
    starts: list[int] = []
    nxt = len(out) + 1
    for first in reversed(firsts):
        nxt = first if first is not None else nxt
        starts.append(nxt)
    starts.reverse()
    if starts:
        starts[0] = 1
    return "".join(line + "\n" for line in out), tuple(starts)
