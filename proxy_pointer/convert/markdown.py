"""Blocks to Markdown, shared by the HTML and Word converters: :class:`Block`, :func:`render`.

A converter turns its format into a list of :class:`Block` (headings, paragraphs, list
items, tables, code); this module recovers headings among bold or numbered paragraphs
(:func:`recover_headings`, levelled by :mod:`.numbering`), turns table grids into Markdown
tables (:func:`table_blocks`: spacer columns dropped, currency and percent cells joined to
their numbers) and renders the blocks, escaping body lines that would read as Markdown
structure, so both formats read alike.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .numbering import NUMBERED_HEADING, levels, numbering_rank

__all__ = ["Block", "Cell", "collapse", "looks_like_heading", "para_block", "recover_headings",
           "render", "table_blocks"]


@dataclass(frozen=True)
class Block:
    """One Markdown block before rendering.

    ``kind``: ``"heading"`` (``level`` 1-6), ``"para"``, ``"item"`` (a list item; ``level``
    is its nesting depth, ``marker`` ``"-"`` or ``"3."``), ``"table"`` (``rows``, the first
    being the header) or ``"code"`` (``text`` kept verbatim); :mod:`.docx` also marks Word's
    Title paragraphs ``"title"`` until it levels them. ``bold``: a paragraph whose whole
    text is bold, so :func:`recover_headings` may promote it. ``breaks``: page breaks met just
    before the block (Word only).
    """

    kind: str
    text: str = ""
    level: int = 0
    marker: str = "-"
    rows: tuple[tuple[str, ...], ...] = ()
    bold: bool = False
    breaks: int = 0


@dataclass(frozen=True)
class Cell:
    """A table cell as its format spells it: text, all-bold flag, columns spanned."""

    text: str
    bold: bool = False
    span: int = 1


_WS = re.compile(r"\s+")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_BULLET = re.compile(r"^[\u2022\u25cf\u25e6\u25aa\u25a0\u00b7\u2023\u2043\uf0b7\uf0a7]\s*")
# Line starts CommonMark would read as structure: ATX heading, quote, list, fence, HTML block.
_MD_START = re.compile(r"^(?:#{1,6}(?=\s|$)|>|[-+*](?=\s|$)|(?:[-*_]\s*){3,}$|`{3,}|~{3,}"
                       r"|<(?=[A-Za-z/!?])|\d{1,9}(?=[.)](?:\s|$)))")
_CLOSING_HASHES = re.compile(r"(\s)(#+)$")
# Currency cells EDGAR tables put before a number, and closing cells they put after it.
_PREFIX_CELLS = frozenset({"$", "€", "£", "¥", "US$", "(", "$(", "($"})
_SUFFIX_CELLS = frozenset({")", "%", ")%", "%)", "pts"})
# "Item 1. Business ..... 3": a table-of-contents line ends in its page number.
_TOC_ENTRY = re.compile(r"[A-Za-z][^0-9]*?(?:\s|\.{2,})\d{1,3}$")
#: A bold or numbered line seen this often is a running header ("Table of Contents").
RUNNING_REPEATS = 6


def collapse(text: str) -> str:
    """``text`` on one line: invisible characters dropped, whitespace runs made one space."""
    return _WS.sub(" ", text.translate(_INVISIBLE)).strip()


def para_block(text: str, bold: bool = False) -> Block:
    """A paragraph, or a ``-`` item when it starts with a bullet glyph (``•``)."""
    m = _BULLET.match(text)
    if m and len(text) > m.end():
        return Block("item", text[m.end():])
    return Block("para", text, bold=bold)


def looks_like_heading(text: str, bold: bool) -> bool:
    """Whether a one-line paragraph reads as a heading a converter lost.

    Bold or ``PART``/``Item``/``Note``-numbered (never decimal-numbered unless bold), at most 12
    words and 150 characters (25 and 250 when numbered: "Item 5. Market for Registrant's
    Common Equity, Related ..."), with a letter, not starting in lower case, not a
    parenthetical ("(in millions)"), not a contents line ("Item 1. Business .... 3"), and
    not ending like a sentence or a label (``.``, ``:`` ...) unless it is numbered
    ("Item 1. Business.") or three words at most ("Overview.").
    """
    words = text.split()
    if not words or len(words) > 25 or len(text) > 250 or not any(c.isalpha() for c in text):
        return False
    rank = numbering_rank(text)
    if (rank is None and (len(words) > 12 or len(text) > 150)) \
            or (not bold and (rank is None or rank >= 50)):
        return False
    if text[0].islower() or (text[0] == "(" and text[-1] == ")"):
        return False
    if text[-1] in ":;," and rank is None:
        return False
    if len(words) >= 3 and text[-1].isdigit():
        m = NUMBERED_HEADING.match(text)
        if _TOC_ENTRY.search(text[m.end():] if m else text):
            return False
    return not (text[-1] in ".!?" and rank is None and len(words) > 3)


def recover_headings(blocks: Sequence[Block], *, top: int = 1) -> list[Block]:
    """``blocks`` with bold or numbered paragraphs (see :func:`looks_like_heading`) as headings.

    Numbered ones are levelled from ``top`` by their numbering's rank (``PART`` > ``Item`` >
    ``Note``; ``1`` > ``1.1``); an un-numbered one goes one level below the last numbered
    heading before it (at ``top`` before any), and a mixed-case one one level further when an
    upper-case un-numbered heading came since ("RISK FACTORS" > "Market Risks"), the usual
    typographic order of documents without numbering. A line repeated :data:`RUNNING_REPEATS`
    times or more is a running header and stays a paragraph.
    """
    cands = [i for i, b in enumerate(blocks)
             if b.kind == "para" and looks_like_heading(b.text, b.bold)]
    ranks = [numbering_rank(blocks[i].text) for i in cands]
    seen = Counter(blocks[i].text.casefold() for i in cands)
    keep = [(i, r) for i, r in zip(cands, ranks, strict=True)
            if seen[blocks[i].text.casefold()] < RUNNING_REPEATS]
    numbered = levels([r for _, r in keep], top=top)
    out = list(blocks)
    current: int | None = None  # level of the last numbered heading
    caps: int | None = None  # level of an upper-case un-numbered heading since then
    for (i, _), level in zip(keep, numbered, strict=True):
        if level is not None:
            current, caps = level, None
        else:
            base = top - 1 if current is None else current
            if _upper_case(out[i].text):
                level = caps = min(6, base + 1)
            else:
                level = min(6, (base if caps is None else caps) + 1)
        out[i] = replace(out[i], kind="heading", level=level, bold=False)
    return out


def _upper_case(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) > 1 and all(c.isupper() for c in letters)


def table_blocks(grid: Sequence[Sequence[Cell | None]]) -> list[Block]:
    """A table's blocks: one pipe table, or paragraphs when it is only layout.

    ``grid`` holds one row per table row and one entry per grid column: the :class:`Cell` that
    starts there, ``None`` where a cell spanning from the left covers it. Currency (``$``) and
    closing (``)``, ``%``) cells are joined to their number; columns with no text of their own
    (EDGAR's spacer columns) and empty rows go; a spanning cell's text lands in the first
    column that stays. A table left with one column gives one paragraph per row, one left with
    one row gives one paragraph: that is how EDGAR lays out headings and bullets.
    """
    width = max((len(r) for r in grid), default=0)
    rows = [[*r, *[None] * (width - len(r))] for r in grid]
    for row in rows:
        _join_symbols(row)
    keep = [any((x := r[c]) is not None and x.span == 1 and x.text for r in rows)
            for c in range(width)]
    for row in rows:
        for c, cell in enumerate(row):
            if cell is not None and cell.text and cell.span > 1 \
                    and not any(keep[c:c + cell.span]):
                keep[c] = True
    cols = [c for c in range(width) if keep[c]]
    slot = {c: k for k, c in enumerate(cols)}
    lines: list[tuple[list[str], bool]] = []
    for row in rows:
        vals = [""] * len(cols)
        bold = True
        for c, cell in enumerate(row):
            if cell is None or not cell.text:
                continue
            k = next((slot[x] for x in range(c, c + cell.span) if x in slot), None)
            if k is not None:
                vals[k] = f"{vals[k]} {cell.text}".strip()
                bold = bold and cell.bold
        if any(vals):
            lines.append((vals, bold))
    if not lines:
        return []
    if len(cols) == 1:
        return [para_block(v[0], b) for v, b in lines]
    if all(_BULLET.fullmatch(v[0]) for v, _ in lines):  # a bullet column: a list
        return [Block("item", " ".join(x for x in v[1:] if x)) for v, _ in lines]
    if len(lines) == 1:
        vals, bold = lines[0]
        return [para_block(" ".join(v for v in vals if v), bold)]
    return [Block("table", rows=tuple(tuple(v) for v, _ in lines))]


def _join_symbols(row: list[Cell | None]) -> None:
    """Join ``$`` cells to the next text cell and ``)``/``%`` cells to the previous one."""
    for c, cell in enumerate(row):
        if cell is None or cell.span != 1:
            continue
        if cell.text in _PREFIX_CELLS:
            k = next((k for k in range(c + 1, len(row)) if (x := row[k]) and x.text), None)
            if k is not None:
                nxt = row[k]
                assert nxt is not None
                row[k] = replace(nxt, text=cell.text + nxt.text)
                row[c] = replace(cell, text="")
        elif cell.text in _SUFFIX_CELLS:
            k = next((k for k in range(c - 1, -1, -1) if (x := row[k]) and x.text), None)
            if k is not None:
                prev = row[k]
                assert prev is not None
                row[k] = replace(prev, text=prev.text + cell.text)
                row[c] = replace(cell, text="")


def _escape_start(text: str) -> str:
    """``text`` with a backslash before a start CommonMark would read as structure."""
    m = _MD_START.match(text)
    if m is None:
        return text
    at = m.end() if text[0].isdigit() else 0
    return f"{text[:at]}\\{text[at:]}"


def _block_lines(b: Block) -> list[str]:
    if b.kind == "heading":
        text = _CLOSING_HASHES.sub(lambda m: m[1] + "\\" + m[2], b.text)
        return [f"{'#' * b.level} {text}"]
    if b.kind == "item":
        return [f"{'  ' * b.level}{b.marker} {_escape_start(b.text)}"]
    if b.kind == "table":
        width = len(b.rows[0])
        cells = [[v.replace("|", "\\|") for v in r] for r in b.rows]
        out = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
        out += ["| " + " | ".join(r) + " |" for r in cells[1:]]
        return out
    if b.kind == "code":
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", b.text)), default=0))
        return [fence, *b.text.split("\n"), fence]
    return [_escape_start(b.text)]


def render(blocks: Iterable[Block]) -> tuple[str, list[int]]:
    """The Markdown of ``blocks`` and the 1-based line on which each block starts.

    Blocks are separated by a blank line, except consecutive list items (a tight list).
    """
    lines: list[str] = []
    starts: list[int] = []
    prev: Block | None = None
    for b in blocks:
        if lines and not (b.kind == "item" and prev is not None and prev.kind == "item"):
            lines.append("")
        starts.append(len(lines) + 1)
        lines.extend(_block_lines(b))
        prev = b
    return ("\n".join(lines) + "\n" if lines else ""), starts
