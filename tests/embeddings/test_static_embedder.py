"""Fast mode: the static embedder distilled offline from the bundled MiniLM (model2vec)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("model2vec")

from proxy_pointer.embeddings import StaticEmbedder, make_embedder
from proxy_pointer.embeddings.static import FAST_MODEL_ID, distilled_minilm
from proxy_pointer.errors import EmbeddingError, IndexMismatchError
from proxy_pointer.index import Index
from proxy_pointer.parse.chunking import ChunkConfig
from proxy_pointer.tokens import WORD_PIECES, TokenizerFile, count_tokens

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user cache folder holding the distilled model (distilled once for this module)."""
    root = tmp_path_factory.mktemp("cache")
    distilled_minilm(root, quiet=True)
    return root


@pytest.fixture
def fast(cache: Path, monkeypatch: pytest.MonkeyPatch) -> StaticEmbedder:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return StaticEmbedder()


def test_distillation_is_offline_cached_and_deterministic(cache: Path, tmp_path: Path) -> None:
    first = distilled_minilm(cache, quiet=True) / "model.safetensors"
    again = distilled_minilm(tmp_path, quiet=True) / "model.safetensors"  # a second machine
    digest = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (first, again)]
    assert digest[0] == digest[1]
    assert not list(tmp_path.glob("models/.*tmp*"))  # nothing half-written is left


def test_vectors_are_unit_norm_deterministic_and_meaningful(fast: StaticEmbedder) -> None:
    texts = ["The harbor admits ships at high tide.", "Apple trees are pruned in winter.",
             "Ships enter the port when the tide is high."]
    a = fast.embed_documents(texts)
    assert a.shape == (3, 256) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(a, StaticEmbedder().embed_documents(texts))
    q = fast.embed_query("When may ships enter the harbor?")
    assert q @ a[0] > q @ a[1] and q @ a[2] > q @ a[1]
    assert fast.embed_documents([]).shape == (0, 256)
    with pytest.raises(TypeError):
        fast.embed_documents("one string")


def test_fast_index_round_trips_and_refuses_another_embedder(fast: StaticEmbedder,
                                                             tmp_path: Path) -> None:
    assert make_embedder("fast").model_id == FAST_MODEL_ID == fast.model_id
    assert make_embedder(FAST_MODEL_ID).model_id == FAST_MODEL_ID
    idx = Index.build([SAMPLE], embedder=fast)
    idx.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")  # the manifest names the fast embedder
    assert loaded.embedder.model_id == FAST_MODEL_ID
    q = "Which dataset is used for Nepali named entity recognition?"
    assert [s.ref for s in loaded.retrieve(q).sections] == [s.ref for s in idx.retrieve(q).sections]
    with pytest.raises(IndexMismatchError, match="fast:minilm-static-v1"):
        Index.load(tmp_path / "idx", embedder=make_embedder("hash:256"))


def test_a_folder_that_is_no_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="not a loadable model2vec model"):
        StaticEmbedder(tmp_path)


def test_fast_mode_reads_512_word_pieces_of_the_minilm_vocabulary(fast: StaticEmbedder,
                                                                  cache: Path) -> None:
    # model2vec truncates at the model's max_length: 512 unless its config says otherwise.
    assert fast.max_tokens == 512 and fast.tokenizer == WORD_PIECES
    # Distillation keeps MiniLM's tokenizer, so the chunker's word pieces are fast mode's.
    folder = distilled_minilm(cache, quiet=True)
    own = TokenizerFile(folder / "tokenizer.json")
    for text in ["The harbor admits ships at high tide.", "Résumé — métriques F1, 数据集",
                 "unbelievably tokenization-heavy hyphenated-compounds 2022-10-K", ""]:
        assert own.count_tokens(text) == count_tokens(text), text
    other = StaticEmbedder(folder)  # the same model named by its folder
    assert other.max_tokens == 512 and isinstance(other.tokenizer, TokenizerFile)
    # A window larger than the default chunks: they stay the default size.
    assert Index(embedder=fast).chunk_config == ChunkConfig().fitted(512)


def test_distillation_says_one_line_and_silences_the_libraries_bars(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The libraries' progress bars (model2vec's "Encoding tokens", transformers' "Loading
    weights") are dropped; our one line stays. A stand-in distills (the real one takes
    30-80 s and is run once by the ``cache`` fixture)."""
    import model2vec.distill
    from tqdm import tqdm

    class Distilled:
        def save_pretrained(self, path: str) -> None:
            Path(path).mkdir(parents=True)
            (Path(path) / "model.safetensors").write_bytes(b"stand-in")

    def distill(**_: object) -> Distilled:
        for _ in tqdm(range(300), desc="Encoding tokens", mininterval=0):
            pass
        return Distilled()

    monkeypatch.setattr(model2vec.distill, "distill", distill)
    folder = distilled_minilm(tmp_path)
    assert (folder / "model.safetensors").read_bytes() == b"stand-in"
    err = capsys.readouterr().err
    assert "Encoding tokens" not in err
    (line,) = err.splitlines()
    assert line.startswith("proxy-pointer: distilling the fast embedder") and str(folder) in line
    assert distilled_minilm(tmp_path) == folder and capsys.readouterr().err == ""  # cached


def test_a_fast_index_is_refined_by_minilm_to_the_defaults_ranking(fast: StaticEmbedder
                                                                   ) -> None:
    """With a pool that holds every chunk, a refined fast index ranks as the default's does:
    the static vectors only choose the pool."""
    from proxy_pointer.embeddings import default_embedder

    refined = Index.build([SAMPLE], embedder=fast)
    assert refined.refiner is not None
    default = Index.build([SAMPLE], embedder=default_embedder())
    assert len(refined.reader.chunks) < 1000
    for q in ("Which dataset is used for Nepali named entity recognition?",
              "What baselines do they compare against?"):
        got = refined.retrieve(q, refine=1000)
        want = default.retrieve(q)
        assert [s.ref for s in got.sections] == [s.ref for s in want.sections]
        # MiniLM's cosines (to bfloat16's batch-to-batch noise), not the static model's.
        want_rel = [s.relevance for s in want.sections]
        assert np.allclose([s.relevance for s in got.sections], want_rel, atol=2e-3)
        alone = refined.retrieve(q, refine=0)
        assert not np.allclose([s.relevance for s in alone.sections][:len(want_rel)],
                               want_rel[:len(alone.sections)], atol=2e-3)
