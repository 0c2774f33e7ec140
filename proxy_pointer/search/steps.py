"""Ranking steps with one signature: candidates in, candidates out, with the question and
the reader, run in order by the retriever.

A step is any callable ``step(candidates, query, corpus) -> candidates``: it reads the
:class:`Query` (the question as asked, as read and as expanded, its vector, the rows it may
search, the request's :class:`~.config.RetrievalConfig`) and the :class:`~.corpus.Corpus`,
and returns the candidates in their new order (it may drop some, or add an ancestor).
:data:`STEPS` are the library's, in the order they run, each timed under its name:

* on chunks (one candidate per chunk row, as the search ranked them): :func:`boosts`
  (sections the question names by their title words first), :func:`statements` (the
  statements its concepts need first);
* :func:`group` merges the chunks of one node into one candidate;
* on nodes: :func:`documents` (two-stage search), :func:`sections` (nodes ranked as
  sections by the mode), :func:`rerank` (an LLM's order);
* :func:`select` (the best nodes with the lines each hands over), :func:`duplicates`
  (copies in other documents merged, the best ``k`` kept), :func:`promote` (siblings
  replaced by their parent when it fits).

Packing then cuts the selected sections into the budget. A caller replaces, removes or adds
steps through :class:`Retriever(steps=...) <.retrieval.Retriever>`, e.g. ``(*STEPS,
my_step)`` (a step after :func:`select` sees the selected sections, each with its
``lines``). Before the steps the search fuses the dense ranking (chunks under a heading the
question names by its label raised: :func:`~.ranking.boost_titles`) with BM25's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from .config import RetrievalConfig
from .packing import fits_whole
from .question import Question
from .ranking import (
    Candidate,
    chunk_candidates,
    chunk_ranking,
    keep_documents,
    merge_duplicates,
    merge_nodes,
    rank_nodes,
)
from .ranking import boost_named as boost_named_titles
from .ranking import promote as promote_parents
from .ranking import select as select_sections
from .rerank import rerank as rerank_by_llm
from .statements import boost_statements

if TYPE_CHECKING:
    from .corpus import Corpus

__all__ = ["STEPS", "Query", "Step", "Trace", "boosts", "documents", "duplicates", "group",
           "promote", "rerank", "run_steps", "sections", "select", "selected", "statements"]


@dataclass(eq=False)
class Trace:
    """What the steps report back to the result: the sections :func:`statements` moved
    first (``(doc_id, node_id)``, named in the result's expansion) and the number of nodes
    :func:`select` chose among (the result's ``candidates``)."""

    moved: list[tuple[str, str]] = field(default_factory=list)
    nodes: int = 0


@dataclass(frozen=True, eq=False)
class Query:
    """One question as the steps read it."""

    question: str  # as asked (trimmed to what search reads)
    text: str  # as expanded: synonyms applied, the line items its concepts need
    vector: np.ndarray  # the embedded question (float32)
    config: RetrievalConfig  # the request: budget, k, filters, access, tuning
    #: the question read once (its title words, labels, periods: :mod:`.question`)
    read: Question | None = None
    #: the statements its concepts need, first needed first (keys of the vocabulary)
    needs: tuple[str, ...] = ()
    #: the chunk rows the request may search (``None``: all)
    rows: np.ndarray | None = None
    #: what the steps report back (:class:`Trace`)
    trace: Trace = field(default_factory=Trace)

    @property
    def asked(self) -> Question:
        """The question as read (:attr:`read`, or read now from :attr:`question`)."""
        return self.read if self.read is not None else Question.of(self.question)


#: A ranking step: candidates in, candidates out.
Step = Callable[[list[Candidate], Query, "Corpus"], list[Candidate]]


def boosts(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """Chunks of a section the question names by all the words of its title moved first
    (``config.title_boost``; :func:`~.ranking.boost_named`): "the cash flow statement"
    names "Consolidated Statements of Cash Flows"."""
    tuning = query.config.tuning
    if not tuning.title_boost or not candidates:
        return candidates
    ranked = boost_named_titles(corpus, chunk_ranking(candidates), query.asked,
                                tuning.k_search)
    return chunk_candidates(corpus, ranked, candidates)


def statements(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """The chunks of each statement the question's concepts need moved first, round robin
    (:func:`~.statements.boost_statements`); the sections moved go to ``query.trace``."""
    if not query.needs or not candidates:
        return candidates
    ranked, moved = boost_statements(corpus, chunk_ranking(candidates), query.needs,
                                     query.vector, query.rows)
    if not moved:
        return candidates
    query.trace.moved.extend(moved)
    return chunk_candidates(corpus, ranked, candidates)


def group(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """The chunks of one node merged into one candidate, where its best chunk stood
    (:func:`~.ranking.merge_nodes`)."""
    return merge_nodes(candidates)


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


def select(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """The best twice ``k`` nodes, each with the ``lines`` it hands over (``expand``:
    with its subsections or its own text; :func:`~.ranking.select`). Twice: copies merged
    away by :func:`duplicates` leave room for other sections."""
    query.trace.nodes = len(candidates)
    chosen = select_sections(corpus, candidates, k=2 * query.config.k,
                             expand=query.config.tuning.expand)
    return _with_lines(chosen)


def duplicates(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """Later copies of a selected section in another document merged into the first (its
    ``also_in``; :func:`~.ranking.merge_duplicates`), then the best ``k`` kept."""
    return _with_lines(merge_duplicates(corpus, _selected(candidates, query, corpus))
                       [:query.config.k])


def promote(candidates: list[Candidate], query: Query, corpus: Corpus) -> list[Candidate]:
    """``config.promote_parent`` or more selected siblings replaced by their parent
    section when it fits the budget whole (:func:`~.ranking.promote`); off below 2."""
    n = query.config.tuning.promote_parent
    if n < 2:
        return candidates
    budget = query.config.budget
    return _with_lines(promote_parents(
        corpus, _selected(candidates, query, corpus), n,
        lambda doc_id, node_id: fits_whole(corpus, doc_id, node_id, budget)))


#: The library's ranking steps, in the order they run.
STEPS: tuple[Step, ...] = (boosts, statements, group, documents, sections, rerank, select,
                           duplicates, promote)


def run_steps(steps: Sequence[Step], candidates: list[Candidate], query: Query,
              corpus: Corpus, timings: dict[str, float]) -> list[Candidate]:
    """``candidates`` through every step in order, each timed under its name."""
    for step in steps:
        t = time.perf_counter()
        candidates = step(candidates, query, corpus)
        name = getattr(step, "__name__", type(step).__name__)
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t
    return candidates


def selected(candidates: list[Candidate], query: Query, corpus: Corpus
             ) -> list[tuple[Candidate, tuple[int, int]]]:
    """The candidates as selected sections ``(candidate, lines)``, for packing: those the
    steps selected as they are, or (steps without :func:`select`) the best ``k`` selected
    now."""
    return _selected(candidates, query, corpus)[:query.config.k]


def _selected(candidates: list[Candidate], query: Query, corpus: Corpus
              ) -> list[tuple[Candidate, tuple[int, int]]]:
    if all(c.lines is not None for c in candidates):
        return [(c, c.lines) for c in candidates if c.lines is not None]
    return select_sections(corpus, [c for c in candidates if c.lines is None],
                           k=2 * query.config.k, expand=query.config.tuning.expand)


def _with_lines(chosen: list[tuple[Candidate, tuple[int, int]]]) -> list[Candidate]:
    return [replace(c, lines=rng) for c, rng in chosen]
