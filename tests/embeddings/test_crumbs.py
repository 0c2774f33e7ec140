"""Breadcrumbs embedded once: each distinct part embedded once, vectors composed as mean
pooling would weigh them, its own model id."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from proxy_pointer.embeddings import (
    HashEmbedder,
    RecordingEmbedder,
    embedder_from_id,
    make_embedder,
)
from proxy_pointer.embeddings.crumbs import SUFFIX, CrumbEmbedder
from proxy_pointer.parse.chunking import ChunkConfig, breadcrumb_text, split_breadcrumb
from proxy_pointer.tokens import WORD_PIECES

HEAD = "[ACME 10-K > Item 7. MD&A > Liquidity]"
TEXTS = [
    f"{HEAD}\nCash from operations was $1,577 million.",
    f"{HEAD}\nCapital expenditures were $512 million.",
    "[OTHER 10-K > Item 7. MD&A > Liquidity]\nCash from operations was $1,577 million.",
    "no breadcrumb: a plain text",
    f"{HEAD}\n",
]


def test_split_breadcrumb_reads_what_the_chunker_writes() -> None:
    head = breadcrumb_text(["ACME 10-K", "Item 7. MD&A", "Liquidity [restated]"])
    assert split_breadcrumb(f"{head}\nbody\nmore") == (head, "body\nmore")
    assert split_breadcrumb("[link](x) text\nbody") == ("", "[link](x) text\nbody")
    assert split_breadcrumb("[A > B]") == ("", "[A > B]")  # no body line: not a chunk's
    assert ChunkConfig().max_breadcrumb_tokens >= WORD_PIECES.count_tokens(head)


def test_each_part_is_embedded_once_and_composed_by_its_word_pieces() -> None:
    inner = RecordingEmbedder(32)
    emb = CrumbEmbedder(inner)
    vecs = emb.embed_documents(TEXTS)
    assert vecs.shape == (5, 32) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    embedded = list(inner.texts)
    assert inner.calls == 1 and sorted(embedded) == sorted({
        HEAD, "[OTHER 10-K > Item 7. MD&A > Liquidity]", "Cash from operations was $1,577 "
        "million.", "Capital expenditures were $512 million.", "no breadcrumb: a plain text"})
    part = dict(zip(embedded, HashEmbedder(32).embed_documents(embedded), strict=True))
    n = emb.tokenizer.count_tokens
    body = "Cash from operations was $1,577 million."
    expected = n(HEAD) * part[HEAD] + n(body) * part[body]
    assert np.allclose(vecs[0], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(vecs[3], part["no breadcrumb: a plain text"], atol=1e-6)
    assert np.allclose(vecs[4], part[HEAD], atol=1e-6)  # a breadcrumb and an empty body
    # Another call reuses every part it has seen: only the new body is embedded.
    seen = len(inner.texts)
    again = emb.embed_documents([TEXTS[1], f"{HEAD}\nA new paragraph."])
    assert inner.calls == 2 and inner.texts[seen:] == ["A new paragraph."]
    assert np.allclose(again[0], vecs[1], atol=1e-6)


def test_the_body_weighs_what_the_joined_text_would_keep() -> None:
    inner = RecordingEmbedder(16, max_tokens=40)
    emb = CrumbEmbedder(inner)
    long_body = " ".join(["revenue"] * 200)
    vec = emb.embed_documents([f"{HEAD}\n{long_body}"])[0]
    part = dict(zip([HEAD, long_body], HashEmbedder(16).embed_documents([HEAD, long_body]),
                    strict=True))
    n_head = emb.tokenizer.count_tokens(HEAD)
    expected = n_head * part[HEAD] + (38 - n_head) * part[long_body]
    assert np.allclose(vec, expected / np.linalg.norm(expected), atol=1e-6)


def test_its_id_queries_and_memory() -> None:
    inner = RecordingEmbedder(24, model_id="test:24")
    emb = CrumbEmbedder(inner, memory=2)
    assert emb.model_id == "test:24" + SUFFIX
    assert (emb.dimension, emb.max_tokens, emb.tokenizer) == (24, inner.max_tokens,
                                                             inner.tokenizer)
    assert np.array_equal(emb.embed_query("cash"), inner.embed_query("cash"))
    emb.embed_documents(TEXTS[:2])  # three parts, two remembered
    seen = len(inner.texts)
    emb.embed_documents(TEXTS[:2])
    assert len(inner.texts) == seen + 1  # the oldest part was forgotten and embedded again
    rebuilt = embedder_from_id("hash:64+crumbs")
    assert isinstance(rebuilt, CrumbEmbedder) and rebuilt.model_id == "hash:64+crumbs"
    assert make_embedder("hash:64").model_id == "hash:64"
    with pytest.raises(TypeError):
        emb.embed_documents("one string")


def test_threads_get_the_vectors_one_thread_gets() -> None:
    emb = CrumbEmbedder(RecordingEmbedder(32), memory=3)
    texts = [f"[D{i % 7} > S{i % 5}]\nparagraph {i % 11}" for i in range(200)]
    alone = CrumbEmbedder(RecordingEmbedder(32)).embed_documents(texts)
    out: dict[int, np.ndarray] = {}

    def work(k: int) -> None:
        out[k] = emb.embed_documents(texts[k::4])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert np.allclose(out[k], alone[k::4], atol=1e-6)
