"""Where a Markdown document's headings are: CommonMark parsing and heading recovery.

:mod:`proxy_pointer.parse.tree` turns a list of headings into the node tree; this module finds
that list. Headings come from markdown-it-py's CommonMark block parser (plus GFM tables and
YAML front matter), never from line regexes, so ``#`` lines inside code fences of any length
and either marker, indented code, HTML blocks, front matter, lists and block quotes are not
headings, while setext headings and ATX headings indented by up to three spaces are.

Recovery (off unless asked for) handles documents converted from PDF, which often mark
headings only as a bold line or a numbered line, or flatten every heading to one level: such
lines are promoted and flattened numbered headings re-levelled (see
:class:`proxy_pointer.parse.tree.TreeConfig`). It guesses, so it lives apart from the exact parse.

Line numbers here are 0-based, as in :mod:`proxy_pointer.parse.tree`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.rules_block.html_block import HTML_SEQUENCES
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from ..vocab.filings import FILINGS

__all__ = ["Heading", "Outline", "block_parser", "find_headings"]


@dataclass(slots=True)
class Heading:
    """One heading found in the text.

    ``start``/``body_start``: 0-based half-open line range of the heading line(s). ``level``:
    1-6. ``raw``: the inline source as written; ``plain``: its plain text. ``recovered``: a
    paragraph promoted by recovery. ``numbering``: ``(scheme, depth, rest)`` of its section
    numbering, set during recovery only.
    """

    start: int
    body_start: int
    level: int
    raw: str
    plain: str
    recovered: bool = False
    numbering: tuple[str, int, str] | None = None


@dataclass
class Outline:
    """What :func:`find_headings` found: the headings in document order, problems met while
    parsing (an unclosed code fence), and the front-matter ``title`` if there is one."""

    headings: list[Heading]
    warnings: list[str] = field(default_factory=list)
    front_matter_title: str | None = None


def find_headings(text: str, lines: list[str], doc_id: str, *, recover: bool = False,
                  max_recovered_title_chars: int = 120, scan: bool = True) -> Outline:
    """The top-level ATX and setext headings of ``text`` (whose lines are ``lines``).

    A leading UTF-8 BOM is ignored. With ``recover``, one-line paragraphs that read as
    headings (at most ``max_recovered_title_chars`` characters of plain text) are added and
    headings are re-levelled (see :class:`proxy_pointer.parse.tree.TreeConfig`). ``doc_id`` only
    names the document in warnings. Never raises on Markdown content.

    With ``scan`` (the default) a document without the constructs that can hide a ``#``
    line at the start of a line or make another line a heading (see
    :func:`_scan_headings`) is read by a line scanner, which finds what the CommonMark parse
    finds; ``scan=False`` always parses.
    """
    if scan and not recover:
        found = _scan_headings(text, lines)
        if found is not None:
            return Outline(found)
    parse_src = text[1:] if text.startswith("\ufeff") else text
    env: dict = {}
    tokens = block_parser(lines).parse(parse_src, env)
    warnings: list[str] = []
    headings: list[Heading] = []
    candidates: list[Heading] = []

    for i, tok in enumerate(tokens):
        typ = tok.type
        if typ == "heading_open":
            if tok.level == 0 and tok.map:
                content = tokens[i + 1].content
                # Setext content keeps its line breaks; a title is one line.
                raw = " ".join(part.strip() for part in content.split("\n")) if (
                    "\n" in content) else content.strip()
                headings.append(Heading(tok.map[0], tok.map[1], int(tok.tag[1]), raw,
                                        _plain(_inline(content, env))))
        elif typ == "fence":
            problem = _unclosed_fence(tok, lines)
            if problem and tok.map:
                warnings.append(f"{doc_id}: line {tok.map[0] + 1}: code fence {tok.markup!r} "
                                f"{problem}")
        elif (typ == "paragraph_open" and recover and tok.level == 0 and tok.map
              and tok.map[1] - tok.map[0] == 1):
            cand = _recovery_candidate(tok.map[0], tokens[i + 1].content, env,
                                       max_recovered_title_chars)
            if cand:
                candidates.append(cand)

    if recover:
        headings = _recover(headings, candidates)
    return Outline(headings, warnings, _front_matter_title(tokens))


# --- scanning ------------------------------------------------------------------------------
# Any of these makes a '#' line possibly not a heading, or another line a heading: code
# fences, link reference definitions (heading text may link to them), NUL (replaced before
# parsing), a BOM, bare CR line ends (which the patterns here would not see as line ends),
# '#' after indentation (lists, indented code), and an HTML block of types 1-5 (comments,
# <pre>..., which end only at their closing sequence) after a list or quote marker. Other
# HTML inside a list item or block quote ends with it, at the latest at a '#' line.
_DEFER_TEXT = ("```", "~~~", "]:", "\x00", "\ufeff")
_DEFER_RE = re.compile(  # searched in "\n" + text: each alternative starts a line
    r"\n(?:[ \t]*(?:>[ \t]*|[*+\-][ \t]+|\d{1,9}[.)][ \t]+)+"
    r"<(?:[!?]|(?i:script|pre|style|textarea))|[ \t]+#)"
)
_SETEXT_RE = re.compile(r"[ \t>]*(?:=+|-+)[ \t]*")  # a line that may underline a paragraph
_HTML_STARTS = [seq[0] for seq in HTML_SEQUENCES]  # markdown-it's, in its order
_HTML_UNTIL_BLANK = 5  # the index of CommonMark's HTML block type 6 (<table>, <div>, ...)
_BLANK_END = re.compile(r"^$")  # type 6 ends before a blank line
_MD_TRIM = " \t\n\v\f\r"  # markdown-it's mdTrim set (CommonMark whitespace)


def _scan_headings(text: str, lines: list[str]) -> list[Heading] | None:
    """The headings of a document without fences, setext headings, front matter or
    reference definitions, found line by line exactly as markdown-it-py finds them; None for
    any other document (see :data:`_DEFER_TEXT`, :data:`_DEFER_RE`), which is parsed instead.

    In such a document a line starting with ``#`` is a heading unless it is inside an HTML
    block: an ATX heading interrupts a paragraph, a table and a reference, is never a lazy
    continuation of a list item or block quote, and ends indented code. HTML blocks that
    start a line are followed with markdown-it's own patterns: types 1-5 (``<!--``,
    ``<pre>``...) up to their end, type 6 (``<table>``, ``<div>``...) up to a blank line;
    type 7 (any lone tag, which cannot interrupt a paragraph) or an HTML block after one to
    three spaces defers, and so does a line that may
    underline a paragraph (``---``, ``===``) unless a blank line comes before it.
    """
    if any(t in text for t in _DEFER_TEXT) or ("\r" in text and re.search(r"\r(?!\n)", text)):
        return None
    if _DEFER_RE.search("\n" + text):
        return None
    env: dict = {}
    out: list[Heading] = []
    html_end: re.Pattern[str] | None = None  # the end of the HTML block the line is in
    for i, line in enumerate(lines):
        first = line[0]
        if html_end is not None:
            if html_end is _BLANK_END:
                if not line.strip(" \t\r\n"):
                    html_end = None  # the blank line is not part of the block
            elif html_end.search(line.rstrip("\r\n")):
                html_end = None  # the line with the end is
            continue
        if first == " " and line.lstrip(" ")[:1] == "<" and len(line) - len(line.lstrip(" ")) < 4:
            return None  # an HTML block may start after one to three spaces
        if first == "<":
            src = line.rstrip("\r\n")
            kind = next((k for k, start in enumerate(_HTML_STARTS) if start.search(src)), None)
            if kind is None:
                continue  # paragraph text
            after = lines[i + 1].lstrip(" \t")[:1] if i + 1 < len(lines) else ""
            if kind > _HTML_UNTIL_BLANK or (after and after in "|-:"):
                return None  # type 7 (which a paragraph may hold), or maybe a table's header
            closing = HTML_SEQUENCES[kind][1]
            html_end = _BLANK_END if kind == _HTML_UNTIL_BLANK else (
                None if closing.search(src) else closing)
            continue
        if first in " \t>=-" and _SETEXT_RE.fullmatch(line.rstrip("\r\n")):
            if i == 0 or lines[i - 1].strip(" \t\r\n"):
                return None  # a setext underline, or front matter
            continue  # after a blank line: a thematic break, a list item or code
        if first != "#":
            continue
        s = line.rstrip("\r\n")
        n = len(s)
        level, pos = 1, 1
        while pos < n and s[pos] == "#" and level <= 6:
            level += 1
            pos += 1
        if level > 6 or (pos < n and s[pos] not in " \t"):
            continue
        end = n
        while end > pos and s[end - 1] in " \t":
            end -= 1
        tmp = end
        while tmp > pos and s[tmp - 1] == "#":
            tmp -= 1
        if tmp > pos and s[tmp - 1] in " \t":
            end = tmp
        content = s[pos:end].strip(_MD_TRIM)
        out.append(Heading(i, i + 1, level, content.strip(), _plain(_inline(content, env))))
    return out


# --- parsing -------------------------------------------------------------------------------
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table")
    md.use(front_matter_plugin)
    return md


# Headings and fences are block structure, which inline parsing never changes, so the
# document is parsed block-only and only heading (and recovery-candidate) text is parsed
# inline: this skips most of markdown-it's work on a large file.
_MD = _parser()
_BLOCK_MD = _parser().disable("inline")
_BLOCK_MD_NO_FRONT_MATTER = MarkdownIt("commonmark").enable("table").disable("inline")


def block_parser(lines: list[str]) -> MarkdownIt:
    """The block parser for this text: without front matter when the opening ``---`` is
    followed by a blank line, which makes it a thematic break (Pandoc's rule), so a converted
    document that starts with a rule does not lose its headings to the next rule."""
    if len(lines) >= 2 and lines[0].lstrip("\ufeff").rstrip() == "---" and not lines[1].strip():
        return _BLOCK_MD_NO_FRONT_MATTER
    return _BLOCK_MD


def _plain(children: list[Token]) -> str:
    """The plain text of inline tokens (markup, HTML tags and link targets dropped)."""
    parts: list[str] = []
    for child in children:
        if child.type in ("text", "text_special", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


def _inline(content: str, env: dict) -> list[Token]:
    children: list[Token] = []
    _MD.inline.parse(content, _MD, env, children)
    return children


def _unclosed_fence(tok: Token, lines: list[str]) -> str | None:
    """Why the fence token is unclosed, or None when it has its closing line."""
    start, end = tok.map  # type: ignore[misc]
    if tok.level == 0:
        # A closing fence: indented < 4 columns, a run of the marker at least as long as the
        # opening one, then only spaces (CommonMark 4.5).
        last = lines[end - 1] if end - start >= 2 else ""
        indent = len(last.expandtabs(4)) - len(last.expandtabs(4).lstrip(" "))
        body = last.strip(" \t\r\n")
        closed = (end - start >= 2 and indent < 4 and len(body) >= len(tok.markup)
                  and body == tok.markup[0] * len(body))
        return None if closed else "is never closed; the rest of the document is treated as code"
    content = tok.content
    n_content = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    if end - start == n_content + 2:
        return None
    return "is not closed before its list item or block quote ends"


def _front_matter_title(tokens: list[Token]) -> str | None:
    if tokens and tokens[0].type == "front_matter":
        m = re.search(r"^title:[ \t]*(.+?)[ \t]*$", tokens[0].content, re.M)
        if m:
            value = m.group(1)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            elif value in (">", "|", ">-", "|-"):
                return None  # a multi-line YAML scalar: not worth a YAML parser here
            return value or None
    return None


# --- heading recovery ----------------------------------------------------------------------
# "2.1.3 Title", "2.1. Title", "10 Conclusion": at most two digits first and no leading
# zero, so a year, an amount or a label ("2022 results", "0 - out of scope") is not section
# numbering.
_DECIMAL_RE = re.compile(r"(?P<num>\d{1,2}(?:\.\d{1,3})*)\.?\s+(?P<rest>\S.*)")
_KEYWORD_RE = re.compile(
    rf"(?P<kw>{FILINGS.cased_labels('heading')})"
    rf"(?:\s+(?:{FILINGS.cased_labels('float')}))?"
    r"\s+(?P<num>[A-Z]{0,2}\d+(?:\.\d+)*[A-Z]?|[IVXLCDM]+|[A-Z])"
    r"(?P<rest>(?:[.:)]|\s+[-–—:]|\s)?.*)"
)
_SEPARATORS = ".:)-–— \t"
_PAGE_NUMBER_RE = re.compile(r"\S\s+\d{1,3}$")


def _numbering(plain: str) -> tuple[str, int, str] | None:
    """(scheme, depth, rest) for a title with section numbering, else None.

    scheme is ``""`` for bare decimal numbering and the lower-cased keyword otherwise.
    """
    m = _DECIMAL_RE.fullmatch(plain)
    if m and not m.group("num").startswith("0"):
        return "", m.group("num").count(".") + 1, m.group("rest")
    m = _KEYWORD_RE.fullmatch(plain)
    if m:
        return m.group("kw").lower(), m.group("num").count(".") + 1, m.group("rest")
    return None


def _title_like(rest: str, *, bold: bool) -> bool:
    """Does the text after the number read as a title rather than a sentence?"""
    had_separator = rest[:1] in ".:)-–—"
    rest = rest.lstrip(_SEPARATORS)
    if not rest:
        return True
    if _PAGE_NUMBER_RE.search(rest):
        return False  # "Section 7.2 Accounts 27": a table-of-contents entry
    if not (rest[0].isupper() or rest[0].isdigit() or rest[0] in "(\"“'‘"):
        return False
    if bold:
        return True
    # A plain line must look like a heading, not the start of a sentence ("Note 4 shows...").
    return (rest[-1] not in ".,;:!?" and len(rest.split()) <= 12
            and (had_separator or rest[0].isupper()))


def _bold_only(children: list[Token]) -> bool:
    """Is the inline content one strong span (trailing spaces and breaks aside)?"""
    kids = [c for c in children if c.type not in ("softbreak", "hardbreak")
            and not (c.type == "text" and not c.content.strip())]
    if len(kids) < 3 or kids[0].type != "strong_open" or kids[-1].type != "strong_close":
        return False
    depth = 0
    for k, c in enumerate(kids):
        if c.type == "strong_open":
            depth += 1
        elif c.type == "strong_close":
            depth -= 1
            if depth == 0:
                return k == len(kids) - 1
    return False


def _recovery_candidate(line: int, content: str, env: dict, max_chars: int) -> Heading | None:
    """A one-line top-level paragraph that reads as a heading, as an unlevelled heading."""
    raw = content.strip()
    if not raw or len(raw) > 4 * max_chars:
        return None
    looks_bold = raw[:2] in ("**", "__") and raw[-2:] in ("**", "__")
    looks_numbered = raw[:1].isdigit() or raw[:1] in "CPSAINE"
    if not (looks_bold or looks_numbered):
        return None
    children = _inline(content, env)
    plain = _plain(children)
    if not plain or len(plain) > max_chars or plain.endswith(":"):
        return None
    if not any(ch.isalpha() for ch in plain):
        return None
    bold = looks_bold and _bold_only(children)
    numbering = _numbering(plain)
    if numbering and not _title_like(numbering[2], bold=bold):
        numbering = None
    if not (bold or numbering):
        return None
    return Heading(line, line + 1, 0, raw, plain, recovered=True, numbering=numbering)


def _recover(headings: list[Heading], candidates: list[Heading]) -> list[Heading]:
    """Re-level flattened numbered headings, then level and merge the recovered ones."""
    for h in headings:
        h.numbering = _numbering(h.plain)
    numbered = [(h, n) for h in headings if (n := h.numbering) and n[0] == ""]
    if len(numbered) >= 2 and len({h.level for h, _ in numbered}) == 1:
        depths = {n[1] for _, n in numbered}
        if len(depths) > 1:
            base, dmin = numbered[0][0].level, min(depths)
            for h, n in numbered:
                h.level = min(6, base + n[1] - dmin)

    # How this document already levels each numbering depth and keyword.
    by_depth: dict[int, Counter[int]] = {}
    by_keyword: dict[str, Counter[int]] = {}
    for h in headings:
        n = h.numbering
        if n and n[0] == "":
            by_depth.setdefault(n[1], Counter())[h.level] += 1
        elif n:
            by_keyword.setdefault(n[0], Counter())[h.level] += 1
    depth_level = {d: _usual(c) for d, c in by_depth.items()}
    keyword_level = {k: _usual(c) for k, c in by_keyword.items()}

    merged = sorted([*headings, *candidates], key=lambda h: h.start)
    context = 0  # level of the latest real or numbered heading
    anchor = 0  # level of the latest real unnumbered heading
    for h in merged:
        n = h.numbering
        if not h.recovered:
            context = h.level
            if not n:
                anchor = h.level
            continue
        if n and n[0] == "":
            if depth_level:
                known = min(depth_level, key=lambda d: (abs(d - n[1]), d))
                h.level = depth_level[known] + n[1] - known
            else:
                h.level = anchor + n[1]
            context = h.level = max(1, min(6, h.level))
        elif n:
            # "Item 1A" is levelled like the document's other "Item" headings; the first
            # one of a keyword opens a subsection and sets the level for the rest.
            if n[0] not in keyword_level:
                keyword_level[n[0]] = min(6, context + 1)
            context = h.level = keyword_level[n[0]]
        else:
            # A bold line opens a subsection of the current section, and consecutive bold
            # lines are siblings: the context does not move.
            h.level = min(6, context + 1)
    return merged


def _usual(levels: Counter[int]) -> int:
    """The most common level, the shallowest on a tie."""
    return min(levels, key=lambda lv: (-levels[lv], lv))
