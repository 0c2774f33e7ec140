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

The parts: :mod:`.routes` (one router per resource), :mod:`.models` (request
bodies, their bounds from the service's :class:`~proxy_pointer.search.config.Limits`),
:mod:`.auth` (the tokens) and :mod:`.guard` (body limit, generation header,
errors); this module puts them together.

Needs the ``serve`` extra: ``pip install 'proxy-pointer[serve]'``.
"""

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...access import Access
from ...errors import ConfigError
from ...package import require
from ..service import Service
from .auth import TOKEN_ENV, Auth, optional_bearer
from .guard import GENERATION_HEADER, Guard, install_error_handlers

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["GENERATION_HEADER", "INSPECTOR", "TOKEN_ENV", "create_app", "run"]

#: The inspector's static files (``index.html``, ``app.js``, ``style.css``), shipped as
#: package data.
INSPECTOR = Path(__file__).parent.parent / "inspector"
#: The inspector's page runs only its own script and style and talks only to this server.
_INSPECTOR_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' "
                  "data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
                  "frame-ancestors 'none'")


def _require(module: str) -> Any:
    return require(module, what="the HTTP server", extra="serve")


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
    from starlette.concurrency import run_in_threadpool

    from ... import __version__
    from . import routes as routes
    from .models import ERROR_STATUSES, ErrorResponse

    auth = Auth.of(token, tokens, require_token)
    root = None
    if docs_root is not None:
        root = Path(docs_root).resolve()
        if not root.is_dir():
            raise ConfigError(f"--docs-root {docs_root}: not a folder")
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
                   for status, text in ERROR_STATUSES.items()})
    app.state.auth = auth  # read by the routes' bearer dependencies
    if not require_token:
        optional_bearer(app)
    _add_inspector(app)

    async def current_generation() -> str:
        return await run_in_threadpool(lambda: service.index.generation)

    app.add_middleware(Guard, max_body=service.limits.max_body_bytes,
                       generation=current_generation)
    install_error_handlers(app)
    for router in (routes.search_routes(service),
                   routes.document_routes(service), routes.section_routes(service),
                   routes.health_routes(service), routes.index_routes(service, root)):
        app.include_router(router)
    return app


def _add_inspector(app: "FastAPI") -> None:
    """The inspector: its page at ``/``, its script and style under ``/inspector/``."""
    from fastapi.responses import FileResponse
    from fastapi.staticfiles import StaticFiles

    app.mount("/inspector", StaticFiles(directory=INSPECTOR), name="inspector")

    @app.get("/", include_in_schema=False)
    def inspector() -> FileResponse:
        """The inspector's page; its script and style come from ``/inspector/``."""
        return FileResponse(INSPECTOR / "index.html", media_type="text/html",
                            headers={"Content-Security-Policy": _INSPECTOR_CSP,
                                     "Cache-Control": "no-cache"})


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
