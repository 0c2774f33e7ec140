"""Packing sections into a token budget: one planner, whole sections or their best pieces.

:func:`pack_request` packs the selected sections (in rank order) as a request says, into
:class:`~.sections.Section` s; the budget's arithmetic is this module's alone. The token
amounts along the way have one name each:

* ``budget``: the total tokens of all sections' texts (``RetrievalConfig.budget``).
* ``section_cap``: the most one section may take until the others had their turn:
  ``max(section_floor, max_section_share * budget)`` (:func:`section_cap`, from the
  request's ``Tuning``; with ``evidence_cap=False`` there is none).
* ``left``: what is left of the budget.
* ``room``: what one section (or one cut unit) may still take here: the section's cap or
  what is left, whichever is less.

Every section's body is tiled into *units*: Markdown blocks (paragraphs, tables, lists); a
block larger than the share a section may take (``section_cap`` less its heading, and at
most half the budget) into its lines; and a line still larger (a manual's or a converted
page's whole section on one line) into its sentences, a sentence over ``_PIECE`` tokens
into token windows (:func:`~proxy_pointer.tokens.sentence_pieces`). So no unit is ever
too big to be taken, and every selected section can hand over at least the window around
its best chunk. A unit scores as the best hit chunk that covers it (a piece of a long
line: the chunks whose characters overlap it); units under the same chunk are ordered by
their own BM25 match with the question (corpus IDF), which ``lexical_weight`` > 0 also
adds to the score.
A table (:func:`~proxy_pointer.parse.blocks.table_layout`: a Markdown pipe table, or text
rows one per line as the PDF converter writes a statement) up to ``_TABLE_SHARE`` of the
budget, or within the block limit above, is one unit, which its section may take beyond
``section_cap``. A larger one is tiled into its header (the lines that name its columns:
which year, which unit) and its rows, and a row is only ever taken with its header. In a
table with rows that match the question's words, every row scores as the best of them and
goes by its distance from them, and once a row does not fit no row farther off is taken
first: the rows around the asked figure, not the first rows of a chunk.
Taking a unit costs its word pieces plus, for a section's first unit, its heading, for a
table row its header when not yet taken, and, for every new gap, an ``[…]`` marker, so
the count is exact.

The per-section choice between the whole section and its best pieces follows the order:

* ``order="evidence"`` (the default, :func:`pack_evidence`) takes the best units across all
  sections first, each within ``section_cap`` until the others had their turn: whole
  blocks against pieces by expected evidence per token. Pieces under one chunk go in
  reading order; those of a line barely over the share (up to ``_PARAGRAPH_LINE`` times)
  wait while their section has whole blocks under hits. Then what is left grows the
  opened sections around their units, in rank order, up to whole sections. A section
  holding only pieces of a long line, under ``_MIN_WINDOW`` tokens, gives them back.
* ``order="sections"`` (:func:`pack_sections`, the reference design) fills the sections one
  after another in rank order: whole where it fits its ``room``, otherwise its best units
  grown around them to that size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError
from ..parse.blocks import table_layout
from ..parse.segmentation import paragraphs
from ..stores.analyzer import terms as line_terms_of
from ..stores.bm25 import line_match
from ..text.pages import page_fields
from ..tokens import count_tokens, truncate_to_tokens
from .config import RetrievalConfig, Tuning
from .ranking import Candidate, Selected
from .sections import Section

if TYPE_CHECKING:
    from .corpus import Corpus

__all__ = ["fits_whole", "pack", "pack_evidence", "pack_request", "pack_sections",
           "section_cap"]

_ELLIPSIS = "[…]\n"  # where text was left out: on a line of its own,
_INLINE_ELLIPSIS = "[…] "  # or inside a long line (both cost the same word pieces)
_MIN_WINDOW = 48  # tokens: fewer, and only pieces of a line, make a stub, not a window
_PIECE = 128  # tokens: most of one piece of a long line (sentences; windows past this)
_PARAGRAPH_LINE = 1.5  # a line up to this many times a section's share is a long paragraph
# A table up to this share of the budget is handed over whole, beyond the section cap.
# Swept 0.25-0.75 (financebench-dev, finance-10k): larger shares lost questions at 1000
# tokens (a whole statement crowds out the other sections) and won none.
_TABLE_SHARE = 0.25
# Characters of long lines one section cuts into sentences at most (see _reach): about
# 0.15 s of tokenizing; ten of the longest lines (20,000 characters), a hundred of a
# paragraph's length.
_CUT_CHARS = 200_000
# A block over this many characters is not read as a table (a table is never that large;
# reading one costs about 55 ms a megabyte).
_TABLE_CHARS = 1_000_000


def pack(index: Corpus, selected: Selected, budget: int, terms: dict[str, float], *,
         order: str = "evidence", section_cap: int | None = None, lexical_weight: float = 0.0
         ) -> tuple[list[Section], list[str]]:
    """The selected sections (in rank order) packed into ``budget`` tokens (module docstring).

    ``order="evidence"`` takes the best units across all sections first; ``"sections"``
    fills the sections one after another in rank order. A section may use at most
    ``section_cap`` tokens (``None``: the budget) until every section had its turn.
    ``terms`` are the question's BM25 terms with their IDF
    (:meth:`~.corpus.Corpus.term_weights`). Returns the sections in rank order and the refs
    of selected sections that got no text.
    """
    if order not in ("evidence", "sections"):
        raise ConfigError(f"order must be 'evidence' or 'sections', got {order!r}")
    ell = count_tokens(_ELLIPSIS)
    section_cap = budget if section_cap is None else min(section_cap, budget)
    plans = [_plan(index, cand, start, end, budget, section_cap, ell)
             for cand, (start, end) in selected]
    ranked = _rank(index, plans, terms, lexical_weight)
    left = budget
    if order == "evidence":
        # A piece of a line barely over the share (a long paragraph rather than a section
        # held on one line) waits while its section has whole units under hits: part of a
        # paragraph is less likely to hold a whole piece of evidence than a whole one.
        whole_hit = {k for _, _, k, u in ranked if plans[k].units[u][2] is None}
        waiting = []
        full = set()  # tables a row did not fit: rows farther off would be a patchwork
        for r in ranked:
            _, _, k, u = r
            table = (k, plans[k].needs.get(u, -1))
            if u in plans[k].waits and k in whole_hit:
                waiting.append(r)
            elif table not in full:
                left = _take(plans[k], u, left, section_cap, ell)
                if u not in plans[k].keep and table[1] >= 0:
                    full.add(table)
        for _, _, k, u in waiting:
            left = _take(plans[k], u, left, section_cap, ell)
        # What is left grows the opened sections, best first: up to the cap, then beyond.
        # A section that still holds only a stub of its text gives its tokens back.
        for stubs in (False, True):
            if stubs:
                left += sum(_drop_stub(p) for p in plans)
            left = _grow_opened(plans, left, ell, section_cap)
            left = _grow_opened(plans, left, ell, budget)  # the cap lifted
    else:
        by_plan: dict[int, list[int]] = {}  # each section's units under hits, best first
        for _, _, k, u in ranked:
            by_plan.setdefault(k, []).append(u)
        for k, p in enumerate(plans):
            room = min(left, section_cap)
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
    omitted = [p.cand.ref(p.start, p.end) for p in plans if not p.keep]
    return sections, omitted


def pack_evidence(index: Corpus, selected: Selected, budget: int, terms: dict[str, float],
                  *, lexical_weight: float = 0.0, section_cap: int | None = None
                  ) -> tuple[list[Section], list[str]]:
    """:func:`pack` taking the best units across sections first (the default)."""
    return pack(index, selected, budget, terms, order="evidence", section_cap=section_cap,
                lexical_weight=lexical_weight)


def pack_sections(index: Corpus, selected: Selected, budget: int, section_cap: int,
                  terms: dict[str, float] | None = None) -> tuple[list[Section], list[str]]:
    """:func:`pack` filling whole sections in rank order, each at most ``section_cap``
    tokens."""
    return pack(index, selected, budget, terms or {}, order="sections",
                section_cap=section_cap)


def section_cap(budget: int, tuning: Tuning) -> int:
    """The most one section may take until the others had their turn."""
    return max(1, tuning.section_floor, int(budget * tuning.max_section_share))


def fits_whole(index: Corpus, doc_id: str, node_id: str, budget: int) -> bool:
    """Whether a node's whole section fits ``budget`` (what promoting a parent asks)."""
    node = index.tree(doc_id).get(node_id)
    return sum(index.line_tokens(doc_id)[node.start:node.end]) <= budget


def pack_request(index: Corpus, selected: Selected, config: RetrievalConfig,
                 terms: dict[str, float]) -> tuple[list[Section], list[str]]:
    """The selected sections packed into ``config.budget`` as its tuning says."""
    tuning = config.tuning
    cap = section_cap(config.budget, tuning)
    if tuning.packing == "evidence":
        return pack_evidence(index, selected, config.budget, terms,
                             lexical_weight=tuning.lexical_weight,
                             section_cap=cap if tuning.evidence_cap else None)
    return pack_sections(index, selected, config.budget, cap, terms)


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
    needs: dict[int, int] = field(default_factory=dict)  # a table row's header unit
    wide: dict[int, int] = field(default_factory=dict)  # a whole table's section cap

    def delta(self, u: int) -> int:
        """Change in the number of gaps if unit ``u`` joins ``keep``."""
        before = u == 0 or u - 1 in self.keep
        after = u == len(self.units) - 1 or u + 1 in self.keep
        return -1 if before and after else (1 if not before and not after else 0)

    def extra(self, u: int, ell: int) -> int:
        """Tokens that taking unit ``u`` adds (opening a section costs its heading)."""
        return (self.costs[u] + ell * self.delta(u)
                + (0 if self.keep else self.head + ell * self.gaps))


def _plan(index: Corpus, cand: Candidate, start: int, end: int, budget: int,
          section_cap: int, ell: int) -> _Plan:
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
    largest = max(_MIN_WINDOW // 2, section_cap - p.head - 2 * ell)  # tokens of one unit
    lines = index.tree(cand.doc_id).lines
    near = None  # worked out once a block is too big to be one unit (see _reach)
    for i, j in paragraphs([cost[x] == 0 for x in range(p.lo, end)]):
        i, j = p.lo + i, p.lo + j
        size = sum(cost[i:j])
        if size <= min(largest, budget // 2) or (j - i == 1 and size <= largest):
            p.units.append((i, j, None, None))
            p.costs.append(size)
            continue
        if near is None:
            near = _reach(list(zip(_spans(index, cand), cand.row_scores, strict=True)), cost,
                          [len(line) for line in lines[p.lo:end]], p.lo, budget, largest)
        # Out of reach, a block is tiled by its lines as they are (never taken either way)
        reached = bool(near[i - p.lo:j - p.lo].any())
        layout = (table_layout(lines[i:j]) if j - i > 2 and reached
                  and sum(map(len, lines[i:j])) <= _TABLE_CHARS else None)
        if layout is not None and size <= min(int(_TABLE_SHARE * budget),
                                              budget - p.head - 2 * ell):
            p.wide[len(p.units)] = p.head + size + 2 * ell  # a table that fits: whole
            p.units.append((i, j, None, None))
            p.costs.append(size)
            continue
        header = sum(cost[i:i + layout[0]]) if layout is not None else 0
        if layout is None or not 0 < header <= largest // 2:
            _tile(index, p, largest, [(x, x + 1) for x in range(i, j)], near)
            continue
        head = len(p.units)  # the table's header, taken with any of its rows
        p.units.append((i, i + layout[0], None, None))
        p.costs.append(header)
        _tile(index, p, largest - header, [(i + a, i + b) for a, b in layout[1]], near)
        p.needs.update({u: head for u in range(head + 1, len(p.units))})
    p.gaps = 1 if p.units else 0
    return p


def _reach(hits: list[tuple[tuple[int, int], float]], cost: tuple[int, ...],
           chars: list[int], lo: int, budget: int, largest: int) -> np.ndarray:
    """Which lines of a section's body (from line ``lo``; ``chars``: each line's length)
    the planner reads closely: those within ``budget`` tokens of a hit chunk's span
    (``hits``: span and score), and the line that crosses that distance; of the long lines
    (over ``largest`` tokens) among them, those nearest the best hits, up to
    :data:`_CUT_CHARS` characters in all.

    Everything taken is a run from a unit under a hit, or a table row no farther from its
    match than the rows taken before it, so a line farther off is never taken; the planner
    spends nothing on it (a long line there is not cut into sentences, a block there not
    read as a table). The cap on cut lines bounds what a section whose hits are spread over
    thousands of long lines costs (a 20 MB document on one wrapped line), at the price of
    leaving the lines under its weakest hits whole.
    """
    n = len(chars)
    near = np.zeros(n, np.float64)
    if n <= 0:
        return near.astype(bool)
    before = np.zeros(n + 1, np.int64)
    np.cumsum(np.asarray(cost[lo:lo + n], np.int64), out=before[1:])
    for (first, last), score in hits:
        a, b = max(first, lo) - lo, min(last, lo + n) - lo
        if a >= n or b <= 0:
            continue
        # back: lines k with before[a] - before[k + 1] < budget; on: before[k] - before[b] <
        # budget (each side includes the line that crosses the distance)
        k0 = max(int(np.searchsorted(before, before[a] - budget, "right")) - 1, 0)
        k1 = min(int(np.searchsorted(before, before[max(b, a)] + budget, "left")) + 1, n)
        np.maximum(near[k0:k1], max(float(score), 1e-9), out=near[k0:k1])
    long = np.flatnonzero((near > 0) & (np.diff(before) > largest))
    size = np.asarray(chars, np.int64)[long]
    if int(size.sum()) > _CUT_CHARS:  # the weakest hits' long lines stay whole
        order = np.lexsort((long, -near[long]))
        over = np.cumsum(size[order]) > _CUT_CHARS
        near[long[order[over]]] = 0.0
    return near > 0


def _tile(index: Corpus, p: _Plan, largest: int, rows: list[tuple[int, int]],
          near: np.ndarray) -> None:
    """Units of a block too big to be one: each of its ``rows`` (line spans) that fits
    ``largest``, else its lines, and a line still larger its sentences where it is within
    reach (:func:`_reach`; ``near`` is indexed from the section's body)."""
    cost = index.line_tokens(p.cand.doc_id)
    for a, b in rows:
        size = sum(cost[a:b])
        if b - a > 1 and size <= largest:
            p.units.append((a, b, None, None))
            p.costs.append(size)
            continue
        for x in range(a, b):
            if cost[x] <= largest or not near[x - p.lo]:
                p.units.append((x, x + 1, None, None))
                p.costs.append(cost[x])
            else:  # one long line: its sentences (or token windows)
                for c, d, n in index.derived.line_pieces(p.cand.doc_id, x,
                                                         min(largest, _PIECE)):
                    if cost[x] <= _PARAGRAPH_LINE * largest:
                        p.waits.add(len(p.units))
                    p.units.append((x, x + 1, c, d))
                    p.costs.append(n)


def _unit_scores(index: Corpus, p: _Plan, terms: dict[str, float], norm: float
                 ) -> list[tuple[float, float]]:
    """``(hit, lexical)`` of each unit: the best hit chunk that covers it, and (for units
    under a hit) its own BM25 match with the question."""
    cand = p.cand
    if p.window is not None:
        return [(cand.best, line_match(line_terms_of([p.window])[0], terms) / norm)]
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
        out.append((h, line_match(words, terms) / norm))
    return out


def _rank(index: Corpus, plans: list[_Plan], terms: dict[str, float],
          lexical_weight: float) -> list[tuple[float, float, int, int]]:
    """The units under hits, best first, as ``(-score, tie, plan, unit)``."""
    # (-score, tie, plan, unit): within one chunk (equal scores) the block that matches
    # the question's words best goes first; the pieces of a long line go in reading order,
    # since a run of sentences keeps a paragraph whole where a patchwork of them would not
    # (starting at the best-matching piece instead lost 1-2 of 21 questions on the 10-Ks'
    # long-line shape).
    ranked: list[tuple[float, float, int, int]] = []
    norm = sum(terms.values()) or 1.0
    for k, p in enumerate(plans):
        scores = _unit_scores(index, p, terms, norm)
        rows = _around_matches(p, scores)
        heads = set(p.needs.values())
        for u, (score, lex) in enumerate(scores):
            if u in rows:
                score, tie = rows[u]
            elif score <= 0 or u in heads:  # a header is taken with its rows
                continue
            else:
                tie = -lex if p.units[u][2] is None else 0.0
            ranked.append((-score * (1 + lexical_weight * lex), tie, k, u))
    ranked.sort()
    return ranked


def _around_matches(p: _Plan, scores: list[tuple[float, float]]
                    ) -> dict[int, tuple[float, float]]:
    """``(score, tie)`` of the rows of each table that has rows under hits matching the
    question's words: all its rows score as the best such row and go by their distance
    from the nearest one (the matches first, best match first), so a cut table hands over
    the rows around the asked figure rather than the first rows of its best chunk."""
    matched: dict[int, list[int]] = {}
    for u, head in p.needs.items():
        if scores[u][0] > 0 and scores[u][1] > 0:
            matched.setdefault(head, []).append(u)
    out = {}
    for u, head in p.needs.items():
        if head in matched:
            best = max(scores[m][0] for m in matched[head])
            out[u] = (best, min(abs(u - m) for m in matched[head]) - scores[u][1])
    return out


def _take(p: _Plan, u: int, left: int, section_cap: int, ell: int) -> int:
    """Take unit ``u`` (a table row with its table's header) when it fits ``left`` and
    keeps the section within ``section_cap`` (a whole table: its own cap, when larger);
    returns what is left of the budget."""
    if u in p.keep:
        return left
    if p.window is not None:
        if p.costs[u] <= left and p.used + p.costs[u] <= section_cap:
            p.keep.add(u)
            p.used += p.costs[u]
            return left - p.costs[u]
        return left
    head = p.needs.get(u)
    group = [u] if head is None or head in p.keep else [head, u]
    gaps, used = p.gaps, p.used
    for x in group:  # each unit's cost after the one before it joined
        extra = p.extra(x, ell)
        p.gaps += p.delta(x)
        p.keep.add(x)
        p.used += extra
    if p.used - used <= left and p.used <= max(section_cap, p.wide.get(u, 0)):
        return left - (p.used - used)
    p.keep.difference_update(group)
    p.gaps, p.used = gaps, used
    return left


def _grow_opened(plans: list[_Plan], left: int, ell: int, section_cap: int) -> int:
    """:func:`_grow` every section that holds units, in rank order; returns what is left
    of the budget."""
    for p in plans:
        if p.keep:
            left = _grow(p, left, ell, section_cap)
    return left


def _grow(p: _Plan, left: int, ell: int, section_cap: int) -> int:
    """Add the units next to kept ones (after, then before) while they fit ``left`` and
    the section stays within ``section_cap``; returns what is left of the budget."""
    if p.window is not None:
        return left
    grown = True
    while grown:
        grown = False
        for u in sorted(p.keep - set(p.needs.values())):  # a header grows no rows
            for n in (u + 1, u - 1):
                if 0 <= n < len(p.units) and n not in p.keep:
                    left = _take(p, n, left, section_cap, ell)
                    grown = grown or n in p.keep
    return left


def _grow_run(p: _Plan, u: int, room: int, ell: int) -> None:
    """Widen the run of kept units around unit ``u`` by one unit after it, then one before
    it, in turn, while the section stays within ``room``."""
    ends = [u, u]
    while True:
        while ends[1] + 1 in p.keep:
            ends[1] += 1
        while ends[0] - 1 in p.keep:
            ends[0] -= 1
        took = False
        for n in (ends[1] + 1, ends[0] - 1):
            if 0 <= n < len(p.units) and n not in p.keep:
                _take(p, n, room, room, ell)
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
                       **page_fields(index.documents[cand.doc_id].pages, p.start + 1, p.end))
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
                   **page_fields(index.documents[cand.doc_id].pages, packed[0][0],
                                   packed[-1][1], p.end))


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

