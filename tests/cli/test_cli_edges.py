"""The CLI's rough edges a new user meets: nothing to index, another encoding, progress in
logs, the shared payload in batches, unknown documents, a missing index, a bad serve option.
Each failure is one readable line on stderr and a non-zero exit status."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from proxy_pointer.cli import main, progress
from proxy_pointer.errors import IndexNotFoundError, NotFoundError
from proxy_pointer.index import Index
from proxy_pointer.serve.service import Service
from proxy_pointer.stores import current_generation

LATIN1 = "# Café\n\nLa crème brûlée du café est servie à midi, près de la fenêtre.\n"


def _index(tmp_path: Path, *args: str) -> int:
    return main(["index", *args, "--index", str(tmp_path / "idx"), "--embedder", "hash:64",
                 "--cache-dir", str(tmp_path / "cache"), "--quiet"])


def _error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("proxy-pointer: error: "), err
    return lines[0]


def _bad_files(folder: Path) -> Path:
    folder.mkdir()
    (folder / "binary.md").write_bytes(b"# Broken\n\n\xff\xfe bytes\n")
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4\nnot really a PDF\n")
    return folder


def test_an_empty_folder_is_an_error_and_writes_no_index(capsys, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert _index(tmp_path, str(tmp_path / "empty")) == 1
    out, err = capsys.readouterr()
    line = _error_line(err)
    assert f"{tmp_path / 'empty'}: no documents found (looked for *.md" in line
    assert out == "" and current_generation(tmp_path / "idx") is None


def test_every_file_skipped_is_an_error_naming_them(capsys, tmp_path: Path) -> None:
    bad = _bad_files(tmp_path / "bad")
    assert _index(tmp_path, str(bad)) == 1
    line = _error_line(capsys.readouterr().err)
    assert f"{bad}: every file was skipped (2): " in line
    assert f"{bad / 'binary.md'}: is not valid utf-8" in line and str(bad / "scan.pdf") in line
    assert current_generation(tmp_path / "idx") is None


def test_an_existing_index_stays_intact(capsys, docs: Path, tmp_path: Path) -> None:
    assert _index(tmp_path, str(docs)) == 0
    before = current_generation(tmp_path / "idx")
    (tmp_path / "empty").mkdir()
    for folder in (_bad_files(tmp_path / "bad"), tmp_path / "empty"):
        capsys.readouterr()
        assert _index(tmp_path, str(folder), "--prune") == 1  # prune would have emptied it
        _error_line(capsys.readouterr().err)
        assert current_generation(tmp_path / "idx") == before
        assert len(Index.load(tmp_path / "idx").reader.documents) == 3


def test_encoding_option(capsys, tmp_path: Path) -> None:
    folder = tmp_path / "fr"
    folder.mkdir()
    (folder / "cafe.md").write_bytes(LATIN1.encode("latin-1"))
    assert _index(tmp_path, str(folder)) == 1
    line = _error_line(capsys.readouterr().err)
    assert "is not valid utf-8" in line and "pass --encoding" in line
    assert "encoding=" not in line  # the Python API's spelling
    assert _index(tmp_path, str(folder), "--encoding", "latin-1") == 0
    capsys.readouterr()
    assert "crème brûlée" in Index.load(tmp_path / "idx").reader.text("cafe.md")

    assert main(["tree", str(folder / "cafe.md")]) == 1
    assert "pass --encoding" in _error_line(capsys.readouterr().err)
    assert main(["tree", str(folder / "cafe.md"), "--encoding", "latin-1"]) == 0
    assert "Café" in capsys.readouterr().out


def test_a_skipped_file_warning_names_the_cli_option(capsys, docs: Path, tmp_path: Path) -> None:
    (docs / "cafe.md").write_bytes(LATIN1.encode("latin-1"))
    assert _index(tmp_path, str(docs)) == 0
    (warning,) = capsys.readouterr().err.strip().splitlines()
    assert warning.startswith("warning: skipped ") and "pass --encoding" in warning


def test_progress_lines_when_stderr_is_not_a_terminal(capsys, monkeypatch: pytest.MonkeyPatch,
                                                       docs: Path, tmp_path: Path) -> None:
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 0.0)  # every event (default: every 30 s)
    assert main(["index", str(docs), "--index", str(tmp_path / "idx"), "--embedder", "hash:64",
                 "--cache-dir", str(tmp_path / "cache"), "--workers", "0"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err  # lines, not a redrawn bar
    lines = err.splitlines()
    assert lines and all(line.startswith("indexing: ") for line in lines)
    assert lines[0].startswith("indexing: 0/3 pages (0%), 0/3 files, 0 chunks, 0:0")
    assert lines[0].endswith("time left: measuring")
    assert re.match(r"indexing: 3/3 pages \(100%\), 3/3 files, \d+ chunks, \d+:\d\d, "
                    r"about 0:00 left$", lines[-1]), lines[-1]

    monkeypatch.setattr(progress, "PROGRESS_EVERY", 3600.0)
    (docs / "more.md").write_text("# More\n\nA new section of text to index.\n")
    assert main(["index", str(docs), "--index", str(tmp_path / "idx")]) == 0
    # within the interval: the totals, the first line with work done, the last
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "indexing: 0/4 pages (0%)", "indexing: 1/4 pages (25%)", "indexing: 4/4 pages (100%)"]


def test_batch_rows_are_the_shared_payload(capsys, docs: Path, tmp_path: Path) -> None:
    assert _index(tmp_path, str(docs)) == 0
    questions = tmp_path / "q.jsonl"
    rows = [{"id": "a", "question": "telescope mirror"},
            {"id": 7, "question": "apple harvest", "doc_id": "orchard"}]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    service = Service(str(tmp_path / "idx"))
    capsys.readouterr()
    assert main(["query", "--index", str(tmp_path / "idx"), "--questions", str(questions),
                 "--per-doc"]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p.pop("id") for p in printed] == ["a", 7]
    assert printed[0] == service.query("telescope mirror")
    assert printed[1] == service.query("apple harvest", doc_ids=["orchard.md"])
    assert all(c["ref"].startswith(c["doc_id"] + "#") for p in printed for c in p["contexts"])

    assert main(["query", "--index", str(tmp_path / "idx"), "--json", "telescope mirror"]) == 0
    assert json.loads(capsys.readouterr().out) == printed[0]


def test_an_unknown_doc_is_an_error(capsys, monkeypatch: pytest.MonkeyPatch, docs: Path,
                                    tmp_path: Path) -> None:
    assert _index(tmp_path, str(docs)) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["query", "--index", "idx", "--doc", "nope.md", "mirror"]) == 1
    out, err = capsys.readouterr()
    assert _error_line(err) == "proxy-pointer: error: no document 'nope.md' in idx"
    assert out == ""
    # as HTTP and MCP: an id without its suffix names the document
    assert main(["query", "--index", "idx", "--doc", "observatory", "--json", "mirror"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["contexts"] and {c["doc_id"] for c in found["contexts"]} == {"observatory.md"}


def test_a_missing_index_is_not_found_not_corrupt(capsys, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["query", "--index", "nowhere", "mirror"]) == 1
    line = _error_line(capsys.readouterr().err)
    assert line == ("proxy-pointer: error: no index at nowhere: build one with "
                    "`proxy-pointer index DOCS --index nowhere`")
    (tmp_path / "empty").mkdir()
    assert main(["section", "--index", "empty", "a.md#0001"]) == 1
    assert "no index at empty: build one" in _error_line(capsys.readouterr().err)
    with pytest.raises(IndexNotFoundError) as e:
        Index.load(tmp_path / "nowhere")
    assert isinstance(e.value, NotFoundError) and "corrupt" not in str(e.value)


def test_serve_checks_its_options_before_saying_it_serves(capsys, docs: Path,
                                                         tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    assert _index(tmp_path, str(docs)) == 0
    capsys.readouterr()
    assert main(["serve", "--index", str(tmp_path / "idx"), "--docs-root",
                 str(tmp_path / "nope")]) == 1
    out, err = capsys.readouterr()
    assert "serving" not in out + err
    assert "--docs-root" in _error_line(err) and "not a folder" in err
    assert main(["serve", "--index", str(tmp_path / "none")]) == 1
    out, err = capsys.readouterr()
    assert "serving" not in out + err and "no index at" in _error_line(err)


def test_a_ray_that_does_not_start_is_one_line(capsys, monkeypatch: pytest.MonkeyPatch,
                                               docs: Path, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")

    def timed_out(**options: object) -> None:
        raise TimeoutError("Timed out after 60 seconds waiting for the GCS to start.\n"
                           "Traceback (most recent call last): ...")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", timed_out)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    code = main(["index", str(docs), "--index", str(tmp_path / "idx"), "--embedder", "hash:64",
                 "--executor", "ray", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("proxy-pointer: error: could not start or reach Ray on this machine: "
                           "Timed out")
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == ["lock"]  # no index
