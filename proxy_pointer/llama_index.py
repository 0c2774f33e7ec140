"""LlamaIndex retriever: proxy-pointer sections as LlamaIndex nodes.

Needs ``llama-index-core`` (``pip install 'proxy-pointer[llama-index]'``). Each result is a
``NodeWithScore`` whose ``TextNode`` holds a whole section (or the blocks of it the budget
held) and whose ``metadata`` carries the pointers
(:func:`~proxy_pointer.serve.adapters.section_metadata`: ``ref``, ``doc_id``, ``node_id``,
``breadcrumb``, lines, ``pages``, ``score`` and ``relevance``). The node's score is the
section's 0-1 ``relevance`` (cosine similarity of the question and its best chunk), so
``SimilarityPostprocessor(similarity_cutoff=...)`` works as with a vector store; the raw
rank-fusion score stays in ``metadata["score"]``. The node's id is its ``ref``, so a
section retrieved twice is the same node, and its source document is ``doc_id``
(``node.ref_doc_id``). An LLM reading the node sees only ``ref`` and ``breadcrumb`` above
the text (what it needs to cite); no metadata is embedded. It takes the LangChain
retriever's arguments (:mod:`.adapters`); unknown names are refused.

>>> retriever = ProxyPointerRetriever(index_dir=".proxy-pointer-index", k=3)  # doctest: +SKIP
>>> retriever.retrieve("What is the baseline?")                            # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import Mapping
from typing import Any

from .package import needs

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(needs("proxy_pointer.llama_index", "llama-index-core", "llama-index")) from e

from . import defaults
from .index import Index
from .search.sections import Section
from .serve.adapters import open_index, retrieval_options, section_metadata

__all__ = ["ProxyPointerRetriever", "section_to_node"]

#: Metadata an LLM reads above a node's text; the rest is for code (and never embedded).
_FOR_LLM = ("ref", "breadcrumb")


def section_to_node(section: Section) -> NodeWithScore:
    """A LlamaIndex node for one retrieved section, pointers in its metadata."""
    meta = section_metadata(section)
    node = TextNode(
        id_=section.ref, text=section.text, metadata=meta,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=section.doc_id)},
        excluded_llm_metadata_keys=[key for key in meta if key not in _FOR_LLM],
        excluded_embed_metadata_keys=list(meta),
    )
    return NodeWithScore(node=node, score=section.relevance)


class ProxyPointerRetriever(BaseRetriever):
    """Retrieves whole sections from a proxy-pointer :class:`~proxy_pointer.index.Index`.

    Give either ``index`` (an open index) or ``index_dir`` (a saved index, or a
    ``milvus:URI[#NAME]`` location; loaded once). ``k``, ``budget`` and the other
    :class:`~proxy_pointer.search.retrieval.RetrievalConfig` fields go in ``options`` (as for the
    LangChain retriever) or as keywords: ``ProxyPointerRetriever(index=idx, expand="own")``.
    For one call with other settings: ``retriever.with_options(k=3, doc_ids=["a.md"])``.
    Raises ``ValueError`` (:class:`~proxy_pointer.errors.ConfigError`) for a bad setting.
    """

    def __init__(self, index: Index | None = None, *,
                 index_dir: str | os.PathLike[str] | None = None,
                 k: int = defaults.K, budget: int = defaults.BUDGET,
                 options: Mapping[str, Any] | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False,
                 **more_options: Any) -> None:
        self.index = open_index(index, index_dir)
        self.k = k
        self.budget = budget
        self.options = retrieval_options(options or {}, more_options)
        self._settings()  # k and budget validated with the rest
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def with_options(self, **options: Any) -> ProxyPointerRetriever:
        """A retriever over the same open index with ``options`` (``k``, ``budget`` or any
        :class:`~proxy_pointer.search.retrieval.RetrievalConfig` field) changed."""
        other = copy.copy(self)
        other.k = options.pop("k", self.k)
        other.budget = options.pop("budget", self.budget)
        other.options = retrieval_options(self.options, options)
        other._settings()
        return other

    def _settings(self) -> dict[str, Any]:
        return retrieval_options({"k": self.k, "budget": self.budget}, self.options)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.index.retrieve(query_bundle.query_str, **self._settings())
        return [section_to_node(s) for s in result.sections]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # Retrieval is CPU-bound and synchronous: off the event loop.
        return await asyncio.to_thread(self._retrieve, query_bundle)
