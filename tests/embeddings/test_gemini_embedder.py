"""GeminiEmbedder against a local stand-in server on 127.0.0.1: the request, batching,
retries and the errors a user sees."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from gemini_server import FakeGemini, Reply, default_vector, error_reply

from proxy_pointer.embeddings import (
    Embedder,
    GeminiEmbedder,
    make_embedder,
)
from proxy_pointer.errors import ConfigError, EmbeddingError

# ---------------------------------------------------------------------------------------------
# GeminiEmbedder against a local fake server
# ---------------------------------------------------------------------------------------------

KEY = "test-key"


@pytest.fixture
def gemini():
    with FakeGemini(api_key=KEY) as server:
        yield server


@pytest.fixture
def no_key_env(monkeypatch):
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def sleeps():
    return []


def _gemini_embedder(server: FakeGemini, sleeps: list[float], **kwargs) -> GeminiEmbedder:
    options = {"api_key": KEY, "base_url": server.base_url, "sleep": sleeps.append, **kwargs}
    return GeminiEmbedder(**options)


def _expected(texts: Sequence[str], dim: int) -> np.ndarray:
    raw = np.asarray([default_vector(t, dim) for t in texts], dtype=np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_gemini_builds_the_request(gemini, sleeps, no_key_env):
    emb = _gemini_embedder(gemini, sleeps)
    assert emb.model_id == "gemini:gemini-embedding-001:768" and emb.dimension == 768
    assert isinstance(emb, Embedder)
    vecs = emb.embed_documents(["first passage", "second passage"])
    (req,) = gemini.requests
    assert req.method == "POST"
    assert req.model == "gemini-embedding-001" and req.action == "batchEmbedContents"
    assert req.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert req.api_key == KEY and req.headers["x-goog-api-key"] == KEY
    assert req.texts == ["first passage", "second passage"]
    assert req.task_types == ["RETRIEVAL_DOCUMENT"] * 2
    assert req.output_dimensionalities == [768, 768]
    assert all(r["model"] == "models/gemini-embedding-001" for r in req.body["requests"])
    # Gemini's truncated vectors are not unit length; ours are.
    assert vecs.shape == (2, 768) and vecs.dtype == np.float32
    np.testing.assert_allclose(vecs, _expected(["first passage", "second passage"], 768), rtol=1e-5)
    q = emb.embed_query("what is a passage?")
    assert q.shape == (768,)
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5
    assert gemini.requests[-1].task_types == ["RETRIEVAL_QUERY"]
    assert emb.embed_documents([]).shape == (0, 768)
    assert len(gemini.requests) == 2 and not sleeps


def test_gemini_batches_at_most_100_texts(gemini, sleeps):
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=32)
    texts = [f"chunk number {i}" for i in range(250)]
    vecs = emb.embed_documents(texts)
    sizes = [len(r.texts) for r in gemini.requests]
    assert sizes == [100, 100, 50]
    assert [t for r in gemini.requests for t in r.texts] == texts
    np.testing.assert_allclose(vecs, _expected(texts, 32), rtol=1e-5)
    small = _gemini_embedder(gemini, sleeps, output_dimensionality=32, batch_size=7)
    gemini.reset()
    small.embed_documents(texts[:20])
    assert [len(r.texts) for r in gemini.requests] == [7, 7, 6]
    with pytest.raises(ConfigError):
        _gemini_embedder(gemini, sleeps, batch_size=101)


def test_gemini_retries_429_and_503_then_succeeds(gemini, sleeps):
    gemini.enqueue(error_reply(429, "quota"), error_reply(503, "overloaded"))
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=16, initial_delay=1.0)
    vecs = emb.embed_documents(["a", "b"])
    assert len(gemini.requests) == 3
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0  # exponential, with jitter
    np.testing.assert_allclose(vecs, _expected(["a", "b"], 16), rtol=1e-5)


def test_gemini_honours_server_retry_delay(gemini, sleeps):
    gemini.enqueue(error_reply(429, "slow down", retry_delay=7), Reply(status=200))
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=16)
    emb.embed_documents(["a"])
    assert len(sleeps) == 1 and sleeps[0] >= 7.0


def test_gemini_gives_up_after_max_retries(gemini, sleeps):
    gemini.enqueue(*[error_reply(503, "still down")] * 10)
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=16, max_retries=3)
    with pytest.raises(EmbeddingError, match=r"gave up after 4 attempts: HTTP 503: still down"):
        emb.embed_documents(["a"])
    assert len(gemini.requests) == 4 and len(sleeps) == 3
    assert sleeps == sorted(sleeps)


def test_gemini_rejected_key_fails_at_once(gemini, sleeps):
    gemini.enqueue(error_reply(403, "Permission denied: consumer has been suspended"))
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=16)
    with pytest.raises(EmbeddingError, match=r"rejected the API key.*403.*GEMINI_API_KEY"):
        emb.embed_documents(["a"])
    assert len(gemini.requests) == 1 and not sleeps

    wrong = _gemini_embedder(gemini, sleeps, output_dimensionality=16, api_key="wrong")
    with pytest.raises(EmbeddingError, match=r"rejected the API key.*400"):
        wrong.embed_query("a")
    assert len(gemini.requests) == 2 and not sleeps


def test_gemini_other_client_errors_fail_at_once(gemini, sleeps):
    gemini.enqueue(error_reply(404, "models/nope is not found"))
    emb = _gemini_embedder(gemini, sleeps, model="nope", output_dimensionality=16)
    with pytest.raises(EmbeddingError, match="'nope' not found"):
        emb.embed_documents(["a"])
    gemini.enqueue(error_reply(400, "Request payload size exceeds the limit"))
    with pytest.raises(EmbeddingError, match="payload size"):
        emb.embed_documents(["a"])
    assert len(gemini.requests) == 2 and not sleeps


def test_gemini_timeout(gemini, sleeps):
    gemini.enqueue(Reply(delay=30))
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=16, timeout=0.3, max_retries=0)
    with pytest.raises(EmbeddingError, match=r"gave up after 1 attempt: no reply within 0.3 s"):
        emb.embed_documents(["a"])
    # A timeout is transient: retried like a 503.
    gemini.reset()
    gemini.enqueue(Reply(delay=30))
    retrying = _gemini_embedder(gemini, sleeps, output_dimensionality=16, timeout=0.3)
    assert retrying.embed_documents(["a"]).shape == (1, 16)
    assert len(gemini.requests) == 2 and len(sleeps) == 1


def test_gemini_network_errors_are_retried(gemini, sleeps):
    gemini.enqueue(Reply(drop=True))
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=16)
    assert emb.embed_documents(["a"]).shape == (1, 16)
    assert len(sleeps) == 1

    with FakeGemini() as gone:
        url = gone.base_url  # a port nobody listens on once this server stops
    sleeps.clear()
    dead = GeminiEmbedder(api_key=KEY, base_url=url, sleep=sleeps.append, max_retries=2)
    with pytest.raises(EmbeddingError, match=r"gave up after 3 attempts: cannot reach Gemini"):
        dead.embed_documents(["a"])
    assert len(sleeps) == 2


def test_gemini_malformed_replies(gemini, sleeps):
    emb = _gemini_embedder(gemini, sleeps, output_dimensionality=16)
    gemini.enqueue(Reply(body={"embeddings": [{"values": [1.0] * 16}]}))
    with pytest.raises(EmbeddingError, match="1 embeddings for 2 texts"):
        emb.embed_documents(["a", "b"])
    gemini.enqueue(Reply(body={"embeddings": [{"values": [1.0] * 8}]}))
    with pytest.raises(EmbeddingError, match="8-dimensional vector, expected 16"):
        emb.embed_documents(["a"])
    gemini.enqueue(Reply(raw=b"<html>not json</html>"))
    with pytest.raises(EmbeddingError, match="malformed reply"):
        emb.embed_documents(["a"])
    assert not sleeps


def test_gemini_missing_key_names_the_variable(no_key_env):
    with pytest.raises(EmbeddingError, match="GEMINI_API_KEY"):
        GeminiEmbedder()
    with pytest.raises(EmbeddingError, match="GEMINI_API_KEY"):
        make_embedder("gemini")


def test_gemini_key_from_environment(gemini, sleeps, no_key_env, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    emb = GeminiEmbedder(base_url=gemini.base_url, output_dimensionality=8, sleep=sleeps.append)
    emb.embed_query("x")
    assert gemini.requests[-1].api_key == KEY
    monkeypatch.setenv("GEMINI_API_KEY", "preferred")  # wins over GOOGLE_API_KEY
    with pytest.raises(EmbeddingError, match="rejected"):
        GeminiEmbedder(base_url=gemini.base_url, output_dimensionality=8).embed_query("x")
    assert gemini.requests[-1].api_key == "preferred"


def test_gemini_argument_checks():
    with pytest.raises(ConfigError):
        GeminiEmbedder(api_key=KEY, output_dimensionality=0)
    with pytest.raises(ConfigError):
        GeminiEmbedder(api_key=KEY, max_retries=-1)
    with pytest.raises(ConfigError, match="output_dimensionality"):
        GeminiEmbedder("some-new-model", api_key=KEY, output_dimensionality=None)
    assert GeminiEmbedder(api_key=KEY, output_dimensionality=None).dimension == 3072


