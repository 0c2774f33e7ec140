"""The LlamaIndex retriever returns what ``Index.retrieve`` returns, as nodes carrying the
pointers, from an open index, a saved one or a Milvus location."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from proxy_pointer import ConfigError, HashEmbedder, Index
from proxy_pointer.llama_index import ProxyPointerRetriever

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "docs"
QUESTION = "How is the poem generated from an image?"
_INDEX = Index.build([SAMPLE], embedder=HashEmbedder(64))


def test_nodes_are_the_retrieved_sections_with_their_pointers() -> None:
    nodes = ProxyPointerRetriever(index=_INDEX, k=3, budget=900).retrieve(QUESTION)
    expected = _INDEX.retrieve(QUESTION, k=3, budget=900).sections
    assert len(nodes) == len(expected) >= 2
    for got, section in zip(nodes, expected, strict=True):
        assert isinstance(got, NodeWithScore) and isinstance(got.node, TextNode)
        node, meta = got.node, got.node.metadata
        assert node.node_id == section.ref == meta["ref"] == f"{section.doc_id}#{section.node_id}"
        assert node.get_content() == section.text
        assert got.score == meta["relevance"] == section.relevance  # 0-1, for cutoffs
        assert meta["score"] == section.score  # the raw fusion score
        assert node.ref_doc_id == meta["doc_id"] == section.doc_id
        assert meta["node_id"] == section.node_id and meta["title"] == section.title
        assert meta["path"] == list(section.path)
        assert meta["breadcrumb"] == " > ".join(section.path)
        assert (meta["start_line"], meta["end_line"]) == (section.start_line, section.end_line)
        assert meta["tokens"] == section.tokens and meta["trimmed"] == section.trimmed
        if not section.trimmed:  # 1-based inclusive lines of the source
            lines = _INDEX.reader.tree(section.doc_id).lines
            assert node.get_content() == "".join(lines[meta["start_line"] - 1:meta["end_line"]])
        # an LLM sees the citation key and breadcrumb above the text; nothing is embedded
        llm = node.get_content(metadata_mode=MetadataMode.LLM)
        assert llm.startswith(f"ref: {section.ref}\nbreadcrumb: {section.breadcrumb}")
        assert node.get_content(metadata_mode=MetadataMode.EMBED) == section.text


def test_loads_a_saved_index_and_keeps_settings(tmp_path: Path) -> None:
    _INDEX.save(tmp_path / "idx")
    retriever = ProxyPointerRetriever(index_dir=tmp_path / "idx", k=2, expand="own")
    assert retriever.options == {"expand": "own"}
    got = [n.node.node_id for n in retriever.retrieve(QUESTION)]
    assert got == [s.ref for s in _INDEX.retrieve(QUESTION, k=2, expand="own").sections]


def test_options_as_a_dict_or_per_call() -> None:
    retriever = ProxyPointerRetriever(index=_INDEX, options={"doc_ids": ("1910.03634.md",)})
    assert {n.node.metadata["doc_id"] for n in retriever.retrieve(QUESTION)} == {
        "1910.03634.md"}
    one = retriever.with_options(k=1, doc_ids=("1908.05828.md",))
    nodes = one.retrieve(QUESTION)
    assert len(nodes) == 1 and nodes[0].node.metadata["doc_id"] == "1908.05828.md"
    assert retriever.k != 1 and retriever.options == {"doc_ids": ("1910.03634.md",)}


async def test_aretrieve_equals_retrieve() -> None:
    retriever = ProxyPointerRetriever(index=_INDEX, k=3)
    got = await retriever.aretrieve(QUESTION)
    assert [(n.node.node_id, n.score) for n in got] == [
        (n.node.node_id, n.score) for n in retriever.retrieve(QUESTION)]


def test_bad_arguments_are_refused_early() -> None:
    with pytest.raises(ValueError, match="index"):
        ProxyPointerRetriever()
    with pytest.raises(ValueError, match="Index"):
        ProxyPointerRetriever(index="not an index")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ProxyPointerRetriever(index=_INDEX, k=0)
    with pytest.raises(ConfigError):
        ProxyPointerRetriever(index=_INDEX).with_options(budget=-1)


@pytest.mark.skipif(importlib.util.find_spec("milvus_lite") is None,
                    reason="needs proxy-pointer[milvus]")
def test_a_milvus_location_loads_like_a_directory(tmp_path: Path) -> None:
    location = f"milvus:{tmp_path / 'x.db'}"
    _INDEX.save(location)
    retriever = ProxyPointerRetriever(index_dir=location, k=2)
    got = [n.node.node_id for n in retriever.retrieve(QUESTION)]
    assert got == [s.ref for s in _INDEX.retrieve(QUESTION, k=2).sections]
