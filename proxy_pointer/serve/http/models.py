"""The HTTP API's request and response bodies (pydantic), so the OpenAPI schema states
the rules the server applies.

The query body is built per service (:func:`query_request`): its bounds are the service's
:class:`~proxy_pointer.search.config.Limits` and its ``mode`` the library's
:data:`~proxy_pointer.search.config.Mode`, so the schema, the checks and the CLI cannot
drift apart. The other bodies are fixed.
"""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...documents import MAX_SENT_DOC_ID
from ...search.config import Limits, Mode, check_question

__all__ = [
    "ERROR_STATUSES",
    "ErrorResponse",
    "IndexRequest",
    "InlineDocument",
    "query_request",
    "where_item_type",
    "where_type",
]

#: The error statuses declared in the OpenAPI schema (:mod:`.http` says when each comes).
ERROR_STATUSES = {
    400: "Bad request", 401: "Missing or wrong bearer token", 403: "Updates are off",
    404: "No such document, section, lines or route", 413: "Request body too large",
    415: "Body sent without Content-Type: application/json", 422: "Validation error",
    500: "Unexpected server error (logged)", 502: "The LLM or embedding backend failed",
    503: "No LLM configured, or the index is busy"}


def where_type(limits: Limits) -> Any:
    """The type of a request's ``where``: keys and text values at most
    ``limits.max_where_chars`` characters (the pairs are bounded where it is used)."""
    text = Annotated[str, Field(max_length=limits.max_where_chars)]
    return dict[text, text | int | float | bool]


def where_item_type(limits: Limits) -> Any:
    """One ``KEY=VALUE`` filter of a query string, at most a key and a value long."""
    return Annotated[str, Field(max_length=2 * limits.max_where_chars + 1)]


def query_request(limits: Limits) -> type[BaseModel]:
    """The body of ``POST /query`` and ``POST /ask`` within ``limits``."""

    class QueryRequest(BaseModel):
        """A question and optional retrieval settings (defaults: the library's)."""

        model_config = ConfigDict(extra="forbid")
        question: str = Field(min_length=1, max_length=limits.max_question_chars)
        # strict: a JSON true or "800" is no integer (the schema says so; lax would take it)
        budget: int | None = Field(None, ge=1, le=limits.max_budget, strict=True,
                                   description="context token budget")
        k: int | None = Field(None, ge=1, le=limits.max_k, strict=True,
                              description="sections to keep")
        doc_ids: list[str] | None = Field(None, max_length=limits.max_doc_ids,
                                          description="search only these documents")
        path_prefix: str | None = Field(None, max_length=limits.max_path_prefix_chars,
                                        description='only under this breadcrumb, e.g. "Chapter 2"')
        mode: Mode | None = None
        where: where_type(limits) | None = Field(  # type: ignore[valid-type]
            None, max_length=limits.max_where_pairs, description='only documents whose '
            'metadata or card holds every pair, e.g. {"year": 2024} or {"entity": "3M", '
            '"period": "FY2021"}')

        @field_validator("question", mode="before")
        @classmethod
        def _not_blank(cls, value: Any) -> Any:
            # Before the length check, so "" and "   " get the service's one message.
            if isinstance(value, str):
                check_question(value)
            return value

    return QueryRequest


class InlineDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")
    doc_id: str = Field(min_length=1, max_length=MAX_SENT_DOC_ID, description="e.g. notes/a.md")
    text: str
    metadata: dict[str, Any] | None = Field(
        None, description='e.g. {"access": ["hr"], "year": 2024}; "access" lists the '
        "groups that may read it")


class IndexRequest(BaseModel):
    """Files under the server's documents folder and/or documents sent inline, indexed
    in one atomic commit. ``prune`` removes every other document."""

    model_config = ConfigDict(extra="forbid")
    paths: list[str] = Field(default_factory=list, max_length=1_000,
                             description="files or folders, relative to --docs-root")
    documents: list[InlineDocument] = Field(default_factory=list, max_length=1_000)
    metadata: dict[str, dict[str, Any]] | None = Field(
        None, max_length=10_000, description="doc_id -> metadata for files under paths "
        "or documents already indexed (a metadata-only change embeds nothing)")
    prune: bool = Field(False, strict=True)

    @model_validator(mode="after")
    def _needs_work(self) -> "IndexRequest":
        if not (self.paths or self.documents or self.metadata):
            # {"prune": true} alone would empty the index
            raise ValueError("give paths, documents and/or metadata")
        return self


class ErrorResponse(BaseModel):
    """Every error: one line saying what was wrong."""

    error: str
