"""LangChain retriever: proxy-pointer sections as LangChain ``Document`` objects.

Needs ``langchain-core`` (``pip install 'proxy-pointer[langchain]'``). Each document's
``page_content`` is a whole section (or its trimmed window); its ``metadata`` carries the
pointers: ``doc_id``, ``node_id``, ``title``, ``path``, ``start_line``, ``end_line``
(1-based, inclusive), ``pages`` (first and last page of a converted PDF's section, else
None), ``score``, ``tokens``, ``trimmed`` and ``ref``.

>>> retriever = ProxyPointerRetriever(index_dir=".proxy-pointer-index", k=3)  # doctest: +SKIP
>>> retriever.invoke("What is the baseline?")                              # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "proxy_pointer.langchain needs langchain-core: pip install 'proxy-pointer[langchain]'"
    ) from e
from pydantic import ConfigDict, Field, model_validator

from . import defaults
from .index import Index
from .retrieval import RetrievalConfig, Section

__all__ = ["ProxyPointerRetriever", "section_to_document"]


def section_to_document(section: Section) -> Document:
    """A LangChain ``Document`` for one retrieved section, pointers in its metadata."""
    meta = section.to_dict()
    text = meta.pop("text")
    meta["ref"] = section.ref
    return Document(page_content=text, metadata=meta)


class ProxyPointerRetriever(BaseRetriever):
    """Retrieves whole sections from a proxy-pointer :class:`~proxy_pointer.index.Index`.

    Give either ``index`` (an open index) or ``index_dir`` (loaded once). ``k``, ``budget``
    and the other :class:`~proxy_pointer.retrieval.RetrievalConfig` fields can be set here
    or per call: ``retriever.invoke(q, k=3, doc_ids=["a.md"])``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any = None
    index_dir: str | None = None
    k: int = defaults.K
    budget: int = defaults.BUDGET
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _open(self) -> ProxyPointerRetriever:
        if self.index is None:
            if self.index_dir is None:
                raise ValueError("give index= (an Index) or index_dir= (a saved index)")
            self.index = Index.load(self.index_dir)
        elif not isinstance(self.index, Index):
            raise ValueError(f"index must be a proxy_pointer Index, got {type(self.index)}")
        RetrievalConfig(k=self.k, budget=self.budget, **self.options)  # validate early
        return self

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        options = {"k": self.k, "budget": self.budget, **self.options, **kwargs}
        result = self.index.retrieve(query, **options)
        return [section_to_document(s) for s in result.sections]
