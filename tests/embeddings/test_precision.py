"""The bundled model in bfloat16: when it is chosen, how close its vectors are, and queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.embeddings import SentenceTransformerEmbedder, embedder_from_id, make_embedder
from proxy_pointer.embeddings import cpu as cpu_module
from proxy_pointer.embeddings import sentence_transformers as st
from proxy_pointer.errors import ConfigError

TEXTS = [
    "[ACME_2022_10K > Item 7. MD&A > Liquidity] Cash provided by operating activities was "
    "$1,577 million, down from $1,802 million, mainly on working capital.",
    "short",
    "Operating lease right-of-use assets $1,451 $1,437\nCurrent portion of lease liabilities 276",
    "Structural retrieval hands the model whole sections instead of blind windows. " * 30,
    "Résumé: métriques F1 et précision — 数据集",
]


def _cpuinfo(tmp_path: Path, flags: str) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: {flags}\n\n"
                    "processor\t: 1\nflags\t\t: fpu amx_bf16\n")
    return str(path)


def test_native_bf16_reads_the_first_flags_line(tmp_path: Path) -> None:
    assert st.native_bf16(_cpuinfo(tmp_path / "a", "fpu sse avx512f avx512_bf16"))
    assert st.native_bf16(_cpuinfo(tmp_path / "b", "fpu amx_tile amx_bf16 amx_int8"))
    assert not st.native_bf16(_cpuinfo(tmp_path / "c", "fpu sse avx2 avx512f avx512_vnni"))
    assert not st.native_bf16(str(tmp_path / "no-such-file"))


#: The kinds of CPU the default chooses between, and what each gets.
CPUS = {
    "amx": ("avx2 avx512f avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8", "bf16"),
    "avx512-bf16": ("avx2 avx512f avx512_vnni avx512_bf16", "bf16"),
    "avx512-vnni": ("avx2 avx512f avx512_vnni", "fp32"),
    "avx2": ("avx2 fma", "fp32"),
    "no-x86-flags": ("fp asimd", "fp32"),
}


@pytest.fixture(params=sorted(CPUS))
def cpu(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> str:
    """Each kind of CPU, whichever this one is: its expected document path."""
    flags, path = CPUS[request.param]
    info = _cpuinfo(tmp_path / request.param, flags)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setattr(cpu_module, "cpu_kind", lambda cpuinfo="/proc/cpuinfo", isa=None:
                        real_cpu_kind(info, isa))
    return path


real_cpu_kind = cpu_module.cpu_kind


def test_the_default_follows_the_cpu(cpu: str) -> None:
    default = make_embedder("minilm")
    assert cpu_module.cpu_kind().document_path() == cpu
    assert isinstance(default, SentenceTransformerEmbedder)
    assert default.precision == cpu
    assert default.backend == ("torch" if cpu == "bf16" else "onnx")
    assert default.batch_size == (16 if cpu == "bf16" else 8)
    # One id on every CPU: int8 (faster without AMX) moves vectors, so it is an option.
    assert default.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    # The index's recorded id rebuilds the same embedder on any machine.
    again = embedder_from_id(default.model_id)
    assert type(again) is type(default) and again.model_id == default.model_id


@pytest.fixture(params=[True, False], ids=["bf16-cpu", "fp32-cpu"])
def cpu_has_bf16(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both kinds of CPU, whichever this one is."""
    monkeypatch.setattr(st, "native_bf16", lambda cpuinfo="/proc/cpuinfo": request.param)
    return bool(request.param)


def test_auto_precision_follows_the_cpu_for_the_bundled_model_only(cpu_has_bf16: bool) -> None:
    default = SentenceTransformerEmbedder()
    expected = "bf16" if cpu_has_bf16 else "fp32"
    assert default.precision == expected
    assert default.backend == ("torch" if cpu_has_bf16 else "onnx")
    assert default.batch_size == (16 if cpu_has_bf16 else 8)
    # Forced precisions, and the pre-ONNX float32 path, whatever the CPU.
    assert make_embedder("minilm-fp32").precision == "fp32"  # type: ignore[attr-defined]
    assert make_embedder("minilm-bf16").precision == "bf16"  # type: ignore[attr-defined]
    torch_fp32 = make_embedder("minilm-torch")
    assert (torch_fp32.backend, torch_fp32.precision) == ("torch", "fp32")  # type: ignore[attr-defined]
    # Another model keeps float32 unless asked: its bfloat16 quality is not measured here.
    assert SentenceTransformerEmbedder("st-model-not-local").precision == "fp32"
    # One model, one id: an index made in either precision opens with the other.
    ids = {make_embedder(s).model_id for s in ("minilm-fp32", "minilm-bf16", "minilm-torch")}
    assert ids == {default.model_id} == {"sentence-transformers:all-MiniLM-L6-v2"}
    assert embedder_from_id(default.model_id).precision == expected  # type: ignore[attr-defined]


def test_bad_precision_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="precision must be one of"):
        SentenceTransformerEmbedder(precision="fp16")
    with pytest.raises(ConfigError, match="ONNX backend runs in float32"):
        SentenceTransformerEmbedder(backend="onnx", precision="bf16")
    with pytest.raises(ConfigError, match="batch_size"):
        SentenceTransformerEmbedder(precision="bf16", batch_size=0)
    from proxy_pointer.embeddings import Bf16Embedder

    # The checks both folder backends share (FolderEmbedder), not only ONNX Runtime's.
    for bad in (0, -1, 1.5):
        with pytest.raises(ConfigError, match="workers must be a positive integer"):
            Bf16Embedder(workers=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="batch_size must be a positive integer"):
            Bf16Embedder(batch_size=bad)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def fp32_vectors() -> np.ndarray:
    return make_embedder("minilm-fp32").embed_documents(TEXTS)


def test_bf16_vectors_are_close_to_fp32(fp32_vectors: np.ndarray) -> None:
    bf16 = SentenceTransformerEmbedder(precision="bf16")
    vecs = bf16.embed_documents(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    cosine = (vecs * fp32_vectors).sum(axis=1)
    assert cosine.min() > 0.9995, cosine
    assert not np.array_equal(vecs, fp32_vectors)  # it is bfloat16 arithmetic, not fp32
    # Order and batching keep each text's vector (to bfloat16 noise).
    again = bf16.embed_documents(TEXTS[::-1])[::-1]
    assert ((again * vecs).sum(axis=1)).min() > 0.9995


def test_bf16_embeds_queries_in_float32(fp32_vectors: np.ndarray) -> None:
    bf16 = SentenceTransformerEmbedder(precision="bf16")
    query = bf16.embed_query(TEXTS[0])
    # The float32 vector (ONNX Runtime's), not the bfloat16 one the documents get.
    assert np.abs(query - fp32_vectors[0]).max() < 1e-5
    assert np.abs(bf16.embed_documents(TEXTS[:1])[0] - query).max() > 1e-4


def _folder_with_pooling(tmp_path: Path, **pooling: bool) -> Path:
    """A copy of the bundled model's folder (weights linked) with another pooling config."""
    import json

    from proxy_pointer import bundled

    source, folder = bundled.model_path(), tmp_path / "model"
    for path in source.rglob("*"):
        if path.is_file():
            target = folder / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    config = folder / "1_Pooling" / "config.json"
    data = {**json.loads(config.read_text()), **pooling}
    config.unlink()
    config.write_text(json.dumps(data))
    return folder


def test_bf16_refuses_what_it_cannot_pool(tmp_path: Path) -> None:
    from proxy_pointer.embeddings import Bf16Embedder
    from proxy_pointer.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match="not a sentence-transformers model folder"):
        Bf16Embedder(tmp_path)
    cls = _folder_with_pooling(tmp_path, pooling_mode_mean_tokens=False,
                               pooling_mode_cls_token=True)
    with pytest.raises(EmbeddingError, match="bfloat16 backend supports mean pooling only"):
        Bf16Embedder(cls).embed_documents(["x"])
    with pytest.raises(ConfigError, match="bundled model or a local"):
        SentenceTransformerEmbedder("some-org/some-hub-model", precision="bf16")


def test_a_local_mean_pooling_folder_runs_in_bf16(tmp_path: Path,
                                                  fp32_vectors: np.ndarray) -> None:
    folder = _folder_with_pooling(tmp_path)
    emb = SentenceTransformerEmbedder(folder, precision="bf16")
    assert emb.model_id == f"sentence-transformers:{folder}" and emb.max_tokens == 256
    cosine = (emb.embed_documents(TEXTS) * fp32_vectors).sum(axis=1)
    assert cosine.min() > 0.9995


def test_bf16_runs_on_every_core_give_the_vectors_of_one(monkeypatch: pytest.MonkeyPatch,
                                                         fp32_vectors: np.ndarray) -> None:
    from proxy_pointer.embeddings import Bf16Embedder

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    texts = TEXTS * 7  # several batches of 16
    one = Bf16Embedder(workers=1).embed_documents(texts)
    three = Bf16Embedder(workers=3)
    assert three.workers == 3
    assert np.allclose(three.embed_documents(texts), one, atol=1e-5)  # same batches
    assert ((one[: len(TEXTS)] * fp32_vectors).sum(axis=1)).min() > 0.9995
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert Bf16Embedder().workers == 1  # a Ray actor's bound: one run of its threads
