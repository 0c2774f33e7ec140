"""The default embedder on ONNX Runtime (same vectors as PyTorch) and the int8 option."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from proxy_pointer import bundled
from proxy_pointer.embeddings import (
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    embedder_from_id,
    make_embedder,
)
from proxy_pointer.errors import ConfigError, EmbeddingError, IndexMismatchError
from proxy_pointer.index import Index
from proxy_pointer.tokens import WORD_PIECES, TokenizerFile, count_tokens

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
TEXTS = [
    "[Paper > Experiments] We train a BiLSTM-CRF on the Nepali NER dataset.",
    "short",
    "Structural retrieval hands the model whole sections instead of blind windows. " * 30,
    "",
    "Résumé: métriques F1 et précision — 数据集",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding both exports (made once for this module)."""
    root = tmp_path_factory.mktemp("onnx-cache")
    OnnxEmbedder(cache_dir=root, quiet=True).model_file()
    OnnxEmbedder(quantize="int8", cache_dir=root, quiet=True).model_file()
    return root


@pytest.fixture(scope="module")
def torch_vectors() -> np.ndarray:
    return SentenceTransformerEmbedder(backend="torch", precision="fp32").embed_documents(TEXTS)


def test_fp32_matches_pytorch_up_to_float_noise(cache: Path, torch_vectors: np.ndarray) -> None:
    onnx = OnnxEmbedder(cache_dir=cache)
    vecs = onnx.embed_documents(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32
    assert np.abs(vecs - torch_vectors).max() < 1e-5
    # Batching and order do not change a text's vector.
    assert np.abs(onnx.embed_query(TEXTS[2]) - vecs[2]).max() < 1e-6
    assert np.allclose(onnx.embed_documents(TEXTS[::-1])[::-1], vecs, atol=1e-6)
    # Same vectors, so the same id: indexes and caches of either backend are interchangeable.
    assert onnx.model_id == SentenceTransformerEmbedder().model_id


def test_float32_default_uses_onnx_and_falls_back_to_torch(
        cache: Path, torch_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    # The default on a CPU without native bfloat16 (test_precision.py covers the choice).
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parent / "xdg-unused"))
    default = make_embedder("minilm-fp32")
    assert isinstance(default, SentenceTransformerEmbedder) and default.backend == "onnx"
    assert make_embedder("minilm-torch").backend == "torch"  # type: ignore[attr-defined]

    def broken(self: OnnxEmbedder) -> Path:
        raise EmbeddingError("export failed (simulated)")

    monkeypatch.setattr(OnnxEmbedder, "model_file", broken)
    with pytest.warns(RuntimeWarning, match="using PyTorch"):
        vecs = default.embed_documents(TEXTS)
    assert default.backend == "torch"
    assert np.abs(vecs - torch_vectors).max() < 1e-6
    forced = SentenceTransformerEmbedder(backend="onnx")
    with pytest.raises(EmbeddingError, match="simulated"):
        forced.embed_documents(TEXTS)


def test_export_is_cached_and_a_corrupt_file_is_exported_again(
        cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = OnnxEmbedder(cache_dir=cache).model_file()
    assert path.is_file() and path.parent == cache / "models"
    assert capsys.readouterr().err == ""  # cached: no export notice
    # A truncated export (a full disk, a killed copy) is replaced, not trusted.
    own = tmp_path / "cache"
    (own / "models").mkdir(parents=True)
    broken = own / "models" / path.name
    broken.write_bytes(path.read_bytes()[:1000])
    emb = OnnxEmbedder(cache_dir=own)
    vec = emb.embed_query("proxy pointer")
    assert "exporting all-MiniLM-L6-v2 to ONNX" in capsys.readouterr().err
    assert broken.stat().st_size == path.stat().st_size
    assert np.allclose(vec, OnnxEmbedder(cache_dir=cache).embed_query("proxy pointer"))
    assert not [p for p in (own / "models").iterdir() if p.name.startswith(".")]


def test_int8_is_close_deterministic_and_has_its_own_id(cache: Path) -> None:
    int8 = OnnxEmbedder(quantize="int8", cache_dir=cache)
    assert int8.model_id == "onnx-int8:all-MiniLM-L6-v2"
    vecs = int8.embed_documents(TEXTS)
    again = OnnxEmbedder(quantize="int8", cache_dir=cache).embed_documents(TEXTS)
    assert np.array_equal(vecs, again)
    fp32 = OnnxEmbedder(cache_dir=cache).embed_documents(TEXTS)
    cosine = (vecs * fp32).sum(axis=1)
    assert cosine.min() > 0.95 and not np.allclose(vecs, fp32, atol=1e-4)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_int8_spec_round_trips_and_an_int8_index_refuses_the_default(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    spec = make_embedder("minilm-int8")
    assert isinstance(spec, OnnxEmbedder) and spec.quantize == "int8"
    assert embedder_from_id(spec.model_id).model_id == spec.model_id
    idx = Index.build([SAMPLE], embedder=OnnxEmbedder(quantize="int8", cache_dir=cache))
    idx.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    assert loaded.embedder.model_id == "onnx-int8:all-MiniLM-L6-v2"
    with pytest.raises(IndexMismatchError, match="onnx-int8"):
        Index.load(tmp_path / "idx", embedder=SentenceTransformerEmbedder())


def test_bad_arguments_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="quantize"):
        OnnxEmbedder(quantize="int4")
    with pytest.raises(ConfigError, match="backend"):
        SentenceTransformerEmbedder(backend="tensorrt")
    with pytest.raises(ConfigError, match="batch_size"):
        OnnxEmbedder(batch_size=0)
    with pytest.raises(EmbeddingError, match="not a sentence-transformers model folder"):
        OnnxEmbedder(tmp_path).embed_query("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert SentenceTransformerEmbedder("st-model-not-local").backend == "torch"


def test_max_tokens_is_where_texts_are_cut_and_tokenizer_counts_them(cache: Path) -> None:
    fp32 = OnnxEmbedder(cache_dir=cache)
    for emb in (fp32, OnnxEmbedder(quantize="int8", cache_dir=cache)):
        assert emb.max_tokens == 256 and emb.tokenizer == WORD_PIECES
    # One word piece per word: 254 words + [CLS] + [SEP] fill the window, the rest is unread.
    words = ["harbor", "ships", "tide", "fees"] * 100
    assert count_tokens(" ".join(words)) == 400
    whole, window = fp32.embed_documents([" ".join(words), " ".join(words[:254])])
    assert np.abs(whole - window).max() < 1e-5
    assert np.abs(whole - fp32.embed_query(" ".join(words[:255]))).max() < 1e-5
    assert np.abs(whole - fp32.embed_query(" ".join(words[:200]))).max() > 1e-4
    # A model given as a folder states its files' window and counts with its tokenizer.json.
    folder = OnnxEmbedder(bundled.model_path(), cache_dir=cache)
    assert folder.max_tokens == 256 and isinstance(folder.tokenizer, TokenizerFile)
    text = "Résumé: métriques F1 et précision — 数据集"
    assert folder.tokenizer.count_tokens(text) == count_tokens(text)


def test_runs_on_every_core_give_the_vectors_of_one(cache: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    texts = [f"{t} {i}" for i in range(7) for t in TEXTS]  # several batches of 8
    one = OnnxEmbedder(quantize="int8", cache_dir=cache, workers=1).embed_documents(texts)
    four = OnnxEmbedder(quantize="int8", cache_dir=cache, workers=4)
    assert four.workers == 4
    assert np.allclose(four.embed_documents(texts), one, atol=1e-5)
    # By default one run per usable core; a Ray actor's OMP_NUM_THREADS asks for one run.
    assert OnnxEmbedder(cache_dir=cache).workers == len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert OnnxEmbedder(cache_dir=cache).workers == 1
    with pytest.raises(ConfigError, match="workers must be a positive integer"):
        OnnxEmbedder(workers=0)
