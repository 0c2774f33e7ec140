"""Ranking steps with one signature (:mod:`proxy_pointer.search.steps`): each runs alone on
candidates, the retriever runs them in order, and a caller adds its own."""

from __future__ import annotations

import numpy as np
from handbook import CHILD_Q

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.search.config import RetrievalConfig
from proxy_pointer.search.corpus import Corpus
from proxy_pointer.search.ranking import Candidate, group
from proxy_pointer.search.retrieval import Retriever
from proxy_pointer.search.steps import STEPS, Query, documents, rerank, run_steps, sections


def _candidates(index: Index, question: str) -> tuple[list[Candidate], Query]:
    reader = index.reader
    q = np.asarray(reader.embedder.embed_query(question), np.float32)
    scores, rows = reader.dense_search(q, 40)
    ranked = list(zip(rows.tolist(), scores.tolist(), strict=True))
    return group(reader, ranked), Query(question, question, q, RetrievalConfig())


def test_each_step_runs_alone_with_the_one_signature(index: Index) -> None:
    cands, query = _candidates(index, CHILD_Q)
    reader = index.reader
    # Off by default: the step hands its candidates back unchanged.
    assert documents(cands, query, reader) is cands
    assert rerank(cands, query, reader) is cands
    assert sections(cands, query, reader) is cands  # mode "chunks": nodes rank by best chunk
    collapsed = Query(query.question, query.text, query.vector,
                      RetrievalConfig(mode="collapsed"))
    ranked = sections(cands, collapsed, reader)
    # Every node of the hit document competes: ancestors without hits of their own join.
    assert {c.node_id for c in cands} < {c.node_id for c in ranked}


def test_the_documents_step_keeps_the_best_documents() -> None:
    idx = Index(embedder=HashEmbedder(64))
    idx.add_text("a.md", "# Alpha\n\n## Optics\n\nThe telescope mirror is ground from glass.\n")
    idx.add_text("b.md", "# Beta\n\n## Telescopes\n\nA telescope mirror and its mount.\n")
    cands, query = _candidates(idx, "telescope mirror")
    assert len({c.doc_id for c in cands}) == 2
    one = Query(query.question, query.text, query.vector, RetrievalConfig(documents=1))
    kept = documents(cands, one, idx.reader)
    assert len({c.doc_id for c in kept}) == 1 and all(c in cands for c in kept)


def test_the_retriever_runs_its_steps_in_order_and_a_caller_adds_one(index: Index) -> None:
    seen: list[str] = []

    def last_first(cands: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
        seen.append(query.question)
        return cands[::-1]

    plain = Retriever(index.reader).retrieve(CHILD_Q, budget=400, k=3)
    mine = Retriever(index.reader, steps=(*STEPS, last_first))
    res = mine.retrieve(CHILD_Q, budget=400, k=3)
    assert seen == [CHILD_Q] and "last_first" in res.timings
    assert [s.ref for s in res.sections] != [s.ref for s in plain.sections]
    # With the library's steps only, the result is the default's.
    again = Retriever(index.reader, steps=STEPS).retrieve(CHILD_Q, budget=400, k=3)
    assert again == plain


def test_run_steps_times_each_step_by_name(index: Index) -> None:
    cands, query = _candidates(index, CHILD_Q)
    timings: dict[str, float] = {}
    out = run_steps(STEPS, cands, query, index.reader, timings)
    assert out == cands and set(timings) == {"documents", "sections", "rerank"}
