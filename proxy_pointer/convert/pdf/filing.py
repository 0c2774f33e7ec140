"""A filing's shape, the last step of PDF heading recovery: :func:`shape_filing`.

Contents placement and layout give each heading a level from what its page shows; an SEC
filing has a shape those cannot see across pages, and it is stated here once:

* **PARTs are top-level.** In a document with two or more PART headings, every PART is
  level 1 and every "Item N" after the first PART is level 2, below the PART before it.
* **The statements are siblings.** In the Item holding the most primary statement titles
  (Item 8, or Item 7 where a filer puts them there, a 10-Q's Item 1), the statements (before
  the notes begin), the auditor's report and the notes' title (each note, where no title
  heads them) are one level below the Item. Where the auditor's
  report or the notes' title is a plain line (at the top of a page, or a short line of its
  own), the first such line becomes that heading.
* Every other heading keeps its rank among the levels of the headings between the same two
  of these anchors, below the anchor before it, so a stray level-1 heading inside an Item
  ("(ii)", "EXHIBIT INDEX") cannot close the Item or its PART.
* **Running heads are never headings**: a heading not placed from the contents whose text
  opens three or more pages ("The Boeing Company and Subsidiaries") is a plain line.

Documents without two PARTs and an Item after them keep their levels but for running heads.
Linear in the lines.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence

from ...vocab.filings import FILINGS
from .lines import Line

__all__ = ["filing_levels", "shape_filing"]

_PART = re.compile(r"^\s*part\s+(i{1,3}|iv)\b(?!\s*,)", re.IGNORECASE)
_ITEM = re.compile(r"^\s*item\s+\d{1,2}[a-d]?\b", re.IGNORECASE)
# the titles beside the statements and the continuation mark are the vocabulary's
_AUDITOR = FILINGS.auditor_report_pattern
_NOTES = FILINGS.notes_pattern
_FIRST_NOTE = re.compile(r"^\s*note\s+1\b", re.IGNORECASE)
_NOTE = re.compile(r"^\s*note\s+\d{1,2}\b", re.IGNORECASE)
_CONTINUED = FILINGS.continued_pattern
_INDEX_ENTRY = re.compile(r"\s\d{1,4}$")  # "Reports of ... Firm 68": an index's line
_TITLE_CHARS = 200  # a PART, Item or statement title is a line, not a paragraph
_TOP_LINES = 3  # a running head is among the first lines of its page
_RUNNING_PAGES = 3  # ... on this many pages
_MEMBER_LINES = 8  # a statement, report or notes title is among the first lines of its page
_ALONE_CHARS = 90  # ... or a line of its own anywhere on it
_DEEPEST = 6


def _is_part(text: str) -> bool:
    return len(text) <= _TITLE_CHARS and _PART.match(text) is not None


def _is_item(text: str) -> bool:
    return len(text) <= _TITLE_CHARS and _ITEM.match(text) is not None


def _statement(text: str) -> str | None:
    """The kind of primary statement a title names, or None."""
    if len(text) > _TITLE_CHARS or _CONTINUED.search(text):
        return None
    m = FILINGS.statement_pattern.match(text)
    return None if m is None else FILINGS.statement_kind(m[0])


def _member(text: str) -> bool:
    """A title that sits beside the statements: a statement, the auditor's report, the notes."""
    return len(text) <= _TITLE_CHARS and (
        _statement(text) is not None or _AUDITOR.match(text) is not None
        or _NOTES.match(text) is not None)


def _spans(titles: Sequence[str], first_part: int) -> list[tuple[int, int]]:
    """Each Item's headings as ``(start, end)`` indices, from the first PART on."""
    marks = [i for i in range(first_part, len(titles))
             if _is_item(titles[i]) or _is_part(titles[i])] + [len(titles)]
    return [(a, b) for a, b in itertools.pairwise(marks) if _is_item(titles[a])]


def _statement_item(titles: Sequence[str], spans: list[tuple[int, int]]
                    ) -> tuple[int, int] | None:
    """The Item naming the most kinds of primary statement (the later one on a tie)."""
    best, most = None, 0
    for a, b in spans:
        kinds = {k for i in range(a + 1, b) if (k := _statement(titles[i])) is not None}
        if kinds and len(kinds) >= most:
            best, most = (a, b), len(kinds)
    return best


def _members(titles: Sequence[str], start: int, end: int) -> list[int]:
    """The statements' siblings among the headings ``start + 1 .. end - 1`` of the statements'
    Item: statement titles before the notes begin (a note's "Income Statement" subheading is
    not one), the first notes title (or, with none, every "Note N"), every auditor's
    report."""
    titled = any(_NOTES.match(titles[i]) for i in range(start + 1, end))
    found, notes = [], False
    for i in range(start + 1, end):
        text = titles[i]
        if len(text) > _TITLE_CHARS:
            continue
        if _AUDITOR.match(text) or (not notes and _statement(text) is not None):
            found.append(i)
        elif not titled and _NOTE.match(text):
            notes = True
            found.append(i)
        elif not notes and (_NOTES.match(text) or _FIRST_NOTE.match(text)):
            notes = True
            found += [i] if _NOTES.match(text) else []
    return found


def filing_levels(titles: Sequence[str], levels: Sequence[int]) -> list[int]:
    """The levels of a document's headings (in reading order) after the filing rules of the
    module docstring; the levels unchanged unless two or more PART headings and an Item
    after them exist (a book's "Part I" and "Part II" keep the levels its layout gave)."""
    new = list(levels)
    parts = [i for i, t in enumerate(titles) if _is_part(t)]
    if len({_PART.match(titles[i])[1].lower() for i in parts}) < 2:  # type: ignore[index]
        return new
    spans = _spans(titles, parts[0])
    if not spans:  # PARTs without Items: a book or a manual, not a filing
        return new
    anchors: dict[int, int] = {i: 1 for i in parts}
    anchors.update((a, 2) for a, _ in spans)
    group = _statement_item(titles, spans)
    if group is not None:
        anchors.update((i, 3) for i in _members(titles, *group))
    order = [*sorted(anchors), len(titles)]
    for a, b in itertools.pairwise(order):
        new[a] = anchors[a]
        run = range(a + 1, b)
        rank = {lv: r for r, lv in enumerate(sorted({levels[i] for i in run}))}
        for i in run:
            new[i] = min(_DEEPEST, anchors[a] + 1 + rank[levels[i]])
    return new


def _running_heads(pages: list[list[Line]]) -> set[str]:
    """Texts that open three or more pages."""
    seen: Counter[str] = Counter()
    for lines in pages:
        seen.update({" ".join(ln.text.lower().split()) for ln in lines[:_TOP_LINES]})
    return {t for t, n in seen.items() if n >= _RUNNING_PAGES}


def _promote_members(pages: list[list[Line]], first: Line, end: Line | None) -> None:
    """Between the Item heading ``first`` and the heading ``end``, make the auditor's report
    and the notes' title headings where a plain line is one (among a page's first lines,
    or a short line of its own) and no heading of that kind is there yet (one of each)."""
    inside, have, found = False, set(), []
    for lines in pages:
        for k, ln in enumerate(lines):
            if ln is first or ln is end:
                inside = ln is first
            elif inside:
                kind = next((rx.pattern for rx in (_AUDITOR, _NOTES) if rx.match(ln.text)), None)
                if kind is None or len(ln.text) > _TITLE_CHARS:
                    continue
                if ln.heading and not _INDEX_ENTRY.search(ln.text):
                    have.add(kind)
                elif k < _MEMBER_LINES or len(ln.text) <= _ALONE_CHARS:
                    found.append((kind, ln))
    for kind, ln in found:
        if kind not in have:
            ln.heading = first.heading + 1
            have.add(kind)


def _headings(pages: list[list[Line]], toc: set[int]) -> list[Line]:
    return [ln for p, lines in enumerate(pages) if p not in toc for ln in lines if ln.heading]


def shape_filing(pages: list[list[Line]], toc: set[int]) -> None:
    """Apply the filing rules (module docstring) to the pages' headings, in place; the
    contents pages' own lines are left alone."""
    running = _running_heads(pages)
    for p, lines in enumerate(pages):
        for ln in lines:
            if (ln.heading and not ln.fixed and p not in toc and not _member(ln.text)
                    and not _is_part(ln.text) and not _is_item(ln.text)
                    and " ".join(ln.text.lower().split()) in running):
                ln.heading = 0
    heads = _headings(pages, toc)
    titles = [ln.text for ln in heads]
    parts = [i for i, t in enumerate(titles) if _is_part(t)]
    if not parts:
        return
    group = _statement_item(titles, _spans(titles, parts[0]))
    if group is not None:
        body = [lines for p, lines in enumerate(pages) if p not in toc]
        _promote_members(body, heads[group[0]], heads[group[1]] if group[1] < len(heads)
                         else None)
        heads = _headings(pages, toc)
    levels = filing_levels([ln.text for ln in heads], [ln.heading for ln in heads])
    for ln, level in zip(heads, levels, strict=True):
        ln.heading = level
