"""Retrieval by proxy and pointer: search chunks, rank sections, pack them into a budget.

Chunks are proxies and their metadata are pointers. A search ranks chunks (dense and BM25,
fused); chunks that point at the same ``(doc_id, node_id)`` are merged into one candidate
node; nodes are ranked as sections over the skeleton tree (:mod:`.ranking`); the best ``k``
are selected (an ancestor absorbs its descendants), near-identical sections of different
documents are handed over once, and the sections are sliced from the *stored copy* of
their documents (never from a file that may have changed since indexing) and packed into
a token budget (:mod:`.packing`; tokens are counted by :mod:`proxy_pointer.tokens`).
Sliding-window chunks of documents without headings have no node and are used as context
directly.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import defaults
from ..access import Access, public_metadata
from ..errors import ConfigError
from ..parse.tree import normalize_title
from .packing import Section, merge_duplicates, pack_evidence, pack_sections, ref
from .ranking import MODES, fuse_ranks, group, keep_documents, promote, rank_nodes, select
from .rerank import rerank

if TYPE_CHECKING:
    from ..llm.base import LLM
    from .corpus import Corpus

__all__ = ["Retrieval", "RetrievalConfig", "Retriever", "Section"]

_MAX_QUESTION_CHARS = 20_000  # the embedder reads ~1,000 characters; BM25 needs no more


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
    """Seconds per stage: ``embed`` (query vector), ``search`` (dense, BM25, fusion),
    ``dedupe`` (grouping chunks by node) and ``slice`` (sections, trimming, budget)."""

    @property
    def context(self) -> str:
        """The sections' texts joined, as a plain context string."""
        return "\n\n".join(s.text for s in self.sections)

    def to_dict(self) -> dict[str, Any]:
        """The one JSON-ready result payload (the CLI's ``query --json``, HTTP ``/query``,
        MCP ``search``): ``question``, ``tokens_used``, ``budget``, ``contexts`` (each
        :meth:`Section.to_dict <.packing.Section.to_dict>`, with the ``ref`` every interface
        opens) and ``omitted`` (refs the budget could not hold)."""
        return {"question": self.question, "tokens_used": self.tokens_used,
                "budget": self.budget, "contexts": [s.to_dict() for s in self.sections],
                "omitted": list(self.omitted)}


@dataclass(frozen=True, kw_only=True)
class RetrievalConfig:
    """How a question becomes sections. Defaults were tuned on qasper-dev (see README).

    * ``k_search`` chunks are searched, merged into unique nodes, the best ``k`` kept.
    * ``mode`` ranks nodes as sections (:mod:`.ranking`): ``"chunks"`` (default: a node
      ranks by its best chunk), ``"collapsed"`` (every node of a hit document's tree
      competes, by its best chunk and its subtree's mean vector) or ``"traverse"``
      (top-down, ``beam`` children per level). On qasper-dev the three are within a point
      of evidence hit at 1,000 tokens; "collapsed" finds the gold section more often but
      costs latency (README).
    * ``expand="section"`` hands over a node with its subsections (the reference design);
      ``"own"`` only its own text up to its first child.
    * ``budget`` caps the total tokens of all section texts. ``packing="evidence"``
      (default, :func:`~.packing.pack_evidence`) fills it with the best lines of the ``k``
      sections, whole sections where they fit; ``lexical_weight`` (default 0: on
      qasper-dev 0.1 and 0.25 lost up to 4 points at 500 tokens) is how much a block's own
      BM25 match with the question raises its chunk's score. ``packing="sections"`` hands
      over whole sections in rank order, trimming one that does not fit to its heading and
      its best pieces. Both are one planner (:func:`~.packing.pack`): a block or line too
      long for a section's share is cut at sentences, so no ranked section is left out for
      its size. Either way a section may take at most
      ``max(section_floor, max_section_share * budget)`` tokens (the evidence packer
      lifts this cap only to fill what the other sections left; ``evidence_cap=False``
      drops it), so one long chapter cannot crowd out every other hit.
    * ``documents`` > 0 keeps only the sections of that many best documents (two-stage
      search: a document ranks by its best chunk and by the mean vector of its opening
      chunks). Off by default: on qasper-dev's corpus search it lost 3-5 points.
    * ``rerank_llm`` (opt-in, off): an :class:`~.llm.base.LLM` that reorders the best
      ``rerank_top`` sections by their breadcrumbs, one call per query (:mod:`.rerank`).
    * ``promote_parent``: when this many (>= 2) selected nodes share a parent, the parent's
      section replaces them if it fits; 0 (default) turns it off.
    * ``hybrid`` (default on) fuses BM25 (bm25s, over the same chunks and breadcrumbs) with
      the dense ranking by reciprocal rank fusion (constant ``rrf_k``); no LLM either way.
    * ``title_boost`` is added to the score of chunks whose breadcrumb carries a label the
      question names ("Chapter 2", "Box 1.1", "Item 7", "Note 12", "Table 3"): the
      embedder barely sees such numbers, the breadcrumb states them exactly.
    * ``doc_ids`` and ``path_prefix`` restrict the search (``path_prefix`` matches the
      leading titles of a chunk's breadcrumb, case-insensitively).
    * ``principal`` (the caller's groups) hides documents whose metadata's ``access``
      names none of them; ``where`` (``{"key": "value"}`` or ``["key=value"]``) keeps
      documents whose metadata holds every pair (:mod:`.access`). Both act inside search,
      before the top ``k``: hidden documents take no places. ``None``: no filter.
    """

    budget: int = defaults.BUDGET
    k: int = defaults.K
    k_search: int = defaults.K_SEARCH
    expand: str = defaults.EXPAND
    mode: str = defaults.MODE
    beam: int = 3
    packing: str = defaults.PACKING
    lexical_weight: float = 0.0
    evidence_cap: bool = True
    documents: int = 0
    rerank_llm: LLM | None = None
    rerank_top: int = 50
    max_section_share: float = 0.3
    section_floor: int = 400
    promote_parent: int = 0
    hybrid: bool = defaults.HYBRID
    rrf_k: int = 60
    title_boost: float = 0.15
    doc_ids: tuple[str, ...] | None = None
    path_prefix: tuple[str, ...] | None = None
    principal: tuple[str, ...] | None = None
    where: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        view = Access.of(self.principal, self.where)  # ConfigError for a malformed one
        object.__setattr__(self, "principal", None if view.principal is None
                           else tuple(sorted(view.principal)))
        object.__setattr__(self, "where", view.where or None)
        if isinstance(self.doc_ids, str):
            object.__setattr__(self, "doc_ids", (self.doc_ids,))
        elif self.doc_ids is not None:
            object.__setattr__(self, "doc_ids", tuple(self.doc_ids))
        if isinstance(self.path_prefix, str):
            parts = tuple(p.strip() for p in self.path_prefix.split(">") if p.strip())
            object.__setattr__(self, "path_prefix", parts or None)
        elif self.path_prefix is not None:
            object.__setattr__(self, "path_prefix", tuple(self.path_prefix) or None)
        for name in ("budget", "k", "k_search"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {v!r}")
        if self.expand not in ("section", "own"):
            raise ConfigError(f"expand must be 'section' or 'own', got {self.expand!r}")
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.packing not in ("evidence", "sections"):
            raise ConfigError(f"packing must be 'evidence' or 'sections', got {self.packing!r}")
        if not isinstance(self.beam, int) or self.beam < 1:
            raise ConfigError(f"beam must be a positive integer, got {self.beam!r}")
        if not isinstance(self.documents, int) or self.documents < 0:
            raise ConfigError(
                f"documents must be 0 (off) or a positive integer, got {self.documents!r}")
        if not isinstance(self.rerank_top, int) or self.rerank_top < 2:
            raise ConfigError(f"rerank_top must be at least 2, got {self.rerank_top!r}")
        if self.lexical_weight < 0:
            raise ConfigError("lexical_weight must be >= 0")
        if not 0 < self.max_section_share <= 1:
            raise ConfigError("max_section_share must be in (0, 1]")
        if self.promote_parent < 0 or self.promote_parent == 1:
            raise ConfigError("promote_parent must be 0 (off) or at least 2")
        if self.section_floor < 0:
            raise ConfigError("section_floor must be >= 0")
        if self.rrf_k < 1:
            raise ConfigError("rrf_k must be at least 1")


class Retriever:
    """Answers questions from a :class:`~proxy_pointer.search.corpus.Corpus` (read-only),
    such as an index's :attr:`~proxy_pointer.index.Index.reader`: one generation throughout
    (:meth:`Index.retrieve <proxy_pointer.index.Index.retrieve>` takes the current one per
    question, so it follows updates)."""

    def __init__(self, corpus: Corpus, config: RetrievalConfig | None = None) -> None:
        self.corpus = corpus
        self.config = config or RetrievalConfig()

    # --- public ---------------------------------------------------------------------
    def retrieve(self, question: str, **options: Any) -> Retrieval:
        """Sections for ``question`` in rank order within the token budget.

        Raises :class:`ConfigError` for an empty question or an invalid option; an index
        with no documents, or filters that match nothing, give an empty result.
        """
        cfg = replace(self.config, **options) if options else self.config
        if not isinstance(question, str) or not question.strip():
            raise ConfigError("the question is empty")
        question = question.strip()
        rows = self._filter_rows(cfg)
        if (rows is not None and len(rows) == 0) or len(self.corpus.chunks) == 0:
            return Retrieval(question, (), cfg.budget, 0)
        timings: dict[str, float] = {}
        ranked, q = self._search(question[:_MAX_QUESTION_CHARS], cfg, rows, timings)
        t = time.perf_counter()
        candidates = group(self.corpus, ranked)
        if cfg.documents:
            candidates = keep_documents(self.corpus, candidates, q, cfg.documents,
                                        rrf_k=cfg.rrf_k)
        candidates = rank_nodes(self.corpus, candidates, q, cfg.mode, beam=cfg.beam,
                                rrf_k=cfg.rrf_k)
        if cfg.rerank_llm is not None:
            t1 = time.perf_counter()
            candidates = rerank(self.corpus, candidates, question, cfg.rerank_llm,
                                top=cfg.rerank_top)
            timings["rerank"] = time.perf_counter() - t1
        timings["dedupe"] = time.perf_counter() - t
        t = time.perf_counter()
        sections, omitted = self._assemble(question, candidates, cfg, q)
        timings["slice"] = time.perf_counter() - t
        used = sum(s.tokens for s in sections)
        return Retrieval(question, tuple(sections), cfg.budget, used, len(candidates),
                         tuple(omitted), timings)

    # --- search ---------------------------------------------------------------------
    def _filter_rows(self, cfg: RetrievalConfig) -> np.ndarray | None:
        idx = self.corpus
        rows = idx.visible_rows(Access.of(cfg.principal, cfg.where))
        if cfg.doc_ids is not None:
            wanted = idx.rows_for(cfg.doc_ids)
            rows = wanted if rows is None else np.intersect1d(rows, wanted)
        if cfg.path_prefix:
            want = tuple(normalize_title(t) for t in cfg.path_prefix)
            cache = idx.derived.prefixes
            if want not in cache:
                # The store finds the rows that mention the first title; only those are
                # checked here, never every chunk row.
                cand = idx.rows_mentioning(want[0])
                crumbs = idx.crumbs(cand)
                cache[want] = np.asarray(
                    [r for r, p in zip(cand.tolist(), crumbs, strict=True)
                     if _has_prefix([normalize_title(t) for t in p], want)], np.int64)
            found = cache[want]
            rows = found if rows is None else np.intersect1d(rows, found)
        return rows

    def _search(self, question: str, cfg: RetrievalConfig, rows: np.ndarray | None,
                timings: dict[str, float]) -> tuple[list[tuple[int, float]], np.ndarray]:
        """Chunk rows with fused scores, best first, and the query vector."""
        t = time.perf_counter()
        q = np.asarray(self.corpus.embedder.embed_query(question), dtype=np.float32)
        timings["embed"] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            return self._rank(question, q, cfg, rows), q
        finally:
            timings["search"] = time.perf_counter() - t

    def _rank(self, question: str, q: np.ndarray, cfg: RetrievalConfig,
              rows: np.ndarray | None) -> list[tuple[int, float]]:
        labels = _labels(question) if cfg.title_boost else []
        if cfg.hybrid and not labels:
            # One call where the store's engine fuses by the same rule (Milvus).
            engine = self.corpus.fused_search(q, question, cfg.k_search, rrf_k=cfg.rrf_k,
                                             rows=rows)
            if engine is not None:
                return engine
        scores, found = self.corpus.dense_search(q, cfg.k_search, rows=rows)
        dense = list(zip(found.tolist(), scores.tolist(), strict=True))
        if labels:
            dense = self._boost(dense, q, labels, cfg, rows)
        if not cfg.hybrid:
            return dense
        lexical = self.corpus.lexical_search(question, cfg.k_search, rows)
        fused = fuse_ranks(([r for r, _ in dense], [r for r, _ in lexical]), cfg.rrf_k)
        return sorted(fused.items(), key=lambda t: (-t[1], t[0]))

    def _boost(self, ranked: list[tuple[int, float]], query: np.ndarray,
               labels: list[tuple[str, str]], cfg: RetrievalConfig, rows: np.ndarray | None
               ) -> list[tuple[int, float]]:
        """Raise chunks under a heading the question names; such chunks join the ranking."""
        idx = self.corpus
        named = _labelled_rows(idx, labels)
        if rows is not None:
            named &= set(rows.tolist())
        if not named:
            return ranked
        scores = dict(ranked)
        missing = [r for r in named if r not in scores]
        if missing:
            sims = idx.vectors_of(missing) @ query
            scores.update(zip(missing, sims.tolist(), strict=True))
        for r in named:
            scores[r] += cfg.title_boost
        return sorted(scores.items(), key=lambda t: (-t[1], t[0]))

    # --- assembly -------------------------------------------------------------------
    def _assemble(self, question: str, candidates: list[Any], cfg: RetrievalConfig,
                  query: np.ndarray) -> tuple[list[Section], list[str]]:
        """Sections within the budget (each with its :attr:`~.packing.Section.relevance`),
        and the refs of selected ones left out for lack of it."""
        idx = self.corpus
        # Twice k are selected so that copies merged away leave room for other sections.
        selected = select(idx, candidates, k=2 * cfg.k, expand=cfg.expand)
        selected = merge_duplicates(idx, selected)[:cfg.k]
        if cfg.promote_parent >= 2:
            selected = promote(idx, selected, cfg.promote_parent, cfg.budget)
        cap = max(1, cfg.section_floor, int(cfg.budget * cfg.max_section_share))
        terms = idx.term_weights(question)
        if cfg.packing == "evidence":
            sections, omitted = pack_evidence(idx, selected, cfg.budget, terms,
                                              lexical_weight=cfg.lexical_weight,
                                              cap=cap if cfg.evidence_cap else None)
        else:
            sections, omitted = pack_sections(idx, selected, cfg.budget, cap, terms)
        relevance = _relevance(idx, selected, query)
        docs = idx.documents
        return [replace(s, relevance=relevance.get(s.ref, 0.0),
                        metadata=public_metadata(docs[s.doc_id].metadata))
                for s in sections], omitted


# --- helpers ----------------------------------------------------------------------------
_LABEL_RE = re.compile(
    r"\b(chapter|section|part|item|box|table|figure|fig\.|appendix|annex|note|article|"
    r"schedule|exhibit|capítulo|sección|chapitre|kapitel|abschnitt)\s+"
    r"((?:\d+[a-z]?(?:\.\d+)*)|(?:[ivxlc]+)\b|(?:[a-z]\b(?:\.\d+)*))",
    re.IGNORECASE,
)
_STRUCTURAL = {"chapter", "section", "part", "item", "capítulo", "sección", "chapitre",
               "kapitel", "abschnitt"}


def _labels(question: str) -> list[tuple[str, str]]:
    """Heading labels a question names: ``[("chapter", "2"), ("box", "1.1")]``."""
    out = []
    for word, num in _LABEL_RE.findall(question):
        word, num = word.lower().rstrip("."), num.lower()
        if word == "fig":
            word = "figure"
        if (word, num) not in out:
            out.append((word, num))
    return out


def _labelled_rows(index: Corpus, labels: list[tuple[str, str]]) -> set[int]:
    """Chunk rows whose breadcrumb carries one of ``labels`` (cached per label)."""
    cache = index.derived.labels
    found: set[int] = set()
    for word, num in labels:
        key = (word, num)
        if key not in cache:
            num_re = re.escape(num) + r"(?![\w.]*\d)"
            named = re.compile(rf"\b{re.escape(word)}\s+{num_re}", re.IGNORECASE)
            # "Section 2.1" also names a heading that starts with its number: "2.1 Results".
            bare = re.compile(rf"^\W*{num_re}\b") if word in _STRUCTURAL else None
            # Only rows whose breadcrumb mentions the number are read and checked.
            cand = index.rows_mentioning(num)
            rows = {r for r, crumbs in zip(cand.tolist(), index.crumbs(cand), strict=True)
                    if any(named.search(t) or (bare is not None and bare.match(t))
                           for t in crumbs)}
            cache[key] = rows
        found |= cache[key]
    return found


def _relevance(index: Corpus, selected: list[Any], query: np.ndarray) -> dict[str, float]:
    """Ref -> cosine similarity of the question and the section's best hit chunk, clipped
    to 0-1 (one read of the selected sections' rows)."""
    rows = sorted({r for cand, _ in selected for r in cand.rows})
    if not rows:
        return {}
    vectors = np.asarray(index.vectors_of(rows), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    cos = (vectors @ query) / np.where(norms > 0, norms, 1.0)
    sims = dict(zip(rows, cos.tolist(), strict=True))
    return {ref(cand, *rng): min(1.0, max(0.0, max(sims[r] for r in cand.rows)))
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
