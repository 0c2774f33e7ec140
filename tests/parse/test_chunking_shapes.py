"""Chunks of the shapes documents take: tables and code, no structure at all, bad input (no
crash, no quadratic time), and properties over generated documents."""

from __future__ import annotations

import itertools
import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy_pointer.parse.chunking import (
    Chunk,
    ChunkConfig,
    chunk_text,
    chunk_tree,
)
from proxy_pointer.parse.tree import Node, Tree, build_tree, split_lines
from proxy_pointer.tokens import count_tokens_many
from tests.chunk_checks import (
    FIXTURES,
    WINDOW,
    check_chunks,
    check_coverage,
    line_starts,
    load,
)


# --- tables and code -------------------------------------------------------------------------
def test_markdown_table_pieces_keep_the_header():
    text, tree = load("tables.md")
    cfg = ChunkConfig()
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    header = "| Year | Region | Households served | Coverage |\n|------|--------|" \
             "------------------:|---------:|"
    table = [c for c in chunks if "| 20" in c.text]
    assert len(table) >= 5
    lines = set(split_lines(text))
    for c in table:
        body = c.embed_text.partition("\n")[2]
        assert body.startswith(header), c.chunk_id
        # cut only between rows: every line of the piece is a whole source line
        for line in c.text.splitlines():
            assert line + "\n" in lines, line
    assert table[0].text.startswith("| Year |")  # the first piece is the table's own header
    assert not table[1].text.startswith("| Year |")  # later pieces repeat it only when embedded
    small = next(c for c in chunks if c.title == "Small table")
    assert "| Wells | 12 |" in small.text and "fits in one chunk" in small.text


def test_code_blocks_are_cut_between_lines():
    text, tree = load("tables.md")
    chunks = [c for c in chunk_tree(tree) if c.title == "Computing the totals"]
    code = [c for c in chunks if "total_" in c.text]
    assert len(code) >= 3
    lines = {line.strip() for line in split_lines(text)}
    for c in code:
        assert c.embed_text.partition("\n")[2].startswith("```python\n")
        for line in c.text.splitlines():
            assert line.strip() in lines, line  # whole lines (chunk text is stripped)
        assert "\n    total_" in c.embed_text  # indentation kept in what is embedded


def test_html_tables_split_between_rows_with_their_header():
    _, tree = load("amd_2022_10k_excerpt.md")
    cfg = ChunkConfig()
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    ops = [c for c in chunks if c.title == "Consolidated Statements of Operations"
           and "<tr" in c.text]
    assert len(ops) >= 2
    for c in ops:
        body = c.embed_text.partition("\n")[2]
        assert body.startswith("Year Ended\nDecember 31, 2022 | December 25, 2021 | "
                               "December 26, 2020"), c.chunk_id
        assert "<td" not in body and "<tr" not in body
        assert c.text.count("<tr") == c.text.count("</tr>")  # whole rows only
    assert ops[0].text.startswith("<table>")
    assert ops[1].text.startswith("<tr>")
    assert "Net revenue | $23,601 | $16,434 | $9,763" in ops[0].embed_text
    # the table of contents ("INDEX") is noise
    assert "INDEX" not in {c.title for c in chunks}


def test_html_tables_as_source():
    _, tree = load("amd_2022_10k_excerpt.md")
    cfg = ChunkConfig(html_tables="source")
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    ops = [c for c in chunks if c.title == "Consolidated Statements of Operations"]
    assert len(ops) > len([c for c in chunk_tree(tree) if c.title == ops[0].title])
    for c in ops:
        body = c.embed_text.partition("\n")[2]
        assert body.startswith("<table>\n  <thead>")
        assert c.text.count("<tr") == c.text.count("</tr>")


def test_a_row_longer_than_a_chunk_is_cut_and_keeps_the_header():
    long_cell = " ".join(f"word{i}" for i in range(400))
    text = (f"# Doc\n\n## Big row\n\n| name | notes |\n|---|---|\n| short | fine |\n"
            f"| long | {long_cell} |\n| after | also fine |\n")
    tree = build_tree(text, doc_id="bigrow")
    cfg = ChunkConfig()
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    assert len(chunks) >= 3
    assert all(c.embed_text.partition("\n")[2].startswith("| name | notes |\n|---|---|")
               for c in chunks)


# --- fallback: no structure -----------------------------------------------------------------
def test_headerless_markdown_uses_the_sliding_window():
    text, tree = load("headerless.md")
    cfg = ChunkConfig(chunk_size=60, chunk_overlap=10)
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    assert len(chunks) > 1 and all(c.node_id is None for c in chunks)
    assert all(c.embed_text.startswith("[headerless.md]\n") for c in chunks)
    assert all(c.path == ("headerless.md",) for c in chunks)
    _assert_every_line_kept(text, chunks)


def test_plain_text_keeps_every_line():
    text = (FIXTURES / "plain.txt").read_text(encoding="utf-8")
    chunks = chunk_text(text, "plain.txt")
    tree = Tree(doc_id="plain.txt", lines=split_lines(text), nodes=[], title="plain.txt")
    check_chunks(tree, chunks, ChunkConfig())
    _assert_every_line_kept(text, chunks)
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    # consecutive windows of one paragraph overlap
    assert any(a.end_line > b.start_line for a, b in itertools.pairwise(chunks))
    # a plain-text "# heading" or "| table |" is just text
    assert chunk_text("# not a heading\n\nplain words here\n", "t")[0].node_id is None
    assert chunk_text("   \n\n", "blank") == []


def test_window_mode_ignores_structure():
    text, tree = load("qasper_1908.07245.md")
    chunks = chunk_tree(tree, ChunkConfig(mode="window"))
    assert chunks and all(c.node_id is None for c in chunks)
    _assert_every_line_kept(text, chunks)


def test_all_headings_and_no_text():
    text = "".join(f"{'#' * (1 + i % 3)} Heading number {i}\n\n" for i in range(300))
    tree = build_tree(text, doc_id="outline")
    cfg = ChunkConfig()
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    # nothing is long enough for a section chunk: the outline is chunked as text, so the
    # document can still be found by its headings
    assert chunks and all(c.node_id is None for c in chunks)
    _assert_every_line_kept(text, chunks)
    assert chunk_tree(build_tree("# A\n## B\n", doc_id="x"), cfg)[0].text == "# A\n## B"
    assert chunk_tree(build_tree("", doc_id="empty"), cfg) == []


def _assert_every_line_kept(text: str, chunks: list[Chunk]) -> None:
    covered = set()
    for c in chunks:
        covered.update(range(c.start_line, c.end_line))
        for line in c.text.splitlines():
            assert line in text
    for i, line in enumerate(split_lines(text)):
        if line.strip():
            assert i in covered, (i, line)


# --- bad input: no crash, no quadratic time ----------------------------------------------
def test_a_five_megabyte_line():
    rnd = random.Random(3)
    sentences = ["Revenue grew by 12% in the quarter.", "Costs fell to $1,234 per well.",
                 "Water pumps were repaired in 40 districts.", "The committee met twice."]
    line = " ".join(rnd.choice(sentences) for _ in range(150_000))
    assert len(line) > 5_000_000
    text = f"# Doc\n\n## One line\n\n{line}\n"
    tree = build_tree(text, doc_id="line")
    chunks = chunk_tree(tree)
    assert len(chunks) > 5000
    ls = line_starts(tree.lines)
    assert all(text[c.start_char : c.end_char] == c.text for c in chunks)
    assert chunks[0].start_char == ls[4] and chunks[-1].end_char == ls[5] - 1
    sample = chunks[:: len(chunks) // 200]
    assert max(count_tokens_many([c.embed_text for c in sample])) + 2 <= WINDOW


def test_a_giant_word_is_cut_into_bounded_pieces():
    text = "# Doc\n\n## Blob\n\n" + "x" * 300_000 + "\n"
    chunks = chunk_tree(build_tree(text, doc_id="blob"))
    assert len(chunks) >= 300_000 // (200 * 16)
    assert all(len(c.text) <= 200 * 16 for c in chunks)
    assert sum(len(c.text) for c in chunks) == 300_000


def test_a_hundred_thousand_row_table():
    rows = [f"| {i} | item {i} | {i * 3} |\n" for i in range(100_000)]
    lines = ["# Inventory\n", "\n", "| id | name | value |\n", "|---|---|---|\n", *rows]
    # built directly: the Markdown parser alone needs seconds for a table this long
    node = Node(node_id="0000", raw_title="Inventory", title="Inventory", level=1,
                path=("Inventory",), start=0, body_start=1, own_end=len(lines), end=len(lines))
    tree = Tree(doc_id="inv", lines=lines, nodes=[node], title="Inventory")
    chunks = chunk_tree(tree)
    assert len(chunks) > 1000
    assert chunks[0].text.startswith("| id | name | value |")
    assert chunks[-1].text.endswith("| 99999 | item 99999 | 299997 |")
    for c in chunks[::97]:
        assert c.embed_text.partition("\n")[2].startswith("| id | name | value |\n|---|---|---|")
        assert c.text == tree.text[c.start_char : c.end_char]
        assert all(re.fullmatch(r"\| \d+ \| item \d+ \| \d+ \|", x) or x.startswith("| id")
                   or x.startswith("|---") for x in c.text.splitlines())
    assert sum(c.text.count("item ") for c in chunks) == 100_000  # no row lost or doubled


# --- properties ----------------------------------------------------------------------------
_WORDS = st.sampled_from(["water", "pump", "district", "12,400", "rose", "68%", "the", "of",
                          "supply.", "(2022)", "über", "报告", "naïve", "x" * 30, "—", "a|b"])
_PARA = st.lists(_WORDS, min_size=1, max_size=60).map(" ".join)
_TABLE = st.lists(st.tuples(_WORDS, _WORDS), min_size=1, max_size=25).map(
    lambda rows: "| k | v |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows))
_HTML = st.lists(st.tuples(_WORDS, _WORDS), min_size=1, max_size=15).map(
    lambda rows: "<table>\n<thead><tr><th>k</th><th>v</th></tr></thead>\n<tbody>\n"
    + "".join(f"<tr><td>{a}</td><td>{b}</td></tr>\n" for a, b in rows) + "</tbody></table>\n")
_CODE = st.lists(_PARA, min_size=1, max_size=10).map(lambda ls: "```\n" + "\n".join(ls) + "\n```\n")
_BLOCK = st.one_of(_PARA, _PARA, _TABLE, _HTML, _CODE)
_SECTION = st.tuples(st.integers(1, 4), _WORDS, st.lists(_BLOCK, max_size=5))


@st.composite
def _documents(draw):
    pre = draw(st.lists(_PARA, max_size=2))
    sections = draw(st.lists(_SECTION, max_size=8))
    parts = ["\n\n".join(pre)]
    for level, title, blocks in sections:
        parts.append(f"{'#' * level} {title}\n\n" + "\n\n".join(blocks))
    return "\n\n".join(p for p in parts if p) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_documents(), size=st.sampled_from([16, 40, 120]), chars=st.booleans())
def test_property_chunks_point_exactly_and_cover_each_body(doc, size, chars):
    cfg = (ChunkConfig.chars(size * 5, size, min_section_chars=10) if chars
           else ChunkConfig(chunk_size=size, chunk_overlap=size // 5, min_section_chars=10))
    tree = build_tree(doc, doc_id="prop")
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    if tree.has_headings and any(c.node_id is not None for c in chunks):
        check_coverage(tree, chunks, cfg)
    else:
        _assert_every_line_kept(doc, chunks)
    if not chars:
        bodies = [c.embed_text.partition("\n")[2] for c in chunks]
        assert all(n <= size for n in count_tokens_many(bodies))


