"""The LangChain and LlamaIndex retrievers take one argument set (checked, unknown names
refused) and hand over the same metadata."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from proxy_pointer import ConfigError, HashEmbedder, Index
from proxy_pointer import langchain as lc
from proxy_pointer import llama_index as li

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
QUESTION = "How is the poem generated from an image?"
_INDEX = Index.build([SAMPLE], embedder=HashEmbedder(64))
ONE = "1908.05828.md"
KEYS = {"ref", "doc_id", "node_id", "title", "path", "breadcrumb", "start_line", "end_line",
        "pages", "score", "relevance", "tokens", "trimmed", "also_in"}


def _langchain(query: str = QUESTION, **kwargs: Any) -> list[dict[str, Any]]:
    return [d.metadata for d in lc.ProxyPointerRetriever(**kwargs).invoke(query)]


def _llama_index(query: str = QUESTION, **kwargs: Any) -> list[dict[str, Any]]:
    return [n.node.metadata for n in li.ProxyPointerRetriever(**kwargs).retrieve(query)]


FRAMEWORKS = pytest.mark.parametrize("retrieve", [_langchain, _llama_index],
                                     ids=["langchain", "llama_index"])


@FRAMEWORKS
def test_doc_ids_as_a_keyword_are_honoured(retrieve) -> None:
    everywhere = {m["doc_id"] for m in retrieve(index=_INDEX, k=10)}
    assert len(everywhere) > 1 and ONE in everywhere  # the filter has something to drop
    assert {m["doc_id"] for m in retrieve(index=_INDEX, doc_ids=[ONE], k=10)} == {ONE}
    assert {m["doc_id"] for m in retrieve(index=_INDEX, options={"doc_ids": [ONE]})} == {ONE}


@FRAMEWORKS
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"budegt": 10}, "unknown retriever setting 'budegt' (did you mean 'budget'?)"),
    ({"options": {"nope": 1}}, "unknown retriever setting 'nope'"),
    ({"k": 0}, "k must be a positive integer"),
    ({"mode": "sideways"}, "mode must be one of"),
])
def test_unknown_or_bad_settings_are_refused_when_made(retrieve, kwargs, message) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        retrieve(index=_INDEX, **kwargs)


def test_per_call_settings_are_checked_too() -> None:
    lc_retriever = lc.ProxyPointerRetriever(index=_INDEX)
    with pytest.raises(ConfigError, match="'budegt'"):
        lc_retriever.invoke(QUESTION, budegt=10)
    docs = lc_retriever.invoke(QUESTION, k=1, doc_ids=[ONE])
    assert len(docs) == 1 and docs[0].metadata["doc_id"] == ONE
    with pytest.raises(ConfigError, match="'budegt'"):
        li.ProxyPointerRetriever(index=_INDEX).with_options(budegt=10)


def test_both_frameworks_hand_over_the_same_metadata() -> None:
    expected = _INDEX.retrieve(QUESTION, k=4, budget=900).sections
    for metas in (_langchain(index=_INDEX, k=4, budget=900),
                  _llama_index(index=_INDEX, k=4, budget=900)):
        assert [m["ref"] for m in metas] == [s.ref for s in expected]
        for meta, section in zip(metas, expected, strict=True):
            assert KEYS <= set(meta) and "text" not in meta
            assert meta["breadcrumb"] == " > ".join(section.path)
            assert meta["relevance"] == section.relevance and 0 <= meta["relevance"] <= 1
            assert meta["score"] == section.score
    assert _langchain(index=_INDEX, k=4, budget=900) == _llama_index(index=_INDEX, k=4,
                                                                      budget=900)


def test_langchain_tool_output_cites_refs() -> None:
    retriever = lc.ProxyPointerRetriever(index=_INDEX, k=2)
    out = retriever.as_search_tool().invoke({"query": QUESTION})
    sections = _INDEX.retrieve(QUESTION, k=2).sections
    for s in sections:
        assert f"[{s.ref}] {s.breadcrumb}\n" in out
    docs = retriever.invoke(QUESTION)
    assert [d.id for d in docs] == [s.ref for s in sections]
