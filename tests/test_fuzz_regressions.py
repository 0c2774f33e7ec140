"""Crashes found by fuzzing (``python -m benchmarks.robustness.fuzz``), each pinned by its
shrunk input.

A crash is an exception a part does not document (anything but ``ConversionError`` from a
converter, anything but ``ProxyPointerError`` from opening and searching a damaged index) or
a broken documented invariant. Each test failed before its fix.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from proxy_pointer.convert import ConversionError
from proxy_pointer.convert.docx import DocxConverter
from proxy_pointer.convert.html import HtmlConverter
from proxy_pointer.convert.pdf import PdfConverter
from proxy_pointer.errors import IndexCorruptError, IndexMismatchError
from proxy_pointer.index import Index
from proxy_pointer.parse.chunking import ChunkConfig, chunk_tree
from proxy_pointer.parse.tree import build_tree

SEGMENT = Path("segments") / "seg-000001"
BM25 = SEGMENT / "bm25"
QUESTION = "harbor tides and the orchard"


# --- converters ------------------------------------------------------------------------------
def test_html_colspan_of_a_digit_that_is_not_ascii_counts_one_column() -> None:
    """``colspan=²`` (windows-1252 byte B2): ``"²".isdigit()`` is true, ``int("²")`` a
    ValueError. Browsers read ASCII digits only; anything else spans one column."""
    page = (b"<table><tr><td colspan=\xb2>w</td><td>x</td></tr>"
            b"<tr><td>a</td><td>b</td><td>c</td></tr></table>")
    md = HtmlConverter().convert(page, "f.html").markdown
    assert "| w | x |" in md and "| a | b | c |" in md


def test_pdf_text_placed_at_a_coordinate_too_large_for_a_float_still_converts() -> None:
    """A text offset of 10**40 (``Td``) puts the character box at NaN: rounding its
    position for the running-header check raised ValueError."""
    pdf = (b"%PDF\n1 0 obj<</Kids[3 0 R>>2 0 obj<<///Pages 1 0 R>endobj\n3 0 obj<</Contents 10"
           b" 0 R/\n\x02\n10 0 obj<<>>stream\nTf\xff" + b"5" * 39 + b"2. Td(2)Tj endstream\n"
           b"trailer<</Root 2 0 R>>%%EOF")
    try:
        converted = PdfConverter().convert(pdf, "f.pdf")
    except ConversionError:
        return  # refusing the file is as good
    assert converted.page_starts == (1,)


#: A zip of ``[Content_Types].xml`` and ``word/document.xml`` whose entries are flagged
#: encrypted (general purpose bit 0, in the local and central headers).
ENCRYPTED_DOCX = (
    b"PK\x03\x04\x14\x00\x01\x00\x00\x00\xb7`\x85]\xc7\x1c\x17<\x08\x00\x00\x00\x08\x00\x00"
    b"\x00\x13\x00\x00\x00[Content_Types].xml<Types/>PK\x03\x04\x14\x00\x01\x00\x00\x00\xb7`"
    b"\x85]\xddZ\x86\r\r\x00\x00\x00\r\x00\x00\x00\x11\x00\x00\x00word/document.xml"
    b"<w:document/>PK\x01\x02\x14\x03\x14\x00\x01\x00\x00\x00\xb7`\x85]\xc7\x1c\x17<\x08\x00"
    b"\x00\x00\x08\x00\x00\x00\x13\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x00"
    b"\x00\x00\x00[Content_Types].xmlPK\x01\x02\x14\x03\x14\x00\x01\x00\x00\x00\xb7`\x85]"
    b"\xddZ\x86\r\r\x00\x00\x00\r\x00\x00\x00\x11\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    b"\x00\x80\x019\x00\x00\x00word/document.xmlPK\x05\x06\x00\x00\x00\x00\x02\x00\x02\x00"
    b"\x80\x00\x00\x00u\x00\x00\x00\x00\x00"
)


def test_encrypted_docx_is_a_conversion_error_not_a_runtime_error() -> None:
    """zipfile raises RuntimeError for an encrypted member ("password required")."""
    with pytest.raises(ConversionError, match="password-protected") as err:
        DocxConverter().convert(ENCRYPTED_DOCX, "f.docx")
    assert err.value.path == "f.docx"


# --- chunking --------------------------------------------------------------------------------
class Words:
    """The tests' word tokenizer (see test_chunking.py)."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_a_splitter_piece_of_overlap_alone_is_found_at_its_own_place() -> None:
    """The splitter emitted ``"to"``, the overlap of a line's end with only spaces after it;
    it was searched for past its place, found in "pursuant to" lines later, and the chunks
    after it were misplaced: duplicated text, and ``</tr>`` in no chunk."""
    text = ("#\nAenced blocktransition period from      to     \n</tr>\n  $0.01 par value per "
            "share</td>\n   </tr>\nes registered pursuant to Section 12(g)")
    tree = build_tree(text, "f.md")
    chunks = chunk_tree(tree, ChunkConfig.for_window(64), tokenizer=Words())
    starts = [c.start_char for c in chunks]
    assert starts == sorted(starts)
    covered = set().union(*(range(c.start_char, c.end_char) for c in chunks))
    body = len(tree.lines[0])  # after the heading line "#"
    assert [i for i in range(body, len(text)) if i not in covered and not text[i].isspace()] == []


def test_a_splitter_piece_after_its_predecessor_is_not_taken_from_inside_it() -> None:
    """The other side of the fix above (a guard, not a crash of the old code): ``"date"``
    follows the previous chunk after blank space, and is not the ``date`` inside it."""
    text = "#\ne\n    " + "\x00" * 20 + "# print the date\n    date"
    chunks = chunk_tree(build_tree(text, "f.md"), ChunkConfig.for_window(64), tokenizer=Words())
    assert max(c.end_char for c in chunks) == len(text)


def test_a_splitter_piece_starting_where_the_previous_one_starts_is_found() -> None:
    """The splitter kept all of a one-character chunk (``*``) as the next one's overlap, so
    the next chunk started where it did; searched for after that start, it was not found
    and fell back to the first copy of its text, leaving the second list item unchunked."""
    text = "#\n*   Emerging\n    *   Emerging"
    config = ChunkConfig(chunk_size=16, chunk_overlap=4, max_breadcrumb_tokens=8,
                         window_tokens=64)
    chunks = chunk_tree(build_tree(text, "f.md"), config, markdown=False, tokenizer=Words())
    assert max(c.end_char for c in chunks) == len(text)


def test_character_sized_table_pieces_fit_the_chunk_size() -> None:
    """A row longer than a 50-character chunk under its repeated header was cut, measured
    as cut (51 characters) and never checked again: pieces measured already were skipped."""
    text = ("<table<tr<th>itle of each class</tr><tr>td>The NASDAQ Global Select Mark "
            "</tr></table>")
    chunks = chunk_tree(build_tree(text, "f.md"), ChunkConfig.chars(50, 10))
    assert chunks and all(len(c.embed_text.partition("\n")[2]) <= 50 for c in chunks)


# --- damaged index files ---------------------------------------------------------------------
def _patch(path: Path, edit: Callable[[bytearray], bytearray]) -> None:
    """Rewrite ``path`` through ``edit`` (bytes -> bytes of the same length: the segment
    records file sizes, so a size change is caught before the damage is read)."""
    data = path.read_bytes()
    out = edit(bytearray(data))
    assert len(out) == len(data)
    path.write_bytes(bytes(out))


def _open_and_search(index_dir: Path) -> None:
    Index.load(index_dir).retrieve(QUESTION)


def test_current_that_is_not_utf8_is_corrupt(saved: Path) -> None:
    (saved / "CURRENT").write_bytes(b"\x84")
    with pytest.raises(IndexCorruptError, match="cannot read CURRENT"):
        _open_and_search(saved)


def test_current_naming_a_generation_too_long_for_a_file_name_is_corrupt(saved: Path) -> None:
    """An OSError (ENAMETOOLONG) from checking the generation folder, before."""
    (saved / "CURRENT").write_text("gen-" + "1" * 300)
    with pytest.raises(IndexCorruptError, match="CURRENT: unexpected content"):
        _open_and_search(saved)


def test_bm25_params_with_an_unknown_key_is_corrupt(saved: Path) -> None:
    """``"k1"`` -> ``"+1"``: bm25s passed it to ``BM25(**params)``, a TypeError."""
    _patch(saved / BM25 / "params.index.json", lambda b: b.replace(b'"k1"', b'"+1"'))
    with pytest.raises(IndexCorruptError, match=r"bm25: BM25 index unreadable \(TypeError"):
        _open_and_search(saved)


def _flip(pos: int, mask: int) -> Callable[[bytearray], bytearray]:
    def edit(b: bytearray) -> bytearray:
        b[pos] ^= mask
        return b
    return edit


def test_bm25_array_with_a_damaged_header_is_corrupt(saved: Path) -> None:
    """The .npy header dict's ``{`` -> ``z``: numpy's header parser raised TokenError."""
    _patch(saved / BM25 / "data.csc.index.npy", _flip(10, 0x01))
    with pytest.raises(IndexCorruptError, match="BM25 index unreadable"):
        _open_and_search(saved)


def test_row_lengths_with_a_damaged_header_are_corrupt(saved: Path) -> None:
    """The fuzzer's crash-8f69c9db8bec: the row lengths' .npy header damaged, numpy's
    header parser raised TokenError."""
    for edit in (_flip(10, 0x01), _flip(8, 0x7F)):
        _patch(saved / BM25 / "row_lengths.npy", edit)
        with pytest.raises(IndexCorruptError, match="row lengths unreadable"):
            _open_and_search(saved)
        _patch(saved / BM25 / "row_lengths.npy", edit)  # undone for the next


def test_vectors_with_a_damaged_header_length_are_corrupt(saved: Path) -> None:
    """The .npy header length cut to 12 bytes: numpy raised TokenError."""
    def edit(b: bytearray) -> bytearray:
        b[8] = 12
        return b
    _patch(saved / SEGMENT / "vectors.npy", edit)
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy: unreadable"):
        _open_and_search(saved)


def test_bm25_scores_shorter_than_their_postings_are_corrupt(saved: Path) -> None:
    """The data array's shape lost its first digit (``(297,)`` -> ``( 97,)``): searching
    failed with a numpy broadcast ValueError."""
    def edit(b: bytearray) -> bytearray:
        at = b.index(b"'shape': (") + len(b"'shape': (")
        assert b[at + 1:at + 2].isdigit()  # at least two digits: dropping one shortens it
        b[at] = ord(" ")
        return b
    _patch(saved / BM25 / "data.csc.index.npy", edit)
    with pytest.raises(IndexCorruptError, match="postings offsets do not match"):
        _open_and_search(saved)


def test_bm25_postings_past_the_last_row_are_corrupt(saved: Path) -> None:
    """Every posting pointing at row 2**31 - 1: an IndexError while scoring."""
    def edit(b: bytearray) -> bytearray:
        start = b.index(b"\n") + 1  # the array data follow the header's newline
        b[start:] = b"\xff\xff\xff\x7f" * ((len(b) - start) // 4)
        return b
    _patch(saved / BM25 / "indices.csc.index.npy", edit)
    with pytest.raises(IndexCorruptError, match="name rows past"):
        _open_and_search(saved)


def test_manifest_naming_an_embedder_of_another_dimension_is_refused(saved: Path) -> None:
    """``hash:64`` -> ``hash:65`` with the dimension left at 64: every search failed in
    numpy's matmul."""
    _patch(saved / "gen-000001" / "manifest.json", lambda b: b.replace(b"hash:64", b"hash:65"))
    with pytest.raises(IndexMismatchError, match="dimension 64, the embedder produces 65"):
        _open_and_search(saved)


def _sql(saved: Path, statement: str) -> None:
    """Run ``statement`` on the segment's database, keeping its size (recorded in
    segment.json): SQLite checks no content, so this is damage only reading can find."""
    path = saved / SEGMENT / "meta.sqlite"
    size = path.stat().st_size
    con = sqlite3.connect(path)
    with con:
        con.execute(statement)
    con.close()
    assert path.stat().st_size == size


def test_chunk_rows_naming_a_document_the_segment_lacks_are_corrupt(saved: Path) -> None:
    """One byte of a chunk row's doc id (``orchard.md`` -> ``orfhard.md``): a KeyError."""
    _sql(saved, "UPDATE chunks SET doc_id = 'orfhard.md' WHERE doc_id = 'orchard.md'")
    with pytest.raises(IndexCorruptError, match=r"meta\.sqlite: chunk row \d+ is damaged"):
        _open_and_search(saved)


def test_chunk_rows_with_text_for_a_line_number_are_corrupt(saved: Path) -> None:
    """A TypeError comparing lines while packing."""
    _sql(saved, "UPDATE chunks SET end_line = 'Y'")
    with pytest.raises(IndexCorruptError, match=r"meta\.sqlite: chunk row \d+ is damaged"):
        _open_and_search(saved)


def test_chunk_rows_with_damaged_titles_are_corrupt(saved: Path) -> None:
    """A JSONDecodeError reading a chunk's heading path or breadcrumb (chunks as a search
    reads them where it needs more than their pointers)."""
    _sql(saved, "UPDATE chunks SET path = '[\"Harbor\"', crumbs = '[\"Harbor\"'")
    idx = Index.load(saved)
    rows = list(range(len(idx.reader.chunks)))
    with pytest.raises(IndexCorruptError, match=r"meta\.sqlite: chunk row \d+ is damaged"):
        idx.reader.chunks.at(rows)
    with pytest.raises(IndexCorruptError, match=r"meta\.sqlite: chunk row \d+ is damaged"):
        idx.reader.crumbs(rows)


def test_a_stored_tree_whose_node_ids_changed_is_corrupt(saved: Path) -> None:
    """``"0000"`` -> ``"0500"`` in a stored tree: chunks name node 0000, a KeyError."""
    _sql(saved, "UPDATE documents SET tree = replace(tree, '\"node_id\": \"0000\"', "
                "'\"node_id\": \"0500\"')")
    with pytest.raises(IndexCorruptError, match="node ids are not"):
        _open_and_search(saved)


def _patch_meta(saved: Path, edit: Callable[[bytearray], bytearray]) -> None:
    _patch(saved / SEGMENT / "meta.sqlite", edit)


def test_a_schema_sqlite_cannot_parse_or_decode_is_corrupt(saved: Path) -> None:
    """A byte of the chunks table's CREATE statement made 0xFD: SQLite's error message
    quotes it, and decoding the message raised UnicodeDecodeError."""
    def edit(b: bytearray) -> bytearray:
        b[b.index(b"CREATE TABLE chunks (") + len(b"CREATE TABLE chunks ")] = 0xFD
        return b
    _patch_meta(saved, edit)
    with pytest.raises(IndexCorruptError, match="not a readable index database"):
        _open_and_search(saved)


def test_a_document_its_key_index_lost_is_corrupt(saved: Path) -> None:
    """``harbor.md`` -> ``harbcr.md`` in the documents table's key index: the document is
    listed, but looking it up by key finds nothing, a KeyError for a document the index
    holds."""
    con = sqlite3.connect(saved / SEGMENT / "meta.sqlite")
    (root,), (size,) = (con.execute("SELECT rootpage FROM sqlite_master WHERE name = "
                                    "'sqlite_autoindex_documents_1'").fetchone(),
                        con.execute("PRAGMA page_size").fetchone())
    con.close()

    def edit(b: bytearray) -> bytearray:
        a = (root - 1) * size
        assert b"harbor.md" in b[a:a + size]
        b[a:a + size] = b[a:a + size].replace(b"harbor.md", b"harbcr.md")
        return b
    _patch_meta(saved, edit)
    with pytest.raises(IndexCorruptError, match=r"record of harbor\.md cannot be found"):
        _open_and_search(saved)


def test_chunk_rows_naming_a_node_id_no_tree_spells_are_corrupt(saved: Path) -> None:
    """One byte of a chunk row's node id (``0001`` -> ``00@1``): a KeyError looking the
    node up in its tree. (An id damaged into another number is not caught when read.)"""
    _sql(saved, "UPDATE chunks SET node_id = '00@1' WHERE node_id = '0001'")
    with pytest.raises(IndexCorruptError, match=r"meta\.sqlite: chunk row \d+ is damaged"):
        _open_and_search(saved)


def test_a_document_record_with_text_for_its_line_counts_is_corrupt(saved: Path) -> None:
    """Line token counts stored as text, not packed integers: a TypeError in numpy."""
    _sql(saved, "UPDATE documents SET line_tokens = 'E'")
    with pytest.raises(IndexCorruptError, match="damaged \\(its line or page counts\\)"):
        _open_and_search(saved)
