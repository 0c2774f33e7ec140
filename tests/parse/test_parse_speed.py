"""The fast parsing paths give exactly what the paths they replace give.

``DocumentTokens`` tokenizes a document once for its per-line counts and its span counters:
each must equal every line's ``count_tokens`` and ``span_counters(text, spans)`` (every
token's start, end and word start), on generated text with the characters the BERT
normalizer treats specially (accents, control and zero-width characters, CJK, CR line ends).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy_pointer.ingest.parsing import parse_document
from proxy_pointer.parse.blocks import SplitContext, split_bodies
from proxy_pointer.parse.chunking import ChunkConfig, chunk_tree
from proxy_pointer.parse.headings import find_headings
from proxy_pointer.parse.tree import build_tree, split_lines
from proxy_pointer.tokens import (
    WORD_PIECES,
    DocumentTokens,
    count_tokens,
    span_counters,
)

_ALPHABET = st.sampled_from([
    "a", "b", "Z", "7", " ", " ", "\t", "\n", "\n", "\r\n", "\r", ".", "-", "#", "|", "*", "`",
    "é", "e\u0301", "\u0301", "\x00", "\x7f", "\u200b", "\ufeff", "\u3000", "中", "文", "。",
    "İ", "ß", "😀", "\u2028", "\x0b", "\x1c", "\x0c", "ﬁ", "x" * 30, "word ", "Mississippi ",
    "[CLS]", "[UNK]", "[MASK] ", "[SEP]x", "##", "\\", "unaffable", "A" * 101,
])
_ASCII = st.sampled_from([
    "a", "B", " ", "\t", "\n", "\n", "\r\n", ".", "'", "[CLS]", "[UNK]", "x" * 120,
    "Tokenization ", "don't ", "e.g.", "3.14", "~", "\x7f", "é",
])
_TEXT = st.lists(_ALPHABET, max_size=200).map("".join)


def _check(text: str) -> None:
    lines = split_lines(text)
    doc = DocumentTokens(lines)
    assert doc.line_counts == [count_tokens(line) for line in lines]
    assert int(doc.line_first[-1]) == sum(doc.line_counts)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = [(starts[a], starts[b]) for a in range(len(lines)) for b in (a + 1, len(lines))
             if b > a][:40]
    fast = doc.span_counters(text, spans)
    slow = span_counters(text, spans)
    for f, s in zip(fast, slow, strict=True):
        assert list(f.starts) == s.starts
        assert list(f.ends) == s.ends
        assert [bool(w) for w in f.word_start] == s.word_start
        assert len(f) == len(s)
        lo = s.starts[0] if s.starts else 0
        hi = s.ends[-1] if s.ends else 0
        for x in range(max(0, lo - 2), min(len(text), hi + 2) + 1, max(1, (hi - lo) // 25)):
            for y in (x, x + 1, x + 3, hi):
                assert f.count(x, y) == s.count(x, y)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT)
def test_document_tokens_equal_separate_passes(text: str) -> None:
    _check(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ASCII, max_size=300).map("".join))
def test_document_tokens_mostly_ascii(text: str) -> None:
    _check(text)


def test_document_tokens_long_lines_and_groups() -> None:
    para = " ".join(f"w{i}é" for i in range(9000)) + "\n"
    text = "# h\n" + para * 3 + "x" * 45_000 + "\n" + "tail without newline"
    _check(text)
    assert DocumentTokens([]).line_counts == []


def test_document_tokens_refuse_another_text() -> None:
    doc = DocumentTokens(["ab\n"])
    try:
        doc.span_counters("abc\n", [(0, 4)])
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a different text must be refused")


_MD_LINE = st.sampled_from([
    "# Title", "## Sub", "### Deep #", "#NoSpace", "    # indented code", "   # three",
    "Setext", "======", "------", "---", "```", "~~~", "```python", "- item", "  # in list",
    "> # quote", "<div>", "</div>", "<!--", "-->", "| a | b |", "|---|---|", "| 1 | 2 |",
    "<table><tr><td>x</td></tr></table>", "", "", "plain text here.", "**Bold line**",
    "1. Numbered", "\ttab", "text with é and 中文。", "word " * 40,
    # what the heading scanner follows or defers on
    "<table>", "  <tr>", "    <td>#</td>", "</table>", "<!-- note", "# in comment -->",
    "<pre>", "</pre>", "<?php", "?>", "<![CDATA[", "]]>", "<!DOCTYPE html>", "<b>", "</b>",
    "<u>Item 1</u>", "<span>x</span> y", "   <div>", "- <!-- c", "> <div>", "*   <u>x</u>",
    "1. <p>", "#\tTab", "# Closing ###", "## ", "#", "####### seven", "\\# escaped",
    "# **Bold** `code` [link](u) <i>h</i>", "[ref]: /url", "See [ref].", "# [ref]",
    "***", "- - -", "=", "-", "+ plus", "  ---", "\u3000# ideographic", "#\u00a0nbsp",
    "<DIV class='x'>", "<Table>", "|", "-|-", "# a\rb",
])
_MARKDOWN = st.lists(_MD_LINE, max_size=40).map(lambda ls: "\n".join(ls) + "\n")


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MARKDOWN, st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_heading_scanner_finds_what_markdown_it_finds(md: str, eol: str, front: bool) -> None:
    text = ("---\ntitle: T\n---\n" if front else "") + md.replace("\n", eol)
    lines = split_lines(text)
    fast = find_headings(text, lines, "d.md")
    slow = find_headings(text, lines, "d.md", scan=False)
    assert fast == slow


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MARKDOWN, st.sampled_from(["\n", "\r\n"]))
def test_chunks_with_and_without_document_tokens(md: str, eol: str) -> None:
    text = md.replace("\n", eol)
    tree = build_tree(text, "d.md")
    config = ChunkConfig.for_window(256)
    pieces = DocumentTokens(tree.lines)
    assert chunk_tree(tree, config, pieces=pieces) == chunk_tree(tree, config)
    parsed = parse_document(text, "d.md", "d.md", None, config, False)
    assert list(parsed.record.line_tokens) == [count_tokens(line) for line in tree.lines]
    assert parsed.token_seconds >= 0.0


def test_split_context_uses_pieces_only_for_its_own_text() -> None:
    lines = split_lines("# a\nsome words here\n")
    ctx = SplitContext("".join(lines), lines, tokens=True, size=8, overlap=2,
                       html_tables="text", tokenizer=WORD_PIECES,
                       pieces=DocumentTokens(split_lines("other\n")))
    plain = SplitContext("".join(lines), lines, tokens=True, size=8, overlap=2,
                         html_tables="text", tokenizer=WORD_PIECES)
    spans = [(4, len(ctx.text))]
    assert [[(p.start, p.end, p.units) for p in ps] for ps in split_bodies(ctx, spans,
                                                                             markdown=True)] == \
        [[(p.start, p.end, p.units) for p in ps] for ps in split_bodies(plain, spans,
                                                                          markdown=True)]
    assert isinstance(DocumentTokens(lines).starts, np.ndarray)
