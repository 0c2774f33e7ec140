"""Packing sections into a token budget: one planner, whole sections or their best pieces.

:func:`pack` takes the selected sections (in rank order) and returns :class:`Section` s.
Every section's body is tiled into *units*: Markdown blocks (paragraphs, tables, lists); a
block larger than the share a section may take (``cap``, at most half the budget, less its
heading) into its lines; and a line still larger (a manual's or a converted page's whole
section on one line) into its sentences, a sentence over ``_PIECE`` tokens into token
windows (:func:`~.tokens.sentence_pieces`). So no unit is ever too big to be taken, and
every selected section can hand over at least the window around its best chunk. A unit
scores as the best hit chunk that covers it (a piece of a long line: the chunks whose
characters overlap it); units under the same chunk are ordered by their own BM25 match
with the question (corpus IDF), which ``lexical_weight`` > 0 also adds to the score.
Taking a unit costs its word pieces plus, for a section's first unit, its heading and,
for every new gap, an ``[…]`` marker, so the count is exact.

The per-section choice between the whole section and its best pieces follows the order:

* ``order="evidence"`` (the default, :func:`pack_evidence`) takes the best units across all
  sections first, each section within ``cap`` until the others had their turn. That is
  the choice between a whole block and pieces by expected evidence per token: the pieces
  under one chunk go in reading order (a run of sentences keeps a paragraph whole), and
  the pieces of a line barely over the share (up to ``_PARAGRAPH_LINE`` times: a long
  paragraph, not a section held on one line) wait while their section has whole blocks
  under hits, since part of a paragraph seldom holds a whole piece of evidence. Then what
  is left grows the opened sections around their units, in rank order, up to whole
  sections: a small section is handed over whole, a large one as its best pieces. A
  section that still holds only pieces of a long line, under ``_MIN_WINDOW`` tokens in
  all, gives them back to the others.
* ``order="sections"`` (:func:`pack_sections`, the reference design) fills the sections one
  after another in rank order: whole where it fits ``cap`` and what is left, otherwise its
  best units grown around them to that size.

:func:`merge_duplicates` hands over identical or nearly identical sections of different
documents once, listing the other places in ``Section.also_in``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..convert.base import page_label, page_span
from ..errors import ConfigError
from ..parse.segmentation import paragraphs
from ..refs import Ref
from ..stores.lexical import terms as line_terms_of
from ..tokens import count_tokens, truncate_to_tokens
from .ranking import Candidate

if TYPE_CHECKING:
    from .corpus import Corpus

__all__ = ["Section", "merge_duplicates", "pack", "pack_evidence", "pack_sections"]

_ELLIPSIS = "[…]\n"  # where text was left out: on a line of its own,
_INLINE_ELLIPSIS = "[…] "  # or inside a long line (both cost the same word pieces)
_MIN_WINDOW = 48  # tokens: fewer, and only pieces of a line, make a stub, not a window
_PIECE = 128  # tokens: most of one piece of a long line (sentences; windows past this)
_PARAGRAPH_LINE = 1.5  # a line up to this many times a section's share is a long paragraph
_SHINGLE = 3  # words per shingle when comparing sections for near-duplicates
_NEAR_DUPLICATE = 0.8  # Jaccard similarity of shingles from which two sections are one
_SAME_VECTOR = 0.9  # cosine of two sections' best chunks below which they are not compared

Selected = list[tuple[Candidate, tuple[int, int]]]


@dataclass(frozen=True)
class Section:
    """One retrieved piece of context: a whole section (or a fallback window) of a document.

    ``start_line`` and ``end_line`` are 1-based and inclusive, as shown to people, and refer
    to the stored copy of the source. ``matched_spans`` are the (1-based, inclusive) line
    spans of the chunks that hit this section. ``trimmed`` is true when the section did not
    fit the token budget whole and only its heading and a window around its matched chunks
    are in ``text``. ``also_in`` names the refs of the same (or a nearly identical) section in
    other documents, handed over once here. ``pages`` are the first and last page (1-based)
    the section's lines came from, for documents converted from a paged format (PDF);
    a trimmed section's are the pages of the lines its ``text`` holds. ``page_breaks``: the
    lines of the section on which its later pages start, so that a citation of some of its
    lines gets its own pages (:meth:`pages_of`). ``packed_spans`` are the (1-based,
    inclusive) line spans that ``text`` holds: the heading and every block or piece of a
    line taken (a whole section: one span). ``relevance`` is the cosine similarity of the
    question and the section's best-matching chunk, clipped to 0-1: unlike ``score`` (a
    rank fusion, ~0.01-0.03) it can be compared across the questions to one corpus and
    cut at a threshold (whose cost depends on the corpus: benchmarks/bench_relevance.py).
    """

    doc_id: str
    node_id: str | None
    title: str
    path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    score: float
    tokens: int = 0
    trimmed: bool = False
    matched_spans: tuple[tuple[int, int], ...] = ()
    also_in: tuple[str, ...] = ()
    pages: tuple[int, int] | None = None  # (first, last) 1-based pages, converted PDFs only
    page_breaks: tuple[int, ...] = ()  # lines inside the section on which a new page starts
    packed_spans: tuple[tuple[int, int], ...] = ()  # lines ``text`` holds, 1-based, inclusive
    relevance: float = 0.0  # cosine of question and best chunk, 0-1 (set by the retriever)
    # The document's metadata without its access list (access.public_metadata; set by the
    # retriever).
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ref(self) -> str:
        """The citation key (:class:`~.refs.Ref`): ``doc_id#node_id``, or for a fallback
        window its lines, ``doc_id#L<start_line>-<end_line>``."""
        return str(Ref.of_section(self.doc_id, self.node_id, self.start_line, self.end_line))

    @property
    def breadcrumb(self) -> str:
        return " > ".join(self.path)

    @property
    def where(self) -> str:
        """Where the section is, for people: ``"lines 12-30"``, and for a PDF's section
        ``"p. 37-38, lines 12-30"``."""
        lines = f"lines {self.start_line}-{self.end_line}"
        return lines if self.pages is None else f"{page_label(self.pages)}, {lines}"

    def pages_of(self, first: int, last: int) -> tuple[int, int] | None:
        """First and last page of this section's 1-based lines ``first..last``."""
        if self.pages is None:
            return None
        start = self.pages[0]
        return (start + sum(1 for b in self.page_breaks if b <= first),
                start + sum(1 for b in self.page_breaks if b <= max(first, last)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (a result payload's ``contexts`` entries): ``ref`` first, then
        every field."""
        d: dict[str, Any] = {"ref": self.ref}
        d.update((f.name, getattr(self, f.name)) for f in fields(self))
        d["path"] = list(self.path)
        d["matched_spans"] = [list(s) for s in self.matched_spans]
        d["also_in"] = list(self.also_in)
        d["pages"] = list(self.pages) if self.pages is not None else None
        d["page_breaks"] = list(self.page_breaks)
        d["packed_spans"] = [list(s) for s in self.packed_spans]
        return d

def ref(cand: Candidate, start: int, end: int) -> str:
    """The citation key (:attr:`Section.ref`) of a candidate whose section covers the
    0-based half-open lines ``[start, end)``."""
    return str(Ref.of_section(cand.doc_id, cand.node_id, start + 1, end))


def pack(index: Corpus, selected: Selected, budget: int, terms: dict[str, float], *,
         order: str = "evidence", cap: int | None = None, lexical_weight: float = 0.0
         ) -> tuple[list[Section], list[str]]:
    """The selected sections (in rank order) packed into ``budget`` tokens (module docstring).

    ``order="evidence"`` takes the best units across all sections first; ``"sections"``
    fills the sections one after another in rank order. A section may use at most ``cap``
    tokens (``None``: the budget) until every section had its turn. ``terms`` are the
    question's BM25 terms with their IDF (:meth:`~.corpus.Corpus.term_weights`). Returns
    the sections in rank order and the refs of selected sections that got no text.
    """
    if order not in ("evidence", "sections"):
        raise ConfigError(f"order must be 'evidence' or 'sections', got {order!r}")
    ell = count_tokens(_ELLIPSIS)
    most = budget if cap is None else min(cap, budget)
    norm = sum(terms.values()) or 1.0
    plans = [_plan(index, cand, start, end, budget, most, ell) for cand, (start, end) in selected]
    # (-score, tie, plan, unit): within one chunk (equal scores) the block that matches
    # the question's words best goes first; the pieces of a long line go in reading order,
    # since a run of sentences keeps a paragraph whole where a patchwork of them would not
    # (starting at the best-matching piece instead lost 1-2 of 21 questions on the 10-Ks'
    # long-line shape).
    ranked: list[tuple[float, float, int, int]] = []
    for k, p in enumerate(plans):
        for u, (score, lex) in enumerate(_unit_scores(index, p, terms, norm)):
            if score > 0:
                tie = -lex if p.units[u][2] is None else 0.0
                ranked.append((-score * (1 + lexical_weight * lex), tie, k, u))
    ranked.sort()
    left = budget
    if order == "evidence":
        # A piece of a line barely over the share (a long paragraph rather than a section
        # held on one line) waits while its section has whole units under hits: part of a
        # paragraph is less likely to hold a whole piece of evidence than a whole one.
        whole_hit = {k for _, _, k, u in ranked if plans[k].units[u][2] is None}
        waiting = []
        for r in ranked:
            _, _, k, u = r
            if u in plans[k].waits and k in whole_hit:
                waiting.append(r)
            else:
                left = _take(plans[k], u, left, most, ell)
        for _, _, k, u in waiting:
            left = _take(plans[k], u, left, most, ell)
        # What is left grows the opened sections, best first: up to the cap, then beyond.
        # A section that still holds only a stub of its text gives its tokens back.
        for stubs in (False, True):
            if stubs:
                left += sum(_drop_stub(p) for p in plans)
            for limit in (most, budget):
                for p in plans:
                    if p.keep:
                        left = _grow(p, left, ell, limit)
    else:
        by_plan: dict[int, list[int]] = {}  # each section's units under hits, best first
        for _, _, k, u in ranked:
            by_plan.setdefault(k, []).append(u)
        for k, p in enumerate(plans):
            room = min(left, most)
            whole = p.head + sum(p.costs)
            if whole <= room:
                p.keep.update(range(len(p.units)))
                p.gaps, p.used = 0, whole
            else:
                best = by_plan.get(k, [])
                for u in best:
                    _take(p, u, room, room, ell)
                if best and best[0] in p.keep:  # lines after, then before, the best unit
                    _grow_run(p, best[0], room, ell)
                _grow(p, room, ell, room)
                _drop_stub(p)
            left -= p.used
    if ranked and not any(p.keep for p in plans):
        _cut_best(plans[ranked[0][2]], ranked[0][3], left, ell)
    sections = [sec for p in plans if (sec := _emit(index, p)) is not None]
    omitted = [ref(p.cand, p.start, p.end) for p in plans if not p.keep]
    return sections, omitted


def pack_evidence(index: Corpus, selected: Selected, budget: int, terms: dict[str, float],
                  *, lexical_weight: float = 0.0, cap: int | None = None
                  ) -> tuple[list[Section], list[str]]:
    """:func:`pack` taking the best units across sections first (the default)."""
    return pack(index, selected, budget, terms, order="evidence", cap=cap,
                lexical_weight=lexical_weight)


def pack_sections(index: Corpus, selected: Selected, budget: int, cap: int,
                  terms: dict[str, float] | None = None) -> tuple[list[Section], list[str]]:
    """:func:`pack` filling whole sections in rank order, each at most ``cap`` tokens."""
    return pack(index, selected, budget, terms or {}, order="sections", cap=cap)


@dataclass
class _Plan:
    """One selected section while the packer fills the budget.

    Its body is tiled into units (:func:`_plan`), each ``(first line, end line, start,
    end)`` with ``start``/``end`` character offsets inside the first line for a piece of
    one long line (``None`` for whole lines); ``keep`` holds the indexes of the units taken,
    ``gaps`` counts the runs of units left out, each shown as one marker.
    """

    cand: Candidate
    start: int
    end: int
    lo: int = 0
    head: int = 0  # heading tokens
    units: list[tuple[int, int, int | None, int | None]] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)
    keep: set[int] = field(default_factory=set)
    gaps: int = 0
    window: str | None = None  # a fallback window's text (no node)
    cut: int | None = None  # tokens of the one kept unit when it had to be cut to fit
    used: int = 0  # tokens taken so far: heading, kept units and one marker per gap
    waits: set[int] = field(default_factory=set)  # pieces of long paragraphs (see pack)

    def delta(self, u: int) -> int:
        """Change in the number of gaps if unit ``u`` joins ``keep``."""
        left = u == 0 or u - 1 in self.keep
        right = u == len(self.units) - 1 or u + 1 in self.keep
        return -1 if left and right else (1 if not left and not right else 0)

    def extra(self, u: int, ell: int) -> int:
        """Tokens that taking unit ``u`` adds (opening a section costs its heading)."""
        return (self.costs[u] + ell * self.delta(u)
                + (0 if self.keep else self.head + ell * self.gaps))


def _plan(index: Corpus, cand: Candidate, start: int, end: int, budget: int, most: int,
          ell: int) -> _Plan:
    p = _Plan(cand, start, end)
    if cand.node_id is None:  # a fallback window: one unit, all or nothing
        p.window = index.chunks[cand.rows[0]].text
        p.units, p.costs = [(start, end, None, None)], [count_tokens(p.window)]
        p.gaps = 1
        return p
    node = index.tree(cand.doc_id).get(cand.node_id)
    cost = index.line_tokens(cand.doc_id)
    p.lo = node.body_start
    p.head = sum(cost[start:p.lo])
    # No unit may be larger than what the section may take with its heading and markers,
    # so every section's best unit can always be taken. A block is cut into lines from
    # half the budget on (a paragraph is the unit of evidence: one cut costs more than it
    # saves), a line into sentences only where it could not be taken at all.
    limit = max(_MIN_WINDOW // 2, most - p.head - 2 * ell)
    for i, j in paragraphs([cost[x] == 0 for x in range(p.lo, end)]):
        i, j = p.lo + i, p.lo + j
        size = sum(cost[i:j])
        if size <= min(limit, budget // 2) or (j - i == 1 and size <= limit):
            p.units.append((i, j, None, None))
            p.costs.append(size)
            continue
        for x in range(i, j):
            if cost[x] <= limit:
                p.units.append((x, x + 1, None, None))
                p.costs.append(cost[x])
            else:  # one long line: its sentences (or token windows)
                for a, b, c in index.derived.line_pieces(cand.doc_id, x, min(limit, _PIECE)):
                    if cost[x] <= _PARAGRAPH_LINE * limit:
                        p.waits.add(len(p.units))
                    p.units.append((x, x + 1, a, b))
                    p.costs.append(c)
    p.gaps = 1 if p.units else 0
    return p


def _unit_scores(index: Corpus, p: _Plan, terms: dict[str, float], norm: float
                 ) -> list[tuple[float, float]]:
    """``(hit, lexical)`` of each unit: the best hit chunk that covers it, and (for units
    under a hit) its own BM25 match with the question."""
    cand = p.cand
    if p.window is not None:
        return [(cand.best, _lexical(line_terms_of([p.window])[0], terms) / norm)]
    hit = [0.0] * (p.end - p.lo)
    for (first, last), score in zip(_spans(index, cand), cand.row_scores, strict=True):
        for i in range(max(first, p.lo), min(last, p.end)):
            hit[i - p.lo] = max(hit[i - p.lo], score)
    chars: list[tuple[int, int, float]] | None = None
    out = []
    for u, (i, j, a, b) in enumerate(p.units):
        h = max(hit[i - p.lo:j - p.lo])
        if h > 0 and a is not None and b is not None:
            if chars is None:  # a long line's pieces score by the chunks over them
                starts = index.derived.line_starts(cand.doc_id)
                chars = [(c.start_char, c.end_char, s) for c, s in zip(
                    index.chunks.at(cand.rows), cand.row_scores, strict=True)]
            lo, hi = starts[i] + a, starts[i] + b
            h = max((s for x, y, s in chars if x < hi and lo < y), default=0.0)
        if h <= 0 or p.costs[u] == 0:
            out.append((0.0, 0.0))
            continue
        if a is not None:
            words = line_terms_of([index.tree(cand.doc_id).lines[i][a:b]])[0]
        else:
            words = [t for ts in index.derived.line_terms(cand.doc_id, i, j) for t in ts]
        out.append((h, _lexical(words, terms) / norm))
    return out


def _take(p: _Plan, u: int, left: int, limit: int, ell: int) -> int:
    """Take unit ``u`` when it fits ``left`` and keeps the section within ``limit``;
    returns what is left of the budget."""
    if u in p.keep:
        return left
    extra = p.extra(u, ell) if p.window is None else p.costs[u]
    if extra <= left and p.used + extra <= limit:
        if p.window is None:
            p.gaps += p.delta(u)
        p.keep.add(u)
        p.used += extra
        return left - extra
    return left


def _grow(p: _Plan, left: int, ell: int, limit: int) -> int:
    """Add the units next to kept ones (after, then before) while they fit ``left`` and
    the section stays within ``limit``; returns what is left of the budget."""
    if p.window is not None:
        return left
    grown = True
    while grown:
        grown = False
        for u in sorted(p.keep):
            for n in (u + 1, u - 1):
                if 0 <= n < len(p.units) and n not in p.keep:
                    left = _take(p, n, left, limit, ell)
                    grown = grown or n in p.keep
    return left


def _grow_run(p: _Plan, u: int, limit: int, ell: int) -> None:
    """Widen the run of kept units around unit ``u`` by one unit after it, then one before
    it, in turn, while the section stays within ``limit``."""
    ends = [u, u]
    while True:
        while ends[1] + 1 in p.keep:
            ends[1] += 1
        while ends[0] - 1 in p.keep:
            ends[0] -= 1
        took = False
        for n in (ends[1] + 1, ends[0] - 1):
            if 0 <= n < len(p.units) and n not in p.keep:
                _take(p, n, limit, limit, ell)
                took = took or n in p.keep
        if not took:
            return


def _drop_stub(p: _Plan) -> int:
    """Empty a section that holds only pieces of a long line adding up to less than a
    useful window (under ``_MIN_WINDOW`` tokens); returns the tokens freed. A whole
    paragraph is evidence however short, so a section holding one is never dropped."""
    if (not p.keep or p.window is not None or p.used >= _MIN_WINDOW
            or any(p.units[u][2] is None and p.costs[u] > 0 for u in p.keep)):
        return 0
    freed, p.used = p.used, 0
    p.keep.clear()
    p.gaps = 1 if p.units else 0
    return freed


def _cut_best(p: _Plan, u: int, left: int, ell: int) -> None:
    """Not even the best unit fits: hand over its start, cut to what is left."""
    if p.window is not None:
        return
    room = left - p.head - ell * (p.gaps + p.delta(u))
    if room >= _MIN_WINDOW // 2:
        p.gaps += p.delta(u)
        p.keep.add(u)
        p.cut = room


def _spans(index: Corpus, cand: Candidate) -> list[tuple[int, int]]:
    """0-based half-open line span of each hit row, as the search's pointers gave them."""
    missing = [r for r in cand.rows if r not in cand.spans]
    if missing:  # rows a caller added by hand: read them
        cand.spans.update({r: (p[3], p[4]) for r, p in zip(missing, index.pointers(missing),
                                                             strict=True)})
    return [cand.spans[r] for r in cand.rows]


def _emit(index: Corpus, p: _Plan) -> Section | None:
    cand = p.cand
    if not p.keep:
        return None
    spans = tuple(sorted({(a + 1, b) for a, b in _spans(index, cand)}))
    if p.window is not None:
        c = index.chunks[cand.rows[0]]
        return Section(doc_id=cand.doc_id, node_id=None, title=c.title, path=tuple(c.path),
                       start_line=p.start + 1, end_line=p.end, text=p.window,
                       score=float(cand.score), tokens=p.costs[0],
                       matched_spans=spans, also_in=tuple(cand.also_in),
                       packed_spans=((p.start + 1, p.end),),
                       **_pages(index, cand.doc_id, p.start + 1, p.end))
    tree = index.tree(cand.doc_id)
    node = tree.get(cand.node_id)  # type: ignore[arg-type]
    parts = [tree.slice(p.start, p.lo)]
    pieces, u, n = False, 0, len(p.units)
    while u < n:
        i, j, a, b = p.units[u]
        if u in p.keep:
            text = tree.slice(i, j) if a is None else tree.lines[i][a:b]
            pieces = pieces or a is not None
            parts.append(text if p.cut is None else truncate_to_tokens(text, p.cut))
            u += 1
            continue
        v = u  # a gap: units u..v-1, shown as one marker
        while v < n and v not in p.keep:
            v += 1
        if a is not None and v < n and p.units[v][2] is not None and p.units[v][0] == i:
            parts.append(_INLINE_ELLIPSIS)  # inside one long line
        else:
            if not parts[-1].endswith("\n"):
                parts.append("\n")
            parts.append(_ELLIPSIS)
        u = v
    text = "".join(parts)
    # Word pieces never span a line break or a piece's cut, so what the plan counted is
    # exact; a cut (or a piece cut inside a word) is counted again.
    tokens = count_tokens(text) if p.cut is not None or pieces else p.used
    packed = _packed_spans(p)  # a trimmed section's pages are those its text came from
    return Section(doc_id=cand.doc_id, node_id=cand.node_id, title=node.title,
                   path=node.path, start_line=p.start + 1, end_line=p.end, text=text,
                   score=float(cand.score), tokens=tokens,
                   trimmed=p.gaps > 0 or p.cut is not None, matched_spans=spans,
                   also_in=tuple(cand.also_in), packed_spans=packed,
                   **_pages(index, cand.doc_id, packed[0][0], packed[-1][1], p.end))


def _packed_spans(p: _Plan) -> tuple[tuple[int, int], ...]:
    """The 1-based inclusive runs of lines a section's text holds: its heading and its
    kept units (a piece of a long line counts its line), adjacent ones joined."""
    runs: list[list[int]] = [[p.start, p.lo]] if p.lo > p.start else []
    for i, j in sorted({p.units[u][:2] for u in p.keep}):
        if runs and i <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], j)
        else:
            runs.append([i, j])
    return tuple((i + 1, max(j, i + 1)) for i, j in runs)


def _pages(index: Corpus, doc_id: str, first: int, last: int, end: int | None = None
           ) -> dict[str, Any]:
    """``Section`` fields ``pages`` (of 1-based lines ``first..last``) and ``page_breaks``
    (page starts after ``first`` up to the section's ``end``); none without a page map."""
    starts = index.documents[doc_id].pages
    span = page_span(starts, first, last)
    if span is None:
        return {}
    end = last if end is None else end
    return {"pages": span, "page_breaks": tuple(b for b in starts if first < b <= end)}


def _lexical(line: list[str], terms: dict[str, float]) -> float:
    """BM25-style match of one line: IDF times a saturating term frequency (k1 = 1.2)."""
    tf: dict[str, int] = {}
    for t in line:
        if t in terms:
            tf[t] = tf.get(t, 0) + 1
    return sum(terms[t] * f * 2.2 / (f + 1.2) for t, f in tf.items())


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
                other.also_in.append(ref(cand, *rng))
                break
        else:
            kept.append((i, cand, rng, size))
    return [(c, r) for _, c, r, _ in kept]


_WORD = re.compile(r"\w+")


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
