"""MCP server: an index's sections as tools an agent calls (Model Context Protocol).

Needs the official MCP SDK (``pip install 'proxy-pointer[mcp]'``; mcp 1.x and 2.x both
work). Four tools over one :class:`~proxy_pointer.serve.service.Service`, so the answers are the
HTTP API's payloads:

- ``search``: the sections that answer a question within a token budget, each with its
  ``ref`` (``doc_id#node_id``; ``doc_id#L12-30`` for a window of a document without
  headings), breadcrumb ``path``, 1-based inclusive lines and text;
- ``get_section``: what a ``ref`` points at (every ref a search hit or an outline carries:
  a whole section, or lines);
- ``outline``: a document's heading tree, to read the structure around a hit;
- ``list_documents``: what the index holds.

A bad argument or an unknown document or section comes back as a tool error (``isError``)
carrying the library's message in one line, never a traceback; an argument a tool does not
take is refused, as HTTP refuses it, and the schema carries the service's limits. The index
and its embedding model load once, when the server starts. Run it with ``proxy-pointer mcp
--index DIR``: over stdio (what desktop clients spawn; stdout carries only the protocol) or
``--transport http`` (streamable HTTP at ``http://127.0.0.1:8765/mcp``).

>>> server = build_server(Service(".proxy-pointer-index"))  # doctest: +SKIP
>>> server.run()                                            # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Annotated, Any, Literal, get_type_hints

from ..package import needs

try:
    import anyio
    from mcp.types import ToolAnnotations
    from pydantic import Field, ValidationError

    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # mcp 1.x names it FastMCP
        from mcp.server.fastmcp import Context  # type: ignore[attr-defined,no-redef]
        from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[attr-defined,no-redef]
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[import-not-found,no-redef]
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(needs("proxy_pointer.serve.mcp", "the MCP SDK", "mcp")) from e

from .. import defaults
from ..access import ANONYMOUS, Access
from ..errors import ConfigError, ProxyPointerError
from ..search.config import Limits
from ..stores import open_store
from ..vocab.synonyms import Synonyms
from .http.models import where_type
from .service import Service, describe_invalid

__all__ = ["build_server", "serve"]

#: The streamable HTTP endpoint's defaults; loopback only unless asked otherwise.
HOST = "127.0.0.1"
PORT = 8765

_INSTRUCTIONS = """\
Search a proxy-pointer index of Markdown documents. `search` returns whole sections (not
fragments) that answer a question, each with a `ref` (doc_id#node_id, or doc_id#L12-30 for
lines of a document without headings), its breadcrumb `path` of headings and its 1-based
`start_line`-`end_line`. Cite sections by ref. To read more: `get_section(ref)` for the full
text a ref points at (a hit may be trimmed to fit the budget), `outline(doc_id)` for the
document's headings around a hit (open a parent or a sibling with `get_section`),
`list_documents()` for what is indexed.
"""

Ref = Annotated[str, Field(
    description="A ref as search or outline gives it: doc_id#node_id (a section), "
                "doc_id#L12-30 or doc_id#L12 (1-based lines).")]
DocId = Annotated[str, Field(description="A document id, as list_documents gives it.")]


def build_server(service: Service, *, name: str = "proxy-pointer",
                 host: str = HOST, port: int = PORT,
                 log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING",
                 access: Access = ANONYMOUS, tokens: Mapping[str, Access] | None = None
                 ) -> MCPServer:
    """An MCP server whose four tools answer from ``service`` through ``access`` (what
    its client may read; default: documents without ``access`` only), or, over HTTP with
    ``tokens`` (``serve --tokens``' file), through what each request's bearer token reads.

    ``host``/``port`` matter only for streamable HTTP (mcp 1.x reads them here, 2.x when
    run). Raises nothing itself; tool errors are reported to the client."""
    from .. import __version__

    settings: dict[str, Any] = {"log_level": log_level}
    if MCPServer.__name__ == "FastMCP":  # mcp 1.x: transport settings in the constructor
        settings.update(host=host, port=port)
    server = _Server(name, instructions=_INSTRUCTIONS, version=__version__, **settings)
    limits = service.limits
    # The service's limits (per service) are in the schema, so a client sees them up front.
    Question = Annotated[str, Field(description="What to look for, in natural language.",
                                    max_length=limits.max_question_chars)]
    DocIds = Annotated[list[str] | None, Field(
        description="Search only these documents (doc_id as list_documents gives it).",
        max_length=limits.max_doc_ids)]
    Budget = Annotated[int | None, Field(
        description="Most tokens of section text to return, all sections together "
                    f"(default {defaults.BUDGET}).", ge=1, le=limits.max_budget)]
    K = Annotated[int | None, Field(
        description=f"Most sections to return (default {defaults.K}).", ge=1, le=limits.max_k)]
    Where = Annotated[where_type(limits) | None, Field(  # type: ignore[valid-type]
        description='Only documents whose metadata or card holds every pair, e.g. '
                    '{"entity": "3M", "period": "FY2021", "kind": "10-K"}.',
        max_length=limits.max_where_pairs)]
    # Every tool only reads the index: clients may run them without asking the user.
    # (By the wire names: mcp 1.x and 2.x name the Python fields differently.)
    reads = ToolAnnotations.model_validate(
        {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})

    view = _Views(access, tokens)

    async def search(ctx: Context, question: Question, budget: Budget = None, k: K = None,
                     doc_ids: DocIds = None, where: Where = None  # type: ignore[valid-type]
                     ) -> dict[str, Any]:
        return await _call(service.query, question, budget=budget, k=k, doc_ids=doc_ids,
                           where=where, access=view(ctx))

    async def get_section(ctx: Context, ref: Ref) -> dict[str, Any]:
        return await _call(service.section_by_ref, ref, access=view(ctx))

    async def outline(ctx: Context, doc_id: DocId) -> dict[str, Any]:
        return await _call(service.outline, doc_id, access=view(ctx))

    async def list_documents(ctx: Context) -> dict[str, Any]:
        return {"documents": await _call(service.documents, access=view(ctx))}

    types = {"Question": Question, "DocIds": DocIds, "Budget": Budget, "K": K, "Where": Where}
    for tool in (search, get_section, outline, list_documents):
        server.declare(tool, types)
    for tool in (search, get_section, outline, list_documents):
        server.add_tool(tool, name=tool.__name__, annotations=reads,
                        description=_description(tool.__name__, limits))
    return server


def _description(tool: str, limits: Limits) -> str:
    """What a tool's description tells an agent (the search's with the served bounds)."""
    if tool == "search":
        return (
            "Find the sections of the indexed documents that answer a question. Returns "
            "`contexts`: whole sections in rank order, each with `ref` (doc_id#node_id, or "
            "doc_id#L12-30 for lines of a document without headings: the pointer get_section "
            "opens), `path` (breadcrumb of headings), `title`, 1-based "
            "inclusive `start_line`/`end_line`, `text`, `relevance` (0-1: how close the "
            "section's best passage is to the question; near 0 means off topic), `score`, "
            "`tokens` and `trimmed` (true when only a window of a long section fit: open it "
            "whole with get_section); also "
            "`tokens_used`, `budget` and `routing` (the documents a question naming a company, "
            "period or form was kept to, and a `note` when none covers the period asked) and "
            "`expansion` (concepts named, such as working capital, with the statements and "
            "items searched for them) and `periods` (for a question spanning years: those "
            "asked, those the contexts hold, and the filings that report the rest). "
            f"budget: 1..{limits.max_budget} tokens, "
            f"k: 1..{limits.max_k}.")
    return {
        "get_section": (
            "Read what a ref from search or outline points at: for doc_id#node_id the whole "
            "section with subsections, for doc_id#L12-30 (or doc_id#L12) those lines. Returns "
            "`text`, `ref`, `node_id` (null for lines), `title`, breadcrumb `path` and 1-based "
            "inclusive `start_line`/`end_line`."),
        "outline": (
            "A document's heading tree without text: `nodes` in reading order, each with "
            "`ref`, `node_id`, `title`, `level`, `parent_id` and 1-based inclusive "
            "`start_line`/`end_line`. Use it to see what surrounds a search hit, then open "
            "neighbouring sections with get_section."),
        "list_documents": (
            "The indexed documents: `documents`, each with `doc_id`, `title`, `format` (pdf, "
            "html, docx, markdown, text), `size` (bytes), `n_chunks` and `card` (entity, kind "
            "such as 10-K, period)."),
    }[tool]


class _Views:
    """What a tool call may read: the server's one ``access``, or over HTTP with
    ``tokens``, what the request's bearer token reads (a missing or unknown token is a
    tool error; the HTTP layer has refused it already, :class:`_TokenGate`)."""

    def __init__(self, access: Access, tokens: Mapping[str, Access] | None) -> None:
        self.access, self.tokens = access, tokens

    def __call__(self, ctx: Any) -> Access:
        if self.tokens is None:
            return self.access
        try:
            request = getattr(ctx.request_context, "request", None)
        except ValueError:  # called in process, outside any request
            request = None
        if request is None:  # stdio: the spawning user's own session
            return self.access
        found = _bearer(request.headers.get("authorization"), self.tokens)
        if found is None:
            raise ToolError("a valid bearer token is required")
        return found


def _bearer(header: str | None, tokens: Mapping[str, Access]) -> Access | None:
    scheme, _, token = (header or "").partition(" ")
    return tokens.get(token.strip()) if scheme.lower() == "bearer" else None


class _Server(MCPServer):
    """The SDK's server, with arguments checked as HTTP checks them: a name a tool does not
    take is refused (the SDK would drop it silently), and a value the schema refuses is
    reported in one line (without pydantic's boilerplate and its URL). ``version``: what
    ``initialize`` reports as the server's version."""

    def __init__(self, name: str, *, version: str, **kwargs: Any) -> None:
        if MCPServer.__name__ == "FastMCP":  # mcp 1.x takes no version; its low-level server
            super().__init__(name, **kwargs)
            self._mcp_server.version = version  # type: ignore[attr-defined]
        else:
            super().__init__(name, version=version, **kwargs)
        self.parameters: dict[str, tuple[str, ...]] = {}  # tool -> the arguments it takes

    def declare(self, tool: Callable[..., Any], types: dict[str, Any]) -> None:
        """Resolve ``tool``'s annotations (mcp 1.x reads them unevaluated: hand it the
        types, not their names) and note the arguments it takes (all but its context)."""
        tool.__annotations__ = get_type_hints(tool, localns=types, include_extras=True)
        self.parameters[tool.__name__] = tuple(inspect.signature(tool).parameters)[1:]

    async def call_tool(self, name: str, arguments: dict[str, Any], *rest: Any,
                        **options: Any) -> Any:
        expected = self.parameters.get(name)
        unknown = [a for a in arguments if expected is not None and a not in expected]
        if unknown:
            raise ToolError(f"unknown argument{'s' * (len(unknown) > 1)} "
                            f"{', '.join(map(repr, unknown))} (expected: "
                            f"{', '.join(expected or ()) or 'none'})")
        try:
            return await super().call_tool(name, arguments, *rest, **options)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):  # the SDK validated the arguments
                raise ToolError(describe_invalid(e.__cause__.errors(), whole="arguments")
                                ) from None
            raise


async def _call(fn: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """``fn`` in a worker thread (retrieval is CPU-bound and must not stall the event loop),
    the library's errors turned into tool errors the client reads."""
    options = {k: v for k, v in options.items() if v is not None}
    try:
        return await anyio.to_thread.run_sync(partial(fn, *args, **options))
    except ProxyPointerError as e:
        raise ToolError(str(e)) from None


def serve(location: str | os.PathLike[str], *, transport: Literal["stdio", "http"] = "stdio",
          host: str = HOST, port: int = PORT, token: str | None = None,
          principal: Sequence[str] = (), tokens: Mapping[str, Access] | None = None,
          synonyms: Synonyms | str | os.PathLike[str] | None = None, vocabulary: bool = True,
          aliases: Synonyms | str | os.PathLike[str] | None = None,
          announce: Callable[[], None] | None = None) -> None:
    """Load the index at ``location`` (a directory or ``milvus:URI[#NAME]``; ``token`` for a
    Milvus server) and serve it until the client goes away (stdio) or Ctrl-C (http), to a
    client in the groups ``principal`` (none: it reads documents without ``access`` only).
    Over HTTP with ``tokens`` (:func:`~proxy_pointer.access.read_tokens`, as ``serve``
    takes them) every request needs a bearer token and reads what it grants.

    ``announce`` is called once the index is loaded and every check passed, just before
    serving (the CLI prints the URL then, never before a refusal).

    Raises :class:`~proxy_pointer.errors.ConfigError` for HTTP on an address other
    machines reach without ``tokens`` (anyone there could read what ``principal`` reads),
    :class:`~proxy_pointer.errors.ProxyPointerError` when the index cannot be opened.
    """
    if transport == "http" and tokens is None and not _loopback(host):
        raise ConfigError(f"refusing to serve MCP over HTTP on {host} without tokens: any "
                          "client there could read the index; pass --tokens FILE (as for "
                          "serve) or bind 127.0.0.1")
    # Loading may print (model downloads, library notices); over stdio, stdout is the
    # protocol's, so anything said while loading goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        service = Service(open_store(location, token=token), synonyms=synonyms,
                          vocabulary=vocabulary, aliases=aliases)
        service.index.embedder.embed_query("warm up")  # the model loads now, not mid-request
    server = build_server(service, host=host, port=port, access=Access.of(principal),
                          tokens=tokens if transport == "http" else None)
    if announce is not None:
        announce()
    if transport == "stdio":
        anyio.run(server.run_stdio_async)
    else:
        anyio.run(partial(_serve_http, server, host, port, tokens))


def _loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_app(server: MCPServer, host: str, tokens: Mapping[str, Access] | None) -> Any:
    """The streamable HTTP ASGI app of ``server``; with ``tokens``, a request without a
    valid bearer token is answered 401 before it reaches the protocol."""
    if MCPServer.__name__ == "FastMCP":  # mcp 1.x took host and port in the constructor
        app = server.streamable_http_app()
    else:
        app = server.streamable_http_app(host=host)  # host: DNS-rebinding protection
    return app if tokens is None else _TokenGate(app, tokens)


class _TokenGate:
    """ASGI middleware: an HTTP request without a valid bearer token gets 401."""

    def __init__(self, app: Any, tokens: Mapping[str, Access]) -> None:
        self.app, self.tokens = app, tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                       for k, v in scope.get("headers", ())}
            if _bearer(headers.get("authorization"), self.tokens) is None:
                body = b'{"detail": "a valid bearer token is required"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def _serve_http(server: MCPServer, host: str, port: int,
                      tokens: Mapping[str, Access] | None = None) -> None:
    import uvicorn

    app = http_app(server, host, tokens)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
