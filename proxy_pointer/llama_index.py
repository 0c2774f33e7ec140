"""LlamaIndex retriever: proxy-pointer sections as LlamaIndex nodes.

Needs ``llama-index-core`` (``pip install 'proxy-pointer[llama-index]'``). Each result is a
``NodeWithScore`` whose ``TextNode`` holds a whole section (or its trimmed window) and
whose ``metadata`` carries the pointers: ``doc_id``, ``node_id``, ``ref``, ``title``,
``path`` (the breadcrumb as a list), ``breadcrumb`` (joined with `` > ``), ``start_line``
and ``end_line`` (1-based, inclusive), ``pages`` (first and last page of a converted PDF's
section, else None), ``tokens``, ``trimmed`` and ``score``. The node's id
is its ``ref``, so a section retrieved twice is the same node, and its source document is
``doc_id`` (``node.ref_doc_id``). An LLM reading the node sees only ``ref`` and
``breadcrumb`` above the text (what it needs to cite); no metadata is embedded.

>>> retriever = ProxyPointerRetriever(index_dir=".proxy-pointer-index", k=3)  # doctest: +SKIP
>>> retriever.retrieve("What is the baseline?")                            # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import Mapping
from typing import Any

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
    raise ImportError(
        "proxy_pointer.llama_index needs llama-index-core: "
        "pip install 'proxy-pointer[llama-index]'"
    ) from e

from . import defaults
from .index import Index
from .retrieval import RetrievalConfig, Section

__all__ = ["ProxyPointerRetriever", "section_to_node"]

#: Metadata an LLM reads above a node's text; the rest is for code (and never embedded).
_FOR_LLM = ("ref", "breadcrumb")


def section_to_node(section: Section) -> NodeWithScore:
    """A LlamaIndex node for one retrieved section, pointers in its metadata."""
    meta = section.to_dict()
    text = meta.pop("text")
    meta.update(ref=section.ref, breadcrumb=section.breadcrumb)
    node = TextNode(
        id_=section.ref, text=text, metadata=meta,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=section.doc_id)},
        excluded_llm_metadata_keys=[key for key in meta if key not in _FOR_LLM],
        excluded_embed_metadata_keys=list(meta),
    )
    return NodeWithScore(node=node, score=section.score)


class ProxyPointerRetriever(BaseRetriever):
    """Retrieves whole sections from a proxy-pointer :class:`~proxy_pointer.index.Index`.

    Give either ``index`` (an open index) or ``index_dir`` (a saved index, or a
    ``milvus:URI[#NAME]`` location; loaded once). ``k``, ``budget`` and the other
    :class:`~proxy_pointer.retrieval.RetrievalConfig` fields go in ``options`` (as for the
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
        if index is None:
            if index_dir is None:
                raise ValueError("give index= (an Index) or index_dir= (a saved index)")
            index = Index.load(index_dir)
        elif not isinstance(index, Index):
            raise ValueError(f"index must be a proxy_pointer Index, got {type(index)}")
        self.index = index
        self.k = k
        self.budget = budget
        self.options = {**(options or {}), **more_options}
        RetrievalConfig(**self._settings())  # validate early
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def with_options(self, **options: Any) -> ProxyPointerRetriever:
        """A retriever over the same open index with ``options`` (``k``, ``budget`` or any
        :class:`~proxy_pointer.retrieval.RetrievalConfig` field) changed."""
        other = copy.copy(self)
        other.k = options.pop("k", self.k)
        other.budget = options.pop("budget", self.budget)
        other.options = {**self.options, **options}
        RetrievalConfig(**other._settings())
        return other

    def _settings(self) -> dict[str, Any]:
        return {"k": self.k, "budget": self.budget, **self.options}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.index.retrieve(query_bundle.query_str, **self._settings())
        return [section_to_node(s) for s in result.sections]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # Retrieval is CPU-bound and synchronous: off the event loop.
        return await asyncio.to_thread(self._retrieve, query_bundle)
