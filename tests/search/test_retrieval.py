"""Retriever behaviour on small real fixtures with the deterministic HashEmbedder."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from proxy_pointer import ConfigError, HashEmbedder, Index, RetrievalConfig
from proxy_pointer.parse.chunking import ChunkConfig
from proxy_pointer.tokens import count_tokens

FIXTURES = Path(__file__).parents[1] / "fixtures" / "retrieval"
REPORT = "water_report.md"


@pytest.fixture(scope="module")
def index() -> Index:
    return Index.build([FIXTURES], embedder=HashEmbedder(256))


def _lines(index: Index, doc_id: str, start: int, end: int) -> str:
    """1-based inclusive lines of the stored copy."""
    return "".join(index.reader.tree(doc_id).lines[start - 1 : end])


def test_sections_are_whole_and_point_at_their_source(index: Index) -> None:
    res = index.retrieve("non-revenue water urban mains replaced litres per day", budget=2000)
    assert res.sections
    top = res.sections[0]
    assert top.doc_id == REPORT
    assert top.title == "2.2 Urban demand"
    assert top.path == ("Regional Water Outlook 2024", "Chapter 2: Demand", "2.2 Urban demand")
    assert not top.trimmed
    # The text is exactly the section's lines, heading and table included.
    assert top.text == _lines(index, REPORT, top.start_line, top.end_line)
    assert top.text.startswith("### 2.2 Urban demand")
    assert "| Energy | 44 | 43 | -2.3% |" in top.text
    assert top.tokens == count_tokens(top.text)


def test_dedupe_returns_distinct_nodes_and_no_nested_duplicates(index: Index) -> None:
    res = index.retrieve("water demand supply reservoir storage groundwater", budget=4000, k=5)
    keys = [(s.doc_id, s.node_id) for s in res.sections]
    assert len(keys) == len(set(keys))
    for a in res.sections:
        for b in res.sections:
            if a is not b and a.doc_id == b.doc_id:
                inside = a.start_line <= b.start_line and b.end_line <= a.end_line
                assert not inside, f"{b.ref} is repeated inside {a.ref}"


@pytest.mark.parametrize("budget", [1, 40, 120, 300, 700, 2000])
def test_budget_is_never_exceeded(index: Index, budget: int) -> None:
    res = index.retrieve("reservoir storage capacity sonar rating curves", budget=budget)
    assert res.tokens_used == sum(count_tokens(s.text) for s in res.sections)
    assert res.tokens_used <= budget


def test_sections_the_budget_cannot_hold_are_named_not_cut_to_a_heading(index: Index) -> None:
    res = index.retrieve("reservoir storage groundwater demand investment", budget=20, k=5)
    assert res.tokens_used <= 20
    assert all(not s.trimmed for s in res.sections)  # no 20-token stubs of long sections
    assert res.omitted and all("#" in ref for ref in res.omitted)
    kept = {s.ref for s in res.sections}
    assert kept.isdisjoint(res.omitted)


def test_trimmed_section_keeps_heading_and_matched_chunk(index: Index) -> None:
    q = "desalination plant reverse osmosis solar farm cubic metres"
    whole = index.retrieve(q, budget=2000, k=1).sections[0]
    assert whole.title == "3.1 Desalination plant" and not whole.trimmed
    res = index.retrieve(q, budget=whole.tokens - 10, k=1)
    (sec,) = res.sections
    assert sec.trimmed and sec.node_id == whole.node_id
    assert sec.tokens <= whole.tokens - 10
    heading = _lines(index, REPORT, sec.start_line, sec.start_line)
    assert sec.text.startswith(heading)
    # The section is one line of a few sentences: it is cut between sentences, from the
    # start of the chunk that matched (here the whole line) in reading order.
    assert "Construction of the coastal desalination plant began in March." in sec.text
    assert sec.matched_spans


def test_own_expansion_stops_at_first_child(index: Index) -> None:
    q = "Surface water supplies most of the region reservoir storage recovered dry seasons"
    own = index.retrieve(q, k=1, expand="own", budget=2000).sections[0]
    whole = index.retrieve(q, k=1, expand="section", budget=2000).sections[0]
    assert own.node_id == whole.node_id
    assert own.title == "Chapter 1: Supply"
    assert "### 1.1" not in own.text
    assert "### 1.1 Reservoir storage" in whole.text
    assert whole.end_line > own.end_line


def test_doc_and_path_filters(index: Index) -> None:
    res = index.retrieve("water", doc_ids=["plain_notes.txt"], budget=2000)
    assert res.sections and {s.doc_id for s in res.sections} == {"plain_notes.txt"}
    res = index.retrieve("percent withdrawals", path_prefix="Chapter 2: Demand", budget=3000)
    assert res.sections
    assert all(s.path[:2] == ("Regional Water Outlook 2024", "Chapter 2: Demand")
               for s in res.sections)
    # A prefix may leave out the document title and be given case-insensitively.
    res = index.retrieve("percent", path_prefix="chapter 3: investment", budget=3000)
    assert res.sections and all(s.path[1] == "Chapter 3: Investment" for s in res.sections)


def test_filters_that_match_nothing_give_an_empty_result(index: Index) -> None:
    assert index.retrieve("water", doc_ids=["missing.md"]).sections == ()
    assert index.retrieve("water", path_prefix="Chapter 9").sections == ()


def test_plain_text_is_retrieved_as_a_topical_segment(index: Index) -> None:
    res = index.retrieve("salinity estuary brackish bridge low tide", doc_ids=["plain_notes.txt"])
    top = res.sections[0]
    assert top.node_id is not None
    assert top.ref == f"plain_notes.txt#{top.node_id}"
    assert "Salinity readings" in top.text
    assert top.text in index.reader.text("plain_notes.txt")


def test_fallback_windows_are_used_directly() -> None:
    idx = Index.build([FIXTURES], embedder=HashEmbedder(256),
                      chunk_config=ChunkConfig(headerless="windows"))
    res = idx.retrieve("salinity estuary brackish bridge low tide", doc_ids=["plain_notes.txt"])
    top = res.sections[0]
    assert top.node_id is None
    assert top.ref == f"plain_notes.txt#L{top.start_line}-{top.end_line}"  # its lines
    assert "Salinity readings" in top.text
    assert top.text in idx.reader.text("plain_notes.txt")


def test_noise_sections_are_never_returned(index: Index) -> None:
    res = index.retrieve("Rating curves for reservoir storage estimation Journal of Hydrology",
                         budget=5000, k=20)
    assert "References" not in {s.title for s in res.sections}
    assert "Contents" not in {s.title for s in res.sections}


def test_parent_promotion_returns_the_parent_once() -> None:
    idx = Index.build([FIXTURES / REPORT], embedder=HashEmbedder(256))
    q = "agricultural urban demand withdrawals irrigation litres"
    plain = idx.retrieve(q, k=3, expand="own", budget=3000)
    promoted = idx.retrieve(q, k=3, expand="own", budget=3000, promote_parent=2)
    plain_titles = [s.title for s in plain.sections]
    assert "2.1 Agricultural demand" in plain_titles and "2.2 Urban demand" in plain_titles
    titles = [s.title for s in promoted.sections]
    assert "Chapter 2: Demand" in titles
    assert "2.1 Agricultural demand" not in titles and "2.2 Urban demand" not in titles
    parent = promoted.sections[titles.index("Chapter 2: Demand")]
    assert "### 2.1 Agricultural demand" in parent.text and "### 2.2 Urban demand" in parent.text
    # A budget too small for the parent (215 tokens): the fragments stay.
    small = idx.retrieve(q, k=3, expand="own", budget=200, promote_parent=2)
    assert "2.1 Agricultural demand" in [s.title for s in small.sections] or any(
        s.title == "2.2 Urban demand" for s in small.sections)
    assert all(s.text.count("### 2.") <= 1 for s in small.sections)


def test_parent_promotion_with_whole_sections_keeps_scores_and_spans() -> None:
    idx = Index.build([FIXTURES / REPORT], embedder=HashEmbedder(256))
    q = "agricultural urban demand withdrawals irrigation litres"
    plain = idx.retrieve(q, k=3, expand="section", budget=3000, hybrid=False)
    assert [s.title for s in plain.sections][:1] == ["Chapter 2: Demand"]
    promoted = idx.retrieve(q, k=3, expand="section", budget=3000, promote_parent=2,
                            hybrid=False, max_section_share=1.0)
    # Chapters 1 and 2 are both hit: their parent, the whole report, replaces them.
    (whole,) = promoted.sections
    assert whole.title == "Regional Water Outlook 2024"
    assert whole.score == plain.sections[0].score
    assert len(whole.matched_spans) >= 3
    assert "## Chapter 1: Supply" in whole.text and "## Chapter 2: Demand" in whole.text


def test_hybrid_finds_exact_terms(index: Index) -> None:
    res = index.retrieve("Lake Corran", hybrid=True, k=1)
    assert "Lake Corran" in res.sections[0].text


@pytest.mark.parametrize(
    "options",
    [{"k": 0}, {"k": -1}, {"budget": 0}, {"budget": -5}, {"k_search": 0},
     {"expand": "everything"}, {"promote_parent": 1}],
)
def test_bad_options_raise_config_error(index: Index, options: dict) -> None:
    with pytest.raises(ConfigError):
        index.retrieve("water", **options)


@pytest.mark.parametrize("question", ["", "   \n"])
def test_empty_question_is_an_error(index: Index, question: str) -> None:
    with pytest.raises(ConfigError, match="empty"):
        index.retrieve(question)


def test_huge_question_still_answers(index: Index) -> None:
    res = index.retrieve("desalination " * 10_000, budget=500)
    assert res.tokens_used <= 500
    assert res.sections


def test_empty_index_gives_empty_result() -> None:
    idx = Index(embedder=HashEmbedder(64))
    res = idx.retrieve("anything")
    assert res.sections == () and res.tokens_used == 0


def test_config_object_and_overrides_agree(index: Index) -> None:
    cfg = RetrievalConfig(budget=300, k=2)
    a = index.retrieve("groundwater aquifer", cfg)
    b = index.retrieve("groundwater aquifer", budget=300, k=2)
    assert a == b
    assert len(a.sections) <= 2


def test_section_path_is_the_heading_path_without_the_document_id() -> None:
    # Two top-level headings: the document title falls back to the doc id, which must not
    # leak into Section.path (gold paths and path filters speak heading titles only).
    idx = Index(embedder=HashEmbedder(128))
    idx.add_text("filing.md", "# Part I\n\n## Item 1. Business\n\n" + "We make chips. " * 20
                 + "\n\n# Part II\n\n## Item 7. Results\n\n" + "Revenue grew. " * 20 + "\n")
    top = idx.retrieve("revenue grew", k=1).sections[0]
    assert top.path == ("Part II", "Item 7. Results")
    assert idx.retrieve("revenue", path_prefix="Part II").sections


def test_stored_line_counts_give_exact_section_sizes(tmp_path: Path) -> None:
    # Section sizes are sums of per-line counts recorded at indexing time; they must equal
    # the tokenizer's count of the sliced text, CRLF, tables and non-ASCII included.
    crlf = "# Título\r\n\r\nCafé crème, naïve façade — 12.5% «quoted».\r\n\r\n## Table\r\n\r\n"
    crlf += "| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n"
    sources = {p.name: p.read_text(encoding="utf-8") for p in FIXTURES.iterdir()}
    sources.update({"crlf.md": crlf, "pepsico.md": next(
        (Path(__file__).parents[1] / "fixtures" / "tree").glob("*pepsico*.md")).read_text()})
    idx = Index(embedder=HashEmbedder(64))
    for doc_id, text in sources.items():
        idx.add_text(doc_id, text)
    idx.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    for doc_id in sources:
        counts = loaded.reader.line_tokens(doc_id)
        tree = loaded.reader.tree(doc_id)
        assert len(counts) == len(tree.lines)
        for node in tree:
            assert sum(counts[node.start:node.end]) == count_tokens(tree.section_text(node))


@pytest.mark.parametrize("budget", [60, 150, 400, 2000])
def test_packed_spans_are_the_lines_the_text_holds(index: Index, budget: int) -> None:
    res = index.retrieve("water demand supply reservoir storage desalination", budget=budget,
                         k=5)
    assert res.sections
    for s in res.sections:
        spans = s.packed_spans
        assert spans and spans[0][0] == s.start_line  # the heading is always handed over
        assert all(s.start_line <= a <= b <= s.end_line for a, b in spans)
        assert all(b < c for (_, b), (c, _) in itertools.pairwise(spans))  # sorted, disjoint
        if not s.trimmed:
            assert spans == ((s.start_line, s.end_line),)
        held = "".join(_lines(index, s.doc_id, a, b) for a, b in spans)
        for line in s.text.splitlines():  # every line of text comes from a packed span
            piece = line.replace("[…]", "").strip()
            assert piece in held, (s.ref, line)
        left_out = [n for n in range(s.start_line, s.end_line + 1)
                    if not any(a <= n <= b for a, b in spans)]
        assert bool(left_out) == (s.trimmed and any(
            _lines(index, s.doc_id, n, n).strip() for n in left_out))


def test_relevance_is_the_best_chunks_cosine_in_0_1(index: Index) -> None:
    import numpy as np

    q = "desalination plant reverse osmosis solar farm cubic metres"
    res = index.retrieve(q, budget=2000, k=5)
    vec = np.asarray(index.embedder.embed_query(q), dtype=np.float32)
    vec /= np.linalg.norm(vec)
    for s in res.sections:
        assert 0.0 <= s.relevance <= 1.0
        rows = [r for r in index.reader.rows_for([s.doc_id]).tolist()
                if s.start_line - 1 <= index.reader.chunks[r].start_line < s.end_line]  # 0-based
        vectors = index.reader.vectors_of(rows)
        best = max(0.0, float((vectors @ vec / np.linalg.norm(vectors, axis=1)).max()))
        assert s.relevance <= best + 1e-5  # at most the section's best chunk
    top = res.sections[0]
    assert top.title == "3.1 Desalination plant" and top.relevance > 0.3
    unrelated = index.retrieve("zzqx vorpal quux", budget=2000, k=1).sections
    assert not unrelated or unrelated[0].relevance < top.relevance
    assert res.to_dict()["contexts"][0]["relevance"] == top.relevance


def test_one_question_limit_for_servers_and_the_python_api(index: Index) -> None:
    """Served requests over MAX_QUESTION_CHARS are refused (Limits); the Python API searches
    the first MAX_QUESTION_CHARS characters of a longer question."""
    from proxy_pointer.search.config import MAX_QUESTION_CHARS, Limits

    assert Limits().max_question_chars == MAX_QUESTION_CHARS
    long = "Which impellers erode? " + "pump " * MAX_QUESTION_CHARS
    res = index.retrieve(long, budget=300)
    assert res.question == long[:MAX_QUESTION_CHARS] and res.sections
