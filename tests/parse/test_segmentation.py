"""Topical segments for documents without headings (TextTiling), used as sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import ConfigError
from proxy_pointer.parse.chunking import ChunkConfig
from proxy_pointer.parse.segmentation import SegmentConfig, segment_lines, segmented_tree
from proxy_pointer.parse.tree import split_lines

TOPICS = {
    "bees": "Honey bees forage nectar from clover blossoms; the hive stores honey in wax combs "
            "while worker bees guard the colony queen and tend larvae in brood cells.",
    "trains": "Freight locomotives haul container wagons along the railway; signal boxes route "
              "each train across junctions while drivers watch speed limits on curved track.",
    "volcanoes": "Volcanic magma rises through the crust; eruptions eject ash plumes and lava "
                 "flows while seismometers record tremors beneath the crater rim.",
}


def _document(paragraphs_per_topic: int = 4) -> str:
    paras = []
    for name, text in TOPICS.items():
        for i in range(paragraphs_per_topic):
            paras.append(f"{text} Note {i} on {name}.")
    return "\n\n".join(paras) + "\n"


def test_segments_are_contiguous_and_cover_the_document() -> None:
    lines = split_lines(_document())
    segs = segment_lines(lines, SegmentConfig(min_tokens=20, max_tokens=200))
    assert segs[0][0] == 0 and segs[-1][1] == len(lines)
    assert all(a < b for a, b in segs)
    assert all(segs[i][1] == segs[i + 1][0] for i in range(len(segs) - 1))


def test_segment_boundaries_fall_where_the_topic_changes() -> None:
    lines = split_lines(_document())
    segs = segment_lines(lines, SegmentConfig(min_tokens=20, max_tokens=200))
    topics = ["".join(lines[a:b]) for a, b in segs]
    assert len(segs) == 3
    for text, name in zip(topics, TOPICS, strict=True):
        assert {t for t in TOPICS if t in text} == {name}


def test_short_or_uniform_documents_stay_one_segment() -> None:
    assert segment_lines(split_lines("One paragraph only.\n")) == [(0, 1)]
    assert segment_lines([]) == []
    lines = split_lines(_document(1))  # three paragraphs, under max_tokens together
    assert segment_lines(lines) == [(0, len(lines))]


def test_long_segments_are_split_at_their_deepest_gap() -> None:
    same = "\n\n".join([TOPICS["bees"]] * 12) + "\n"  # one topic, no dips at all
    lines = split_lines(same)
    segs = segment_lines(lines, SegmentConfig(min_tokens=30, max_tokens=120))
    assert len(segs) > 1
    assert segs[0][0] == 0 and segs[-1][1] == len(lines)


def test_segmented_tree_nodes_are_headingless_sections() -> None:
    lines = split_lines(_document())
    tree = segmented_tree("d.md", lines, "d.md", SegmentConfig(min_tokens=20, max_tokens=200))
    assert [n.level for n in tree.nodes] == [1, 1, 1]
    assert all(n.start == n.body_start and n.own_end == n.end for n in tree.nodes)
    assert tree.nodes[0].title.startswith("Honey bees forage")
    assert "".join(tree.slice(n.start, n.end) for n in tree.nodes) == _document()


def test_segment_config_is_checked() -> None:
    with pytest.raises(ConfigError):
        SegmentConfig(min_tokens=100, max_tokens=150)
    with pytest.raises(ConfigError):
        ChunkConfig(headerless="paragraphs")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["notes.md", "notes.txt"])
def test_headerless_documents_are_retrieved_as_segments_sliced_from_the_source(
        tmp_path: Path, name: str) -> None:
    text = _document(12)
    (tmp_path / name).write_text(text)
    idx = Index.build([tmp_path], embedder=HashEmbedder(256))
    tree = idx.reader.tree(name)
    assert len(tree.nodes) >= 2 and all(n.start == n.body_start for n in tree.nodes)
    assert all(c.node_id is not None for c in idx.reader.chunks)
    res = idx.retrieve("which instruments record tremors beneath the crater rim", budget=2000)
    top = res.sections[0]
    assert top.node_id is not None and "crater rim" in top.text
    node = tree.get(top.node_id)
    assert (top.start_line, top.end_line) == node.display_range
    if not top.trimmed:
        assert top.text == "".join(text.splitlines(keepends=True)[node.start:node.end])
    # Reloaded from disk: the segments were saved with the index, not recomputed.
    idx.save(tmp_path / "idx")
    again = Index.load(tmp_path / "idx", embedder=HashEmbedder(256))
    assert again.reader.tree(name) == tree


def test_windows_remain_available_for_headerless_documents(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text(_document(12))
    idx = Index.build([tmp_path], embedder=HashEmbedder(256),
                      chunk_config=ChunkConfig(headerless="windows"))
    assert all(c.node_id is None for c in idx.reader.chunks)
    res = idx.retrieve("which instruments record tremors beneath the crater rim", budget=500)
    assert res.sections and res.sections[0].node_id is None
