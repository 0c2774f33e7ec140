"""What every chunking test checks: chunks point exactly into the source, stay inside their
section, fit the window, and together cover each section's body."""

from __future__ import annotations

from pathlib import Path

from proxy_pointer.parse.chunking import (
    Chunk,
    ChunkConfig,
    breadcrumb_text,
    skip_reasons,
)
from proxy_pointer.parse.tree import Tree, build_tree
from proxy_pointer.tokens import count_tokens_many

FIXTURES = Path(__file__).parent / "fixtures" / "chunking"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
WINDOW = 256  # MiniLM's input limit, [CLS] and [SEP] included


def load(name: str) -> tuple[str, Tree]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return text, build_tree(text, doc_id=name)


def line_starts(lines: list[str]) -> list[int]:
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def check_chunks(tree: Tree, chunks: list[Chunk], config: ChunkConfig) -> None:
    """The invariants every chunk of every document must hold."""
    text, ls = tree.text, line_starts(tree.lines)
    for c in chunks:
        assert c.text == text[c.start_char : c.end_char], c.chunk_id
        assert c.text and c.text == c.text.strip(), c.chunk_id
        assert ls[c.start_line] <= c.start_char < c.end_char <= ls[c.end_line], c.chunk_id
        assert c.start_line == max(i for i in range(len(ls)) if ls[i] <= c.start_char)
        assert c.chunk_id == f"{c.doc_id}:{c.node_id or '-'}:{c.start_char}"
        head, _, body = c.embed_text.partition("\n")
        assert head.startswith("[") and head.endswith("]") and body
        if c.node_id is None:
            assert (c.own_start, c.own_end) == (c.start_line, c.end_line)
            assert (c.section_start, c.section_end) == (c.start_line, c.end_line)
        else:
            node = tree.get(c.node_id)
            # inside the node's own text, after its heading line: never across a heading
            assert ls[node.body_start] <= c.start_char and c.end_char <= ls[node.own_end]
            assert (c.own_start, c.own_end, c.section_start, c.section_end) == (
                node.start, node.own_end, node.start, node.end)
            assert c.path == node.path
            assert head == breadcrumb_text(tree.breadcrumb(node), config.max_breadcrumb_tokens)
    if config.unit == "tokens" and chunks:
        counts = count_tokens_many([c.embed_text for c in chunks])
        assert max(counts) + 2 <= (config.window_tokens or WINDOW)


def check_coverage(tree: Tree, chunks: list[Chunk], config: ChunkConfig,
                   noise: dict | None = None) -> None:
    """Every non-blank character of every chunked node's own body lies in some chunk."""
    text, ls = tree.text, line_starts(tree.lines)
    skipped = skip_reasons(tree, config, noise=noise)
    spans: dict[str | None, list[tuple[int, int]]] = {}
    for c in chunks:
        spans.setdefault(c.node_id, []).append((c.start_char, c.end_char))
    for node in tree.nodes:
        a, b = ls[node.body_start], ls[node.own_end]
        got = spans.get(node.node_id, [])
        if node.node_id in skipped:
            assert not got, node.node_id
            continue
        covered = bytearray(b - a)
        for s, e in got:
            covered[s - a : e - a] = b"\x01" * (e - s)
        missing = [i for i in range(b - a) if not covered[i] and not text[a + i].isspace()]
        assert not missing, (node.node_id, text[a + missing[0] : a + missing[0] + 60])


