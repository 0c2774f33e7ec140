"""Every line that is not declared noise can be found: short sections are chunked, whatever
shape a document has, in both stores; what is skipped is shown and counted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy_pointer import Index
from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import update_directory
from proxy_pointer.ingest import parse_document
from proxy_pointer.parse.chunking import ChunkConfig, skip_reasons
from proxy_pointer.parse.noise import classify_noise
from proxy_pointer.parse.segmentation import segmented_tree
from proxy_pointer.parse.tree import build_tree
from proxy_pointer.tokens import count_tokens_many

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample" / "docs"
PAPER = "1908.05828.md"
PLATYPUS = ("\n## Platypus appendix\n\n"
            "The platypus lays eggs; this note records one sighting near the river.\n")
PLATYPUS_Q = "Where was the platypus sighting?"


# --- every non-noise line lies in some chunk ----------------------------------------------
_WORD = st.sampled_from(["water", "pump", "district", "12,400", "rose", "68%", "the", "of",
                         "supply.", "über", "报告", "naïve", "—", "a|b", "Eggs."])
_PARA = st.lists(_WORD, min_size=1, max_size=40).map(" ".join)
_LONG = st.integers(200, 3000).map(lambda n: " ".join(["word", "Sentence."] * (n // 2)))
_SHORT = st.sampled_from(["None.", "See above.", "x", "Not applicable to the company."])
_LIST = st.lists(_PARA, min_size=1, max_size=6).map(lambda xs: "".join(f"- {x}\n" for x in xs))
_TABLE = st.lists(st.tuples(_WORD, _WORD), min_size=1, max_size=12).map(
    lambda rows: "| k | v |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows))
_BLOCK = st.one_of(_PARA, _PARA, _LONG, _SHORT, _LIST, _TABLE)
_TITLE = st.sampled_from(["Overview", "Notes", "References", "Contents", "Item 1B", "Appendix",
                          "Acknowledgments", "Results"])


@st.composite
def _documents(draw):
    parts = draw(st.lists(_BLOCK, max_size=2))
    for level, title, blocks in draw(st.lists(
            st.tuples(st.integers(1, 4), _TITLE, st.lists(_BLOCK, max_size=4)), max_size=8)):
        parts.append(f"{'#' * level} {title}\n\n" + "\n\n".join(blocks))
    return "\n\n".join(p for p in parts if p) + "\n"


def _not_noise_lines(text: str) -> set[int]:
    """0-based lines that are neither blank, a heading line, nor a noise section's own text,
    in the tree the indexer builds (topical segments when there are no headings)."""
    tree = build_tree(text, doc_id="doc.md")
    if not tree.has_headings:
        tree = segmented_tree("doc.md", tree.lines, tree.title,
                              tokens=count_tokens_many(tree.lines))
        return {i for i, line in enumerate(tree.lines) if line.strip()}
    noise = {nid for nid, why in skip_reasons(
        tree, ChunkConfig(), noise=classify_noise(tree, ChunkConfig().noise)).items()
        if why.startswith("noise")}
    out: set[int] = set()
    for node in tree.nodes:
        if node.node_id not in noise:
            out.update(i for i in range(node.body_start, node.own_end) if tree.lines[i].strip())
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_documents())
def test_property_every_line_that_is_not_noise_lies_in_a_chunk(doc: str) -> None:
    parsed = parse_document(doc, "doc.md", "doc.md", None, ChunkConfig(), False)
    covered: set[int] = set()
    for c in parsed.chunks:
        covered.update(range(c.start_line, c.end_line))
    stored = doc if parsed.text is None else parsed.text  # long lines come back wrapped
    missing = _not_noise_lines(stored) - covered
    lines = stored.splitlines()
    assert not missing, [lines[i][:80] for i in sorted(missing)[:3]]


def test_a_twenty_thousand_character_line_and_short_leaves_are_reachable() -> None:
    line = " ".join(["The pump room floods in spring."] * 640)  # ~20,000 characters
    doc = f"# Manual\n\n## Flooding\n\n{line}\n\n## Warranty\n\nNone.\n\n## Noise\n\nHum.\n"
    parsed = parse_document(doc, "m.md", "m.md", None, ChunkConfig(), False)
    titles = [c.title for c in parsed.chunks]
    assert titles.count("Flooding") > 10 and "Warranty" in titles and "Noise" in titles
    assert parsed.sections_skipped == 0


# --- the reproduction: a short appendix of a paper ---------------------------------
@pytest.fixture(scope="module")
def with_platypus(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("platypus") / "docs"
    shutil.copytree(SAMPLE, docs)
    paper = docs / PAPER
    paper.write_text(paper.read_text(encoding="utf-8") + PLATYPUS, encoding="utf-8")
    return docs


@pytest.mark.parametrize("kind", ["local", "milvus"])
def test_a_short_section_is_found_in_both_stores(with_platypus: Path, tmp_path: Path,
                                                 kind: str) -> None:
    if kind == "milvus":
        pytest.importorskip("pymilvus")
        pytest.importorskip("milvus_lite")
    location = str(tmp_path / "idx") if kind == "local" else f"milvus:{tmp_path / 'idx.db'}"
    _, report = update_directory(location, [with_platypus], embedder=HashEmbedder(256))
    idx = Index.load(location, embedder=HashEmbedder(256))
    res = idx.retrieve(PLATYPUS_Q, budget=1000)
    assert res.sections[0].title == "Platypus appendix"
    assert "one sighting near the river" in res.sections[0].text
    # Nothing of the paper is skipped but noise (its acknowledgments).
    tree = idx.reader.tree(PAPER)
    skipped = skip_reasons(tree)
    assert skipped and all(why.startswith("noise") for why in skipped.values())
    assert 0 < report.sections_skipped
    n = report.sections_skipped
    assert f"{n} section{'s' if n != 1 else ''} skipped as noise" in report.summary()


@pytest.mark.slow
def test_a_short_section_is_found_with_the_real_model(with_platypus: Path) -> None:
    from proxy_pointer import SentenceTransformerEmbedder

    idx = Index.build([with_platypus / PAPER], embedder=SentenceTransformerEmbedder())
    for hybrid in (True, False):
        res = idx.retrieve(PLATYPUS_Q, budget=1000, hybrid=hybrid)
        assert "Platypus appendix" in [s.title for s in res.sections[:3]], hybrid


def test_tree_noise_marks_what_is_skipped_and_why(with_platypus: Path, capsys) -> None:
    paper = str(with_platypus / PAPER)
    assert main(["tree", paper, "--noise"]) == 0
    out = capsys.readouterr().out
    platypus = next(line for line in out.splitlines() if "Platypus appendix" in line)
    assert "[" not in platypus  # chunked: nothing to mark
    assert "[noise: acknowledgments" in out
    assert main(["tree", paper, "--noise", "--min-section-chars", "100"]) == 0
    platypus = next(line for line in capsys.readouterr().out.splitlines()
                    if "Platypus appendix" in line)
    assert "[short: 70 characters of own text < min_section_chars 100]" in platypus


@pytest.mark.parametrize("pairs", [1338, 1366, 2689])
def test_repetitive_text_wrapped_past_the_line_limit_is_chunked_to_its_end(pairs: int) -> None:
    """Found by the property test above: a line of one repeated sentence, wrapped at the
    line limit, lost its tail when a chunk was found back at an earlier copy of itself."""
    doc = ("word Sentence. " * pairs).rstrip() + "\n"
    parsed = parse_document(doc, "doc.md", "doc.md", None, ChunkConfig(), False)
    stored = doc if parsed.text is None else parsed.text
    covered = {i for c in parsed.chunks for i in range(c.start_line, c.end_line)}
    assert _not_noise_lines(stored) <= covered
    assert max(c.end_char for c in parsed.chunks) >= len(stored.rstrip())
