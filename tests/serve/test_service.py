"""Service behaviour every interface shares: what a 404 says, what an inline update
reports, and how fast a dead LLM fails a request."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import NotFoundError
from proxy_pointer.index import update_directory
from proxy_pointer.llm import OpenAICompatibleLLM
from proxy_pointer.serve.service import Service

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
NEW_DOC = ("# Zanzibar lighthouse keepers\n\n## Quokka rotations\n\n"
           "The zanzibar lighthouse keepers rotate quokka shifts every fortnight.\n\n"
           "## Lamp care\n\nThe lamp is cleaned at dawn with vinegar and newspaper.\n")


@pytest.fixture
def service(tmp_path: Path) -> Service:
    update_directory(tmp_path / "idx", [SAMPLE], embedder=HashEmbedder(64))
    return Service(tmp_path / "idx")


@pytest.mark.parametrize("call", [
    lambda s: s.outline("nope.md"),
    lambda s: s.section_by_ref("nope.md#0001"),
    lambda s: s.section("nope.md", "0001"),
    lambda s: s.query("question", doc_ids=["nope.md"]),
])
def test_not_found_messages_do_not_reveal_where_the_index_lives(service: Service, call,
                                                                 tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as err:
        call(service)
    message = str(err.value)
    assert "'nope.md'" in message and "the index" in message
    assert str(tmp_path) not in message and "idx" not in message


def test_inline_documents_report_what_was_embedded(service: Service) -> None:
    first = service.add_documents(texts=[("notes/keepers.md", NEW_DOC)])
    assert first["added"] == ["notes/keepers.md"] and first["unchanged"] == 0
    chunks = service.index.reader.documents["notes/keepers.md"].n_chunks
    assert chunks >= 2 and first["embedded"] == chunks  # inline text is counted too
    again = service.add_documents(texts=[("notes/keepers.md", NEW_DOC)])
    assert again["unchanged"] == 1 and again["added"] == again["updated"] == []
    assert again["embedded"] == 0
    changed = NEW_DOC.replace("vinegar", "lemon juice")
    third = service.add_documents(texts=[("notes/keepers.md", changed)])
    assert third["updated"] == ["notes/keepers.md"]
    assert 1 <= third["embedded"] < chunks  # only the changed chunk is embedded again


def test_ask_against_a_refused_llm_port_fails_without_retrying(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from proxy_pointer.serve.http import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    update_directory(tmp_path / "idx", [SAMPLE], embedder=HashEmbedder(64))
    slept: list[float] = []
    llm = OpenAICompatibleLLM(url, "m", max_retries=5, sleep=slept.append)
    client = TestClient(create_app(Service(tmp_path / "idx", llm=llm)))
    response = client.post("/ask", json={"question": "What is the baseline?"})
    assert response.status_code == 502
    assert "cannot connect" in response.json()["error"]
    assert slept == []  # a refused port is not retried (five retries would take 24 s)
