"""The HTTP API's endpoints, one router per resource, over a
:class:`~proxy_pointer.serve.service.Service`.

Every endpoint is a plain function (FastAPI runs it in its thread pool) that reads one
generation (:func:`pinned`) through the caller's view (:data:`View`, from the server's
:class:`~.auth.Auth` held in ``app.state.auth``).
"""

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from ...access import Access
from ..service import Service
from .auth import Auth
from .models import IndexRequest, query_request, where_item_type

__all__ = ["View", "authorized", "document_routes", "health_routes", "index_routes", "pinned",
           "search_routes", "section_routes", "viewer"]

_BEARER = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]


def _auth(request: Request) -> Auth:
    auth: Auth = request.app.state.auth
    return auth


def viewer(request: Request, credentials: Credentials) -> Access:
    """What the request's bearer may read (:meth:`Auth.view <.auth.Auth.view>`)."""
    return _auth(request).view(credentials.credentials if credentials is not None else None)


def authorized(request: Request, credentials: Credentials) -> None:
    """Nothing for the update token's bearer; 403 or 401 otherwise."""
    _auth(request).check_update(credentials.credentials if credentials is not None else None)


#: The caller's view, as an endpoint parameter.
View = Annotated[Access, Depends(viewer)]


def pinned(service: Service, request: Request, work: Callable[[], Any]) -> Any:
    """``work()`` reading one generation of ``service``'s index, named in the response's
    generation header."""
    with service.pinned() as idx:
        request.state.generation = idx.generation
        return work()


def _question(body: Any) -> tuple[str, dict[str, Any]]:
    """A query body as the question and the settings it gives."""
    return body.question, body.model_dump(exclude_none=True, exclude={"question"})


def search_routes(service: Service) -> APIRouter:
    """``POST /query`` and ``POST /ask``, their bodies within the service's limits (the
    model is built per service, so the type checker cannot follow it)."""
    router = APIRouter()
    QueryRequest = query_request(service.limits)

    @router.post("/query", summary="Sections for a question, with pointers")
    def query(body: QueryRequest, request: Request,  # type: ignore[valid-type]
              view: View) -> dict[str, Any]:
        """The CLI's ``query --json``: ``contexts`` are sections, each with its ``ref``
        (``doc_id#node_id``, or ``doc_id#L12-30`` for a window of a document without
        headings) to open with ``/sections?ref=``."""
        question, options = _question(body)
        return pinned(service, request,
                      lambda: service.query(question, access=view, **options))

    @router.post("/ask", summary="An answer with checked citations (needs an LLM)")
    def ask(body: QueryRequest, request: Request,  # type: ignore[valid-type]
            view: View) -> dict[str, Any]:
        question, options = _question(body)
        return pinned(service, request, lambda: service.ask(question, access=view, **options))

    return router


def document_routes(service: Service) -> APIRouter:
    """``GET /documents`` and ``GET /documents/{doc_id}/tree``."""
    router = APIRouter()

    @router.get("/documents", summary="Every document the caller may read")
    def documents(request: Request, view: View, where: Annotated[
            list[where_item_type(service.limits)] | None, Query(  # type: ignore[valid-type]
                max_length=service.limits.max_where_pairs, description="KEY=VALUE on "
                "metadata or card fields, e.g. entity=3M, period=FY2021, kind=10-K "
                "(repeatable: all must hold)")] = None) -> dict[str, Any]:
        filtered = view.narrowed(where)
        return pinned(service, request,
                      lambda: {"documents": service.documents(access=filtered)})

    @router.get("/documents/{doc_id:path}/tree", summary="A document's outline (no text)")
    def outline(request: Request, view: View, doc_id: Annotated[str, PathParam(
            description="e.g. reports/2024.md")]) -> dict[str, Any]:
        return pinned(service, request, lambda: service.outline(doc_id, access=view))

    return router


def section_routes(service: Service) -> APIRouter:
    """``GET /sections/{doc_id}/{node_id}`` and ``GET /sections?ref=``."""
    router = APIRouter()

    @router.get("/sections/{doc_id:path}/{node_id}",
                summary="A section's text by doc id and node id (or L12-30 for lines)")
    def section(request: Request, view: View, doc_id: str, node_id: Annotated[str, PathParam(
            description="a node id (0003, preamble), lines (L12-30, L12) or pages (p3-5)")]
                ) -> dict[str, Any]:
        return pinned(service, request, lambda: service.section(doc_id, node_id, access=view))

    @router.get("/sections",
                summary="The text a ref points at (doc#0003, doc#L12-30, doc#p3)")
    def section_by_ref(request: Request, view: View, ref: Annotated[str, Query(
            max_length=2_000, description="a ref as /query and /documents/{doc_id}/tree give "
            "it: doc_id#node_id (a whole section), doc_id#L12-30 or doc_id#L12 (1-based "
            "lines), doc_id#p3-5 (pages); '#' is %23 in a URL")]) -> dict[str, Any]:
        """A whole section with its subsections (node ref) or those lines of the stored
        document (line ref): ``doc_id``, ``node_id`` (null for lines), ``ref``, ``title``,
        ``path``, 1-based inclusive ``start_line``/``end_line`` and ``text``. 400 for a
        malformed ref, 404 for a document, section, lines or pages the index lacks (pages:
        of a converted PDF, or a Word file that records its page breaks; other documents
        have none)."""
        return pinned(service, request, lambda: service.section_by_ref(ref, access=view))

    return router


def health_routes(service: Service) -> APIRouter:
    """``GET /healthz``."""
    router = APIRouter()

    @router.get("/healthz", summary="Liveness and the generation served")
    def healthz(request: Request, view: View) -> dict[str, Any]:
        return pinned(service, request, lambda: {"status": "ok", **service.health(access=view)})

    return router


def index_routes(service: Service, root: Path | None) -> APIRouter:
    """``POST /index`` for the update token's bearer; server-side paths only under
    ``root`` (None: inline documents only)."""
    router = APIRouter()

    @router.post("/index", summary="Add or update documents (bearer token)",
                 dependencies=[Depends(authorized)])
    def index(body: IndexRequest, request: Request) -> dict[str, Any]:
        """Index ``paths`` (under the server's ``--docs-root``) and inline ``documents`` in
        one atomic commit; queries keep being answered from the previous generation until
        it is committed."""
        if body.paths and root is None:
            raise HTTPException(400, "server-side paths are off: start the server with "
                                "--docs-root DIR, or send the text in 'documents'")
        metadata = {**(body.metadata or {}), **{d.doc_id: d.metadata for d in body.documents
                                                 if d.metadata is not None}}
        report = service.add_documents(body.paths, [(d.doc_id, d.text) for d in body.documents],
                                       root=root, prune=body.prune, metadata=metadata)
        request.state.generation = report["generation"]
        return report

    return router
