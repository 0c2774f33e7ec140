"""Tests for proxy_pointer.stores.lexical: BM25 saved with the index and loaded, not rebuilt."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import IndexCorruptError
from proxy_pointer.index import Index
from proxy_pointer.stores import current_generation
from proxy_pointer.stores.lexical import LexicalIndex, LexicalWriter

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
    assert idx.reader.lexical_search("high tide", 5)


def test_a_segment_missing_its_bm25_is_reported(saved: Path) -> None:
    manifest = json.loads((current_generation(saved) / "manifest.json").read_text())
    seg = saved / "segments" / manifest["segments"][0]["name"]
    victim = next((seg / "bm25").iterdir())
    victim.unlink()
    with pytest.raises(IndexCorruptError, match=re.escape(str(victim)) + ": missing"):
        Index.load(saved)


def test_changing_an_index_searches_the_new_documents(saved: Path) -> None:
    idx = Index.load(saved, embedder=HashEmbedder(64))
    assert idx.reader.lexical_search("ferries", 5)
    idx.add_text("canal.md", "# Canal\n\nBarges carry grain along the canal locks.\n")
    rows = [r for r, _ in idx.reader.lexical_search("barges grain canal", 5)]
    assert rows and idx.reader.chunks[rows[0]].doc_id == "canal.md"


def test_segments_score_with_corpus_wide_statistics(docs: Path, tmp_path: Path) -> None:
    """An index built in two saves (two segments) ranks like one built at once: each
    segment's BM25 is rescaled to the IDF of all segments."""
    whole = Index.build([docs], embedder=HashEmbedder(64))
    split = Index(embedder=HashEmbedder(64))
    names = sorted(p.name for p in docs.iterdir())
    split.update([docs / names[0]], root=str(docs))
    split.save(tmp_path / "idx")
    split = Index.load(tmp_path / "idx", embedder=HashEmbedder(64))
    split.update([docs], root=str(docs))
    split.save(tmp_path / "idx")
    split = Index.load(tmp_path / "idx", embedder=HashEmbedder(64))
    segments = json.loads((current_generation(tmp_path / "idx") / "manifest.json")
                          .read_text())["segments"]
    assert len(segments) == 2
    for q in ("ferries moor at the harbor", "apple trees pruned", "telescope mirror"):
        a = [(whole.reader.chunks[r].chunk_id, s) for r, s in whole.reader.lexical_search(q, 5)]
        b = [(split.reader.chunks[r].chunk_id, s) for r, s in split.reader.lexical_search(q, 5)]
        assert [c for c, _ in a[:3]] == [c for c, _ in b[:3]]
        # Scores differ only by each segment's own average chunk length.
        assert [s for _, s in b[:3]] == pytest.approx([s for _, s in a[:3]], rel=0.15)


@pytest.mark.parametrize("batch", [1, 7, 500])
def test_streamed_bm25_scores_equal_bm25s_bit_for_bit(tmp_path: Path, batch: int) -> None:
    import random

    rng = random.Random(batch)
    words = ("the model models tide ship ships apple trees pruned glass plate harbor 2019 x "
             "data set sets evaluation a an über naïve").split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
             for _ in range(1200)]
    texts[5], texts[6] = "&", ""
    writer = LexicalWriter(tmp_path / "scratch")
    for i in range(0, len(texts), batch):
        writer.add(texts[i:i + batch])
    writer.save(tmp_path / "bm25", postings_per_pass=5000, postings_per_read=700)
    assert not list((tmp_path / "scratch").iterdir())
    built, streamed = LexicalIndex.build(texts), LexicalIndex.load(tmp_path / "bm25", len(texts))
    vocab = json.loads((tmp_path / "bm25" / "vocab.index.json").read_text())
    assert set(vocab) == set(built._model.vocab_dict)
    for t in vocab:
        if t:
            assert streamed.scores([t]).tobytes() == built.scores([t]).tobytes(), t
    for q in ("ships at high tide", "apple model evaluation", "naïve über"):
        assert streamed.search(q, 20) == built.search(q, 20)


def test_streamed_bm25_of_texts_without_words_matches_bm25s(tmp_path: Path) -> None:
    writer = LexicalWriter(tmp_path / "scratch")
    writer.add(["&", "", "the"])
    writer.save(tmp_path / "bm25")
    built, streamed = LexicalIndex.build(["&", "", "the"]), LexicalIndex.load(tmp_path / "bm25", 3)
    assert streamed.scores(["\x00"]).tobytes() == built.scores(["\x00"]).tobytes()
    assert streamed.search("anything", 3) == []
