"""One restricted index through every interface and transport: a reader in the group
"staff" gets the same documents and the same ranked refs from the Python API, the CLI,
HTTP (a token), MCP over stdio (--principal) and over HTTP (a token), and both framework
retrievers; and one that names no group gets the public documents only wherever it
answers someone else (HTTP without a token, MCP without --principal)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from proxy_pointer.access import Access
from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import Index, update_directory
from proxy_pointer.serve.http import create_app
from proxy_pointer.serve.service import Service

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
QUESTION = "which car will speak about the road"
DOCS = {"public.md": "# Cars\n\n## Speak\n\nThe car can speak to its driver about the road.\n",
        "staff.md": "# Rota\n\n## Cars\n\nThe staff car will speak of the road works.\n",
        "board.md": "# Minutes\n\n## Cars\n\nThe board asked which car will speak next.\n"}
STAFF = {"public.md", "staff.md"}


@pytest.fixture(scope="module")
def restricted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("one-view")
    (root / "docs").mkdir()
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    update_directory(root / "idx", [root / "docs"], embedder=HashEmbedder(64),
                     metadata={"staff.md": {"access": ["staff"]},
                               "board.md": {"access": ["board"]}})
    (root / "tokens.json").write_text('{"s": ["staff"]}', encoding="utf-8")
    return root


def _refs(payload: dict[str, Any]) -> list[str]:
    return [c["ref"] for c in payload["contexts"]]


async def _mcp(session: ClientSession) -> tuple[set[str], list[str]]:
    await session.initialize()
    listed = await session.call_tool("list_documents", {})
    found = await session.call_tool("search", {"question": QUESTION, "k": 10})
    return ({d["doc_id"] for d in json.loads(listed.content[0].text)["documents"]},
            _refs(json.loads(found.content[0].text)))


async def test_every_interface_gives_one_view(restricted: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    idx_dir = restricted / "idx"
    api = Index.load(idx_dir).retrieve(QUESTION, k=10, principal=["staff"]).to_dict()
    assert {c["doc_id"] for c in api["contexts"]} == STAFF
    want = _refs(api)

    assert main(["query", "--index", str(idx_dir), "--principal", "staff", "--k", "10",
                 "--json", QUESTION]) == 0
    assert _refs(json.loads(capsys.readouterr().out)) == want

    service = Service(idx_dir, embedder=HashEmbedder(64))
    http = TestClient(create_app(service, tokens={"s": Access(frozenset({"staff"}))}))
    staff = {"Authorization": "Bearer s"}
    assert _refs(http.post("/query", json={"question": QUESTION, "k": 10},
                           headers=staff).json()) == want
    assert {d["doc_id"] for d in http.get("/documents", headers=staff).json()["documents"]} == STAFF
    anonymous = http.post("/query", json={"question": QUESTION, "k": 10}).json()
    assert {c["doc_id"] for c in anonymous["contexts"]} == {"public.md"}

    params = StdioServerParameters(command=sys.executable, env=ENV, args=[
        "-m", "proxy_pointer.cli", "mcp", "--index", str(idx_dir), "--principal", "staff"])
    with (restricted / "stdio.err").open("w") as err:
        async with stdio_client(params, errlog=err) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            assert await _mcp(session) == (STAFF, want)
        public = StdioServerParameters(command=sys.executable, env=ENV, args=[
            "-m", "proxy_pointer.cli", "mcp", "--index", str(idx_dir)])
        async with stdio_client(public, errlog=err) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            assert (await _mcp(session))[0] == {"public.md"}

    await _mcp_over_http(restricted, want)

    from proxy_pointer.langchain import ProxyPointerRetriever
    from proxy_pointer.llama_index import ProxyPointerRetriever as LlamaRetriever

    lc = ProxyPointerRetriever(index_dir=str(idx_dir), principal=["staff"], k=10)
    assert [d.metadata["ref"] for d in lc.invoke(QUESTION)] == want
    li = LlamaRetriever(index_dir=str(idx_dir), principal=["staff"], k=10)
    assert [n.node.metadata["ref"] for n in li.retrieve(QUESTION)] == want


async def _mcp_over_http(restricted: Path, want: list[str]) -> None:
    httpx2 = pytest.importorskip("httpx2")
    try:  # mcp 2.x
        from mcp.client.streamable_http import streamable_http_client as http_client
    except ImportError:  # pragma: no cover - mcp 1.x passes headers another way
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "proxy_pointer.cli", "mcp", "--index",
                             str(restricted / "idx"), "--transport", "http", "--port",
                             str(port), "--tokens", str(restricted / "tokens.json")],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        client = httpx2.AsyncClient(headers={"Authorization": "Bearer s"})
        async with client, http_client(f"http://127.0.0.1:{port}/mcp",
                                       http_client=client) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            assert await _mcp(session) == (STAFF, want)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
