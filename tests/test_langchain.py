"""The LangChain retriever passes LangChain's own standard retriever suite."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from proxy_pointer import HashEmbedder, Index
from proxy_pointer.langchain import ProxyPointerRetriever

FIXTURES = Path(__file__).parent / "fixtures" / "retrieval"
_INDEX = Index.build([FIXTURES], embedder=HashEmbedder(256))


class TestProxyPointerRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[ProxyPointerRetriever]:
        return ProxyPointerRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"index": _INDEX, "budget": 5000, "options": {"expand": "own"}}

    @property
    def retriever_query_example(self) -> str:
        return "water demand and supply"


def test_documents_carry_the_pointers(tmp_path: Path) -> None:
    _INDEX.save(tmp_path / "idx")
    retriever = ProxyPointerRetriever(index_dir=str(tmp_path / "idx"), k=2)
    docs = retriever.invoke("reservoir storage measured sonar")
    assert 1 <= len(docs) <= 2 and all(isinstance(d, Document) for d in docs)
    meta = docs[0].metadata
    for key in ("doc_id", "node_id", "title", "path", "start_line", "end_line", "score", "ref"):
        assert key in meta
    lines = _INDEX.reader.tree(meta["doc_id"]).lines[meta["start_line"] - 1 : meta["end_line"]]
    if not meta["trimmed"]:
        assert docs[0].page_content == "".join(lines)


def test_needs_an_index() -> None:
    with pytest.raises(ValueError, match="index"):
        ProxyPointerRetriever()
