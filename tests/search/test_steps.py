"""Ranking steps with one signature (:mod:`proxy_pointer.search.steps`): each runs alone on
candidates, the retriever runs them in order, and a caller adds its own."""

from __future__ import annotations

import numpy as np
from handbook import CHILD_Q

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.search.config import RetrievalConfig
from proxy_pointer.search.corpus import Corpus
from proxy_pointer.search.ranking import Candidate, chunk_candidates, chunk_ranking, group
from proxy_pointer.search.retrieval import Retriever
from proxy_pointer.search.steps import (
    STEPS,
    Query,
    boosts,
    documents,
    rerank,
    run_steps,
    sections,
    select,
)
from proxy_pointer.search.steps import group as group_step


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
    reader = index.reader
    q = np.asarray(reader.embedder.embed_query(CHILD_Q), np.float32)
    scores, rows = reader.dense_search(q, 40)
    chunks = chunk_candidates(reader, list(zip(rows.tolist(), scores.tolist(), strict=True)))
    query = Query(CHILD_Q, CHILD_Q, q, RetrievalConfig(k=3))
    timings: dict[str, float] = {}
    out = run_steps(STEPS, chunks, query, reader, timings)
    assert list(timings) == [s.__name__ for s in STEPS] == [
        "boosts", "statements", "group", "documents", "sections", "rerank", "select",
        "duplicates", "promote"]
    assert 0 < len(out) <= 3 and all(c.lines is not None for c in out)
    assert query.trace.nodes == len(group_step(chunks, query, reader))


def test_the_chunk_steps_work_on_chunks_and_group_merges_them(index: Index) -> None:
    """Before ``group`` a candidate is one chunk row; ``group`` gives what grouping the
    ranked rows gives; ``boosts`` moves a section named by its title words first."""
    reader = index.reader
    cands, query = _candidates(index, CHILD_Q)
    chunks = chunk_candidates(reader, chunk_ranking(cands))
    assert all(len(c.rows) == 1 for c in chunks)
    assert group_step(chunks, query, reader) == cands
    assert chunk_ranking(group_step(chunks, query, reader)) == chunk_ranking(cands)
    idx = Index(embedder=HashEmbedder(64))
    idx.add_text("f.md", "# Filing\n\n## Overview\n\nCash and cash flow were strong; cash "
                 "flow rose.\n\n## Consolidated Statements of Cash Flows\n\nNet cash 12\n")
    cands, query = _candidates(idx, "What does the cash flow statement show?")
    chunks = chunk_candidates(idx.reader, chunk_ranking(cands))
    moved = boosts(chunks, query, idx.reader)
    assert moved[0].node_id != chunks[0].node_id
    assert idx.reader.crumbs(moved[0].rows)[0][-1] == "Consolidated Statements of Cash Flows"


def test_a_step_can_be_removed_or_put_between_two(index: Index) -> None:
    """The list is the caller's: without ``duplicates`` no copy is merged (its place is not
    held by another), and a step placed before ``select`` sees nodes, not sections."""
    seen: list[bool] = []

    def before_select(cands: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
        seen.append(all(c.lines is None for c in cands))
        return cands

    at = STEPS.index(select)
    steps = (*STEPS[:at], before_select, *STEPS[at:])
    res = Retriever(index.reader, steps=steps).retrieve(CHILD_Q, budget=400, k=3)
    assert seen == [True] and list(res.timings).index("before_select") < list(
        res.timings).index("select")
    plain = Retriever(index.reader).retrieve(CHILD_Q, budget=400, k=3)
    assert [s.ref for s in res.sections] == [s.ref for s in plain.sections]
    no_select = Retriever(index.reader, steps=[s for s in STEPS if s is not select])
    # packing selects what the steps did not: the same sections
    assert [s.ref for s in no_select.retrieve(CHILD_Q, budget=400, k=3).sections] == [
        s.ref for s in plain.sections]
