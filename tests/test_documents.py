"""Tests for proxy_pointer.documents: exact reading, clear errors, stable doc ids."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from proxy_pointer.documents import discover, doc_id_for, read_document
from proxy_pointer.errors import ConfigError, DocumentError
from proxy_pointer.parse.tree import build_tree


def test_text_is_returned_exactly(tmp_path: Path):
    raw = "\ufeff# Title\r\nline\rmore\n\u00e9\u2028x"
    path = tmp_path / "a.md"
    path.write_bytes(raw.encode("utf-8"))
    text = read_document(path)
    assert text == raw
    tree = build_tree(text, "a.md")
    assert tree.text == raw and tree.nodes[0].title == "Title"


def test_missing_file(tmp_path: Path):
    path = tmp_path / "nope.md"
    with pytest.raises(DocumentError) as err:
        read_document(path)
    assert err.value.path == str(path)
    assert str(err.value) == f"{path}: no such file"


def test_directory(tmp_path: Path):
    with pytest.raises(DocumentError, match="is a directory"):
        read_document(tmp_path)


def test_invalid_utf8_names_the_byte_offset(tmp_path: Path):
    path = tmp_path / "latin1.md"
    path.write_bytes(b"# Caf\xe9 menu\n")
    with pytest.raises(DocumentError) as err:
        read_document(path)
    message = str(err.value)
    assert message.startswith(f"{path}: is not valid utf-8: byte offset 5 (0xe9)")
    assert "encoding=" in message
    assert read_document(path, encoding="latin-1") == "# Café menu\n"


def test_nul_bytes_mean_binary(tmp_path: Path):
    path = tmp_path / "image.md"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(DocumentError, match=r"looks binary: NUL byte at byte offset 8"):
        read_document(path)
    valid = tmp_path / "nul.md"
    valid.write_bytes("é\x00".encode())
    with pytest.raises(DocumentError, match=r"NUL byte at byte offset 2"):
        read_document(valid)


def test_other_encodings(tmp_path: Path):
    path = tmp_path / "u16.md"
    path.write_bytes("# Überblick\n".encode("utf-16"))
    assert read_document(path, encoding="utf-16") == "# Überblick\n"
    with pytest.raises(DocumentError, match="looks binary"):
        read_document(path)  # UTF-16 read as UTF-8: NUL bytes everywhere
    with pytest.raises(ConfigError, match="unknown text encoding 'klingon'"):
        read_document(path, encoding="klingon")


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0,
                    reason="root can read any file")
def test_permission_denied(tmp_path: Path):
    path = tmp_path / "secret.md"
    path.write_text("# x\n")
    path.chmod(0)
    try:
        with pytest.raises(DocumentError, match="permission denied"):
            read_document(path)
    finally:
        path.chmod(0o644)


def test_permission_denied_message_when_running_as_root(tmp_path: Path, monkeypatch):
    """Root reads everything, so simulate the refusal the OS would give."""
    path = tmp_path / "secret.md"
    path.write_text("# x\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", refuse)
    with pytest.raises(DocumentError) as err:
        read_document(path)
    assert str(err.value) == f"{path}: permission denied"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_not_a_regular_file(tmp_path: Path):
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(DocumentError, match="not a regular file"):
        read_document(fifo)


def test_doc_id_is_relative_posix_path(tmp_path: Path):
    root = tmp_path / "corpus"
    doc = root / "reports" / "2022" / "amd.md"
    assert doc_id_for(doc, root) == "reports/2022/amd.md"
    assert doc_id_for(str(doc), str(root) + os.sep) == "reports/2022/amd.md"
    assert doc_id_for(doc, doc) == "amd.md"
    with pytest.raises(DocumentError, match="is not inside the indexed folder"):
        doc_id_for(tmp_path / "elsewhere.md", root)


def test_doc_id_for_relative_paths(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert doc_id_for("docs/a/b.md", "docs") == "a/b.md"
    assert doc_id_for("./docs/../docs/b.md", "docs") == "b.md"


def test_discover_is_case_insensitive_and_skips_hidden(tmp_path: Path):
    for name in ["b.md", "a/x.MD", "a/notes.txt", "a/img.png", ".hidden/c.md", "a/.d.md",
                 "z.markdown"]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    found = [s.doc_id for s in discover([tmp_path])]
    assert found == ["a/notes.txt", "a/x.MD", "b.md", "z.markdown"]
    assert [s.path for s in discover([tmp_path / "b.md"])] == [tmp_path / "b.md"]
    assert [s.path.name for s in discover([tmp_path], include=["*.txt"])] == ["notes.txt"]
    with pytest.raises(DocumentError, match="no such file"):
        discover([tmp_path / "missing"])
