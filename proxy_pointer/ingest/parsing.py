"""Parsing one document: its tree, chunks and per-line token counts, and its record.

What parsing owns, wherever it runs (in the ingesting process, a worker process or a Ray
actor): the documents to index (:class:`Source`), a document read and hashed
(:class:`ReadDocument`), what parsing it yields (:class:`ParsedDocument`), and the content
hash that tells a changed document from an unchanged one (:func:`text_digest`).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from hashlib import sha256
from typing import TYPE_CHECKING

from ..convert import convert_bytes, converter_for, converter_id
from ..documents import document_kind
from ..errors import ConfigError, DocumentError
from ..parse.cards import read_card
from ..parse.chunking import Chunk, ChunkConfig, chunk_text, chunk_tree, skip_reasons
from ..parse.noise import classify_noise
from ..parse.segmentation import segmented_tree
from ..parse.summaries import SummaryCache, summary_chunks
from ..parse.tree import MAX_LINE_CHARS, build_tree, split_lines, wrap_long_lines
from ..stores import DocumentRecord
from ..tokens import DocumentTokens, TokenCounter
from ..vocab.filings import FILINGS, Vocabulary

if TYPE_CHECKING:
    from ..llm.base import LLM

__all__ = ["FailedDocument", "ParsedDocument", "ReadDocument", "Source", "bytes_digest",
           "duplicate_pairs", "parse_document", "text_digest"]


@dataclass(frozen=True)
class Source:
    """One document to (re)index: a file at ``source_path``, or ``text`` held in memory.

    ``kind`` ``None`` means "from the file name" (:func:`~proxy_pointer.documents.document_kind`).
    """

    doc_id: str
    source_path: str
    kind: str | None = None
    text: str | None = None
    # A stored converted document re-chunked from its stored Markdown keeps its page map.
    pages: tuple[int, ...] = ()
    converter: str = ""


@dataclass(frozen=True)
class ParsedDocument:
    """What parsing one document yields: its record and chunks, and the seconds spent
    building the tree (plus line token counts) and chunking, for ``UpdateReport.timings``;
    ``token_seconds`` is the part of ``tree_seconds`` spent tokenizing the document (once,
    for its line counts and to size its chunks)."""

    record: DocumentRecord
    chunks: tuple[Chunk, ...]
    tree_seconds: float
    chunk_seconds: float
    tree_json: str = ""  # the skeleton tree without its text, saved so queries never parse
    sections_skipped: int = 0  # sections with own text that got no chunk (noise, or short)
    # The stored copy where it is not the text read: a converted file's Markdown (PDF, HTML,
    # Word), a text with long lines wrapped; None otherwise.
    text: str | None = None
    warnings: tuple[str, ...] = ()  # the converter's and the parser's, each naming the file
    convert_seconds: float = 0.0
    token_seconds: float = 0.0


@dataclass(frozen=True)
class FailedDocument:
    """A file its converter could not read (corrupt, encrypted, scanned): ``problem`` is
    ``"path: what is wrong"``. The document is skipped; whatever was indexed stays."""

    doc_id: str
    problem: str


@dataclass(frozen=True)
class ReadDocument:
    """A changed document, read and hashed: what an executor parses. Picklable, so that it
    travels to worker processes and Ray actors. ``digest``: :func:`text_digest` of ``text``,
    or for a converted format :func:`bytes_digest` of ``data``, the file's bytes, which the
    executor converts (so conversion runs in parallel, where parsing does)."""

    doc_id: str
    source_path: str
    kind: str | None
    text: str
    digest: str
    data: bytes | None = None
    pages: tuple[int, ...] = ()  # a stored converted document's page map (see Source)
    converter: str = ""

    def parse(self, config: ChunkConfig, recover_headings: bool, *,
              index_llm: LLM | None = None, tokenizer: TokenCounter | None = None,
              on_page: Callable[[], None] | None = None, vocabulary: Vocabulary = FILINGS
              ) -> ParsedDocument | FailedDocument:
        """:func:`parse_document` of this document, converted first if it is a PDF, HTML or
        Word file; a file that cannot be converted is a :class:`FailedDocument`.
        ``on_page``: called after each PDF page is read (progress)."""
        if self.data is None:
            return parse_document(self.text, self.doc_id, self.source_path, self.kind, config,
                                  recover_headings, digest=self.digest, index_llm=index_llm,
                                  tokenizer=tokenizer, pages=self.pages,
                                  converter=self.converter, vocabulary=vocabulary)
        t = time.perf_counter()
        try:
            converted = convert_bytes(self.data, self.source_path, on_page=on_page)
        except DocumentError as e:
            return FailedDocument(self.doc_id, str(e))
        seconds = time.perf_counter() - t
        parsed = parse_document(converted.markdown, self.doc_id, self.source_path, "markdown",
                                config, recover_headings, digest=self.digest,
                                index_llm=index_llm, tokenizer=tokenizer,
                                pages=converted.page_starts,
                                converter=_converter_of(self.source_path), vocabulary=vocabulary)
        return replace(parsed, text=converted.markdown if parsed.text is None else parsed.text,
                       warnings=converted.warnings + parsed.warnings, convert_seconds=seconds)


def text_digest(text: str) -> str:
    """The SHA-256 (hex) of ``text`` in UTF-8: equal digests mean an unchanged document."""
    return sha256(text.encode("utf-8")).hexdigest()


def bytes_digest(data: bytes, name: str) -> str:
    """The SHA-256 (hex) of a converted file's bytes and its converter's id: a new converter
    version converts every such file again, as a changed file is."""
    return sha256(_converter_of(name).encode("utf-8") + b"\0" + data).hexdigest()


def parse_document(text: str, doc_id: str, source_path: str, kind: str | None,
                   config: ChunkConfig, recover_headings: bool, *, digest: str | None = None,
                   index_llm: LLM | None = None, tokenizer: TokenCounter | None = None,
                   pages: tuple[int, ...] = (), converter: str = "",
                   vocabulary: Vocabulary = FILINGS) -> ParsedDocument:
    """Tree, chunks and per-line token counts of one document.

    Module-level with picklable arguments so that a worker process can run it. ``digest``
    is the SHA-256 of ``text`` when the caller has it already; ``tokenizer`` sizes chunks
    (the embedder's; default MiniLM word pieces). Raises
    :class:`~proxy_pointer.errors.ConfigError` when ``config.noise.use_llm`` is set without
    ``index_llm``; never raises on document content. ``pages`` and ``converter``: the
    page map and converter id of Markdown converted from a PDF (kept on the record). Lines
    longer than :data:`~proxy_pointer.parse.tree.MAX_LINE_CHARS` are wrapped first
    (:func:`~proxy_pointer.parse.tree.wrap_long_lines`): the wrapped text is the stored copy
    (``ParsedDocument.text``) and a warning names the file.
    """
    kind = kind or document_kind(source_path)
    t = time.perf_counter()
    digest = digest or text_digest(text)
    original = text
    text, inserted = wrap_long_lines(text)
    if inserted:  # page starts after an inserted line break move with it
        pages = tuple(p + bisect.bisect_right(inserted, p) for p in pages)
    tree = None if kind == "text" else build_tree(text, doc_id=doc_id,
                                                  recover_headings=recover_headings)
    lines = tree.lines if tree is not None else split_lines(text)
    tk = time.perf_counter()
    pieces = DocumentTokens(lines)  # tokenized once: line counts, then chunk sizes
    token_seconds = time.perf_counter() - tk
    line_tokens = tuple(pieces.line_counts)
    if (config.mode == "structure" and config.headerless == "segments"
            and (tree is None or not tree.has_headings)):
        # No headings: topical segments stand in for sections (see segmentation.py).
        title = tree.title if tree is not None else doc_id
        tree = segmented_tree(doc_id, lines, title, tokens=line_tokens)
    tt = time.perf_counter()
    skipped = 0
    if tree is None:
        chunks = chunk_text(text, doc_id, config, tokenizer=tokenizer)
    else:
        structured = config.mode == "structure" and tree.has_headings
        # Without the LLM that use_llm asks for, chunk_tree raises the ConfigError.
        decisions = (classify_noise(tree, config.noise, llm=index_llm)
                     if structured and (index_llm is not None or not config.noise.use_llm)
                     else None)
        chunks = chunk_tree(tree, config, noise=decisions, noise_llm=index_llm,
                            markdown=kind != "text", tokenizer=tokenizer, pieces=pieces)
        if decisions is not None and any(c.node_id is not None for c in chunks):
            # Sections with own text that got no chunk, for the summary.
            skipped = sum(1 for n in skip_reasons(tree, config, noise=decisions)
                          if tree.slice(tree.get(n).body_start, tree.get(n).own_end).strip())
    if config.summaries and tree is not None:
        if index_llm is None:
            raise ConfigError("ChunkConfig(summaries=True) needs an index-time LLM "
                              "(Index(..., index_llm=LLM))")
        chunks = chunks + summary_chunks(tree, chunks, index_llm, cache=_summary_cache(),
                                         max_breadcrumb_tokens=config.max_breadcrumb_tokens,
                                         tokenizer=tokenizer)
    tc = time.perf_counter()
    title = tree.title if tree else doc_id
    card = read_card(text, title, [n.title for n in tree.roots] if tree is not None else (),
                     vocabulary=vocabulary)
    record = DocumentRecord(
        doc_id=doc_id, source_path=source_path, size=len(text.encode("utf-8")),
        sha256=digest, kind=kind, title=title,
        n_chunks=len(chunks), line_tokens=line_tokens,
        pages=pages, converter=converter, card=card.to_dict(),
    )
    tree_json = tree.to_json(include_text=False) if tree is not None else ""
    warnings: tuple[str, ...] = ()
    if text is not original:
        long = sum(1 for line in split_lines(original) if len(line) > MAX_LINE_CHARS)
        warnings = (f"{source_path}: {long} line(s) over {MAX_LINE_CHARS:,} characters "
                    "wrapped into shorter lines (the stored copy holds the wrapped text)",)
    return ParsedDocument(record, tuple(chunks), (tt - t) + (time.perf_counter() - tc),
                          tc - tt, tree_json, skipped,
                          text=None if text is original else text, warnings=warnings,
                          token_seconds=token_seconds)


def _converter_of(name: str) -> str:
    """The id of the converter for a file called ``name`` (``""`` for text formats)."""
    conv = converter_for(name)
    return converter_id(conv) if conv is not None else ""


def duplicate_pairs(shas: Mapping[str, str], changed: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``(doc_id, first doc_id with the same text)`` in each group of identical documents
    that holds a changed one."""
    groups: dict[str, list[str]] = {}
    for doc_id in sorted(shas):
        groups.setdefault(shas[doc_id], []).append(doc_id)
    touched = set(changed)
    return tuple((d, g[0]) for g in groups.values()
                 if len(g) > 1 and touched.intersection(g) for d in g[1:])


_SUMMARY_CACHE: SummaryCache | None = None


def _summary_cache() -> SummaryCache:
    """The process's summary cache (in the user cache folder), opened once."""
    global _SUMMARY_CACHE
    if _SUMMARY_CACHE is None or _SUMMARY_CACHE.path != SummaryCache.default_path():
        _SUMMARY_CACHE = SummaryCache()
    return _SUMMARY_CACHE
