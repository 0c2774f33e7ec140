"""The MCP server, driven by the MCP SDK's own client: over stdio as a desktop client spawns
it (``proxy-pointer mcp --index DIR``), and over streamable HTTP on the loopback interface.
Answers must be the service's payloads; errors must come back as tool errors.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from proxy_pointer import cli
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import Index, update_directory
from proxy_pointer.serve.service import Service

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "docs"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
TOOLS = {"search", "get_section", "outline", "list_documents"}
QUESTION = "How is the poem generated from an image?"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample papers, indexed with the deterministic hash embedder (reloadable
    by its id ``hash:64``, so the server process opens it without being told)."""
    target = tmp_path_factory.mktemp("mcp") / "idx"
    update_directory(target, [SAMPLE], embedder=HashEmbedder(64))
    return target


def _is_error(result: Any) -> bool:
    # mcp 2.x spells the field is_error, 1.x isError
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", False))


def _data(result: Any) -> Any:
    text = result.content[0].text
    assert not _is_error(result), text
    return json.loads(text)


def _error(result: Any) -> str:
    assert _is_error(result), result
    text: str = result.content[0].text
    assert "Traceback" not in text
    return text


async def _stdio_session(index_dir: Path, tmp_path: Path) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "proxy_pointer.cli", "mcp", "--index",
                                      str(index_dir)], env=ENV, cwd=str(tmp_path))
    # a real file: the server's stderr (logs, progress) must not reach the protocol
    return stdio_client(params, errlog=(tmp_path / "server.err").open("w"))


async def test_stdio_tools_answer_with_the_service_payloads(index_dir: Path,
                                                            tmp_path: Path) -> None:
    service = Service(index_dir)
    async with await _stdio_session(index_dir, tmp_path) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == TOOLS
            schema = getattr(tools["search"], "input_schema", None) or tools["search"].inputSchema
            assert set(schema["properties"]) == {"question", "budget", "k", "doc_ids", "where"}
            assert schema["required"] == ["question"]
            assert all(t.description for t in tools.values())

            found = _data(await session.call_tool("search", {"question": QUESTION, "k": 3,
                                                             "budget": 800}))
            expected = Index.load(index_dir).retrieve(QUESTION, k=3, budget=800)
            assert [c["ref"] for c in found["contexts"]] == [s.ref for s in expected.sections]
            assert found == service.query(QUESTION, k=3, budget=800)
            assert 0 < found["tokens_used"] <= found["budget"] == 800
            hit = found["contexts"][0]
            assert hit["ref"] == f"{hit['doc_id']}#{hit['node_id']}"
            assert hit["path"][-1] == hit["title"] and hit["start_line"] <= hit["end_line"]

            section = _data(await session.call_tool("get_section", {"ref": hit["ref"]}))
            assert section == service.section_by_ref(hit["ref"])
            lines = Index.load(index_dir).reader.tree(hit["doc_id"]).lines
            assert section["text"] == "".join(lines[section["start_line"] - 1:
                                                    section["end_line"]])

            lines = _data(await session.call_tool("get_section",
                                                  {"ref": f"{hit['doc_id']}#L1-2"}))
            assert lines == service.section_by_ref(f"{hit['doc_id']}#L1-2")
            assert lines["node_id"] is None and lines["end_line"] == 2

            doc = hit["doc_id"].removesuffix(".md")  # ids also resolve without the suffix
            outline = _data(await session.call_tool("outline", {"doc_id": doc}))
            assert outline == service.outline(hit["doc_id"])
            assert hit["ref"] in {n["ref"] for n in outline["nodes"]}

            listed = _data(await session.call_tool("list_documents", {}))
            assert listed == {"documents": service.documents()}
            assert len(listed["documents"]) == 4

            only = _data(await session.call_tool("search", {"question": QUESTION,
                                                            "doc_ids": ["1908.05828"]}))
            assert {c["doc_id"] for c in only["contexts"]} == {"1908.05828.md"}


async def test_stdio_errors_are_tool_errors_with_the_message(index_dir: Path,
                                                             tmp_path: Path) -> None:
    async with await _stdio_session(index_dir, tmp_path) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()

            async def call(name: str, args: dict[str, Any]) -> str:
                return _error(await session.call_tool(name, args))

            assert "no document 'nope.md'" in await call("get_section", {"ref": "nope.md#0001"})
            assert "no section '9999'" in await call("get_section",
                                                     {"ref": "1908.05828.md#9999"})
            assert "doc_id#node_id" in await call("get_section", {"ref": "no-pointer"})
            assert "no line 99999" in await call("get_section",
                                                 {"ref": "1908.05828.md#L1-99999"})
            assert "the question is empty" in await call("search", {"question": "  "})
            assert await call("search", {"question": "x", "budget": 10**9}) == (
                "budget: Input should be less than or equal to 32000")  # the schema's maximum
            assert "k" in await call("search", {"question": "x", "k": 0})  # schema: k >= 1
            assert "no document" in await call("search", {"question": "x",
                                                          "doc_ids": ["missing"]})
            assert "no document 'missing'" in await call("outline", {"doc_id": "missing"})
            # the server is still serving after errors
            assert _data(await session.call_tool("list_documents", {}))["documents"]


def _schema(tool: Any) -> dict[str, Any]:
    # mcp 2.x spells it input_schema, 1.x inputSchema
    return getattr(tool, "input_schema", None) or tool.inputSchema  # type: ignore[no-any-return]


def _maximum(prop: dict[str, Any]) -> tuple[int, int]:
    """(minimum, maximum) of an optional integer property (``anyOf`` integer, null)."""
    (number,) = [p for p in prop.get("anyOf", [prop]) if p.get("type") == "integer"]
    return number["minimum"], number["maximum"]


async def test_stdio_arguments_are_checked_as_http_checks_them(index_dir: Path,
                                                               tmp_path: Path) -> None:
    """Unknown arguments are refused, limits are in the schema, errors are one clean line,
    and the server says its version."""
    from proxy_pointer import __version__

    async with await _stdio_session(index_dir, tmp_path) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            info = getattr(init, "server_info", None) or init.serverInfo
            assert (info.name, info.version) == ("proxy-pointer", __version__)

            tools = {t.name: t for t in (await session.list_tools()).tools}
            props = _schema(tools["search"])["properties"]
            assert _maximum(props["budget"]) == (1, 32_000)
            assert _maximum(props["k"]) == (1, 100)

            async def call(name: str, args: dict[str, Any]) -> str:
                text = _error(await session.call_tool(name, args))
                assert "\n" not in text and "pydantic" not in text  # no boilerplate, no URL
                return text

            assert await call("search", {"question": "x", "budegt": 10}) == (
                "unknown argument 'budegt' (expected: question, budget, k, doc_ids, where)")
            assert await call("list_documents", {"all": True}) == (
                "unknown argument 'all' (expected: none)")
            assert await call("search", {"question": "x", "k": 101}) == (
                "k: Input should be less than or equal to 100")
            assert await call("search", {"budget": 10}) == "question: Field required"
            assert await call("get_section", {"ref": 3}) == "ref: Input should be a valid string"
            found = _data(await session.call_tool("search", {"question": QUESTION,
                                                             "budget": 32_000, "k": 100}))
            assert found["budget"] == 32_000


async def test_the_schema_carries_this_services_limits(index_dir: Path) -> None:
    from proxy_pointer.serve.mcp import build_server
    from proxy_pointer.serve.service import Limits

    server = build_server(Service(index_dir, limits=Limits(max_budget=500, max_k=7)))
    (search,) = [t for t in await server.list_tools() if t.name == "search"]
    props = _schema(search)["properties"]
    assert _maximum(props["budget"]) == (1, 500) and _maximum(props["k"]) == (1, 7)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(proc: subprocess.Popen[bytes], port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("server did not start")


async def test_streamable_http_on_the_loopback(index_dir: Path) -> None:
    try:  # mcp 2.x
        from mcp.client.streamable_http import streamable_http_client as http_client
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client as http_client

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "proxy_pointer.cli", "mcp", "--index",
                             str(index_dir), "--transport", "http", "--port", str(port)],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(proc, port)
        async with http_client(f"http://127.0.0.1:{port}/mcp") as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                assert {t.name for t in (await session.list_tools()).tools} == TOOLS
                found = _data(await session.call_tool("search", {"question": QUESTION,
                                                                 "k": 2}))
                assert 1 <= len(found["contexts"]) <= 2
                assert "no section" in _error(await session.call_tool(
                    "get_section", {"ref": "1908.05828.md#9999"}))
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert out == b""  # nothing but the protocol (here: nothing) on stdout


def test_cli_reports_a_missing_index_on_stderr_only(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "proxy_pointer.cli", "mcp", "--index",
                          str(tmp_path / "none")], env=ENV, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("proxy-pointer: error:")


def test_cli_names_the_extra_when_the_sdk_is_missing(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str],
                                                     index_dir: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mcp" else real(name, *a))
    assert cli.main(["mcp", "--index", str(index_dir)]) == 1
    assert "pip install 'proxy-pointer[mcp]'" in capsys.readouterr().err


def test_http_on_an_open_address_needs_tokens(index_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["mcp", "--index", str(index_dir), "--transport", "http", "--host",
                     "0.0.0.0", "--principal", "hr"])
    assert code == 1
    (line,) = capsys.readouterr().err.strip().splitlines()  # refused, never announced first
    assert "refusing to serve MCP over HTTP on 0.0.0.0 without tokens" in line


async def test_http_with_tokens_reads_what_each_token_grants(tmp_path: Path) -> None:
    httpx2 = pytest.importorskip("httpx2")
    try:  # mcp 2.x
        from mcp.client.streamable_http import streamable_http_client as http_client
    except ImportError:  # pragma: no cover - mcp 1.x takes headers differently
        pytest.skip("mcp 1.x")
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE, docs)
    (docs / "hr.md").write_text("# Salaries\n\n## Pay\n\nThe pay rota of the quokka team.\n",
                                encoding="utf-8")
    update_directory(tmp_path / "idx", [docs], embedder=HashEmbedder(64),
                     metadata={"hr.md": {"access": ["hr"]}})
    (tmp_path / "tokens.json").write_text('{"hr-token": ["hr"], "staff-token": ["staff"]}')
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "proxy_pointer.cli", "mcp", "--index",
                             str(tmp_path / "idx"), "--transport", "http", "--port", str(port),
                             "--tokens", str(tmp_path / "tokens.json")],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(proc, port)
        async with httpx2.AsyncClient() as anonymous:
            r = await anonymous.post(f"http://127.0.0.1:{port}/mcp", json={})
            assert r.status_code == 401
        seen = {}
        for token in ("hr-token", "staff-token"):
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
            async with client, http_client(f"http://127.0.0.1:{port}/mcp",
                                           http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    listed = _data(await session.call_tool("list_documents", {}))
                    seen[token] = {d["doc_id"] for d in listed["documents"]}
        assert "hr.md" in seen["hr-token"] and "hr.md" not in seen["staff-token"]
        assert seen["hr-token"] - {"hr.md"} == seen["staff-token"]
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
