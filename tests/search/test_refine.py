"""Tests for proxy_pointer.search.refine: a second embedder rescores the stored vectors'
best chunks at query time (fast mode's MiniLM), on the handbook (handbook.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from handbook import CHAPTER_Q, CHILD_Q, FIXTURES, PIPES_Q

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder, RecordingEmbedder
from proxy_pointer.embeddings.factory import teacher_of
from proxy_pointer.embeddings.static import FAST_MODEL_ID
from proxy_pointer.errors import ConfigError
from proxy_pointer.search.config import RetrievalConfig
from proxy_pointer.search.refine import Refiner, refiner_for
from proxy_pointer.serve.service import Service

QUESTIONS = (CHILD_Q, CHAPTER_Q, PIPES_Q)


class Blind(RecordingEmbedder):
    """A first stage that cannot tell texts apart: one vector for every text."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        super().embed_documents(texts)
        return np.full((len(texts), self.dimension), self.dimension ** -0.5, np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def _refs(res) -> list[tuple[str, float]]:
    return [(s.ref, round(s.relevance, 6)) for s in res.sections]


def test_a_pool_holding_every_chunk_ranks_as_the_refiners_own_index() -> None:
    own = Index.build([FIXTURES], embedder=HashEmbedder(256))
    refiner = Refiner(HashEmbedder(256))
    blind = Index.build([FIXTURES], embedder=Blind(8, model_id="blind:8"), refiner=refiner)
    assert len(blind.reader.chunks) < 100  # the default pool holds every chunk
    for q in QUESTIONS:
        for hybrid in (True, False):
            assert _refs(blind.retrieve(q, hybrid=hybrid)) == _refs(own.retrieve(q, hybrid=hybrid))
        # Without the refiner the blind first stage ranks differently.
        assert _refs(blind.retrieve(q, refine=0, hybrid=False)) != _refs(
            own.retrieve(q, hybrid=False))


def test_refine_zero_is_the_index_alone_and_embeds_nothing() -> None:
    refiner = Refiner(RecordingEmbedder(32))
    with_refiner = Index.build([FIXTURES], embedder=HashEmbedder(64), refiner=refiner)
    alone = Index.build([FIXTURES], embedder=HashEmbedder(64))
    assert alone.refiner is None
    for q in QUESTIONS:
        assert _refs(with_refiner.retrieve(q, refine=0)) == _refs(alone.retrieve(q))
    assert refiner.embedder.texts == [] and refiner.embedder.queries == []


@pytest.mark.parametrize("mode", ["collapsed", "traverse"])
def test_the_modes_that_read_whole_documents_are_not_refined(mode: str) -> None:
    refiner = Refiner(RecordingEmbedder(32))
    with_refiner = Index.build([FIXTURES], embedder=HashEmbedder(64), refiner=refiner)
    alone = Index.build([FIXTURES], embedder=HashEmbedder(64))
    for q in QUESTIONS:
        assert _refs(with_refiner.retrieve(q, mode=mode)) == _refs(alone.retrieve(q, mode=mode))
    assert refiner.embedded == 0
    with_refiner.retrieve(CHILD_Q)  # mode "chunks" is
    assert refiner.embedded > 0


def test_the_pool_is_the_first_stages_best_and_bm25s_best() -> None:
    first = RecordingEmbedder(16)
    refiner = Refiner(RecordingEmbedder(64))
    idx = Index.build([FIXTURES], embedder=first, refiner=refiner)
    chunks = idx.reader.chunks
    idx.retrieve(PIPES_Q, refine=2, hybrid=False, title_boost=0.0, vocabulary=False)
    q = first.embed_query(PIPES_Q)
    stored = idx.reader.vectors_of(np.arange(len(chunks)))
    best = set(np.argsort(-(stored @ q), kind="stable")[:2].tolist())
    # With BM25 off only the first stage's best two are rescored (and later read again).
    assert set(refiner.embedder.texts) == {chunks[r].embed_text for r in best}
    refiner = Refiner(RecordingEmbedder(64))
    idx = Index.build([FIXTURES], embedder=first, refiner=refiner)
    idx.retrieve(PIPES_Q, refine=2, title_boost=0.0, vocabulary=False)
    lexical = idx.reader.lexical_search(PIPES_Q, 2)
    assert {chunks[r].embed_text for r, _ in lexical} <= set(refiner.embedder.texts)


def test_a_refiner_reads_only_what_the_request_may_read() -> None:
    handbook = (FIXTURES / "handbook.md").read_text()
    secret = handbook.replace("impellers", "rotors").replace("Handbook", "Board Minutes")
    refiner = Refiner(RecordingEmbedder(64))
    idx = Index(embedder=HashEmbedder(64), refiner=refiner)
    idx.add_texts([("open.md", handbook), ("board.md", secret)],
                  metadata={"board.md": {"access": ["board"]}})
    hidden = {c.embed_text for c in idx.reader.chunks if c.doc_id == "board.md"}
    for q in QUESTIONS:
        idx.retrieve(q, principal=["staff"])
        idx.retrieve(q, doc_ids=["open.md"])
    assert refiner.embedder.texts and not hidden & set(refiner.embedder.texts)


def test_one_views_questions_never_warm_anothers() -> None:
    def cost(*principals: list[str]) -> list[int]:
        refiner = Refiner(RecordingEmbedder(64))
        idx = Index.build([FIXTURES], embedder=HashEmbedder(64), refiner=refiner)
        out = []
        for p in principals:
            before = refiner.embedded
            idx.retrieve(CHILD_Q, principal=p)
            out.append(refiner.embedded - before)
        return out

    alone = cost(["b"])[0]
    assert alone > 0
    # "b" pays the same after "a" asked the same question; "a" asking again pays nothing.
    assert cost(["a"], ["b"], ["a"]) == [alone, alone, 0]


def test_the_cache_is_bounded_and_keyed_by_text() -> None:
    refiner = Refiner(RecordingEmbedder(8), capacity=3)
    texts = ["a b", "c d", "e f", "g h", "a b"]
    v = refiner.vectors("view", texts)
    assert np.array_equal(v, HashEmbedder(8).embed_documents(texts))
    assert refiner.embedded == 4  # a repeated text is embedded once
    refiner.vectors("view", ["g h", "e f", "c d"])  # still held
    assert refiner.embedded == 4
    refiner.vectors("view", ["a b"])  # the least recently used was dropped
    assert refiner.embedded == 5
    odd = "a lone surrogate \ud800 in a text"  # any str keys the cache
    assert np.array_equal(refiner.vectors("view", [odd]), HashEmbedder(8).embed_documents([odd]))
    with pytest.raises(ValueError, match="capacity"):
        Refiner(HashEmbedder(8), capacity=0)


@pytest.mark.parametrize("bad", [-1, True, 2.5, "3"])
def test_refine_must_be_a_count(bad: object) -> None:
    with pytest.raises(ConfigError, match="refine must be 0"):
        RetrievalConfig(refine=bad)


def test_fast_mode_is_refined_by_the_minilm_it_was_distilled_from() -> None:
    assert teacher_of(FAST_MODEL_ID) == "minilm"
    assert teacher_of("hash:64") is None and refiner_for(HashEmbedder(64)) is None
    refiner = refiner_for(RecordingEmbedder(256, model_id=FAST_MODEL_ID))
    assert refiner is not None
    assert refiner.embedder.model_id == "sentence-transformers:all-MiniLM-L6-v2"


def test_a_saved_index_and_a_service_keep_their_refiner(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy_pointer.embeddings import factory

    monkeypatch.setattr(factory, "teacher_of", lambda model_id: "hash:32")
    Index.build([FIXTURES], embedder=HashEmbedder(64)).save(tmp_path / "idx")
    given = Refiner(HashEmbedder(16))
    assert Index.load(tmp_path / "idx", refiner=given).refiner is given
    service = Service(tmp_path / "idx", refresh_seconds=0.0)
    refiner = service.index.refiner
    assert refiner is not None and refiner.embedder.model_id == "hash:32"
    service.index.retrieve(CHILD_Q)
    made = refiner.embedded
    before = service.index.generation
    service.add_documents(texts=[("note.md", "# Note\n\nBronze impellers erode after storms.\n")])
    assert service.index.generation != before and service.index.refiner is refiner
    service.index.retrieve(CHILD_Q)  # the cache outlives the reload
    assert refiner.embedded - made <= 2
