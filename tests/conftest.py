"""Fixtures shared by the index, store and CLI tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import update_directory

#: Three small Markdown documents (harbor, observatory, orchard) written for these tests.
INDEX_DOCS = Path(__file__).parent / "fixtures" / "index" / "docs"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A writable copy of the three fixture documents."""
    out = tmp_path / "docs"
    shutil.copytree(INDEX_DOCS, out)
    return out


@pytest.fixture
def saved(docs: Path, tmp_path: Path) -> Path:
    """A committed index of the three fixture documents (HashEmbedder(64))."""
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    return target
