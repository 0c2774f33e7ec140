"""The HTTP API (`proxy_pointer.serve.http`) through FastAPI's TestClient, and once for real.

Every endpoint with good and bad requests, the error contract (``{"error": ...}`` with the
right status, never a traceback), the bearer token on ``POST /index``, the documents-folder
fence, and queries served while an update commits, each from one whole generation. The
inspector's files and the API docs are served from the package, with no CDN
(``tests/serve/test_inspector.py`` runs the page in a browser).
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("fastapi_offline")

import httpx
from fastapi.testclient import TestClient
from loopback import serve_asgi

from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import LLMError
from proxy_pointer.index import Index, update_directory
from proxy_pointer.llm import ScriptedLLM
from proxy_pointer.serve.http import GENERATION_HEADER, TOKEN_ENV, create_app
from proxy_pointer.serve.service import Limits, Service

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
QUESTION = "How many sentences does the dataset contain?"
TOKEN = "s3cret-token"
#: A document no sample paper resembles; its words make it the top hit once indexed.
NEW_DOC = ("# Zanzibar lighthouse keepers\n\n## Quokka rotations\n\n"
           "The zanzibar lighthouse keepers rotate quokka shifts every fortnight.\n")
NEW_QUESTION = "zanzibar lighthouse keepers quokka shifts"


#: Tests set the update token themselves; one in the caller's environment must not leak in.
pytestmark = pytest.mark.usefixtures("no_token_env")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample papers, nested one level (ids like ``papers/1908.05828.md``), indexed."""
    root = tmp_path_factory.mktemp("built")
    shutil.copytree(SAMPLE, root / "docs" / "papers")
    update_directory(root / "idx", [root / "docs"], embedder=HashEmbedder(64))
    return root


@pytest.fixture()
def site(built: Path, tmp_path: Path) -> Path:
    """A writable copy: ``docs/`` (the documents folder) and ``idx/`` (its index)."""
    shutil.copytree(built, tmp_path, dirs_exist_ok=True)
    return tmp_path


def _client(location: Path, **app_options) -> TestClient:
    llm = app_options.pop("llm", None)
    limits = app_options.pop("limits", None)
    service = Service(location, embedder=HashEmbedder(64), llm=llm, limits=limits,
                      refresh_seconds=0.0)
    return TestClient(create_app(service, **app_options), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def client(built: Path) -> TestClient:
    """A read-only client over the module's index."""
    return _client(built / "idx")


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and body["error"], body
    assert "Traceback" not in response.text
    return str(body["error"])


# --- reading ------------------------------------------------------------------------------
def test_query_returns_sections_with_pointers(client: TestClient) -> None:
    r = client.post("/query", json={"question": QUESTION, "budget": 800, "k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["question"] == QUESTION and body["budget"] == 800
    assert 0 < body["tokens_used"] <= 800 and 0 < len(body["contexts"]) <= 3
    for c in body["contexts"]:
        assert c["ref"] == f"{c['doc_id']}#{c['node_id']}"
        assert c["doc_id"].startswith("papers/") and c["text"]
    assert r.headers[GENERATION_HEADER] == client.get("/healthz").json()["generation"]


def test_query_filters_by_document_and_mode(client: TestClient) -> None:
    r = client.post("/query", json={"question": QUESTION, "doc_ids": ["papers/1908.05828"],
                                    "mode": "collapsed"})
    assert r.status_code == 200, r.text
    assert {c["doc_id"] for c in r.json()["contexts"]} == {"papers/1908.05828.md"}


def test_documents_tree_and_sections_by_pointer(client: TestClient) -> None:
    docs = client.get("/documents").json()["documents"]
    assert [d["doc_id"] for d in docs] == sorted(f"papers/{p.name}" for p in SAMPLE.iterdir())
    doc_id = docs[0]["doc_id"]  # nested, with dots: papers/1908.05828.md
    tree = client.get(f"/documents/{doc_id}/tree").json()
    assert tree["doc_id"] == doc_id and tree["nodes"]
    node = tree["nodes"][1]
    section = client.get(f"/sections/{doc_id}/{node['node_id']}").json()
    assert section["ref"] == node["ref"] and section["title"] == node["title"]
    lines = (SAMPLE / doc_id.removeprefix("papers/")).read_text().splitlines()
    assert section["text"].splitlines()[0] == lines[section["start_line"] - 1]
    by_ref = client.get("/sections", params={"ref": node["ref"]}).json()
    assert by_ref == section
    # The id without its suffix names the same document.
    assert client.get(f"/documents/{doc_id.removesuffix('.md')}/tree").json() == tree


def test_the_tree_marks_the_sections_indexing_skipped(client: TestClient, tmp_path: Path
                                                      ) -> None:
    nodes = client.get("/documents/papers/1908.05828.md/tree").json()["nodes"]
    skipped = {n["title"]: n["skipped"] for n in nodes if n["skipped"]}
    assert list(skipped) == ["Acknowledgments"]
    assert skipped["Acknowledgments"].startswith("noise: acknowledgments (title ")
    assert all("skipped" in n for n in nodes)
    # The index's own chunk config decides: with min_section_chars, small sections are short.
    from proxy_pointer.parse.chunking import ChunkConfig

    update_directory(tmp_path / "idx", [SAMPLE / "1908.05828.md"], embedder=HashEmbedder(64),
                     chunk_config=ChunkConfig(min_section_chars=400))
    nodes = _client(tmp_path / "idx").get("/documents/1908.05828.md/tree").json()["nodes"]
    reasons = [n["skipped"] for n in nodes if n["skipped"]]
    assert any(r.startswith("short: ") and "min_section_chars 400" in r for r in reasons)
    assert any(r.startswith("noise: acknowledgments") for r in reasons)


def test_healthz_and_openapi_docs(client: TestClient) -> None:
    h = client.get("/healthz").json()
    assert h["status"] == "ok" and h["documents"] == 4 and h["chunks"] > 0
    assert h["generation"] and h["embedder"] == "hash:64"
    assert client.get("/docs").status_code == 200
    spec = client.get("/openapi.json").json()
    assert {"/query", "/ask", "/documents", "/healthz", "/index"} <= set(spec["paths"])
    assert client.get("/docs").headers[GENERATION_HEADER] == h["generation"]


# --- bad requests ------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "status", "needle"), [
    ({"question": ""}, 422, "question: the question is empty"),
    ({"question": " \n\t "}, 422, "question: the question is empty"),
    ({"question": QUESTION, "budget": 0}, 422, "budget"),
    ({"question": QUESTION, "k": 10_000}, 422, "k"),
    ({"question": QUESTION, "mode": "sideways"}, 422, "mode"),
    ({"question": QUESTION, "colour": "red"}, 422, "colour"),
    ({"question": "x" * 4_001}, 422, "question"),
    ({"budget": 100}, 422, "question"),
    ({"question": QUESTION, "doc_ids": ["nope.md"]}, 404, "nope.md"),
])
def test_query_rejects_bad_requests_as_json(client: TestClient, body, status: int,
                                            needle: str) -> None:
    assert needle in _error(client.post("/query", json=body), status)


def test_malformed_json_and_unknown_routes_are_json_errors(client: TestClient) -> None:
    r = client.post("/query", content=b'{"question": ', headers={"content-type":
                                                                 "application/json"})
    assert "JSON" in _error(r, 422)
    _error(client.get("/no/such/route"), 404)
    _error(client.get("/query"), 405)


def test_an_empty_and_a_blank_question_get_one_message(client: TestClient) -> None:
    for question in ("", "   "):
        for path in ("/query", "/ask"):
            r = client.post(path, json={"question": question})
            assert _error(r, 422) == "question: the question is empty", path


@pytest.mark.parametrize(("headers", "status", "needle"), [
    ({"content-type": "text/plain"}, 415, "(got 'text/plain')"),
    ({"content-type": "application/x-www-form-urlencoded"}, 415, "got 'application/x-www"),
    ({}, 415, "the request had no Content-Type"),
])
def test_a_body_without_the_json_content_type_says_so(client: TestClient, headers: dict,
                                                      status: int, needle: str) -> None:
    body = json.dumps({"question": QUESTION}).encode()
    for path in ("/query", "/ask"):
        r = client.post(path, content=body, headers=headers)
        error = _error(r, status)
        assert error.startswith("send a JSON object with Content-Type: application/json")
        assert needle in error and "dictionary" not in error


def test_a_body_that_is_no_json_object_says_so(client: TestClient, site: Path) -> None:
    for body, needle in ((b"[1, 2]", "not an object"), (b'"question"', "not an object"),
                         (b"", "the body is empty")):
        r = client.post("/query", content=body, headers={"content-type": "application/json"})
        assert needle in _error(r, 422)
    assert client.post("/query", content=json.dumps({"question": QUESTION}), headers={
        "content-type": "application/json; charset=utf-8"}).status_code == 200
    # POST /index too, once the token is checked.
    c = _client(site / "idx", token=TOKEN)
    r = c.post("/index", content=json.dumps({"documents": []}).encode(),
               headers={"Authorization": f"Bearer {TOKEN}", "content-type": "text/plain"})
    assert "Content-Type: application/json" in _error(r, 415)


def test_unknown_document_or_section_is_404(client: TestClient) -> None:
    assert "papers/missing.md" in _error(client.get("/documents/papers/missing.md/tree"), 404)
    assert "9999" in _error(client.get("/sections/papers/1908.05828.md/9999"), 404)
    _error(client.get("/sections/papers/missing.md/0001"), 404)
    assert "doc_id#node_id" in _error(client.get("/sections", params={"ref": "no-hash"}), 400)
    # Lines are refs too: in range they open, past the end they are missing, malformed 400.
    lines = client.get("/sections", params={"ref": "papers/1908.05828#L1-2"})
    assert lines.status_code == 200 and lines.json()["ref"] == "papers/1908.05828.md#L1-2"
    assert lines.json() == client.get("/sections/papers/1908.05828.md/L1-2").json()
    assert "no line 99999" in _error(client.get(
        "/sections", params={"ref": "papers/1908.05828.md#L1-99999"}), 404)
    assert "has no pages" in _error(client.get("/sections/papers/1908.05828.md/p1"), 404)
    assert "L12-30" in _error(client.get("/sections/papers/1908.05828.md/L0"), 400)


def test_oversize_bodies_are_refused_with_413_before_parsing(built: Path) -> None:
    small = _client(built / "idx", limits=Limits(max_body_bytes=200))
    big = json.dumps({"question": "x" * 300})
    assert "200 bytes" in _error(small.post("/query", content=big,
                                            headers={"content-type": "application/json"}), 413)

    def chunks():  # no Content-Length: counted as it streams
        yield big[:150].encode()
        yield big[150:].encode()

    _error(small.post("/query", content=chunks(), headers={"content-type": "application/json"}),
           413)
    assert small.post("/query", json={"question": QUESTION}).status_code == 200


def test_unexpected_errors_are_a_logged_json_500(client: TestClient,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    def boom(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Service, "documents", boom)
    r = client.get("/documents")
    assert "secret internals" not in _error(r, 500)
    assert "RuntimeError: secret internals" in caplog.text


# --- the inspector and the API docs, served from the package --------------------------------
def _assets(html: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]+)"', html)


def test_the_root_serves_the_inspector_and_its_files(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert r.headers[GENERATION_HEADER] == client.get("/healthz").json()["generation"]
    assert "<title>proxy-pointer inspector</title>" in r.text
    assets = _assets(r.text)
    assert "inspector/app.js" in assets and "inspector/style.css" in assets
    kinds = {"js": "text/javascript", "css": "text/css"}
    for asset in assets:
        if asset.startswith("inspector/"):
            got = client.get(f"/{asset}")
            assert got.status_code == 200, asset
            assert got.headers["content-type"].split(";")[0] in (
                kinds[asset.rsplit(".", 1)[1]], "application/javascript"), asset
    _error(client.get("/inspector/missing.js"), 404)
    # The API keeps its routes beside it.
    assert client.post("/query", json={"question": QUESTION}).status_code == 200
    assert client.get("/documents").status_code == 200
    _error(client.get("/index"), 405)


@pytest.mark.parametrize(("page", "kinds"), [
    ("/docs", {".js": "javascript", ".css": "text/css", ".png": "image/png"}),
    ("/redoc", {".js": "javascript", ".png": "image/png"}),
])
def test_the_api_docs_load_nothing_from_a_cdn(client: TestClient, page: str,
                                              kinds: dict[str, str]) -> None:
    r = client.get(page)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert not re.search(r"https?://", r.text), re.findall(r"https?://\S+", r.text)
    assets = _assets(r.text)
    assert {a.rsplit(".", 1)[1] for a in assets} == {k[1:] for k in kinds}
    for asset in assets:
        got = client.get(asset)
        assert got.status_code == 200, asset
        assert kinds["." + asset.rsplit(".", 1)[1]] in got.headers["content-type"], asset
        assert len(got.content) > 100, asset
    assert "/openapi.json" in r.text


# --- ask ------------------------------------------------------------------------------------
def test_ask_without_an_llm_is_503_with_the_reason(client: TestClient) -> None:
    assert "no LLM is configured" in _error(client.post("/ask", json={"question": QUESTION}),
                                            503)


def test_ask_answers_with_checked_citations(built: Path) -> None:
    plain = _client(built / "idx")
    top = plain.post("/query", json={"question": QUESTION, "k": 2}).json()["contexts"][0]
    llm = ScriptedLLM(f"About 6,000 sentences [{top['ref']}, lines {top['start_line']}-"
                      f"{top['end_line']}] and more [papers/other.md#0042, lines 1-2].")
    r = _client(built / "idx", llm=llm).post("/ask", json={"question": QUESTION, "k": 2})
    assert r.status_code == 200, r.text
    answer = r.json()
    valid = {f"{c['doc_id']}#{c['node_id']}": c["valid"] for c in answer["citations"]}
    assert valid == {top["ref"]: True, "papers/other.md#0042": False}
    assert top["ref"] in llm.prompts[0] and answer["grounded"] is False


def test_ask_with_a_failing_llm_is_502(built: Path) -> None:
    llm = ScriptedLLM(LLMError("quota exceeded"))
    r = _client(built / "idx", llm=llm).post("/ask", json={"question": QUESTION})
    assert "quota" in _error(r, 502)


# --- updates ------------------------------------------------------------------------------
def test_index_is_off_without_a_token(site: Path) -> None:
    c = _client(site / "idx")
    body = {"documents": [{"doc_id": "a.md", "text": NEW_DOC}]}
    assert TOKEN_ENV in _error(c.post("/index", json=body), 403)
    assert TOKEN_ENV in _error(c.post("/index", json=body,
                                      headers={"Authorization": f"Bearer {TOKEN}"}), 403)


def test_index_needs_the_right_bearer_token(site: Path) -> None:
    c = _client(site / "idx", token=TOKEN)
    body = {"documents": [{"doc_id": "a.md", "text": NEW_DOC}]}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": TOKEN}):
        r = c.post("/index", json=body, headers=headers)
        _error(r, 401)
        assert r.headers["www-authenticate"] == "Bearer"
    assert c.get("/healthz").json()["documents"] == 4


def test_inline_documents_are_committed_and_queried_next(site: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)  # token=None reads the environment
    c = _client(site / "idx")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    before = c.get("/healthz").json()["generation"]
    r = c.post("/index", headers=auth,
               json={"documents": [{"doc_id": "notes/lighthouse.md", "text": NEW_DOC}]})
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["added"] == ["notes/lighthouse.md"] and report["generation"] != before
    assert r.headers[GENERATION_HEADER] == report["generation"]
    q = c.post("/query", json={"question": NEW_QUESTION, "k": 1})
    assert q.headers[GENERATION_HEADER] == report["generation"]
    assert q.json()["contexts"][0]["doc_id"] == "notes/lighthouse.md"
    # The same text again changes nothing and commits nothing.
    again = c.post("/index", headers=auth,
                   json={"documents": [{"doc_id": "notes/lighthouse.md", "text": NEW_DOC}]})
    assert again.json()["unchanged"] == 1 and again.json()["generation"] == report["generation"]
    # A fresh service over the same store sees it: it was committed, not held in memory.
    fresh = Index.load(site / "idx", embedder=HashEmbedder(64))
    assert fresh.reader.documents["notes/lighthouse.md"]


def test_paths_under_the_documents_folder_update_and_prune(site: Path) -> None:
    c = _client(site / "idx", token=TOKEN, docs_root=site / "docs")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    (site / "docs" / "papers" / "lighthouse.md").write_text(NEW_DOC)
    r = c.post("/index", headers=auth, json={"paths": ["papers/lighthouse.md"]})
    assert r.status_code == 200, r.text
    assert r.json()["added"] == ["papers/lighthouse.md"]  # ids relative to --docs-root
    hit = c.post("/query", json={"question": NEW_QUESTION, "k": 1}).json()["contexts"][0]
    assert hit["doc_id"] == "papers/lighthouse.md"
    r = c.post("/index", headers=auth, json={"paths": ["papers/lighthouse.md"], "prune": True})
    assert len(r.json()["removed"]) == 4
    assert [d["doc_id"] for d in c.get("/documents").json()["documents"]] == [
        "papers/lighthouse.md"]


def test_pdfs_under_the_documents_folder_index_with_pages(site: Path) -> None:
    pytest.importorskip("fpdf")
    from test_pages import make_pdf

    make_pdf(site / "docs" / "report.pdf")
    (site / "docs" / "broken.pdf").write_bytes(b"%PDF-1.7\n%cut short")
    c = _client(site / "idx", token=TOKEN, docs_root=site / "docs")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = c.post("/index", headers=auth, json={"paths": ["report.pdf", "broken.pdf"]})
    assert r.status_code == 200, r.text
    assert r.json()["added"] == ["report.pdf"]
    assert len(r.json()["skipped"]) == 1 and "broken.pdf" in r.json()["skipped"][0]
    page = c.get("/sections", params={"ref": "report.pdf#p3"}).json()
    assert page["pages"] == [3, 3] and "Floods at the northern plant" in page["text"]
    hit = c.post("/query", json={"question": "flood insurance insurer", "k": 8,
                                 "doc_ids": ["report.pdf"]}).json()["contexts"]
    assert hit and all(h["pages"] for h in hit)


def test_paths_outside_the_documents_folder_are_refused(site: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(NEW_DOC)
    (site / "docs" / "link.md").symlink_to(outside)
    c = _client(site / "idx", token=TOKEN, docs_root=site / "docs")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for paths in (["../outside.md"], [str(outside)], ["/etc/hostname"], ["link.md"], ["."]):
        assert "outside" in _error(c.post("/index", headers=auth, json={"paths": paths}), 400)
    _error(c.post("/index", headers=auth, json={"paths": ["papers/none.md"]}), 400)
    for doc_id in ("../x.md", "/abs.md", "a//b.md", "a#b.md"):
        body = {"documents": [{"doc_id": doc_id, "text": NEW_DOC}]}
        assert "bad doc id" in _error(c.post("/index", headers=auth, json=body), 400)
    _error(c.post("/index", headers=auth, json={}), 422)
    assert "paths, documents and/or metadata" in _error(c.post("/index", headers=auth,
                                                     json={"prune": True}), 422)
    assert c.get("/healthz").json()["documents"] == 4
    # Without a documents folder, server-side paths are off altogether.
    bare = _client(site / "idx", token=TOKEN)
    assert "--docs-root" in _error(bare.post("/index", headers=auth,
                                             json={"paths": [str(site / "docs")]}), 400)


def test_a_commit_by_another_writer_is_served_next(site: Path) -> None:
    c = _client(site / "idx")
    before = c.get("/healthz").json()["generation"]
    (site / "docs" / "papers" / "lighthouse.md").write_text(NEW_DOC)
    update_directory(site / "idx", [site / "docs"], embedder=HashEmbedder(64))
    h = c.get("/healthz").json()
    assert h["generation"] != before and h["documents"] == 5


def test_queries_during_an_update_each_read_one_whole_generation(site: Path) -> None:
    c = _client(site / "idx", token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    questions = [QUESTION, NEW_QUESTION, "Which datasets are used for evaluation?"]

    def answer(q: str) -> tuple[str, list[tuple[str, str]]]:
        r = c.post("/query", json={"question": q, "k": 3})
        assert r.status_code == 200, r.text
        return r.headers[GENERATION_HEADER], [(x["ref"], x["text"]) for x in r.json()["contexts"]]

    old = {q: answer(q) for q in questions}
    seen: list[tuple[str, str, list[tuple[str, str]]]] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader(n: int) -> None:
        try:
            i = n
            while not stop.is_set():
                q = questions[i % len(questions)]
                seen.append((q, *answer(q)))
                i += 1
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    docs = [{"doc_id": f"notes/{i}.md", "text": NEW_DOC.replace("fortnight", f"{i} days")}
            for i in range(20)]
    r = c.post("/index", headers=auth, json={"documents": docs})
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors
    assert r.status_code == 200, r.text
    new = {q: answer(q) for q in questions}
    gens = {old[questions[0]][0]: old, new[questions[0]][0]: new}
    assert len(gens) == 2 and set(gens) == {g for _, g, _ in seen}  # both were served
    for q, gen, contexts in seen:
        assert contexts == gens[gen][q][1], (q, gen)  # exactly that generation's answer


# --- the real server and the CLI ---------------------------------------------------------
def test_the_app_serves_over_real_http(built: Path) -> None:
    service = Service(built / "idx", embedder=HashEmbedder(64))
    with serve_asgi(create_app(service)) as base, httpx.Client(base_url=base, timeout=10) as http:
        assert http.get("/healthz").json()["documents"] == 4
        r = http.post("/query", json={"question": QUESTION})
        assert r.status_code == 200 and r.json()["contexts"]
        assert r.headers[GENERATION_HEADER] == service.index.generation
        assert http.post("/query", content=b"x" * 1_000_001).status_code == 413


def test_cli_serve_starts_the_app_with_its_options(built: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture) -> None:
    calls = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: calls.append((app, kw)))
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    rc = main(["serve", "--index", str(built / "idx"), "--port", "8123", "--llm", "none",
               "--docs-root", str(built / "docs")])
    assert rc == 0
    (app, kw), = calls
    assert kw == {"host": "127.0.0.1", "port": 8123, "log_level": "info"}
    c = TestClient(app, raise_server_exceptions=False)
    assert c.get("/healthz").json()["documents"] == 4
    assert "no LLM is configured" in _error(c.post("/ask", json={"question": QUESTION}), 503)
    # The token from the environment and the documents folder reach the app: a path under
    # --docs-root is looked for (and is missing) rather than refused.
    r = c.post("/index", headers={"Authorization": f"Bearer {TOKEN}"},
               json={"paths": ["papers/none.md"]})
    assert "--docs-root" not in _error(r, 400)
    err = capsys.readouterr().err
    assert "4 documents" in err and "POST /index: on" in err and "/ask: off" in err
    assert "inspector: /" in err
    assert main(["serve", "--index", str(built / "missing")]) == 1


def test_where_filters_are_bounded_before_any_work(client: TestClient) -> None:
    """A card filter of month-like text once took seconds per request (and held /healthz):
    keys and values over Limits.max_where_chars are refused with 422 naming the limit, in
    a body and in a query string alike, and the server answers on."""
    long = "jan" * 6_666  # 20 KB
    message = _error(client.post("/query", json={"question": QUESTION,
                                                 "where": {"period": long}}), 422)
    assert "200" in message and "where" in message
    message = _error(client.get("/documents", params={"where": f"period={long * 3}"}), 422)
    assert "401" in message and "where" in message
    too_many = {f"k{i}": "v" for i in range(33)}
    assert "32" in _error(client.post("/query", json={"question": QUESTION,
                                                      "where": too_many}), 422)
    assert client.get("/healthz").status_code == 200
    ok = client.post("/query", json={"question": QUESTION, "where": {"period": "FY2021"}})
    assert ok.status_code == 200
