"""Tests for proxy_pointer.search.ranking: sections ranked as sections (chunks / collapsed /
traverse), two-stage document selection.

The fixture is the handbook (handbook.py; conftest.py's ``index``), whose answers are known:
each subsection holds one topic, Chapter 1's own text names all of its subsections, Chapter 2
has no text of its own. Packing on it is tested in test_packing.py, the LLM rerank in
test_rerank.py, summaries in test_summaries.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from handbook import CHAPTER_Q, CHILD_Q, DOC, FIXTURES, MODES, PIPES_Q
from handbook import twice as _twice

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.search.ranking import group, rank_nodes


@pytest.mark.parametrize("mode", MODES)
def test_question_about_a_child_gets_the_child_not_the_parent(index: Index, mode: str) -> None:
    res = index.retrieve(CHILD_Q, mode=mode, budget=2000)
    top = res.sections[0]
    assert top.title == "1.1 Impellers" and not top.trimmed
    assert "### 1.2" not in top.text
    # The chapter may follow, but only with its own text: nothing is handed over twice.
    for s in res.sections[1:]:
        if s.title == "Chapter 1: Pumps":
            assert "### 1.1" not in s.text and "Bronze impellers" not in s.text


@pytest.mark.parametrize("mode", MODES)
def test_question_about_a_whole_chapter_gets_the_chapter(index: Index, mode: str) -> None:
    res = index.retrieve(CHAPTER_Q, mode=mode, budget=2000)
    top = res.sections[0]
    assert top.title == "Chapter 1: Pumps" and not top.trimmed
    for heading in ("### 1.1 Impellers", "### 1.2 Seals", "### 1.3 Bearings"):
        assert heading in top.text
    assert "## Chapter 2" not in top.text


def test_traverse_with_a_beam_of_one_follows_one_branch(index: Index) -> None:
    res = index.retrieve(PIPES_Q, mode="traverse", beam=1, budget=2000)
    assert res.sections[0].title == "2.1 Corrosion"
    # One branch: Chapter 2 and what lies above it (the handbook's own opening line).
    assert all(s.path[1:2] in ((), ("Chapter 2: Pipes",)) for s in res.sections)
    assert any(s.path[1:2] == ("Chapter 2: Pipes",) for s in res.sections)
    # Collapsed search ranks the same answer first but still lets the other chapter compete.
    wide = index.retrieve(PIPES_Q, mode="collapsed", budget=2000)
    assert wide.sections[0].title == "2.1 Corrosion"
    assert any(s.path[1:2] == ("Chapter 1: Pumps",) for s in wide.sections)


def test_collapsed_tree_adds_ancestors_that_carry_their_subtree_hits(index: Index) -> None:
    q = np.asarray(index.embedder.embed_query(PIPES_Q), np.float32)
    rows = index.reader.rows_for([DOC])
    scores, found = index.reader.dense_search(q, len(rows), rows=rows)
    ranked = list(zip(found.tolist(), scores.tolist(), strict=True))
    flat = group(index.reader, ranked)
    tree = index.reader.tree(DOC)
    pipes = next(n.node_id for n in tree.nodes if n.title == "Chapter 2: Pipes")
    assert pipes not in {c.node_id for c in flat}  # no chunk of its own
    collapsed = {c.node_id: c for c in rank_nodes(index.reader, flat, q, "collapsed")}
    child_rows = {r for c in flat if c.node_id in tree.get(pipes).children for r in c.rows}
    assert set(collapsed[pipes].rows) == child_rows
    assert rank_nodes(index.reader, flat, q, "chunks") == flat


def test_invalid_modes_and_packings_are_refused(index: Index) -> None:
    from proxy_pointer.errors import ConfigError

    with pytest.raises(ConfigError, match="mode"):
        index.retrieve(CHILD_Q, mode="raptor")
    with pytest.raises(ConfigError, match="packing"):
        index.retrieve(CHILD_Q, packing="greedy")
    with pytest.raises(ConfigError, match="beam"):
        index.retrieve(CHILD_Q, beam=0)


def test_duplicate_documents_are_reported_at_indexing(tmp_path: Path) -> None:
    root = _twice(tmp_path)
    (root / "other.md").write_text("# Other\n\nSomething else entirely, long enough to chunk.\n")
    idx = Index.build([root], embedder=HashEmbedder(256))
    report = idx.update([root])
    assert report.duplicates == ()  # nothing changed, nothing to report
    (root / "third.md").write_text((FIXTURES / DOC).read_text())
    report = idx.update([root])
    assert report.duplicates == (("republished/handbook.md", DOC), ("third.md", DOC))
    assert "2 duplicate documents" in report.summary()
    edited = Index.build([_twice(tmp_path / "e", edit=True)], embedder=HashEmbedder(256))
    assert edited.update([tmp_path / "e" / "corpus"]).duplicates == ()


def test_two_stage_search_keeps_the_best_documents(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / DOC).write_text((FIXTURES / DOC).read_text())
    (root / "garden.md").write_text(
        "# Garden Pump Notes\n\nA small garden pump lifts rain water from the butt to the beds."
        " Its impeller clogs with leaves in autumn, so rinse it weekly.\n\n## Hoses\n\n"
        "Hoses crack in frost; drain them before winter and store them coiled indoors.\n")
    idx = Index.build([root], embedder=HashEmbedder(256))
    both = idx.retrieve(CHILD_Q, budget=2000)
    assert {s.doc_id for s in both.sections} == {DOC, "garden.md"}
    one = idx.retrieve(CHILD_Q, budget=2000, documents=1)
    assert {s.doc_id for s in one.sections} == {DOC}
    assert one.sections[0].title == "1.1 Impellers"
