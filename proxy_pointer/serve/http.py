"""The HTTP API: a :class:`~proxy_pointer.serve.service.Service` behind FastAPI.

    proxy-pointer serve --index .proxy_pointer            # then open http://127.0.0.1:8000/

``/`` is the inspector (static files in ``proxy_pointer/serve/inspector/``, under ``/inspector/``):
the documents and their trees, a question's ranked sections with the lines handed over
highlighted, and how the budget was spent, the query kept in the page's URL. ``/docs`` is
Swagger UI and ``/redoc`` ReDoc, their scripts served from the ``fastapi-offline`` package, so
both work offline; nothing is loaded from a CDN.

From Python: ``uvicorn.run(create_app(Service("idx")))``. The model and the index load
once; endpoints are plain functions run in the server's thread pool, so requests are served
concurrently, also while ``POST /index`` commits an update. Each request reads one committed
generation from start to end (:meth:`Service.pinned`) and names it in the
``X-Index-Generation`` header of every response.

Errors are JSON ``{"error": message}``: 400 a bad request, 401 a missing or wrong token,
403 updates switched off, 404 an unknown document, section or route, 413 a body over
``Limits.max_body_bytes``, 415 a body sent without ``Content-Type: application/json``, 422 a
body that fails validation (an empty or blank question: ``"question: the question is
empty"``), 502 the LLM or embedding backend failed, 503 no LLM configured (``/ask``) or the
index busy, 500 anything unexpected (logged, never a traceback). ``POST /index`` needs
``Authorization: Bearer <token>`` where the token is ``create_app(token=...)`` or
``$PROXY_POINTER_TOKEN``; without one the endpoint is off.

Who reads what: ``create_app(tokens=...)`` (``serve --tokens TOKENS.json``) maps bearer
tokens to groups. Every endpoint reads through the caller's view: a document whose metadata's
``access`` names none of its groups is left out of search (before the top k), listings and
``/healthz`` counts, and opening it answers 404 in the words a missing document gets. A
request without a valid token reads only documents without ``access``, or gets 401 with
``require_token``; the update token reads everything.

Needs the ``serve`` extra: ``pip install 'proxy-pointer[serve]'``.
"""

import hashlib
import hmac
import importlib
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from ..access import ANONYMOUS, Access
from ..errors import (
    ConfigError,
    DocumentError,
    EmbeddingError,
    IndexLockedError,
    LLMError,
    ProxyPointerError,
    StoreError,
)
from .service import NotFoundError, Service, UnavailableError, describe_invalid

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["GENERATION_HEADER", "INSPECTOR", "TOKEN_ENV", "create_app", "run"]

#: The environment variable holding the bearer token that enables ``POST /index``.
TOKEN_ENV = "PROXY_POINTER_TOKEN"
#: The response header naming the index generation a request read.
GENERATION_HEADER = "X-Index-Generation"
#: The inspector's static files (``index.html``, ``app.js``, ``style.css``), shipped as
#: package data.
INSPECTOR = Path(__file__).with_name("inspector")
#: The inspector's page runs only its own script and style and talks only to this server.
_INSPECTOR_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' "
                  "data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
                  "frame-ancestors 'none'")
#: Validation errors that mean the body was not a JSON object at all: not parsed (no JSON
#: content type), empty, or an array or scalar.
_NOT_AN_OBJECT = {"model_attributes_type", "dict_type", "missing"}
_SEND_JSON = "send a JSON object with Content-Type: application/json"
#: The error statuses declared in the OpenAPI schema (the module docstring says when).
_ERROR_STATUSES = {
    400: "Bad request", 401: "Missing or wrong bearer token", 403: "Updates are off",
    404: "No such document, section, lines or route", 413: "Request body too large",
    415: "Body sent without Content-Type: application/json", 422: "Validation error",
    500: "Unexpected server error (logged)", 502: "The LLM or embedding backend failed",
    503: "No LLM configured, or the index is busy"}

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"the HTTP server needs {module}: "
                          "pip install 'proxy-pointer[serve]'") from None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _status(exc: ProxyPointerError) -> int:
    """The HTTP status of a library error."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConfigError | DocumentError):
        return 400
    if isinstance(exc, UnavailableError | IndexLockedError | StoreError):
        return 503
    if isinstance(exc, LLMError | EmbeddingError):
        return 502
    return 500


def _not_an_object(errors: Any, content_type: str) -> tuple[int, str] | None:
    """Status and message for a body that is no JSON object (a forgotten content type
    leaves it unparsed, and pydantic would say "Input should be a valid dictionary"), or
    None for any other validation error."""
    whole = [e for e in errors if tuple(e.get("loc", ())) == ("body",)
             and e.get("type") in _NOT_AN_OBJECT]
    if not whole:
        return None
    media = content_type.split(";")[0].strip().lower()
    if not (media == "application/json" or (media.startswith("application/")
                                            and media.endswith("+json"))):
        got = f"got {media[:100]!r}" if media else "the request had no Content-Type"
        return 415, f"{_SEND_JSON} ({got})"
    if whole[0].get("type") == "missing":
        return 422, f"{_SEND_JSON}: the body is empty"
    return 422, f"{_SEND_JSON}: the body is JSON but not an object"


def _optional_bearer(app: "FastAPI") -> None:
    """Declare the bearer token optional on the operations that read (OpenAPI's empty
    security requirement: a request without a token reads as an anonymous caller);
    ``POST /index`` keeps requiring it."""
    schema_of = app.openapi

    def openapi() -> dict[str, Any]:
        schema = schema_of()
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                security = operation.get("security")
                if security and (method, path) != ("post", "/index") and {} not in security:
                    security.append({})
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


async def _send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class _Guard:
    """The outermost layer: the body size limit (413 before any parsing, also for chunked
    bodies), the generation header on every response, and a JSON 500 for an unexpected
    exception."""

    def __init__(self, app: Any, *, max_body: int,
                 generation: Callable[[], Awaitable[str]]) -> None:
        self.app, self.max_body, self.generation = app, max_body, generation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        started = False
        too_large = {"error": f"the request body is over {self.max_body} bytes"}

        async def send_with_generation(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                gen = state.get("generation")
                if gen is None:  # a request that read no index (docs, errors before it)
                    gen = await self.generation()
                headers = [*message.get("headers", []),
                           (GENERATION_HEADER.lower().encode(), gen.encode())]
                message = {**message, "headers": headers}
            await send(message)

        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _send_json(send_with_generation, 413, too_large)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    from starlette.exceptions import HTTPException

                    # FastAPI re-raises an HTTPException met while reading the body.
                    raise HTTPException(413, too_large["error"])
            return message

        try:
            await self.app(scope, limited_receive, send_with_generation)
        except Exception:
            log.exception("unexpected error serving %s %s", scope.get("method"),
                          scope.get("path"))
            if started:
                raise
            await _send_json(send_with_generation, 500,
                             {"error": "internal server error (logged on the server)"})


def create_app(service: Service, *, token: str | None = None,
               docs_root: str | os.PathLike[str] | None = None,
               tokens: Mapping[str, Access] | None = None, require_token: bool = False
               ) -> "FastAPI":
    """A FastAPI app serving ``service``: the inspector at ``/``, interactive docs at
    ``/docs`` (and ``/redoc``), served without a CDN.

    ``token`` enables ``POST /index`` for requests bearing it (``None``: the value of
    ``$PROXY_POINTER_TOKEN``; empty or unset: updates are off); its bearer reads every
    document. ``tokens`` maps other bearer tokens to what they may read
    (:func:`~proxy_pointer.access.read_tokens`); a request without a valid token reads only
    documents without ``access`` (:data:`~proxy_pointer.access.ANONYMOUS`), or gets 401
    with ``require_token``. ``docs_root`` is the folder ``POST /index`` may read
    server-side ``paths`` from (doc ids are relative to it); without it only inline
    ``documents`` are accepted. Raises :class:`ConfigError` when FastAPI is not installed,
    ``docs_root`` is not a folder or ``require_token`` has no tokens to require.
    """
    _require("fastapi")
    offline = _require("fastapi_offline")
    from fastapi import Depends, Query, Request
    from fastapi import Path as PathParam
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse
    from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
    from fastapi.staticfiles import StaticFiles
    from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    from .. import __version__

    lim = service.limits
    secret = os.environ.get(TOKEN_ENV, "") if token is None else token
    # Looked up by hash, so a lookup's timing says nothing about the tokens held.
    views = {_digest(t): v for t, v in (tokens or {}).items()}
    if secret:
        views[_digest(secret)] = Access()
    if require_token and not views:
        raise ConfigError("--require-token needs tokens: pass --tokens FILE")
    root = None
    if docs_root is not None:
        root = Path(docs_root).resolve()
        if not root.is_dir():
            raise ConfigError(f"--docs-root {docs_root}: not a folder")

    class QueryRequest(BaseModel):
        """A question and optional retrieval settings (defaults: the library's)."""

        model_config = ConfigDict(extra="forbid")
        question: str = Field(min_length=1, max_length=lim.max_question_chars)
        # strict: a JSON true or "800" is no integer (the schema says so; lax would take it)
        budget: int | None = Field(None, ge=1, le=lim.max_budget, strict=True,
                                   description="context token budget")
        k: int | None = Field(None, ge=1, le=lim.max_k, strict=True,
                              description="sections to keep")
        doc_ids: list[str] | None = Field(None, max_length=lim.max_doc_ids,
                                          description="search only these documents")
        path_prefix: str | None = Field(None, max_length=1_000,
                                        description='only under this breadcrumb, e.g. "Chapter 2"')
        mode: Literal["chunks", "collapsed", "traverse"] | None = None
        where: dict[str, str | int | float | bool] | None = Field(
            None, max_length=32, description='only documents whose metadata holds every '
            'pair, e.g. {"year": 2024}')

        @field_validator("question", mode="before")
        @classmethod
        def _not_blank(cls, value: Any) -> Any:
            # Before the length check, so "" and "   " get one message.
            if isinstance(value, str) and not value.strip():
                raise ValueError("the question is empty")
            return value

    class InlineDocument(BaseModel):
        model_config = ConfigDict(extra="forbid")
        doc_id: str = Field(min_length=1, max_length=512, description="e.g. notes/a.md")
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

    # FastAPIOffline is FastAPI with /docs and /redoc on the package's own copies of
    # Swagger UI and ReDoc (docs_url=None plus get_swagger_ui_html / get_redoc_html).
    app = offline.FastAPIOffline(
        title="proxy-pointer", version=__version__, static_url="/docs/assets",
        swagger_ui_parameters={"validatorUrl": None},  # no call to swagger.io's validator
        description="Structural RAG: whole sections by pointer. Every response names the "
        f"index generation it read in `{GENERATION_HEADER}`. The inspector is at `/`.",
        # The error statuses every operation may answer, declared with their real body (a
        # 422 is {"error": ...} too, not FastAPI's default {"detail": [...]}).
        responses={status: {"model": ErrorResponse, "description": text}
                   for status, text in _ERROR_STATUSES.items()})
    if not require_token:
        _optional_bearer(app)
    app.mount("/inspector", StaticFiles(directory=INSPECTOR), name="inspector")

    async def current_generation() -> str:
        return await run_in_threadpool(lambda: service.index.generation)

    app.add_middleware(_Guard, max_body=lim.max_body_bytes, generation=current_generation)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        status, message = _not_an_object(errors, request.headers.get("content-type", "")) or (
            422, describe_invalid(errors))
        return JSONResponse({"error": message}, status)

    @app.exception_handler(ProxyPointerError)
    async def library_error(request: Request, exc: ProxyPointerError) -> JSONResponse:
        status = _status(exc)
        if status in (500, 502):  # the server's or a backend's fault, not the request's
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        headers = {"Retry-After": "5"} if isinstance(exc, IndexLockedError) else None
        return JSONResponse({"error": str(exc)}, status, headers=headers)

    def pinned(request: Request, work: Callable[[], Any]) -> Any:
        with service.pinned() as idx:
            request.state.generation = idx.generation
            return work()

    bearer = HTTPBearer(auto_error=False)

    def viewer(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                      Depends(bearer)]) -> Access:
        """What the request's bearer may read (see the docstring above)."""
        view = views.get(_digest(credentials.credentials)) if credentials is not None else None
        if view is not None:
            return view
        if require_token:
            raise HTTPException(401, "this server needs a valid 'Authorization: Bearer' token",
                                headers={"WWW-Authenticate": "Bearer"})
        return ANONYMOUS

    View = Annotated[Access, Depends(viewer)]

    def authorized(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                          Depends(bearer)]) -> None:
        if not secret:
            raise HTTPException(403, f"updates are off: start the server with {TOKEN_ENV} "
                                "set to enable POST /index")
        given = credentials.credentials if credentials is not None else ""
        if not hmac.compare_digest(given.encode(), secret.encode()):
            raise HTTPException(401, "POST /index needs a valid 'Authorization: Bearer' token",
                                headers={"WWW-Authenticate": "Bearer"})

    @app.get("/", include_in_schema=False)
    def inspector() -> FileResponse:
        """The inspector's page; its script and style come from ``/inspector/``."""
        return FileResponse(INSPECTOR / "index.html", media_type="text/html",
                            headers={"Content-Security-Policy": _INSPECTOR_CSP,
                                     "Cache-Control": "no-cache"})

    @app.post("/query", summary="Sections for a question, with pointers")
    def query(body: QueryRequest, request: Request, view: View) -> dict[str, Any]:
        """The CLI's ``query --json``: ``contexts`` are sections, each with its ``ref``
        (``doc_id#node_id``, or ``doc_id#L12-30`` for a window of a document without
        headings) to open with ``/sections?ref=``."""
        options = body.model_dump(exclude_none=True, exclude={"question"})
        return pinned(request, lambda: service.query(body.question, access=view, **options))

    @app.post("/ask", summary="An answer with checked citations (needs an LLM)")
    def ask(body: QueryRequest, request: Request, view: View) -> dict[str, Any]:
        options = body.model_dump(exclude_none=True, exclude={"question"})
        return pinned(request, lambda: service.ask(body.question, access=view, **options))

    @app.get("/documents", summary="Every document the caller may read")
    def documents(request: Request, view: View) -> dict[str, Any]:
        return pinned(request, lambda: {"documents": service.documents(access=view)})

    @app.get("/documents/{doc_id:path}/tree", summary="A document's outline (no text)")
    def outline(request: Request, view: View, doc_id: Annotated[str, PathParam(
            description="e.g. reports/2024.md")]) -> dict[str, Any]:
        return pinned(request, lambda: service.outline(doc_id, access=view))

    @app.get("/sections/{doc_id:path}/{node_id}",
             summary="A section's text by doc id and node id (or L12-30 for lines)")
    def section(request: Request, view: View, doc_id: str, node_id: Annotated[str, PathParam(
            description="a node id (0003, preamble), lines (L12-30, L12) or pages (p3-5)")]
                ) -> dict[str, Any]:
        return pinned(request, lambda: service.section(doc_id, node_id, access=view))

    @app.get("/sections", summary="The text a ref points at (doc#0003, doc#L12-30, doc#p3)")
    def section_by_ref(request: Request, view: View, ref: Annotated[str, Query(
            max_length=2_000, description="a ref as /query and /documents/{doc_id}/tree give "
            "it: doc_id#node_id (a whole section), doc_id#L12-30 or doc_id#L12 (1-based "
            "lines), doc_id#p3-5 (pages); '#' is %23 in a URL")]) -> dict[str, Any]:
        """A whole section with its subsections (node ref) or those lines of the stored
        document (line ref): ``doc_id``, ``node_id`` (null for lines), ``ref``, ``title``,
        ``path``, 1-based inclusive ``start_line``/``end_line`` and ``text``. 400 for a
        malformed ref, 404 for a document, section or lines the index lacks (and for pages:
        no indexed format has a page map yet)."""
        return pinned(request, lambda: service.section_by_ref(ref, access=view))

    @app.get("/healthz", summary="Liveness and the generation served")
    def healthz(request: Request, view: View) -> dict[str, Any]:
        return pinned(request, lambda: {"status": "ok", **service.health(access=view)})

    @app.post("/index", summary="Add or update documents (bearer token)",
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

    return app


def run(service: Service, *, host: str = "127.0.0.1", port: int = 8000,
        token: str | None = None, docs_root: str | os.PathLike[str] | None = None,
        tokens: Mapping[str, Access] | None = None, require_token: bool = False,
        log_level: str = "info", announce: Callable[[], None] | None = None) -> None:
    """Serve :func:`create_app` with uvicorn until interrupted (one process: the model and
    index are loaded once and shared by the thread pool). ``announce`` is called once the
    app is built, so a bad option fails before anything says the server is up."""
    uvicorn = _require("uvicorn")
    app = create_app(service, token=token, docs_root=docs_root, tokens=tokens,
                     require_token=require_token)
    if announce is not None:
        announce()
    uvicorn.run(app, host=host, port=port, log_level=log_level)
