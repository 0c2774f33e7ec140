"""The commands that serve an index: ``serve`` (HTTP API and inspector) and ``mcp``."""

from __future__ import annotations

import argparse
import sys

from ..access import EVERYONE, read_tokens
from ..errors import ConfigError
from ..package import needs
from .options import add_index_option, add_vocabulary_options

__all__ = ["cmd_mcp", "cmd_serve", "mcp_options", "serve_options"]


def serve_options(s: argparse.ArgumentParser) -> None:
    add_index_option(s)
    add_vocabulary_options(s)
    s.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default %(default)s, this machine only)")
    s.add_argument("--port", type=int, default=8000, help="port (default %(default)s)")
    s.add_argument("--llm", default=None,
                   help="LLM for POST /ask, as for ask (default $PROXY_POINTER_LLM or gemini; "
                        "none: /ask answers 503)")
    s.add_argument("--llm-base-url", default=None,
                   help="base URL of an OpenAI-compatible server (Ollama, vLLM, ...)")
    s.add_argument("--docs-root", default=None, metavar="DIR",
                   help="folder POST /index may read server-side paths from (doc ids "
                        "relative to it); POST /index needs $PROXY_POINTER_TOKEN set")
    s.add_argument("--tokens", default=None, metavar="TOKENS.json",
                   help='bearer tokens and their groups: {"TOKEN": ["group", ...], '
                        '"ADMIN": "*"}; a request without a valid token reads only documents '
                        "without 'access'")
    s.add_argument("--require-token", action="store_true",
                   help="answer requests without a valid token with 401")
    s.add_argument("--log-level", default="info",
                   choices=["critical", "error", "warning", "info", "debug"])


def mcp_options(m: argparse.ArgumentParser) -> None:
    add_index_option(m)
    add_vocabulary_options(m)
    m.add_argument("--principal", action="append", default=None, metavar="GROUP",
                   help="the client reads as a member of GROUP (repeatable); without it, "
                        "only documents without 'access'")
    m.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (spawned by the client, the default) or streamable HTTP")
    m.add_argument("--host", default="127.0.0.1", help="http: address to bind (default "
                   "%(default)s, this machine only)")
    m.add_argument("--port", type=int, default=8765, help="http: port (default %(default)s)")
    m.add_argument("--tokens", default=None, metavar="FILE",
                   help="http: bearer tokens and their groups, as for serve; required to "
                        "bind an address other machines reach")


def cmd_serve(args: argparse.Namespace) -> int:
    import importlib.util
    import os

    if any(importlib.util.find_spec(m) is None for m in ("fastapi", "uvicorn")):
        raise ConfigError(needs("the HTTP server", "FastAPI and uvicorn", "serve"))
    from ..llm import make_llm
    from ..serve.http import TOKEN_ENV, run
    from ..serve.service import Service
    from ..stores import open_store

    tokens = read_tokens(args.tokens) if args.tokens else None
    llm = make_llm(args.llm, base_url=args.llm_base_url)
    service = Service(open_store(args.index, token=args.milvus_token), llm=llm,
                      synonyms=args.synonyms, vocabulary=args.vocabulary, aliases=args.aliases)
    token = os.environ.get(TOKEN_ENV) or None
    health = service.health(access=EVERYONE)

    def announce() -> None:  # once the index, --docs-root and the app are good
        print(f"proxy-pointer: serving {args.index} ({health['documents']} documents, "
              f"{health['chunks']} chunks) at http://{args.host}:{args.port} (inspector: /, "
              f"API docs: /docs); /ask: {llm.model_id if llm is not None else 'off (no LLM)'}"
              f"; POST /index: {'on' if token else f'off (set {TOKEN_ENV})'}"
              f"; readers: {len(tokens or {})} tokens"
              f"{', required' if args.require_token else ''}", file=sys.stderr)

    run(service, host=args.host, port=args.port, token=token or "", docs_root=args.docs_root,
        tokens=tokens, require_token=args.require_token, log_level=args.log_level,
        announce=announce)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise ConfigError(needs("the MCP server", "the MCP SDK", "mcp"))
    from ..serve.mcp import serve

    def announce() -> None:  # once the index loaded and the address was allowed
        print(f"proxy-pointer: MCP over streamable HTTP at http://{args.host}:{args.port}/mcp",
              file=sys.stderr)

    tokens = read_tokens(args.tokens) if args.tokens else None
    serve(args.index, transport=args.transport, host=args.host, port=args.port, tokens=tokens,
          token=args.milvus_token, principal=args.principal or (), synonyms=args.synonyms,
          vocabulary=args.vocabulary, aliases=args.aliases,
          announce=announce if args.transport == "http" else None)
    return 0
