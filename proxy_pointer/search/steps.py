"""Ranking steps with one signature: candidates in, candidates out, with the question and
the reader, run in order by the retriever.

A step is any callable ``step(candidates, query, corpus) -> candidates``: it reads the
:class:`Query` (the question as asked and as expanded, its vector, the request's
:class:`~.config.RetrievalConfig`) and the :class:`~.corpus.Corpus`, and returns the
candidates in their new order (it may drop some, or add an ancestor). :data:`STEPS` are the
library's, in the order they run; a caller adds its own through :class:`Retriever(steps=...)
<.retrieval.Retriever>`, e.g. ``(*STEPS, my_step)``. Each step is timed under its name.
The steps before them (fusing dense and BM25, boosting named titles and needed statements,
grouping chunks into candidates) read chunk rows, not candidates; selection and packing come
after, in :meth:`Retriever.retrieve <.retrieval.Retriever.retrieve>`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .config import RetrievalConfig
from .ranking import Candidate, keep_documents, rank_nodes
from .rerank import rerank as rerank_by_llm

if TYPE_CHECKING:
    from .corpus import Corpus

__all__ = ["STEPS", "Query", "Step", "documents", "rerank", "run_steps", "sections"]


@dataclass(frozen=True, eq=False)
class Query:
    """One question as the steps read it."""

    question: str  # as asked (trimmed to what search reads)
    text: str  # as expanded: synonyms applied, the line items its concepts need
    vector: np.ndarray  # the embedded question (float32)
    config: RetrievalConfig  # the request: budget, k, filters, access, tuning


#: A ranking step: candidates in, candidates out.
Step = Callable[[list[Candidate], Query, "Corpus"], list[Candidate]]


def documents(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """Two-stage search (``config.documents`` > 0): only the candidates of that many best
    documents (:func:`~.ranking.keep_documents`); off by default."""
    tuning = query.config.tuning
    if not tuning.documents:
        return candidates
    return keep_documents(corpus, candidates, query.vector, tuning.documents,
                          rrf_k=tuning.rrf_k)


def sections(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """Nodes ranked as sections by ``config.mode`` (:func:`~.ranking.rank_nodes`)."""
    tuning = query.config.tuning
    return rank_nodes(corpus, candidates, query.vector, tuning.mode, beam=tuning.beam,
                      rrf_k=tuning.rrf_k)


def rerank(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """The best ``config.rerank_top`` reordered by ``config.rerank_llm`` by their
    breadcrumbs (:mod:`.rerank`); off unless an LLM is given."""
    tuning = query.config.tuning
    if tuning.rerank_llm is None:
        return candidates
    return rerank_by_llm(corpus, candidates, query.question, tuning.rerank_llm,
                         top=tuning.rerank_top)


#: The library's ranking steps, in the order they run.
STEPS: tuple[Step, ...] = (documents, sections, rerank)


def run_steps(steps: Sequence[Step], candidates: list[Candidate], query: Query,
              corpus: Corpus, timings: dict[str, float]) -> list[Candidate]:
    """``candidates`` through every step in order, each timed under its name."""
    for step in steps:
        t = time.perf_counter()
        candidates = step(candidates, query, corpus)
        name = getattr(step, "__name__", type(step).__name__)
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t
    return candidates
