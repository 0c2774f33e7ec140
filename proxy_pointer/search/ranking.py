"""Ranking: every step from ranked chunks to the selected sections, in the order they run.

The retriever calls these steps one after another (:meth:`~.retrieval.Retriever.retrieve`):

1. Chunk rankings: :func:`boost_titles` raises the dense ranking's chunks under a heading
   the question names (:attr:`.question.Question.labels`); :func:`fuse_chunks` fuses it
   with the BM25 ranking by reciprocal rank (:func:`fuse_ranks`, also used for nodes and documents);
   :func:`boost_named` moves the chunks of a section the question names by its title
   words to the front.
2. :func:`group` merges the chunk hits of one node into a :class:`Candidate`;
   :func:`keep_documents` (two-stage search) keeps the best documents' candidates;
   :func:`rank_nodes` ranks them as sections (below); an LLM may reorder them
   (:mod:`.rerank`, opt-in).
3. :func:`select` takes the best ``k`` sections with their line ranges (ancestors absorb
   descendants); :func:`merge_duplicates` hands over identical or nearly identical
   sections of different documents once (``also_in``); :func:`promote` replaces enough
   selected siblings by their parent. The packer (:mod:`.packing`) takes it from there.

Ranking nodes as sections: every node of a hit document's tree can compete as a unit
(RAPTOR's two strategies, on the document's own tree instead of LLM summaries):

* ``"chunks"``: a node ranks by its single best chunk (the reference design).
* ``"collapsed"``: the nodes that hold hits, and all their ancestors, compete in one
  ranking. A node's score fuses, by reciprocal rank, the rank of the best chunk in its
  subtree and the rank of its *proxy*: the cosine between the question and the mean of the
  subtree's chunk vectors. A question about one detail is closest to a small section's
  proxy; one about a whole chapter to the chapter's.
* ``"traverse"``: top-down, per document: the ``beam`` best children of each reached
  node (by the same fused score) are opened, level by level; the reached nodes with hits
  of their own are ranked by that score.

Nothing here calls an LLM or embeds anything: proxies are averages of stored vectors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..refs import Ref
from ..vocab.filings import FILINGS
from ..vocab.keys import title_words
from .config import MODES
from .question import Question

if TYPE_CHECKING:
    from ..parse.tree import Tree
    from .corpus import Corpus

__all__ = [
    "MODES",
    "Candidate",
    "Selected",
    "boost_titles",
    "chunk_candidates",
    "chunk_ranking",
    "fuse_chunks",
    "fuse_ranks",
    "group",
    "keep_documents",
    "merge_duplicates",
    "merge_nodes",
    "promote",
    "rank_nodes",
    "select",
]

K = TypeVar("K", bound=Hashable)
_DOCS = 8  # documents whose trees compete in "collapsed" / "traverse" (best hits first)
_SHINGLE = 3  # words per shingle when comparing sections for near-duplicates
_NEAR_DUPLICATE = 0.8  # Jaccard similarity of shingles from which two sections are one
_SAME_VECTOR = 0.9  # cosine of two sections' best chunks below which they are not compared


@dataclass
class Candidate:
    """The chunks of one node (or one fallback window) that the search hit.

    ``rows``/``row_scores`` are the hit chunks with their fused scores, best first;
    ``spans`` the 0-based half-open line span of every hit row the search saw (shared by
    all candidates of one query); ``also_in`` lists the refs of identical sections
    elsewhere (filled by :func:`merge_duplicates`); ``lines`` the 0-based half-open line
    range it hands over, once selected (:func:`select`; ``None`` before).
    """

    doc_id: str
    node_id: str | None
    key: tuple[str, str]
    score: float
    rows: list[int] = field(default_factory=list)
    row_scores: list[float] = field(default_factory=list)
    also_in: list[str] = field(default_factory=list)
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)  # row -> line span
    lines: tuple[int, int] | None = None

    @property
    def best(self) -> float:
        return max(self.row_scores) if self.row_scores else 0.0

    def ref(self, start: int, end: int) -> str:
        """The citation key (:attr:`~.sections.Section.ref`) of this candidate's section
        covering the 0-based half-open lines ``[start, end)``."""
        return str(Ref.of_section(self.doc_id, self.node_id, start + 1, end))


#: Selected sections in rank order: each candidate with the 0-based half-open line range
#: it hands over (:func:`select`).
Selected = list[tuple[Candidate, tuple[int, int]]]


def fuse_ranks(rankings: Iterable[Sequence[K]], k: int = 60) -> dict[K, float]:
    """Reciprocal-rank fusion: each item scores ``1 / (k + rank)`` in every ranking (rank
    from 1) that holds it, summed."""
    out: dict[K, float] = {}
    for ranking in rankings:
        for i, x in enumerate(ranking):
            out[x] = out.get(x, 0.0) + 1.0 / (k + i + 1)
    return out


# --- chunk rankings ----------------------------------------------------------------------
_STRUCTURAL = frozenset(lab.word for lab in FILINGS.labels_read("question") if lab.structural)


def boost_titles(index: Corpus, ranked: list[tuple[int, float]], query: np.ndarray,
                 labels: list[tuple[str, str]], boost: float, rows: np.ndarray | None
                 ) -> list[tuple[int, float]]:
    """``ranked`` (chunk rows with scores) with ``boost`` added to the chunks under a
    heading that carries one of ``labels``; such chunks join the ranking (scored by their
    cosine with ``query``) when the search did not find them. ``rows``: the rows the
    filters allow (``None``: all). Returns the rows best first (ties: lower row first)."""
    named = _labelled_rows(index, labels)
    if rows is not None:
        named &= set(rows.tolist())
    if not named:
        return ranked
    scores = dict(ranked)
    missing = [r for r in named if r not in scores]
    if missing:
        sims = index.vectors_of(missing) @ query
        scores.update(zip(missing, sims.tolist(), strict=True))
    for r in named:
        scores[r] += boost
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


# a word of a title, a question or a section (letters of any script, digits)
_WORD = re.compile(r"\w+")
# what a document calls its parts: a question naming one asks for that part
_PARTS = frozenset(FILINGS.part_names)


def boost_named(index: Corpus, ranked: list[tuple[int, float]], question: Question,
                depth: int) -> list[tuple[int, float]]:
    """``ranked`` with the chunks of sections the question names by their title moved to
    the front, in their order. A section is named when its own title is a document part
    (a statement, sheet, report, schedule, table, note, appendix, exhibit: ``_PARTS``) with
    at least one more word (:func:`title_words`) and the question uses all its words:
    "the cash flow statement" names "Consolidated Statements of Cash Flows", "balance
    sheet" names "Consolidated Balance Sheets". A topic title ("Message Passing
    Framework") is left to the search: a question on a topic is not a request for that
    section. Only the first ``depth`` rows are looked at."""
    words = question.title_words
    top = ranked[:depth]
    crumbs = index.crumbs([r for r, _ in top]) if top else []
    named = {r for (r, _), c in zip(top, crumbs, strict=True)
             if c and len(t := title_words(c[-1])) >= 2 and t & _PARTS and t <= words}
    if not named:
        return ranked
    lift = ranked[0][1] - min(s for _, s in ranked) + 1.0
    moved = [(r, s + lift if r in named else s) for r, s in ranked]
    return sorted(moved, key=lambda t: (-t[1], t[0]))


def fuse_chunks(dense: list[tuple[int, float]], lexical: list[tuple[int, float]], k: int
                ) -> list[tuple[int, float]]:
    """The dense and the lexical chunk rankings fused by reciprocal rank (constant ``k``):
    rows with fused scores, best first (ties: lower row first)."""
    fused = fuse_ranks(([r for r, _ in dense], [r for r, _ in lexical]), k)
    return sorted(fused.items(), key=lambda t: (-t[1], t[0]))


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


# --- candidates --------------------------------------------------------------------------

def chunk_candidates(index: Corpus, ranked: list[tuple[int, float]],
                     known: Sequence[Candidate] = ()) -> list[Candidate]:
    """One candidate per ranked chunk row, in rank order, as the chunk steps move them
    (:func:`group` merges them by node). The rows of ``known`` candidates keep their
    node and span; only the others' pointers are read, in one read."""
    where: dict[int, tuple[str, str | None, tuple[str, str]]] = {}
    spans = _shared_spans(known)
    for c in known:
        where.update((r, (c.doc_id, c.node_id, c.key)) for r in c.rows)
    new = [r for r, _ in ranked if r not in where]
    for r, (doc_id, node_id, start, first, last) in zip(new, index.pointers(new), strict=True):
        where[r] = (doc_id, node_id, (doc_id, node_id if node_id is not None else f"#{start}"))
        spans[r] = (first, last)
    return [Candidate(*where[r], score, [r], [score], spans=spans) for r, score in ranked]


def chunk_ranking(candidates: Sequence[Candidate]) -> list[tuple[int, float]]:
    """The chunk rows of ``candidates`` with their scores, in order."""
    return [(r, s) for c in candidates for r, s in zip(c.rows, c.row_scores, strict=True)]


def _shared_spans(candidates: Sequence[Candidate]) -> dict[int, tuple[int, int]]:
    """One map of every candidate's row spans. Candidates of one query share a map, so
    each distinct map is read once, not once per candidate (that would be quadratic)."""
    spans: dict[int, tuple[int, int]] = {}
    for m in {id(c.spans): c.spans for c in candidates}.values():
        spans.update(m)
    return spans


def merge_nodes(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Dedupe by ``(doc_id, node_id)``: one candidate per node, where its first chunk
    stood, with all its hit chunks and that first chunk's score (the best, as the chunks
    come best first); every candidate shares one map of the rows' line spans."""
    spans = _shared_spans(candidates)
    by_key: dict[tuple[str, str], Candidate] = {}
    order: list[Candidate] = []
    for c in candidates:
        cand = by_key.get(c.key)
        if cand is None:
            cand = by_key[c.key] = Candidate(c.doc_id, c.node_id, c.key, c.score, spans=spans)
            order.append(cand)
        cand.rows.extend(c.rows)
        cand.row_scores.extend(c.row_scores)
    return order


def group(index: Corpus, ranked: list[tuple[int, float]]) -> list[Candidate]:
    """Dedupe by ``(doc_id, node_id)``: best score per node, all its hit chunks kept."""
    return merge_nodes(chunk_candidates(index, ranked))


def rank_nodes(index: Corpus, candidates: list[Candidate], query: np.ndarray, mode: str,
               *, beam: int = 3, rrf_k: int = 60) -> list[Candidate]:
    """``candidates`` re-ranked as sections by ``mode`` (see the module docstring).

    New candidates (ancestors without hits of their own) carry their subtree's hits.
    """
    if mode == "chunks" or not candidates:
        return candidates
    docs: list[str] = []
    for c in candidates:
        if c.node_id is not None and c.doc_id not in docs:
            docs.append(c.doc_id)
        if len(docs) >= _DOCS:
            break
    scored: list[tuple[float, int, Candidate]] = []
    for doc_id in docs:
        scored.extend(_doc_nodes(index, doc_id, candidates, query, mode, beam, rrf_k))
    by_doc: dict[str, list[Candidate]] = {}
    for _, _, c in sorted(scored, key=lambda t: (-t[0], t[1])):  # ties: the ancestor
        by_doc.setdefault(c.doc_id, []).append(c)
    # Within a document nodes are ordered by their fused score; documents (and fallback
    # windows) keep their places: each slot a document's hit held goes to its next node.
    queues = {d: iter(v) for d, v in by_doc.items()}
    out: list[Candidate] = []
    for c in candidates:
        q = queues.get(c.doc_id) if c.node_id is not None else None
        if q is None:
            if c.node_id is None or c.doc_id not in by_doc:
                out.append(c)
            continue
        nxt = next(q, None)
        if nxt is not None:
            out.append(nxt)
    for q in queues.values():  # nodes a document still has after its hit slots are used
        out.extend(q)
    return out


def keep_documents(index: Corpus, candidates: list[Candidate], query: np.ndarray, n: int,
                   *, lead: int = 4, rrf_k: int = 60) -> list[Candidate]:
    """Two-stage search: only the candidates of the ``n`` best documents, in their order.

    A document ranks by reciprocal-rank fusion of its best chunk's rank and its *proxy*:
    the cosine between the question and the mean vector of its first ``lead`` chunks (its
    title, abstract or opening section, with their breadcrumbs).
    """
    docs = list(dict.fromkeys(c.doc_id for c in candidates))
    if len(docs) <= n:
        return candidates
    proxy: dict[str, float] = {}
    for d in docs:
        rows = index.rows_for([d])[:lead]
        if len(rows):
            proxy[d] = _mean_cosine(index.vectors_of(rows), query) or 0.0
    fused = fuse_ranks((docs, sorted(proxy, key=lambda d: -proxy[d])), rrf_k)
    best = set(sorted(docs, key=lambda d: -fused[d])[:n])
    return [c for c in candidates if c.doc_id in best]


def _doc_nodes(index: Corpus, doc_id: str, candidates: list[Candidate], query: np.ndarray,
               mode: str, beam: int, rrf_k: int) -> list[tuple[float, int, Candidate]]:
    """``(fused score, depth, candidate)`` for the competing nodes of one document."""
    tree = index.tree(doc_id)
    own = {c.node_id: c for c in candidates if c.doc_id == doc_id and c.node_id is not None}
    # Subtree hits: every hit chunk counts for its node and all of that node's ancestors.
    sub: dict[str, list[tuple[int, float]]] = {}
    for nid, c in own.items():
        if nid not in tree:
            continue
        for anc in _lineage(tree, nid):
            sub.setdefault(anc, []).extend(zip(c.rows, c.row_scores, strict=True))
    if not sub:
        return []
    proxy = _proxies(index, doc_id, tree, list(sub), query)
    best = {n: max(s for _, s in hits) for n, hits in sub.items()}
    fused = _fuse(best, proxy, tree, rrf_k)
    if mode == "traverse":
        reached = _traverse(tree, fused, beam)
        nodes = [n for n in reached if n in own] or reached[-1:]
    else:
        nodes = list(sub)
    out = []
    for n in nodes:
        cand = own.get(n)
        if cand is None:
            hits = sorted(sub[n], key=lambda t: -t[1])
            cand = Candidate(doc_id, n, (doc_id, n), hits[0][1],
                             [r for r, _ in hits], [s for _, s in hits],
                             spans=next(iter(own.values())).spans)
        out.append((fused[n], tree.get(n).level, cand))
    return out


def _fuse(best: dict[str, float], proxy: dict[str, float], tree: Tree, rrf_k: int
          ) -> dict[str, float]:
    """Reciprocal-rank fusion of the best-chunk and the proxy rankings of nodes.

    Equal best-chunk scores (a parent and the child holding its best chunk) are ordered
    deepest first, so a parent has to win on its proxy.
    """
    by_best = sorted(best, key=lambda n: (-best[n], -tree.get(n).level))
    by_proxy = sorted(proxy, key=lambda n: -proxy[n])
    return fuse_ranks((by_best, by_proxy), rrf_k)


def _proxies(index: Corpus, doc_id: str, tree: Tree, nodes: list[str], query: np.ndarray
             ) -> dict[str, float]:
    """Cosine of ``query`` with the mean chunk vector of each node's subtree."""
    rows = index.rows_for([doc_id])
    if len(rows) == 0:
        return {}
    owners = [p[1] for p in index.pointers(rows)]
    vecs = index.vectors_of(rows)
    sims: dict[str, float] = {}
    by_node: dict[str, list[int]] = {}
    for i, nid in enumerate(owners):
        if nid is not None and nid in tree:
            by_node.setdefault(nid, []).append(i)
    for n in nodes:
        idx = [i for d in tree.subtree(n) for i in by_node.get(d, ())]
        sim = _mean_cosine(vecs[idx], query) if idx else None
        if sim is not None:
            sims[n] = sim
    return sims


def _mean_cosine(vectors: np.ndarray, query: np.ndarray) -> float | None:
    """Cosine of ``query`` with the mean of ``vectors`` (``None`` for a zero mean)."""
    mean = vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return float(mean @ query) / norm if norm > 0 else None


def _traverse(tree: Tree, fused: dict[str, float], beam: int) -> list[str]:
    """Nodes reached top-down: from the roots, the ``beam`` best children with hits."""
    frontier = [n.node_id for n in tree.nodes if n.parent_id is None and n.node_id in fused]
    reached: list[str] = []
    while frontier:
        frontier = sorted(frontier, key=lambda n: -fused[n])[:beam]
        reached.extend(frontier)
        frontier = [c for n in frontier for c in tree.get(n).children if c in fused]
    return reached


# --- selection ---------------------------------------------------------------------------
def select(index: Corpus, candidates: list[Candidate], *, k: int, expand: str = "section"
           ) -> Selected:
    """The best ``k`` nodes with their line ranges; ancestors absorb descendants.

    A section inside a better-ranked one adds its hits there; an ancestor of a
    better-ranked one hands over only its own text.
    """
    chosen: Selected = []

    def holder(doc_id: str, rng: tuple[int, int]) -> Candidate | None:
        for other, orng in chosen:
            if other.doc_id == doc_id and orng[0] <= rng[0] and rng[1] <= orng[1]:
                return other
        return None

    for cand in candidates:
        if len(chosen) >= k:
            break
        rng = _range(index, cand, expand)
        if cand.node_id is not None and any(
            o.doc_id == cand.doc_id and rng[0] <= r[0] and r[1] <= rng[1] for o, r in chosen
        ):
            # An ancestor of a better-ranked section: hand over only its own text, so
            # nothing is repeated and the better hit keeps its place.
            rng = _range(index, cand, "own")
        other = holder(cand.doc_id, rng)
        if other is not None:
            # Already inside a better-ranked section: its chunks count there.
            other.rows.extend(cand.rows)
            other.row_scores.extend(cand.row_scores)
        else:
            chosen.append((cand, rng))
    return chosen


def merge_duplicates(index: Corpus, selected: Selected) -> Selected:
    """Selected sections with later copies of an identical or nearly identical section (in
    another document) removed; each copy's ref is added to the kept one's ``also_in``.

    Only sections of other documents whose sizes are within the similarity threshold of
    each other and whose best chunks' vectors nearly agree (cosine >= ``_SAME_VECTOR``)
    are compared word by word, so most queries compare nothing.
    """
    if len({c.doc_id for c, _ in selected}) < 2:
        return selected
    best = index.vectors_of([c.rows[0] for c, _ in selected])
    close = best @ best.T
    kept: list[tuple[int, Candidate, tuple[int, int], int]] = []  # (position, ..., size)
    shingles: dict[int, frozenset[int]] = {}

    def of(i: int, cand: Candidate, rng: tuple[int, int]) -> frozenset[int]:
        if i not in shingles:
            text = (index.chunks[cand.rows[0]].text if cand.node_id is None
                    else index.tree(cand.doc_id).slice(*rng))
            shingles[i] = _shingles(text)
        return shingles[i]

    for i, (cand, rng) in enumerate(selected):
        size = sum(index.line_tokens(cand.doc_id)[rng[0]:rng[1]])
        for j, other, orng, osize in kept:
            if (other.doc_id != cand.doc_id and close[i, j] >= _SAME_VECTOR
                    and min(size, osize) >= _NEAR_DUPLICATE * max(size, osize)
                    and _similar(of(i, cand, rng), of(j, other, orng))):
                other.also_in.append(cand.ref(*rng))
                break
        else:
            kept.append((i, cand, rng, size))
    return [(c, r) for _, c, r, _ in kept]


def _shingles(text: str) -> frozenset[int]:
    words = _WORD.findall(text.casefold())
    if len(words) < _SHINGLE:
        return frozenset([hash(" ".join(words))])
    return frozenset(hash(" ".join(words[i:i + _SHINGLE]))
                     for i in range(len(words) - _SHINGLE + 1))


def _similar(a: frozenset[int], b: frozenset[int]) -> bool:
    if not a or not b or min(len(a), len(b)) < _NEAR_DUPLICATE * max(len(a), len(b)):
        return False
    return len(a & b) >= _NEAR_DUPLICATE * len(a | b)


def promote(idx: Corpus, chosen: Selected, promote_parent: int,
            fits: Callable[[str, str], bool]) -> Selected:
    """Replace ``promote_parent`` or more selected siblings by their parent section if
    ``fits(doc_id, parent_id)`` (the budget's arithmetic is packing's:
    :func:`~.packing.fits_whole`).

    One promotion at a time (it changes the list, so sibling groups are found again); a
    promoted parent is not promoted further.
    """
    tried: set[tuple[str, str]] = set()
    while True:
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (cand, _) in enumerate(chosen):
            if (cand.node_id is None or cand.node_id not in idx.tree(cand.doc_id)
                    or cand.key in tried):
                continue
            node = idx.tree(cand.doc_id).get(cand.node_id)
            if node.parent_id is not None:
                groups.setdefault((cand.doc_id, node.parent_id), []).append(i)
        todo = [(key, m) for key, m in groups.items()
                if len(m) >= promote_parent and key not in tried]
        if not todo:
            return chosen
        (doc_id, parent_id), members = todo[0]
        tried.add((doc_id, parent_id))
        if not fits(doc_id, parent_id):
            continue
        parent = idx.tree(doc_id).get(parent_id)
        first = chosen[members[0]][0]
        promoted = Candidate(doc_id, parent_id, (doc_id, parent_id), first.score,
                             spans=first.spans)
        for i in members:
            promoted.rows.extend(chosen[i][0].rows)
            promoted.row_scores.extend(chosen[i][0].row_scores)
        keep = [(c, r) for j, (c, r) in enumerate(chosen) if j not in members[1:]]
        pos = keep.index(chosen[members[0]])
        keep[pos] = (promoted, (parent.start, parent.end))
        chosen = _drop_contained(keep, pos)


def _range(idx: Corpus, cand: Candidate, expand: str) -> tuple[int, int]:
    """0-based half-open line range that the candidate's section covers."""
    if cand.node_id is None:
        c = idx.chunks[cand.rows[0]]
        return c.start_line, c.end_line
    node = idx.tree(cand.doc_id).get(cand.node_id)
    return (node.start, node.end) if expand == "section" else (node.start, node.own_end)


def _drop_contained(chosen: Selected, i: int) -> Selected:
    """Remove entries other than ``i`` whose range lies inside entry ``i``'s range."""
    cand, rng = chosen[i]
    out = []
    for j, (c, r) in enumerate(chosen):
        if j != i and c.doc_id == cand.doc_id and rng[0] <= r[0] and r[1] <= rng[1]:
            for row, score in zip(c.rows, c.row_scores, strict=True):
                if row not in cand.rows:
                    cand.rows.append(row)
                    cand.row_scores.append(score)
            continue
        out.append((c, r))
    return out


def _lineage(tree: Tree, node_id: str) -> list[str]:
    """``node_id`` and its ancestors up to the root."""
    out = []
    cur: str | None = node_id
    while cur is not None:
        out.append(cur)
        cur = tree.get(cur).parent_id
    return out
