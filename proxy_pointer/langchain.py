"""LangChain retriever: proxy-pointer sections as LangChain ``Document`` objects.

Needs ``langchain-core`` (``pip install 'proxy-pointer[langchain]'``). Each document's
``page_content`` is a whole section (or the blocks of it the budget held); its ``metadata``
carries the pointers (:func:`~proxy_pointer.serve.adapters.section_metadata`: ``ref``,
``doc_id``, ``node_id``, ``breadcrumb``, lines, ``pages``, ``score`` and the 0-1
``relevance``). It takes the LlamaIndex retriever's arguments (:mod:`.adapters`): ``index``
or ``index_dir``, and any retrieval setting as a keyword, in ``options`` or per call;
unknown names are refused.

>>> retriever = ProxyPointerRetriever(index_dir=".proxy-pointer-index", k=3,
...                                   doc_ids=["a.md"])                    # doctest: +SKIP
>>> retriever.invoke("What is the baseline?", budget=1000)                 # doctest: +SKIP
>>> tool = retriever.as_search_tool()  # an agent tool citing refs        # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from .package import needs

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(needs("proxy_pointer.langchain", "langchain-core", "langchain")) from e
from pydantic import ConfigDict, Field

from . import defaults
from .search.sections import Section
from .serve.adapters import open_index, retrieval_options, section_metadata

__all__ = ["ProxyPointerRetriever", "section_to_document"]

#: How :meth:`ProxyPointerRetriever.as_search_tool` shows an agent a section: its ref first.
TOOL_DOCUMENT = "[{ref}] {breadcrumb}\n{page_content}"


def section_to_document(section: Section) -> Document:
    """A LangChain ``Document`` for one retrieved section, pointers in its metadata."""
    return Document(page_content=section.text, metadata=section_metadata(section),
                    id=section.ref)


class ProxyPointerRetriever(BaseRetriever):
    """Retrieves whole sections from a proxy-pointer :class:`~proxy_pointer.index.Index`.

    Give either ``index`` (an open index) or ``index_dir`` (loaded once). ``k``, ``budget``
    and the other :class:`~proxy_pointer.search.retrieval.RetrievalConfig` fields go as keywords
    (``doc_ids=["a.md"]``), in ``options``, or per call:
    ``retriever.invoke(q, k=3, doc_ids=["a.md"])``. Raises ``ValueError``
    (:class:`~proxy_pointer.errors.ConfigError`) for an unknown setting or a bad value.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    index: Any = None
    index_dir: str | None = None
    k: int = defaults.K
    budget: int = defaults.BUDGET
    options: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        fields = {"index", "index_dir", "k", "budget", "options", *BaseRetriever.model_fields}
        more = {name: data.pop(name) for name in list(data) if name not in fields}
        index = open_index(data.pop("index", None), data.get("index_dir"))
        options = retrieval_options(data.get("options") or {}, more)
        super().__init__(**{**data, "index": index, "options": options})
        self._settings()  # k and budget validated with the rest

    def _settings(self, **per_call: Any) -> dict[str, Any]:
        return retrieval_options({"k": self.k, "budget": self.budget}, self.options, per_call)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        result = self.index.retrieve(query, **self._settings(**kwargs))
        return [section_to_document(s) for s in result.sections]

    def as_search_tool(self, name: str = "search_documents",
                       description: str = ("Find the sections of the indexed documents "
                                           "that answer a question. Each section starts "
                                           "with its [ref] to cite and its breadcrumb."),
                       ) -> Any:
        """This retriever as an agent tool (``create_retriever_tool``) whose output gives
        each section's ``ref`` and breadcrumb above its text, so the agent can cite it."""
        from langchain_core.prompts import PromptTemplate
        from langchain_core.tools import create_retriever_tool

        return create_retriever_tool(self, name, description,
                                     document_prompt=PromptTemplate.from_template(TOOL_DOCUMENT))
