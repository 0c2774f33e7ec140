"""Retrieval by proxy and pointer: search chunks, rank sections, pack them into a budget.

Chunks are proxies and their metadata are pointers. A search ranks chunks (dense and BM25,
fused); chunks that point at the same ``(doc_id, node_id)`` are merged into one candidate
node; nodes are ranked as sections over the skeleton tree; the best ``k`` are selected (an
ancestor absorbs its descendants) and near-identical sections of different documents are
handed over once (every ranking step: :mod:`.ranking`); the sections are sliced from the
*stored copy* of their documents (never from a file that may have changed since indexing)
and packed into a token budget (:mod:`.packing`; tokens are counted by
:mod:`proxy_pointer.tokens`).
Sliding-window chunks of documents without headings have no node and are used as context
directly.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..access import public_metadata
from ..refs import Ref
from ..vocab.filings import FILINGS, Vocabulary
from ..vocab.keys import heading_key
from ..vocab.synonyms import Synonyms
from ..vocab.understanding import Understanding, understand
from .choice import WEIGHTS, Weights, choose, evidence
from .config import RetrievalConfig, check_question
from .coverage import Coverage, coverage
from .packing import pack_request
from .question import Question
from .ranking import (
    Candidate,
    Selected,
    boost_titles,
    chunk_candidates,
    chunk_ranking,
    fuse_chunks,
)
from .refine import RefinedCorpus, Refiner
from .routing import Route, Shelf
from .sections import Section
from .steps import STEPS, Query, Step, boosts, run_steps, selected

if TYPE_CHECKING:
    from .corpus import Corpus

__all__ = ["Retrieval", "RetrievalConfig", "Retriever", "Section"]


@dataclass(frozen=True)
class Retrieval:
    """The sections for one question, in rank order, and the tokens they use."""

    question: str
    sections: tuple[Section, ...]
    budget: int
    tokens_used: int
    candidates: int = 0  # unique nodes found before the k / budget cut
    omitted: tuple[str, ...] = ()  # refs of selected sections the budget could not hold
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    """Seconds per stage: ``route`` and ``choose`` (the cards, the document choice),
    ``embed`` (query vector; both with a refiner), ``search`` (dense, BM25, fusion; with a
    refiner, embedding the chunks it rescores), each ranking step under its name
    (:data:`~.steps.STEPS`: ``boosts`` ... ``promote``), ``dedupe`` (all the steps) and
    ``slice`` (cutting the selected sections into the budget)."""
    routing: Route = field(default_factory=Route)  # the documents the question named
    #: what the question was expanded with: concepts, statements, line items, synonyms
    expansion: Understanding = field(default_factory=Understanding)
    #: the years a question spanning periods asks, those the context holds, and the
    #: filings on the shelf that report the rest (:mod:`.coverage`)
    periods: Coverage = field(default_factory=Coverage)

    @property
    def context(self) -> str:
        """The sections' texts joined, as a plain context string."""
        return "\n\n".join(s.text for s in self.sections)

    def to_dict(self) -> dict[str, Any]:
        """The one JSON-ready result payload (the CLI's ``query --json``, HTTP ``/query``,
        MCP ``search``): ``question``, ``tokens_used``, ``budget``, ``contexts`` (each
        :meth:`Section.to_dict <.sections.Section.to_dict>`, with the ``ref`` every interface
        opens), ``omitted`` (refs the budget could not hold) and ``routing`` (the documents
        the question was sent to and which card fields matched: :class:`~.routing.Route`)
        and ``expansion`` (the concepts the question names, the statements and line items
        they need, the synonyms applied: :class:`~proxy_pointer.vocab.understanding.
        Understanding`) and ``periods`` (the years a question spanning periods asks, those the
        contexts hold, the filings that report the rest: :class:`~.coverage.Coverage`)."""
        return {"question": self.question, "tokens_used": self.tokens_used,
                "budget": self.budget, "contexts": [s.to_dict() for s in self.sections],
                "omitted": list(self.omitted), "routing": self.routing.to_dict(),
                "expansion": self.expansion.to_dict(), "periods": self.periods.to_dict()}


class Retriever:
    """Answers questions from a :class:`~proxy_pointer.search.corpus.Corpus` (read-only),
    such as an index's :attr:`~proxy_pointer.index.Index.reader`: one generation throughout
    (:meth:`Index.retrieve <proxy_pointer.index.Index.retrieve>` takes the current one per
    question, so it follows updates)."""

    def __init__(self, corpus: Corpus, config: RetrievalConfig | None = None, *,
                 steps: Sequence[Step] = STEPS, refiner: Refiner | None = None,
                 choice: Weights | None = WEIGHTS, vocabulary: Vocabulary = FILINGS) -> None:
        self.corpus = corpus
        #: The vocabulary questions are read with: the forms routing and the document
        #: choice know, the concepts understanding expands (``tuning.vocabulary``), the
        #: label words ranking reads (:mod:`~proxy_pointer.vocab.filings`).
        self.vocabulary = vocabulary
        self.config = config or RetrievalConfig()
        #: The ranking steps run on the candidates, in order (:mod:`.steps`).
        self.steps: tuple[Step, ...] = tuple(steps)
        #: The second-stage embedder (:mod:`.refine`), used while ``tuning.refine`` > 0.
        self.refiner = refiner
        #: The document score's weights (:mod:`.choice`); ``None``: the cards' choice alone.
        self.choice = choice

    # --- public ---------------------------------------------------------------------
    def retrieve(self, question: str, **options: Any) -> Retrieval:
        """Sections for ``question`` in rank order within the token budget.

        Raises :class:`ConfigError` for an empty question or an invalid option; an index
        with no documents, or filters that match nothing, give an empty result.
        """
        cfg = replace(self.config, **options) if options else self.config
        question = check_question(question)
        rows = self._filter_rows(cfg)
        if (rows is not None and len(rows) == 0) or len(self.corpus.chunks) == 0:
            return Retrieval(question, (), cfg.budget, 0)
        timings: dict[str, float] = {}
        t = time.perf_counter()
        # every stage reads this one reading of the question
        read = Question.of(question, vocabulary=self.vocabulary)
        routed, others, shelf = (self._route(read, cfg) if cfg.tuning.route
                                 else (Route(), np.empty(0, np.int64), Shelf({})))
        if self.choice is None or not (routed.open or _several(routed)):
            routed = replace(routed, candidates=(), open=False)
        allowed = rows
        if routed.documents and not routed.open:
            # The routed filings (and the candidates the document choice weighs), and
            # every document no card claims for an entity (a manual, a paper): routing
            # chooses among filings and never hides the rest.
            rows = self._narrowed(_searched(routed), others, allowed)
            if rows is None or not len(rows):
                rows, routed = allowed, Route()
        timings["route"] = time.perf_counter() - t
        question = read.text
        span = read.asked.span  # the years it spans
        corpus, q, expansion = self._prepared(read, cfg, timings, bool(span))
        if (routed.candidates or routed.open) and self.choice is not None:
            t = time.perf_counter()
            search = _Search(self, corpus, read, expansion, q, cfg, timings)
            rows, routed = search.choose(routed, rows, others, allowed, self.choice)
            if routed.open and routed.documents:
                # No company named: the best filing's company, its period's filing chosen
                # as if it were named.
                again = shelf.route_as(read, routed.scores[0][0])
                if again.documents and not _several(again):
                    rows = self._narrowed(again.documents, others, allowed)
                    routed = replace(again, scores=routed.scores)
                elif again.documents:
                    rows, routed = search.choose(
                        again, self._narrowed(_searched(again), others, allowed), others,
                        allowed, self.choice)
            timings["choose"] = time.perf_counter() - t
        ranked = self._search(corpus, read, expansion, q, cfg, rows, timings)
        t = time.perf_counter()
        asked = Query(question, expansion.text(question), q, cfg, read=read,
                      needs=expansion.statements, rows=rows)
        candidates = run_steps(self.steps, chunk_candidates(corpus, ranked), asked, corpus,
                               timings)
        timings["dedupe"] = time.perf_counter() - t
        if asked.trace.moved:
            expansion = replace(expansion, sections=tuple(
                str(Ref.of_section(d, n, *self._lines(d, n))) for d, n in asked.trace.moved))
        t = time.perf_counter()
        sections, omitted = self._assemble(corpus, asked, candidates)
        timings["slice"] = time.perf_counter() - t
        used = sum(s.tokens for s in sections)
        return Retrieval(question, tuple(sections), cfg.budget, used, asked.trace.nodes,
                         tuple(omitted), timings, routed, expansion,
                         _covered(span, sections, shelf, self.vocabulary))

    # --- search ---------------------------------------------------------------------
    def _narrowed(self, documents: Iterable[str], others: np.ndarray,
                  allowed: np.ndarray | None) -> np.ndarray | None:
        """The rows of ``documents`` and of ``others`` (unclaimed documents) that the
        request's filters allow (``allowed``; ``None``: every row)."""
        wanted = np.union1d(self.corpus.rows_for(sorted(documents)), others)
        return wanted if allowed is None else np.intersect1d(allowed, wanted)

    def _prepared(self, question: Question, cfg: RetrievalConfig, timings: dict[str, float],
                  spans: bool) -> tuple[Corpus, np.ndarray, Understanding]:
        """The corpus this request reads (the index's, or its refined view: :mod:`.refine`),
        the query vector and the question's expansion (synonyms, then the filing
        vocabulary's concepts; the line items of a question that ``spans`` periods)."""
        synonyms = cfg.tuning.synonyms if isinstance(cfg.tuning.synonyms, Synonyms) else None
        expansion = understand(question.text,
                               vocabulary=self.vocabulary if cfg.tuning.vocabulary else None,
                               synonyms=synonyms, spans=spans, read=question.spans)
        corpus, q = self._embedded(expansion.embedded(question.text), cfg, timings)
        return corpus, q, expansion

    def _embedded(self, text: str, cfg: RetrievalConfig, timings: dict[str, float]
                  ) -> tuple[Corpus, np.ndarray]:
        """The corpus the request reads and the question's vector in it: with a refiner
        (``refine`` > 0, mode ``"chunks"``) the refined view and the refiner's vector of
        ``text``. The other modes compare the question with every chunk of up to eight
        documents, which a refiner would have to embed at query time: they read the stored
        vectors."""
        t = time.perf_counter()
        try:
            q = np.asarray(self.corpus.embedder.embed_query(text), dtype=np.float32)
            if self.refiner is None or not cfg.tuning.refine or cfg.tuning.mode != "chunks":
                return self.corpus, q
            view = RefinedCorpus(self.corpus, self.refiner, q, pool=cfg.tuning.refine,
                                 view=cfg.access)
            return view, self.refiner.query(text)
        finally:
            timings["embed"] = time.perf_counter() - t

    def _route(self, question: Question, cfg: RetrievalConfig
               ) -> tuple[Route, np.ndarray, Shelf]:
        """Where the cards send ``question``, among the documents this request may
        search (its view and ``doc_ids``): a reader never learns of documents it cannot
        see; the rows of that view's documents whose cards name no entity; the shelf."""
        view = cfg.access
        aliases = cfg.tuning.aliases if isinstance(cfg.tuning.aliases, Synonyms) else None

        def shelf() -> Shelf:
            seen = self.corpus.visible_documents(view)
            allowed = set(seen) if cfg.doc_ids is None else set(seen) & set(cfg.doc_ids)
            return Shelf({d: c for d, c in self.corpus.cards().items() if d in allowed},
                         aliases, vocabulary=self.vocabulary)

        # One shelf, and its unclaimed rows, per view (and doc_ids, aliases) and
        # generation, as visible rows are kept: a routed question pays for neither again.
        derived = self.corpus.derived
        kept = derived.visible(("shelf", view, cfg.doc_ids, aliases, self.vocabulary), shelf)
        rows = derived.visible(("unclaimed", view, cfg.doc_ids),
                               lambda: np.sort(self.corpus.rows_for(kept.unclaimed)))
        return kept.route(question), rows, kept

    def _filter_rows(self, cfg: RetrievalConfig) -> np.ndarray | None:
        idx = self.corpus
        rows = idx.visible_rows(cfg.access)
        if cfg.doc_ids is not None:
            wanted = idx.rows_for(cfg.doc_ids)
            rows = wanted if rows is None else np.intersect1d(rows, wanted)
        if cfg.path_prefix:
            want = tuple(heading_key(t) for t in cfg.path_prefix)
            cache = idx.derived.prefixes
            if want not in cache:
                # The store finds the rows that mention the first title; only those are
                # checked here, never every chunk row.
                cand = idx.rows_mentioning(want[0])
                crumbs = idx.crumbs(cand)
                cache[want] = np.asarray(
                    [r for r, p in zip(cand.tolist(), crumbs, strict=True)
                     if _has_prefix([heading_key(t) for t in p], want)], np.int64)
            found = cache[want]
            rows = found if rows is None else np.intersect1d(rows, found)
        return rows

    def _search(self, corpus: Corpus, question: Question, expansion: Understanding,
                q: np.ndarray,
                cfg: RetrievalConfig, rows: np.ndarray | None, timings: dict[str, float]
                ) -> list[tuple[int, float]]:
        """Chunk rows with fused scores, best first: the question as ``expansion`` expanded
        it (embedded as ``q``) and matched by BM25; titles are matched against the
        ``question`` as asked."""
        t = time.perf_counter()
        try:
            return self._chunks(corpus, question, expansion.text(question.text), q, cfg, rows)
        finally:
            timings["search"] = time.perf_counter() - t

    def _lines(self, doc_id: str, node_id: str) -> tuple[int, int]:
        node = self.corpus.tree(doc_id).get(node_id)
        return node.start + 1, node.end

    def _chunks(self, corpus: Corpus, question: Question, searched: str, q: np.ndarray,
                cfg: RetrievalConfig, rows: np.ndarray | None) -> list[tuple[int, float]]:
        labels = list(question.labels) if cfg.tuning.title_boost else []
        k = cfg.tuning.k_search
        lexical = (corpus.lexical_search(searched, k, rows, scope=self._scope(cfg))
                   if cfg.tuning.hybrid else [])
        if isinstance(corpus, RefinedCorpus):
            # The refiner also ranks BM25's best, as one dense search would have found them.
            scores, found = corpus.dense_search(
                q, k, rows=rows, also=[r for r, _ in lexical[:cfg.tuning.refine]])
        else:
            scores, found = corpus.dense_search(q, k, rows=rows)
        dense = list(zip(found.tolist(), scores.tolist(), strict=True))
        if labels:
            dense = boost_titles(corpus, dense, q, labels, cfg.tuning.title_boost, rows)
        if not cfg.tuning.hybrid:
            return dense
        return fuse_chunks(dense, lexical, cfg.tuning.rrf_k)

    def _scope(self, cfg: RetrievalConfig) -> np.ndarray | None:
        """The rows whose statistics weigh BM25 terms: those the principal may read (its
        own filters, ``doc_ids`` and routing narrow the search, never the statistics), so
        documents hidden from it change neither its scores nor its order."""
        rows = self.corpus.visible_rows(cfg.access.unfiltered)
        return None if rows is None or len(rows) == len(self.corpus.chunks) else rows

    # --- assembly -------------------------------------------------------------------
    def _assemble(self, idx: Corpus, query: Query, candidates: list[Candidate]
                  ) -> tuple[list[Section], list[str]]:
        """The steps' selected sections within the budget (each with its
        :attr:`~.sections.Section.relevance`), and the refs of those left out for lack of
        it."""
        cfg = query.config
        chosen = selected(candidates, query, idx)
        terms = idx.term_weights(query.text, self._scope(cfg))
        sections, omitted = pack_request(idx, chosen, cfg, terms)
        relevance = _relevance(idx, chosen, query.vector)
        docs = idx.documents
        return [replace(s, relevance=relevance.get(s.ref, 0.0),
                        metadata=public_metadata(docs[s.doc_id].metadata))
                for s in sections], omitted


# --- helpers ----------------------------------------------------------------------------
def _covered(span: Sequence[int], sections: Sequence[Section], shelf: Shelf,
             vocabulary: Vocabulary) -> Coverage:
    """Which of the years a question spans (``span``) the ``sections`` hold, and the filings
    of the first section's company on ``shelf`` that report the rest."""
    if not span:
        return Coverage()
    documents = list(dict.fromkeys(s.doc_id for s in sections))
    family = shelf.family(documents[0]) if documents else {}
    return coverage(span, (s.text for s in sections), documents, family, vocabulary)


@dataclass(frozen=True)
class _Search:
    """One request's first search over a route's candidates, for the document choice."""

    retriever: Retriever
    corpus: Corpus
    question: Question
    expansion: Understanding
    vector: np.ndarray
    cfg: RetrievalConfig
    timings: dict[str, float]

    def choose(self, route: Route, rows: np.ndarray | None, others: np.ndarray,
               allowed: np.ndarray | None, weights: Weights
               ) -> tuple[np.ndarray | None, Route]:
        """Every candidate searched once (``rows``), the filings the choice keeps and the
        rows to search again (their sections then get the whole search, not what was left
        of it); the request's rows and no route when nothing was found."""
        r = self.retriever
        first = r._search(self.corpus, self.question, self.expansion, self.vector, self.cfg,
                          rows, self.timings)
        # what each filing holds is read from the search with named titles first, as the
        # boosts step orders it
        query = Query(self.question.text, self.expansion.text(self.question.text),
                      self.vector, self.cfg, read=self.question, rows=rows)
        first = chunk_ranking(boosts(chunk_candidates(self.corpus, first), query, self.corpus))
        found = evidence(self.corpus, first, route, self.question, hits=weights.hits)
        choice = choose(found, weights)
        if not choice.documents:
            return allowed, Route()
        return (r._narrowed(choice.documents, others, allowed),
                replace(route, documents=tuple(sorted(choice.documents)),
                        scores=choice.scores))


def _searched(route: Route) -> set[str]:
    """The documents a route searches first: its documents and its candidates."""
    return {*route.documents, *(d for d, _, _ in route.candidates)}


def _several(route: Route) -> bool:
    """Whether some named entity has more than one candidate filing to choose among."""
    groups = [g for _, _, g in route.candidates]
    return len(groups) > len(set(groups))


def _relevance(index: Corpus, selected: Selected, query: np.ndarray) -> dict[str, float]:
    """Ref -> cosine similarity of the question and the section's best hit chunk, clipped
    to 0-1 (one read of the selected sections' rows)."""
    rows = sorted({r for cand, _ in selected for r in cand.rows})
    if not rows:
        return {}
    vectors = np.asarray(index.vectors_of(rows), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    cos = (vectors @ query) / np.where(norms > 0, norms, 1.0)
    sims = dict(zip(rows, cos.tolist(), strict=True))
    return {cand.ref(*rng): min(1.0, max(0.0, max(sims[r] for r in cand.rows)))
            for cand, rng in selected}


def _has_prefix(path: Sequence[str], want: Sequence[str]) -> bool:
    """True when some run of ``path`` starts with ``want`` (the doc title may lead it)."""
    for offset in range(0, min(2, len(path))):
        seg = path[offset:offset + len(want)]
        if len(seg) == len(want) and all(
            s == w or s.startswith(w + " ") or s.startswith(w + ":") or s.startswith(w + ".")
            for s, w in zip(seg, want, strict=True)
        ):
            return True
    return False
