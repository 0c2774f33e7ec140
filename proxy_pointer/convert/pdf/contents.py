"""Headings from a PDF's own contents pages, verified on the pages they point to.

A report declares its structure in its contents list: every entry has a title, a printed
page and, by its indentation and numbering, a depth. PageIndex reads that list with an LLM
at every step; here it is read from the layout and checked against the page text:

* **Entries.** On a contents page (:func:`~.lines.is_toc_page`) each line that ends in a
  page number is an entry; a line that wraps onto the next one ("... Purchases of Equity" /
  "Securities 19") is joined to it; a short line without a page number between entries
  ("PART II", "OUR FINANCIAL RESULTS") is a group header. Contents pages that follow each
  other make one list.
* **Depth.** An entry nests under the entry before it of a higher numbering rank when both
  are numbered (``PART`` > ``Item``, :mod:`.numbering`), under the group header before it,
  or under an entry that is clearly less indented.
* **Pages.** A printed page becomes a physical one through the page numbers the pages
  themselves print (kept by :func:`~.lines.drop_running_lines`): the first page after
  the list that prints that number, or the nearest printed neighbour's offset. Without
  printed numbers, the offset most entries' titles agree on is used (one vote per entry
  whose title is found on ``printed + offset``).
* **Placement.** Each entry's title is looked for on its page, then the pages next to it,
  matched tolerantly: case, spacing, punctuation, a title wrapped over lines, plural ``s``
  ("Statement"/"Statements") and a date qualifier ("... for the years ended ...") do not
  matter; the line must start the title and be mostly title (not a paragraph that begins
  with those words). A found entry becomes a heading on that line, at its depth below the
  heading the list itself sits under (a statement index on the Item 8 page goes under Item
  8). An entry found nowhere is counted and reported, never invented, and its children in
  the list move up into its place. A group header has no page of its own, so only a line
  that is exactly its title places it.

The placed headings are fixed: layout headings (:mod:`.layout`) nest below them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from ...vocab.filings import FILINGS
from ...vocab.keys import title_key
from ..numbering import TOP_RANK, numbering_rank
from .lines import Line, holds_table, is_toc_line

__all__ = [
    "Entry",
    "Placement",
    "find_title",
    "place_contents",
    "place_statements",
    "read_entries",
    "set_depths",
    "split_title",
]

_PAGE_AT_END = re.compile(r"(?:\s*[.\u2026]{2,}\s*|\s+)(\d{1,4})$")
_ROMAN_AT_END = re.compile(r"\s+(?:[ivxlc]{1,6}|[A-Z]-\d{1,3})$")
_COLUMN_LABEL = re.compile(r"\s*\b(?:page(?:\s+no\.?)?|pages)$", re.IGNORECASE)
# a date qualifier a contents entry carries and the page's title line leaves to the next
# line: "... for the years ended December 31, 2022", "- December 31, 2022 and 2021"
_QUALIFIER = re.compile(
    r"(?:\s*[-–—,]\s*|\s+)(?:(?:for\s+(?:the\s+)?(?:fiscal\s+)?(?:years?|periods?|quarters?|"
    r"(?:three|six|nine|twelve)\s+months)|(?:at|as\s+(?:of|at))\s+(?:[A-Z][a-z]+\s+\d|\d))\b"
    rf"|(?:{'|'.join(FILINGS.months)})\s+\d{{1,2}},\s+\d{{4}}).*$", re.IGNORECASE)
_YEAR_END = re.compile(r"[A-Za-z].*\b(?:19|20)\d\d$")  # "... December 31, 2022 and 2021 50"
_BULLET = re.compile(r"^[•▪●◦\-–*]\s")
# a financial statement's title: "Consolidated Balance Sheets", "Condensed Statements of
# Operations", "Statement of Changes in Shareholders' Equity", "Income Statement" (the titles
# are the vocabulary's: proxy_pointer/vocab/filings.toml)
_STATEMENT = FILINGS.statement_pattern
_CONTINUED = FILINGS.continued_pattern
_RUN_IN_ENDS = ".:\u2013\u2014"  # what ends a run-in title: "Business." "Business:"
_CAPTION_LINES = 8  # a statement's title is among the first lines of its page
# the filer's name before a statement's title on one line, as a running head prints it:
# "Acme Widgets, Inc. - Consolidated Balance Sheets", "ACME INC. AND SUBSIDIARIES
# CONSOLIDATED BALANCE SHEETS": it ends in one of the vocabulary's legal suffixes (a short
# one with or without dots: "NV", "N.V.") or "subsidiaries"; "and" and "&" join a name, they
# never end one. Read within the line's first _FILER_CHARS characters.
_SUFFIX_WORDS = [r"\.?".join(map(re.escape, w)) if len(w) <= 2 else re.escape(w)
                 for w in FILINGS.legal_suffixes if w.isalpha() and w != "and"]
_FILER_END = re.compile(rf"\b(?:{'|'.join([*_SUFFIX_WORDS, 'subsidiaries'])})\b\.?\s*"
                        r"(?:[-–—|:]\s*)?", re.IGNORECASE)
_FILER_CHARS = 100
# a title broken after "of" or "and": "Consolidated Statements of" / "Cash Flows"
_BROKEN = re.compile(r"\b(?:of|and|in)$", re.IGNORECASE)
_LABEL = re.compile(rf"^\s*(?:{'|'.join(lab.word for lab in FILINGS.labels_read('contents'))})"
                    r"\s+(?=[\divxlc]+[a-z]?\b)", re.IGNORECASE)
_INDENT = 3.0  # points: indentations closer than this are the same column
_NEARBY = (0, 1, -1, 2)  # pages tried around the computed one, in order
_MIN_KEY = 4  # characters of key a title needs to be looked for at all


@dataclass(slots=True)
class Entry:
    """One contents entry. ``page`` is the printed page (``None``: a group header);
    ``depth`` its depth in its list (1 = top); ``source`` the physical page the list is on."""

    title: str
    page: int | None
    source: int
    indent: float
    rank: int | None
    line: Line  # the contents line it was read from
    depth: int = 1


@dataclass(slots=True)
class Placement:
    """What :func:`place_contents` did: entries found on their pages and those not found."""

    found: int = 0
    missing: list[Entry] = field(default_factory=list)
    #: id of each placed heading -> the line its list starts at: its ``heading`` is a depth
    #: below the heading open there, which the layout (:mod:`.layout`) resolves
    anchors: dict[int, Line] = field(default_factory=dict)


def _split_page(text: str) -> tuple[str, int | None] | None:
    """``(title, printed page)`` of a contents line, ``(title, None)`` for a line without a
    number, ``None`` for a line whose page is not a plain number (roman, "A-1")."""
    m = _PAGE_AT_END.search(text) if text[-1:].isdigit() else None
    title = text[:m.start()].rstrip(" .\u2026") if m is not None else ""
    if m is not None and (title[-1:].isalpha() or title[-1:] in ")]"
                          or _YEAR_END.search(title)):
        return title, int(m[1])
    if _ROMAN_AT_END.search(text) and is_toc_line(text):
        return None
    return _COLUMN_LABEL.sub("", text).strip(), None


def _group_header(title: str, rank: int | None) -> bool:
    """A short line between entries that names a group ("PART II", "OUR BUSINESS")."""
    words = title.split()
    return (0 < len(words) <= 12 and title[-1:] not in ".:;," and title[:1].isupper()
            and (rank is not None or sum(c.isalpha() for c in title) >= 3))


def _wraps(ln: Line, nxt: Line, margin: float) -> bool:
    """Whether a contents line without a page number goes on in ``nxt``: the same row, or
    an unnumbered line with the page number after a line that fills its width (wrapped) or
    before a lower-case start."""
    size = max(ln.size, nxt.size, 1.0)
    if _COLUMN_LABEL.search(ln.text):
        return False  # a header row: "CONSOLIDATED FINANCIAL STATEMENTS PAGE"
    if abs(nxt.top - ln.top) < 0.5 * size:
        return True
    split = _split_page(nxt.text)
    if split is None or split[1] is None or numbering_rank(nxt.text) is not None:
        return False
    full = ln.right - ln.left >= 0.7 * (margin - ln.left) and len(ln.text.split()) >= 4
    return full or nxt.text[:1].islower()


def read_entries(lines: list[Line], source: int, pages: int = 10_000) -> list[Entry]:
    """The entries of one contents page, in order, with ``depth`` still unset (module
    docstring). Lines already placed as headings (the page's own heading) are skipped, and
    so is a line whose number is past the document's ``pages`` ("... Act of 1934")."""
    margin = max((ln.right for ln in lines), default=0.0)
    out: list[Entry] = []
    pending: str | None = None
    head = lines[0] if lines else None  # the first line of the entry being read
    for k, ln in enumerate(lines):
        if ln.fixed:
            pending = None
            continue
        text, head = (ln.text, ln) if pending is None else (f"{pending} {ln.text}", head)
        split = _split_page(text)
        if split is None:
            pending = None
            continue
        title, page = split
        if page is not None and page > pages:
            pending = None
            continue
        if page is None and k + 1 < len(lines) and _wraps(ln, lines[k + 1], margin):
            pending = text
            continue
        pending = None
        rank = numbering_rank(title)
        labelled = page is None and _COLUMN_LABEL.search(text) is not None
        if page is None and not ((out or rank is not None) and _group_header(title, rank)
                                 and (rank is not None or not labelled)):
            continue
        if len(title_key(title)) >= _MIN_KEY and head is not None:
            out.append(Entry(title, page, source, head.left, rank, head))
    while out and out[-1].page is None:  # a header with nothing under it
        out.pop()
    return out


def _above(top: Entry, entry: Entry) -> bool:
    """Whether ``top`` is a parent of ``entry`` when it comes before it in a list: by
    numbering when both are numbered (a centred "PART I" is above a left "1. Business"),
    a group header is above the entries after it, else by indentation."""
    if top.rank is not None and entry.rank is not None:
        return top.rank < entry.rank
    if entry.rank is not None and entry.rank <= TOP_RANK:
        return False  # a part is below no unnumbered entry, however it is indented
    if top.page is None and entry.page is not None:
        return True
    return top.indent < entry.indent - _INDENT


def set_depths(entries: list[Entry]) -> None:
    """Give each entry of one list its depth, in place (a stack of open entries)."""
    stack: list[Entry] = []
    for entry in entries:
        while stack and not _above(stack[-1], entry):
            stack.pop()
        stack.append(entry)
        entry.depth = len(stack)


def _core(title: str) -> str:
    """The key of a title without its date qualifier."""
    return title_key(_QUALIFIER.sub("", title)) or title_key(title)


@lru_cache(maxsize=1 << 16)
def _unlabel(text: str) -> str:
    """A text's key without its numbering label: "Item 1. Business" matches "1. Business"."""
    return title_key(_LABEL.sub("", text))


def _keys(title: str) -> tuple[str, str]:
    """A title's keys without numbering label: without its date qualifier, and whole."""
    full = _unlabel(title)
    return _unlabel(_QUALIFIER.sub("", title)) or full, full


def _listed(text: str, want: str) -> bool:
    """Whether a line is a contents entry for the title (the title, then a page number)."""
    m = _PAGE_AT_END.search(text) if text[-1:].isdigit() else None
    return m is not None and _unlabel(text[:m.start()]).startswith(want)


def _match_at(lines: list[Line], k: int, want: str, full: str) -> int:
    """How many lines from ``k`` on spell the title (0: the title does not start there).
    ``want`` and ``full`` are the title's keys without numbering label, with and without
    its date qualifier."""
    ln = lines[k]
    got = _unlabel(ln.text)
    if (ln.heading or not got or _BULLET.match(ln.text) or _listed(ln.text, want)
            or _COLUMN_LABEL.search(ln.text)  # a contents page's header row
            or ln.text.endswith(":")  # a lead-in: "Our critical policies are:"
            or not (want.startswith(got) or got.startswith(want) or full.startswith(got))):
        return 0
    if len(got) > 1.5 * len(want) + 8 and not (ln.bold or ln.text.isupper()):
        return 1 if run_in(ln.text, want) else 0  # else a paragraph that begins so
    count = 1
    while (not (got.startswith(want) or got == full) and k + count < len(lines)
           and not lines[k + count].heading):
        more = got + title_key(lines[k + count].text)
        near = lines[k + count].top - lines[k + count - 1].top < 2.5 * max(ln.size, 1.0)
        if not near or not (want.startswith(more) or more.startswith(want)
                            or full.startswith(more)):
            break
        got, count = more, count + 1
    whole = got.startswith(want) or got == full
    return count if whole or (len(got) >= max(12, 0.6 * len(want))
                              and want.startswith(got)) else 0


def run_in(text: str, want: str) -> bool:
    """Whether a line opens with a labelled title that its text runs on from ("Item 1.
    Business. Unless the context ..."): the words after the label spell ``want`` (a key
    without label) and the last of them ends in a full stop, colon or dash."""
    m = _LABEL.match(text)
    if m is None:
        return False
    got = ""
    for word in text[m.end():].split():
        got += title_key(word)
        if len(got) >= len(want):
            return got == want and word[-1] in _RUN_IN_ENDS
    return False


def find_title(lines: list[Line], title: str, *, whole: bool = False
               ) -> tuple[int, int] | None:
    """``(first line, line count)`` of ``title`` on a page (module docstring), or None.
    Of several lines that spell it, one that is exactly the title beats one that only
    begins with it, then one that stands out (bold, larger than the page's usual size, or
    in capitals) beats one that does not, then the first wins. ``whole``: only a line that
    is exactly the title (a group header has no page of its own to vouch for a prefix)."""
    want, full = _keys(title)
    hits = [(k, n) for k in range(len(lines)) if (n := _match_at(lines, k, want, full))]

    def exact(hit: tuple[int, int]) -> bool:
        k, n = hit
        return _unlabel(" ".join(ln.text for ln in lines[k:k + n])) in (want, full)

    hits = [hit for hit in hits if exact(hit)] if whole else hits
    if not hits:
        return None
    usual = sorted(ln.size for ln in lines)[len(lines) // 2]

    def rank(hit: tuple[int, int]) -> tuple[bool, bool]:
        ln = lines[hit[0]]
        return not exact(hit), not (ln.bold or ln.size > usual + 0.5 or ln.text.isupper())

    return min(hits, key=rank)  # the first exact, prominent line, else the first


def _offset_vote(pages: list[list[Line]], entries: list[Entry]) -> int | None:
    """The printed-to-physical offset most entries' titles agree on, or None."""
    votes: Counter[int] = Counter()
    for entry in entries:
        if entry.page is None:
            continue
        for p in range(max(entry.source + 1, entry.page - 10),
                       min(len(pages), entry.page + 60)):
            if find_title(pages[p], entry.title) is not None:
                votes[p - entry.page] += 1
                break
    return max(votes, key=lambda o: (votes[o], -abs(o))) if votes else None


def _physical(printed: list[int | None], page: int, source: int, offset: int | None
              ) -> int | None:
    """The physical page that printed ``page`` is, for a list on page ``source`` (module
    docstring)."""
    after = range(source + 1, len(printed))
    exact = next((p for p in after if printed[p] == page), None)
    if exact is not None:
        return exact
    known = [(abs(n - page), p - n) for p in after if (n := printed[p]) is not None]
    if known:
        return page + min(known)[1]
    return None if offset is None else page + offset


def _lists(pages: list[list[Line]], toc: set[int]) -> Iterator[list[Entry]]:
    """The contents lists, each run of consecutive contents pages one list, read when
    the lists before it are placed (so a heading they placed on its page is not an entry)."""
    run: list[Entry] = []
    for p in sorted(toc):
        if run and run[-1].source != p - 1:
            yield run
            run = []
        run.extend(read_entries(pages[p], p, len(pages)))
    if run:
        yield run


def _place(pages: list[list[Line]], entry: Entry, page: int, level: int) -> Line | None:
    """Mark ``entry``'s title as a fixed heading on ``page`` or a page next to it."""
    want = _keys(entry.title)[0]
    for step in _NEARBY:
        p = page + step
        if not entry.source < p < len(pages):
            continue
        done = next((ln for ln in pages[p] if ln.fixed
                     and _unlabel(ln.text).startswith(want)), None)
        if done is not None:  # an earlier list placed it
            return done
        hit = find_title(pages[p], entry.title, whole=entry.page is None)
        if hit is None:
            continue
        k, count = hit
        lines = pages[p]
        lines[k].text = " ".join(ln.text for ln in lines[k:k + count])
        del lines[k + 1:k + count]
        if _STATEMENT.match(entry.title):  # "... Statements of Income Corning Incorporated"
            split_title(lines, k, _core(entry.title))
            lines[k].caption = True
        elif run_in(lines[k].text, want):  # "Item 1. Business. Unless the context ..."
            split_title(lines, k, title_key(entry.title))
        lines[k].heading, lines[k].fixed = level, True
        return lines[k]
    return None


def split_title(lines: list[Line], k: int, want: str) -> None:
    """Cut ``lines[k]`` after the words that spell ``want`` when more follows on the line
    ("Consolidated Statements of Income Corning Incorporated and ..."): the rest becomes
    a line of its own, so the heading is the title, in place."""
    words = lines[k].text.split()
    got = ""
    for i, word in enumerate(words):
        got += title_key(word)
        if len(got) >= len(want):
            rest = " ".join(words[i + 1:])
            if got == want and len(title_key(rest)) > 8:
                ln = lines[k]
                ln.text = " ".join(words[:i + 1])
                lines.insert(k + 1, Line(rest, ln.page, ln.size, False, ln.top, ln.bottom,
                                         right=ln.right, left=ln.left))
            return


def place_contents(pages: list[list[Line]], toc: set[int], printed: list[int | None]
                   ) -> Placement:
    """Find the contents lists on the ``toc`` pages and mark their entries as fixed headings
    on the pages they name, in place; returns what was found (module docstring)."""
    result = Placement()
    for entries in _lists(pages, toc):
        set_depths(entries)
        offset = None if any(n is not None for n in printed) else _offset_vote(pages, entries)
        anchor = entries[0].line
        lifted: list[int] = []  # depths of entries not placed: their children move up
        for i, entry in enumerate(entries):
            while lifted and lifted[-1] >= entry.depth:
                lifted.pop()
            target = entry.page
            if target is None:  # a group header: it starts where its first entry does
                target = next((e.page for e in entries[i + 1:] if e.page is not None), None)
            page = None if target is None else _physical(printed, target, entry.source, offset)
            line = None if page is None else _place(pages, entry, page,
                                                    entry.depth - len(lifted))
            if line is not None:
                result.found += 1
                result.anchors.setdefault(id(line), anchor)
                continue
            lifted.append(entry.depth)
            if entry.page is not None:
                result.missing.append(entry)
    return result


def place_statements(pages: list[list[Line]], anchors: dict[int, Line]) -> int:
    """Make each financial statement's title a heading where no contents entry did: a line
    among the first of a page that names a statement (``_STATEMENT``, not "continued"), on
    a page holding a table, the first page for each kind of statement (income, position,
    cash flows, comprehensive income, equity) that no heading names yet. A title may follow
    the filer's name on its line (a running head: the name becomes a line of its own) or
    break after "of" (its two lines become one). After a numbered heading placed from the
    contents (Item 8) it goes one level below it, fixed; otherwise it is a caption the
    layout nests under the numbered heading before it. Returns how many it placed."""
    done = {_kind(m[0]) for lines in pages for ln in lines
            if ln.heading and (m := _STATEMENT.match(ln.text))}
    placed = 0
    for lines in pages:
        if not holds_table(lines):
            continue
        for k in range(min(_CAPTION_LINES, len(lines))):
            found = _caption(lines, k)
            if found is None:
                continue
            k, m = found
            ln = lines[k]
            if (ln.heading or _CONTINUED.search(ln.text)
                    or len(ln.text.split()) > 16):
                continue
            kind = _kind(m[0])
            if kind not in done:
                done.add(kind)
                split_title(lines, k, _core(m[0]))
                _level_statement(pages, ln, anchors)
                placed += 1
            break
    return placed


def _caption(lines: list[Line], k: int) -> tuple[int, re.Match[str]] | None:
    """``(index, match)`` of the statement title ``lines[k]`` starts with, after making it
    one line of its own: a filer's name before it stays on ``lines[k]`` and the title
    becomes the line after it; a title broken after "of" is joined with the next line.
    ``None`` (and nothing changed) when the line names no statement."""
    ln = lines[k]
    m = _STATEMENT.match(ln.text)
    if (_BROKEN.search(ln.text) and k + 1 < len(lines) and not lines[k + 1].heading
            and (joined := _STATEMENT.match(f"{ln.text} {lines[k + 1].text}"))
            and (m is None or len(joined[0]) > len(m[0]))):
        ln.text = f"{ln.text} {lines.pop(k + 1).text}"
        return k, joined
    if m is not None:
        return k, m
    for f in _FILER_END.finditer(ln.text[:_FILER_CHARS]):
        rest = ln.text[f.end():]
        if f.start() > 0 and _STATEMENT.match(rest) is not None:
            lines.insert(k + 1, Line(rest, ln.page, ln.size, ln.bold, ln.top, ln.bottom,
                                     right=ln.right, left=ln.left))
            ln.text = ln.text[:f.end()].rstrip(" -–—|:")
            return _caption(lines, k + 1)
    return None


def _kind(title: str) -> str:
    """Which of the five primary statements a statement title names."""
    return FILINGS.statement_kind(title)


def _level_statement(pages: list[list[Line]], caption: Line, anchors: dict[int, Line]
                     ) -> None:
    """Fix a statement title one level below the numbered contents heading before it (a
    sibling of an unnumbered one), or leave it to the layout as a caption."""
    last: Line | None = None
    for lines in pages[:caption.page + 1]:
        for ln in lines:
            if ln is caption:
                break
            if ln.fixed and (last is None or numbering_rank(ln.text) is not None
                             or numbering_rank(last.text) is None):
                last = ln
    if last is None or id(last) not in anchors:
        caption.caption = True
        return
    anchors[id(caption)] = anchors[id(last)]
    numbered = numbering_rank(last.text) is not None
    caption.heading, caption.fixed = last.heading + numbered, True
    caption.caption = True
