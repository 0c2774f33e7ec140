"""An index records the vocabulary its documents were read with, says when a reader uses
another, and an update reads every document again with the reader's."""

from __future__ import annotations

import json
import logging

from proxy_pointer import HashEmbedder, Index
from proxy_pointer import index as index_module
from proxy_pointer.stores import VocabularyInfo
from proxy_pointer.vocab.filings import FILINGS


def _saved(tmp_path) -> tuple[str, dict]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Leases\n\nOperating lease cost was 12.\n", encoding="utf-8")
    (docs / "b.md").write_text("# Debt\n\nNotes due 2030.\n", encoding="utf-8")
    location = str(tmp_path / "idx")
    Index.build([docs], embedder=HashEmbedder(64)).save(location)
    manifest = next((tmp_path / "idx").rglob("manifest.json"))
    return location, json.loads(manifest.read_text(encoding="utf-8"))


def test_the_manifest_names_the_vocabulary(tmp_path) -> None:
    _, manifest = _saved(tmp_path)
    assert manifest["vocabulary"] == {"name": "filings", "sha256": FILINGS.sha256}
    assert len(FILINGS.sha256) == 64


def test_a_reader_with_another_vocabulary_is_told_and_an_update_rereads(
        tmp_path, monkeypatch, caplog) -> None:
    location, _ = _saved(tmp_path)
    with caplog.at_level(logging.WARNING, logger="proxy_pointer.index"):
        Index.load(location, embedder=HashEmbedder(64))
    assert not caplog.records  # the same vocabulary: nothing to say
    other = VocabularyInfo("filings-de", "0" * 64)
    monkeypatch.setattr(index_module, "_VOCABULARY", other)
    with caplog.at_level(logging.WARNING, logger="proxy_pointer.index"):
        idx = Index.load(location, embedder=HashEmbedder(64))
    assert "read with vocabulary filings" in caplog.text and "filings-de" in caplog.text
    assert idx.vocabulary == VocabularyInfo("filings", FILINGS.sha256)
    report = idx.update([tmp_path / "docs"])
    assert set(report.updated) == {"a.md", "b.md"}  # read again, though unchanged
    assert idx.vocabulary == other and idx.manifest().vocabulary == other
