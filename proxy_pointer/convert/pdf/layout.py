"""Headings of a PDF without an outline, from layout: :func:`layout_headings`.

A heading is a short line, bigger or bolder than the body text, that does not end in an
amount, is not a table row and does not lead into one. Its level comes from numbering first
(``PART`` > ``Item`` > ``Note``, ``1`` > ``1.1``, see :mod:`.numbering`), then from
prominence (size, weight): unnumbered headings nest under the numbered heading they follow.
On the first page only the largest line (if clearly larger than the body) may become a
heading, so a cover page full of large lines gives one title, not dozens.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from ...text.rows import CELL, is_table_row, numbers
from ...vocab.filings import FILINGS
from ..numbering import TOP_RANK, numbering_rank
from .lines import BULLET, TOC_TITLE, Line, holds_table, is_toc_line

__all__ = ["HEADING_SIZE", "TITLE_SIZE", "WRAP_EMS", "layout_headings"]

# a line holding only a label and its number ("PART II", "Item 7A."): the title follows
_NUMBERING_ONLY = re.compile(
    rf"^(?:{FILINGS.cased_labels('line')})"
    r"\s+[\dIVXLC]+[A-Z]?\.?$")
_YEAR_END = re.compile(r"[A-Za-z]\s+(?:19|20)\d\d$")
_CONNECTOR_END = re.compile(r"(?:\b(?:and|or|of|the|to|for|in|on|with|by|a|an)|[,&\-–—])$",
                            re.IGNORECASE)
_CONNECTOR_START = re.compile(r"^(?:and|or|of|the|to|for|in|on|with|by)\b", re.IGNORECASE)
# "Section 409A of the Code", "Note 16 to the ...": a cross-reference, not a heading
_REFERENCE = re.compile(r"^\S+\s+[\w.()]+\s+(?:of|to|and|or|the|in|for|as|under|pursuant|"
                        r"shall|will|is|are|was|were|has|have)\b")
_RUN_IN = re.compile(r"\.\s+[A-Z][a-z]+\s+\w+")  # "1.2 Term. The Plan ...": text runs on
WRAP_EMS = 8  # a line ending this many ems short of the page's right margin did not wrap
# Sensitivity on the nine FinanceBench filings: benchmarks/results/convert-pdf-sensitivity.md.
HEADING_SIZE = 1.15  # glyph height over the body's from which a line is "bigger"
TITLE_SIZE = 1.3  # ... from which the first page's largest line is the document's title



@dataclass(frozen=True, slots=True)
class _Style:
    """What a layout heading looks like; ``rank`` is its numbering rank, if numbered."""

    size: float
    bold: bool
    rank: int | None



def _body_style(pages: list[list[Line]]) -> tuple[float, bool]:
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


def _candidate(ln: Line, body: float, body_bold: bool) -> _Style | None:
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
    if text[-1] in ",;:" or numbers(text) >= 3 or text.count("(") != text.count(")"):
        return None
    if rank is not None and (_REFERENCE.match(text) or (words > 10
                             and _RUN_IN.search(text, 12))):
        return None
    if rank is None and ((text[-1] == "." and words >= 5)
                         or not any(sum(c.isalpha() for c in w) >= 3 for w in text.split())):
        return None  # a sentence, or single letters (column labels)
    if (CELL.match(text.split()[-1]) or (rank is None and "$" in text)) and not (
            _NUMBERING_ONLY.match(text) or _YEAR_END.search(text)):
        return None  # ends in an amount: a table row or total
    return _Style(round(ln.size * 2) / 2, ln.bold, rank)


def _is_prose(ln: Line) -> bool:
    return len(ln.text.split()) >= 6 and not is_table_row(ln.text)


def _shares_row(lines: list[Line]) -> list[bool]:
    """Whether each line sits on one row with another line of its page: a table cell."""
    order = sorted(range(len(lines)), key=lambda k: lines[k].top)
    out = [False] * len(lines)
    for a, b in pairwise(order):
        if lines[b].top - lines[a].top < 0.5 * max(lines[a].size, lines[b].size, 1.0):
            out[a] = out[b] = True
    return out


def _continues(ln: Line, style: _Style | None, heading: _Style) -> bool:
    """Whether a line has a heading's look, unnumbered: a heading of its style, or a
    lower-case line in its size and weight (a wrap's second line is no heading alone)."""
    if style is not None:
        return style == _Style(heading.size, heading.bold, None)
    return (ln.text[:1].islower() and round(ln.size * 2) / 2 == heading.size
            and ln.bold == heading.bold)


def _merge_wrapped(lines: list[Line], styles: list[_Style | None], k: int,
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
    while (nxt < len(lines) and not lines[nxt].fixed and _continues(lines[nxt], styles[nxt], style)
           and 0 < lines[nxt].top - ln.top < 2.2 * max(ln.size, 1.0)
           and (lines[nxt].text[0].islower() or ln.right >= margin - WRAP_EMS * ln.size
                or title
                or _CONNECTOR_END.search(ln.text) or _CONNECTOR_START.match(lines[nxt].text))
           and len(ln.text) + len(lines[nxt].text) <= 200):
        ln.text, ln.top = f"{ln.text} {lines[nxt].text}", lines[nxt].top
        del lines[nxt], styles[nxt]


def layout_headings(pages: list[list[Line]], toc: set[int],
                    anchors: dict[int, Line] | None = None) -> None:
    """Choose headings by layout and give them levels, in place (``Line.heading``).

    A candidate (:func:`_candidate`) that shares its row with another line is a table cell;
    one that is neither numbered nor bigger than the body must lead into prose, a list or
    another heading, not into table rows, and must not end on a dangling word. On the first
    page only the title (largest line) and numbered headings count: a cover is not a tree.
    """
    anchors = anchors or {}
    starts = {id(a) for a in anchors.values()}
    body, body_bold = _body_style(pages)
    chosen: list[tuple[Line, _Style | None]] = []  # None: where a contents list starts
    title_size = max((ln.size for ln in pages[0]), default=0.0) if pages else 0.0
    title_size = title_size if title_size >= body * TITLE_SIZE else math.inf
    for p, lines in enumerate(pages):
        # on a contents page only a heading above the list counts ("Item 7. MD&A", then
        # the MD&A's own contents)
        limit = next((k for k, ln in enumerate(lines) if is_toc_line(ln.text)
                      or TOC_TITLE.match(ln.text)), len(lines)) if p in toc else len(lines)
        styles = [None if row or k >= limit or ln.fixed or ln.caption
                  else _candidate(ln, body, body_bold)
                  for k, (ln, row) in enumerate(zip(lines, _shares_row(lines), strict=True))]
        margin = max((ln.right for ln in lines), default=0.0)
        for k in range(len(lines)):
            if k < len(lines) and styles[k] is not None:
                _merge_wrapped(lines, styles, k, p == 0 and lines[k].size >= title_size,
                               margin)
        cover = p == 0 and sum(st is not None for st in styles) > 3
        for k, (ln, style) in enumerate(zip(lines, styles, strict=True)):
            if id(ln) in starts:
                chosen.append((ln, None))
            if ln.fixed or ln.caption:
                chosen.append((ln, _Style(ln.size, ln.bold, numbering_rank(ln.text))))
                continue
            if style is None:
                continue
            after = lines[k + 1] if k + 1 < len(lines) else None
            if p == 0 and not ((ln.size >= title_size and not chosen)
                               or (style.rank is not None and not cover)):
                continue
            if style.rank is None and ((after is not None and is_table_row(after.text))
                                       or _CONNECTOR_END.search(ln.text)):
                continue
            if (style.rank is None and style.size < body * HEADING_SIZE and after is not None
                    and styles[k + 1] is None and not _is_prose(after)
                    and not BULLET.match(after.text)):
                continue
            chosen.append((ln, style))
    # an unnumbered "heading" repeated on many pages is a label (a statement's caption)
    seen = Counter(ln.text for ln, st in chosen if st is not None and st.rank is None)
    chosen = [(ln, st) for ln, st in chosen if st is None or st.rank is not None
              or ln.fixed or ln.caption or seen[ln.text] < 3]
    _assign_levels(_statement_labels_out(chosen, pages), anchors)


def _statement_labels_out(chosen: list[tuple[Line, _Style | None]], pages: list[list[Line]]
                          ) -> list[tuple[Line, _Style | None]]:
    """Without the bold labels inside a statement ("Liabilities and Shareholders' Equity"):
    after a statement's title, an unnumbered layout heading on a page that holds a table is
    a row label, not a section, until the next numbered or contents heading."""
    tables: dict[int, bool] = {}  # page -> holds a table, read only inside a statement
    out: list[tuple[Line, _Style | None]] = []
    inside = False
    for ln, style in chosen:
        if style is not None:
            if ln.fixed or ln.caption or style.rank is not None:
                inside = ln.caption
            elif inside:
                if ln.page not in tables:
                    tables[ln.page] = holds_table(pages[ln.page])
                if tables[ln.page]:
                    continue
        out.append((ln, style))
    return out


def _assign_levels(chosen: list[tuple[Line, _Style | None]], anchors: dict[int, Line]
                   ) -> None:
    """Levels from a stack of open headings: a numbered heading closes the headings of its
    rank or below and any unnumbered heading above them (a part, :data:`.numbering.TOP_RANK`,
    closes them all: a cover's title is no part's parent); an unnumbered one closes
    unnumbered headings that are not more prominent, and nests under the numbered heading
    before it. A fixed heading (placed from the contents, :mod:`.contents`) is its
    depth below the heading open where its list starts (none for a list before the first
    numbered heading: the document's own contents), and the layout headings after it nest
    below it; a numbered layout heading of a rank the contents placed (an Item the list
    left out) takes that rank's level; a numbered layout heading right after a fixed
    statement (``Line.caption``) is the statement's sibling, not its child.
    ``None`` in ``chosen`` marks where a list starts."""
    stack: list[_Style] = []
    base = 0
    rank_level: dict[int, int] = {}
    open_at: dict[int, int] = {}  # id of a list's first line -> the level open there
    numbered = False
    last: Line | None = None
    statement = False  # the last fixed heading is a statement: a numbered one is its sibling

    def prominent(a: _Style, b: _Style) -> bool:  # a clearly above b
        return a.size > b.size + 0.5 or (abs(a.size - b.size) <= 0.5 and a.bold > b.bold)

    for ln, style in chosen:
        if style is None:  # a list's title on its own page is no parent of its entries
            titled = (last is not None and last.page == ln.page and last.heading > 1
                      and numbering_rank(last.text) is None)
            open_at[id(ln)] = (last.heading - titled if last else 0) if numbered else 0
            continue
        last = ln
        numbered = numbered or style.rank is not None
        if ln.fixed or (style.rank is not None and style.rank in rank_level):
            stack.clear()
            if ln.fixed:  # its depth, below the heading open where its list starts
                level = ln.heading + open_at.get(id(anchors.get(id(ln))), 0)
            else:
                level = rank_level[style.rank or 0]
            base = ln.heading = min(6, level)
            statement = ln.fixed and ln.caption
            if style.rank is not None:
                rank_level.setdefault(style.rank, base)
            continue
        if style.rank is not None and statement:  # "Note 1" after the cash flow statement
            base, statement = max(0, base - 1), False
            stack.clear()
        if style.rank is not None and style.rank <= TOP_RANK:
            stack.clear()
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
        ln.heading = min(6, base + len(stack))
