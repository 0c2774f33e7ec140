"""The shipped embedder double (:class:`~proxy_pointer.embeddings.RecordingEmbedder`): hash
vectors, every call recorded, failing on cue."""

from __future__ import annotations

import numpy as np
import pytest

from proxy_pointer import HashEmbedder, Index, RecordingEmbedder
from proxy_pointer.errors import EmbeddingError


def test_it_embeds_as_the_hash_embedder_and_records_every_call() -> None:
    emb = RecordingEmbedder(32)
    texts = ["alpha beta", "gamma", "alpha beta"]
    np.testing.assert_array_equal(emb.embed_documents(texts),
                                  HashEmbedder(32).embed_documents(texts))
    np.testing.assert_array_equal(emb.embed_query("q"), HashEmbedder(32).embed_query("q"))
    assert emb.texts == texts and emb.calls == 1 and emb.queries == ["q"]
    assert emb.counts["alpha beta"] == 2 and emb.model_id == "hash:32"


def test_it_fails_after_n_calls_or_texts_and_stands_for_other_models() -> None:
    calls = RecordingEmbedder(8, fail_after=2, message="down now")
    calls.embed_documents(["a"])
    calls.embed_documents(["b", "c"])
    with pytest.raises(EmbeddingError, match="down now"):
        calls.embed_documents(["d"])
    assert calls.texts == ["a", "b", "c"]
    texts = RecordingEmbedder(8, fail_after_texts=3)
    texts.embed_documents(["a", "b", "c"])
    with pytest.raises(EmbeddingError):
        texts.embed_documents(["d"])
    other = RecordingEmbedder(16, model_id="other:16", max_tokens=128)
    assert (other.model_id, other.dimension, other.max_tokens) == ("other:16", 16, 128)


def test_an_index_built_with_it_answers_and_a_failing_one_leaves_it_unchanged() -> None:
    emb = RecordingEmbedder(64)
    idx = Index(embedder=emb)
    idx.add_text("a.md", "# Pumps\n\nImpellers wear in sandy water.\n")
    assert emb.texts and idx.retrieve("impellers").sections
    broken = Index(embedder=RecordingEmbedder(64, fail_after=0))
    with pytest.raises(EmbeddingError):
        broken.add_text("a.md", "# Pumps\n\nImpellers wear.\n")
    assert len(broken) == 0
