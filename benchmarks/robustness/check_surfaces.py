"""Every surface a user sees, dumped as one JSON document, to compare two trees of the code:
the CLI's help and outputs (query, documents, tree, ask offline, errors), the HTTP API's
OpenAPI schema and answers, and the MCP tools' schemas. A refactor that changes none of
them prints the same bytes before and after.

    PYTHONPATH=OLD-CHECKOUT python benchmarks/robustness/check_surfaces.py > before.json
    PYTHONPATH=. python benchmarks/robustness/check_surfaces.py > after.json
    cmp before.json after.json

Run by path (not ``-m``), so that ``PYTHONPATH`` picks the code measured; it uses the
bundled sample and the hash embedder, and needs the ``serve`` and ``mcp`` extras.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
QUESTION = "What is the baseline?"


def _cli(work: Path, *args: str) -> dict[str, Any]:
    from proxy_pointer.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as e:
            rc = e.code
    return {"rc": rc, "out": out.getvalue().replace(str(work), "WORK"),
            "err": err.getvalue().replace(str(work), "WORK")}


def cli_surfaces(work: Path) -> dict[str, Any]:
    """Every subcommand's help, and the outputs of the read commands."""
    out = {f"help {c}": _cli(work, *([c] if c else []), "--help") for c in (
        "", "convert", "tree", "index", "query", "documents", "section", "serve", "ask", "mcp")}
    idx = str(work / "idx")
    runs = {"query json": ("query", "--index", idx, QUESTION, "--json"),
            "query text": ("query", "--index", idx, QUESTION, "--budget", "500"),
            "query where": ("query", "--index", idx, "baseline", "--where", "kind=paper",
                            "--json"),
            "query principal": ("query", "--index", idx, "baseline", "--principal", "staff",
                                "--json"),
            "query collapsed": ("query", "--index", idx, "baseline", "--mode", "collapsed",
                                "--packing", "sections", "--json"),
            "documents": ("documents", "--index", idx, "--json"),
            "tree": ("tree", str(sorted(SAMPLE.iterdir())[0])),
            "ask": ("ask", "--index", idx, QUESTION, "--llm", "none"),
            "empty question": ("query", "--index", idx, ""),
            "unknown doc": ("query", "--index", idx, "x", "--doc", "nope.md")}
    return {**out, **{name: _cli(work, *args) for name, args in runs.items()}}


def server_surfaces(work: Path) -> dict[str, Any]:
    """The OpenAPI schema and some answers of the HTTP API; the MCP tools' schemas."""
    from fastapi.testclient import TestClient

    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.mcp import build_server
    from proxy_pointer.serve.service import Service

    app = create_app(Service(str(work / "idx")))
    c = TestClient(app)
    out: dict[str, Any] = {"openapi": app.openapi()}
    out["http query"] = c.post("/query", json={"question": QUESTION,
                                               "where": {"kind": "paper"}}).json()
    out["http query tuned"] = c.post("/query", json={"question": QUESTION, "budget": 700,
                                                     "k": 3, "mode": "traverse"}).json()
    out["http documents"] = c.get("/documents?where=kind=paper").json()
    out["http refused"] = [c.post("/query", json={"question": "x" * 5000}).json(),
                           c.post("/query", json={"question": "q", "budget": 10**9}).json()]
    server = build_server(Service(str(work / "idx")))

    async def tools() -> list[Any]:
        return [t.model_dump(mode="json") for t in await server.list_tools()]

    out["mcp tools"] = asyncio.run(tools())
    return out


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from proxy_pointer import HashEmbedder, Index

    work = Path(tempfile.mkdtemp(prefix="surfaces-"))
    Index.build([SAMPLE], embedder=HashEmbedder(64)).save(work / "idx")
    surfaces = {**cli_surfaces(work), **server_surfaces(work)}
    print(json.dumps(surfaces, indent=1, sort_keys=True, default=str))


if __name__ == "__main__":
    main()
