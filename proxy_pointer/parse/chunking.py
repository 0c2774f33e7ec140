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
* Every node with own text gets chunks, however short: a one-line appendix or a "None."
  under "Item 1B" is one small chunk of its own, so every line that is not noise can be
  found (a property test checks this on generated documents). ``min_section_chars`` > 0
  (default 0) skips nodes with less own text (whitespace stripped), reported as
  ``"short: ..."`` by :func:`skip_reasons`; their children are still chunked. Noise
  nodes (:mod:`proxy_pointer.parse.noise`: title rules, plus one LLM call per document with
  ``NoiseConfig(use_llm=True)`` and ``chunk_tree(..., noise_llm=llm)``) get no chunk either.
* **Size.** An embedder reads at most its ``max_tokens`` and ignores the rest (the default,
  all-MiniLM-L6-v2: 256 word pieces), so the default size is in tokens
  (:mod:`proxy_pointer.tokens`): at most 200 for the chunk body, at most 48 for the
  breadcrumb, so ``[CLS] + breadcrumb + body + [SEP]`` fits any window of 250 or more. An
  index fits its config to its embedder's window (``window_tokens``, checked); a smaller
  window gets proportionally smaller default chunks (:meth:`ChunkConfig.for_window`).
  Overlap is 30 tokens (15 %). ``ChunkConfig.chars(2000, 200)`` is the reference
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
* **Fallback.** A document without headings is first split into topical segments by
  :mod:`proxy_pointer.parse.segmentation` (``ChunkConfig.headerless``), which then chunk like
  sections. Otherwise it, plain text (:func:`chunk_text`) and any document in
  ``mode="window"`` are split by a sliding window with the same splitter and
  overlap. Such chunks have ``node_id`` None and their own line span as node bounds. A
  Markdown document whose sections all fall under ``min_section_chars`` (an outline, a list
  of one-line answers under a raised ``min_section_chars``) is chunked this way too rather
  than left unsearchable.

This module decides which text becomes chunks and what a chunk records; where the text is
cut (blocks, tables, row packing, re-splitting) is :mod:`proxy_pointer.parse.blocks`' job.

Line numbers in :class:`Chunk` are 0-based and half-open, as in :mod:`proxy_pointer.parse.tree`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ConfigError
from ..llm.base import LLM
from ..tokens import DocumentTokens, Sizer, TokenCounter, WordPieceCounter, sizer
from .blocks import SplitContext, split_bodies
from .noise import NoiseConfig, NoiseDecision, classify_noise
from .tree import Node, Tree, split_lines

__all__ = [
    "CHUNKER_VERSION",
    "Chunk",
    "ChunkConfig",
    "breadcrumb_text",
    "chunk_text",
    "chunk_tree",
    "skip_reasons",
    "split_breadcrumb",
]

# Bumped whenever the same config would produce different chunks (index manifests keep it),
# or parsing would read documents differently: an index of another version is re-parsed
# on its next update, and chunks whose text is unchanged keep their vectors.
# 2: headerless documents in topical segments; 3: short sections chunked; 4: cards read
# by the release, registrant-table and former-name rules (issue 58); 5: PDF statement
# titles after the filer's name or broken over two lines become sections (issue 59)
CHUNKER_VERSION = 5


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
    get no chunk (default 0: every node with own text is chunked).
    ``max_breadcrumb_tokens``: the bracketed breadcrumb is shortened to this (middle titles
    first). ``window_tokens``: the embedder's ``max_tokens``, set by :meth:`fitted` where an
    index pairs the config with its embedder (None: not fitted yet, nothing to check); in
    token mode ``chunk_size + max_breadcrumb_tokens + 2`` must fit it. ``html_tables``: embed HTML
    tables as cell text (``"text"``) or as their source (``"source"``). ``mode``:
    ``"structure"`` (default) or ``"window"`` (sliding window for every document, a
    baseline). ``headerless``: a document without headings (and a plain-text file) is split
    into topical segments treated as sections (``"segments"``, :mod:`.segmentation`; done
    where documents are parsed) or into sliding windows (``"windows"``). ``summaries``
    (opt-in): an index-time LLM writes one summary per section, embedded as one more proxy
    of it (:mod:`.summaries`). ``noise``: which sections are skipped. Raises
    ``ConfigError`` on bad values.

    >>> ChunkConfig().chunk_size, ChunkConfig.chars(2000, 200).unit
    (200, 'chars')
    """

    chunk_size: int = 200
    chunk_overlap: int = 30
    unit: Literal["tokens", "chars"] = "tokens"
    min_section_chars: int = 0
    max_breadcrumb_tokens: int = 48
    window_tokens: int | None = None
    html_tables: Literal["text", "source"] = "text"
    mode: Literal["structure", "window"] = "structure"
    headerless: Literal["segments", "windows"] = "segments"
    summaries: bool = False
    noise: NoiseConfig = field(default_factory=NoiseConfig)

    def __post_init__(self) -> None:
        if self.unit not in ("tokens", "chars"):
            raise ConfigError(f"unit must be 'tokens' or 'chars', got {self.unit!r}")
        if self.html_tables not in ("text", "source"):
            raise ConfigError(f"html_tables must be 'text' or 'source', got {self.html_tables!r}")
        if self.mode not in ("structure", "window"):
            raise ConfigError(f"mode must be 'structure' or 'window', got {self.mode!r}")
        if self.headerless not in ("segments", "windows"):
            raise ConfigError(
                f"headerless must be 'segments' or 'windows', got {self.headerless!r}")
        for name in ("chunk_size", "max_breadcrumb_tokens", "window_tokens"):
            value = getattr(self, name)
            if (value is not None or name != "window_tokens") and (
                    not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
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
        window = self.window_tokens
        if (self.unit == "tokens" and window is not None
                and self.chunk_size + self.max_breadcrumb_tokens + 2 > window):
            room = window - self.max_breadcrumb_tokens - 2
            hint = (f"lower chunk_size to at most {room}" if room >= 16
                    else "lower chunk_size and max_breadcrumb_tokens")
            raise ConfigError(
                f"chunk_size {self.chunk_size} + max_breadcrumb_tokens "
                f"{self.max_breadcrumb_tokens} + 2 special tokens = "
                f"{self.chunk_size + self.max_breadcrumb_tokens + 2} tokens exceeds the "
                f"embedder's window of {window} tokens; {hint}"
            )
        if not isinstance(self.noise, NoiseConfig):
            raise ConfigError("noise must be a NoiseConfig")

    @classmethod
    def chars(cls, chunk_size: int = 2000, chunk_overlap: int = 200, **kw: Any) -> ChunkConfig:
        """Character-sized chunks (the reference design uses 2000/200)."""
        return cls(chunk_size=chunk_size, chunk_overlap=chunk_overlap, unit="chars", **kw)

    @classmethod
    def for_window(cls, window_tokens: int) -> ChunkConfig:
        """The default token sizes, fitted to an embedder that reads ``window_tokens``.

        Where 200 + 48 + 2 fit (the 256-token MiniLM and up) these are the defaults: small
        proxies retrieve best even when a model could read more. A smaller window gets a
        breadcrumb of a fifth of it (at least 8), a body of the rest and 15 % overlap.
        Raises ConfigError for a window too small for any chunk (under 26 tokens).

        >>> ChunkConfig.for_window(128).chunk_size, ChunkConfig.for_window(512).chunk_size
        (101, 200)
        """
        default = cls()
        if default.chunk_size + default.max_breadcrumb_tokens + 2 <= window_tokens:
            return default.fitted(window_tokens)
        crumb = max(8, min(default.max_breadcrumb_tokens, window_tokens // 5))
        size = window_tokens - crumb - 2
        if size < 16:
            raise ConfigError(f"an embedder window of {window_tokens!r} tokens is too small for "
                              "chunks: at least 26 (16 + an 8-token breadcrumb + 2) are needed")
        return cls(chunk_size=size, chunk_overlap=size * 15 // 100, max_breadcrumb_tokens=crumb,
                   window_tokens=window_tokens)

    def fitted(self, window_tokens: int) -> ChunkConfig:
        """A copy checked against an embedder that reads ``window_tokens`` (its ``max_tokens``).

        Raises ConfigError, naming both numbers, when token-sized chunks do not fit.
        """
        return dataclasses.replace(self, window_tokens=window_tokens)

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
    noise_llm: LLM | None = None,
    markdown: bool = True,
    tokenizer: TokenCounter | None = None,
    pieces: DocumentTokens | None = None,
) -> list[Chunk]:
    """Chunks of ``tree`` in document order (see the module docstring for the rules).

    ``markdown=False`` cuts section bodies as plain text (a segmented ``.txt`` file).
    ``tokenizer`` counts token sizes as the embedder does (its ``tokenizer``; default MiniLM
    word pieces). ``pieces``: the tree's lines already tokenized
    (:class:`~proxy_pointer.tokens.DocumentTokens`), reused to size MiniLM chunks.

    Noise sections come from :func:`~proxy_pointer.parse.noise.classify_noise` with
    ``config.noise``; when ``config.noise.use_llm`` is set, ``noise_llm`` is asked once for
    this document and its labels are added to the title rules (a failing call or an
    unusable reply leaves the rules alone). ``noise`` overrides all of that with ready
    decisions. A tree without headings, or ``config.mode == "window"``, gets sliding-window
    chunks. Raises :class:`~proxy_pointer.errors.ConfigError` when ``config.noise.use_llm``
    is set and neither ``noise_llm`` nor ``noise`` is given; never raises on document
    content.
    """
    config = config or ChunkConfig()
    _require_noise_llm(config, noise, noise_llm)
    ctx = _split_context(tree.text, tree.lines, config, tokenizer, pieces)
    title = tree.title or tree.doc_id
    if config.mode == "window" or not tree.has_headings:
        return _window(ctx, config, tree.doc_id, title, markdown=markdown)
    reasons = skip_reasons(tree, config, noise=noise, noise_llm=noise_llm)
    jobs = [n for n in tree.nodes if n.node_id not in reasons]
    spans = [_body_span(ctx, n) for n in jobs]
    crumbs = [tree.breadcrumb(n) for n in jobs]
    chunks = _chunk_bodies(ctx, config, tree.doc_id, jobs, spans, crumbs, title,
                           markdown=markdown)
    if not chunks and not any(r.startswith("noise") for r in reasons.values()):
        return _window(ctx, config, tree.doc_id, title, markdown=markdown)
    return chunks


def chunk_text(text: str, doc_id: str = "document", config: ChunkConfig | None = None, *,
               tokenizer: TokenCounter | None = None) -> list[Chunk]:
    """Sliding-window chunks of plain ``text`` (a ``.txt`` file): no Markdown is interpreted.

    Every non-blank line lies in some chunk. The breadcrumb is ``[doc_id]``. Plain text has
    no sections, so ``config.noise`` plays no part. ``tokenizer`` as for :func:`chunk_tree`.
    """
    config = config or ChunkConfig()
    ctx = _split_context(text, split_lines(text), config, tokenizer)
    return _window(ctx, config, doc_id, doc_id, markdown=False)


def skip_reasons(
    tree: Tree,
    config: ChunkConfig | None = None,
    *,
    noise: Mapping[str, NoiseDecision] | None = None,
    noise_llm: LLM | None = None,
) -> dict[str, str]:
    """Node id -> why the node's own text gets no chunk (``"noise: ..."`` or ``"short: ..."``).

    Nodes absent from the result are chunked where they have own text. Meaningful for
    structure mode only. ``noise`` and ``noise_llm`` act as in :func:`chunk_tree` (one LLM
    call when ``use_llm`` is set), and the same :class:`~proxy_pointer.errors.ConfigError`
    is raised.
    """
    config = config or ChunkConfig()
    _require_noise_llm(config, noise, noise_llm)
    decisions = classify_noise(tree, config.noise, llm=noise_llm) if noise is None else noise
    out: dict[str, str] = {}
    for node in tree.nodes:
        d = decisions.get(node.node_id)
        if d is not None:
            out[node.node_id] = f"noise: {d.category} ({d.reason})"
            continue
        size = len(tree.slice(node.body_start, node.own_end).strip())
        if 0 < size < config.min_section_chars:
            out[node.node_id] = (
                f"short: {size} characters of own text < min_section_chars "
                f"{config.min_section_chars}"
            )
    return out


def breadcrumb_text(parts: Sequence[str], max_tokens: int = 48,
                    tokenizer: TokenCounter | None = None) -> str:
    """``"[A > B > C]"`` holding at most ``max_tokens`` tokens (``tokenizer``'s; default
    MiniLM word pieces).

    Too long a breadcrumb loses its middle titles first (``"[A > … > C]"``), then the first
    and last titles are truncated; the node's own title is kept as long as possible.
    """
    tok = sizer(tokenizer)
    count_tokens, truncate_to_tokens = tok.count_tokens, tok.truncate
    ps = _crumb_parts(parts)
    render = _render_crumb
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


def split_breadcrumb(embed_text: str) -> tuple[str, str]:
    """A chunk's ``embed_text`` as ``(breadcrumb, body)``: every chunk made here opens with a
    one-line ``"[A > B]"`` breadcrumb (:func:`breadcrumb_text`; titles hold no line breaks);
    a text without one is ``("", embed_text)``. Linear in the first line's length."""
    head, sep, body = embed_text.partition("\n")
    if sep and head.startswith("[") and head.endswith("]"):
        return head, body
    return "", embed_text


# --- internals ----------------------------------------------------------------------------
def _crumb_parts(parts: Sequence[str]) -> list[str]:
    ps = [" ".join(p.split()) for p in parts]
    return [p for p in ps if p] or ["document"]


def _render_crumb(xs: Sequence[str]) -> str:
    return "[" + " > ".join(xs) + "]"


def _breadcrumbs(crumbs: Sequence[tuple[str, ...]], max_tokens: int, tok: Sizer) -> list[str]:
    """:func:`breadcrumb_text` of each crumb; with MiniLM word pieces the whole breadcrumbs
    are counted in one tokenizer call first, and only those too long are shortened."""
    if not isinstance(tok, WordPieceCounter):
        return [breadcrumb_text(c, max_tokens, tok) for c in crumbs]
    texts = [_render_crumb(_crumb_parts(c)) for c in crumbs]
    short = [i for i, t in enumerate(texts) if len(t) <= _BATCH_CRUMB_CHARS]
    counts = dict(zip(short, tok.count_many([texts[i] for i in short]), strict=True))
    return [t if counts.get(i, max_tokens + 1) <= max_tokens
            else breadcrumb_text(crumbs[i], max_tokens, tok) for i, t in enumerate(texts)]


# Longer breadcrumbs (a heading line of a megabyte) are counted alone, as count_tokens does.
_BATCH_CRUMB_CHARS = 100_000


def _require_noise_llm(config: ChunkConfig, noise: Mapping[str, NoiseDecision] | None,
                       noise_llm: LLM | None) -> None:
    if config.noise.use_llm and noise is None and noise_llm is None:
        raise ConfigError(
            "NoiseConfig(use_llm=True) needs an LLM to label noise sections: pass noise_llm= "
            "to chunk_tree or index_llm= to Index (an LLM: generate(prompt, *, system=None) "
            "returning a reply with .text), "
            "or set use_llm=False to rely on the title rules alone"
        )


def _split_context(text: str, lines: list[str], config: ChunkConfig,
                   tokenizer: TokenCounter | None,
                   pieces: DocumentTokens | None = None) -> SplitContext:
    return SplitContext(text, lines, tokens=config.unit == "tokens", size=config.chunk_size,
                        overlap=config.chunk_overlap, html_tables=config.html_tables,
                        tokenizer=sizer(tokenizer), pieces=pieces)


def _body_span(ctx: SplitContext, node: Node) -> tuple[int, int]:
    return ctx.line_starts[node.body_start], ctx.line_starts[node.own_end]


def _window(ctx: SplitContext, config: ChunkConfig, doc_id: str, title: str, *,
            markdown: bool) -> list[Chunk]:
    if not ctx.text.strip():
        return []
    return _chunk_bodies(ctx, config, doc_id, [None], [(0, len(ctx.text))], [(title,)], title,
                         markdown=markdown)


def _chunk_bodies(
    ctx: SplitContext,
    config: ChunkConfig,
    doc_id: str,
    nodes: Sequence[Node | None],
    spans: Sequence[tuple[int, int]],
    crumbs: Sequence[tuple[str, ...]],
    doc_title: str,
    *,
    markdown: bool,
) -> list[Chunk]:
    chunks: list[Chunk] = []
    per_body = split_bodies(ctx, spans, markdown=markdown)
    wanted = [k for k, ps in enumerate(per_body) if ps]
    heads = dict(zip(wanted, _breadcrumbs([crumbs[k] for k in wanted],
                                          config.max_breadcrumb_tokens, ctx.tokenizer),
                     strict=True))
    for k, (node, ps) in enumerate(zip(nodes, per_body, strict=True)):
        if not ps:
            continue
        head = heads[k] + "\n"
        for p in ps:
            first, last = ctx.line_of(p.start), ctx.line_of(p.end - 1) + 1
            path: tuple[str, ...]
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
