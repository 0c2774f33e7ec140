"""Tests for proxy_pointer.lexical: BM25 saved with the index and loaded, not rebuilt."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import IndexCorruptError
from proxy_pointer.index import Index
from proxy_pointer.lexical import LexicalIndex
from proxy_pointer.stores import current_generation

TEXTS = [
    "[Harbor > Tides] Ships enter at high tide through the northern channel.",
    "[Orchard > Pruning] Apple trees are pruned in late winter.",
    "[Observatory > Archive] Exposures are stored on glass plates.",
    "[Harbor > Ferries] Ferries moor at the eastern pier.",
]


def test_search_ranks_by_bm25_and_respects_row_filters() -> None:
    lex = LexicalIndex.build(TEXTS)
    hits = lex.search("when are apple trees pruned", 3)
    assert hits[0][0] == 1 and all(score > 0 for _, score in hits)
    assert [r for r, _ in lex.search("harbor", 5, rows=np.array([3]))] == [3]
    assert lex.search("the of and", 3) == []  # stop words only: no tokens, no hits
    assert LexicalIndex.build([]).search("anything", 3) == []


def test_save_and_load_give_the_same_scores(tmp_path: Path) -> None:
    lex = LexicalIndex.build(TEXTS)
    lex.save(tmp_path / "bm25")
    loaded = LexicalIndex.load(tmp_path / "bm25", len(TEXTS))
    for q in ("ferries pier", "glass plates exposures", "high tide ships"):
        assert loaded.search(q, 4) == lex.search(q, 4)


def test_row_count_mismatch_and_damage_are_reported(tmp_path: Path) -> None:
    LexicalIndex.build(TEXTS).save(tmp_path / "bm25")
    with pytest.raises(IndexCorruptError, match=r"bm25: BM25 index holds 4 documents.*5 chunks"):
        LexicalIndex.load(tmp_path / "bm25", 5)
    (tmp_path / "bm25" / "vocab.index.json").write_text("{not json")
    with pytest.raises(IndexCorruptError, match=r"bm25: BM25 index unreadable"):
        LexicalIndex.load(tmp_path / "bm25", 4)


def test_a_loaded_index_queries_with_the_saved_bm25(saved: Path, monkeypatch) -> None:
    built = Index.load(saved)
    expected = built.retrieve("Which ships may enter at high tide?", budget=500)

    def no_rebuild(texts):  # a loaded index must not re-tokenize its chunks
        raise AssertionError("BM25 was rebuilt")

    monkeypatch.setattr(LexicalIndex, "build", staticmethod(no_rebuild))
    idx = Index.load(saved)
    got = idx.retrieve("Which ships may enter at high tide?", budget=500)
    assert [s.ref for s in got.sections] == [s.ref for s in expected.sections]
    assert idx.lexical.n_rows == len(idx.chunks)


def test_an_index_saved_without_bm25_builds_it_in_memory(saved: Path) -> None:
    gen = current_generation(saved)
    assert gen is not None
    before = Index.load(saved).retrieve("ferries moor", budget=400)
    for f in (gen / "bm25").iterdir():
        f.unlink()
    (gen / "bm25").rmdir()
    after = Index.load(saved).retrieve("ferries moor", budget=400)
    assert [s.ref for s in after.sections] == [s.ref for s in before.sections]


def test_changing_an_index_drops_its_saved_bm25(saved: Path) -> None:
    idx = Index.load(saved, embedder=HashEmbedder(64))
    assert idx.lexical.search("ferries", 5)
    idx.add_text("canal.md", "# Canal\n\nBarges carry grain along the canal locks.\n")
    rows = [r for r, _ in idx.lexical.search("barges grain canal", 5)]
    assert rows and idx.chunks[rows[0]].doc_id == "canal.md"
