"""Reading a PDF's text lines with pypdfium2, and the line tests the PDF modules share.

* **Lines.** Each page's text is read once (``FPDFText_GetText``); for every line only its
  first and last glyph are sampled (box, font name, weight), which keeps the converter at
  hundreds of pages a second. Pages are opened and closed one at a time; only lines are kept.
* **Noise.** Lines that repeat at the top or bottom of many pages (digits ignored, so "Page
  3 of 90" repeats) and lone page numbers there are running headers and footers: dropped.
* **Contents pages.** A page dominated by lines ending in a page number, or titled
  "Contents", is a table of contents.
* **Tracked text.** Where glyphs are placed one by one (letter-spaced capitals), pdfium
  guesses word spaces from the gaps and splits words ("OVERVI EW", "PART I V", "O V E R").
  A short line that looks like such a heading (mostly capitals, or a lone letter) and has a
  space pdfium generated is re-read glyph by glyph. The line's letter gap is the median gap
  between glyphs with nothing between them; with fewer than two such pairs, the smallest
  gap at a generated space, if at least one other is within the slack of it. A generated
  space between letters (or an apostrophe, a hyphen) on one baseline whose gap exceeds the
  letter gap by less than ``_TRACK_SLACK`` of the glyph height, and is under ``_TRACK_MAX``
  of it (wider parts table columns), is tracking, not a word space: dropped. A word space
  adds a space's width (about a quarter of the font size) to the tracking, so it stays.
  Spaces present in the PDF itself are never dropped; nor those of a line whose glyph
  pairs are all spaced alike, unless it is a run of at least four letters
  ("O V E R V I E W" is one word, "A B C" three).
  Mixed-case tracking ("Overvi ew") passes the cheap line test unseen and is left as is.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

from ...text.rows import is_table_row

__all__ = ["BULLET", "TABLE_PAGE_ROWS", "TOC_TITLE", "Line", "Reader", "drop_running_lines",
           "holds_table", "is_toc_line", "is_toc_page", "repair_ligatures"]

_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|,b", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?[-–—]?\s*(?:\d{1,4}|[ivxlc]{1,7})\s*[-–—]?"
                          r"(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_DIGITS = re.compile(r"(\d{1,4})")
_PAGE_REF = re.compile(r"(?:\s*\.{2,}\s*|\s+)(?:\d{1,4}|[ivxlc]{1,6})$")
TOC_TITLE = re.compile(r"^(?:table\s+of\s+)?contents$|^index$", re.IGNORECASE)
BULLET = re.compile(r"^(?:[•▪●◦\-–*]|\(?[a-z0-9]{1,3}\)|\d{1,2}\.)\s")
_EDGE = 3  # lines at the top and bottom of a page that may be running headers/footers
TABLE_PAGE_ROWS = 6  # table rows from which a page holds a table (a statement's page)
RUNNING_SHARE = 0.2  # share of text pages (and at least 3) an edge line repeats on to be noise
_TRACK_LINE = 120  # longest line checked for tracking-split words
_TRACK_SLACK = 0.12  # a word space's gap beats the letter gap by more (x glyph height)
_TRACK_MAX = 0.6  # widest letter tracking (x glyph height); wider gaps part columns
_SINGLE = re.compile(r"(?:^|\s)[B-HJ-Zb-z](?=\s|$)")  # a lone letter other than a, A, I
# A glyph a font maps to no text (its ToUnicode entry is empty: a ligature, "scal" for
# "fiscal") reads as U+FFFE, as pdfium's mark of a word hyphenated over two lines does;
# pdfium tells them apart (FPDFText_IsHyphen), and such a glyph is read as UNMAPPED.
UNMAPPED = "\ue000"
_LETTERS = r"[^\W\d_]"
_TOKEN = re.compile(rf"(?:{_LETTERS}|{UNMAPPED})+")  # a word with its unmapped glyphs
_LOOSE = re.compile(f"{UNMAPPED}(?![a-z])")  # one before no lower-case letter: not spelled
_WORD = re.compile(rf"{_LETTERS}+")
LIGATURES = ("fi", "fl", "ff", "ffi", "ffl")  # the Latin ligatures, commonest first
_MARKS_TRIED = 3  # a word with more unmapped glyphs takes "fi" for each, untried


@dataclass(slots=True)
class Line:
    """One text line of a page. Positions in points from the page's top-left corner."""

    text: str
    page: int  # 0-based
    size: float  # height of the first glyph's loose box: the effective font size
    bold: bool  # first and last glyph in a bold font
    top: float
    bottom: float
    heading: int = 0  # Markdown level once chosen as a heading
    right: float = 0.0  # right edge of the last glyph: a wrapped line reaches the margin
    left: float = 0.0  # left edge of the first glyph: a contents entry's indentation
    fixed: bool = False  # a heading placed from the document's contents: layout keeps it
    caption: bool = False  # a statement's title (levelled by the layout unless fixed)



def _norm(text: str) -> str:
    """A line's key for spotting repeats: lower case, digits as ``#``, spaces collapsed."""
    return " ".join(re.sub(r"\d+", "#", text.lower()).split())


def _in_word(ch: str) -> bool:
    """A glyph a tracked word is made of: a letter, an apostrophe or a hyphen."""
    return ch.isalpha() or ch in "'’-"


def _suspect(text: str) -> bool:
    """A short line with a space that may split a letter-spaced word: mostly capitals, or a
    lone letter. Only these are re-read glyph by glyph, which keeps the reader fast."""
    if len(text) > _TRACK_LINE or " " not in text:
        return False
    if _SINGLE.search(text) is not None:
        return True
    letters = sum(map(str.isalpha, text))
    return letters >= 3 and 5 * sum(map(str.isupper, text)) >= 3 * letters


def holds_table(lines: list[Line]) -> bool:
    """Whether a page holds a table: at least ``TABLE_PAGE_ROWS`` table rows."""
    return sum(1 for ln in lines if is_table_row(ln.text)) >= TABLE_PAGE_ROWS


class Reader:
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

    def _box(self, tp: object, i: int) -> tuple[float, float, float, float, float]:
        """Size, top, bottom, right and left of character ``i``; a coordinate a damaged page
        makes infinite or NaN (a huge text offset) reads as 0, so lines still sort."""
        r = self.rect
        pdfium_c.FPDFText_GetLooseCharBox(tp, i, r)
        box = (r.top - r.bottom, r.top, r.bottom, r.right, r.left)
        return box if all(map(math.isfinite, box)) else (0.0, 0.0, 0.0, 0.0, 0.0)

    def _tracking(self, tp: object, start: int, part: str) -> set[int]:
        """Offsets in ``part`` of the spaces pdfium generated where the gap is only the
        line's letter tracking (see the module docstring)."""
        glyphs = [i for i, ch in enumerate(part) if not ch.isspace() and ch != "\x00"]
        if not glyphs or not any(ch == " " and pdfium_c.FPDFText_IsGenerated(tp, start + i) == 1
                                 for i, ch in enumerate(part)):
            return set()
        boxes: dict[int, tuple[float, float, float, float]] = {}
        for i in glyphs:
            size, _, bottom, right, left = self._box(tp, start + i)
            boxes[i] = (left, right, bottom, size)
        unspaced: list[float] = []
        spaced: list[tuple[float, int, int]] = []  # gap, glyph before, glyph after
        for a, b in itertools.pairwise(glyphs):
            gap = boxes[b][0] - boxes[a][1]
            if b == a + 1:
                unspaced.append(gap)
            elif all(part[k] == " " and pdfium_c.FPDFText_IsGenerated(tp, start + k) == 1
                     for k in range(a + 1, b)):
                spaced.append((gap, a, b))
        if not spaced:
            return set()
        height = sorted(box[3] for box in boxes.values())[len(boxes) // 2]
        slack = _TRACK_SLACK * height
        if len(unspaced) >= 2:
            letter_gap = sorted(unspaced)[len(unspaced) // 2]
        else:
            gaps = sorted(gap for gap, _, _ in spaced)
            letter_gap = gaps[0]
            tracked = sum(1 for gap in gaps if gap - letter_gap < slack)
            if tracked < 2 or (tracked == len(gaps) and (
                    len(glyphs) < 4 or not all(part[i].isalpha() for i in glyphs))):
                return set()
        drop: set[int] = set()
        for gap, a, b in spaced:
            if (gap - letter_gap < slack and -slack < gap < _TRACK_MAX * height
                    and _in_word(part[a]) and _in_word(part[b])
                    and abs(boxes[a][2] - boxes[b][2]) < 0.3 * height):
                drop.update(range(a + 1, b))
        return drop

    def lines(self, page: pdfium.PdfPage, index: int) -> list[Line]:
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
            if "\ufffe" in text:  # a hyphen at a line's end, or a glyph mapped to no text
                text = "".join(UNMAPPED if ch == "\ufffe" and not pdfium_c.FPDFText_IsHyphen(
                    raw, i) else ch for i, ch in enumerate(text))
            height = page.get_height()
            height = height if math.isfinite(height) else 0.0
            out: list[Line] = []
            start = 0
            for part in text.replace("\r\n", "\n\x00")[:n].split("\n"):
                # each "\r\n" was two characters: "\n\x00" keeps the offsets
                stripped = part.strip(" \x00\t\r")
                if stripped:
                    first = start + len(part) - len(part.lstrip(" \x00\t\r"))
                    last = start + len(part.rstrip(" \x00\t\r")) - 1
                    size, top, _, _, left = self._box(raw, first)
                    _, _, bottom, right, _ = self._box(raw, last)
                    bold = self._bold(raw, first) and self._bold(raw, last)
                    if _suspect(stripped):  # drop spaces that split tracked words
                        drop = self._tracking(raw, start, part)
                        stripped = "".join(ch for i, ch in enumerate(part) if i not in drop)
                    clean = " ".join(stripped.replace("\x00", "").split())
                    out.append(Line(clean, index, round(size, 1), bold,
                                     height - top, height - bottom, right=right,
                                     left=left))
                start += len(part) + 1
            return out
        finally:
            tp.close()



def _edges(lines: list[Line]) -> list[Line]:
    """The top and bottom few lines of a page, by position."""
    by_top = sorted(lines, key=lambda ln: ln.top)
    return by_top[:_EDGE] + by_top[max(_EDGE, len(by_top) - _EDGE):]


def _edge_key(ln: Line) -> tuple[str, int]:
    """Running headers repeat their text (digits aside) at one place on the page."""
    return _norm(ln.text), round(ln.top / 5)


def drop_running_lines(pages: list[list[Line]]) -> list[int | None]:
    """Remove running headers/footers (edge lines repeated on many pages, digits ignored)
    and lone page numbers at a page's top or bottom, in place. Returns each page's printed
    number where its edge shows one in digits ("12", "- 12 -", "Page 12 of 90")."""
    printed: list[int | None] = [None] * len(pages)
    seen: Counter[tuple[str, int]] = Counter()
    for lines in pages:
        seen.update({_edge_key(ln) for ln in _edges(lines)})
    text_pages = sum(1 for p in pages if p)
    repeat = max(3, math.ceil(RUNNING_SHARE * text_pages))
    for i, lines in enumerate(pages):
        edges = _edges(lines)
        marks = [ln for ln in edges if _PAGE_NUMBER.match(ln.text)]  # lone page numbers
        drop = {id(ln) for ln in edges if seen[_edge_key(ln)] >= repeat}
        drop.update(id(ln) for ln in marks)
        printed[i] = next((int(m[1]) for ln in reversed(marks)
                           if (m := _DIGITS.search(ln.text))), None)
        if drop:
            pages[i] = [ln for ln in lines if id(ln) not in drop]
    return printed


def is_toc_line(text: str) -> bool:
    """A contents entry: words, then a page number (after spaces or dot leaders)."""
    m = _PAGE_REF.search(text)
    if m is None or "$" in text or "%" in text:
        return False
    return text[:m.start()].rstrip(" .\u2026")[-1:].isalpha()


def is_toc_page(lines: list[Line]) -> bool:
    """A contents page: titled "Contents", or most lines end in a page number."""
    if not lines:
        return False
    listed = sum(1 for ln in lines if is_toc_line(ln.text))
    if any(TOC_TITLE.match(ln.text) for ln in lines[:5]) and listed >= 3:
        return True
    return listed >= 5 and listed >= 0.5 * len(lines)


@functools.cache
def _ligature_words() -> dict[str, int]:
    """The shipped words that hold a ligature -> their rank (commonest first)."""
    text = (Path(__file__).parent / "ligature_words.txt").read_text(encoding="utf-8")
    words = [w for w in text.split("\n") if w and not w.startswith("#")]
    return {w: rank for rank, w in enumerate(words)}


def repair_ligatures(pages: list[list[Line]]) -> int:
    """Spell the glyphs pdfium could not map to text inside words, in place: each becomes
    the ligature (:data:`LIGATURES`) that makes the word the document itself spells most
    often ("?scal" -> "fiscal" where "FISCAL" appears), else the commonest such word of
    ``ligature_words.txt`` ("o?ce" -> "office"), else "fi"; one before anything but a
    lower-case letter is left as pdfium's U+FFFE, as before. Returns how many glyphs were
    spelled. Linear in the text: one pass to count the words, one over the lines holding a
    mark (at most 5^3 spellings a word)."""
    marked = [ln for lines in pages for ln in lines if UNMAPPED in ln.text]
    if not marked:
        return 0
    seen = Counter(w.lower() for lines in pages for ln in lines for w in _WORD.findall(ln.text))
    known = _ligature_words()
    count = 0

    def spell(word: str) -> str:
        nonlocal count
        parts = word.split(UNMAPPED)
        marks = len(parts) - 1
        count += marks
        tries = itertools.product(LIGATURES, repeat=marks) if marks <= _MARKS_TRIED else ()
        words = [parts[0] + "".join(lig + rest for lig, rest in zip(combo, parts[1:],
                                                                     strict=True))
                 for combo in tries]
        found = [w for w in words if seen[w.lower()] or w.lower() in known]
        if not found:
            return "fi".join(parts)
        return max(found, key=lambda w: (seen[w.lower()], -known.get(w.lower(), len(known))))

    def token(m: re.Match[str]) -> str:
        # marks before no lower-case letter part the token and stay pdfium's U+FFFE; each
        # piece between them that holds a mark is a word to spell
        pieces = _LOOSE.split(m[0])
        return "\ufffe".join(spell(p) if UNMAPPED in p else p for p in pieces)

    for ln in marked:
        ln.text = _TOKEN.sub(token, ln.text)
    return count
