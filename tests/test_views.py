"""One caller's view and what may not widen or probe it: a reader's filter on the access
list is refused everywhere (it would tell who else may read a document), and a framework
retriever's principal is a ceiling a call can narrow, never widen."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy_pointer.access import Access
from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import ConfigError
from proxy_pointer.index import Index

DOCS = {
    "public.md": "# Cars\n\n## Speak\n\nThe car can speak to its driver about the road.\n",
    "board.md": "# Minutes\n\n## Cars\n\nThe board discussed which car will speak next.\n",
}


@pytest.fixture
def restricted(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    target = tmp_path / "idx"
    idx = Index.build([docs], embedder=HashEmbedder(64))
    idx.set_metadata({"board.md": {"access": ["board"]}})
    idx.save(target)
    return target


def test_a_reader_cannot_filter_on_the_access_list(restricted: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    idx = Index.load(restricted)
    with pytest.raises(ConfigError, match="'access' cannot be filtered on"):
        idx.retrieve("car speak", principal=["readers"], where={"access": "board"})
    with pytest.raises(ConfigError, match="'access' cannot be filtered on"):
        Access.of([], ["access=board"])
    # the index's owner (no principal) may: it sees the lists anyway
    owner = idx.retrieve("car speak", where={"access": "board"})
    assert {s.doc_id for s in owner.sections} == {"board.md"}
    code = main(["query", "--index", str(restricted), "--principal", "readers",
                 "--where", "access=board", "car speak"])
    assert code == 1 and "'access' cannot be filtered on" in capsys.readouterr().err


def test_http_refuses_the_access_filter_for_readers(restricted: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.service import Service

    service = Service(restricted, embedder=HashEmbedder(64))
    http = TestClient(create_app(service, tokens={"r": Access(frozenset({"readers"}))}))
    for headers in ({}, {"Authorization": "Bearer r"}):
        r = http.post("/query", json={"question": "car speak", "where": {"access": "board"}},
                      headers=headers)
        assert r.status_code == 400 and "cannot be filtered on" in r.text
        r = http.get("/documents", params={"where": "access=board"}, headers=headers)
        assert r.status_code == 400


def test_a_retrievers_principal_is_a_ceiling(restricted: Path) -> None:
    from proxy_pointer.langchain import ProxyPointerRetriever
    from proxy_pointer.llama_index import ProxyPointerRetriever as LlamaRetriever

    lc = ProxyPointerRetriever(index_dir=str(restricted), principal=["readers", "staff"])
    assert {d.metadata["doc_id"] for d in lc.invoke("car speak")} == {"public.md"}
    with pytest.raises(ValueError, match="cannot drop it"):
        lc.invoke("car speak", principal=None)
    with pytest.raises(ValueError, match="only narrow"):
        lc.invoke("car speak", principal=["board"])
    assert {d.metadata["doc_id"] for d in lc.invoke("car speak", principal=["staff"])} == {
        "public.md"}
    li = LlamaRetriever(index_dir=str(restricted), principal=["readers"])
    with pytest.raises(ValueError, match="cannot drop it"):
        li.with_options(principal=None)
    # a call's filters add to the retriever's, never replace them
    scoped = ProxyPointerRetriever(index_dir=str(restricted), where={"topic": "x"})
    assert scoped.invoke("car speak", where={"other": "y"}) == []
    # without a principal the retriever is the owner's, and a call may choose one
    owner = ProxyPointerRetriever(index_dir=str(restricted))
    assert {d.metadata["doc_id"] for d in owner.invoke("car speak", principal=["board"])} == {
        "public.md", "board.md"}


def test_doc_ids_never_hold_control_characters(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "new\nline.md").write_text("# Odd\n\nA file name with a newline.\n", encoding="utf-8")
    assert main(["index", str(docs), "--index", str(tmp_path / "idx"), "--embedder",
                 "hash"]) == 0
    idx = Index.load(tmp_path / "idx")
    assert list(idx.reader.documents) == ["new%0Aline.md"]  # escaped: one line, every interface
    capsys.readouterr()
    assert main(["query", "--index", str(tmp_path / "idx"), "file name newline"]) == 0
    assert "=== [1] new%0Aline.md#" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="control characters"):
        idx.add_text("bad\rid.md", "# x\n")
    assert list(Index.load(tmp_path / "idx").reader.documents) == ["new%0Aline.md"]
