"""Structure-guided chunks: small proxies that point at whole sections.

A chunk exists to be found by a search and then to *point*: it carries the exact character
and line span of its text, the node it belongs to and that node's bounds, so retrieval can
hand the whole section to the reader. What is embedded (``embed_text``) is the node's
breadcrumb followed by the chunk text::

    [Annual Report 2022 > Item 7. MD&A > Liquidity]
    Cash provided by operating activities was ...

Rules
-----
* Each node's **own** text (after its heading line, before the next heading) is split on its
  own with langchain's ``RecursiveCharacterTextSplitter``; a chunk never spans a heading.
  The heading is not repeated in the chunk: the breadcrumb already names it.
* A node whose own text is shorter than ``min_section_chars`` (whitespace stripped) gets no
  chunk; its children are still chunked and carry its title in their breadcrumbs. Noise
  nodes (:mod:`proxy_pointer.noise`) get no chunk either.
* **Size.** The default embedder (all-MiniLM-L6-v2) reads 256 word pieces and ignores the
  rest, so the default size is in tokens (:mod:`proxy_pointer.tokens`): at most 200 for the
  chunk body, at most 48 for the breadcrumb, so ``[CLS] + breadcrumb + body + [SEP]`` always
  fits 256. Overlap is 30 tokens (15 %). ``ChunkConfig.chars(2000, 200)`` is the reference
  design's character setting (its chunks run past the window; the model sees their start).
  Splitting is done on characters, sized per block by its measured characters-per-token
  ratio. Each block is tokenized once; any piece that ends between words is then counted
  exactly from the token offsets, and the few pieces that come out too long are split
  again. So sizing costs one tokenizer pass over the document (about 1 s for a 1.3 MB
  10-K on two cores), and no ``embed_text`` ever exceeds the window. A token-sized chunk
  also spans at most 16 characters per token of its size (a 30 kB run without spaces is
  one ``[UNK]`` to the model, not a reason for a 30 kB chunk).
* **Tables.** A Markdown table is never cut inside a row and an HTML ``<table>`` never
  inside a ``<tr>``: a table longer than the chunk is split between rows, and every piece
  repeats the table's header (Markdown: header and delimiter rows; HTML:
  the ``<thead>`` rows, or a first row of ``<th>`` cells) at the start of its ``embed_text``,
  truncated to half the chunk size. ``text`` stays the verbatim source slice: the repeated
  header exists only in what is embedded. With ``html_tables="text"`` (default) an HTML
  table is embedded as its cell text, one row per line, cells joined by ``" | "``: the tags
  cost about two thirds of a table's word pieces and carry no meaning. Only a single row
  longer than a whole chunk is cut inside (between cells where it can). Fenced code is
  split between lines (a line longer than a chunk is the only exception); its opening
  fence is repeated like a table header.
* Neighbouring pieces of one node that fit in one chunk together (a sentence introducing a
  table and the table) are joined.
* **Preamble.** Text before the first heading is chunked like a section; its breadcrumb is
  the document title.
* **Fallback.** A document without headings, plain text (:func:`chunk_text`) and any
  document in ``mode="window"`` are split by a sliding window with the same splitter and
  overlap. Such chunks have ``node_id`` None and their own line span as node bounds. A
  Markdown document whose sections all fall under ``min_section_chars`` (an outline, a list
  of one-line answers) is chunked this way too rather than left unsearchable.

Line numbers in :class:`Chunk` are 0-based and half-open, as in :mod:`proxy_pointer.tree`.
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ConfigError
from .noise import NoiseConfig, NoiseDecision, classify_noise
from .tokens import count_tokens, truncate_to_tokens, wordpiece_tokenizer
from .tree import Node, Tree, split_lines

__all__ = [
    "CHUNKER_VERSION",
    "Chunk",
    "ChunkConfig",
    "breadcrumb_text",
    "chunk_text",
    "chunk_tree",
    "skip_reasons",
]

# Bumped whenever the same config would produce different chunks (index manifests keep it).
CHUNKER_VERSION = 1

_SEPARATORS = ["\n\n", "\n", "。", ". ", "! ", "? ", "；", "; ", "，", ", ", " "]
_SEPARATOR_ENDS = frozenset(sep[-1] for sep in _SEPARATORS)
_MAX_ROUNDS = 6  # re-splits of a piece before it is cut hard
_MAX_CHARS_PER_TOKEN = 16
# The tokenizer runs fastest (and in parallel) on inputs of some 20 kB: texts measured together
# are joined up to this size, longer texts are cut at whitespace into pieces of this size.
_ENCODE_CHARS = 20_000


@dataclass(frozen=True)
class Chunk:
    """One embedded proxy and its pointers.

    ``start_char``/``end_char``: offsets in the document text (``tree.text``), with
    ``text == tree.text[start_char:end_char]``. ``start_line``/``end_line``: 0-based,
    half-open range of the lines holding the chunk. ``own_start``/``own_end`` and
    ``section_start``/``section_end``: the node's own-text and subtree line ranges (0-based,
    half-open; for fallback chunks, the chunk's own line span). ``path``: heading titles
    from the root to the node (fallback chunks: the document title). ``embed_text``: the
    bracketed breadcrumb, a newline, then the text (or its table view, see module doc).
    """

    doc_id: str
    node_id: str | None
    title: str
    path: tuple[str, ...]
    start_char: int
    end_char: int
    start_line: int
    end_line: int
    own_start: int
    own_end: int
    section_start: int
    section_end: int
    text: str
    embed_text: str

    @property
    def chunk_id(self) -> str:
        """Stable id: ``doc_id:node_id:start_char`` (``-`` for fallback chunks)."""
        return f"{self.doc_id}:{self.node_id or '-'}:{self.start_char}"


@dataclass(frozen=True, kw_only=True)
class ChunkConfig:
    """How documents are cut into chunks.

    ``chunk_size``/``chunk_overlap``: body size and overlap in ``unit`` (``"tokens"``: MiniLM
    word pieces, ``"chars"``: characters). ``min_section_chars``: nodes with less own text
    get no chunk. ``max_breadcrumb_tokens``: the bracketed breadcrumb is shortened to this
    (middle titles first). ``window_tokens``: the embedder's input limit; in token mode
    ``chunk_size + max_breadcrumb_tokens + 2`` must fit it. ``html_tables``: embed HTML
    tables as cell text (``"text"``) or as their source (``"source"``). ``mode``:
    ``"structure"`` (default) or ``"window"`` (sliding window for every document, a
    baseline). ``noise``: which sections are skipped. Raises ``ConfigError`` on bad values.

    >>> ChunkConfig().chunk_size, ChunkConfig.chars(2000, 200).unit
    (200, 'chars')
    """

    chunk_size: int = 200
    chunk_overlap: int = 30
    unit: Literal["tokens", "chars"] = "tokens"
    min_section_chars: int = 100
    max_breadcrumb_tokens: int = 48
    window_tokens: int = 256
    html_tables: Literal["text", "source"] = "text"
    mode: Literal["structure", "window"] = "structure"
    noise: NoiseConfig = field(default_factory=NoiseConfig)

    def __post_init__(self) -> None:
        if self.unit not in ("tokens", "chars"):
            raise ConfigError(f"unit must be 'tokens' or 'chars', got {self.unit!r}")
        if self.html_tables not in ("text", "source"):
            raise ConfigError(f"html_tables must be 'text' or 'source', got {self.html_tables!r}")
        if self.mode not in ("structure", "window"):
            raise ConfigError(f"mode must be 'structure' or 'window', got {self.mode!r}")
        for name in ("chunk_size", "max_breadcrumb_tokens", "window_tokens"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.unit == "tokens" and self.chunk_size < 16:
            raise ConfigError(f"chunk_size must be at least 16 tokens, got {self.chunk_size}")
        if self.unit == "chars" and self.chunk_size < 50:
            raise ConfigError(f"chunk_size must be at least 50 characters, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_overlap must be at least 0 and below chunk_size ({self.chunk_size}), "
                f"got {self.chunk_overlap}"
            )
        if self.min_section_chars < 0:
            raise ConfigError(f"min_section_chars must be >= 0, got {self.min_section_chars}")
        if self.max_breadcrumb_tokens < 8:
            raise ConfigError(
                f"max_breadcrumb_tokens must be at least 8, got {self.max_breadcrumb_tokens}"
            )
        if self.unit == "tokens" and (
            self.chunk_size + self.max_breadcrumb_tokens + 2 > self.window_tokens
        ):
            raise ConfigError(
                f"chunk_size {self.chunk_size} + max_breadcrumb_tokens "
                f"{self.max_breadcrumb_tokens} + 2 special tokens exceeds the embedder window "
                f"of {self.window_tokens} tokens; lower one of them"
            )
        if not isinstance(self.noise, NoiseConfig):
            raise ConfigError("noise must be a NoiseConfig")

    @classmethod
    def chars(cls, chunk_size: int = 2000, chunk_overlap: int = 200, **kw: Any) -> ChunkConfig:
        """Character-sized chunks (the reference design uses 2000/200)."""
        return cls(chunk_size=chunk_size, chunk_overlap=chunk_overlap, unit="chars", **kw)

    def with_noise(self, noise: NoiseConfig) -> ChunkConfig:
        """A copy with another noise configuration."""
        return dataclasses.replace(self, noise=noise)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings for an index manifest (with ``algorithm``: the chunker version)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "noise"}
        return {**d, "noise": self.noise.to_dict(), "algorithm": CHUNKER_VERSION}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChunkConfig:
        """Inverse of :meth:`to_dict` (``algorithm`` is ignored); ``ConfigError`` on bad keys."""
        kw = {k: v for k, v in data.items() if k != "algorithm"}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kw) - known)
        if unknown:
            raise ConfigError(f"unknown chunking settings {unknown}")
        if "noise" in kw and not isinstance(kw["noise"], NoiseConfig):
            kw["noise"] = NoiseConfig.from_dict(kw["noise"])
        return cls(**kw)


# --- public entry points ----------------------------------------------------------------
def chunk_tree(
    tree: Tree,
    config: ChunkConfig | None = None,
    *,
    noise: Mapping[str, NoiseDecision] | None = None,
) -> list[Chunk]:
    """Chunks of ``tree`` in document order (see the module docstring for the rules).

    ``noise`` overrides the decisions :func:`~proxy_pointer.noise.classify_noise` would make
    from ``config.noise`` (pass the result of an LLM-assisted classification here). A tree
    without headings, or ``config.mode == "window"``, gets sliding-window chunks. Never
    raises on document content.
    """
    config = config or ChunkConfig()
    ctx = _Context(tree.text, tree.lines, config)
    title = tree.title or tree.doc_id
    if config.mode == "window" or not tree.has_headings:
        return _window(ctx, tree.doc_id, title, markdown=True)
    reasons = skip_reasons(tree, config, noise=noise)
    jobs = [n for n in tree.nodes if n.node_id not in reasons]
    spans = [_body_span(ctx, n) for n in jobs]
    crumbs = [tree.breadcrumb(n) for n in jobs]
    chunks = _chunk_bodies(ctx, tree.doc_id, jobs, spans, crumbs, title, markdown=True)
    if not chunks and not any(r.startswith("noise") for r in reasons.values()):
        return _window(ctx, tree.doc_id, title, markdown=True)
    return chunks


def chunk_text(text: str, doc_id: str = "document", config: ChunkConfig | None = None
               ) -> list[Chunk]:
    """Sliding-window chunks of plain ``text`` (a ``.txt`` file): no Markdown is interpreted.

    Every non-blank line lies in some chunk. The breadcrumb is ``[doc_id]``.
    """
    config = config or ChunkConfig()
    ctx = _Context(text, split_lines(text), config)
    return _window(ctx, doc_id, doc_id, markdown=False)


def skip_reasons(
    tree: Tree,
    config: ChunkConfig | None = None,
    *,
    noise: Mapping[str, NoiseDecision] | None = None,
) -> dict[str, str]:
    """Node id -> why the node's own text gets no chunk (``"noise: ..."`` or ``"short: ..."``).

    Nodes absent from the result are chunked. Meaningful for structure mode only.
    """
    config = config or ChunkConfig()
    decisions = classify_noise(tree, config.noise) if noise is None else noise
    out: dict[str, str] = {}
    for node in tree.nodes:
        d = decisions.get(node.node_id)
        if d is not None:
            out[node.node_id] = f"noise: {d.category} ({d.reason})"
            continue
        size = len(tree.slice(node.body_start, node.own_end).strip())
        if size < config.min_section_chars:
            out[node.node_id] = (
                f"short: {size} characters of own text < min_section_chars "
                f"{config.min_section_chars}"
            )
    return out


def breadcrumb_text(parts: Sequence[str], max_tokens: int = 48) -> str:
    """``"[A > B > C]"`` holding at most ``max_tokens`` word pieces.

    Too long a breadcrumb loses its middle titles first (``"[A > … > C]"``), then the first
    and last titles are truncated; the node's own title is kept as long as possible.
    """
    ps = [" ".join(p.split()) for p in parts]
    ps = [p for p in ps if p] or ["document"]

    def render(xs: Sequence[str]) -> str:
        return "[" + " > ".join(xs) + "]"

    text = render(ps)
    if count_tokens(text) <= max_tokens:
        return text
    for k in range(2, len(ps)):
        text = render([ps[0], "…", *ps[k:]])
        if count_tokens(text) <= max_tokens:
            return text
    first, last = ps[0], ps[-1]
    if len(ps) > 1:
        first = truncate_to_tokens(first, max(1, max_tokens // 4))
        last = truncate_to_tokens(last, max(1, max_tokens - count_tokens(first) - 6))
        text = render([first, "…", last] if len(ps) > 2 else [first, last])
    if count_tokens(text) > max_tokens:
        text = render([truncate_to_tokens(" > ".join(ps), max_tokens - 3)])
    return text


# --- internals ----------------------------------------------------------------------------
class _Context:
    """A document's text with line offsets, and the measure the config sizes chunks by."""

    def __init__(self, text: str, lines: list[str], config: ChunkConfig) -> None:
        self.text = text
        self.lines = lines
        self.config = config
        self.line_starts = [0]
        for line in lines:
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.tokens = config.unit == "tokens"
        self.size = config.chunk_size
        self.overlap = config.chunk_overlap
        # A token-sized chunk never spans more characters than this: beyond it the text is
        # whitespace or giant "words" that the tokenizer reduces to a single [UNK] anyway.
        self.max_chars = config.chunk_size * _MAX_CHARS_PER_TOKEN if self.tokens else self.size

    def measure(self, texts: Sequence[str]) -> list[int]:
        return _count_many(texts) if self.tokens else [len(t) for t in texts]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset) - 1


def _count_many(texts: Sequence[str]) -> list[int]:
    """Word-piece counts of many texts, equal to ``count_tokens_batch(texts)``.

    Texts are joined by newlines into ~20 kB strings, tokenized in one batch; a count is
    read off the token offsets. A newline never belongs to a word piece and always ends a
    word, so each text's share is exactly its own count, and thousands of table rows cost
    one tokenizer call instead of thousands.
    """
    out = [0] * len(texts)
    groups: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for i, t in enumerate(texts):
        if not t:
            continue
        if cur and size + len(t) > _ENCODE_CHARS:
            groups.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += len(t) + 1
    if cur:
        groups.append(cur)
    if not groups:
        return out
    encs = wordpiece_tokenizer().encode_batch(
        ["\n".join(texts[i] for i in g) for g in groups], add_special_tokens=False
    )
    for g, enc in zip(groups, encs, strict=True):
        starts = [o[0] for o in enc.offsets]
        pos = 0
        for i in g:
            end = pos + len(texts[i])
            out[i] = bisect.bisect_left(starts, end) - bisect.bisect_left(starts, pos)
            pos = end + 1
    return out


class _SpanCounter:
    """Exact word-piece counts of sub-spans of one block, read off the block's token offsets.

    A span whose ends fall between words (whitespace, punctuation, CJK characters: where
    the BERT pre-tokenizer cuts) tokenizes alone exactly as it does inside the block; for a
    span cut inside a word, :meth:`count` returns None and the span must be measured.
    """

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.word_start: list[bool] = []

    def add(self, enc: Any, base: int, clean_cut: bool) -> None:
        """Append the tokens of a piece that starts at ``base`` (after whitespace if clean)."""
        words = enc.word_ids
        self.starts.extend(base + o[0] for o in enc.offsets)
        self.ends.extend(base + o[1] for o in enc.offsets)
        self.word_start.extend(
            (clean_cut if k == 0 else words[k] != words[k - 1]) for k in range(len(words))
        )

    def __len__(self) -> int:
        return len(self.starts)

    def _clean(self, x: int) -> bool:
        k = bisect.bisect_left(self.starts, x)
        if k > 0 and self.ends[k - 1] > x:
            return False
        return not (k < len(self.starts) and self.starts[k] == x and not self.word_start[k])

    def count(self, s: int, e: int) -> int | None:
        if not (self._clean(s) and self._clean(e)):
            return None
        return bisect.bisect_right(self.ends, e) - bisect.bisect_left(self.starts, s)


def _encode_blocks(text: str, blocks: Sequence[_Block]) -> list[_SpanCounter]:
    """Tokenize blocks (cut at whitespace into ~20 kB pieces, all in one batch)."""
    pieces: list[tuple[int, int, int, bool]] = []  # block index, start, end, clean cut
    for i, b in enumerate(blocks):
        a, clean = b.start, True
        while a < b.end:
            e = min(b.end, a + _ENCODE_CHARS)
            cut_clean = True
            if e < b.end:
                ws = max(text.rfind(" ", a, e), text.rfind("\n", a, e))
                if ws > a:
                    e = ws + 1
                else:
                    cut_clean = False  # inside a 20 kB "word": the next piece starts mid-word
            pieces.append((i, a, e, clean))
            a, clean = e, cut_clean
    encs = wordpiece_tokenizer().encode_batch(
        [text[a:e] for _, a, e, _ in pieces], add_special_tokens=False
    )
    counters = [_SpanCounter() for _ in blocks]
    for (i, a, _, clean), enc in zip(pieces, encs, strict=True):
        counters[i].add(enc, a, clean)
    return counters


@dataclass
class _Piece:
    """A candidate chunk body: a verbatim span plus what gets embedded for it."""

    start: int
    end: int
    embed: str
    units: int | None  # size of ``embed`` in the config's unit; None until measured
    prefix: str = ""  # repeated table header / fence line, already part of ``embed``
    view: str = "verbatim"  # how ``embed`` derives from the span: "verbatim" or "html"
    joinable: bool = True  # may be joined onto the previous piece (when they do not overlap)


@dataclass
class _Block:
    kind: str  # "prose", "md", "html", "code"
    start: int  # document offsets, whole lines
    end: int


def _body_span(ctx: _Context, node: Node) -> tuple[int, int]:
    return ctx.line_starts[node.body_start], ctx.line_starts[node.own_end]


def _window(ctx: _Context, doc_id: str, title: str, *, markdown: bool) -> list[Chunk]:
    if not ctx.text.strip():
        return []
    return _chunk_bodies(ctx, doc_id, [None], [(0, len(ctx.text))], [(title,)], title,
                         markdown=markdown)


def _chunk_bodies(
    ctx: _Context,
    doc_id: str,
    nodes: Sequence[Node | None],
    spans: Sequence[tuple[int, int]],
    crumbs: Sequence[tuple[str, ...]],
    doc_title: str,
    *,
    markdown: bool,
) -> list[Chunk]:
    cfg = ctx.config
    per_body = _plan(ctx, [_blocks(ctx, a, b, markdown) for a, b in spans])
    _fit(ctx, per_body)
    chunks: list[Chunk] = []
    for node, crumb, ps in zip(nodes, crumbs, per_body, strict=True):
        if not ps:
            continue
        head = breadcrumb_text(crumb, cfg.max_breadcrumb_tokens) + "\n"
        for p in _join(ctx, ps):
            first, last = ctx.line_of(p.start), ctx.line_of(p.end - 1) + 1
            if node is None:
                own = sec = (first, last)
                nid, title, path = None, doc_title, (doc_title,)
            else:
                own, sec = (node.start, node.own_end), (node.start, node.end)
                nid, title, path = node.node_id, node.title or doc_title, node.path
            chunks.append(Chunk(
                doc_id=doc_id, node_id=nid, title=title, path=path,
                start_char=p.start, end_char=p.end, start_line=first, end_line=last,
                own_start=own[0], own_end=own[1], section_start=sec[0], section_end=sec[1],
                text=ctx.text[p.start : p.end], embed_text=head + p.embed,
            ))
    return chunks


# --- blocks: prose, Markdown tables, HTML tables, fenced code -----------------------------
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_DELIM_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_TABLE_OPEN_RE = re.compile(r"<table\b", re.I)
_TABLE_CLOSE_RE = re.compile(r"</table\s*>", re.I)


def _blocks(ctx: _Context, start: int, end: int, markdown: bool) -> list[_Block]:
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


def _rows_of(ctx: _Context, b: _Block) -> _Rows:
    text, ls = ctx.text, ctx.line_starts
    if b.kind == "html":
        view = "html" if ctx.config.html_tables == "text" else "verbatim"
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


def _view(text: str, view: str) -> str:
    """What gets embedded for a verbatim slice: itself, or the cell text of its HTML rows."""
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


def _plan(ctx: _Context, per_body: list[list[_Block]]) -> list[list[_Piece]]:
    """Cut every block into pieces: prose by the splitter, tables and code between rows."""
    text = ctx.text
    prose = [b for bs in per_body for b in bs if b.kind == "prose"]
    tabular = {id(b): _rows_of(ctx, b) for bs in per_body for b in bs if b.kind != "prose"}
    # One tokenizer call per kind: every prose block (with offsets, to count any sub-span
    # exactly), and every table header and row view.
    counters: dict[int, _SpanCounter] = {}
    if ctx.tokens and prose:
        counters = {id(b): c for b, c in zip(prose, _encode_blocks(text, prose), strict=True)}
    probes: list[str] = []
    for t in tabular.values():
        probes.append(_view(text[t.head[0] : t.head[1]], t.view))
        probes.extend(_view(text[a:z], t.view) for a, z in t.rows)
    counts = iter(ctx.measure(probes))
    units = {k: (next(counts), [next(counts) for _ in t.rows]) for k, t in tabular.items()}

    out: list[list[_Piece]] = []
    for blocks in per_body:
        pieces: list[_Piece] = []
        for b in blocks:
            if b.kind == "prose":
                pieces.extend(_prose_pieces(ctx, b, counters.get(id(b))))
            else:
                pieces.extend(_pack_rows(ctx, tabular[id(b)], *units[id(b)]))
        out.append(pieces)
    return out


def _prose_pieces(ctx: _Context, b: _Block, counter: _SpanCounter | None) -> list[_Piece]:
    text = ctx.text
    a, z = _strip_span(text, b.start, b.end)
    n = len(counter) if counter is not None else z - a
    if n <= ctx.size and z - a <= ctx.max_chars:
        return [_Piece(a, z, text[a:z], n)]
    return _split_span(ctx, a, z, n, counter=counter)


def _split_span(
    ctx: _Context, a: int, z: int, units: int | None, *, counter: _SpanCounter | None = None,
    prefix: str = "", prefix_units: int = 0, view: str = "verbatim", joinable: bool = True,
    depth: int = 0,
) -> list[_Piece]:
    """Pieces of ``text[a:z]`` from the recursive splitter, each at most the chunk size.

    The splitter works on characters, sized by the span's characters-per-unit ratio; pieces
    that ``counter`` shows to be too long are split again (a few times, then cut hard).
    """
    text = ctx.text
    a, z = _strip_span(text, a, z)
    if a >= z:
        return []
    # "\n" after a prefix costs one character in char mode
    budget = max(1, ctx.size - prefix_units - (1 if prefix and not ctx.tokens else 0))
    ratio = (z - a) / units if units else 4.0
    factor = 0.95 if ctx.tokens else 1.0  # most pieces then fit at the first try
    char_size = max(8, min(ctx.max_chars, int(budget * ratio * factor)))
    char_overlap = 0 if prefix else min(int(ctx.overlap * ratio), char_size // 2)
    spans = (_split_offsets(text, a, z, char_size, char_overlap) if depth < _MAX_ROUNDS
             else _hard_windows(a, z, max(1, (z - a) // 2)))
    pieces: list[_Piece] = []
    for s, e in spans:
        s, e = _strip_span(text, s, e)
        if s >= e:
            continue
        u = counter.count(s, e) if counter is not None else None
        if not ctx.tokens:
            u = None  # measured below from the embed text
        if u is not None and u > budget and e - s > 1:
            pieces.extend(_split_span(ctx, s, e, u, counter=counter, prefix=prefix,
                                      prefix_units=prefix_units, view=view,
                                      joinable=joinable and not pieces, depth=depth + 1))
            continue
        body = _view(text[s:e], view)
        if not body.strip() and pieces:  # bare markup ("</tr></tbody>"): no chunk of its own
            pieces[-1].end = e
            continue
        embed = f"{prefix}\n{body}" if prefix else body
        if not ctx.tokens:
            u = len(embed)
        elif u is not None and (prefix or view != "verbatim"):
            u = None  # the count was of the verbatim span, not of what is embedded
        # a piece that repeats a header must stay first in its chunk; plain text joins freely
        pieces.append(_Piece(s, e, embed, u, prefix=prefix, view=view,
                             joinable=not prefix or (joinable and not pieces)))
    return pieces


def _split_offsets(text: str, a: int, b: int, size: int, overlap: int
                   ) -> list[tuple[int, int]]:
    """Spans of the splitter's chunks of ``text[a:b]``, found back in the source."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        separators=_SEPARATORS, keep_separator="end", chunk_size=size,
        chunk_overlap=overlap, length_function=len, strip_whitespace=True,
    )
    seg = text[a:b]
    out: list[tuple[int, int]] = []
    prev_start, prev_end = -1, 0
    for piece in splitter.split_text(seg):
        # The splitter's chunks are verbatim and in order; each starts after the previous
        # one's start, at a split boundary at most ``overlap`` characters before the
        # previous end (the longest suffix it keeps), and ends beyond that end.
        at = _locate(seg, piece, max(prev_start + 1, prev_end - overlap,
                                     prev_end - len(piece) + 1))
        s, e = at, at + len(piece)
        prev_start, prev_end = s, max(prev_end, e)
        if e - s > size:  # a run without any separator (one giant "word"): hard windows
            out.extend(_hard_windows(a + s, a + e, size))
        else:
            out.append((a + s, a + e))
    return out


def _locate(seg: str, piece: str, lo: int) -> int:
    """First occurrence of ``piece`` at or after ``lo`` that starts a split (after a space
    or a separator), so repetitive text cannot shift a chunk onto an earlier copy."""
    at = seg.find(piece, max(0, lo))
    first = at
    while at > 0 and not (seg[at - 1].isspace() or seg[at - 1] in _SEPARATOR_ENDS):
        at = seg.find(piece, at + 1)
    if at >= 0:
        return at
    if first >= 0:
        return first
    # only if the splitter repeated text it had already emitted
    return max(0, seg.find(piece))


def _hard_windows(a: int, z: int, size: int) -> list[tuple[int, int]]:
    return [(k, min(z, k + size)) for k in range(a, z, size)]


def _pack_rows(ctx: _Context, t: _Rows, head_units: int, units: list[int]) -> list[_Piece]:
    """Greedy row packing: whole rows, the header repeated at the start of every piece."""
    text, size = ctx.text, ctx.size
    b = t.block
    head_text = _view(text[t.head[0] : t.head[1]], t.view)
    if head_units > size // 2:  # a huge header may take at most half of every piece
        head_text = (truncate_to_tokens(head_text, size // 2) if ctx.tokens
                     else head_text[: size // 2])
        head_units = ctx.measure([head_text])[0]
    if not t.rows:
        return _split_span(ctx, b.start, b.end, None, view=t.view)
    join = 0 if ctx.tokens else 1  # "\n" between rows: no word piece, one character
    pieces: list[_Piece] = []
    cur: list[int] = []  # indexes of the rows in the piece being filled
    cur_units = head_units

    def emit(last: bool) -> None:
        # Start right after the previous piece, so markup between rows is covered too.
        s = min(t.rows[cur[0]][0], pieces[-1].end) if pieces else b.start
        s, e = _strip_span(text, s, b.end if last else t.rows[cur[-1]][1])
        rows = "\n".join(_view(text[t.rows[k][0] : t.rows[k][1]], t.view) for k in cur)
        embed = "\n".join(x for x in (head_text, rows) if x)
        pieces.append(_Piece(s, e, embed, cur_units, prefix=head_text, view=t.view,
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
            pieces.append(_Piece(hs, he, head_text, head_units, view=t.view))
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
def _fit(ctx: _Context, per_body: list[list[_Piece]]) -> None:
    """Measure unmeasured pieces (all bodies in one batch); replace every piece over the size
    by smaller ones, in place.

    A piece still too long after several rounds (only a contrived string gets there) keeps
    its span but has its embedded text truncated to the size.
    """
    for _ in range(_MAX_ROUNDS + 2):
        todo = [p for ps in per_body for p in ps if p.units is None]
        if not todo:
            return
        for p, n in zip(todo, ctx.measure([p.embed for p in todo]), strict=True):
            p.units = n
        over = {id(p) for p in todo if p.units is not None and p.units > ctx.size}
        if not over:
            return
        for i, ps in enumerate(per_body):
            if any(id(p) in over for p in ps):
                per_body[i] = [q for p in ps for q in (_resplit(ctx, p) if id(p) in over else [p])]
    for ps in per_body:
        for p in ps:
            if p.units is None or p.units > ctx.size:
                p.embed = truncate_to_tokens(p.embed, ctx.size)
                p.units = ctx.measure([p.embed])[0]


def _resplit(ctx: _Context, p: _Piece) -> list[_Piece]:
    prefix_units = ctx.measure([p.prefix])[0] if p.prefix else 0
    body = max(1, (p.units or 1) - prefix_units)
    parts = _split_span(ctx, p.start, p.end, body, prefix=p.prefix,
                        prefix_units=prefix_units, view=p.view, joinable=p.joinable)
    if len(parts) < 2:  # nothing to cut at: halve the span
        parts = [q for s, e in _hard_windows(p.start, p.end, max(1, (p.end - p.start) // 2))
                 for q in _split_span(ctx, s, e, None, prefix=p.prefix,
                                      prefix_units=prefix_units, view=p.view, joinable=False,
                                      depth=_MAX_ROUNDS)]
        if parts:
            parts[0].joinable = p.joinable
    return parts or [p]


def _join(ctx: _Context, pieces: list[_Piece]) -> list[_Piece]:
    """Join neighbouring pieces that fit in one chunk together (sizes add up exactly)."""
    text, size = ctx.text, ctx.size
    extra = 0 if ctx.tokens else 2  # "\n\n" between them
    out: list[_Piece] = []
    for p in pieces:
        cur = out[-1] if out else None
        if (cur is not None and p.joinable and cur.end <= p.start
                and not text[cur.end : p.start].strip()
                and cur.units is not None and p.units is not None
                and cur.units + extra + p.units <= size
                # the character cap holds for text; HTML source is mostly tags
                and (p.end - cur.start <= ctx.max_chars or "html" in (cur.view, p.view))):
            out[-1] = _Piece(cur.start, p.end, f"{cur.embed}\n\n{p.embed}",
                             cur.units + extra + p.units, prefix=cur.prefix, view=cur.view,
                             joinable=cur.joinable)
        else:
            out.append(p)
    return out
