"""Chunks as proxies: exact pointers, node boundaries, sizes, tables, fallback, bad input."""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy_pointer.embeddings import Embedder, HashEmbedder, RecordingEmbedder, make_embedder
from proxy_pointer.errors import ConfigError
from proxy_pointer.index import Index, update_directory
from proxy_pointer.llm import ScriptedLLM
from proxy_pointer.parse.blocks import embed_view
from proxy_pointer.parse.chunking import (
    CHUNKER_VERSION,
    Chunk,
    ChunkConfig,
    breadcrumb_text,
    chunk_text,
    chunk_tree,
    skip_reasons,
)
from proxy_pointer.parse.noise import NoiseConfig, NoiseDecision
from proxy_pointer.parse.tree import Node, Tree, build_tree, split_lines
from proxy_pointer.stores import open_store
from proxy_pointer.tokens import count_tokens, count_tokens_many

FIXTURES = Path(__file__).parents[1] / "fixtures" / "chunking"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
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


# --- configuration -------------------------------------------------------------------------
def test_default_config_fits_the_window():
    cfg = ChunkConfig()
    assert (cfg.unit, cfg.chunk_size, cfg.chunk_overlap) == ("tokens", 200, 30)
    assert cfg.chunk_size + cfg.max_breadcrumb_tokens + 2 <= WINDOW
    assert cfg.min_section_chars == 0  # every node with own text is chunked
    chars = ChunkConfig.chars(2000, 200)
    assert (chars.unit, chars.chunk_size, chars.chunk_overlap) == ("chars", 2000, 200)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"chunk_size": 240, "window_tokens": 256},
         "chunk_size 240 .* exceeds the embedder's window of 256 tokens; .* at most 206"),
        ({"window_tokens": 0}, "window_tokens must be a positive integer"),
        ({"chunk_overlap": 200}, "chunk_overlap"),
        ({"chunk_overlap": -1}, "chunk_overlap"),
        ({"unit": "words"}, "unit"),
        ({"chunk_size": 0}, "positive"),
        ({"min_section_chars": -5}, "min_section_chars"),
        ({"html_tables": "markdown"}, "html_tables"),
        ({"mode": "flat"}, "mode"),
        ({"max_breadcrumb_tokens": 2}, "max_breadcrumb_tokens"),
    ],
)
def test_config_rejects_bad_values(kw, msg):
    with pytest.raises(ConfigError, match=msg):
        ChunkConfig(**kw)


def test_config_round_trip():
    for cfg in (ChunkConfig(), ChunkConfig.chars(2000, 200), ChunkConfig.for_window(128),
                ChunkConfig(mode="window").with_noise(NoiseConfig.off()),
                ChunkConfig(noise=NoiseConfig(extra_titles=("Disclaimer",)))):
        d = json.loads(json.dumps(cfg.to_dict()))
        assert d["algorithm"] == CHUNKER_VERSION
        assert ChunkConfig.from_dict(d) == cfg
    with pytest.raises(ConfigError, match="unknown chunking settings"):
        ChunkConfig.from_dict({"chunk_sz": 3})


# --- fitted to the embedder's window ----------------------------------------------------------
def small_window_embedder(dimension: int = 16) -> RecordingEmbedder:
    """A hash embedder that reads 128 word pieces, as many sentence-transformers models do."""
    return RecordingEmbedder(dimension, max_tokens=128)


def test_an_index_fits_its_chunks_to_the_embedder_window():
    assert isinstance(small_window_embedder(), Embedder)
    assert Index(embedder=HashEmbedder(16)).chunk_config == ChunkConfig().fitted(WINDOW)
    small = Index(embedder=small_window_embedder()).chunk_config
    assert small == ChunkConfig.for_window(128)
    assert (small.chunk_size, small.chunk_overlap, small.max_breadcrumb_tokens) == (101, 15, 25)
    assert small.chunk_size + small.max_breadcrumb_tokens + 2 == small.window_tokens == 128
    # Sizes a caller chose are checked against the smaller window, not shrunk.
    with pytest.raises(ConfigError, match=r"= 250 tokens exceeds the embedder's window of 128 "
                                          r"tokens; lower chunk_size to at most 78"):
        Index(embedder=small_window_embedder(), chunk_config=ChunkConfig())
    fits = ChunkConfig(chunk_size=78, chunk_overlap=10)
    fitted = Index(embedder=small_window_embedder(), chunk_config=fits).chunk_config
    assert fitted == fits.fitted(128)
    # Characters are not tokens: a character-sized config is recorded, not checked.
    assert Index(embedder=small_window_embedder(),
                 chunk_config=ChunkConfig.chars(2000, 200)).chunk_config.window_tokens == 128
    with pytest.raises(ConfigError, match="too small for chunks"):
        ChunkConfig.for_window(20)


def test_small_window_chunks_fit_it():
    _, tree = load("amd_2022_10k_excerpt.md")
    cfg = ChunkConfig.for_window(128)
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)  # every embed_text + [CLS] + [SEP] within 128
    assert len(chunks) > len(chunk_tree(tree, ChunkConfig()))


def test_an_index_made_before_embedders_stated_windows_opens_unchanged(tmp_path):
    """Manifests record window_tokens 256: the default's window, so nothing is re-chunked."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Harbor\n\nShips enter at high tide.\n\n## Fees\n\nTen.\n")
    recorded = {**ChunkConfig().to_dict(), "window_tokens": WINDOW}  # what manifests hold
    update_directory(tmp_path / "idx", [docs], embedder=HashEmbedder(16))
    assert open_store(tmp_path / "idx").read_manifest().chunking.to_dict() == recorded
    assert make_embedder("minilm").max_tokens == WINDOW  # the default reads the same window
    _, report = update_directory(tmp_path / "idx", [docs], embedder=HashEmbedder(16),
                                 chunk_config=ChunkConfig())
    assert (report.added, report.updated, report.embedded) == ((), (), 0)
    assert Index.load(tmp_path / "idx").chunk_config.to_dict() == recorded


class Words:
    """A tokenizer that counts whitespace-separated words: not MiniLM's word pieces, and
    with no sub-span counting or truncation of its own."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def words_embedder(dimension: int = 16) -> RecordingEmbedder:
    """A hash embedder that reads 64 words."""
    return RecordingEmbedder(dimension, max_tokens=64, tokenizer=Words())


def test_chunks_are_sized_with_the_embedders_tokenizer():
    """An embedder that counts otherwise gets chunks that fit in its own count, on prose,
    tables and breadcrumbs alike; the default's chunks are MiniLM-sized as before."""
    _, tree = load("amd_2022_10k_excerpt.md")
    cfg = ChunkConfig.for_window(64)
    chunks = chunk_tree(tree, cfg, tokenizer=Words())
    assert chunks and all(len(c.embed_text.split()) <= 64 for c in chunks)
    crumbs = [c.embed_text.split("\n", 1)[0] for c in chunks]
    assert all(len(b.split()) <= cfg.max_breadcrumb_tokens for b in crumbs)
    assert [c.text for c in chunks] != [c.text for c in chunk_tree(tree, cfg)]
    check_coverage(tree, chunks, cfg)  # every non-noise line still lies in some chunk


def test_a_tokenizer_file_sizes_chunks_exactly_without_span_counting():
    """The generic path (each piece measured whole) with MiniLM's own tokenizer.json: every
    chunk fits the window in that count, as the word-piece fast path's chunks do."""
    from proxy_pointer import bundled
    from proxy_pointer.tokens import TokenizerFile, sizer

    tok = TokenizerFile(bundled.model_path() / "tokenizer.json")
    assert sizer(tok) is tok and sizer(Words()) is not None
    _, tree = load("amd_2022_10k_excerpt.md")
    cfg = ChunkConfig.for_window(128)
    chunks = chunk_tree(tree, cfg, tokenizer=tok)
    check_chunks(tree, chunks, cfg)  # MiniLM word pieces + [CLS] + [SEP] within 128
    assert tok.truncate("alpha beta gamma delta", 2) == "alpha beta"
    assert tok.count_many(["", "alpha beta", "x"]) == [0, 2, 1]


def test_an_index_chunks_with_its_embedders_tokenizer(tmp_path):
    text = "# Report\n\n## Results\n\n" + " ".join(f"word{i}" for i in range(400)) + "\n"
    idx = Index(embedder=words_embedder(16))
    idx.add_text("r.md", text)
    assert idx.chunk_config == ChunkConfig.for_window(64)
    assert len(idx.reader.chunks) > 1
    assert all(len(c.embed_text.split()) <= 64 for c in idx.reader.chunks)


# --- structure-guided chunks ------------------------------------------------------------------
def test_qasper_paper_chunks():
    _, tree = load("qasper_1908.07245.md")
    cfg = ChunkConfig()
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    ack = next(n for n in tree.nodes if n.title == "Acknowledgments")
    assert all(c.node_id != ack.node_id for c in chunks)
    # the heading is not repeated: the breadcrumb carries it
    intro = next(c for c in chunks if c.title == "Introduction")
    assert intro.embed_text.startswith(
        "[GlossBERT: BERT for Word Sense Disambiguation with Gloss Knowledge > Introduction]\n")
    assert not intro.text.startswith("#")
    # pieces of one long node overlap a little and follow each other
    intro_chunks = [c for c in chunks if c.node_id == intro.node_id]
    assert len(intro_chunks) > 1
    for a, b in itertools.pairwise(intro_chunks):
        assert a.start_char < b.start_char and a.end_char < b.end_char


def test_chars_setting_on_the_paper():
    _, tree = load("qasper_1908.07245.md")
    cfg = ChunkConfig.chars(2000, 200)
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    assert all(len(c.embed_text.partition("\n")[2]) <= 2000 for c in chunks)
    assert len(chunks) < len(chunk_tree(tree))


def test_short_sections_are_chunked_and_a_threshold_skips_them_with_a_reason():
    body = "Forty districts were surveyed; the sample covers twelve thousand households. " * 3
    text = (f"# Report\n\n## BOX 1.1\n\n### How the survey worked\n\n{body}\n\n"
            "## Tiny\n\nToo short.\n")
    tree = build_tree(text, doc_id="box")
    chunks = chunk_tree(tree)
    # Nodes without own text (Report, BOX 1.1) have nothing to chunk; "Tiny" is one chunk.
    assert [c.title for c in chunks] == ["How the survey worked", "Tiny"]
    assert chunks[0].embed_text.startswith("[Report > BOX 1.1 > How the survey worked]\n")
    assert chunks[1].embed_text == "[Report > Tiny]\nToo short."
    assert skip_reasons(tree) == {}
    # A raised threshold skips the short section and says why; its siblings still chunk.
    cfg = ChunkConfig(min_section_chars=100)
    reasons = skip_reasons(tree, cfg)
    assert {tree.get(k).title for k in reasons} == {"Tiny"}
    assert reasons[chunks[1].node_id].startswith("short: 10 characters")
    assert [c.title for c in chunk_tree(tree, cfg)] == ["How the survey worked"]


def test_noise_nodes_are_skipped_and_can_be_overridden():
    _, tree = load("noise_en.md")
    titles = {c.title for c in chunk_tree(tree)}
    assert titles == {"Scope of this report", "Executive Summary", "3. Findings",
                      "References to prior work", "Index funds for water utilities"}
    everything = {c.title for c in chunk_tree(tree, ChunkConfig(noise=NoiseConfig.off()))}
    assert {"Glossary", "Acknowledgements", "7. References (continued)",
            "Primary sources"} <= everything
    findings = next(n for n in tree.nodes if n.title == "3. Findings")
    override = {findings.node_id: NoiseDecision(findings.node_id, "custom", "own", "test")}
    titles = {c.title for c in chunk_tree(tree, noise=override)}
    assert "3. Findings" not in titles and "Glossary" in titles


def test_document_of_only_noise_gets_no_chunks():
    text = "# References\n\n" + "Smith, J. (2018). A paper about water. Journal, 1, 2-3.\n" * 5
    assert chunk_tree(build_tree(text, doc_id="refs")) == []


def test_llm_noise_labels_keep_a_section_out_of_the_chunks():
    _, tree = load("noise_en.md")
    findings = next(n for n in tree.nodes if n.title == "3. Findings")
    reply = json.dumps({"noise": [{"id": findings.node_id, "category": "foreword"}]})
    llm = ScriptedLLM(reply)
    cfg = ChunkConfig(noise=NoiseConfig(use_llm=True))
    chunks = chunk_tree(tree, cfg, noise_llm=llm)
    assert len(llm.calls) == 1  # one call for the whole document
    assert {c.title for c in chunks} == {"Scope of this report", "Executive Summary",
                                         "References to prior work",
                                         "Index funds for water utilities"}
    assert not any(c.start_line < findings.own_end and c.end_line > findings.start
                   for c in chunks)
    assert "LLM" in skip_reasons(tree, cfg, noise_llm=ScriptedLLM(reply))[findings.node_id]
    # the rules still apply next to the LLM's labels, and without use_llm it is never asked
    rules_only = chunk_tree(tree)
    assert {c.chunk_id for c in chunks} < {c.chunk_id for c in rules_only}
    idle = ScriptedLLM(reply)
    assert chunk_tree(tree, ChunkConfig(), noise_llm=idle) == rules_only and idle.calls == []


@pytest.mark.parametrize("reply", [RuntimeError("quota exceeded"), "no JSON here"])
def test_llm_noise_failure_falls_back_to_the_rules(reply):
    _, tree = load("noise_en.md")
    cfg = ChunkConfig(noise=NoiseConfig(use_llm=True))
    assert chunk_tree(tree, cfg, noise_llm=ScriptedLLM(reply)) == chunk_tree(tree)


def test_llm_noise_without_an_llm_is_a_config_error():
    _, tree = load("noise_en.md")
    cfg = ChunkConfig(noise=NoiseConfig(use_llm=True))
    with pytest.raises(ConfigError, match="noise_llm="):
        chunk_tree(tree, cfg)
    with pytest.raises(ConfigError, match="noise_llm="):
        skip_reasons(tree, cfg)
    with pytest.raises(ConfigError, match="noise_llm="):  # whatever the document holds
        chunk_tree(build_tree("no headings at all, just one line of text\n"), cfg)
    # ready decisions need no LLM
    assert chunk_tree(tree, cfg, noise={}) == chunk_tree(tree, ChunkConfig(), noise={})


def test_preamble_is_chunked_as_a_section():
    _, tree = load("mixed_preamble.md")
    cfg = ChunkConfig()
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    pre = [c for c in chunks if c.node_id == "preamble"]
    assert len(pre) >= 2
    assert all(c.embed_text.startswith("[Water Access Study]\n") for c in pre)
    assert pre[0].start_line == 0 and pre[0].title == "Water Access Study"
    assert {c.title for c in chunks if c.node_id not in (None, "preamble")} == {"Method", "Results"}


def test_breadcrumb_is_truncated_from_the_middle():
    parts = ["The Annual Report of the Regional Water Authority for the Year 2022",
             *[f"Part {i}: a rather long chapter title about water supply" for i in range(6)],
             "Households served"]
    crumb = breadcrumb_text(parts, 48)
    assert count_tokens(crumb) <= 48
    assert crumb.startswith("[The Annual Report") and crumb.endswith("> Households served]")
    assert "…" in crumb
    assert breadcrumb_text(["Doc", "Sec"]) == "[Doc > Sec]"
    huge = breadcrumb_text(["word " * 300, "title " * 300], 20)
    assert count_tokens(huge) <= 20
    assert breadcrumb_text(["", " "]) == "[document]"


def test_deep_paths_still_fit_the_window():
    text = "".join(f"{'#' * (i + 1)} A long heading number {i} about regional water supply\n\n"
                   for i in range(6)) + ("Water access rose in every district. " * 80)
    tree = build_tree(text, doc_id="deep")
    cfg = ChunkConfig()
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    assert all(c.embed_text.split("\n")[0].endswith("regional water supply]") for c in chunks)


def test_crlf_line_endings():
    text = ("# Doc\r\n\r\n## Section\r\n\r\n" + "A sentence about water pumps. " * 60
            + "\r\n\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n")
    tree = build_tree(text, doc_id="crlf")
    cfg = ChunkConfig(chunk_size=60, chunk_overlap=10)
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)


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


# --- the shared corpora (only where present) ------------------------------------------------
@pytest.mark.slow  # the shared dev data: CI runs it
@pytest.mark.skipif(not (SHARED / "finance-10k" / "docs").is_dir(), reason="no shared data")
@pytest.mark.parametrize("name", ["AMD_2022_10K.md", "AMERICANEXPRESS_2022_10K.md",
                                  "BOEING_2022_10K.md", "PEPSICO_2022_10K.md"])
@pytest.mark.parametrize("cfg", [ChunkConfig(), ChunkConfig.chars(2000, 200)],
                         ids=["tokens", "chars"])
def test_ten_k_filings(name, cfg):
    text = (SHARED / "finance-10k" / "docs" / name).read_text(encoding="utf-8")
    tree = build_tree(text, doc_id=name)
    chunks = chunk_tree(tree, cfg)
    check_chunks(tree, chunks, cfg)
    check_coverage(tree, chunks, cfg)
    for c in chunks:
        if "<tr" in c.text:
            assert "<td" not in c.embed_text
            if c.text.count("<tr") != c.text.count("</tr>"):
                # only a row too long for any chunk (header included) is ever cut inside
                a = text.rfind("<tr", 0, c.end_char)
                row = text[a : text.find("</tr>", a) + 5]
                view = embed_view(row, "html")
                size = count_tokens(view) if cfg.unit == "tokens" else len(view)
                assert size > cfg.chunk_size // 2, c.chunk_id


@pytest.mark.slow  # the shared dev data: CI runs it
@pytest.mark.skipif(not (SHARED / "qasper-dev" / "docs").is_dir(), reason="no shared data")
def test_qasper_sample():
    files = sorted((SHARED / "qasper-dev" / "docs").glob("*.md"))[::10]
    cfg = ChunkConfig()
    for f in files:
        tree = build_tree(f.read_text(encoding="utf-8"), doc_id=f.stem)
        chunks = chunk_tree(tree, cfg)
        check_chunks(tree, chunks, cfg)
        check_coverage(tree, chunks, cfg)
