"""Chunks as proxies: exact pointers, node boundaries, sizes, tables, fallback, bad input."""

from __future__ import annotations

import itertools
import json

import pytest

from proxy_pointer.embeddings import Embedder, HashEmbedder, RecordingEmbedder, make_embedder
from proxy_pointer.errors import ConfigError
from proxy_pointer.index import Index, update_directory
from proxy_pointer.llm import ScriptedLLM
from proxy_pointer.parse.blocks import embed_view
from proxy_pointer.parse.chunking import (
    CHUNKER_VERSION,
    ChunkConfig,
    breadcrumb_text,
    chunk_tree,
    skip_reasons,
)
from proxy_pointer.parse.noise import NoiseConfig, NoiseDecision
from proxy_pointer.parse.tree import build_tree
from proxy_pointer.stores import open_store
from proxy_pointer.tokens import count_tokens
from tests.chunk_checks import (
    SHARED,
    WINDOW,
    check_chunks,
    check_coverage,
    load,
)


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
