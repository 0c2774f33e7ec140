"""HTML -> Markdown: :class:`HtmlConverter`.

Web pages and SEC EDGAR filings are the HTML users index. Pages mark headings with
``<h1>``..``<h6>``; EDGAR filings (and other generated reports) mark them only as short bold
blocks (``<p><b>Item 7. Management's Discussion</b></p>``, ``font-weight:700`` divs). The
converter keeps ``<h*>`` levels as written. A document with no ``<h*>`` heading gets its bold
and ``PART``/``Item``/``Note``-numbered blocks as headings, levelled by :mod:`.numbering`.
One with ``<h*>`` headings marks its own structure and a bold block there is usually
emphasis ("Note:", "Warning"), so there only bold blocks that carry a numbering
(:func:`.numbering.numbering_rank`: ``PART II``, ``Item 7.``, ``Note 3``, ``2.1``) become
headings: generated reports tag a few headings and bold their Items and Notes. Their levels
follow one ladder of numbering ranks (:func:`_rank_levels`): a rank some ``<h*>`` heading
carries keeps that tag's level (``<h2>PART II</h2>`` puts bold items at 3), the others
take the next level down in rank order, starting below the page's sole top heading (its
title) or, without one, at its top ``<h*>`` level. Table cells never become headings.
Everything that is not content is dropped: scripts, styles, ``<head>``
(its ``<title>`` aside), ``<nav>`` menus, and anything hidden (``display:none``, ``hidden``),
which removes the hidden ``ix:header`` block of inline-XBRL filings.

The blocks are rendered by :mod:`.markdown`, which the Word converter shares.
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from typing import Any, TypeAlias

from lxml import etree  # type: ignore[import-untyped]

from ..documents import CONVERTED_FORMATS
from .base import ConversionError, Converted
from .markdown import (
    RUNNING_REPEATS,
    Block,
    Cell,
    collapse,
    looks_like_heading,
    para_block,
    recover_headings,
    render,
    table_blocks,
)
from .numbering import numbering_rank

#: An lxml element (lxml ships no type information).
Element: TypeAlias = Any

__all__ = ["HtmlConverter", "decode_html"]


#: A short line next to this many page breaks or more (digits aside) is a running header.
RUNNING_EDGES = 3
_DIGITS = re.compile(r"\d+")

# --- HTML -------------------------------------------------------------------------------------
_DROP = frozenset({"script", "style", "noscript", "template", "head", "title", "nav", "svg",
                   "math", "iframe", "object", "embed", "canvas", "select", "button", "input",
                   "textarea", "img", "meta", "link", "ix:header"})
_BLOCK = frozenset({"html", "body", "p", "div", "section", "article", "main", "header",
                    "footer", "aside", "blockquote", "address", "figure", "figcaption", "form",
                    "fieldset", "legend", "center", "dl", "dt", "dd", "details", "summary",
                    "hgroup", "caption", "tr", "td", "th", "tbody", "thead", "tfoot", "li"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LISTS = frozenset({"ul", "ol", "menu", "dir"})
_DISPLAY_NONE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_WEIGHT = re.compile(r"font-weight\s*:\s*([a-z0-9]+)", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._:-]+)""")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UTF8_PAIR = re.compile(rb"[\xc2-\xf4][\x80-\xbf]")
# Labels that mean windows-1252 in practice (the WHATWG encoding standard maps them so).
_LATIN1 = frozenset({"latin_1", "ascii", "iso8859-1", "cp819"})
_DEPTH = 400
_PAGE_BREAK = re.compile(r"page-break-(?:before|after)\s*:\s*always|break-(?:before|after)"
                         r"\s*:\s*page", re.I)
_PAGE_NUMBER = re.compile(r"(?:page\s+)?(?:[A-Z]{1,2}\s*-\s*)?(?:\d{1,4}|[ivxlc]{1,7})"
                          r"(?:\s+of\s+\d{1,4})?", re.I)


def decode_html(data: bytes) -> str:
    """The text of an HTML file's bytes; never raises.

    A BOM wins, then ``<?xml encoding>`` or ``<meta charset>`` (``http-equiv`` included) in
    the first 4 KB (latin-1 and ASCII labels read as windows-1252, as browsers do). Without
    either: UTF-8, or windows-1252 when the bytes hold no UTF-8 sequence at all (legacy
    pages); any undecodable byte becomes U+FFFD.
    """
    for bom, enc in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                     (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(enc, "replace")
    head = data[:4096]
    m = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    if m is not None:
        try:
            enc = codecs.lookup(m[1].decode("ascii")).name
        except LookupError:
            enc = "utf-8"
        if enc in _LATIN1:
            enc = "cp1252"
        if enc.startswith("utf-16"):  # a declaration read as ASCII cannot be UTF-16
            enc = "utf-8"
        return data.decode(enc, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        enc = "utf-8" if _UTF8_PAIR.search(data) else "cp1252"
        return data.decode(enc, "replace")


def _weight(el: Element, bold: bool) -> bool:
    if el.tag in ("b", "strong"):
        bold = True
    style = el.get("style")
    if style and "weight" in style:
        m = _WEIGHT.search(style)
        if m is not None:
            w = m[1].lower()
            bold = w in ("bold", "bolder") or (w.isdigit() and int(w) >= 600)
    return bold


def _hidden(el: Element) -> bool:
    if el.get("hidden") is not None:
        return True
    style = el.get("style")
    if not style:
        return False
    style = style.lower()
    return ("none" in style or "hidden" in style) and _DISPLAY_NONE.search(style) is not None


class _Walker:
    """One pass over the parsed page, in document order, collecting :class:`Block` s."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.frags: list[tuple[str, bool]] = []
        self.items: list[tuple[int, str]] = []  # open list items: (depth, marker)
        self.edges: set[int] = set()  # indexes of blocks just before or after a page break

    def flush(self) -> None:
        text = collapse("".join(t for t, _ in self.frags))
        bold = all(b for t, b in self.frags if not t.isspace())
        self.frags = []
        if not text:
            return
        if self.items:
            depth, marker = self.items[-1]
            self.blocks.append(Block("item", text, level=depth, marker=marker))
        else:
            self.blocks.append(para_block(text, bold))

    def page_break(self) -> None:
        """Drop the page number a page ends with; note the lines around the break."""
        self.flush()
        if self.blocks and self.blocks[-1].kind == "para" \
                and _PAGE_NUMBER.fullmatch(self.blocks[-1].text):
            self.blocks.pop()
        self.edges.update((len(self.blocks) - 1, len(self.blocks)))

    def without_running_lines(self) -> list[Block]:
        """The blocks less running headers and footers: a short paragraph next to a page
        break whose text, digits aside, is next to :data:`RUNNING_EDGES` page breaks or more
        ("Apple Inc. | 2024 Form 10-K | 19")."""
        def key(i: int) -> str | None:
            b = self.blocks[i] if 0 <= i < len(self.blocks) else None
            if b is None or b.kind != "para" or len(b.text.split()) > 12:
                return None
            return _DIGITS.sub("0", b.text.casefold())

        # The document's first and last blocks are page edges too.
        edges = self.edges | {0, len(self.blocks) - 1} if self.edges else set()
        seen = Counter(k for i in edges if (k := key(i)) is not None)
        drop = {i for i in edges if seen.get(key(i) or "", 0) >= RUNNING_EDGES}
        return [b for i, b in enumerate(self.blocks) if i not in drop]

    def walk(self, el: Element, bold: bool, depth: int = 0) -> None:
        tag = el.tag
        if not isinstance(tag, str) or tag in _DROP or _hidden(el):
            return
        style = el.get("style")
        if style and "page" in style and _PAGE_BREAK.search(style):
            self.page_break()
        bold = _weight(el, bold)
        if depth > _DEPTH:  # pathological nesting: keep the text, skip the structure
            self.frags.append((" ".join(el.itertext()), bold))
            return
        if tag in _HEADINGS:
            self.flush()
            text = collapse(_text(el))
            if text:
                self.blocks.append(Block("heading", text, level=_HEADINGS[tag]))
        elif tag == "table":
            self.flush()
            self.blocks.extend(table_blocks(_grid(el)))
        elif tag in _LISTS:
            self.flush()
            self.list(el, bold, depth)
        elif tag == "pre":
            self.flush()
            text = _text(el, pre=True).strip("\n")
            if text.strip():
                self.blocks.append(Block("code", text))
        elif tag == "br":
            self.frags.append((" ", bold))
        elif tag == "hr":
            self.flush()
        else:
            block = tag in _BLOCK and not self.items
            if block:
                self.flush()
            self.children(el, bold, depth)
            if block:
                self.flush()

    def children(self, el: Element, bold: bool, depth: int) -> None:
        if el.text:
            self.frags.append((el.text, bold))
        for child in el:
            self.walk(child, bold, depth + 1)
            if child.tail:
                self.frags.append((child.tail, bold))

    def list(self, el: Element, bold: bool, depth: int) -> None:
        ordered = el.tag == "ol"
        start = el.get("start", "1")
        n = int(start) if start.isdigit() else 1
        nest = len(self.items)
        for li in el:
            if not isinstance(li.tag, str) or _hidden(li):
                continue
            if li.tag in _LISTS:
                self.items.append((nest, "-"))
                self.list(li, bold, depth + 1)
                self.items.pop()
                continue
            self.items.append((nest, f"{n}." if ordered else "-"))
            self.children(li, _weight(li, bold), depth + 1)
            self.flush()
            self.items.pop()
            n += 1


def _text(el: Element, pre: bool = False) -> str:
    """The visible text of ``el``: dropped and hidden elements skipped, ``<br>`` a break."""
    out: list[str] = []

    def visit(e: Element, depth: int) -> None:
        if e.text:
            out.append(e.text)
        for child in e:
            tag = child.tag
            if isinstance(tag, str) and tag not in _DROP and not _hidden(child):
                if tag == "br":
                    out.append("\n" if pre else " ")
                elif depth > _DEPTH:
                    out.append(" ".join(child.itertext()))
                else:
                    if tag in _BLOCK or tag in _LISTS or tag == "table":
                        out.append(" ")
                    visit(child, depth + 1)
                    out.append(" " if tag in _BLOCK else "")
            if child.tail:
                out.append(child.tail)

    visit(el, 0)
    return "".join(out)


def _grid(table: Element) -> list[list[Cell | None]]:
    """The cells of ``table`` (not of tables nested in it) on the grid, spans expanded."""
    rows: list[list[Cell | None]] = []
    pending: dict[int, int] = {}  # column -> rows a rowspan still covers
    trs = [tr for part in table if isinstance(part.tag, str) and not _hidden(part)
           for tr in ((part,) if part.tag == "tr" else
                      part if part.tag in ("thead", "tbody", "tfoot") else ())
           if isinstance(tr.tag, str) and tr.tag == "tr" and not _hidden(tr)]
    for tr in trs:
        row: list[Cell | None] = []
        for td in tr:
            if not isinstance(td.tag, str) or td.tag not in ("td", "th") or _hidden(td):
                continue
            while pending.get(len(row), 0) > 0:
                row.append(None)
            text, bold = _cell_text(td)
            span = _int_attr(td, "colspan")
            down = _int_attr(td, "rowspan")
            for k in range(span):
                if down > 1:
                    pending[len(row) + k] = down
            row.append(Cell(text, bold, span))
            row.extend([None] * (span - 1))
        while pending.get(len(row), 0) > 0:
            row.append(None)
        rows.append(row)
        for c in list(pending):
            pending[c] -= 1
            if pending[c] <= 0:
                del pending[c]
    return rows


def _cell_text(td: Element) -> tuple[str, bool]:
    """A cell's text on one line (lists, paragraphs and nested tables flattened), all bold?"""
    walker = _Walker()
    walker.children(td, _weight(td, False), 0)
    walker.flush()
    parts = [" ".join(" ".join(r) for r in b.rows) if b.kind == "table" else b.text
             for b in walker.blocks]
    text = collapse(" ".join(parts))
    bold = bool(text) and all(b.bold or b.kind == "heading" for b in walker.blocks)
    return text, bold


def _int_attr(el: Element, name: str) -> int:
    """A span attribute (``colspan``) as browsers read it, 1 to 100: ASCII digits only
    (``str.isdigit`` also accepts ``"²"``, which ``int`` refuses), anything else 1."""
    v = (el.get(name) or "1").strip()
    n = int(v) if v.isascii() and v.isdigit() and len(v) <= 9 else 1
    return min(n, 100) if n > 0 else 1


def _numbered_headings(blocks: list[Block]) -> list[Block]:
    """``blocks`` (with ``<h*>`` headings) with bold numbered paragraphs as headings.

    A candidate is a bold paragraph with a numbering rank that reads as a heading
    (:func:`looks_like_heading`: short, not a contents line) and is not repeated
    :data:`RUNNING_REPEATS` times (a running header). Table cells are table blocks, never
    candidates.
    """
    ranks = {i: r for i, b in enumerate(blocks) if b.kind == "para" and b.bold
             and (r := numbering_rank(b.text)) is not None and looks_like_heading(b.text, True)}
    seen = Counter(blocks[i].text.casefold() for i in ranks)
    cands = {i: r for i, r in ranks.items() if seen[blocks[i].text.casefold()] < RUNNING_REPEATS}
    if not cands:
        return blocks
    tagged = [(i, b) for i, b in enumerate(blocks) if b.kind == "heading"]
    ranked = [(r, b.level) for _, b in tagged if (r := numbering_rank(b.text)) is not None]
    low = min(b.level for _, b in tagged)
    tops = [(i, b) for i, b in tagged if b.level == low]
    title = len(tops) == 1 and tops[0][0] < min(cands) and numbering_rank(tops[0][1].text) is None
    level = _rank_levels(set(cands.values()), ranked, top=low + 1 if title else low)
    out = list(blocks)
    for i, rank in cands.items():
        out[i] = Block("heading", out[i].text, level=level[rank])
    return out


def _rank_levels(ranks: set[int], tagged: list[tuple[int, int]], *, top: int) -> dict[int, int]:
    """Levels (1-6) for the numbering ``ranks`` of recovered headings, on one ladder with the
    ``(rank, level)`` of numbered ``<h*>`` headings.

    A rank a tag carries keeps the tag's level (its most common one); the other ranks, in
    rank order, sit one level below the rank before them, from ``top``; ranks above the
    first tagged one count up from it (``Item`` tagged ``<h2>`` puts ``PART`` at 1).

    >>> _rank_levels({10, 30, 40}, [], top=2)
    {10: 2, 30: 3, 40: 4}
    >>> _rank_levels({10, 30}, [(30, 2), (30, 2), (40, 3)], top=2)
    {10: 1, 30: 2, 40: 3}
    """
    anchor: dict[int, int] = {}
    for (rank, n), _ in Counter(tagged).most_common():
        anchor.setdefault(rank, n)
    used = sorted(ranks | anchor.keys())
    first = next((k for k, r in enumerate(used) if r in anchor), None)
    out: dict[int, int] = {}
    prev = top - 1
    for k, r in enumerate(used):
        if r in anchor:
            prev = anchor[r]
        elif first is not None and k < first:
            prev = max(1, anchor[used[first]] - (first - k))
        else:
            prev = min(6, prev + 1)
        out[r] = prev
    return out


_PARSER_DEPTH = 2048  # libxml2's deepest element, even with huge_tree
_WRAPPERS = re.compile(r"</?(?:div|section|article|center|main|aside|header|footer|nav"
                       r"|blockquote)\b[^>]*>", re.I)
_INLINE = re.compile(r"</?(?:span|font|b|i|em|strong|u|small|big|a)\b[^>]*>", re.I)


def _parse(text: str, name: str) -> tuple[Element | None, bool]:
    """The element tree of ``text`` (``None`` for no text) and whether the parser met
    nesting deeper than it keeps (it drops what lies below and after it)."""
    parser = etree.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)
    try:
        root = etree.fromstring(text, parser) if text.strip() else None
    except (etree.LxmlError, ValueError) as exc:
        raise ConversionError(name, f"is not readable HTML ({exc})") from None
    deep = any("Excessive depth" in e.message for e in parser.error_log)
    return root, deep


class HtmlConverter:
    """HTML (``.html``, ``.htm``) to Markdown; pages and EDGAR filings, no page map."""

    name = "html"
    version = "3"
    suffixes = CONVERTED_FORMATS["html:HtmlConverter"]

    def convert(self, data: bytes, name: str) -> Converted:
        """The Markdown of the page in ``data``; :class:`ConversionError` when it has no text.

        ``<h1>``..``<h6>`` keep their levels; ``<title>`` becomes a level-1 heading when no
        ``<h1>`` exists. Without any ``<h*>`` heading, short bold or numbered blocks become
        headings (:func:`recover_headings`), under the title when there is one; with some,
        only bold numbered blocks do (:func:`_numbered_headings`).
        """
        text = _CONTROL.sub("", _XML_DECL.sub("", decode_html(data), count=1))
        root, too_deep = _parse(text, name)
        warnings: list[str] = []
        if too_deep:
            # libxml2 drops everything below 2,048 levels, and the text after them: read
            # the page again with its wrapper elements (div, span, ...) as line breaks.
            root, too_deep = _parse(_INLINE.sub("", _WRAPPERS.sub("<br>", text)), name)
            warnings.append(f"{name}: HTML nested deeper than {_PARSER_DEPTH} elements; its "
                            "wrappers (div, span, ...) were read as plain line breaks"
                            + ("; text nested deeper still is dropped" if too_deep else ""))
        if root is None:
            raise ConversionError(name, "has no text")
        walker = _Walker()
        try:
            walker.walk(root, False)
        except RecursionError:
            raise ConversionError(name, "is nested too deeply to convert") from None
        walker.flush()
        blocks = walker.without_running_lines()
        title_el = root.find(".//title")
        title = collapse(_text(title_el)) if title_el is not None else ""
        has_h = any(b.kind == "heading" for b in blocks)
        if not any(b.text or b.rows for b in blocks):
            raise ConversionError(name, "has no text")
        if title and not any(b.kind == "heading" and b.level == 1 for b in blocks):
            if not (blocks and blocks[0].kind == "para" and blocks[0].text == title):
                blocks.insert(0, Block("heading", title, level=1))
            else:
                blocks[0] = Block("heading", title, level=1)
        if has_h:
            blocks = _numbered_headings(blocks)
        else:
            blocks = recover_headings(blocks, top=2 if title else 1)
        return Converted(render(blocks)[0], warnings=tuple(warnings))
