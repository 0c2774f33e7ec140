"""Cutting a section's text into chunk-sized pieces along its Markdown blocks.

:mod:`proxy_pointer.parse.chunking` decides *which* text becomes chunks (sections, noise,
fallback) and what a chunk records; this module decides *where* that text is cut. A body
of text is split into blocks (prose, Markdown tables, HTML tables, fenced code); prose is cut
by langchain's ``RecursiveCharacterTextSplitter``, tables and code between rows or lines
with their header repeated in what is embedded; pieces are then measured, the ones too
long split again, and neighbours that fit together joined. It is kept apart because it is
the one intricate algorithm of chunking and needs nothing of trees or configs: a
:class:`SplitContext` carries the text and the size to cut to. The rules are stated in
:mod:`proxy_pointer.parse.chunking`'s docstring.

Offsets here are character offsets into the document text; block bounds fall on whole lines.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..text.rows import NUMBER, is_table_row
from ..tokens import WORD_PIECES, DocumentTokens, Sizer, SpanCounter, WordPieceCounter
from ..vocab.filings import FILINGS
from .splitting import hard_windows, split_offsets

__all__ = ["Piece", "SplitContext", "embed_view", "split_bodies", "table_layout"]

_MAX_ROUNDS = 6  # re-splits of a piece before it is cut hard
_MAX_CHARS_PER_TOKEN = 16


class SplitContext:
    """A document's text with line offsets, and the measure pieces are sized by.

    ``tokens``: sizes are the embedder's tokens, counted by ``tokenizer`` (default: MiniLM
    word pieces), else characters. ``size``/``overlap``: the largest piece and the overlap
    between prose pieces, in that unit. ``html_tables``: ``"text"`` embeds an HTML table as
    its cell text, ``"source"`` as its source. ``pieces``: the document's word pieces,
    already counted (:class:`~proxy_pointer.tokens.DocumentTokens` of ``lines``), which
    MiniLM-sized prose is then measured with instead of tokenizing it again.
    """

    def __init__(self, text: str, lines: list[str], *, tokens: bool, size: int, overlap: int,
                 html_tables: str, tokenizer: Sizer = WORD_PIECES,
                 pieces: DocumentTokens | None = None) -> None:
        self.text = text
        self.pieces = pieces
        self.tokenizer = tokenizer
        self.lines = lines
        self.html_tables = html_tables
        self.line_starts = [0]
        for line in lines:
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.tokens = tokens
        self.size = size
        self.overlap = overlap
        # A token-sized chunk never spans more characters than this: beyond it the text is
        # whitespace or giant "words" that the tokenizer reduces to a single [UNK] anyway.
        self.max_chars = size * _MAX_CHARS_PER_TOKEN if tokens else size

    def measure(self, texts: Sequence[str]) -> list[int]:
        """Sizes of ``texts`` in the context's unit."""
        return self.tokenizer.count_many(texts) if self.tokens else [len(t) for t in texts]

    def span_counters(self, spans: Sequence[tuple[int, int]]) -> Sequence[SpanCounter | None]:
        """Counters of sub-spans of whole-line ``spans`` (see :class:`Sizer`)."""
        if (self.pieces is not None and isinstance(self.tokenizer, WordPieceCounter)
                and self.pieces.length == len(self.text)):
            return self.pieces.span_counters(self.text, spans)
        return self.tokenizer.span_counters(self.text, spans)

    def line_of(self, offset: int) -> int:
        """The 0-based line holding character ``offset``."""
        return bisect.bisect_right(self.line_starts, offset) - 1


def split_bodies(ctx: SplitContext, spans: Sequence[tuple[int, int]], *, markdown: bool
                 ) -> list[list[Piece]]:
    """The pieces of each ``(start, end)`` span of ``ctx.text``, in order, each within the size.

    Spans are whole lines. With ``markdown`` false a span is plain prose (no tables or code
    are recognized). A blank span has no pieces. All spans are measured together, so a
    document costs one tokenizer pass. Never raises on content.
    """
    per_body = _plan(ctx, [_blocks(ctx, a, b, markdown) for a, b in spans])
    _fit(ctx, per_body)
    return [_join(ctx, ps) for ps in per_body]


@dataclass
class Piece:
    """A candidate chunk body: a verbatim span plus what gets embedded for it."""

    start: int
    end: int
    embed: str
    units: int | None  # size of ``embed`` in the context's unit; None until measured
    prefix: str = ""  # repeated table header / fence line, already part of ``embed``
    view: str = "verbatim"  # how ``embed`` derives from the span: "verbatim" or "html"
    joinable: bool = True  # may be joined onto the previous piece (when they do not overlap)


@dataclass
class _Block:
    kind: str  # "prose", "md", "html", "code"
    start: int  # document offsets, whole lines
    end: int


# --- blocks: prose, Markdown tables, HTML tables, fenced code -----------------------------
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_DELIM_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_TABLE_OPEN_RE = re.compile(r"<table\b", re.I)
_TABLE_CLOSE_RE = re.compile(r"</table\s*>", re.I)


def _blocks(ctx: SplitContext, start: int, end: int, markdown: bool) -> list[_Block]:
    """Split the span ``[start, end)`` (whole lines) into blocks; blank-only spans vanish."""
    if not ctx.text[start:end].strip():
        return []
    if not markdown:
        return [_Block("prose", start, end)]
    lines, ls = ctx.lines, ctx.line_starts
    i, stop = ctx.line_of(start), ctx.line_of(end - 1) + 1
    out: list[_Block] = []
    prose_from: int | None = None

    def flush(upto: int) -> None:
        nonlocal prose_from
        if prose_from is not None and ctx.text[ls[prose_from] : ls[upto]].strip():
            out.append(_Block("prose", ls[prose_from], ls[upto]))
        prose_from = None

    while i < stop:
        found = _block_end(lines, i, stop)
        if found is None:
            if prose_from is None:
                prose_from = i
            i += 1
            continue
        kind, j = found
        flush(i)
        out.append(_Block(kind, ls[i], ls[j]))
        i = j
    flush(stop)
    return out


def _block_end(lines: list[str], i: int, stop: int) -> tuple[str, int] | None:
    """``(kind, end line)`` if a table or code block starts at line ``i``, else None."""
    line = lines[i]
    m = _FENCE_RE.match(line)
    if m:
        mark = m.group(1)
        close = re.compile(r"^ {0,3}" + re.escape(mark[0]) + "{" + str(len(mark)) + r",}\s*$")
        for j in range(i + 1, stop):
            if close.match(lines[j]):
                return "code", j + 1
        return "code", stop
    if line.lstrip()[:6].lower() == "<table":
        depth = 0
        for j in range(i, stop):
            depth += len(_TABLE_OPEN_RE.findall(lines[j])) - len(_TABLE_CLOSE_RE.findall(lines[j]))
            if depth <= 0:
                return "html", j + 1
        return None  # never closed: plain text it is
    if "|" in line and i + 1 < stop and "-" in lines[i + 1] and _MD_DELIM_RE.match(lines[i + 1]):
        j = i + 2
        while j < stop and lines[j].strip() and "|" in lines[j]:
            j += 1
        return "md", j
    return None


# --- planning: the first cut of every block -------------------------------------------------
@dataclass
class _Rows:
    """A row-structured block: its header span and its row spans."""

    block: _Block
    head: tuple[int, int]
    rows: list[tuple[int, int]]
    view: str


_TR_RE = re.compile(r"<tr\b.*?</tr\s*>", re.I | re.S)
_THEAD_END_RE = re.compile(r"</thead\s*>", re.I)
_CELL_RE = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]\s*>", re.I | re.S)
_TAG_RE = re.compile(r"<[^>]*>")


def _rows_of(ctx: SplitContext, b: _Block) -> _Rows:
    text, ls = ctx.text, ctx.line_starts
    if b.kind == "html":
        view = "html" if ctx.html_tables == "text" else "verbatim"
        rows = [(m.start(), m.end()) for m in _TR_RE.finditer(text, b.start, b.end)]
        m = _THEAD_END_RE.search(text, b.start, b.end)
        if m:
            head_end = m.end()
        elif rows and "<th" in text[rows[0][0] : rows[0][1]].lower():
            head_end = rows[0][1]
        else:
            head_end = b.start
        head_rows = [r for r in rows if r[1] <= head_end]
        head = (b.start, head_rows[-1][1]) if head_rows else (b.start, b.start)
        return _Rows(b, head, [r for r in rows if r[1] > head_end], view)
    first, last = ctx.line_of(b.start), ctx.line_of(b.end - 1) + 1
    nhead = 2 if b.kind == "md" else 1
    head = (ls[first], _strip_newline(text, ls[first], ls[min(last, first + nhead)]))
    rows = [(ls[k], _strip_newline(text, ls[k], ls[k + 1])) for k in range(first + nhead, last)]
    return _Rows(b, head, [r for r in rows if text[r[0] : r[1]].strip()], "verbatim")


def _strip_newline(text: str, a: int, b: int) -> int:
    while b > a and text[b - 1] in "\r\n":
        b -= 1
    return b


def _strip_span(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


# --- a table block's header and rows, for handing over part of a table ----------------------
_HEAD_ROWS = 5  # lines above a text table's first data row that may be its header
_HEAD_LABELS = 2  # rows without an amount under a pipe table's header that still head it
_YEAR_RE = re.compile(r"^\(?(?:19|20)\d\d\)?[,.]?$")
_DATE_RE = re.compile(rf"\b{FILINGS.month_pattern}\s+\d{{1,2}}\b,?", re.I)


def table_layout(lines: Sequence[str]) -> tuple[int, list[tuple[int, int]]] | None:
    """A table block's header and rows: ``(header lines, row spans)``, the spans ``[a, b)``
    tiling the lines after the header; None when ``lines`` (one block) is no table.

    The header is what names the columns, so a row handed over without it loses which year
    or unit its numbers belong to: a Markdown pipe table's header row and separator (and
    up to ``_HEAD_LABELS`` rows under them without an amount: a years row under a
    caption); a block of text rows, one per line as the PDF converter writes a table, the
    lines before its first row holding an amount (a year or a date is not one), at most
    ``_HEAD_ROWS``. Each line after the header is a row. An HTML table is none: a row
    there is several lines of markup costing a few times its text, and handing its rows
    with their header lost questions the line cut found (finance-10k, 1 of 21 at 500 and
    at 1000 tokens).
    """
    lead = 0  # blank lines before the table go with its header
    while lead < len(lines) and not lines[lead].strip():
        lead += 1
    found = _layout(lines[lead:])
    if found is None:
        return None
    head, rows = found
    return lead + head, [(lead + a, lead + b) for a, b in rows]


def _layout(lines: Sequence[str]) -> tuple[int, list[tuple[int, int]]] | None:
    """:func:`table_layout` of lines that start with the table."""
    n = len(lines)
    while n and not lines[n - 1].strip():
        n -= 1
    if n < 3:
        return None
    if "|" in lines[0] and _MD_DELIM_RE.match(lines[1]) and "-" in lines[1]:
        head = 2  # a converted table's first row may be a caption over its years row
        while head < min(2 + _HEAD_LABELS, n - 1) and not _has_amount(lines[head]):
            head += 1
        head = head if any(_has_amount(line) for line in lines[head:n]) else 2
        return head, [(k, k + 1) for k in range(head, len(lines))]
    data = [k for k in range(n) if is_table_row(lines[k]) and _has_amount(lines[k])]
    if len(data) < 2 or 3 * len(data) < n or data[0] > _HEAD_ROWS:
        return None
    return data[0], [(k, k + 1) for k in range(data[0], len(lines))]


def _has_amount(text: str) -> bool:
    """Whether ``text`` holds a number that is neither a year nor a date's day."""
    return any(not _YEAR_RE.match(v) for v in NUMBER.findall(_DATE_RE.sub(" ", text)))


def embed_view(text: str, view: str) -> str:
    """What gets embedded for a verbatim slice: itself (``view="verbatim"``), or for
    ``view="html"`` the cell text of its HTML rows, one row a line, cells joined by ``" | "``."""
    if view == "verbatim":
        return text  # spans are already stripped; a code row keeps its indentation
    rows = []
    for row in _TR_RE.findall(text) or [text]:
        cells = [_plain(c) for c in _CELL_RE.findall(row)]
        line = " | ".join(c for c in cells if c) if cells else _plain(row)
        if line:
            rows.append(line)
    return "\n".join(rows)


def _plain(fragment: str) -> str:
    return " ".join(html.unescape(_TAG_RE.sub(" ", fragment)).split())


def _plan(ctx: SplitContext, per_body: list[list[_Block]]) -> list[list[Piece]]:
    """Cut every block into pieces: prose by the splitter, tables and code between rows."""
    text = ctx.text
    prose = [b for bs in per_body for b in bs if b.kind == "prose"]
    tabular = {id(b): _rows_of(ctx, b) for bs in per_body for b in bs if b.kind != "prose"}
    # One tokenizer call per kind: every prose block (with offsets, to count any sub-span
    # exactly), and every table header and row view.
    counters: dict[int, SpanCounter] = {}
    if ctx.tokens and prose:
        spans = [(b.start, b.end) for b in prose]
        counters = {id(b): c for b, c in zip(prose, ctx.span_counters(spans), strict=True)
                    if c is not None}
    probes: list[str] = []
    for t in tabular.values():
        probes.append(embed_view(text[t.head[0] : t.head[1]], t.view))
        probes.extend(embed_view(text[a:z], t.view) for a, z in t.rows)
    counts = iter(ctx.measure(probes))
    units = {k: (next(counts), [next(counts) for _ in t.rows]) for k, t in tabular.items()}

    out: list[list[Piece]] = []
    for blocks in per_body:
        pieces: list[Piece] = []
        for b in blocks:
            if b.kind == "prose":
                pieces.extend(_prose_pieces(ctx, b, counters.get(id(b))))
            else:
                pieces.extend(_pack_rows(ctx, tabular[id(b)], *units[id(b)]))
        out.append(pieces)
    return out


def _prose_pieces(ctx: SplitContext, b: _Block, counter: SpanCounter | None) -> list[Piece]:
    text = ctx.text
    a, z = _strip_span(text, b.start, b.end)
    n = len(counter) if counter is not None else z - a
    if n <= ctx.size and z - a <= ctx.max_chars:
        return [Piece(a, z, text[a:z], n)]
    return _split_span(ctx, a, z, n, counter=counter)


def _split_span(
    ctx: SplitContext, a: int, z: int, units: int | None, *, counter: SpanCounter | None = None,
    prefix: str = "", prefix_units: int = 0, view: str = "verbatim", joinable: bool = True,
    depth: int = 0,
) -> list[Piece]:
    """Pieces of ``text[a:z]`` from the recursive splitter, each at most the chunk size.

    The splitter works on characters, sized by the span's characters-per-unit ratio; pieces
    that ``counter`` shows to be too long are split again (a few times, then cut hard).
    """
    text = ctx.text
    a, z = _strip_span(text, a, z)
    if a >= z:
        return []
    # What a piece's body may take of the chunk size, after the prefix (whose "\n" costs
    # one character in char mode).
    room = max(1, ctx.size - prefix_units - (1 if prefix and not ctx.tokens else 0))
    ratio = (z - a) / units if units else 4.0
    factor = 0.95 if ctx.tokens else 1.0  # most pieces then fit at the first try
    char_size = max(8, min(ctx.max_chars, int(room * ratio * factor)))
    char_overlap = 0 if prefix else min(int(ctx.overlap * ratio), char_size // 2)
    spans = (split_offsets(text, a, z, char_size, char_overlap) if depth < _MAX_ROUNDS
             else hard_windows(a, z, max(1, (z - a) // 2)))
    pieces: list[Piece] = []
    for s, e in spans:
        s, e = _strip_span(text, s, e)
        if s >= e:
            continue
        u = counter.count(s, e) if counter is not None else None
        if not ctx.tokens:
            u = None  # measured below from the embed text
        if u is not None and u > room and e - s > 1:
            pieces.extend(_split_span(ctx, s, e, u, counter=counter, prefix=prefix,
                                      prefix_units=prefix_units, view=view,
                                      joinable=joinable and not pieces, depth=depth + 1))
            continue
        body = embed_view(text[s:e], view)
        if not body.strip() and pieces:  # bare markup ("</tr></tbody>"): no chunk of its own
            pieces[-1].end = e
            continue
        embed = f"{prefix}\n{body}" if prefix else body
        if not ctx.tokens:
            u = len(embed)
        elif u is not None and (prefix or view != "verbatim"):
            u = None  # the count was of the verbatim span, not of what is embedded
        # a piece that repeats a header must stay first in its chunk; plain text joins freely
        pieces.append(Piece(s, e, embed, u, prefix=prefix, view=view,
                             joinable=not prefix or (joinable and not pieces)))
    return pieces


def _pack_rows(ctx: SplitContext, t: _Rows, head_units: int, units: list[int]) -> list[Piece]:
    """Greedy row packing: whole rows, the header repeated at the start of every piece."""
    text, size = ctx.text, ctx.size
    b = t.block
    head_text = embed_view(text[t.head[0] : t.head[1]], t.view)
    if head_units > size // 2:  # a huge header may take at most half of every piece
        head_text = (ctx.tokenizer.truncate(head_text, size // 2) if ctx.tokens
                     else head_text[: size // 2])
        head_units = ctx.measure([head_text])[0]
    if not t.rows:
        return _split_span(ctx, b.start, b.end, None, view=t.view)
    # "\n" between rows: no MiniLM word piece, one character (other tokenizers: re-measured)
    join = 0 if ctx.tokens else 1
    pieces: list[Piece] = []
    cur: list[int] = []  # indexes of the rows in the piece being filled
    cur_units = head_units

    def emit(last: bool) -> None:
        # Start right after the previous piece, so markup between rows is covered too.
        s = min(t.rows[cur[0]][0], pieces[-1].end) if pieces else b.start
        s, e = _strip_span(text, s, b.end if last else t.rows[cur[-1]][1])
        rows = "\n".join(embed_view(text[t.rows[k][0] : t.rows[k][1]], t.view) for k in cur)
        embed = "\n".join(x for x in (head_text, rows) if x)
        pieces.append(Piece(s, e, embed, cur_units, prefix=head_text, view=t.view,
                             joinable=not pieces))

    for k, u in enumerate(units):
        if cur and cur_units + join + u <= size:
            cur.append(k)
            cur_units += join + u
            continue
        if cur:
            emit(last=False)
            cur, cur_units = [], head_units
        if head_units + join + u <= size:
            cur, cur_units = [k], head_units + join + u
            continue
        # One row longer than a whole chunk: it is cut inside (between cells if it can).
        a, z = t.rows[k]
        if not pieces and t.head[1] > t.head[0]:
            # the header rows become a small piece of their own (joinable with the text
            # before the table), so the row's pieces do not embed them twice
            hs, he = _strip_span(text, b.start, a)
            pieces.append(Piece(hs, he, head_text, head_units, view=t.view))
        a = min(a, pieces[-1].end) if pieces else b.start
        ratio = (z - a) / u if u else 4.0
        pieces.extend(_split_span(
            ctx, a, z, int((z - a) / ratio), prefix=head_text, prefix_units=head_units,
            view=t.view, joinable=not pieces,
        ))
    if cur:
        emit(last=True)
    elif pieces:  # the table ended on an over-long row: the last piece reaches the end
        pieces[-1].end = _strip_span(text, pieces[-1].start, b.end)[1]
    return pieces


# --- fitting: measure what is unknown, split again what is too long ------------------------
def _fit(ctx: SplitContext, per_body: list[list[Piece]]) -> None:
    """Measure unmeasured pieces (all bodies in one batch); replace every piece over the size
    by smaller ones, in place.

    A piece still too long after several rounds (only a contrived string gets there) keeps
    its span but has its embedded text truncated to the size. Sizes summed from parts are
    exact only in MiniLM word pieces (a newline is no word piece, words never merge across
    it); with another tokenizer every piece is measured whole.
    """
    if ctx.tokens and ctx.tokenizer != WORD_PIECES:
        for ps in per_body:
            for p in ps:
                p.units = None
    for _ in range(_MAX_ROUNDS + 2):
        todo = [p for ps in per_body for p in ps if p.units is None]
        for p, n in zip(todo, ctx.measure([p.embed for p in todo]), strict=True):
            p.units = n
        # every piece: one measured as it was cut (a character-sized row piece under a
        # repeated header) may be over the size too
        over = {id(p) for ps in per_body for p in ps if p.units is not None and p.units > ctx.size}
        if not over:
            return
        for i, ps in enumerate(per_body):
            if any(id(p) in over for p in ps):
                per_body[i] = [q for p in ps for q in (_resplit(ctx, p) if id(p) in over else [p])]
    for ps in per_body:
        for p in ps:
            if p.units is None or p.units > ctx.size:
                p.embed = (ctx.tokenizer.truncate(p.embed, ctx.size) if ctx.tokens
                           else p.embed[:ctx.size])
                p.units = ctx.measure([p.embed])[0]


def _resplit(ctx: SplitContext, p: Piece) -> list[Piece]:
    prefix_units = ctx.measure([p.prefix])[0] if p.prefix else 0
    body = max(1, (p.units or 1) - prefix_units)
    parts = _split_span(ctx, p.start, p.end, body, prefix=p.prefix,
                        prefix_units=prefix_units, view=p.view, joinable=p.joinable)
    if len(parts) < 2:  # nothing to cut at: halve the span
        parts = [q for s, e in hard_windows(p.start, p.end, max(1, (p.end - p.start) // 2))
                 for q in _split_span(ctx, s, e, None, prefix=p.prefix,
                                      prefix_units=prefix_units, view=p.view, joinable=False,
                                      depth=_MAX_ROUNDS)]
        if parts:
            parts[0].joinable = p.joinable
    return parts or [p]


def _join(ctx: SplitContext, pieces: list[Piece]) -> list[Piece]:
    """Join neighbouring pieces that fit in one chunk together (sizes add up exactly)."""
    text, size = ctx.text, ctx.size
    extra = 0 if ctx.tokens else 2  # "\n\n" between them
    out: list[Piece] = []
    for p in pieces:
        cur = out[-1] if out else None
        if (cur is not None and p.joinable and cur.end <= p.start
                and not text[cur.end : p.start].strip()
                and cur.units is not None and p.units is not None
                and cur.units + extra + p.units <= size
                # the character cap holds for text; HTML source is mostly tags
                and (p.end - cur.start <= ctx.max_chars or "html" in (cur.view, p.view))):
            out[-1] = Piece(cur.start, p.end, f"{cur.embed}\n\n{p.embed}",
                             cur.units + extra + p.units, prefix=cur.prefix, view=cur.view,
                             joinable=cur.joinable)
        else:
            out.append(p)
    return out
