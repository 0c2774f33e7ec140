"""Word (.docx) -> Markdown: :class:`DocxConverter`.

python-docx opens the package and gives the body and style elements; the body is then read
from its XML in document order (paragraphs and tables interleaved, content controls and text
boxes entered), because python-docx's ``Paragraph.text`` reads only direct runs and
hyperlinks and so drops tracked insertions, simple fields and inline content controls.
Heading levels come from paragraph styles: the outline level a style (or the paragraph)
declares, else a ``Heading N`` name, through ``basedOn`` chains, so localized and custom
heading styles count. The rendering is shared with :mod:`.html` (:func:`.markdown.render`).
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from io import BytesIO
from typing import Any, TypeAlias

import docx
from docx.document import Document
from docx.exceptions import PythonDocxError
from docx.opc.exceptions import PackageNotFoundError
from lxml import etree  # type: ignore[import-untyped]

from ..documents import CONVERTED_FORMATS
from .base import MAX_INPUT_BYTES, ConversionError, Converted
from .markdown import Block, Cell, collapse, para_block, recover_headings, render, table_blocks

#: An lxml element (lxml ships no type information).
Element: TypeAlias = Any

__all__ = ["DocxConverter"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_VAL = _W + "val"
_TITLE = 0  # the level _Styles.level gives the Title style
# Elements that wrap runs (or blocks) without changing what they say.
_WRAPPERS = frozenset(_W + t for t in (
    "hyperlink", "ins", "smartTag", "fldSimple", "sdt", "sdtContent", "customXml", "moveTo",
    "dir", "bdo"))
_BLOCK_WRAPPERS = frozenset(_W + t for t in ("sdt", "sdtContent", "customXml", "ins", "moveTo"))
_HEADING_NAME = re.compile(r"heading\s*([1-9])")
_LIST_NAME = re.compile(r"list (?:bullet|number)(?: ([2-9]))?")
_OFF = frozenset({"0", "false", "off"})
_READ_CHUNK = 1 << 20  # bytes inflated at a time while a .docx's parts are counted
#: What can go wrong inside python-docx, zipfile and lxml on a damaged file.
_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, KeyError, ValueError,
                TypeError, AttributeError, IndexError, EOFError, OSError, RecursionError,
                NotImplementedError, etree.LxmlError, PackageNotFoundError, PythonDocxError)


def _on(el: Element | None) -> bool | None:
    """An OOXML on/off property: ``None`` when absent, else its value (no ``val`` = on)."""
    if el is None:
        return None
    return el.get(_VAL) not in _OFF


def _int(el: Element | None, default: int) -> int:
    v = "" if el is None else (el.get(_VAL) or "")
    return int(v) if v.isdigit() else default


@dataclass(frozen=True)
class _Style:
    name: str
    based_on: str | None
    outline: int | None
    bold: bool | None
    numbered: bool


class _Styles:
    """The style table of ``word/styles.xml``, resolved through ``basedOn`` chains."""

    def __init__(self, root: Element | None) -> None:
        self.by_id: dict[str, _Style] = {}
        self.default: str | None = None
        for s in () if root is None else root.iterfind(_W + "style"):
            sid = s.get(_W + "styleId")
            if not sid:
                continue
            ppr = s.find(_W + "pPr")
            name = s.find(_W + "name")
            based = s.find(_W + "basedOn")
            self.by_id[sid] = _Style(
                name=(name.get(_VAL, "") if name is not None else sid).lower(),
                based_on=based.get(_VAL) if based is not None else None,
                outline=_int(ppr.find(_W + "outlineLvl"), -1) if ppr is not None else None,
                bold=_on(s.find(f"{_W}rPr/{_W}b")),
                numbered=ppr is not None and _int(ppr.find(f"{_W}numPr/{_W}numId"), 0) > 0,
            )
            if s.get(_W + "type") == "paragraph" and s.get(_W + "default") in ("1", "true"):
                self.default = sid
        self._level: dict[str, int | None] = {}

    def chain(self, sid: str | None) -> Iterator[_Style]:
        seen: set[str] = set()
        while sid and sid in self.by_id and sid not in seen and len(seen) < 50:
            seen.add(sid)
            style = self.by_id[sid]
            yield style
            sid = style.based_on

    def level(self, sid: str | None) -> int | None:
        """Heading level 1-9 of a paragraph style, :data:`_TITLE` for Title, else ``None``."""
        key = sid or ""
        if key not in self._level:
            self._level[key] = self._find_level(sid)
        return self._level[key]

    def _find_level(self, sid: str | None) -> int | None:
        for style in self.chain(sid):
            if style.name == "title":
                return _TITLE
            if style.outline is not None and style.outline >= 0:
                return style.outline + 1 if style.outline <= 8 else None
            m = _HEADING_NAME.fullmatch(style.name)
            if m is not None:
                return int(m[1])
        return None

    def bold(self, sid: str | None) -> bool | None:
        return next((s.bold for s in self.chain(sid) if s.bold is not None), None)

    def list_depth(self, sid: str | None) -> int | None:
        """Nesting depth when paragraphs of this style are list items, else ``None``."""
        for style in self.chain(sid):
            m = _LIST_NAME.fullmatch(style.name)
            if m is not None:
                return int(m[1]) - 1 if m[1] else 0
            if style.numbered:
                return 0
        return None


@dataclass
class _Para:
    """What one paragraph's runs hold."""

    frags: list[tuple[str, bool]] = field(default_factory=list)
    before: int = 0  # counted page breaks before its first text
    after: int = 0  # counted page breaks after some text
    boxes: list[Element] = field(default_factory=list)  # text boxes, read after it

    @property
    def has_text(self) -> bool:
        return any(not t.isspace() for t, _ in self.frags)


class _Reader:
    """Reads a document body into :class:`Block` s, counting page breaks between them."""

    def __init__(self, styles: _Styles, rendered: bool) -> None:
        self.styles = styles
        self.rendered = rendered  # count w:lastRenderedPageBreak, else explicit breaks
        self.blocks: list[Block] = []
        self.pending = 0  # page breaks not yet attached to a block
        self.counted = 0

    def add(self, block: Block) -> None:
        self.blocks.append(replace(block, breaks=self.pending))
        self.pending = 0

    def body(self, parent: Element, depth: int = 0) -> None:
        for el in parent:
            tag = el.tag
            if tag == _W + "p":
                self.paragraph(el, depth)
            elif tag == _W + "tbl":
                self.table(el, depth)
            elif tag in _BLOCK_WRAPPERS:
                self.body(el, depth)

    def paragraph(self, p: Element, depth: int) -> None:
        ppr = p.find(_W + "pPr")
        sid = self.styles.default
        if ppr is not None:
            ps = ppr.find(_W + "pStyle")
            if ps is not None:
                sid = ps.get(_VAL) or sid
        para = _Para()
        if ppr is not None and not self.rendered and _on(ppr.find(_W + "pageBreakBefore")):
            self.brk(para)
        self.runs(p, bool(self.styles.bold(sid)), para)
        text = collapse("".join(t for t, _ in para.frags))
        self.pending += para.before
        if text:
            self.add(self.classify(text, para, ppr, sid))
        self.pending += para.after
        sect = ppr.find(_W + "sectPr") if ppr is not None and not self.rendered else None
        if sect is not None and sect.find(f"{_W}type[@{_VAL}='continuous']") is None:
            self.pending += 1  # a section break starts a new page unless continuous
            self.counted += 1
        if depth < 8:
            for box in para.boxes:
                self.body(box, depth + 1)

    def classify(self, text: str, para: _Para, ppr: Element | None,
                 sid: str | None) -> Block:
        """A paragraph's block: heading (by outline level or style), title, item or text."""
        outline = ppr.find(_W + "outlineLvl") if ppr is not None else None
        level = None
        if outline is not None:
            lvl = _int(outline, 9)
            level = lvl + 1 if lvl <= 8 else None
        else:
            level = self.styles.level(sid)
        if level == _TITLE:
            return Block("title", text)
        if level is not None:
            return Block("heading", text, level=min(level, 6))
        num = ppr.find(_W + "numPr") if ppr is not None else None
        if num is not None and _int(num.find(_W + "numId"), 0) > 0:
            return Block("item", text, level=min(_int(num.find(_W + "ilvl"), 0), 8))
        depth = self.styles.list_depth(sid) if num is None else None
        if depth is not None:
            return Block("item", text, level=depth)
        bold = all(b for t, b in para.frags if not t.isspace())
        return para_block(text, bold)

    def brk(self, para: _Para) -> None:
        if para.has_text:
            para.after += 1
        else:
            para.before += 1
        self.counted += 1

    def runs(self, parent: Element, pbold: bool, para: _Para) -> None:
        for el in parent:
            tag = el.tag
            if tag == _W + "r":
                self.run(el, pbold, para)
            elif tag in _WRAPPERS:
                self.runs(el, pbold, para)
            elif tag == _MC + "AlternateContent":
                choice = el.find(_MC + "Choice")
                if choice is not None:
                    self.runs(choice, pbold, para)

    def run(self, r: Element, pbold: bool, para: _Para) -> None:
        rpr = r.find(_W + "rPr")
        bold = None
        if rpr is not None:
            bold = _on(rpr.find(_W + "b"))
            rs = rpr.find(_W + "rStyle")
            if bold is None and rs is not None:
                bold = self.styles.bold(rs.get(_VAL))
        b = pbold if bold is None else bold
        for el in r:
            tag = el.tag
            if tag == _W + "t":
                if el.text:
                    para.frags.append((el.text, b))
            elif tag in (_W + "tab", _W + "ptab", _W + "cr"):
                para.frags.append((" ", b))
            elif tag == _W + "br":
                if el.get(_W + "type") != "page":
                    para.frags.append((" ", b))
                elif not self.rendered:
                    para.frags.append((" ", b))
                    self.brk(para)
            elif tag == _W + "lastRenderedPageBreak":
                if self.rendered:
                    self.brk(para)
            elif tag == _W + "noBreakHyphen":
                para.frags.append(("-", b))
            elif tag in (_W + "drawing", _W + "pict"):
                para.boxes.extend(el.iter(_W + "txbxContent"))
            elif tag == _MC + "AlternateContent":
                choice = el.find(_MC + "Choice")
                if choice is not None:
                    para.boxes.extend(choice.iter(_W + "txbxContent"))

    def table(self, tbl: Element, depth: int) -> None:
        outer, self.pending = self.pending, 0
        grid: list[list[Cell | None]] = []
        above: dict[int, Cell] = {}  # column -> the cell a vertical merge continues
        first: int | None = None  # page breaks before the table's first text
        inside = 0  # page breaks the blocks read in its cells took
        for tr in _children(tbl, _W + "tr"):
            row: list[Cell | None] = []
            trpr = tr.find(_W + "trPr")
            if trpr is not None:
                row.extend(Cell("") for _ in range(min(_int(trpr.find(_W + "gridBefore"), 0),
                                                      100)))
            for tc in _children(tr, _W + "tc"):
                tcpr = tc.find(_W + "tcPr")
                span = min(max(_int(tcpr.find(_W + "gridSpan"), 1), 1), 100) \
                    if tcpr is not None else 1
                vmerge = tcpr.find(_W + "vMerge") if tcpr is not None else None
                col = len(row)
                if vmerge is not None and vmerge.get(_VAL, "continue") == "continue":
                    cell = replace(above.get(col, Cell("")), span=span)
                else:
                    blocks = self.cell(tc, depth)
                    if first is None and blocks:
                        first = inside + blocks[0].breaks
                    inside += sum(b.breaks for b in blocks)
                    cell = _cell(blocks, span)
                above[col] = cell
                row.append(cell)
                row.extend([None] * (span - 1))
            grid.append(row)
        total = inside + self.pending
        self.pending = outer + (first or 0)
        for block in table_blocks(grid):
            self.add(block)
        self.pending += total - (first or 0)

    def cell(self, tc: Element, depth: int) -> list[Block]:
        """The blocks of one table cell (their breaks hold the page breaks met before them)."""
        saved, self.blocks = self.blocks, []
        if depth < 8:
            self.body(tc, depth + 1)
        blocks, self.blocks = self.blocks, saved
        return blocks


def _cell(blocks: list[Block], span: int) -> Cell:
    """A table cell from its blocks: their text on one line, bold when all of it is."""
    text = collapse(" ".join(" ".join(" ".join(r) for r in b.rows) if b.kind == "table"
                             else b.text for b in blocks))
    bold = bool(text) and all(b.bold or b.kind in ("heading", "title") for b in blocks)
    return Cell(text, bold, span)


def _children(parent: Element, tag: str) -> Iterator[Element]:
    """``parent``'s ``tag`` children, also those wrapped in content controls."""
    for el in parent:
        if el.tag == tag:
            yield el
        elif el.tag in (_W + "sdt", _W + "customXml"):
            content = el.find(_W + "sdtContent") if el.tag == _W + "sdt" else el
            if content is not None:
                yield from _children(content, tag)


def _levels(blocks: list[Block]) -> list[Block]:
    """Final heading levels.

    Consecutive Title paragraphs become one heading. With a Title and a level-1 heading, the
    Title is level 1 and every heading moves one level down; otherwise levels stay as styled
    (a Title over Heading 2s needs no shift, and no level is left empty). Without any heading
    style, bold and numbered paragraphs are recovered (:func:`.markdown.recover_headings`).
    """
    merged: list[Block] = []
    for b in blocks:
        if b.kind == "title" and merged and merged[-1].kind == "title" and not b.breaks:
            merged[-1] = replace(merged[-1], text=f"{merged[-1].text} {b.text}")
        else:
            merged.append(b)
    has_title = any(b.kind == "title" for b in merged)
    styled = any(b.kind == "heading" for b in merged)
    shift = 1 if has_title and any(b.kind == "heading" and b.level == 1 for b in merged) else 0
    out = [replace(b, kind="heading", level=1) if b.kind == "title" else
           replace(b, level=min(6, b.level + shift)) if b.kind == "heading" else b
           for b in merged]
    if not styled:
        out = recover_headings(out, top=2 if has_title else 1)
    return out


class DocxConverter:
    """Word ``.docx`` to Markdown, with a page map when the file records page breaks.

    Pages: when Word saved the file it wrote ``w:lastRenderedPageBreak`` where its layout
    broke pages; those are counted, and only those, since they already include the manual
    breaks. A file without any (written by a program, not Word) counts its explicit breaks
    instead: ``w:br w:type="page"``, ``w:pageBreakBefore`` and non-continuous section
    breaks. Page ``i + 1`` starts on the line of the first block after the ``i``-th break;
    a break inside a paragraph's text starts the page at the next block. No breaks at all:
    ``page_starts=()``. Headers, footers, footnotes and comments are not converted.
    """

    name = "docx"
    version = "2"  # 2: "1A." is a number (numbering.py), so such paragraphs may become headings
    suffixes = CONVERTED_FORMATS["docx:DocxConverter"]

    def convert(self, data: bytes, name: str) -> Converted:
        """The Markdown of the Word file in ``data``.

        Raises :class:`ConversionError` naming ``name`` for bytes that are not a zip, a zip
        that is not a Word document, a damaged file, or a document without text.
        """
        document = _open(data, name)
        try:
            body = document.element.body
            styles = _Styles(document.styles.element)
            rendered = next(body.iter(_W + "lastRenderedPageBreak"), None) is not None
            reader = _Reader(styles, rendered)
            reader.body(body)
        except _READ_ERRORS as exc:
            raise ConversionError(name, f"is a damaged Word file ({type(exc).__name__}: "
                                  f"{exc})") from None
        blocks = _levels(reader.blocks)
        if not blocks:
            raise ConversionError(name, "has no text")
        markdown, starts = render(blocks)
        page_starts: tuple[int, ...] = ()
        if reader.counted:
            page_starts = (1, *(s for b, s in zip(blocks, starts, strict=True)
                                for _ in range(b.breaks)))
        return Converted(markdown, page_starts)


def _too_large(name: str) -> ConversionError:
    return ConversionError(name, f"unpacks to more than {MAX_INPUT_BYTES / 2**20:,.0f} MB, "
                           "the most a file may hold (MAX_FILE_BYTES); not converted")


def _count_unpacked(z: zipfile.ZipFile, infos: list[zipfile.ZipInfo], name: str) -> None:
    """Inflate every part once, counting the bytes as they come, and stop at
    :data:`MAX_INPUT_BYTES`: what is read counts, not what the archive declares, and memory
    stays one chunk."""
    total = 0
    for info in infos:
        with z.open(info) as part:
            while chunk := part.read(_READ_CHUNK):
                total += len(chunk)
                if total > MAX_INPUT_BYTES:
                    raise _too_large(name)


def _open(data: bytes, name: str) -> Document:
    """The python-docx document in ``data``; :class:`ConversionError` for a bad file."""
    if not zipfile.is_zipfile(BytesIO(data)):
        if data.startswith(b"PK"):
            raise ConversionError(name, "is a damaged Word file (a truncated or corrupt zip "
                                  "archive)")
        hint = "; an old .doc or a password-protected file" \
            if data.startswith(b"\xd0\xcf\x11\xe0") else ""
        raise ConversionError(name, f"is not a Word .docx file (not a zip archive{hint})")
    try:
        with zipfile.ZipFile(BytesIO(data)) as z:
            infos = z.infolist()
            if not any(i.filename.startswith("word/document") for i in infos):
                raise ConversionError(name, "is not a Word .docx file (a zip archive without "
                                      "word/document.xml)")
            if sum(i.file_size for i in infos) > MAX_INPUT_BYTES:
                raise _too_large(name)
            if any(i.flag_bits & 0x1 for i in infos):  # zipfile would raise RuntimeError
                raise ConversionError(name, "is password-protected (its zip archive is "
                                      "encrypted); not converted")
            _count_unpacked(z, infos, name)
        return docx.Document(BytesIO(data))
    except _READ_ERRORS as exc:
        raise ConversionError(name, f"is a damaged Word file ({type(exc).__name__}: "
                              f"{exc})") from None
