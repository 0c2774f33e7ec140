"""Document permissions end to end: tests that try to leak.

A small company corpus: a public handbook and manual, HR's compensation file (``access:
["hr"]``, holding a word-for-word copy of the handbook's holiday section) and board minutes
(``access: ["board"]``) whose sections all talk about a merger, so that they would take every
top-k place for a merger question. Through every interface (the API, the CLI, HTTP, MCP, the
LangChain and LlamaIndex retrievers), a caller outside a group must never see a hidden
document's text, title, doc id, breadcrumb, ``also_in`` entry or tree, must get "not found"
for it exactly as for a missing document, and must still get ``k`` visible sections.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from proxy_pointer.access import ANONYMOUS, Access, read_metadata_file, read_tokens
from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import ConfigError, NotFoundError
from proxy_pointer.index import Index, update_directory

ROOT = Path(__file__).resolve().parents[1]

HOLIDAYS = ("Employees receive twenty five days of paid holiday each year, booked through the "
            "team lead at least two weeks ahead. Unused holiday carries over until the end "
            "of March, and holiday pay follows the average of the last twelve weeks.")
DOCS = {
    "public/handbook.md": f"""# Employee Handbook

## Holidays

{HOLIDAYS}

## Expenses

Travel expenses are reimbursed within thirty days when receipts are attached.

## Company news

Staff hear about any merger or reorganisation at the weekly all-hands meeting.
""",
    "public/manual.md": """# Press Manual

## Starting the press

Press the green button to start the hydraulic press after the guard closes.

## Joining parts

Two parts merge in the die when the ram descends onto the lower plate.
""",
    "hr/compensation.md": f"""# Executive Compensation Zebrafish

## Chief executive salary

The chief executive salary is four point two million zebrafish credits a year.

## Holidays

{HOLIDAYS}
""",
    "board/minutes.md": """# Board Minutes Quarantine

## Merger vote

The board voted on the merger with Northwind; the merger passed seven to two.

## Merger price

The merger price is eleven dollars per share, the merger premium thirty percent.

## Merger timeline

The merger closes in March once regulators approve the merger filing.

## Merger advisers

Advisers on the merger are paid a merger fee of two percent.
""",
}
META = {"hr/compensation.md": {"access": ["hr"], "department": "hr"},
        "board/minutes.md": {"access": ["board"], "year": 2026},
        "public/handbook.md": {"department": "hr", "year": 2026}}
#: Strings only the hidden documents hold (ids, titles, breadcrumbs, text), lowercased.
HR_SECRETS = ("zebrafish", "compensation")
BOARD_SECRETS = ("quarantine", "board/minutes", "merger vote", "merger price", "merger timeline",
                 "merger advisers", "northwind")
SECRETS = HR_SECRETS + BOARD_SECRETS
MERGER = "merger vote price timeline advisers northwind"
HOLIDAY_Q = "paid holiday twenty five days team lead carries over until March"


def _no_secrets(payload: Any, secrets: tuple[str, ...] = SECRETS) -> None:
    text = (payload if isinstance(payload, str)
            else json.dumps(payload, default=str, ensure_ascii=False)).lower()
    for question in (MERGER, HOLIDAY_Q):  # payloads echo the question
        text = text.replace(question.lower(), "")
    found = [s for s in secrets if s in text]
    assert not found, f"leaked {found}: {text[:400]}"


def _write_docs(root: Path) -> Path:
    for doc_id, text in DOCS.items():
        path = root / "docs" / doc_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    meta = root / "meta.jsonl"
    meta.write_text("".join(json.dumps({"doc_id": d, **m}) + "\n" for d, m in META.items()),
                    encoding="utf-8")
    return meta


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus indexed by the CLI with ``--metadata`` (hash embedder: fast, and
    reopened by its id)."""
    root = tmp_path_factory.mktemp("access")
    meta = _write_docs(root)
    assert main(["index", str(root / "docs"), "--index", str(root / "idx"), "--embedder",
                 "hash:256", "--metadata", str(meta), "--quiet"]) == 0
    return root


@pytest.fixture(scope="module")
def index(built: Path) -> Index:
    return Index.load(built / "idx")


# --- the API -------------------------------------------------------------------------------
def test_metadata_is_stored_and_returned_without_the_access_list(index: Index) -> None:
    assert index.reader.documents["hr/compensation.md"].metadata == {"access": ["hr"],
                                                               "department": "hr"}
    assert index.reader.documents["public/manual.md"].metadata == {}
    hit = next(s for s in index.retrieve(HOLIDAY_Q, principal=["hr"]).sections
               if s.doc_id == "hr/compensation.md")
    assert hit.metadata == {"department": "hr"}
    assert hit.to_dict()["metadata"] == {"department": "hr"}


def test_restricted_documents_take_no_top_k_places(index: Index) -> None:
    trusted = index.retrieve(MERGER, k=3)
    assert {s.doc_id for s in trusted.sections} == {"board/minutes.md"}  # they would crowd
    for principal in ([], ["hr"], ["staff", "hr"]):
        got = index.retrieve(MERGER, k=3, principal=principal)
        assert len(got.sections) == 3
        assert "board/minutes.md" not in {s.doc_id for s in got.sections}
        if not principal:
            _no_secrets(got.to_dict())
    board = index.retrieve(MERGER, k=3, principal=["board"])
    assert {s.doc_id for s in board.sections} == {"board/minutes.md"}


def test_a_near_duplicate_in_a_hidden_document_is_never_named(index: Index) -> None:
    trusted = index.retrieve(HOLIDAY_Q, k=3)
    merged = [s for s in trusted.sections if s.also_in]
    assert merged, "the copies should merge for a trusted reader (else this proves nothing)"
    assert any("hr/compensation.md" in r or "public/handbook.md" in r
               for s in merged for r in s.also_in)
    anon = index.retrieve(HOLIDAY_Q, k=3, principal=[])
    assert anon.sections and all(not s.also_in for s in anon.sections)
    assert anon.sections[0].doc_id == "public/handbook.md"
    _no_secrets(anon.to_dict())


def test_sections_of_hidden_documents_are_not_found_like_missing_ones(index: Index) -> None:
    node = index.reader.tree("hr/compensation.md").nodes[1].node_id
    assert "zebrafish" in index.section(f"hr/compensation.md#{node}").text
    assert index.section(f"hr/compensation.md#{node}", access=Access.of(["hr"])).text
    with pytest.raises(NotFoundError) as hidden:
        index.section(f"hr/compensation.md#{node}", access=ANONYMOUS)
    with pytest.raises(NotFoundError) as missing:
        index.section(f"hr/nothing.md#{node}", access=ANONYMOUS)
    assert str(hidden.value) == str(missing.value).replace("hr/nothing.md", "hr/compensation.md")
    with pytest.raises(NotFoundError):  # also without the suffix
        index.section("hr/compensation#L1", access=ANONYMOUS)


def test_where_filters_by_metadata(index: Index) -> None:
    got = index.retrieve(HOLIDAY_Q, k=5, where={"department": "hr"}, principal=["hr"])
    assert {s.doc_id for s in got.sections} == {"public/handbook.md", "hr/compensation.md"}
    assert {s.doc_id for s in index.retrieve(MERGER, where=["year=2026"]).sections} <= {
        "public/handbook.md", "board/minutes.md"}
    assert not index.retrieve(MERGER, where={"year": "1999"}).sections
    with pytest.raises(ConfigError, match="key=value"):
        index.retrieve(MERGER, where=["year"])


def test_a_metadata_only_change_embeds_nothing_and_content_changes_keep_it(
        built: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(built, root)
    before = Index.load(root / "idx")
    vectors = before.reader.vectors_of(before.reader.rows_for(["hr/compensation.md"]))
    _, report = update_directory(root / "idx", [root / "docs"], root=str(root / "docs"),
                                 metadata={"hr/compensation.md": {"access": ["exec"]}})
    assert report.relabelled == ("hr/compensation.md",) and report.embedded == 0
    assert not report.updated and "metadata changed for 1" in report.summary()
    after = Index.load(root / "idx")
    assert after.reader.documents["hr/compensation.md"].metadata == {"access": ["exec"]}
    np.testing.assert_array_equal(after.reader.vectors_of(after.reader.rows_for(["hr/compensation.md"])),
                                  vectors)
    assert "hr/compensation.md" not in {
        s.doc_id for s in after.retrieve(HOLIDAY_Q, k=5, principal=["hr"]).sections}
    # A changed text keeps the stored metadata when none is given.
    path = root / "docs" / "hr" / "compensation.md"
    path.write_text(path.read_text() + "\n## Bonus\n\nThe zebrafish bonus is nil.\n")
    _, report = update_directory(root / "idx", [root / "docs"], root=str(root / "docs"))
    assert report.updated == ("hr/compensation.md",)
    assert Index.load(root / "idx").reader.documents["hr/compensation.md"].metadata == {
        "access": ["exec"]}


def test_metadata_for_an_unknown_document_is_refused_before_any_work(index: Index) -> None:
    with pytest.raises(ConfigError, match=r"'hr/compensaton\.md'"):
        index.set_metadata({"hr/compensaton.md": {"access": ["hr"]}})
    with pytest.raises(ConfigError, match="list of group names"):
        index.set_metadata({"hr/compensation.md": {"access": "hr"}})


def test_metadata_and_token_files_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "meta.jsonl"
    bad.write_text('{"doc_id": "a.md"}\n{"access": ["x"]}\n')
    with pytest.raises(ConfigError, match=r"meta\.jsonl:2: a line needs a \"doc_id\""):
        read_metadata_file(bad)
    bad.write_text('{"doc_id": "a.md"}\n{"doc_id": "a.md"}\n')
    with pytest.raises(ConfigError, match=r"meta\.jsonl:2: 'a\.md' appears twice"):
        read_metadata_file(bad)
    bad.write_text('{"doc_id": "a.md", "access": [""]}\n')
    with pytest.raises(ConfigError, match=r"meta\.jsonl:1: 'access' must be a list"):
        read_metadata_file(bad)
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"t1": ["hr"], "t2": "*"}')
    assert read_tokens(tokens) == {"t1": Access(frozenset({"hr"})), "t2": Access()}
    tokens.write_text('{"t1": "hr"}')
    with pytest.raises(ConfigError, match=r"tokens\.json: token \.\.\.t1"):
        read_tokens(tokens)


def test_milvus_filters_inside_its_search(built: Path, tmp_path: Path) -> None:
    pytest.importorskip("milvus_lite")
    loc = f"milvus:{tmp_path / 'm.db'}"
    update_directory(loc, [built / "docs"], root=str(built / "docs"), embedder=HashEmbedder(256),
                     metadata={d: m for d, m in META.items()})
    idx = Index.load(loc)
    assert idx.reader.documents["board/minutes.md"].metadata["access"] == ["board"]
    got = idx.retrieve(MERGER, k=3, principal=["hr"])
    assert len(got.sections) == 3 and "board/minutes.md" not in {s.doc_id for s in got.sections}
    anon = idx.retrieve(HOLIDAY_Q, k=3, principal=[])
    assert all(not s.also_in for s in anon.sections)
    _no_secrets(anon.to_dict())
    assert {s.doc_id for s in idx.retrieve(MERGER, k=3, principal=["board"]).sections} == {
        "board/minutes.md"}


# --- the CLI -------------------------------------------------------------------------------
def test_cli_query_section_and_ask_hide_what_the_principal_may_not_read(
        built: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    idx = str(built / "idx")
    for cmd in (["query", MERGER], ["query", HOLIDAY_Q, "--json"], ["ask", MERGER]):
        assert main([*cmd, "--index", idx, "--k", "3", "--principal", "staff"]) == 0
        out = capsys.readouterr().out
        assert out.strip()
        _no_secrets(out)
    assert main(["query", MERGER, "--index", idx, "--principal", "board", "--json"]) == 0
    assert "board/minutes.md" in capsys.readouterr().out
    assert main(["section", "hr/compensation.md#L1", "--index", idx, "--principal", "x"]) == 1
    err = capsys.readouterr().err
    assert "no document 'hr/compensation.md' in the index" in err
    _no_secrets(err.replace("hr/compensation.md", ""))
    assert main(["query", MERGER, "--index", idx, "--doc", "board/minutes",
                 "--principal", "hr"]) == 1
    assert "no document 'board/minutes'" in capsys.readouterr().err


# --- HTTP ----------------------------------------------------------------------------------
def _client(built: Path, **options: Any) -> Any:
    pytest.importorskip("fastapi")
    pytest.importorskip("fastapi_offline")
    from fastapi.testclient import TestClient

    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.service import Service

    tokens = {"hr-token": Access(frozenset({"hr"})), "root-token": Access()}
    return TestClient(create_app(Service(built / "idx"), token="", tokens=tokens, **options))


def test_http_hides_documents_from_anonymous_and_other_groups(built: Path) -> None:
    client = _client(built)
    for headers in ({}, {"Authorization": "Bearer wrong"},
                    {"Authorization": "Bearer hr-token"}):
        hidden_here = BOARD_SECRETS if "hr-token" in str(headers) else SECRETS
        for question in (MERGER, HOLIDAY_Q):
            query = client.post("/query", json={"question": question, "k": 3}, headers=headers)
            assert query.status_code == 200 and len(query.json()["contexts"]) == 3
            _no_secrets(query.json(), hidden_here)
        docs = client.get("/documents", headers=headers).json()["documents"]
        _no_secrets(docs, hidden_here)
        health = client.get("/healthz", headers=headers).json()
        assert health["documents"] == len(docs)
        for path in ("/documents/board/minutes.md/tree", "/sections/board/minutes.md/L1",
                     "/sections?ref=board/minutes.md%23L1-2", "/documents/board/minutes/tree"):
            hidden, missing = (client.get(p, headers=headers)
                               for p in (path, path.replace("board/minutes", "board/nothing")))
            assert hidden.status_code == missing.status_code == 404
            assert hidden.json()["error"].replace("minutes", "nothing") == missing.json()["error"]
        refused = client.post("/query", json={"question": MERGER,
                                              "doc_ids": ["board/minutes.md"]}, headers=headers)
        assert refused.status_code == 404
    anon_docs = {d["doc_id"] for d in client.get("/documents").json()["documents"]}
    assert anon_docs == {"public/handbook.md", "public/manual.md"}
    hr = client.get("/documents", headers={"Authorization": "Bearer hr-token"}).json()
    assert {d["doc_id"] for d in hr["documents"]} == anon_docs | {"hr/compensation.md"}
    assert all("access" not in d["metadata"] for d in hr["documents"])
    root = client.post("/query", json={"question": MERGER, "k": 3},
                       headers={"Authorization": "Bearer root-token"}).json()
    assert {c["doc_id"] for c in root["contexts"]} == {"board/minutes.md"}
    where = client.post("/query", json={"question": HOLIDAY_Q, "where": {"department": "hr"}},
                        headers={"Authorization": "Bearer hr-token"}).json()
    assert {c["doc_id"] for c in where["contexts"]} <= {"public/handbook.md",
                                                        "hr/compensation.md"}


def test_http_require_token_answers_401_without_a_valid_one(built: Path) -> None:
    client = _client(built, require_token=True)
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        got = client.get("/documents", headers=headers)
        assert got.status_code == 401 and got.headers["www-authenticate"] == "Bearer"
        assert "token" in got.json()["error"]
    assert client.get("/documents", headers={"Authorization": "Bearer hr-token"}).status_code == 200


def test_http_index_sets_metadata_without_embedding(built: Path, tmp_path: Path) -> None:
    import shutil

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.service import Service

    shutil.copytree(built / "idx", tmp_path / "idx")
    client = TestClient(create_app(Service(tmp_path / "idx"), token="w"))
    auth = {"Authorization": "Bearer w"}
    got = client.post("/index", headers=auth, json={
        "documents": [{"doc_id": "inline/secret.md", "text": "# Zebrafish plan\n\nThe "
                       "zebrafish plan is secret.\n", "metadata": {"access": ["hr"]}}],
        "metadata": {"public/manual.md": {"access": ["ops"]}}})
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["added"] == ["inline/secret.md"] and body["relabelled"] == ["public/manual.md"]
    assert body["embedded"] == 1  # the new document's one chunk, nothing for the relabelling
    anon = {d["doc_id"] for d in client.get("/documents").json()["documents"]}
    assert anon == {"public/handbook.md"}
    _no_secrets(client.post("/query", json={"question": "the secret plan"}).json())
    bad = client.post("/index", headers=auth, json={"metadata": {"nope.md": {}}})
    assert bad.status_code == 400 and "'nope.md'" in bad.json()["error"]


# --- MCP -----------------------------------------------------------------------------------
async def test_mcp_tools_read_through_the_principal(built: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}

    async def tools(*principal: str) -> dict[str, str]:
        args = ["-m", "proxy_pointer.cli", "mcp", "--index", str(built / "idx")]
        for p in principal:
            args += ["--principal", p]
        params = StdioServerParameters(command=sys.executable, args=args, env=env,
                                       cwd=str(tmp_path))
        out = {}
        async with stdio_client(params, errlog=(tmp_path / "err").open("w")) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for name, arguments in (("search", {"question": MERGER, "k": 3}),
                                    ("search", {"question": HOLIDAY_Q, "k": 3}),
                                    ("list_documents", {}),
                                    ("outline", {"doc_id": "board/minutes.md"}),
                                    ("get_section", {"ref": "hr/compensation.md#L1"})):
                result = await session.call_tool(name, arguments)
                out[f"{name} {arguments}"] = result.content[0].text
        return out

    anonymous = await tools()
    for text in anonymous.values():
        _no_secrets(text.replace("board/minutes.md", "").replace("hr/compensation.md", ""))
    assert "no document 'board/minutes.md' in the index" in anonymous[
        "outline {'doc_id': 'board/minutes.md'}"]
    assert len(json.loads(anonymous[f"search {{'question': '{MERGER}', 'k': 3}}"])["contexts"]) == 3
    board = await tools("board", "hr")
    assert "Merger vote" in board["outline {'doc_id': 'board/minutes.md'}"]
    assert "Zebrafish" in board["get_section {'ref': 'hr/compensation.md#L1'}"]


# --- framework retrievers ------------------------------------------------------------------
def test_framework_retrievers_take_the_principal(index: Index) -> None:
    pytest.importorskip("langchain_core")
    from proxy_pointer.langchain import ProxyPointerRetriever as LangChainRetriever

    docs = LangChainRetriever(index=index, k=3, principal=["staff"]).invoke(MERGER)
    assert len(docs) == 3
    _no_secrets([d.page_content for d in docs] + [d.metadata for d in docs])
    pytest.importorskip("llama_index.core")
    from proxy_pointer.llama_index import ProxyPointerRetriever as LlamaRetriever

    nodes = LlamaRetriever(index=index, k=3, principal=[]).retrieve(HOLIDAY_Q)
    assert nodes and all(not n.node.metadata["also_in"] for n in nodes)
    _no_secrets([n.node.get_content() for n in nodes] + [n.node.metadata for n in nodes])


def test_an_answer_cannot_cite_a_hidden_section(built: Path) -> None:
    from proxy_pointer.llm import ScriptedLLM
    from proxy_pointer.serve.service import Service

    # Cites a hidden section it was never shown (a guess, or an injection).
    llm = ScriptedLLM("Holidays are 25 days [public/handbook.md#0001] and the CEO earns "
                      "a lot [hr/compensation.md#0001].", model_id="cites-hidden")
    answer = Service(built / "idx", llm=llm).ask(HOLIDAY_Q, k=3)
    _no_secrets(llm.prompts[0])  # nothing hidden reached the model
    valid = {c["ref"]: c["valid"] for c in answer["citations"]}
    assert valid == {"public/handbook.md#0001": True, "hr/compensation.md#0001": False}
    assert "hr/compensation.md" not in {s["doc_id"] for s in answer["sections"]}
    assert not answer["grounded"]


def test_rows_read_alike_sorted_or_not_across_segments() -> None:
    """Views hand search sorted rows, cut at segment starts without sorting again; any
    order must read the same rows (three segments, one document replaced)."""
    idx = Index(embedder=HashEmbedder(64))
    for batch in range(3):
        idx.add_texts([(f"d{batch}-{i}.md", f"# Doc {batch} {i}\n\n## Part\n\nWords {batch} {i} "
                        f"here.\n\n## More\n\nOther words {i}.\n") for i in range(4)])
    idx.add_texts([("d0-1.md", "# Doc 0 1 again\n\n## Part\n\nNew words.\n")])
    rng = np.random.default_rng(0)
    q = np.asarray(idx.embedder.embed_query("words here"), np.float32)
    for _ in range(20):
        rows = np.sort(rng.choice(len(idx.reader.chunks),
                                  size=rng.integers(1, len(idx.reader.chunks)), replace=False))
        shuffled = rng.permutation(rows)
        by_row = dict(zip(shuffled.tolist(), idx.reader.pointers(shuffled), strict=True))
        assert idx.reader.pointers(rows) == [by_row[r] for r in rows.tolist()]
        n = len(idx.reader.chunks)  # every row: ties cannot fall differently at a cut
        for a, b in zip(idx.reader.dense_search(q, n, rows=rows),
                        idx.reader.dense_search(q, n, rows=shuffled), strict=True):
            np.testing.assert_array_equal(a, b)
        assert (idx.reader.lexical_search("words", n, rows)
                == idx.reader.lexical_search("words", n, shuffled))
