"""PDF to Markdown with pypdfium2 and layout-based heading recovery: :class:`PdfConverter`.

PDFs carry no structure, only positioned glyphs, so headings are recovered from layout:

* **Lines.** Each page's text is read once (``FPDFText_GetText``); for every line only its
  first and last glyph are sampled (box, font name, weight), which keeps the converter at
  hundreds of pages a second. Pages are opened and closed one at a time; only lines are kept.
* **Noise.** Lines that repeat at the top or bottom of many pages (digits ignored, so "Page
  3 of 90" repeats) and lone page numbers there are running headers and footers: dropped.
* **Contents pages.** A page dominated by lines ending in a page number, or titled
  "Contents", is a table of contents: its lines stay as plain lines, never headings.
* **Headings.** With an outline (bookmarks) the outline is the tree: each bookmark title is
  found on its page and takes the outline's depth. Without one, a heading is a short line,
  bigger or bolder than the body text, that does not end in an amount, is not a table row and
  does not lead into one. Its level comes from numbering first (``PART`` > ``Item`` > ``Note``,
  ``1`` > ``1.1``, see :mod:`.numbering`), then from prominence (size, weight): unnumbered
  headings nest under the numbered heading they follow.
* **Title.** On the first page only the largest line (if clearly larger than the body) may
  become a heading, so a cover page full of large lines gives one title, not dozens.
* **Body.** A paragraph's lines are joined (a hyphen at a line end is dropped when the next
  line starts lower-case); table rows stay one per line. Paragraphs never cross pages, so
  :attr:`Converted.page_starts` is exact.
"""

from __future__ import annotations

import ctypes
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

from ..documents import CONVERTED_FORMATS
from .base import ConversionError, Converted
from .numbering import numbering_rank

__all__ = ["PdfConverter"]

_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|,b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![A-Za-z])\(?\$?\d[\d,.]*\)?%?(?![A-Za-z])")
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?[-–—]?\s*(?:\d{1,4}|[ivxlc]{1,7})\s*[-–—]?"
                          r"(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_PAGE_REF = re.compile(r"(?:\s*\.{2,}\s*|\s+)(?:\d{1,4}|[ivxlc]{1,6})$")
_TOC_TITLE = re.compile(r"^(?:table\s+of\s+)?contents$|^index$", re.IGNORECASE)
_NUMBERING_ONLY = re.compile(r"^(?:PART|Part|ITEM|Item|NOTE|Note|SECTION|Section|CHAPTER|"
                             r"Chapter)\s+[\dIVXLC]+[A-Z]?\.?$")
_YEAR_END = re.compile(r"[A-Za-z]\s+(?:19|20)\d\d$")
_CONNECTOR_END = re.compile(r"(?:\b(?:and|or|of|the|to|for|in|on|with|by|a|an)|[,&\-–—])$",
                            re.IGNORECASE)
_CONNECTOR_START = re.compile(r"^(?:and|or|of|the|to|for|in|on|with|by)\b", re.IGNORECASE)
# "Section 409A of the Code", "Note 16 to the ...": a cross-reference, not a heading
_REFERENCE = re.compile(r"^\S+\s+[\w.()]+\s+(?:of|to|and|or|the|in|for|as|under|pursuant|"
                        r"shall|will|is|are|was|were|has|have)\b")
_RUN_IN = re.compile(r"\.\s+[A-Z][a-z]+\s+\w+")  # "1.2 Term. The Plan ...": text runs on
_MARKDOWN_START = re.compile(r"^(?:#|```|~~~|>|[-=_*\s]{3,}$)")
_BULLET = re.compile(r"^(?:[•▪●◦\-–*]|\(?[a-z0-9]{1,3}\)|\d{1,2}\.)\s")
_CELL = re.compile(r"^(?:\(?\$?\d[\d,.]*\)?%?|[-–—]+|n/?m|n/?a)$", re.IGNORECASE)
_CURRENCY = {"$", "€", "£", "%"}
_HYPHENS = "-\u00ad\ufffe"
WRAP_EMS = 8  # a line ending this many ems short of the page's right margin did not wrap
_EDGE = 3  # lines at the top and bottom of a page that may be running headers/footers
# Sensitivity on the nine FinanceBench filings: benchmarks/results/convert-pdf-sensitivity.md.
HEADING_SIZE = 1.15  # glyph height over the body's from which a line is "bigger"
TITLE_SIZE = 1.3  # ... from which the first page's largest line is the document's title
RUNNING_SHARE = 0.2  # share of text pages (and at least 3) an edge line repeats on to be noise


@dataclass(slots=True)
class _Line:
    """One text line of a page. Positions in points from the page's top-left corner."""

    text: str
    page: int  # 0-based
    size: float  # height of the first glyph's loose box: the effective font size
    bold: bool  # first and last glyph in a bold font
    top: float
    bottom: float
    heading: int = 0  # Markdown level once chosen as a heading
    right: float = 0.0  # right edge of the last glyph: a wrapped line reaches the margin


@dataclass(frozen=True, slots=True)
class _Style:
    """What a layout heading looks like; ``rank`` is its numbering rank, if numbered."""

    size: float
    bold: bool
    rank: int | None


def _norm(text: str) -> str:
    """A line's key for spotting repeats: lower case, digits as ``#``, spaces collapsed."""
    return " ".join(re.sub(r"\d+", "#", text.lower()).split())


def _alnum(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", text.lower())


def _numbers(text: str) -> int:
    return len(_NUMBER.findall(text))


def _is_table_row(text: str) -> bool:
    """A line ending in two numbers (or dashes), or mostly numbers: a table row."""
    tokens = [t for t in text.split() if t not in _CURRENCY]
    if len(tokens) >= 2 and all(_CELL.match(t) for t in tokens[-2:]):
        return True
    n = _numbers(text)
    return n >= 2 and 3 * n >= len(tokens)


class _Reader:
    """Reads one page's lines through pypdfium2's raw API, reusing its buffers."""

    def __init__(self) -> None:
        self.rect = pdfium_c.FS_RECTF()
        self.name = ctypes.create_string_buffer(128)
        self.flags = ctypes.c_int()
        self.bold_font: dict[bytes, bool] = {}

    def _bold(self, tp: object, i: int) -> bool:
        n = pdfium_c.FPDFText_GetFontInfo(tp, i, self.name, 128, ctypes.byref(self.flags))
        name = self.name.value if n else b""
        bold = self.bold_font.get(name)
        if bold is None:
            bold = self.bold_font[name] = bool(_BOLD_FONT.search(name.decode("latin-1")))
        return bold or pdfium_c.FPDFText_GetFontWeight(tp, i) >= 600

    def _box(self, tp: object, i: int) -> tuple[float, float, float, float]:
        """Size, top, bottom and right of character ``i``; a coordinate a damaged page
        makes infinite or NaN (a huge text offset) reads as 0, so lines still sort."""
        r = self.rect
        pdfium_c.FPDFText_GetLooseCharBox(tp, i, r)
        box = (r.top - r.bottom, r.top, r.bottom, r.right)
        return box if all(map(math.isfinite, box)) else (0.0, 0.0, 0.0, 0.0)

    def lines(self, page: pdfium.PdfPage, index: int) -> list[_Line]:
        """The page's non-blank lines in pdfium's reading order."""
        tp = page.get_textpage()
        try:
            raw = tp.raw
            n = pdfium_c.FPDFText_CountChars(raw)
            if n <= 0:
                return []
            buf = (ctypes.c_ushort * (n + 1))()
            pdfium_c.FPDFText_GetText(raw, 0, n, buf)
            text = bytes(buf)[:2 * n].decode("utf-16-le", "replace")
            if len(text) != n:  # characters outside the BMP: read them one by one
                text = "".join(chr(pdfium_c.FPDFText_GetUnicode(raw, i)) for i in range(n))
            height = page.get_height()
            height = height if math.isfinite(height) else 0.0
            out: list[_Line] = []
            start = 0
            for part in text.replace("\r\n", "\n\x00")[:n].split("\n"):
                # each "\r\n" was two characters: "\n\x00" keeps the offsets
                stripped = part.strip(" \x00\t\r")
                if stripped:
                    first = start + len(part) - len(part.lstrip(" \x00\t\r"))
                    last = start + len(part.rstrip(" \x00\t\r")) - 1
                    size, top, _, _ = self._box(raw, first)
                    _, _, bottom, right = self._box(raw, last)
                    bold = self._bold(raw, first) and self._bold(raw, last)
                    clean = " ".join(stripped.replace("\x00", "").split())
                    out.append(_Line(clean, index, round(size, 1), bold,
                                     height - top, height - bottom, right=right))
                start += len(part) + 1
            return out
        finally:
            tp.close()


class PdfConverter:
    """PDF to Markdown (pypdfium2, layout-based headings); see the module docstring."""

    name = "pdf"
    version = "3"
    suffixes = CONVERTED_FORMATS["pdf:PdfConverter"]

    def convert(self, data: bytes, name: str) -> Converted:
        """Convert a PDF's bytes; :class:`ConversionError` naming ``name`` for a PDF that is
        encrypted, damaged, not a PDF, or has no text layer at all."""
        pages, outline = self._read(data, name)
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
        _drop_running_lines(pages)
        toc = {i for i, p in enumerate(pages) if _is_toc_page(p)}
        if outline:
            pages = _outline_headings(pages, outline)
        else:
            _layout_headings(pages, toc)
        markdown, starts = _render(pages, toc)
        return Converted(markdown, starts, tuple(warnings))

    def _read(self, data: bytes, name: str
              ) -> tuple[list[list[_Line]], list[tuple[int, str, int]]]:
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
            reader = _Reader()
            pages = []
            for i in range(len(pdf)):
                page = pdf[i]
                try:
                    pages.append(reader.lines(page, i))
                finally:
                    page.close()
            return pages, _outline(pdf)
        except pdfium.PdfiumError as exc:
            raise ConversionError(name, f"cannot be read as a PDF (damaged?): {exc}") from None
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


def _page_list(pages: list[int]) -> str:
    return ", ".join(map(str, pages[:20])) + (f" and {len(pages) - 20} more"
                                             if len(pages) > 20 else "")


def _edges(lines: list[_Line]) -> list[_Line]:
    """The top and bottom few lines of a page, by position."""
    by_top = sorted(lines, key=lambda ln: ln.top)
    return by_top[:_EDGE] + by_top[max(_EDGE, len(by_top) - _EDGE):]


def _edge_key(ln: _Line) -> tuple[str, int]:
    """Running headers repeat their text (digits aside) at one place on the page."""
    return _norm(ln.text), round(ln.top / 5)


def _drop_running_lines(pages: list[list[_Line]]) -> None:
    """Remove running headers/footers (edge lines repeated on many pages, digits ignored)
    and lone page numbers at a page's top or bottom, in place."""
    seen: Counter[tuple[str, int]] = Counter()
    for lines in pages:
        seen.update({_edge_key(ln) for ln in _edges(lines)})
    text_pages = sum(1 for p in pages if p)
    repeat = max(3, math.ceil(RUNNING_SHARE * text_pages))
    for i, lines in enumerate(pages):
        drop = {id(ln) for ln in _edges(lines)
                if seen[_edge_key(ln)] >= repeat or _PAGE_NUMBER.match(ln.text)}
        if drop:
            pages[i] = [ln for ln in lines if id(ln) not in drop]


def _is_toc_line(text: str) -> bool:
    """A contents entry: words, then a page number (after spaces or dot leaders)."""
    m = _PAGE_REF.search(text)
    if m is None or "$" in text or "%" in text:
        return False
    return text[:m.start()].rstrip(" .\u2026")[-1:].isalpha()


def _is_toc_page(lines: list[_Line]) -> bool:
    """A contents page: titled "Contents", or most lines end in a page number."""
    if not lines:
        return False
    listed = sum(1 for ln in lines if _is_toc_line(ln.text))
    if any(_TOC_TITLE.match(ln.text) for ln in lines[:5]) and listed >= 3:
        return True
    return listed >= 5 and listed >= 0.5 * len(lines)


# --------------------------------------------------------------------------- outline

# a leading section number that bookmarks often leave out of their titles ("3.1 ", "A.2. ")
_UNNUMBERED = re.compile(r"^\s*(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?\s+")


def _outline_match(text: str, want: str) -> bool:
    """Whether a line is (the start of) a bookmark's title, also behind a section number."""
    for have in (_alnum(text), _alnum(_UNNUMBERED.sub("", text))):
        if have and (have == want or (want.startswith(have) and len(have) * 2 >= len(want))):
            return True
    return False


def _outline_headings(pages: list[list[_Line]], outline: list[tuple[int, str, int]]
                      ) -> list[list[_Line]]:
    """Mark each bookmark's title on its page as a heading at the outline's depth; a title
    not found there is inserted at the top of its page."""
    inserted: Counter[int] = Counter()
    for depth, title, p in outline:
        if not 0 <= p < len(pages):
            continue
        level, want = min(6, depth + 1), _alnum(title)
        lines = pages[p]
        hit = next((k for k, ln in enumerate(lines) if not ln.heading and want
                    and _outline_match(ln.text, want)), None)
        if hit is None:
            top = lines[0].top if lines else 0.0
            lines.insert(inserted[p], _Line(title, p, 0.0, True, top, top, level))
            inserted[p] += 1
            continue
        got = _alnum(_UNNUMBERED.sub("", lines[hit].text))
        # "3.1 Invoking asn1Parser" for the bookmark "Invoking asn1Parser": keep the number
        numbered = got == want and _alnum(lines[hit].text) != want
        lines[hit].text = lines[hit].text.strip() if numbered else title
        lines[hit].heading = level
        while hit + 1 < len(lines) and len(got) < len(want):
            nxt = _alnum(lines[hit + 1].text)
            if not nxt or not want.startswith(got + nxt):
                break
            got += nxt
            del lines[hit + 1]
    return pages


# --------------------------------------------------------------------------- layout

def _body_style(pages: list[list[_Line]]) -> tuple[float, bool]:
    """The most common size (by characters) and whether most of the text is bold."""
    sizes: Counter[float] = Counter()
    bold = total = 0
    for lines in pages:
        for ln in lines:
            sizes[round(ln.size * 2) / 2] += len(ln.text)
            bold += len(ln.text) if ln.bold else 0
            total += len(ln.text)
    body = sizes.most_common(1)[0][0] if sizes else 10.0
    return body, bold * 2 > total


def _candidate(ln: _Line, body: float, body_bold: bool) -> _Style | None:
    """The style of a line that looks like a heading on its own (no context), else None."""
    text = ln.text
    rank = numbering_rank(text)
    big = ln.size >= body * HEADING_SIZE and ln.size >= body + 1
    if not (big or (ln.bold and not body_bold)):
        return None
    words = len(text.split())
    if len(text) < 2 or len(text) > 200 or words > (30 if rank else 16):
        return None
    if not (text[0].isupper() or rank is not None) or sum(c.isalpha() for c in text) < 2:
        return None
    if text[-1] in ",;:" or _numbers(text) >= 3 or text.count("(") != text.count(")"):
        return None
    if rank is not None and (_REFERENCE.match(text) or (words > 10
                             and _RUN_IN.search(text, 12))):
        return None
    if rank is None and ((text[-1] == "." and words >= 5)
                         or not any(sum(c.isalpha() for c in w) >= 3 for w in text.split())):
        return None  # a sentence, or single letters (column labels)
    if (_CELL.match(text.split()[-1]) or (rank is None and "$" in text)) and not (
            _NUMBERING_ONLY.match(text) or _YEAR_END.search(text)):
        return None  # ends in an amount: a table row or total
    return _Style(round(ln.size * 2) / 2, ln.bold, rank)


def _is_prose(ln: _Line) -> bool:
    return len(ln.text.split()) >= 6 and not _is_table_row(ln.text)


def _shares_row(lines: list[_Line]) -> list[bool]:
    """Whether each line sits on one row with another line of its page: a table cell."""
    order = sorted(range(len(lines)), key=lambda k: lines[k].top)
    out = [False] * len(lines)
    for a, b in pairwise(order):
        if lines[b].top - lines[a].top < 0.5 * max(lines[a].size, lines[b].size, 1.0):
            out[a] = out[b] = True
    return out


def _continues(ln: _Line, style: _Style | None, heading: _Style) -> bool:
    """Whether a line has a heading's look, unnumbered: a heading of its style, or a
    lower-case line in its size and weight (a wrap's second line is no heading alone)."""
    if style is not None:
        return style == _Style(heading.size, heading.bold, None)
    return (ln.text[:1].islower() and round(ln.size * 2) / 2 == heading.size
            and ln.bold == heading.bold)


def _merge_wrapped(lines: list[_Line], styles: list[_Style | None], k: int,
                   title: bool, margin: float) -> None:
    """Join the lines after ``lines[k]`` that continue its heading (same style, close below,
    and a lower-case start, a first line that reaches the page's right ``margin`` (it
    wrapped) or a dangling word), in place. A heading that ends short of the margin and is
    followed by another line of its style is two headings ("Item 7. MD&A", "Overview")."""
    ln, style, nxt = lines[k], styles[k], k + 1
    assert style is not None
    if (_NUMBERING_ONLY.match(ln.text) and nxt < len(lines) and styles[nxt] is not None
            and styles[nxt].rank is None  # type: ignore[union-attr]
            and 0 < lines[nxt].top - ln.top < 3 * max(ln.size, 1.0)):
        ln.text, ln.top = f"{ln.text} {lines[nxt].text}", lines[nxt].top
        del lines[nxt], styles[nxt]
    while (nxt < len(lines) and _continues(lines[nxt], styles[nxt], style)
           and 0 < lines[nxt].top - ln.top < 2.2 * max(ln.size, 1.0)
           and (lines[nxt].text[0].islower() or ln.right >= margin - WRAP_EMS * ln.size
                or title
                or _CONNECTOR_END.search(ln.text) or _CONNECTOR_START.match(lines[nxt].text))
           and len(ln.text) + len(lines[nxt].text) <= 200):
        ln.text, ln.top = f"{ln.text} {lines[nxt].text}", lines[nxt].top
        del lines[nxt], styles[nxt]


def _layout_headings(pages: list[list[_Line]], toc: set[int]) -> None:
    """Choose headings by layout and give them levels, in place (``_Line.heading``).

    A candidate (:func:`_candidate`) that shares its row with another line is a table cell;
    one that is neither numbered nor bigger than the body must lead into prose, a list or
    another heading, not into table rows, and must not end on a dangling word. On the first
    page only the title (largest line) and numbered headings count: a cover is not a tree.
    """
    body, body_bold = _body_style(pages)
    chosen: list[tuple[_Line, _Style]] = []
    title_size = max((ln.size for ln in pages[0]), default=0.0) if pages else 0.0
    title_size = title_size if title_size >= body * TITLE_SIZE else math.inf
    for p, lines in enumerate(pages):
        # on a contents page only a heading above the list counts ("Item 7. MD&A", then
        # the MD&A's own contents)
        limit = next((k for k, ln in enumerate(lines) if _is_toc_line(ln.text)
                      or _TOC_TITLE.match(ln.text)), len(lines)) if p in toc else len(lines)
        styles = [None if row or k >= limit else _candidate(ln, body, body_bold)
                  for k, (ln, row) in enumerate(zip(lines, _shares_row(lines), strict=True))]
        margin = max((ln.right for ln in lines), default=0.0)
        for k in range(len(lines)):
            if k < len(lines) and styles[k] is not None:
                _merge_wrapped(lines, styles, k, p == 0 and lines[k].size >= title_size,
                               margin)
        cover = p == 0 and sum(st is not None for st in styles) > 3
        for k, (ln, style) in enumerate(zip(lines, styles, strict=True)):
            if style is None:
                continue
            after = lines[k + 1] if k + 1 < len(lines) else None
            if p == 0 and not ((ln.size >= title_size and not chosen)
                               or (style.rank is not None and not cover)):
                continue
            if style.rank is None and ((after is not None and _is_table_row(after.text))
                                       or _CONNECTOR_END.search(ln.text)):
                continue
            if (style.rank is None and style.size < body * HEADING_SIZE and after is not None
                    and styles[k + 1] is None and not _is_prose(after)
                    and not _BULLET.match(after.text)):
                continue
            chosen.append((ln, style))
    # an unnumbered "heading" repeated on many pages is a label (a statement's caption)
    seen = Counter(ln.text for ln, st in chosen if st.rank is None)
    chosen = [(ln, st) for ln, st in chosen if st.rank is not None or seen[ln.text] < 3]
    _assign_levels(chosen)


def _assign_levels(chosen: list[tuple[_Line, _Style]]) -> None:
    """Levels from a stack of open headings: a numbered heading closes the headings of its
    rank or below and any unnumbered heading above them; an unnumbered one closes unnumbered
    headings that are not more prominent, and nests under the numbered heading before it."""
    stack: list[_Style] = []

    def prominent(a: _Style, b: _Style) -> bool:  # a clearly above b
        return a.size > b.size + 0.5 or (abs(a.size - b.size) <= 0.5 and a.bold > b.bold)

    for ln, style in chosen:
        if style.rank is not None:
            while stack:
                top = stack[-1]
                numbered_below = any(s.rank is not None for s in stack)
                if (top.rank is not None and top.rank >= style.rank) or (
                        top.rank is None and (numbered_below or not prominent(top, style))):
                    stack.pop()
                else:
                    break
        else:
            while stack and stack[-1].rank is None and not prominent(stack[-1], style):
                stack.pop()
        stack.append(style)
        ln.heading = min(6, len(stack))


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


def _blocks(lines: list[_Line], plain: bool) -> Iterator[list[str]]:
    """A page's output blocks: headings, paragraphs (joined lines), runs of table rows."""
    para: list[str] = []
    rows: list[str] = []
    prev: _Line | None = None
    for ln in lines:
        text = _unhyphenate(ln.text)
        if not ln.heading and _MARKDOWN_START.match(text):
            text = "\\" + text  # "# Denotes ..." or "---" in body text is not markup
        if ln.heading:
            yield from filter(None, (para, rows))
            para, rows, prev = [], [], None
            yield ["#" * ln.heading + " " + text]
            continue
        if plain or _is_table_row(text):
            if para:
                yield para
                para = []
            rows.append(text)
            prev = None
            continue
        if rows:
            yield rows
            rows = []
        size = max(ln.size, prev.size, 1.0) if prev is not None else 0.0
        if (prev is not None and para and -0.5 * size < ln.top - prev.bottom <= 0.5 * size
                and not _BULLET.match(text)):
            para[-1] = _join(para[-1], text)
        else:
            if para:
                yield para
            para = [text]
        prev = ln
    yield from filter(None, (para, rows))


def _render(pages: list[list[_Line]], toc: set[int]) -> tuple[str, tuple[int, ...]]:
    """The Markdown and the 1-based line where each page starts."""
    out: list[str] = []
    firsts: list[int | None] = []
    for p, lines in enumerate(pages):
        first = None
        for block in _blocks(lines, p in toc):
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
