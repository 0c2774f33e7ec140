"""What every HTTP response goes through: the body size limit, the generation header, and
errors as ``{"error": message}`` with their status (:mod:`.http` lists them). The
middleware is plain ASGI; FastAPI is imported only to install the error handlers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from ...errors import (
    ConfigError,
    DocumentError,
    EmbeddingError,
    IndexLockedError,
    LLMError,
    ProxyPointerError,
    StoreError,
)
from ..service import NotFoundError, UnavailableError, describe_invalid

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["GENERATION_HEADER", "Guard", "install_error_handlers", "not_an_object",
           "status_of"]

#: The response header naming the index generation a request read.
GENERATION_HEADER = "X-Index-Generation"
#: Validation errors that mean the body was not a JSON object at all: not parsed (no JSON
#: content type), empty, or an array or scalar.
_NOT_AN_OBJECT = {"model_attributes_type", "dict_type", "missing"}
_SEND_JSON = "send a JSON object with Content-Type: application/json"

# The HTTP server's one logger (proxy_pointer.serve.http): operators filter on its name.
log = logging.getLogger(f"{__package__}.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def status_of(exc: ProxyPointerError) -> int:
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


def not_an_object(errors: Any, content_type: str) -> tuple[int, str] | None:
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


def install_error_handlers(app: FastAPI) -> None:
    """Every error as ``{"error": message}``: HTTP errors with their status and headers,
    validation errors as 415/422 in one line, library errors by :func:`status_of`
    (``Retry-After`` when the index is busy)."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        status, message = not_an_object(errors, request.headers.get("content-type", "")) or (
            422, describe_invalid(errors))
        return JSONResponse({"error": message}, status)

    @app.exception_handler(ProxyPointerError)
    async def library_error(request: Request, exc: ProxyPointerError) -> JSONResponse:
        status = status_of(exc)
        if status in (500, 502):  # the server's or a backend's fault, not the request's
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        headers = {"Retry-After": "5"} if isinstance(exc, IndexLockedError) else None
        return JSONResponse({"error": str(exc)}, status, headers=headers)


async def send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    """A whole JSON response sent straight through ASGI."""
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Guard:
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
            await send_json(send_with_generation, 413, too_large)
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
            await send_json(send_with_generation, 500,
                            {"error": "internal server error (logged on the server)"})
